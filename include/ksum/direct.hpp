#pragma once
// Kernel summation: u_r(x_i) = Σ_j w_{j,r} K(|x_i − y_j|), optionally with ∇ₓu_r, either exactly
// (the direct sum, any dimension) or, in 3D, by the fast multipole method to a relative tolerance,
// or, for the gaussian kernel in any dimension, by the fast Gauss transform to an absolute one.
// A plan: construct with options → set_points() (validates and uploads the geometry, builds the
// tree) → execute(weights) as often as needed.
#include <ksum/kernels.hpp>
#include <ksum/table.hpp>

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace ksum {

enum class Backend { automatic, cpu, cuda };
Backend parse_backend(std::string_view name); // "auto", "cpu", "gpu" or "cuda"
std::string_view to_string(Backend b);

// direct: every pair, exact to rounding. fmm: the 3D fast multipole method (Chebyshev
// interpolation, any kernel of the catalogue); the relative l2 error of u is at most `tolerance`.
// fgt: the gaussian kernel only, by the fast Gauss transform (ksum::GaussTransform, method fgt,
// bandwidth h = 1/eps); `tolerance` is then the absolute error per target relative to Σ_j |w_j|.
// automatic: the fastest of direct, fmm (3D only) and, for the gaussian kernel, fgt, predicted from
// rates timed on this machine on first use (a small direct sum, FMM and FGT; a fraction of a
// second, counted in the set-up); the gradient and problems under a few million pairs stay direct.
// Where it picks fgt, `tolerance` has fgt's meaning.
enum class Method { direct, fmm, automatic, fgt };
Method parse_method(std::string_view name); // "direct", "fmm", "fgt" or "auto"
std::string_view to_string(Method m);

// What the plan did (filled by set_points and execute).
struct SumStats {
  Method method = Method::direct; // the method in use (resolved from automatic)
  int fmm_order = 0;              // Chebyshev nodes per axis and box; fgt: series terms p per axis
  int tree_depth = 0;
  std::int64_t tree_boxes = 0; // fgt: occupied boxes (sources and targets)
  // The FMM's sampled interpolation error for its order; fgt: the proven bound on |u − û| / Σ|w|.
  double estimated_error = 0;
  // 3D FMM: the mean rank of its low-rank M2L class operators (classes kept in full not counted;
  // 0: every class in full).
  double fmm_m2l_rank = 0;
  // 3D FMM: parts of each execute run in float at this tolerance (DirectOptions::
  // fmm_mixed_precision); an execute whose weights could leave float's range still runs in double.
  bool fmm_mixed_precision = false;
  std::int64_t fmm_leaf_size = 0; // 3D FMM: the most points per leaf the tree was built with
  double seconds_setup = 0, seconds_execute = 0;
  // FMM set-up: the tree (codes, radix sort, boxes, lists) and the M2L operators (and uploads).
  double seconds_tree = 0, seconds_sort = 0, seconds_operators = 0;
  // FMM phases of the last execute: P2M + M2M; M2L; P2L + L2L + L2P; M2P + P2P (near field).
  double seconds_upward = 0, seconds_m2l = 0, seconds_downward = 0, seconds_near = 0;
  // 3D FMM on the GPU, last execute: the weights' way in and the results' way out (host copies,
  // uploads, the permutations to the tree order and back, downloads).
  double seconds_transfer = 0;
  std::int64_t cpu_block = 0; // CPU direct sum: the targets per task of the last execute
  // 3D FMM on the CPU: the near pass's target leaves per task in the last execute; the M2L's
  // blocks of 16 (64 with mixed precision) target boxes per task and the upward pass's boxes per
  // task, both at the deepest
  // level.
  std::int64_t fmm_near_chunk = 0, fmm_m2l_chunk = 0, fmm_pass_chunk = 0;
  // Why the plan runs another method than the options asked for (empty: it runs that method):
  // method fgt where the Gauss transform's cost model predicts the direct sum cheaper; method
  // automatic: the method chosen and the candidates' predicted times (empty below the few million
  // pairs where it stays direct without timing anything).
  std::string note{};
};

struct DirectOptions {
  Kernel kernel = Kernel::laplace;
  double eps = 1.0;                     // shape parameter: K = φ(ε r)
  bool gradient = false;                // also compute ∇ₓu (d columns per right-hand side)
  Backend backend = Backend::automatic; // automatic: the GPU when one is present, else the CPU
  int threads = 0;                      // CPU threads; 0: OpenMP's default
  // GPUs sharing the targets; empty: all visible (fgt: the first one listed, or 0; the 3D FMM: all
  // from 2^22 targets on, else GPU 0). The 3D FMM runs its upward pass on each listed GPU and the
  // rest on each one's share of the targets; an id listed twice runs two engines on that GPU.
  std::vector<int> devices{};
  // Bytes of device memory one GPU may use; 0: 90 % of its free memory. Inputs larger than this are
  // streamed in chunks (tests set it small to exercise that path).
  std::int64_t device_memory_limit = 0;
  // Called now and then with the fraction done, from the thread that called execute().
  std::function<void(double)> progress{};
  Method method = Method::direct;
  // FMM: the relative l2 error of u wanted (1e-11 … 0.1 in double precision, 1e-6 … 0.1 in float,
  // where the results carry about 7 digits).
  // fgt: the absolute error per target relative to the weights, |û_i − u_i| ≤ tolerance · Σ_j |w_j|
  // for every target and right-hand side (the fast Gauss transform's guarantee; 1e-12 … 0.5 in
  // double precision, 1e-6 … 0.5 in float).
  double tolerance = 1e-6;
  // method fgt: where the Gauss transform's cost model (its plan's real boxes against the direct
  // sum on this backend) predicts the direct sum cheaper, the plan runs the direct sum instead and
  // says so in stats().note; true runs the FGT regardless.
  bool force_method = false;
  int fmm_order = 0;              // FMM: Chebyshev order p (2 … 16); 0: from the tolerance
  std::int64_t fmm_leaf_size = 0; // FMM: most points of either kind per leaf box; 0: from p
  // 3D FMM on the CPU: the M2L's 16 class operators in low rank (a truncated SVD exact to
  // tolerance / 10 relative to each operator beyond its leading part) and the leaf size that
  // balances them; false: the full p³ × p³ matrices (for comparison).
  bool fmm_lowrank = true;
  // 3D FMM on the CPU, from tolerance 1e-4 on: the low-rank M2L products (with the cube
  // symmetries folded into the factors) and, with one right-hand side, the near field's sums over
  // a leaf's neighbours in float, their results added in double (rounding ~1e-7 of the terms, far
  // below the tolerance; so there one and several right-hand sides differ by ~1e-7). Not where
  // the points span more than 1e15 or less than 1e-15 per box (scaled), the tree reaches its
  // deepest level, or the weights could leave float's range. false: double throughout.
  // On the GPU (f64 plans) the same tolerances and limits put the near field's point pairs in
  // float, with coordinates relative to the target leaf's centre; pairs closer than 2.5 % of their
  // boxes' reach keep double (each distance then within ~1e-5 relative).
  bool fmm_mixed_precision = true;
  // 3D FMM on the GPU: the same low-rank M2L (the tree keeps the full operators' leaf size), for
  // problems of at least fmm_lowrank_gpu_from points (sources or targets). On an H200 at 1e-6 it
  // cut the M2L from 0.079 to 0.047 s at 10⁷ points and from 0.71 to 0.39 s at 10⁸, the errors
  // unchanged; at 10⁶ it saved at most 3.6 ms for 14–33 ms more set-up (docs/fmm3d.md).
  bool fmm_lowrank_gpu = true;
  std::int64_t fmm_lowrank_gpu_from = std::int64_t{1} << 22;
  // CPU direct sum: targets per task (a block of targets against all sources, one OpenMP dynamic
  // chunk). 0: chosen by the task-size model from this machine's calibration (`ksum tune`; see
  // include/ksum/tasksize.hpp), or 32 without one. The results do not depend on it.
  std::int64_t cpu_block = 0;
  // 3D FMM on the CPU: target leaves per task of the near pass (L2P, M2P, P2P). 0: chosen by the
  // task-size model (include/ksum/tasksize.hpp, dynamic_chunk) from the pass's time in the
  // previous execute (4 in the first). The results do not depend on it.
  std::int64_t fmm_near_chunk = 0;
  // 3D FMM on the CPU: blocks of 16 target boxes (64 with mixed precision) per task of the M2L pass
  // (1 in the first execute),
  // and boxes per task of the upward (P2M, M2M), X-list and downward (L2L) passes (8 in the first).
  // 0: the task-size model, per level and pass, from the previous execute's times. The results do
  // not depend on them.
  std::int64_t fmm_m2l_chunk = 0, fmm_pass_chunk = 0;
};

template <std::floating_point T> class DirectSum {
public:
  explicit DirectSum(DirectOptions options);
  ~DirectSum();
  DirectSum(DirectSum &&) noexcept;
  DirectSum &operator=(DirectSum &&) noexcept;

  // Targets are the sources; the self term j = i is left out.
  void set_points(const Table<T> &sources);
  // Separate targets (same dimension); every pair counts. Coincident points of a singular kernel
  // (laplace, log) contribute 0.
  void set_points(const Table<T> &sources, const Table<T> &targets);

  // weights: one row per source, one column per right-hand side. Returns one row per target; per
  // right-hand side r its column r, or with the gradient the 1 + d columns u_r, ∂₁u_r, …, ∂_d u_r.
  Table<T> execute(const Table<T> &weights);
  // The same with or without the gradient for this call only, whatever options().gradient says
  // (method direct; the FMM and the FGT compute values only and refuse gradient = true).
  Table<T> execute(const Table<T> &weights, bool gradient);

  Backend backend() const;          // the backend in use (resolved from automatic)
  std::int64_t dimension() const;   // d
  std::int64_t num_sources() const; // N
  std::int64_t num_targets() const; // M
  const DirectOptions &options() const;
  const SumStats &stats() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class DirectSum<float>;
extern template class DirectSum<double>;

} // namespace ksum
