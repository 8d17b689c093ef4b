#pragma once
// The 3D fast multipole method for any radial kernel of the catalogue, by Chebyshev interpolation
// (Fong & Darve's "black-box" FMM): a box's multipole expansion is the weights its sources put on
// its p³ Chebyshev nodes, its local expansion the field's values at them; translations are exact
// re-interpolations (M2M, L2L) and kernel evaluations between nodes (M2L), so one code serves every
// kernel. The M2L operators of the 316 same-level offsets reduce by the cube's 48 symmetries to 16
// per level (one set for all levels when the kernel is homogeneous: laplace, linear, cubic,
// quintic), applied as matrix products over blocks of boxes.
//
// The order p follows from the tolerance: per level with far interactions, the interpolation error
// of the kernel between two cubes one side apart (the closest far pair) is estimated by sampling,
// relative to the kernel's scale there (or to φ(0) where that is finite and larger), and the
// smallest p whose estimate is ≤ tolerance / 2 is used (the sampled errors of the tests, signed
// weights, sit 3–30 times below the estimate).
#include "fmm/fmm3d/fmm_gpu.hpp"
#include "fmm/fmm3d/fmm_tree.hpp"

#include <ksum/kernels.hpp>
#include <ksum/table.hpp>
#include <ksum/tasksize.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace ksum::fmm {

struct BbFmmOptions {
  Kernel kernel = Kernel::laplace;
  double eps = 1;
  double tolerance = 1e-6;
  int order = 0;              // p; 0: from the tolerance
  std::int64_t leaf_size = 0; // 0: from p
  int threads = 0;            // 0: OpenMP's default
  // CPU apply(): target leaves per task of the near pass; 0: the task-size model from the pass's
  // time in the previous apply (4 in the first).
  std::int64_t near_chunk = 0;
  // CPU apply(): blocks of 16 target boxes (64 with mixed precision) per task of the M2L pass (a
  // block shares one product per class, whatever the task size); 0: the task-size model per level
  // (1 in the first apply).
  std::int64_t m2l_chunk = 0;
  // CPU apply(): boxes per task of the upward (P2M, M2M), X-list (P2L) and downward (L2L) passes;
  // 0: the task-size model per level and pass (8 in the first apply).
  std::int64_t pass_chunk = 0;
  // The CPU's M2L on low-rank class operators (exact to tolerance / 10 each); off: the full
  // p³ × p³ matrices and the leaf size of those (for comparison).
  bool compress_m2l = true;
  // From tolerance 1e-4 on, two CPU parts in float, their results added in double: the low-rank
  // M2L products (the cube symmetries folded into the factors) and, with one right-hand side, the
  // near field's sums over a leaf's neighbours (differences taken in double); within float's
  // range only (set_points and apply check); off: double throughout. On the GPU (double) the near
  // field's point pairs only, with any number of right-hand sides (fmm_pairs.cu).
  bool mixed_precision = true;
  bool compress_m2l_gpu = false; // the same on the GPU (DirectOptions::fmm_lowrank_gpu)
  bool gpu = false;              // run apply() on the GPU (fmm_gpu.hpp)
  bool gpu_single = false;       // in float there
  int device = 0;
  // Several GPUs share the work by targets (make_fmm_gpu); empty: `device` alone.
  std::vector<int> devices{};
};

struct BbFmmStats {
  int order = 0;
  double estimated_error = 0; // the sampled interpolation error of the chosen p
  double m2l_rank = 0;        // the CPU M2L's mean rank over its low-rank class operators (0: none)
  bool mixed_precision = false; // the apply runs those parts in float (BbFmmOptions)
  std::int32_t depth = 0;
  std::int64_t leaf_size = 0, boxes = 0, leaves = 0;
  double root_scale = 1; // the root cube's side over the points' bounding cube (set_points)
  std::int64_t v_pairs = 0, u_pairs = 0, w_pairs = 0, x_pairs = 0;
  std::int64_t near_interactions = 0; // source–target pairs evaluated directly
  double operator_bytes = 0;
  double seconds_tree = 0, seconds_operators = 0;
  FmmTreeTimes tree_phases; // of the last tree built (set_points may build two: see the order)
  // of the last apply():
  double seconds_upward = 0, seconds_m2l = 0, seconds_downward = 0, seconds_near = 0;
  double seconds_transfer = 0; // GPU: the weights in and the results out (GpuTimes::transfer)
  double seconds_apply = 0;
  std::int64_t near_chunk = 0; // the CPU near pass's leaves per task (0: not run on the CPU)
  // The CPU M2L's blocks per task and the upward pass's boxes per task at the deepest level (the
  // level with the most work; 0: not run on the CPU).
  std::int64_t m2l_chunk = 0, pass_chunk = 0;
};

class BbFmm {
public:
  explicit BbFmm(const BbFmmOptions &options);
  ~BbFmm();
  // Column-major coordinates (x column, then y, then z), unscaled; targets nullptr: targets are the
  // sources and the self term j = i is left out.
  void set_points(const double *sources, std::int64_t n, const double *targets, std::int64_t m);
  // w: n × nrhs column-major (input order); out: m × nrhs column-major, overwritten.
  void apply(const double *w, std::int64_t nrhs, double *out);
  // The same in float: on a float GPU engine no conversion at all; elsewhere through double.
  void apply(const float *w, std::int64_t nrhs, float *out);
  const BbFmmStats &stats() const { return stats_; }
  const FmmTree &tree() const { return tree_; }

  // The sampled interpolation error of order p for cubes of half side s (scaled coordinates), as
  // used to choose p; exposed for tests and benchmarks.
  static double interpolation_error(Kernel kernel, int p, double half_side);
  // The measured error over that estimate at order p (order_calibration.hpp): the order choice
  // wants calibrated_ratio · interpolation_error ≤ tolerance / 2.
  static double calibrated_ratio(Kernel kernel, int p);

private:
  struct Operators;
  // mixed: the parts of BbFmmOptions::mixed_precision in float for this apply.
  void apply_cpu(const double *ws, std::int64_t nrhs, double *us, bool mixed);
  // Whether an apply whose largest |weight| is wmax runs mixed precision.
  bool mixed_for(double wmax) const;
  template <class U> double largest_weight(const U *w, std::int64_t count) const;
  void record(const GpuTimes &times);
  BbFmmOptions opt_;
  double scale_ = 1; // coordinates are multiplied by the kernel's coord_scale(eps)
  FmmTree tree_;
  BbFmmStats stats_;
  double kernel_max_ = 0; // the kernel's largest |value| over a float term's distances (set_points)
  std::unique_ptr<Operators> ops_;
  std::vector<char> has_local_; // per box: receives a local expansion (its own or inherited)
  // The CPU apply's buffers, kept between applies and zeroed by all threads (fresh ones cost
  // page faults and a serial memset each time: ~40 ms of a 0.2 s execute at 10⁶ points): the
  // weights and results in tree order, the boxes' multipole and local expansions.
  detail::uninit_vector<double> ws_, us_, mult_, loc_;
  // The near pass's target leaves per task, learnt from the last CPU apply (tasksize.hpp).
  tasksize::LearnedChunk near_chunk_{4};
  // The same per level for the upward, M2L and downward passes, and for the X list.
  struct LevelChunks {
    std::vector<tasksize::LearnedChunk> up, m2l, down;
    tasksize::LearnedChunk x{8};
  } level_chunks_;
  std::unique_ptr<FmmGpu> gpu_;
};

} // namespace ksum::fmm
