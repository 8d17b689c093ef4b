// The 2D FMM's CUDA kernels: the near field (seed 004 Paper IV §3.1: one block per leaf, sources
// through shared memory, up to four threads per target) and the M2L translations in seed 002
// §4.1's row traversal (matrix-free, one thread per local coefficient, unrolled for a fixed P).
#include "fmm/fmm2d/fmm2d_launch.hpp"

#include <cuda_runtime.h>

namespace ksum::fmm2d {
namespace {

constexpr int kNearThreads = 128;

template <class T> __global__ void near_kernel(NearArgs<T> a) {
  const std::int64_t b = blockIdx.x;
  const std::int64_t t0 = a.tgt_off[b], nt = a.tgt_off[b + 1] - t0;
  if (nt == 0)
    return;
  __shared__ cx<T> sz[kNearThreads], sq[kNearThreads], red[kNearThreads];
  // s threads share a target when the leaf has few (each takes every s-th source).
  const int s = nt >= kNearThreads ? 1 : min(4, kNearThreads / static_cast<int>(nt));
  const int per = kNearThreads / s;
  const int tl = threadIdx.x % per, slice = threadIdx.x / per;
  const std::int64_t l0 = a.list_off[b], l1 = a.list_off[b + 1];
  for (std::int64_t base = 0; base < nt; base += per) {
    const std::int64_t i = t0 + base + tl;
    const bool active = base + tl < nt && slice < s;
    const cx<T> z = active ? a.tgt[i] : cx<T>{0, 0};
    T ur = 0, ui = 0;
    for (std::int64_t e = l0; e < l1; ++e) {
      const std::int64_t c = a.list[e];
      const std::int64_t j0 = a.src_off[c], j1 = a.src_off[c + 1];
      for (std::int64_t tile = j0; tile < j1; tile += kNearThreads) {
        const int cnt = static_cast<int>(j1 - tile < kNearThreads ? j1 - tile : kNearThreads);
        __syncthreads();
        if (threadIdx.x < cnt) {
          sz[threadIdx.x] = a.src[tile + threadIdx.x];
          sq[threadIdx.x] = a.q[tile + threadIdx.x];
        }
        __syncthreads();
        if (active) {
          if (a.harmonic) {
            for (int j = slice; j < cnt; j += s) {
              const T dx = z.re - sz[j].re, dy = z.im - sz[j].im;
              const T r2 = dx * dx + dy * dy;
              T f = r2 > T(0) ? T(1) / r2 : T(0);
              if (a.inv_core2 > T(0))
                f *= T(1) - exp(-r2 * a.inv_core2);
              ur += f * (sq[j].re * dx + sq[j].im * dy);
              ui += f * (sq[j].im * dx - sq[j].re * dy);
            }
          } else {
            for (int j = slice; j < cnt; j += s) {
              const T dx = z.re - sz[j].re, dy = z.im - sz[j].im;
              const T r2 = dx * dx + dy * dy;
              ur += r2 > T(0) ? sq[j].re * T(0.5) * log(r2) : T(0);
            }
          }
        }
      }
    }
    __syncthreads();
    red[threadIdx.x] = {ur, ui};
    __syncthreads();
    if (slice == 0 && base + tl < nt) {
      cx<T> acc = red[threadIdx.x];
      for (int k = 1; k < s; ++k)
        acc = acc + red[threadIdx.x + k * per];
      a.out[i] = acc;
    }
  }
}

// Row traversal: the block serves one target box; G = 128 / P groups of P threads each take one
// translation of the box's list per round, thread l of a group computing local coefficient l.
// The matrix A_lk = C(l+k−1, k−1) (s2/z0)^l (−s1/z0)^k is never stored: σ_k = a'_k (−s1/z0)^k is
// formed once per translation in shared memory, and each row's powers of s2/z0 use a loop of
// fixed trip count P − 1 with a predicate (seed 002 fig. 7), so warps do not diverge and the
// compiler unrolls everything for the fixed P.
template <class T, int P> __global__ void m2l_kernel(M2lArgs<T> a) {
  constexpr int G = 128 / P;
  __shared__ T binom[2 * P][2 * P];
  __shared__ cx<T> sig[G][P];
  __shared__ cx<T> red[G][P];
  for (int t = threadIdx.x; t < 4 * P * P; t += blockDim.x)
    binom[t / (2 * P)][t % (2 * P)] = a.binom[(t / (2 * P)) * 64 + t % (2 * P)];
  const int g = threadIdx.x / P, l = threadIdx.x % P;
  const bool in_group = g < G;
  const std::int32_t tb = a.boxes[blockIdx.x];
  const std::int64_t e0 = a.off[blockIdx.x], e1 = a.off[blockIdx.x + 1];
  const cx<T> tc = a.tgt_centre[tb];
  const T s2 = a.tgt_scale[tb];
  cx<T> acc = {0, 0};
  for (std::int64_t r = e0; r < e1; r += G) {
    const std::int64_t e = r + g;
    const bool active = in_group && e < e1;
    cx<T> t2 = {0, 0}, a0 = {0, 0};
    T lg = 0;
    __syncthreads();
    if (active) {
      const std::int32_t c = a.list[e];
      const cx<T> z0 = a.src_centre[c] - tc;
      const cx<T> iz = inv(z0);
      const cx<T> t1 = (-a.src_scale[c]) * iz;
      t2 = s2 * iz;
      cx<T> pw = {1, 0};
#pragma unroll
      for (int m = 1; m < P; ++m)
        if (l >= m)
          pw = pw * t1;
      const cx<T> *mc = a.mult + static_cast<std::int64_t>(c) * a.p;
      sig[g][l] = l > 0 && l < a.p ? mc[l] * pw : cx<T>{0, 0};
      a0 = mc[0];
      lg = T(0.5) * log(z0.re * z0.re + z0.im * z0.im);
    }
    __syncthreads();
    if (active) {
      if (l == 0) {
        cx<T> b0 = lg * a0;
#pragma unroll
        for (int k = 1; k < P; ++k)
          b0 = b0 + sig[g][k];
        acc = acc + b0;
      } else {
        cx<T> sum = (T(-1) / T(l)) * a0;
#pragma unroll
        for (int k = 1; k < P; ++k) {
          const T cb = binom[l + k - 1][k - 1];
          sum.re += cb * sig[g][k].re;
          sum.im += cb * sig[g][k].im;
        }
        cx<T> pw = t2;
#pragma unroll
        for (int m = 2; m < P; ++m)
          if (l >= m)
            pw = pw * t2;
        acc = acc + sum * pw;
      }
    }
  }
  __syncthreads();
  if (in_group)
    red[g][l] = acc;
  __syncthreads();
  if (g == 0 && l < a.p) {
    cx<T> sum = red[0][l];
#pragma unroll
    for (int k = 1; k < G; ++k)
      sum = sum + red[k][l];
    a.local[static_cast<std::int64_t>(tb) * a.p + l] = sum;
  }
}

template <class T, int P> void m2l_launch(const M2lArgs<T> &a, cudaStream_t s) {
  m2l_kernel<T, P><<<static_cast<unsigned>(a.count), 128, 0, s>>>(a);
}

} // namespace

template <class T> const char *launch_near(const NearArgs<T> &a, void *stream) {
  if (a.leaves > 0)
    near_kernel<T><<<static_cast<unsigned>(a.leaves), kNearThreads, 0,
                     static_cast<cudaStream_t>(stream)>>>(a);
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

template <class T> const char *launch_m2l(const M2lArgs<T> &a, void *stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  if (a.count > 0) {
    if (a.p <= 8)
      m2l_launch<T, 8>(a, s);
    else if (a.p <= 12)
      m2l_launch<T, 12>(a, s);
    else if (a.p <= 16)
      m2l_launch<T, 16>(a, s);
    else if (a.p <= 24)
      m2l_launch<T, 24>(a, s);
    else
      m2l_launch<T, 32>(a, s);
  }
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

template const char *launch_near<float>(const NearArgs<float> &, void *);
template const char *launch_near<double>(const NearArgs<double> &, void *);
template const char *launch_m2l<float>(const M2lArgs<float> &, void *);
template const char *launch_m2l<double>(const M2lArgs<double> &, void *);

} // namespace ksum::fmm2d
