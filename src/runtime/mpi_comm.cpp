// ksum::Communicator (include/ksum/distributed.hpp). Compiled with KSUM_HAVE_MPI when CMake found
// MPI (KSUM_WITH_MPI); without it every communicator is a single rank.
#include "runtime/mpi_comm.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <memory>
#include <vector>

#ifdef KSUM_HAVE_MPI
// The C API only (no libmpi_cxx for programs that link libksum).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace ksum {

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
    throw Error(ErrorCode::unsupported,
                fmt::format("an MPI message of {} values (at most {} per message)", count,
                            std::numeric_limits<int>::max()));
  return static_cast<int>(count);
}

std::vector<int> as_counts(const std::vector<std::int64_t> &counts, std::vector<int> *displs) {
  std::vector<int> c(counts.size());
  std::int64_t at = 0;
  displs->assign(counts.size(), 0);
  for (std::size_t r = 0; r < counts.size(); ++r) {
    c[r] = as_count(counts[r]);
    (*displs)[r] = as_count(at);
    at += counts[r];
  }
  return c;
}
#endif

} // namespace

#ifdef KSUM_HAVE_MPI
struct Communicator::Exchange::State {
  MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
};
#else
struct Communicator::Exchange::State {};
#endif

Communicator::Exchange::Exchange() = default;
Communicator::Exchange::~Exchange() {
  try {
    wait();
  } catch (...) { // a destructor must not throw; wait() reports failures where it is called
  }
}
Communicator::Exchange::Exchange(Exchange &&) noexcept = default;
Communicator::Exchange &Communicator::Exchange::operator=(Exchange &&o) noexcept {
  if (this != &o) {
    try {
      wait();
    } catch (...) {
    }
    state_ = std::move(o.state_);
  }
  return *this;
}
void Communicator::Exchange::wait() {
  if (!state_)
    return;
#ifdef KSUM_HAVE_MPI
  auto s = std::move(state_);
  check(MPI_Waitall(2, s->req, MPI_STATUSES_IGNORE), "wait");
#else
  state_.reset();
#endif
}

Communicator Communicator::self() {
  return Communicator{};
}

Communicator Communicator::world() {
  Communicator c;
#ifdef KSUM_HAVE_MPI
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    if (!launched_by_mpirun())
      return c;
    int provided = 0;
    // Serialized: one thread at a time may call MPI (a Python caller may use several threads; the
    // OpenMP threads never do).
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "init");
    std::atexit([] {
      int finalised = 0;
      MPI_Finalized(&finalised);
      if (!finalised)
        MPI_Finalize();
    });
  }
  return from_fortran_handle(static_cast<int>(MPI_Comm_c2f(MPI_COMM_WORLD)));
#else
  return c;
#endif
}

Communicator Communicator::from_fortran_handle(int handle) {
#ifdef KSUM_HAVE_MPI
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised)
    throw Error(ErrorCode::invalid_argument,
                "Communicator::from_fortran_handle: MPI is not initialised (call MPI_Init first, "
                "or import mpi4py)");
  const MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(handle));
  if (comm == MPI_COMM_NULL)
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("Communicator::from_fortran_handle: handle {} is MPI_COMM_NULL", handle));
  Communicator c;
  // ksum talks on a duplicate (collective), so its messages never meet the caller's (a pending
  // MPI_ANY_TAG receive) and the caller may free theirs; the last copy of c frees the duplicate.
  auto *dup = new MPI_Comm(MPI_COMM_NULL);
  if (MPI_Comm_dup(comm, dup) != MPI_SUCCESS) {
    delete dup;
    throw Error(ErrorCode::internal, "MPI comm_dup failed");
  }
  c.owner_ = std::shared_ptr<void>(dup, [](void *p) {
    auto *d = static_cast<MPI_Comm *>(p);
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (!finalised && *d != MPI_COMM_NULL)
      MPI_Comm_free(d);
    delete d;
  });
  check(MPI_Comm_rank(*dup, &c.rank_), "comm_rank");
  check(MPI_Comm_size(*dup, &c.size_), "comm_size");
  MPI_Comm local = MPI_COMM_NULL;
  check(MPI_Comm_split_type(*dup, MPI_COMM_TYPE_SHARED, c.rank_, MPI_INFO_NULL, &local),
        "comm_split_type");
  check(MPI_Comm_rank(local, &c.local_rank_), "comm_rank");
  MPI_Comm_free(&local);
  c.mpi_ = true;
  c.handle_ = static_cast<int>(MPI_Comm_c2f(*dup));
  return c;
#else
  (void)handle;
  throw Error(ErrorCode::unsupported,
              "this ksum was built without MPI (KSUM_WITH_MPI=OFF or no MPI found): "
              "Communicator::from_fortran_handle is not available");
#endif
}

#ifdef KSUM_HAVE_MPI
#define KSUM_COMM MPI_Comm_f2c(static_cast<MPI_Fint>(handle_))
#endif

