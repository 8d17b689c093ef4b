#pragma once
// Device helpers shared by the Monte Carlo kernels (cuda/mc_energy.cu, cuda/mc_batch.cu): the
// pair energy in the form the inner loops use, fixed-order reductions, the staged particle
// records. Included by .cu files only.
#include "mc/mc_launch.hpp"
#include "kernels/kmath.hpp"
#include "mc/pair.hpp"

#include <cfloat>
#include <cuda_runtime.h>
#include <type_traits>

namespace ksum::mc::detail::dev {

constexpr int kThreads = kTileThreads;
constexpr unsigned kFull = 0xffffffffu;

// 1/√v for v ≥ the smallest normal number (every caller discards the result below it): the
// direct sum's kmath::rsqrt, one SFU instruction in float (rsqrtf without ftz adds about seven
// instructions of denormal scaling around it, a third of the ΔU loop's instructions) and the SFU's
// approximation refined by two Newton steps in double (instead of the correctly rounded routine).
template <class T> __device__ __forceinline__ T rsqrt_t(T v) { return kmath::rsqrt(v); }
template <class T> __device__ __forceinline__ T smallest_normal() {
  if constexpr (std::is_same_v<T, float>)
    return FLT_MIN;
  else
    return DBL_MIN;
}

// u_ij and its overlap flag (pair.hpp). kFast (Coulomb or none, hard spheres or none, no box):
// qa is l_B·q_i and the radii are 0 unless hard spheres; r = 0 and r < R_i + R_j are overlaps,
// as in pair_energy, except that a positive r² below the smallest normal number also counts as
// one (it would overflow the energy anyway). Otherwise pair_energy itself.
template <class T, bool kFast>
__device__ __forceinline__ T pair_u(const PairParams<T> &pp, T dx, T dy, T dz, T qa, T qb, T ra,
                                    T rb, int &ov) {
  if constexpr (kFast) {
    const T r2 = dx * dx + dy * dy + dz * dz;
    const T s = ra + rb;
    const T th = fmax(s * s, smallest_normal<T>());
    const bool bad = r2 < th;
    const T e = qa * qb * rsqrt_t(r2);
    ov += bad;
    return bad ? T(0) : e;
  } else {
    return pair_energy(pp, distance2(pp, dx, dy, dz), qa * qb, ra + rb, ov);
  }
}

template <class T>
__device__ __forceinline__ T bond_u(const PairParams<T> &pp, T dx, T dy, T dz, int &ov) {
  return bond_energy(pp, distance2(pp, dx, dy, dz), ov);
}

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_down_sync(kFull, v, o);
  return v;
}
__device__ __forceinline__ long long warp_sum(long long v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_down_sync(kFull, v, o);
  return v;
}

// Sum over the block, valid in thread 0; a fixed tree. Called once per kernel.
template <int NT> __device__ void block_sum(double &e, long long &ov) {
  __shared__ double se[NT / 32];
  __shared__ long long so[NT / 32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  e = warp_sum(e);
  ov = warp_sum(ov);
  if (lane == 0) {
    se[w] = e;
    so[w] = ov;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    e = 0;
    ov = 0;
    for (int k = 0; k < NT / 32; ++k) {
      e += se[k];
      ov += so[k];
    }
  }
}

// A particle as one thread block stages it: position, charge (l_B·q in the fast loops) and
// radius (0 in the fast loops without hard spheres).
template <class T> struct alignas(16) Src { T x, y, z, q, r; };
// A moved particle or a trial: new and old position, charge, radius (staged like Src).
template <class T> struct alignas(16) Moved { T nx, ny, nz, ox, oy, oz, q, r; };

inline const char *last_error() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

} // namespace ksum::mc::detail::dev
