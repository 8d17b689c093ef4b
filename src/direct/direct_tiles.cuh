#pragma once
// Tiled all-pairs kernels (seed 004 Paper I, GPU Gems 3 nbody structure): a block of 128 threads
// holds TPT targets per thread in registers; the block walks the sources in tiles of 128 that it
// stages in shared memory, each source packed with its weights so a thread reads it with wide
// (16-byte) broadcast loads. Tiles that hold the diagonal (targets = sources) take a checked copy
// of the inner loop; all others run without an index test.
#include "direct/direct_launch.hpp"
#include "kernels/kernel_defs.hpp"

#include <ksum/error.hpp>

#include <cuda_runtime.h>
#include <string>

namespace ksum::detail {

inline constexpr int tile_threads = 128;

template <class T, int DM, int NR> struct alignas(16) PackedSource {
  T v[DM + NR]; // DM coordinates, then NR weights
};

template <class K, class T, int DM, int NR, bool GRAD, int TPT, bool CHECK>
__device__ __forceinline__ void tile_pass(const K &kf, const PackedSource<T, DM, NR> *tile,
                                          const T (&xi)[TPT][DM], T (&acc)[TPT][NR],
                                          T (&g)[TPT][NR][DM], std::int64_t first_target,
                                          std::int64_t j0, std::int64_t self_offset) {
#pragma unroll 4
  for (int jj = 0; jj < tile_threads; ++jj) {
    const PackedSource<T, DM, NR> s = tile[jj];
#pragma unroll
    for (int t = 0; t < TPT; ++t) {
      T diff[DM];
#pragma unroll
      for (int k = 0; k < DM; ++k)
        diff[k] = xi[t][k] - s.v[k];
      // p = p0 + |x' - y'|^2, the first term an FMA with p0 (or a plain square when p0 = 0).
      T q = kdef::p_offset<K>() != 0 ? fma(diff[0], diff[0], T(kdef::p_offset<K>()))
                                     : diff[0] * diff[0];
#pragma unroll
      for (int k = 1; k < DM; ++k)
        q = fma(diff[k], diff[k], q);
      T v, dk = 0;
      if constexpr (GRAD)
        v = kf.value(q, dk);
      else if constexpr (!CHECK && kdef::HasFastValue<K, T>)
        v = kf.value_fast(q);
      else
        v = kf.value(q);
      if constexpr (CHECK) {
        const bool same = first_target + t * tile_threads + self_offset == j0 + jj;
        v = same ? T(0) : v;
        dk = same ? T(0) : dk;
      }
#pragma unroll
      for (int r = 0; r < NR; ++r) {
        acc[t][r] = fma(s.v[DM + r], v, acc[t][r]);
        if constexpr (GRAD) {
          const T wd = s.v[DM + r] * dk;
#pragma unroll
          for (int k = 0; k < DM; ++k)
            g[t][r][k] = fma(wd, diff[k], g[t][r][k]);
        }
      }
    }
  }
}

// One target's sum over all sources straight from global memory with the checked kernel value.
template <class K, class T, int DM, int NR>
__device__ void checked_target_sum(const K &kf, const TileArgs<T> &a, std::int64_t i,
                                   const T (&x)[DM], T (&acc)[NR]) {
#pragma unroll
  for (int r = 0; r < NR; ++r)
    acc[r] = 0;
  for (std::int64_t j = 0; j < a.n; ++j) {
    if (a.self && i + a.self_offset == j)
      continue;
    T q = T(kdef::p_offset<K>());
#pragma unroll
    for (int k = 0; k < DM; ++k) {
      const T dk = k < a.d ? x[k] - a.src[k * a.src_ld + j] : T(0);
      q = fma(dk, dk, q);
    }
    const T v = kf.value(q);
#pragma unroll
    for (int r = 0; r < NR; ++r)
      if (r < a.nrhs)
        acc[r] = fma(a.w[r * a.w_ld + j], v, acc[r]);
  }
}

template <class K, class T, int DM, int NR, bool GRAD, int TPT>
__global__ void __launch_bounds__(tile_threads) direct_tile_kernel(TileArgs<T> a) {
  __shared__ PackedSource<T, DM, NR> tile[tile_threads];
  const K kf{};
  const int tid = threadIdx.x;
  const std::int64_t block_lo = static_cast<std::int64_t>(blockIdx.x) * tile_threads * TPT;
  const std::int64_t block_hi = min(a.m, block_lo + tile_threads * TPT);
  const std::int64_t first = block_lo + tid;

  T xi[TPT][DM], acc[TPT][NR], g[TPT][NR][DM];
#pragma unroll
  for (int t = 0; t < TPT; ++t) {
    const std::int64_t i = first + t * tile_threads;
#pragma unroll
    for (int k = 0; k < DM; ++k)
      xi[t][k] = (i < a.m && k < a.d) ? a.tgt[k * a.tgt_ld + i] : T(0);
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      acc[t][r] = 0;
#pragma unroll
      for (int k = 0; k < DM; ++k)
        g[t][r][k] = 0;
    }
  }