void Communicator::reduce_sum(double *buf, std::int64_t count, int root) const {
#ifdef KSUM_HAVE_MPI
  if (mpi_ && size_ > 1)
    check(MPI_Reduce(rank_ == root ? MPI_IN_PLACE : buf, rank_ == root ? buf : nullptr,
                     as_count(count), MPI_DOUBLE, MPI_SUM, root, KSUM_COMM),
          "reduce");
#else
  (void)buf, (void)count, (void)root;
#endif
}

void Communicator::broadcast(double *buf, std::int64_t count, int root) const {
#ifdef KSUM_HAVE_MPI
  if (mpi_ && size_ > 1)
    check(MPI_Bcast(buf, as_count(count), MPI_DOUBLE, root, KSUM_COMM), "broadcast");
#else
  (void)buf, (void)count, (void)root;
#endif
}

std::vector<std::int64_t> Communicator::allgather(std::int64_t value) const {
  std::vector<std::int64_t> all(static_cast<std::size_t>(size_), value);
#ifdef KSUM_HAVE_MPI
  if (mpi_ && size_ > 1) {
    long long v = value;
    std::vector<long long> got(all.size());
    check(MPI_Allgather(&v, 1, MPI_LONG_LONG, got.data(), 1, MPI_LONG_LONG, KSUM_COMM),
          "allgather");
    for (std::size_t r = 0; r < all.size(); ++r)
      all[r] = static_cast<std::int64_t>(got[r]);
  }
#endif
  return all;
}

std::vector<std::int64_t> Communicator::even_counts(std::int64_t total) const {
  std::vector<std::int64_t> c(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r)
    c[static_cast<std::size_t>(r)] = total * (r + 1) / size_ - total * r / size_;
  return c;
}

double Communicator::allreduce_max(double value) const {
#ifdef KSUM_HAVE_MPI
  if (mpi_ && size_ > 1) {
    double out = value;
    check(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, KSUM_COMM), "allreduce");
    return out;
  }
#endif
  return value;
}

void Communicator::allreduce_sum(double *buf, std::int64_t count) const {
#ifdef KSUM_HAVE_MPI
  if (mpi_ && size_ > 1)
    check(MPI_Allreduce(MPI_IN_PLACE, buf, as_count(count), MPI_DOUBLE, MPI_SUM, KSUM_COMM),
          "allreduce");
#else
  (void)buf, (void)count;
#endif
}

void Communicator::allreduce_max(double *buf, std::int64_t count) const {
#ifdef KSUM_HAVE_MPI
  if (mpi_ && size_ > 1)
    check(MPI_Allreduce(MPI_IN_PLACE, buf, as_count(count), MPI_DOUBLE, MPI_MAX, KSUM_COMM),
          "allreduce");
#else
  (void)buf, (void)count;
#endif
}

// The variable-count collectives: `op` names the call; with one rank the values are copied (the
// single-rank result of each), otherwise call(counts, displacements) runs the MPI operation.
template <class Call>
void Communicator::counted(const char *op, const std::vector<std::int64_t> &counts,
                           std::int64_t count, const double *from, double *to, Call &&call) const {
  if (static_cast<int>(counts.size()) != size_ || counts[static_cast<std::size_t>(rank_)] != count)
    throw Error(ErrorCode::internal, fmt::format("{}: counts do not match the ranks", op));
  if (!mpi_ || size_ == 1) {
    std::copy(from, from + count, to);
    return;
  }
#ifdef KSUM_HAVE_MPI
  std::vector<int> displs;
  const std::vector<int> c = as_counts(counts, &displs);
  check(call(c.data(), displs.data()), op);
#else
  (void)call;
#endif
}

void Communicator::gatherv(const double *mine, std::int64_t count, double *all,
                           const std::vector<std::int64_t> &counts, int root) const {
  counted("gatherv", counts, count, mine, all, [&](const int *c, const int *displs) {
#ifdef KSUM_HAVE_MPI
    return MPI_Gatherv(mine, as_count(count), MPI_DOUBLE, all, c, displs, MPI_DOUBLE, root,
                       KSUM_COMM);
#else
    (void)c, (void)displs, (void)root;
    return 0;
#endif
  });
}

void Communicator::allgatherv(const double *mine, std::int64_t count, double *all,
                              const std::vector<std::int64_t> &counts) const {
  counted("allgatherv", counts, count, mine, all, [&](const int *c, const int *displs) {
#ifdef KSUM_HAVE_MPI
    return MPI_Allgatherv(mine, as_count(count), MPI_DOUBLE, all, c, displs, MPI_DOUBLE, KSUM_COMM);
#else
    (void)c, (void)displs;
    return 0;
#endif
  });
}

