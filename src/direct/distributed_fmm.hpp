#pragma once
// The 3D FMM over MPI ranks (issue 25 item 2), behind DistributedSum with Method::fmm: a
// self-sum u_i = Σ_{j≠i} w_j K(|x_i − x_j|) over the points of every rank, or with separate
// targets u_i = Σ_j w_j K(|y_i − x_j|) (a singular kernel's coincident pairs add nothing, as in
// DirectSum).
//
// set_points (collective):
//  1. The points' Morton keys in the bounding cube of all ranks' points (sources and targets);
//     P − 1 splitter keys cut the Morton order into ranges of equal point counts (sources and
//     targets together), found by bisecting every splitter at
//     once over the key space (one MPI_Allreduce of the P − 1 counts below the probes per step,
//     at most 63 steps), so a cut may fall inside any cell; every point goes to its range's rank
//     (MPI_Alltoallv), and so does every target. A global histogram of the target keys at level 6
//     (64³ cells, MPI_Allreduce) tells every rank the others' domains: the cells occupied by
//     targets that each key range meets.
//  2. The locally essential tree: each rank walks its own octree (its sources sorted by key, a
//     cell being a key range) once per other rank, against that rank's domain (its level-4 cells,
//     known from the histogram). A cell well separated from the whole domain (a gap of at least
//     its own side to every cell of it, the FMM's own separation) with more points than p³ goes
//     as p³ pseudo-particles at its Chebyshev nodes, whose weights are its multipole expansion of
//     the interpolation FMM (Fong & Darve: W_m = Σ_j S_p(x̄_m, y_j) w_j), p chosen per level
//     as the single-process FMM chooses its order (the interpolation-error estimate times its
//     calibrated ratio to measured errors) but at a quarter of the tolerance; a separated cell
//     with fewer points, or a leaf cell that is not separated, goes as its points; other cells
//     are opened. The coordinates travel once (MPI_Alltoallv).
//  3. Each rank's single-process FMM (DirectSum, Method::fmm, the whole tolerance) over sources =
//     its sources and everything it received, targets = its targets (its points for a self-sum).
//     The error budget, relative to the tolerance: the local FMM's interpolation (calibrated) ½,
//     its low-rank M2L operators 1/10 each (≤ 1/5 measured against the full ones), the
//     pseudo-particles (calibrated) ¼, and from 1e-4 on the float parts (≤ 1/100 measured): under
//     0.96 in all. Until session 44 the local FMM ran at half the tolerance and the
//     pseudo-particles took the raw estimate at half: Laplace at 1e-6 then took order 9 on every
//     rank against 8 alone (leaves of 493 points against 399), with errors 15–30× below the
//     tolerance.
// rebalance (collective, after an execute): each rank's measured cost per owned point (sources and
// separate targets) in that execute (its pseudo-particle weights and local FMM seconds over its
// points) is given to each of its points, and steps 1–3 run again with the splitters cutting ranges
// of equal cost instead of equal counts. Where one region's points cost more (deeper trees, more
// received sources), its rank keeps fewer of them.
// execute (collective): the weights follow the points (one MPI_Alltoallv), the pseudo-particles'
// weights are formed, the essential tree's weights travel (one MPI_Alltoallv), the local FMM
// runs, the self term K(0) w_i of a non-singular kernel comes off, and the sums return to the
// caller's ranks and rows (one MPI_Alltoallv).
#include <ksum/direct.hpp>
#include <ksum/distributed.hpp>

#include <memory>

namespace ksum::detail {

struct DistributedFmmStats {
  std::int64_t owned = 0;           // points this rank owns after the partition
  std::int64_t sent_points = 0;     // points sent as they are to other ranks' essential trees
  std::int64_t sent_cells = 0;      // cells sent as pseudo-particles
  std::int64_t sent_pseudo = 0;     // pseudo-particles sent
  std::int64_t received = 0;        // sources received (points and pseudo-particles)
  int order_min = 0, order_max = 0; // Chebyshev orders of the pseudo-particle cells sent
  // set-up: the partition (keys, splitters, moving the points), the walk that chooses the essential
  // trees, their coordinates' exchange, the local FMM's set-up
  double seconds_partition = 0, seconds_walk = 0, seconds_let = 0, seconds_local_setup = 0;
  double seconds_exchange = 0, seconds_multipoles = 0, seconds_local = 0; // last execute
  // rebalance: the largest rank cost of the execute it acted on over the ranks' mean (1: even).
  double imbalance = 0;
  SumStats local{}; // the local FMM plan's stats after the last execute
};

template <class T> class DistributedFmm {
public:
  // local_points: this rank's points (n × 3), the sources; local_targets: this rank's separate
  // targets (m × 3; null: a self-sum over the points); opt: Method::fmm, no gradient.
  DistributedFmm(const Communicator &comm, const DirectOptions &opt, const Table<T> &local_points,
                 const Table<T> *local_targets = nullptr);
  ~DistributedFmm();
  // local_weights: one row per local point (source); returns one row per local target.
  Table<T> execute(const Table<T> &local_weights);
  // Repartitions local_points and local_targets (the constructor's) by the cost measured in the
  // last execute when
  // its imbalance exceeds threshold (and there are several ranks); returns that imbalance
  // (stats().imbalance), or 0, doing nothing, before the first execute.
  double rebalance(const Table<T> &local_points, const Table<T> *local_targets, double threshold);
  const DistributedFmmStats &stats() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class DistributedFmm<float>;
extern template class DistributedFmm<double>;

} // namespace ksum::detail
