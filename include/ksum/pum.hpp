#pragma once
// RBF partition-of-unity interpolation (seed 001): local RBF interpolants on overlapping spherical
// patches centred on a regular grid, glued by Shepard weights built from the Wendland W2 function.
//   s(x) = Σ_j W_j(x) R_j(x),  W_j = φ_j / Σ_k φ_k,  φ_j(x) = W2(|x − ξ_j| / δ_j)
// The shape parameter is fixed or chosen per patch by leave-one-out cross validation (Rippa's
// formula, Brent's method over log ε). Double precision, on the CPU (OpenMP) or on a GPU (index,
// fits and evaluation; dimension 2 and 3, up to 4 value columns).
#include <ksum/direct.hpp>
#include <ksum/kernels.hpp>
#include <ksum/table.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace ksum {

class Communicator; // include/ksum/distributed.hpp

struct PumOptions {
  Kernel kernel = Kernel::matern4; // strictly positive definite, or see degree
  // Degree of a polynomial added to every local interpolant: −1 none, 0 constants, 1 linear.
  // Conditionally positive definite kernels (multiquadric, tps, cubic, linear) need at least
  // their minimum degree; with degree d the interpolant reproduces polynomials of degree d
  // exactly. Runs on the CPU (the GPU path serves degree −1).
  int degree = -1;
  double eps = 1.0;   // the shape parameter when loocv is false
  bool loocv = false; // choose ε per patch by LOOCV in [eps_min, eps_max]
  double eps_min = 0.1, eps_max = 100.0;
  int loocv_iterations = 40; // Brent iterations at most per patch
  // Multiplies the seed's number of cells per axis (more cells: smaller, cheaper patches).
  double patch_density = 1.0;
  // Patch radius in cell widths (of the narrowest axis): seed 001 eq. (10) gives √2; raised where
  // needed so that every patch covers its cell (√s / 2 for square cells).
  double patch_radius = 1.4142135623730951;
  // A patch with fewer points (but at least one) grows its radius until it has this many;
  // 0: 3 (s + 1).
  std::int64_t min_patch_points = 0;
  bool merge_duplicates = false; // average the values of repeated points instead of an error
  bool extrapolate = false; // evaluate outside the data's box (nearest patches) instead of error
  int threads = 0;          // 0: OpenMP's default
  // Evaluation points per task of evaluate() on the CPU (an OpenMP schedule(dynamic, S) loop);
  // 0: chosen by the task-size model (include/ksum/tasksize.hpp, dynamic_chunk) from the measured
  // cost of the first points, which are evaluated on one thread first. Results do not depend on it.
  std::int64_t eval_chunk = 0;
  // Patches per task of the local fits on the CPU; 0: the task-size model, from the measured cost
  // of the first 32 cells' fits, run on one thread first. The fits do not depend on it.
  std::int64_t fit_chunk = 0;
  // Called now and then from the calling thread with the fraction done of the current phase (the
  // local fits in set_data, then the points in evaluate).
  std::function<void(double)> progress{};
  // Where set_data() and evaluate() run: automatic uses a GPU when one is visible (dimension 2 or
  // 3, at most 4 value columns). The GPU hands back to the CPU what it does not cover: duplicate
  // points (reported or merged by the CPU path), patches too large for its shared memory (fits
  // on the CPU, evaluation on the GPU), points outside the box or in holes (evaluated on the CPU).
  Backend backend = Backend::automatic;
};

// What set_data did: the numbers a user wants to see in verbose output.
struct PumStats {
  std::int64_t patches = 0, empty_patches = 0, grown_patches = 0, regularised_patches = 0;
  std::int64_t merged_duplicates = 0;
  std::int64_t min_points = 0, median_points = 0, max_points = 0;
  double eps_min = 0, eps_median = 0, eps_max = 0; // chosen ε over the patches
  double radius = 0;                               // the seed's δ_PU
  double seconds_index = 0, seconds_fit = 0;
  // set_data_partitioned, this rank: the data points it owns (those in its cells, duplicates
  // merged), the points of other ranks it received to fit its patches (the halo) in halo_rounds
  // exchanges, and the fitted patches of other ranks it received to evaluate its cells' points.
  std::int64_t owned_points = 0, halo_points = 0, halo_patches = 0;
  int halo_rounds = 0;
  std::int64_t fit_chunk = 0;         // patches per task of the CPU fits (0: they ran on the GPU)
  Backend fit_backend = Backend::cpu; // where the index and the fits ran
};

class PumInterpolant {
public:
  explicit PumInterpolant(PumOptions options);
  ~PumInterpolant();
  PumInterpolant(PumInterpolant &&) noexcept;
  PumInterpolant &operator=(PumInterpolant &&) noexcept;

  // points: N × s, values: N × c (several value columns share the factorisations).
  void set_data(const Table<double> &points, const Table<double> &values);
  // The same with the patches' fits shared among the ranks of comm (include/ksum/distributed.hpp;
  // collective): every rank passes all the data, fits the patches of a contiguous range of cells
  // of about equal work on its CPU cores, and receives the others' fits, so that every rank then
  // holds the interpolant set_data(points, values) makes alone (the same bits) and evaluates its
  // own points. A single-rank communicator is set_data(points, values). Errors on any rank are
  // thrown on every rank; data that differ between ranks are refused.
  void set_data(const Table<double> &points, const Table<double> &values, const Communicator &comm);
  // The same with the data partitioned over the ranks of comm (collective): each rank passes its
  // own rows (any split, none allowed; the data are their concatenation in rank order, and errors
  // name rows by it). The grid's cells are cut into contiguous ranges of about equal work, one
  // per rank; each rank receives the points of its cells and of the cells around them that its
  // patches reach (the halo, widened where sparse patches grow), fits its patches on its CPU
  // cores, and receives the other ranks' fitted patches that reach its cells. No rank holds all
  // the data: it keeps its cells' points and fits, the halo, and per-cell metadata of the whole
  // grid (~12 doubles per cell). evaluate() is then collective: each rank passes its own points,
  // which go to the ranks owning their cells and come back. The values are the same bits as
  // set_data(all points, all values) in one process on the CPU (backend cpu; a GPU agrees to
  // ~1e-10). A single-rank communicator is set_data(points, values).
  void set_data_partitioned(const Table<double> &points, const Table<double> &values,
                            const Communicator &comm);
  // Returns M × c. Points outside the data's box are an error unless options.extrapolate. After
  // set_data_partitioned over several ranks it is collective (every rank calls it, with its own
  // points; an error names the point by its row in the concatenation of the ranks' points).
  Table<double> evaluate(const Table<double> &points) const;

  const PumStats &stats() const;
  // The communicator of set_data_partitioned over several ranks (evaluate() is then collective),
  // else nullptr.
  const Communicator *communicator() const;
  const PumOptions &options() const;
  // Points per task of the last evaluate() that ran on the CPU (options().eval_chunk or the
  // model's choice); 0 before one has.
  std::int64_t last_eval_chunk() const;
  // Replaces options().progress (e.g. one progress line for the fits, another for evaluation).
  void set_progress(std::function<void(double)> progress);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace ksum