void Communicator::scatterv(const double *all, const std::vector<std::int64_t> &counts,
                            double *mine, std::int64_t count, int root) const {
  counted("scatterv", counts, count, all, mine, [&](const int *c, const int *displs) {
#ifdef KSUM_HAVE_MPI
    return MPI_Scatterv(all, c, displs, MPI_DOUBLE, mine, as_count(count), MPI_DOUBLE, root,
                        KSUM_COMM);
#else
    (void)c, (void)displs, (void)root;
    return 0;
#endif
  });
}

std::vector<std::int64_t> Communicator::alltoall(const std::vector<std::int64_t> &send) const {
  if (static_cast<int>(send.size()) != size_)
    throw Error(ErrorCode::internal, "alltoall: one count per rank expected");
  std::vector<std::int64_t> recv = send;
#ifdef KSUM_HAVE_MPI
  if (mpi_ && size_ > 1) {
    std::vector<long long> s(send.begin(), send.end()), r(send.size());
    check(MPI_Alltoall(s.data(), 1, MPI_LONG_LONG, r.data(), 1, MPI_LONG_LONG, KSUM_COMM),
          "alltoall");
    for (std::size_t k = 0; k < r.size(); ++k)
      recv[k] = static_cast<std::int64_t>(r[k]);
  }
#endif
  return recv;
}

void Communicator::alltoallv(const double *send, const std::vector<std::int64_t> &send_counts,
                             double *recv, const std::vector<std::int64_t> &recv_counts) const {
  if (static_cast<int>(send_counts.size()) != size_ ||
      static_cast<int>(recv_counts.size()) != size_)
    throw Error(ErrorCode::internal, "alltoallv: one count per rank expected");
  if (!mpi_ || size_ == 1) {
    if (send_counts[0] != recv_counts[0])
      throw Error(ErrorCode::internal, "alltoallv: a single rank sends itself what it receives");
    std::copy(send, send + send_counts[0], recv);
    return;
  }
#ifdef KSUM_HAVE_MPI
  std::vector<int> sd, rd;
  const std::vector<int> sc = as_counts(send_counts, &sd), rc = as_counts(recv_counts, &rd);
  check(MPI_Alltoallv(send, sc.data(), sd.data(), MPI_DOUBLE, recv, rc.data(), rd.data(),
                      MPI_DOUBLE, KSUM_COMM),
        "alltoallv");
#endif
}

void Communicator::reduce_scatter_sum(const double *all, double *mine,
                                      const std::vector<std::int64_t> &counts) const {
  const std::int64_t count = counts.at(static_cast<std::size_t>(rank_));
  std::int64_t off = 0;
  for (int r = 0; r < rank_; ++r)
    off += counts[static_cast<std::size_t>(r)];
  counted("reduce_scatter", counts, count, all + off, mine, [&](const int *c, const int *) {
#ifdef KSUM_HAVE_MPI
    return MPI_Reduce_scatter(all, mine, c, MPI_DOUBLE, MPI_SUM, KSUM_COMM);
#else
    (void)c;
    return 0;
#endif
  });
}

Communicator::Exchange Communicator::start_exchange(const double *send, std::int64_t send_count,
                                                    int dest, double *recv, std::int64_t recv_count,
                                                    int source, int tag) const {
  Exchange e;
  if (!mpi_ || size_ == 1) {
    if (dest != rank_ || source != rank_ || send_count != recv_count)
      throw Error(ErrorCode::internal, "an exchange on a single rank must be with itself");
    std::copy(send, send + send_count, recv);
    return e;
  }
#ifdef KSUM_HAVE_MPI
  e.state_ = std::make_unique<Exchange::State>();
  check(
      MPI_Irecv(recv, as_count(recv_count), MPI_DOUBLE, source, tag, KSUM_COMM, &e.state_->req[0]),
      "irecv");
  check(MPI_Isend(send, as_count(send_count), MPI_DOUBLE, dest, tag, KSUM_COMM, &e.state_->req[1]),
        "isend");
#else
  (void)tag;
#endif
  return e;
}

void Communicator::abort_all(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
#ifdef KSUM_HAVE_MPI
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (initialised && !finalised)
    MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::_Exit(code);
}

void Communicator::agree(bool failed, int code, const std::string &message) const {
  if (!mpi_ || size_ == 1) {
    if (failed)
      throw AgreedError(static_cast<ErrorCode>(code), message);
    return;
  }
#ifdef KSUM_HAVE_MPI
  // The lowest failing rank speaks for all.
  int mine = failed ? rank_ : size_, first = size_;
  check(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, KSUM_COMM), "allreduce");
  if (first == size_)
    return;
  int info[2] = {code, static_cast<int>(message.size())};
  check(MPI_Bcast(info, 2, MPI_INT, first, KSUM_COMM), "broadcast");
  std::string text = rank_ == first ? message : std::string(static_cast<std::size_t>(info[1]), ' ');
  check(MPI_Bcast(text.data(), info[1], MPI_CHAR, first, KSUM_COMM), "broadcast");
  throw AgreedError(static_cast<ErrorCode>(info[0]), fmt::format("rank {}: {}", first, text));
#endif
}

} // namespace ksum
