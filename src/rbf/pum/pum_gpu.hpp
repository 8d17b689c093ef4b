#pragma once
// GPU evaluation of a fitted RBF-PUM interpolant (the fits stay on the CPU). The host engine
// (pum_gpu.cpp) uploads the patch arrays once; the kernel (cuda/pum_eval.cu) gives one thread per
// evaluation point, visits the neighbouring cells' patches like the CPU path and reports points it
// cannot serve (outside the box, or in a hole) so that the caller can use the CPU path for them.
#include <ksum/kernels.hpp>

#include <cstdint>
#include <memory>

namespace ksum::detail {

inline constexpr std::int64_t pum_gpu_max_cols = 4;

// Host views of a fitted interpolant (all arrays as pum.cpp holds them).
struct PumGeometry {
  Kernel kernel = Kernel::matern4;
  std::int64_t s = 0, ncols = 0, n = 0, ncells = 0;
  const std::int64_t *cells_per_axis = nullptr;
  const double *lo = nullptr, *hi = nullptr;
  double delta = 0;
  std::int64_t base_ring = 1;
  const double *radius = nullptr, *scale = nullptr; // per cell
  const std::int64_t *begin = nullptr, *end = nullptr, *coef_at = nullptr;
  const double *centres = nullptr; // ncells × s, row-major
  const std::int64_t *pidx = nullptr;
  std::int64_t npidx = 0;
  const double *coef = nullptr;
  std::int64_t ncoef = 0;
  const double *pts = nullptr; // n × s, column-major
  const std::int64_t *grown = nullptr;
  std::int64_t ngrown = 0;
};

// Device pointers for one launch (filled by the host engine).
struct PumEvalArgs {
  Kernel kernel = Kernel::matern4;
  std::int64_t s = 0, ncols = 0, n = 0, m = 0;
  std::int64_t d[3] = {1, 1, 1};
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  double delta = 0;
  std::int64_t base_ring = 1;
  const double *radius = nullptr, *scale = nullptr, *centres = nullptr, *coef = nullptr;
  const double *pts = nullptr, *y = nullptr;
  const std::int64_t *begin = nullptr, *end = nullptr, *coef_at = nullptr, *pidx = nullptr;
  const std::int64_t *grown = nullptr;
  std::int64_t ngrown = 0;
  double *out = nullptr;    // m × ncols, column-major
  int *needs_cpu = nullptr; // set to 1 when some point is outside the box or in no patch
};

void launch_pum_eval(const PumEvalArgs &a, void *stream);

class PumGpu {
public:
  virtual ~PumGpu() = default;
  // y: m × s column-major; out: m × ncols column-major. Returns false when some point needs the
  // CPU path (then out is incomplete).
  virtual bool evaluate(const double *y, std::int64_t m, double *out) = 0;
};

// Throws Error(unsupported) without CUDA, without a GPU, or for s outside {2, 3} or more than
// pum_gpu_max_cols value columns.
std::unique_ptr<PumGpu> make_pum_gpu(const PumGeometry &g);

} // namespace ksum::detail
