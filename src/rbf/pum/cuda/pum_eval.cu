// One thread per evaluation point: the Shepard/W2 sum over the patches of the neighbouring cells
// (and the grown patches), each local interpolant summed over its points from global memory.
#include "kernels/kernel_defs.hpp"
#include "rbf/pum/pum_gpu.hpp"
#include "spatial/cell_box.hpp"

#include <ksum/error.hpp>

#include <cuda_runtime.h>
#include <string>

namespace ksum::detail {
namespace {

__device__ __forceinline__ double w2_weight(double r) {
  if (r >= 1)
    return 0;
  const double t = 1 - r, t2 = t * t;
  return t2 * t2 * (4 * r + 1);
}

template <class K, int S>
__device__ void visit(const K &kf, const PumEvalArgs &a, std::int64_t j, const double (&x)[S],
                      double (&acc)[pum_gpu_max_cols], double &wsum) {
  const std::int64_t b = a.begin[j], e = a.end[j];
  if (e == b)
    return;
  double d2 = 0;
#pragma unroll
  for (int k = 0; k < S; ++k) {
    const double dk = x[k] - a.centres[j * S + k];
    d2 += dk * dk;
  }
  const double w = w2_weight(sqrt(d2) / a.radius[j]);
  if (w <= 0)
    return;
  wsum += w;
  const double c2 = a.scale[j] * a.scale[j];
  constexpr double p0 = kdef::p_offset<K>();
  const std::int64_t n = e - b, at = a.coef_at[j];
  double r[pum_gpu_max_cols] = {0, 0, 0, 0};
  for (std::int64_t q = 0; q < n; ++q) {
    const std::int64_t i = a.pidx[b + q];
    double dd = 0;
#pragma unroll
    for (int k = 0; k < S; ++k) {
      const double dk = x[k] - a.pts[k * a.n + i];
      dd += dk * dk;
    }
    const double v = kf.value(p0 + c2 * dd);
#pragma unroll
    for (int c = 0; c < pum_gpu_max_cols; ++c)
      if (c < a.ncols)
        r[c] += a.coef[at + c * n + q] * v;
  }
#pragma unroll
  for (int c = 0; c < pum_gpu_max_cols; ++c)
    acc[c] += w * r[c];
}

template <class K, int S> __global__ void pum_eval_kernel(PumEvalArgs a) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= a.m)
    return;
  const K kf{};
  double x[S];
  std::int64_t c[S];
  bool in_box = true;
#pragma unroll
  for (int k = 0; k < S; ++k) {
    x[k] = a.y[k * a.m + i];
    const double range = a.hi[k] - a.lo[k], tol = 1e-12 * range;
    in_box = in_box && x[k] >= a.lo[k] - tol && x[k] <= a.hi[k] + tol;
    const double t = (x[k] - a.lo[k]) / range * static_cast<double>(a.d[k]);
    c[k] =
        t > 0 ? (t < static_cast<double>(a.d[k]) ? static_cast<std::int64_t>(t) : a.d[k] - 1) : 0;
  }
  if (!in_box) {
    *a.needs_cpu = 1;
    return;
  }
  double acc[pum_gpu_max_cols] = {0, 0, 0, 0}, wsum = 0;
  const std::int64_t R = a.base_ring;
  std::int64_t lo[S], hi[S];
#pragma unroll
  for (int k = 0; k < S; ++k) {
    lo[k] = c[k] - R > 0 ? c[k] - R : 0;
    hi[k] = c[k] + R < a.d[k] - 1 ? c[k] + R : a.d[k] - 1;
  }
  spatial::for_cell_box<S>(lo, hi, a.d, S, [&](std::int64_t j) {
    if (a.radius[j] <= a.delta) // grown patches are visited from their own list below
      visit<K, S>(kf, a, j, x, acc, wsum);
  });
  for (std::int64_t g = 0; g < a.ngrown; ++g)
    visit<K, S>(kf, a, a.grown[g], x, acc, wsum);
  if (!(wsum > 0)) {
    *a.needs_cpu = 1;
    return;
  }
#pragma unroll
  for (int col = 0; col < pum_gpu_max_cols; ++col)
    if (col < a.ncols)
      a.out[col * a.m + i] = acc[col] / wsum;
}

template <int S> void launch_dim(const PumEvalArgs &a, cudaStream_t stream) {
  kdef::visit<double>(a.kernel, [&](auto kf) {
    using K = decltype(kf);
    const unsigned blocks = static_cast<unsigned>((a.m + 127) / 128);
    pum_eval_kernel<K, S><<<blocks, 128, 0, stream>>>(a);
  });
}

} // namespace

void launch_pum_eval(const PumEvalArgs &a, void *stream) {
  if (a.m == 0)
    return;
  const auto s = static_cast<cudaStream_t>(stream);
  if (a.s == 2)
    launch_dim<2>(a, s);
  else
    launch_dim<3>(a, s);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(ErrorCode::device,
                std::string("PUM GPU evaluation: CUDA error at kernel launch: ") +
                    cudaGetErrorString(e));
}

} // namespace ksum::detail
