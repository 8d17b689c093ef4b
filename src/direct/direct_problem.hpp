#pragma once
// The direct sum as the engines see it: coordinates already scaled by the kernel's coord_scale (so
// the functors of kernels/kernel_defs.hpp take q = |x' − y'|²), column-major arrays.
#include <ksum/kernels.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace ksum::detail {

template <class T> struct DirectProblem {
  Kernel kernel = Kernel::laplace;
  bool gradient = false;
  bool self = false; // targets are the sources; pair (i, i) is left out
  T grad_scale = 1;  // ∇ₓu = grad_scale · Σ_j w_j dK/dq (x'_i − y'_j), grad_scale = 2c
  std::int64_t n = 0, m = 0, d = 0, nrhs = 0;
  const T *src = nullptr; // column k at src + k n
  const T *tgt = nullptr; // column k at tgt + k m
  const T *w = nullptr;   // column r at w + r n

  std::int64_t cols_per_rhs() const { return gradient ? 1 + d : 1; }
  std::int64_t out_cols() const { return nrhs * cols_per_rhs(); }
};

using Progress = std::function<void(double)>;

// out: m × out_cols(), column-major; overwritten.
template <class T>
// block: targets per task (≥ 1).
void cpu_direct(const DirectProblem<T> &p, T *out, int threads, const Progress &progress,
                std::int64_t block);

// The direct sum on arrays already in one GPU's memory (the Python bindings' path for CuPy and
// PyTorch arrays, which never visit the host): p's pointers and `out` (m × out_cols(),
// column-major) are device pointers of GPU `device`, coordinates scaled as above. Runs on the
// legacy default stream, which orders it after the caller's pending work there, and returns when
// it is done. Throws Error(unsupported) in a build without CUDA.
template <class T> void device_direct(const DirectProblem<T> &p, T *out, int device);

// The GPU engine: created for a device list, keeps the geometry on the devices between executions
// when it fits, streams it in chunks when it does not, splits the targets over the devices.
template <class T> class CudaDirect {
public:
  virtual ~CudaDirect() = default;
  virtual void set_geometry(const DirectProblem<T> &p) = 0;
  virtual void execute(const DirectProblem<T> &p, T *out, const Progress &progress) = 0;
};

// Throws Error(unsupported) in a build without CUDA or when no GPU is visible.
template <class T>
std::unique_ptr<CudaDirect<T>> make_cuda_direct(const std::vector<int> &devices,
                                                std::int64_t memory_limit);

// The largest dimension the GPU engine handles (the CPU engine handles any).
inline constexpr std::int64_t gpu_max_dim = 8;

} // namespace ksum::detail
