#pragma once
// The few MPI collectives the distributed engines use (seed 003 §5.1: ranks own slice intervals,
// partial summations are reduced, the solution is broadcast), behind one small class so that a
// build without MPI (KSUM_WITH_MPI=OFF) and a process started without mpirun run unchanged as a
// single rank.
#include <cstdint>
#include <string>

namespace ksum::runtime {

class Comm {
public:
  // MPI_COMM_WORLD when this build has MPI and the process was started by mpirun (MPI is
  // initialised on first use and finalised at exit); otherwise a single rank.
  static Comm world();
  // A single-rank communicator (to run serially inside an MPI job, e.g. a reference).
  static Comm self();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool distributed() const { return size_ > 1; }

  // In place at root: buf = Σ over ranks (other ranks' buf unchanged).
  void reduce_sum(double *buf, std::int64_t count, int root = 0) const;
  void broadcast(double *buf, std::int64_t count, int root = 0) const;

  // Every rank calls it after a phase that may fail on some ranks only: when any rank failed,
  // every rank throws the same ksum::Error (the failing lowest rank's code and message, prefixed
  // by its rank), so no rank waits forever in the next collective.
  void agree(bool failed, int code, const std::string &message) const;

private:
  int rank_ = 0, size_ = 1;
  bool mpi_ = false;
};

bool mpi_enabled(); // built with MPI

} // namespace ksum::runtime
