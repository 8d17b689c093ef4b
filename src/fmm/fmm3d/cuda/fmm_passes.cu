// The kernel-independent passes of the GPU FMM (fmm_launch.hpp): P2M, M2M, L2L, L2P and the M2L
// gather/scatter around cuBLAS's matrix products. One block per box; the Chebyshev tables and the
// box's expansion staged in shared memory.
#include "fmm/fmm3d/fmm_launch.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <cuda_runtime.h>
#include <string>

namespace ksum::detail {
namespace {

constexpr int max_p = 16;
constexpr int block = 256;
constexpr int per_thread = (max_p * max_p * max_p + block - 1) / block; // 16
constexpr int p2m_tile = 32;

void check_launch(const char *what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(ErrorCode::device,
                std::string("GPU FMM: ") + what + " launch failed: " + cudaGetErrorString(e));
}

// s[m] = S_p(x̄_m, t) from the table tn[m p + n] = T_n(x̄_m).
template <class T> __device__ void cheb_eval(int p, T t, const T *tn, T *s) {
  T tt[max_p];
  tt[0] = 1;
  if (p > 1)
    tt[1] = t;
  for (int n = 2; n < p; ++n)
    tt[n] = 2 * t * tt[n - 1] - tt[n - 2];
  for (int m = 0; m < p; ++m) {
    T acc = 0;
    for (int n = 1; n < p; ++n)
      acc += tn[m * p + n] * tt[n];
    s[m] = (1 + 2 * acc) / p;
  }
}

template <class T>
__global__ void p2m_kernel(GpuTree<T> t, const std::int32_t *leaves, const T *ws, T *mult) {
  extern __shared__ unsigned char smem[];
  T *tn = reinterpret_cast<T *>(smem);
  T *sv = tn + t.p * t.p;          // p2m_tile × 3p
  T *wt = sv + p2m_tile * 3 * t.p; // p2m_tile
  const int p = t.p, P = t.P;
  for (int k = threadIdx.x; k < p * p; k += blockDim.x)
    tn[k] = t.tn[k];
  const GpuBox<T> b = t.boxes[leaves[blockIdx.x]];
  const T inv = T(1) / b.half;
  for (int r = 0; r < t.nrhs; ++r) {
    T acc[per_thread];
#pragma unroll
    for (int k = 0; k < per_thread; ++k)
      acc[k] = 0;
    for (std::int64_t j0 = b.sb; j0 < b.se; j0 += p2m_tile) {
      const int len = static_cast<int>(b.se - j0 < p2m_tile ? b.se - j0 : p2m_tile);
      __syncthreads();
      for (int k = threadIdx.x; k < 3 * len; k += blockDim.x) {
        const int j = k / 3, ax = k % 3;
        cheb_eval(p, (t.src[ax * t.n + j0 + j] - b.centre[ax]) * inv, tn, sv + (j * 3 + ax) * p);
      }
      for (int j = threadIdx.x; j < len; j += blockDim.x)
        wt[j] = ws[r * t.n + j0 + j];
      __syncthreads();
#pragma unroll
      for (int k = 0; k < per_thread; ++k) {
        const int q = threadIdx.x + k * block;
        if (q < P) {
          const int a = q / (p * p), bb = q / p % p, c = q % p;
          T s = 0;
          for (int j = 0; j < len; ++j)
            s += wt[j] * sv[(j * 3) * p + a] * sv[(j * 3 + 1) * p + bb] * sv[(j * 3 + 2) * p + c];
          acc[k] += s;
        }
      }
    }
    T *out = mult + (static_cast<std::int64_t>(leaves[blockIdx.x]) * t.nrhs + r) * P;
#pragma unroll
    for (int k = 0; k < per_thread; ++k) {
      const int q = threadIdx.x + k * block;
      if (q < P)
        out[q] = acc[k];
    }
  }
}

// out (+)= (Tx ⊗ Ty ⊗ Tz) in, or its transpose, through two shared buffers (in may alias s2).
template <class T>
__device__ void tensor3(int p, const T *tx, const T *ty, const T *tz, bool transpose, const T *in,
                        T *out, T *s1, T *s2) {
  const int pp = p * p, P = pp * p;
  auto m = [&](const T *mat, int i, int k) { return transpose ? mat[k * p + i] : mat[i * p + k]; };
  for (int q = threadIdx.x; q < P; q += blockDim.x) {
    const int a2 = q / pp, bc = q % pp;
    T acc = 0;
    for (int a = 0; a < p; ++a)
      acc += m(tx, a2, a) * in[a * pp + bc];
    s1[q] = acc;
  }
  __syncthreads();
  for (int q = threadIdx.x; q < P; q += blockDim.x) {
    const int a2 = q / pp, b2 = q / p % p, c = q % p;
    T acc = 0;
    for (int b = 0; b < p; ++b)
      acc += m(ty, b2, b) * s1[a2 * pp + b * p + c];
    s2[q] = acc;
  }
  __syncthreads();
  for (int q = threadIdx.x; q < P; q += blockDim.x) {
    const int ab = q / p, c2 = q % p;
    T acc = 0;
    for (int c = 0; c < p; ++c)
      acc += m(tz, c2, c) * s2[ab * p + c];
    out[q] += acc;
  }
  __syncthreads();
}

template <class T> __global__ void m2m_kernel(GpuTree<T> t, const std::int32_t *parents, T *mult) {
  extern __shared__ unsigned char smem[];
  T *mats = reinterpret_cast<T *>(smem); // 2 p²
  T *s1 = mats + 2 * t.p * t.p, *s2 = s1 + t.P;
  const int p = t.p, P = t.P;
  for (int k = threadIdx.x; k < 2 * p * p; k += blockDim.x)
    mats[k] = t.m2m[k];
  const std::int32_t pb = parents[blockIdx.x];
  const GpuBox<T> B = t.boxes[pb];
  __syncthreads();
  for (std::int32_t c = B.first_child; c < B.first_child + B.children; ++c) {
    const GpuBox<T> C = t.boxes[c];
    if (C.se == C.sb)
      continue;
    const int o = C.octant;
    for (int r = 0; r < t.nrhs; ++r) {
      const T *in = mult + (static_cast<std::int64_t>(c) * t.nrhs + r) * P;
      for (int q = threadIdx.x; q < P; q += blockDim.x)
        s2[q] = in[q];
      __syncthreads();
      tensor3(p, mats + ((o >> 2) & 1) * p * p, mats + ((o >> 1) & 1) * p * p,
              mats + (o & 1) * p * p, false, s2,
              mult + (static_cast<std::int64_t>(pb) * t.nrhs + r) * P, s1, s2);
    }
  }
}

template <class T> __global__ void l2l_kernel(GpuTree<T> t, const std::int32_t *children, T *loc) {
  extern __shared__ unsigned char smem[];
  T *mats = reinterpret_cast<T *>(smem);
  T *s1 = mats + 2 * t.p * t.p, *s2 = s1 + t.P;
  const int p = t.p, P = t.P;
  for (int k = threadIdx.x; k < 2 * p * p; k += blockDim.x)
    mats[k] = t.m2m[k];
  const std::int32_t cb = children[blockIdx.x];
  const GpuBox<T> C = t.boxes[cb];
  const int o = C.octant;
  __syncthreads();
  for (int r = 0; r < t.nrhs; ++r) {
    const T *in = loc + (static_cast<std::int64_t>(C.parent) * t.nrhs + r) * P;
    for (int q = threadIdx.x; q < P; q += blockDim.x)
      s2[q] = in[q];
    __syncthreads();
    tensor3(p, mats + ((o >> 2) & 1) * p * p, mats + ((o >> 1) & 1) * p * p, mats + (o & 1) * p * p,
            true, s2, loc + (static_cast<std::int64_t>(cb) * t.nrhs + r) * P, s1, s2);
  }
}

template <class T>
__global__ void l2p_kernel(GpuTree<T> t, const std::int32_t *leaves, const T *loc, T *us) {
  extern __shared__ unsigned char smem[];
  T *tn = reinterpret_cast<T *>(smem);
  T *lb = tn + t.p * t.p; // P
  const int p = t.p, P = t.P;
  for (int k = threadIdx.x; k < p * p; k += blockDim.x)
    tn[k] = t.tn[k];
  const std::int32_t bi = leaves[blockIdx.x];
  const GpuBox<T> b = t.boxes[bi];
  const T inv = T(1) / b.half;
  for (int r = 0; r < t.nrhs; ++r) {
    __syncthreads();
    for (int q = threadIdx.x; q < P; q += blockDim.x)
      lb[q] = loc[(static_cast<std::int64_t>(bi) * t.nrhs + r) * P + q];
    __syncthreads();
    for (std::int64_t i = b.tb + threadIdx.x; i < b.te; i += blockDim.x) {
      T sx[max_p], sy[max_p], sz[max_p];
      cheb_eval(p, (t.tgt[i] - b.centre[0]) * inv, tn, sx);
      cheb_eval(p, (t.tgt[t.m + i] - b.centre[1]) * inv, tn, sy);
      cheb_eval(p, (t.tgt[2 * t.m + i] - b.centre[2]) * inv, tn, sz);
      T u = 0;
      for (int a = 0; a < p; ++a) {
        T ua = 0;
        for (int bb = 0; bb < p; ++bb) {
          const T *row = lb + (a * p + bb) * p;
          T ub = 0;
          for (int c = 0; c < p; ++c)
            ub += row[c] * sz[c];
          ua += ub * sy[bb];
        }
        u += ua * sx[a];
      }
      us[r * t.m + i] += u;
    }
  }
}

template <class T>
__global__ void gather_kernel(GpuTree<T> t, const std::int32_t *b, const std::int32_t *tr,
                              const std::int32_t *pinv, const T *mult, T *X) {
  const std::int64_t col = blockIdx.x, k = col / t.nrhs;
  const int r = static_cast<int>(col % t.nrhs);
  const T *src = mult + (static_cast<std::int64_t>(b[k]) * t.nrhs + r) * t.P;
  const std::int32_t *pi = pinv + static_cast<std::int64_t>(tr[k]) * t.P;
  for (int q = threadIdx.x; q < t.P; q += blockDim.x)
    X[col * t.P + q] = src[pi[q]];
}

template <class T>
__global__ void scatter_kernel(GpuTree<T> t, const std::int32_t *a, const std::int32_t *tr,
                               const std::int32_t *perm, T scale, const T *Y, T *loc) {
  const std::int64_t col = blockIdx.x, k = col / t.nrhs;
  const int r = static_cast<int>(col % t.nrhs);
  T *dst = loc + (static_cast<std::int64_t>(a[k]) * t.nrhs + r) * t.P;
  const std::int32_t *pi = perm + static_cast<std::int64_t>(tr[k]) * t.P;
  for (int q = threadIdx.x; q < t.P; q += blockDim.x)
    atomicAdd(dst + q, scale * Y[col * t.P + pi[q]]);
}

template <class T>
__global__ void permute_kernel(const T *in, const std::int64_t *order, std::int64_t n,
                               std::int64_t total, bool scatter, T *out) {
  for (std::int64_t k = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; k < total;
       k += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t r = k / n, i = k % n, o = r * n + order[i];
    if (scatter)
      out[o] = in[k];
    else
      out[k] = in[o];
  }
}

template <class F> void set_smem(F f, std::size_t bytes) {
  if (bytes > 48 * 1024)
    cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
}

} // namespace

template <class T>
void launch_p2m(const GpuTree<T> &t, const std::int32_t *leaves, std::int64_t count, const T *ws,
                T *mult, void *stream) {
  if (count == 0)
    return;
  const std::size_t smem = sizeof(T) * (t.p * t.p + p2m_tile * 3 * t.p + p2m_tile);
  p2m_kernel<T><<<static_cast<unsigned>(count), block, smem, static_cast<cudaStream_t>(stream)>>>(
      t, leaves, ws, mult);
  check_launch("P2M");
}

template <class T>
void launch_m2m(const GpuTree<T> &t, const std::int32_t *parents, std::int64_t count, T *mult,
                void *stream) {
  if (count == 0)
    return;
  const std::size_t smem = sizeof(T) * (2 * t.p * t.p + 2 * t.P);
  set_smem(m2m_kernel<T>, smem);
  m2m_kernel<T><<<static_cast<unsigned>(count), block, smem, static_cast<cudaStream_t>(stream)>>>(
      t, parents, mult);
  check_launch("M2M");
}

template <class T>
void launch_l2l(const GpuTree<T> &t, const std::int32_t *children, std::int64_t count, T *loc,
                void *stream) {
  if (count == 0)
    return;
  const std::size_t smem = sizeof(T) * (2 * t.p * t.p + 2 * t.P);
  set_smem(l2l_kernel<T>, smem);
  l2l_kernel<T><<<static_cast<unsigned>(count), block, smem, static_cast<cudaStream_t>(stream)>>>(
      t, children, loc);
  check_launch("L2L");
}

template <class T>
void launch_l2p(const GpuTree<T> &t, const std::int32_t *leaves, std::int64_t count, const T *loc,
                T *us, void *stream) {
  if (count == 0)
    return;
  const std::size_t smem = sizeof(T) * (t.p * t.p + t.P);
  set_smem(l2p_kernel<T>, smem);
  l2p_kernel<T><<<static_cast<unsigned>(count), 128, smem, static_cast<cudaStream_t>(stream)>>>(
      t, leaves, loc, us);
  check_launch("L2P");
}

template <class T>
void launch_m2l_gather(const GpuTree<T> &t, const std::int32_t *b, const std::int32_t *tr,
                       std::int64_t pairs, const std::int32_t *pinv, const T *mult, T *X,
                       void *stream) {
  if (pairs == 0)
    return;
  gather_kernel<T>
      <<<static_cast<unsigned>(pairs * t.nrhs), 128, 0, static_cast<cudaStream_t>(stream)>>>(
          t, b, tr, pinv, mult, X);
  check_launch("M2L gather");
}

template <class T>
void launch_m2l_scatter(const GpuTree<T> &t, const std::int32_t *a, const std::int32_t *tr,
                        std::int64_t pairs, const std::int32_t *perm, T scale, const T *Y, T *loc,
                        void *stream) {
  if (pairs == 0)
    return;
  scatter_kernel<T>
      <<<static_cast<unsigned>(pairs * t.nrhs), 128, 0, static_cast<cudaStream_t>(stream)>>>(
          t, a, tr, perm, scale, Y, loc);
  check_launch("M2L scatter");
}

template <class T>
void launch_permute(const T *in, const std::int64_t *order, std::int64_t n, std::int64_t nrhs,
                    bool scatter, T *out, void *stream) {
  const std::int64_t total = n * nrhs;
  if (total == 0)
    return;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((total + 255) / 256, 65536));
  permute_kernel<T>
      <<<blocks, 256, 0, static_cast<cudaStream_t>(stream)>>>(in, order, n, total, scatter, out);
  check_launch("permute");
}

