#pragma once
// The adaptive 2D fast multipole method of seed 004 Paper IV (Engblom's asymmetric pyramid FMM),
// on the CPU's threads with the near field optionally on the GPU at the same time.
//
//   harmonic: u(z_i) = Σ_j q_j / (z_i − z_j)         (complex strengths; Biot–Savart, 2D gravity)
//   log:      u(z_i) = Σ_j q_j log|z_i − z_j|         (complex q_j: two real sums at once)
//
// Points and strengths are complex numbers x + iy. A plan: construct with options → set_points()
// (the pyramid tree and its connectivity) → execute(strengths) as often as needed. Simulations
// call set_points() every time step on the same plan; set_parameters() moves θ and the number of
// levels between calls (the autotuner does this).
#include <ksum/direct.hpp>

#include <complex>
#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace ksum {

enum class Fmm2dKernel { harmonic, log };
Fmm2dKernel parse_fmm2d_kernel(std::string_view name); // "harmonic" or "log"
std::string_view to_string(Fmm2dKernel k);

// The near-field core of vortex blobs (Lamb–Oseen, i.e. a Gaussian vorticity core of radius δ):
// the pair term q/(z − z_j) becomes q/(z − z_j) · (1 − exp(−|z − z_j|²/δ²)), finite (0) at
// z = z_j. The far field uses the plain kernel, which is exact to the tolerance once every weakly
// coupled pair of boxes is more than δ·sqrt(log(1/tol)) apart; set_points() checks this and
// names δ and the gap otherwise. Harmonic kernel only.
enum class Fmm2dSmoothing { none, gaussian };
Fmm2dSmoothing parse_fmm2d_smoothing(std::string_view name); // "none", "gaussian" (or "oseen")

struct Fmm2dOptions {
  Fmm2dKernel kernel = Fmm2dKernel::harmonic;
  Method method = Method::fmm; // direct: every pair (the reference); automatic: fmm above ~2000
  // Relative error wanted: max_i |u_i − u_i^exact| ≤ tolerance · max_i |u_i^exact| (roughly; the
  // tests check this bound). 1e-13 … 0.1 in double, 1e-6 … 0.1 in float.
  double tolerance = 1e-6;
  double theta = 0.5; // θ of the θ-criterion R + θ r ≤ θ d, in (0, 1)
  int levels = 0;     // Nlevels of the pyramid (≥ 1); 0: from the number of points
  int order = 0;      // expansion terms p; 0: from the tolerance and θ (p ≈ log tol / log θ)
  Backend backend = Backend::cpu; // cuda: the near field on the GPU, concurrently with the CPU
  bool gpu_m2l = false; // cuda: also the M2L translations on the GPU (seed 002's row traversal)
  int threads = 0;      // CPU threads; 0: OpenMP's default
  Fmm2dSmoothing smoothing = Fmm2dSmoothing::none;
  double core_radius = 0; // δ of the smoothing
  // Task sizes of the CPU passes (seed 004 Paper II's model, include/ksum/tasksize.hpp): the
  // pyramid level whose boxes are the downward pass's tasks (each task its box's whole subtree;
  // −1: the model, from the previous execute's cost per box, and at the first execute the
  // shallowest level with ≥ 8 boxes per thread; kept from the second execute on), and the leaves
  // per task of the CPU near field (0: the model, tasksize::LearnedChunk: 4 at the first execute,
  // then from the measured near-field times, a probe of 4× the size, then kept). Both are learnt
  // again when the tree changes (levels, p, points, θ). The results do not depend on either.
  int subtree_level = -1;
  std::int64_t near_chunk = 0;
};

// What the last set_points() + execute() did, for benchmarks and the autotuner.
struct Fmm2dStats {
  int levels = 0, order = 0;
  double theta = 0;
  std::int64_t m2l_translations = 0; // weak couplings over all levels
  std::int64_t p2p_pairs = 0;        // near-field point pairs
  // Phases (seconds): partition = tree + connectivity; upward = P2M + M2M; downward = M2L + L2L
  // (+ L2P); near = P2P on the CPU, or the time the CPU waited for the GPU's P2P after its own
  // downward pass; gpu_near = the GPU's P2P (transfers included), measured on the GPU.
  double seconds_partition = 0, seconds_upward = 0, seconds_downward = 0, seconds_near = 0;
  double seconds_gpu_near = 0, seconds_gpu_m2l = 0;
  double seconds_execute = 0; // execute() as a whole
  // The partition's parts: the median splits, and the lists (connectivity).
  double seconds_split = 0, seconds_connect = 0;
  bool cpu_waited_on_gpu = false; // the CPU finished its part before the GPU (AT3a's signal)
  // The task sizes the last execute used (Fmm2dOptions::subtree_level, near_chunk; near_chunk 0
  // when the near field ran on the GPU).
  int subtree_level = 0;
  std::int64_t near_chunk = 0;
};

template <std::floating_point T> class Fmm2d {
public:
  using C = std::complex<T>;
  explicit Fmm2d(Fmm2dOptions options);
  ~Fmm2d();
  Fmm2d(Fmm2d &&) noexcept;
  Fmm2d &operator=(Fmm2d &&) noexcept;

  // Targets are the sources; the self term j = i is left out.
  void set_points(std::span<const C> sources);
  // Separate evaluation points; a target on top of a source gets 0 from it.
  void set_points(std::span<const C> sources, std::span<const C> targets);
  // One strength per source; returns one value per target.
  std::vector<C> execute(std::span<const C> strengths);
  // The same into the caller's memory (result: one entry per target), so a simulation's time
  // steps reuse one buffer.
  void execute(std::span<const C> strengths, std::span<C> result);

  // Moves θ and Nlevels (levels 0: from the number of points); takes effect at the next
  // set_points() (or at once by rebuilding the tree on the points given last).
  void set_parameters(double theta, int levels);
  double theta() const;
  int levels() const; // in use (resolved)
  int order() const;  // p in use
  Backend backend() const;
  const Fmm2dOptions &options() const;
  const Fmm2dStats &stats() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class Fmm2d<float>;
extern template class Fmm2d<double>;

// Levels such that the finest boxes hold about `per_box` points: the smallest L with
// n / 4^(L−1) ≤ per_box (at least 1).
int fmm2d_default_levels(std::int64_t n, double per_box = 32);

} // namespace ksum