  for (std::int64_t j0 = 0; j0 < a.n; j0 += tile_threads) {
    // Padding sources sit at the origin with weight 0: they add exactly 0, except through
    // value_fast for a target at the origin, whose non-finite sum is then recomputed
    // (checked_target_sum).
    const std::int64_t j = j0 + tid;
    PackedSource<T, DM, NR> s;
#pragma unroll
    for (int k = 0; k < DM; ++k)
      s.v[k] = (j < a.n && k < a.d) ? a.src[k * a.src_ld + j] : T(0);
#pragma unroll
    for (int r = 0; r < NR; ++r)
      s.v[DM + r] = (j < a.n && r < a.nrhs) ? a.w[r * a.w_ld + j] : T(0);
    tile[tid] = s;
    __syncthreads();
    const bool diag =
        a.self && block_lo + a.self_offset < j0 + tile_threads && j0 < block_hi + a.self_offset;
    if (diag)
      tile_pass<K, T, DM, NR, GRAD, TPT, true>(kf, tile, xi, acc, g, first, j0, a.self_offset);
    else
      tile_pass<K, T, DM, NR, GRAD, TPT, false>(kf, tile, xi, acc, g, first, j0, a.self_offset);
    __syncthreads();
  }

  if constexpr (!GRAD && kdef::HasFastValue<K, T>) {
#pragma unroll
    for (int t = 0; t < TPT; ++t) {
      bool finite = true;
#pragma unroll
      for (int r = 0; r < NR; ++r)
        finite = finite && isfinite(acc[t][r]);
      const std::int64_t i = first + t * tile_threads;
      if (!finite && i < a.m)
        checked_target_sum(kf, a, i, xi[t], acc[t]);
    }
  }

  const int cpr = GRAD ? 1 + a.d : 1;
#pragma unroll
  for (int t = 0; t < TPT; ++t) {
    const std::int64_t i = first + t * tile_threads;
    if (i >= a.m)
      continue;
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      if (r >= a.nrhs)
        continue;
      T *o = a.out + static_cast<std::int64_t>(r * cpr) * a.out_ld + i;
      *o = a.accumulate ? *o + acc[t][r] : acc[t][r];
      if constexpr (GRAD) {
#pragma unroll
        for (int k = 0; k < DM; ++k) {
          if (k >= a.d)
            continue;
          T *og = o + static_cast<std::int64_t>(1 + k) * a.out_ld;
          const T v = a.grad_scale * g[t][r][k];
          *og = a.accumulate ? *og + v : v;
        }
      }
    }
  }
}

template <class K, class T, int DM, int NR, bool GRAD, int TPT>
void launch_variant(const TileArgs<T> &a, cudaStream_t stream) {
  const std::int64_t per_block = static_cast<std::int64_t>(tile_threads) * TPT;
  const std::int64_t blocks = (a.m + per_block - 1) / per_block;
  if (blocks > 0x7fffffff)
    throw Error(ErrorCode::unsupported, "direct GPU sum: too many targets for one launch");
  direct_tile_kernel<K, T, DM, NR, GRAD, TPT>
      <<<static_cast<unsigned>(blocks), tile_threads, 0, stream>>>(a);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(
        ErrorCode::device,
        std::string("direct GPU sum: CUDA error at kernel launch (it may come from an earlier "
                    "asynchronous failure): ") +
            cudaGetErrorString(e));
}

// Variants: the fast path (d <= 3, one rhs, no gradient: 2 targets per thread), d <= 3 with the
// gradient, and the general one (d <= 8, up to 4 right-hand sides).
template <class T> void launch_direct_tiles_impl(Kernel k, const TileArgs<T> &a, void *stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  kdef::visit<T>(k, [&](auto kf) {
    using K = decltype(kf);
    if (a.d <= 3 && a.nrhs == 1 && !a.gradient)
      launch_variant<K, T, 3, 1, false, 2>(a, s);
    else if (a.d <= 3 && a.nrhs == 1)
      launch_variant<K, T, 3, 1, true, 1>(a, s);
    else if (a.gradient)
      launch_variant<K, T, 8, tile_max_rhs, true, 1>(a, s);
    else
      launch_variant<K, T, 8, tile_max_rhs, false, 1>(a, s);
  });
}

} // namespace ksum::detail
