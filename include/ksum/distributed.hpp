#pragma once
// Runs across processes with MPI (issue 25): a communicator that works with or without MPI, and the
// distributed direct sum. This header does not include mpi.h: a build without MPI (KSUM_WITH_MPI
// off) and a process started without mpirun see one rank, and the same code runs unchanged.
#include <ksum/direct.hpp>
#include <ksum/error.hpp>
#include <ksum/table.hpp>

#include <concepts>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace ksum {

// What a call threw, kept to be agreed on by every rank (Communicator::agree): nothing, or the
// ksum::Error's code (ErrorCode::internal for another exception) and message.
struct Failure {
  bool failed = false;
  int code = 0;
  std::string message;
};
template <class F> Failure capture(F &&f) noexcept {
  try {
    f();
    return {};
  } catch (const Error &e) {
    return {true, static_cast<int>(e.code()), e.what()};
  } catch (const std::exception &e) {
    return {true, static_cast<int>(ErrorCode::internal), e.what()};
  }
}

// What every rank of a communicator throws after Communicator::agree(): the same error on all of
// them (a program prints rank 0's copy; an Error that is not an AgreedError happened on one rank).
class AgreedError : public Error {
public:
  using Error::Error;
};

class Communicator {
public:
  // MPI_COMM_WORLD when this build has MPI and the process was started by a launcher (mpirun,
  // srun; MPI is initialised on first use and finalised at exit); otherwise a single rank.
  static Communicator world();
  // A single rank (to run serially inside an MPI job, e.g. a reference).
  static Communicator self();
  // A communicator of the caller's, by its Fortran handle: MPI_Comm_c2f(comm) in C or C++,
  // comm.py2f() in mpi4py (the handle keeps this header free of mpi.h and of one MPI's types).
  // MPI must be initialised. ksum works on a duplicate (MPI_Comm_dup, freed with the last copy of
  // this object), so its messages never mix with the caller's. world() and this are collective
  // over the communicator. Throws unsupported in a build without MPI.
  static Communicator from_fortran_handle(int handle);

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool distributed() const { return size_ > 1; }
  // This rank's index among the ranks on its host (MPI_COMM_TYPE_SHARED), 0 without MPI: the GPU a
  // rank takes by default is local_rank() mod the host's GPUs.
  int local_rank() const { return local_rank_; }

  // In place at root: buf = Σ over ranks (other ranks' buf unchanged).
  void reduce_sum(double *buf, std::int64_t count, int root = 0) const;
  void broadcast(double *buf, std::int64_t count, int root = 0) const;
  // Every rank's value, in rank order.
  std::vector<std::int64_t> allgather(std::int64_t value) const;
  // `total` rows split into size() contiguous slices as even as can be (rank r's first row is
  // total · r / size()), in rank order: the counts of gatherv / scatterv for data read by one rank.
  std::vector<std::int64_t> even_counts(std::int64_t total) const;
  double allreduce_max(double value) const;
  // In place on every rank: buf = Σ (or max) over ranks, entry by entry.
  void allreduce_sum(double *buf, std::int64_t count) const;
  void allreduce_max(double *buf, std::int64_t count) const;
  double allreduce_sum(double value) const {
    allreduce_sum(&value, 1);
    return value;
  }
  // send[r]: what this rank sends to rank r; returns what each rank sends to this one.
  std::vector<std::int64_t> alltoall(const std::vector<std::int64_t> &send) const;
  // This rank sends send_counts[r] values to rank r (send grouped by destination, in rank order)
  // and receives recv_counts[r] from rank r into recv (grouped by source, in rank order).
  void alltoallv(const double *send, const std::vector<std::int64_t> &send_counts, double *recv,
                 const std::vector<std::int64_t> &recv_counts) const;
  // Every rank passes `all` (Σ counts values); rank r receives into mine the sum over ranks of
  // all's slice r (counts[r] values, in rank order): the transpose of allgatherv.
  void reduce_scatter_sum(const double *all, double *mine,
                          const std::vector<std::int64_t> &counts) const;
  // Root receives counts[r] values from each rank r, in rank order, into all (root only; the
  // others may pass nullptr); every rank sends its `count` = counts[rank] values.
  void gatherv(const double *mine, std::int64_t count, double *all,
               const std::vector<std::int64_t> &counts, int root = 0) const;
  // The same with every rank receiving all (in rank order).
  void allgatherv(const double *mine, std::int64_t count, double *all,
                  const std::vector<std::int64_t> &counts) const;
  // The reverse: rank r receives counts[r] values of root's all (in rank order) into mine.
  void scatterv(const double *all, const std::vector<std::int64_t> &counts, double *mine,
                std::int64_t count, int root = 0) const;

  // A send of `send` to rank `dest` and a receive into `recv` from rank `source`, started now and
  // completed by wait() (or the destructor), so that computation can overlap them.
  class Exchange {
  public:
    Exchange();
    ~Exchange();
    Exchange(Exchange &&) noexcept;
    Exchange &operator=(Exchange &&) noexcept;
    void wait();

  private:
    friend class Communicator;
    struct State;
    std::unique_ptr<State> state_;
  };
  Exchange start_exchange(const double *send, std::int64_t send_count, int dest, double *recv,
                          std::int64_t recv_count, int source, int tag = 0) const;

