#pragma once
// The pieces of a global RBF fit spread over MPI ranks (GlobalRbfInterpolant::set_data with a
// communicator, issue 25): each rank holds its own rows of the centres and of every solver
// vector; these give the solvers (fgp.cpp, krylov.cpp) the two operators they need on such rows.
#include "rbf/global/solvers.hpp"

#include <ksum/distributed.hpp>

#include <functional>
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

// This rank's L-sets in a distributed fit: the sets led by its own rows, members named by global
// row (set s: idx[ptr[s] … ptr[s + 1]), its own row first, ζ aligned), the sets in σ's order.
struct RowSets {
  std::vector<std::int64_t> ptr{0};
  std::vector<std::int64_t> idx;
  std::vector<double> zeta;
  std::int64_t skipped = 0; // singular sets (ζ = 0)
  std::int64_t count() const { return static_cast<std::int64_t>(ptr.size()) - 1; }
};

// What the search of build_lsets_over_ranks exchanged on this rank.
struct DistributedLSetStats {
  std::int64_t queries = 0;  // (set, rank) pairs: this rank's sets whose ball reached another rank
  std::int64_t received = 0; // candidate points the other ranks returned (coordinates included)
  std::int64_t twins_asked = 0; // this rank's points inside another rank's boxes (duplicate check)
  bool gathered = false;        // rows in no spatial order: the points were all-gathered instead
  // Seconds on this rank: indexing (σ's keys, the tree, the boxes), the duplicate check, the own
  // search (with the queries), answering the others' queries, the halo's search and the sets'
  // members, and the local solves (ζ); exchanges included where they fall.
  double seconds_index = 0, seconds_twins = 0, seconds_own = 0, seconds_answer = 0,
         seconds_halo = 0, seconds_solve = 0;
};

// The L-sets of the points spread over the ranks (this rank: `points`, the global rows offset …
// offset + n − 1 of `total`), without gathering them: the sets this rank's rows lead, equal to
// the sets build_lsets forms on all points together (the same members in the same order, so the
// same ζ bit for bit). First it checks that no two points are identical, over all ranks, with
// check_distinct's error (the same rows named). Each rank searches its own points for a set's q
// nearest unvisited ones; the distance of the q-th bounds a ball, and only the ranks whose boxes
// (the bounding boxes of 64 runs of their k-d tree's leaf order, all-gathered) meet the ball are
// asked for their own q nearest unvisited points within it. Points in spatially compact slices
// (a Morton or slab partition) keep these exchanges to the slices' boundaries; rows in no spatial
// order make every box large: where the points inside other ranks' boxes exceed a quarter of an
// all-gather's, the ranks gather all points instead and search one tree over them (the same
// sets; N coordinates per rank while it runs). Collective: every rank returns, or every rank
// throws the same error.
// after_distinct (optional): the caller's own checks, run on every rank right after the
// duplicate check and agreed (the fit's unisolvence, so that its errors come in one process's
// order).
RowSets build_lsets_over_ranks(const Communicator &comm, const Table<double> &points,
                               std::int64_t offset, std::int64_t total, const LSetConfig &cfg,
                               DistributedLSetStats *stats = nullptr,
                               const std::function<void()> &after_distinct = {});

// τ(r) on this rank's rows, for the sets its rows lead (build_lsets_over_ranks; rows counts[0] + …
// + counts[rank − 1] onward are this rank's): the operator keeps those sets in compact indices
// over this rank's rows and its halo (the other ranks' rows its sets touch), so each call
// exchanges only the halo's residuals and parts of τ with their owners (two MPI_Alltoallv) and
// touches only those rows: O(own + halo) values per rank, where the first version gathered all N
// rows. counts[k]: rank k's rows. `sets` is only read here (the caller may free it). Collective.
TauOperator distributed_tau(const Communicator &comm, const RowSets &sets,
                            std::vector<std::int64_t> counts, int threads,
                            DistributedTauStats *stats = nullptr);

} // namespace ksum::rbf
