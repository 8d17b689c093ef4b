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

// Up to max_tpt targets per thread (a block covers threads · tpt targets per round) so that each
// source staged in shared memory serves several targets from registers.
constexpr int max_tpt = 4;

template <class K, class T>
__global__ void __launch_bounds__(threads) pairs_kernel(K kf, GpuTree<T> t, PairPass<T> ps, int r) {
  __shared__ T tile[4][threads];
  constexpr T p0 = T(kdef::p_offset<K>());
  const std::int32_t a = ps.targets[blockIdx.x];
  const GpuBox<T> &A = t.boxes[a];
  const std::int64_t nt = ps.target_nodes ? t.P : A.te - A.tb;
  const std::int64_t rounds = (nt + threads - 1) / threads;
  const int tpt = static_cast<int>(rounds < max_tpt ? rounds : max_tpt);
  for (std::int64_t t0 = 0; t0 < nt; t0 += threads * tpt) {
    T x[max_tpt][3], acc[max_tpt];
#pragma unroll
    for (int u = 0; u < max_tpt; ++u) {
      const std::int64_t i = t0 + threadIdx.x + u * threads;
      acc[u] = 0;
      x[u][0] = x[u][1] = x[u][2] = 0; // a slot without a target: computed, never stored
      if (u < tpt && i < nt) {
        if (ps.target_nodes)
          node(t, A, static_cast<int>(i), x[u]);
        else
          for (int k = 0; k < 3; ++k)
            x[u][k] = t.tgt[k * t.m + A.tb + i];
      }
    }
    for (std::int64_t e = ps.offsets[a]; e < ps.offsets[a + 1]; ++e) {
      const std::int32_t b = ps.list[e];
      const GpuBox<T> &B = t.boxes[b];
      const bool same = b == a;               // only here can a target and a source coincide
      if (!ps.source_nodes && B.coincident) { // identical sources: one point, their total weight
#pragma unroll
        for (int u = 0; u < max_tpt; ++u) {
          const std::int64_t i = t0 + threadIdx.x + u * threads;
          if (u >= tpt || i >= nt)
            continue;
          const T d0 = x[u][0] - t.src[B.sb], d1 = x[u][1] - t.src[t.n + B.sb],
                  d2 = x[u][2] - t.src[2 * t.n + B.sb];
          const T w = ps.box_weight[static_cast<std::int64_t>(b) * t.nrhs + r] -
                      (same && ps.self ? ps.ws[r * t.n + A.tb + i] : T(0));
          acc[u] += w * kf.value(p0 + d0 * d0 + d1 * d1 + d2 * d2);
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
        if (same) { // checked kernel value; the self pair left out when targets are the sources
          for (int jj = 0; jj < len; ++jj)
#pragma unroll
            for (int u = 0; u < max_tpt; ++u) {
              if (u >= tpt)
                continue;
              const T d0 = x[u][0] - tile[0][jj], d1 = x[u][1] - tile[1][jj],
                      d2 = x[u][2] - tile[2][jj];
              const T v = kf.value(p0 + d0 * d0 + d1 * d1 + d2 * d2);
              const bool self_pair =
                  ps.self && !ps.source_nodes && t0 + threadIdx.x + u * threads == j0 + jj;
              acc[u] += self_pair ? T(0) : tile[3][jj] * v;
            }
        } else {
          for (int jj = 0; jj < len; ++jj) {
            const T y0 = tile[0][jj], y1 = tile[1][jj], y2 = tile[2][jj], w = tile[3][jj];
#pragma unroll
            for (int u = 0; u < max_tpt; ++u) {
              if (u < tpt) {
                const T d0 = x[u][0] - y0, d1 = x[u][1] - y1, d2 = x[u][2] - y2;
                const T q = p0 + d0 * d0 + d1 * d1 + d2 * d2;
                // Off the diagonal box no source sits on a target in double coordinates; in
                // float two distinct points may round together, so float keeps the checked value.
                if constexpr (kdef::HasFastValue<K, T> && sizeof(T) == 8)
                  acc[u] += w * kf.value_fast(q);
                else
                  acc[u] += w * kf.value(q);
              }
            }
          }
        }
      }
    }
#pragma unroll
    for (int u = 0; u < max_tpt; ++u) {
      const std::int64_t i = t0 + threadIdx.x + u * threads;
      if (u < tpt && i < nt) {
        if (ps.target_nodes)
          ps.loc[(static_cast<std::int64_t>(a) * t.nrhs + r) * t.P + i] += acc[u];
        else
          ps.us[r * t.m + A.tb + i] += acc[u];
      }
    }
  }
}

// The near field (point targets, point sources) of a double tree at loose tolerances (PairPass::
// mixed): each block takes its target box's and the sources' coordinates relative to the target
// box's centre c, rounded to float once, and the kernel and each source box's sum in float; the
// sums are added in double. With u = 2^-24 and R ≥ |y_k − c_k|, |x_k − c_k| for the box pair (every
// axis k), the rounded coordinates move each difference by at most 2 u R per axis, so the distance
// r by at most 2√3 u R, plus u r for the arithmetic: relative to r, below 1e-5 where r ≥ close · R
// with close = 0.025 (8.4e-6 there, ~1e-7 typically). Closer pairs, rare in a tree whose leaves
// hold a bounded number of points (estimated from the density: one target in ~20 on uniform
// points), and the self pair (distance 0) are taken again from the double coordinates with the
// double kernel. (That bounds each pair's distance; a kernel value moves by its condition
// number times that, and each source box's float sum of ns terms adds up to ns u of its Σ|w K|,
// ~√ns u typically: 3e-5 and 1.3e-6 at ns = 512, against tolerances of 1e-4 and up.)
constexpr double close_share = 0.025;

template <class KD>
__global__ void __launch_bounds__(threads)
    pairs_mixed_kernel(KD kd, GpuTree<double> t, PairPass<double> ps, int r) {
  using KF = kdef::in_float<KD>;
  const KF kf{};
  __shared__ float tile[4][threads];
  constexpr float p0 = float(kdef::p_offset<KD>());
  constexpr double p0d = kdef::p_offset<KD>();
  const std::int32_t a = ps.targets[blockIdx.x];
  const GpuBox<double> &A = t.boxes[a];
  const double c[3] = {A.centre[0], A.centre[1], A.centre[2]};
  const std::int64_t nt = A.te - A.tb;
  const std::int64_t rounds = (nt + threads - 1) / threads;
  const int tpt = static_cast<int>(rounds < max_tpt ? rounds : max_tpt);
  // The exact evaluation of pair (target i of the box, source j of box B).
  auto exact = [&](std::int64_t i, const GpuBox<double> &B, std::int64_t j, bool same) {
    if (same && ps.self && i == j)
      return 0.0;
    double q = p0d;
    for (int k = 0; k < 3; ++k) {
      const double d = t.tgt[k * t.m + A.tb + i] - t.src[k * t.n + B.sb + j];
      q += d * d;
    }
    return ps.ws[r * t.n + B.sb + j] * kd.value(q);
  };
  for (std::int64_t t0 = 0; t0 < nt; t0 += threads * tpt) {
    float x[max_tpt][3];
    double acc[max_tpt];
#pragma unroll
    for (int u = 0; u < max_tpt; ++u) {
      const std::int64_t i = t0 + threadIdx.x + u * threads;
      acc[u] = 0;
      x[u][0] = x[u][1] = x[u][2] = 0; // a slot without a target: computed, never stored
      if (u < tpt && i < nt)
        for (int k = 0; k < 3; ++k)
          x[u][k] = static_cast<float>(t.tgt[k * t.m + A.tb + i] - c[k]);
    }
    for (std::int64_t e = ps.offsets[a]; e < ps.offsets[a + 1]; ++e) {
      const std::int32_t b = ps.list[e];
      const GpuBox<double> &B = t.boxes[b];
      const bool same = b == a;
      if (B.coincident) { // identical sources: one point, their total weight (in double)
#pragma unroll
        for (int u = 0; u < max_tpt; ++u) {
          const std::int64_t i = t0 + threadIdx.x + u * threads;
          if (u >= tpt || i >= nt)
            continue;
          double q = p0d;
          for (int k = 0; k < 3; ++k) {
            const double d = t.tgt[k * t.m + A.tb + i] - t.src[k * t.n + B.sb];
            q += d * d;
          }
          const double w = ps.box_weight[static_cast<std::int64_t>(b) * t.nrhs + r] -
                           (same && ps.self ? ps.ws[r * t.n + A.tb + i] : 0.0);
          acc[u] += w * kd.value(q);
        }
        continue;
      }
      double reach = A.half;
      for (int k = 0; k < 3; ++k)
        reach = fmax(reach, fabs(B.centre[k] - c[k]) + B.half);
      const float close2 = static_cast<float>(close_share * close_share * reach * reach);
      const std::int64_t ns = B.se - B.sb;
      float part[max_tpt];
#pragma unroll
      for (int u = 0; u < max_tpt; ++u)
        part[u] = 0;
      for (std::int64_t j0 = 0; j0 < ns; j0 += threads) {
        const int len = static_cast<int>(ns - j0 < threads ? ns - j0 : threads);
        __syncthreads();
        if (threadIdx.x < len) {
          const std::int64_t j = B.sb + j0 + threadIdx.x;
          for (int k = 0; k < 3; ++k)
            tile[k][threadIdx.x] = static_cast<float>(t.src[k * t.n + j] - c[k]);
          tile[3][threadIdx.x] = static_cast<float>(ps.ws[r * t.n + j]);
        }
        __syncthreads();
        for (int jj = 0; jj < len; ++jj) {
          const float y0 = tile[0][jj], y1 = tile[1][jj], y2 = tile[2][jj], w = tile[3][jj];
#pragma unroll
          for (int u = 0; u < max_tpt; ++u) {
            if (u < tpt) {
              const float d0 = x[u][0] - y0, d1 = x[u][1] - y1, d2 = x[u][2] - y2;
              const float q = d0 * d0 + d1 * d1 + d2 * d2;
              if (q >= close2) {
                if constexpr (kdef::HasFastValue<KF, float>)
                  part[u] += w * kf.value_fast(p0 + q);
                else
                  part[u] += w * kf.value(p0 + q);
              } else {
                const std::int64_t i = t0 + threadIdx.x + u * threads;
                if (i < nt)
                  acc[u] += exact(i, B, j0 + jj, same);
              }
            }
          }
        }
      }
#pragma unroll
      for (int u = 0; u < max_tpt; ++u)
        acc[u] += part[u];
    }
#pragma unroll
    for (int u = 0; u < max_tpt; ++u) {
      const std::int64_t i = t0 + threadIdx.x + u * threads;
      if (u < tpt && i < nt)
        ps.us[r * t.m + A.tb + i] += acc[u];
    }
  }
}

void check_launch() {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(ErrorCode::device,
                std::string("GPU FMM: kernel evaluation launch failed: ") + cudaGetErrorString(e));
}

} // namespace

template <class T>
void launch_pairs(Kernel k, const GpuTree<T> &t, const PairPass<T> &pass, void *stream) {
  if (pass.count == 0)
    return;
  const auto grid = static_cast<unsigned>(pass.count);
  const auto st = static_cast<cudaStream_t>(stream);
  if constexpr (sizeof(T) == 8) {
    if (pass.mixed && !pass.target_nodes && !pass.source_nodes) {
      kdef::visit<double>(k, [&](auto kd) {
        for (int r = 0; r < t.nrhs; ++r)
          pairs_mixed_kernel<decltype(kd)><<<grid, threads, 0, st>>>(kd, t, pass, r);
      });
      return check_launch();
    }
  }
  kdef::visit<T>(k, [&](auto kf) {
    for (int r = 0; r < t.nrhs; ++r)
      pairs_kernel<decltype(kf), T><<<grid, threads, 0, st>>>(kf, t, pass, r);
  });
  check_launch();
}

template void launch_pairs<float>(Kernel, const GpuTree<float> &, const PairPass<float> &, void *);
template void launch_pairs<double>(Kernel, const GpuTree<double> &, const PairPass<double> &,
                                   void *);

} // namespace ksum::detail
