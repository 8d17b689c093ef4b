// See mpi_comm.hpp. Compiled with KSUM_HAVE_MPI when CMake found MPI (KSUM_WITH_MPI).
#include "runtime/mpi_comm.hpp"

#include <ksum/error.hpp>

#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <vector>

#ifdef KSUM_HAVE_MPI
#include <mpi.h>
#endif

namespace ksum::runtime {

bool mpi_enabled() {
#ifdef KSUM_HAVE_MPI
  return true;
#else
  return false;
#endif
}

namespace {

#ifdef KSUM_HAVE_MPI
// Started by a launcher: Open MPI, MPICH/Hydra and Slurm set these.
bool launched_by_mpirun() {
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v))
      return true;
  return false;
}

void check(int rc, const char *what) {
  if (rc != MPI_SUCCESS)
    throw Error(ErrorCode::internal, fmt::format("MPI {} failed (error {})", what, rc));
}

int as_count(std::int64_t count) {
  if (count < 0 || count > std::numeric_limits<int>::max())
    throw Error(ErrorCode::unsupported, fmt::format("MPI message of {} values", count));
  return static_cast<int>(count);
}

void reduce(double *buf, std::int64_t count, int root, int rank) {
  check(MPI_Reduce(rank == root ? MPI_IN_PLACE : buf, rank == root ? buf : nullptr, as_count(count),
                   MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD),
        "reduce");
}
void bcast(double *buf, std::int64_t count, int root) {
  check(MPI_Bcast(buf, as_count(count), MPI_DOUBLE, root, MPI_COMM_WORLD), "broadcast");
}
#endif

} // namespace

Comm Comm::self() {
  return Comm{};
}

Comm Comm::world() {
  Comm c;
#ifdef KSUM_HAVE_MPI
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    if (!launched_by_mpirun())
      return c;
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "init");
    std::atexit([] {
      int finalised = 0;
      MPI_Finalized(&finalised);
      if (!finalised)
        MPI_Finalize();
    });
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &c.size_);
  c.mpi_ = true;
#endif
  return c;
}

void Comm::reduce_sum(double *buf, std::int64_t count, int root) const {
#ifdef KSUM_HAVE_MPI
  if (mpi_ && size_ > 1)
    reduce(buf, count, root, rank_);
#else
  (void)buf, (void)count, (void)root;
#endif
}
void Comm::broadcast(double *buf, std::int64_t count, int root) const {
#ifdef KSUM_HAVE_MPI
  if (mpi_ && size_ > 1)
    bcast(buf, count, root);
#else
  (void)buf, (void)count, (void)root;
#endif
}
void Comm::agree(bool failed, int code, const std::string &message) const {
  if (!mpi_ || size_ == 1) {
    if (failed)
      throw Error(static_cast<ErrorCode>(code), message);
    return;
  }
#ifdef KSUM_HAVE_MPI
  // The lowest failing rank speaks for all.
  int mine = failed ? rank_ : size_, first = size_;
  check(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "allreduce");
  if (first == size_)
    return;
  int info[2] = {code, static_cast<int>(message.size())};
  check(MPI_Bcast(info, 2, MPI_INT, first, MPI_COMM_WORLD), "broadcast");
  std::string text = rank_ == first ? message : std::string(static_cast<std::size_t>(info[1]), ' ');
  check(MPI_Bcast(text.data(), info[1], MPI_CHAR, first, MPI_COMM_WORLD), "broadcast");
  throw Error(static_cast<ErrorCode>(info[0]), fmt::format("rank {}: {}", first, text));
#endif
}

} // namespace ksum::runtime
