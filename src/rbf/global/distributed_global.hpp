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

// τ(r) on this rank's rows, for L-sets that hold (by global row index) only the sets this rank
// formed (LSetConfig::own_begin/own_end): the rows of r are gathered from every rank, this rank's
// sets give their part of τ at every row they touch, and the parts are summed onto the rows'
// ranks. counts[k]: rank k's rows. Collective. Each call moves O(N) values per rank, as the
// ring's products by Φ do.
TauOperator distributed_tau(const Communicator &comm, const LSets &sets,
                            std::vector<std::int64_t> counts, int threads);

} // namespace ksum::rbf