#define KSUM_FMM_PASSES(T)                                                                         \
  template void launch_permute<T>(const T *, const std::int64_t *, std::int64_t, std::int64_t,     \
                                  bool, T *, void *);                                              \
  template void launch_p2m<T>(const GpuTree<T> &, const std::int32_t *, std::int64_t, const T *,   \
                              T *, void *);                                                        \
  template void launch_m2m<T>(const GpuTree<T> &, const std::int32_t *, std::int64_t, T *,         \
                              void *);                                                             \
  template void launch_l2l<T>(const GpuTree<T> &, const std::int32_t *, std::int64_t, T *,         \
                              void *);                                                             \
  template void launch_l2p<T>(const GpuTree<T> &, const std::int32_t *, std::int64_t, const T *,   \
                              T *, void *);                                                        \
  template void launch_m2l_gather<T>(const GpuTree<T> &, const std::int32_t *,                     \
                                     const std::int32_t *, std::int64_t, const std::int32_t *,     \
                                     const T *, T *, void *);                                      \
  template void launch_m2l_scatter<T>(const GpuTree<T> &, const std::int32_t *,                    \
                                      const std::int32_t *, std::int64_t, const std::int32_t *, T, \
                                      const T *, T *, void *);
KSUM_FMM_PASSES(float)
KSUM_FMM_PASSES(double)

} // namespace ksum::detail
