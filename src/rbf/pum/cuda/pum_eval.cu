// One thread per evaluation point, the points taken in cell order (so that the threads of a warp
// visit the same patches and their loads coalesce): the Shepard/W2 sum over the patches of the
// neighbouring cells (and the grown patches), each local interpolant over its packed points.
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
  const PumPacked &pk = a.pk;
  const int n = pk.cnt[j];
  if (n == 0)
    return;
  std::int64_t rest = j;
  double d2 = 0;
#pragma unroll
  for (int k = S - 1; k >= 0; --k) {
    const double ck = spatial::centre_coord(rest % a.grid.d[k], a.grid.lo[k], a.grid.width[k]);
    rest /= a.grid.d[k];
    d2 = spatial::dist2_step(d2, x[k], ck);
  }
  const double w = w2_weight(sqrt(d2) / pk.radius[j]);
  if (w <= 0)
    return;
  wsum += w;
  const double c2 = pk.scale[j] * pk.scale[j];
  constexpr double p0 = kdef::p_offset<K>();
  const std::int64_t off = pk.off[j];
  const double *cf = pk.coef + off * pk.ncols;
  double r[pum_gpu_max_cols] = {0, 0, 0, 0};
  for (int q = 0; q < n; ++q) {
    double dd = 0;
#pragma unroll
    for (int k = 0; k < S; ++k) {
      const double dk = x[k] - pk.px[k * pk.total + off + q];
      dd += dk * dk;
    }
    const double v = kf.value(p0 + c2 * dd);
#pragma unroll
    for (int c = 0; c < pum_gpu_max_cols; ++c)
      if (c < pk.ncols)
        r[c] += cf[c * n + q] * v;
  }
#pragma unroll
  for (int c = 0; c < pum_gpu_max_cols; ++c)
    acc[c] += w * r[c];
}

template <class K, int S> __global__ void pum_eval_kernel(PumEvalArgs a) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= a.m)
    return;
  const std::int64_t i = a.order ? a.order[t] : t;
  const K kf{};
  double x[S];
  std::int64_t c[S];
  bool in_box = true;
#pragma unroll
  for (int k = 0; k < S; ++k) {
    x[k] = a.y[k * a.m + i];
    const double tol = 1e-12 * (a.grid.hi[k] - a.grid.lo[k]);
    in_box = in_box && x[k] >= a.grid.lo[k] - tol && x[k] <= a.grid.hi[k] + tol;
    c[k] = spatial::axis_cell(x[k], a.grid.lo[k], a.grid.hi[k], a.grid.d[k]);
  }
  if (!in_box) {
    *a.needs_cpu = 1;
    return;
  }
  double acc[pum_gpu_max_cols] = {0, 0, 0, 0}, wsum = 0;
  const std::int64_t R = a.grid.base_ring;
  std::int64_t lo[S], hi[S];
#pragma unroll
  for (int k = 0; k < S; ++k) {
    lo[k] = c[k] - R > 0 ? c[k] - R : 0;
    hi[k] = c[k] + R < a.grid.d[k] - 1 ? c[k] + R : a.grid.d[k] - 1;
  }
  spatial::for_cell_box<S>(lo, hi, a.grid.d, S, [&](std::int64_t j) {
    if (a.pk.radius[j] <= a.grid.delta) // grown patches are visited from their own list below
      visit<K, S>(kf, a, j, x, acc, wsum);
  });
  for (std::int64_t g = 0; g < a.pk.ngrown; ++g)
    visit<K, S>(kf, a, a.pk.grown[g], x, acc, wsum);
  if (!(wsum > 0)) {
    *a.needs_cpu = 1;
    return;
  }
#pragma unroll
  for (int col = 0; col < pum_gpu_max_cols; ++col)
    if (col < a.pk.ncols)
      a.out[col * a.m + i] = acc[col] / wsum;
}

template <int S> void launch_dim(const PumEvalArgs &a, cudaStream_t stream) {
  kdef::visit_pd<double>(a.pk.kernel, [&](auto kf) {
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
  if (a.grid.s == 2)
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