  // Every rank calls it after a phase that may fail on some ranks only: when any rank failed,
  // every rank throws the same ksum::Error (the failing lowest rank's code and message, prefixed
  // by its rank), so no rank waits forever in the next collective.
  void agree(bool failed, int code, const std::string &message) const;
  void agree(const Failure &f) const { agree(f.failed, f.code, f.message); }
  // Ends every process of the launch now (MPI_Abort on MPI_COMM_WORLD when MPI is running, else
  // this process): for an error the ranks did not agree on, which would leave the others waiting.
  [[noreturn]] static void abort_all(int code);

private:
  template <class Call>
  void counted(const char *op, const std::vector<std::int64_t> &counts, std::int64_t count,
               const double *from, double *to, Call &&call) const;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  bool mpi_ = false;
  int handle_ = 0;              // the duplicate's Fortran handle (with mpi_)
  std::shared_ptr<void> owner_; // frees the duplicate
};

bool mpi_enabled(); // built with MPI

// What the last DistributedSum::execute did on this rank.
struct DistributedStats {
  int ranks = 1, rank = 0;
  std::int64_t local_sources = 0, local_targets = 0, total_sources = 0, total_targets = 0;
  double seconds_compute = 0; // this rank's kernel sums (FMM: pseudo-particle weights + local FMM)
  double seconds_wait = 0; // waiting for the ring's next source block, not hidden by compute (FMM:
                           // the exchanges of weights and sums with their packing)
  double seconds_execute = 0;
  double bytes_sent = 0; // this rank's share of the ring traffic
  // Method::fmm: the sources this rank owns after the Morton partition (with separate targets, its
  // targets are not counted), the sources it received (the others' points and pseudo-particles),
  // and the cells it sent as pseudo-particles.
  std::int64_t fmm_owned = 0, fmm_received = 0, fmm_pseudo_cells_sent = 0;
  double fmm_imbalance = 0; // the last rebalance's measured imbalance (0: none yet)
  // Method::fmm, the last set-up (set_points or a rebalance) on this rank: the partition (keys,
  // splitters, moving the points), the essential trees (the walk that chooses them and the
  // exchange of their coordinates), and the local FMM's set-up.
  double fmm_seconds_partition = 0, fmm_seconds_let = 0, fmm_seconds_local_setup = 0;
  // Method::fmm, the last execute's parts on this rank: the pseudo-particles' weights, the local
  // FMM (its own phases in fmm_local), and the exchanges with their packing (= seconds_wait).
  double fmm_seconds_multipoles = 0, fmm_seconds_local = 0;
  SumStats fmm_local{};
};

// The direct sum u(x_i) = Σ_j w_j K(|x_i − y_j|) over points spread over the ranks of a
// communicator. Each rank holds a slice of the sources (with their weights) and of the targets, of
// any sizes (zero included); it gets the sums of its own targets over all sources of all ranks.
// The source slices travel around a ring (rank r sends to r + 1), each block's transfer overlapped
// with the sum over the block before it; each rank sums on its CPU cores or its GPU (one GPU per
// rank by default: local_rank() mod the host's GPUs), as DirectSum<T> does alone.
//   Results equal the single-process DirectSum to rounding (the partial sums are added per block).
// Every rank must call every member function (they are collective); an error on any rank (bad
// input, shape) is thrown on every rank with the same message.
template <std::floating_point T> class DistributedSum {
public:
  // options.method: Method::direct (every pair, sources around the ring) or Method::fmm (3D
  // potentials, self-sums or separate targets, no gradient: sources and targets are partitioned
  // by Morton key, each rank receives the locally essential tree of the others (sources near its
  // targets, multipole pseudo-particles of far cells) and runs the single-process FMM; results to
  // options.tolerance of the one-process sum, see src/direct/distributed_fmm.hpp).
  DistributedSum(Communicator comm, DirectOptions options);
  ~DistributedSum();
  DistributedSum(DistributedSum &&) noexcept;
  DistributedSum &operator=(DistributedSum &&) noexcept;

  // Targets are the sources on every rank; the global self term j = i is left out. Every rank's
  // slice has the same number of columns (the dimension), even with zero rows, and every rank
  // calls the same overload (a rank without targets of its own passes a table of 0 rows).
  void set_points(const Table<T> &local_sources);
  void set_points(const Table<T> &local_sources, const Table<T> &local_targets);
  // local_weights: one row per local source, the same number of columns on every rank. Returns one
  // row per local target, the columns of DirectSum::execute.
  Table<T> execute(const Table<T> &local_weights);
  // Method::fmm, after an execute: when that execute's measured imbalance (the slowest rank's
  // cost, its pseudo-particle weights and local FMM, over the ranks' mean) exceeds `threshold`,
  // the points are partitioned again by the measured cost (each rank's seconds per owned point
  // given to every point it owns; the Morton order cut into ranges of equal cost) and the
  // essential trees rebuilt, so that a region whose points cost more is spread over more ranks.
  // Results stay within the tolerance (not bit-identical: the partition changes). Returns the
  // measured imbalance (also stats().fmm_imbalance), or 0, doing nothing, when no execute ran
  // since set_points or the last repartition, and for Method::direct (whose ring has no partition
  // to move). Collective (the ranks' largest threshold is used); one rank: nothing moves. The first
  // execute of a plan includes one-off work (its task sizes are learnt), so call it after the
  // second. If the repartition fails (agreed on every rank), set_points must be called again.
  double rebalance(double threshold = 1.1);

  const DistributedStats &stats() const;
  const Communicator &communicator() const;

private:
  void set(const Table<T> &local_sources, const Table<T> *local_targets);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class DistributedSum<float>;
extern template class DistributedSum<double>;

} // namespace ksum
