// The GPU FMM's kernel evaluations (fmm_launch.hpp's PairPass): one block per target box, its
// targets (points or Chebyshev nodes) over the threads, the sources of each listed box (points or
// nodes) staged through shared memory in tiles. Serves P2P (U list), M2P (W) and P2L (X).
#include "fmm/fmm3d/fmm_launch.hpp"
#include "kernels/kernel_defs.hpp"

#include <ksum/error.hpp>

#include <cuda_runtime.h>
#include <string>

namespace ksum::detail {
namespace {

constexpr int threads = 128;

template <class T> __device__ void node(const GpuTree<T> &t, const GpuBox<T> &b, int q, T x[3]) {
  const int p = t.p;
  x[0] = b.centre[0] + b.half * t.nodes[q / (p * p)];
  x[1] = b.centre[1] + b.half * t.nodes[q / p % p];
  x[2] = b.centre[2] + b.half * t.nodes[q % p];
}

template <class K, class T>
__global__ void __launch_bounds__(threads) pairs_kernel(K kf, GpuTree<T> t, PairPass<T> ps, int r) {
  __shared__ T tile[4][threads];
  constexpr T p0 = T(kdef::p_offset<K>());
  const std::int32_t a = ps.targets[blockIdx.x];
  const GpuBox<T> &A = t.boxes[a];
  const std::int64_t nt = ps.target_nodes ? t.P : A.te - A.tb;
  for (std::int64_t t0 = 0; t0 < nt; t0 += threads) {
    const std::int64_t i = t0 + threadIdx.x;
    const bool valid = i < nt;
    T x[3] = {0, 0, 0};
    if (valid) {
      if (ps.target_nodes)
        node(t, A, static_cast<int>(i), x);
      else
        for (int k = 0; k < 3; ++k)
          x[k] = t.tgt[k * t.m + A.tb + i];
    }
    T acc = 0;
    for (std::int64_t e = ps.offsets[a]; e < ps.offsets[a + 1]; ++e) {
      const std::int32_t b = ps.list[e];
      const GpuBox<T> &B = t.boxes[b];
      const bool same = ps.self && b == a;
      if (!ps.source_nodes && B.coincident) { // identical sources: one point, their total weight
        if (valid) {
          const T d0 = x[0] - t.src[B.sb], d1 = x[1] - t.src[t.n + B.sb],
                  d2 = x[2] - t.src[2 * t.n + B.sb];
          const T w = ps.box_weight[static_cast<std::int64_t>(b) * t.nrhs + r] -
                      (same ? ps.ws[r * t.n + A.tb + i] : T(0));
          acc += w * kf.value(p0 + d0 * d0 + d1 * d1 + d2 * d2);
        }
        continue;
      }
      const std::int64_t ns = ps.source_nodes ? t.P : B.se - B.sb;
      for (std::int64_t j0 = 0; j0 < ns; j0 += threads) {
        const int len = static_cast<int>(ns - j0 < threads ? ns - j0 : threads);
        __syncthreads();
        if (threadIdx.x < len) {
          const std::int64_t j = j0 + threadIdx.x;
          if (ps.source_nodes) {
            T y[3];
            node(t, B, static_cast<int>(j), y);
            tile[0][threadIdx.x] = y[0];
            tile[1][threadIdx.x] = y[1];
            tile[2][threadIdx.x] = y[2];
            tile[3][threadIdx.x] = ps.mult[(static_cast<std::int64_t>(b) * t.nrhs + r) * t.P + j];
          } else {
            tile[0][threadIdx.x] = t.src[B.sb + j];
            tile[1][threadIdx.x] = t.src[t.n + B.sb + j];
            tile[2][threadIdx.x] = t.src[2 * t.n + B.sb + j];
            tile[3][threadIdx.x] = ps.ws[r * t.n + B.sb + j];
          }
        }
        __syncthreads();
        if (valid) {
          if (same) {
            const std::int64_t self_j = i - j0; // target i is source i of this box
            for (int jj = 0; jj < len; ++jj) {
              const T d0 = x[0] - tile[0][jj], d1 = x[1] - tile[1][jj], d2 = x[2] - tile[2][jj];
              const T v = kf.value(p0 + d0 * d0 + d1 * d1 + d2 * d2);
              acc += jj == self_j ? T(0) : tile[3][jj] * v;
            }
          } else {
#pragma unroll 2
            for (int jj = 0; jj < len; ++jj) {
              const T d0 = x[0] - tile[0][jj], d1 = x[1] - tile[1][jj], d2 = x[2] - tile[2][jj];
              acc += tile[3][jj] * kf.value(p0 + d0 * d0 + d1 * d1 + d2 * d2);
            }
          }
        }
      }
    }
    if (valid) {
      if (ps.target_nodes)
        ps.loc[(static_cast<std::int64_t>(a) * t.nrhs + r) * t.P + i] += acc;
      else
        ps.us[r * t.m + A.tb + i] += acc;
    }
  }
}

} // namespace

template <class T>
void launch_pairs(Kernel k, const GpuTree<T> &t, const PairPass<T> &pass, void *stream) {
  if (pass.count == 0)
    return;
  kdef::visit<T>(k, [&](auto kf) {
    for (int r = 0; r < t.nrhs; ++r)
      pairs_kernel<decltype(kf), T>
          <<<static_cast<unsigned>(pass.count), threads, 0, static_cast<cudaStream_t>(stream)>>>(
              kf, t, pass, r);
  });
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(ErrorCode::device,
                std::string("GPU FMM: kernel evaluation launch failed: ") + cudaGetErrorString(e));
}

template void launch_pairs<float>(Kernel, const GpuTree<float> &, const PairPass<float> &, void *);
template void launch_pairs<double>(Kernel, const GpuTree<double> &, const PairPass<double> &,
                                   void *);

} // namespace ksum::detail
