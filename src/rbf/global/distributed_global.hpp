#pragma once
// The pieces of a global RBF fit spread over MPI ranks (GlobalRbfInterpolant::set_data with a
// communicator, issue 25): each rank holds its own rows of the centres and of every solver
// vector; these give the solvers (fgp.cpp, krylov.cpp) the two operators they need on such rows.
#include "rbf/global/solvers.hpp"

#include <ksum/distributed.hpp>

#include <memory>

namespace ksum::rbf {

// y = (Φ + (φ(0) + σρ) I) x on this rank's rows: the sum over every rank's centres by
// DistributedSum (method direct: the centres' blocks travel around the ranks; fmm: the
// distributed FMM to fmm_tolerance), plus the diagonal. Collective.
std::unique_ptr<KernelMatVec> make_distributed_matvec(const Communicator &comm,
                                                      const Table<double> &local_centres,
                                                      Kernel kernel, double eps, double diag,
                                                      Backend backend, int threads, Method method,
                                                      double fmm_tolerance);

// What distributed_tau exchanges per application: this rank receives halo_rows residuals (the
// other ranks' rows its sets touch) and returns as many parts of τ; it sends sent_rows of its own
// and receives as many parts back.
struct DistributedTauStats {
  std::int64_t halo_rows = 0, sent_rows = 0;
};

// τ(r) on this rank's rows, for L-sets that hold (by global row index) only the sets this rank
// formed (LSetConfig::own_begin/own_end, the rows counts[0] + … + counts[rank − 1] onward): the
// operator keeps those sets in compact indices over this rank's rows and its halo (the other
// ranks' rows its sets touch), so each call exchanges only the halo's residuals and parts of τ
// with their owners (two MPI_Alltoallv) and touches only those rows: O(own + halo) values per
// rank, where the first version gathered all N rows. counts[k]: rank k's rows. `sets` is only read
// here (the caller may free it). Collective.
TauOperator distributed_tau(const Communicator &comm, const LSets &sets,
                            std::vector<std::int64_t> counts, int threads,
                            DistributedTauStats *stats = nullptr);

} // namespace ksum::rbf
