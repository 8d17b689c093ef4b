// CUDA kernels of the fast Gauss transform (seed 002 §4.2): Hermite coefficients per source box,
// Taylor coefficients per target box (from sources and by Hermite→Taylor translation), and the
// evaluation at the targets, with coefficients and centres in shared memory and collaborative
// loads. The series are those of fgt_series.hpp.
#include "fgt/fgt_launch.hpp"
#include "fgt/fgt_series.hpp"

#include <cuda_runtime.h>

namespace ksum::fgt {
namespace {

constexpr int kThreads = 128; // per block in every kernel; a tile holds ≤ 128 targets
constexpr int kChunk = 32;    // sources staged per round

enum : std::uint8_t { kDirect = 0, kHermite = 1, kTaylor = 2, kTranslate = 3 };

template <class T> __device__ __forceinline__ T expo(T x) {
  return exp(x);
}
__device__ __forceinline__ std::int64_t lmin(std::int64_t a, std::int64_t b) {
  return a < b ? a : b;
}

// Σ_α c_α Π_k f_k[α_k] over p^d coefficients (d ≤ 4, dimension d − 1 fastest); f has 4 rows of
// kGpuMaxOrder, the first 4 − d unused.
template <class T>
__device__ T contract(const T *c, const T (&f)[kGpuMaxDim][kGpuMaxOrder], int d, int p) {
  const int n0 = d >= 4 ? p : 1, n1 = d >= 3 ? p : 1, n2 = d >= 2 ? p : 1;
  T total = 0;
  int idx = 0;
  for (int a0 = 0; a0 < n0; ++a0) {
    const T w0 = d >= 4 ? f[0][a0] : T(1);
    for (int a1 = 0; a1 < n1; ++a1) {
      const T w1 = d >= 3 ? w0 * f[1][a1] : w0;
      for (int a2 = 0; a2 < n2; ++a2) {
        const T w2 = d >= 2 ? w1 * f[2][a2] : w1;
        T s = 0;
        for (int a3 = 0; a3 < p; ++a3)
          s += c[idx++] * f[3][a3];
        total += w2 * s;
      }
    }
  }
  return total;
}

// Digits of a tensor index (dimension d − 1 fastest) into dig[0 … d − 1].
__device__ __forceinline__ void digits(int idx, int d, int p, int *dig) {
  for (int k = d - 1; k >= 0; --k) {
    dig[k] = idx % p;
    idx /= p;
  }
}

// Adds Σ_s q_s Π_k g_s[k][α_k] over the staged sources to acc[α] for the α this thread owns;
// g is staged per source as d rows of p values. mode 0: g = uⁿ/n! (Hermite), 1: h_n(u)/n!
// (Taylor), with u = x − shift (points are relative to their box centre; shift is the expansion
// centre relative to it).
template <class T>
__device__ void accumulate_sources(const GpuFgtArgs<T> &a, std::int64_t s0, std::int64_t s1,
                                   const T *shift, int mode, T *acc, T *g, T *qs) {
  const int d = a.d, p = a.p;
  const int P = int(a.terms);
  for (std::int64_t c0 = s0; c0 < s1; c0 += kChunk) {
    const int cnt = int(lmin(kChunk, s1 - c0));
    __syncthreads();
    for (int task = threadIdx.x; task < cnt * d; task += blockDim.x) {
      const int s = task / d, k = task % d;
      const T u = a.src[(c0 + s) * d + k] - shift[k];
      T *gg = g + (s * d + k) * p;
      if (mode == 0) {
        scaled_powers(u, p, gg);
      } else {
        hermite_functions(u, p, gg);
        T fact = 1;
        for (int n = 1; n < p; ++n) {
          fact *= T(n);
          gg[n] /= fact;
        }
      }
    }
    for (int s = threadIdx.x; s < cnt; s += blockDim.x)
      qs[s] = a.q[c0 + s];
    __syncthreads();
    for (int alpha = threadIdx.x; alpha < P; alpha += blockDim.x) {
      int dig[kGpuMaxDim];
      digits(alpha, d, p, dig);
      T sum = 0;
      for (int s = 0; s < cnt; ++s) {
        T v = qs[s];
        for (int k = 0; k < d; ++k)
          v *= g[(s * d + k) * p + dig[k]];
        sum += v;
      }
      acc[alpha] += sum;
    }
  }
}

template <class T> __global__ void k_hermite(GpuFgtArgs<T> a) {
  extern __shared__ unsigned char smem[];
  T *g = reinterpret_cast<T *>(smem);
  T *qs = g + kChunk * a.d * a.p;
  const int box = a.hermite_boxes[blockIdx.x];
  T *A = a.A + std::int64_t(blockIdx.x) * a.terms;
  for (int alpha = threadIdx.x; alpha < a.terms; alpha += blockDim.x)
    A[alpha] = 0;
  const T zero[kGpuMaxDim] = {0, 0, 0, 0};
  accumulate_sources(a, a.src_begin[box], a.src_begin[box + 1], zero, 0, A, g, qs);
}

// Taylor coefficients of one target box: sources of its Taylor pairs directly, and the Hermite
// expansions of its translation pairs through C_β = ((−1)^{|β|}/β!) Σ_α A_α h_{α+β}(c − s),
// applied one dimension at a time in shared memory.
template <class T> __global__ void k_taylor(GpuFgtArgs<T> a) {
  extern __shared__ unsigned char smem[];
  const int d = a.d, p = a.p, P = int(a.terms);
  T *buf0 = reinterpret_cast<T *>(smem);
  T *buf1 = buf0 + P;
  T *mat = buf1 + P;           // d × p × p
  T *hv = mat + d * p * p;     // d × (2p − 1)
  T *g = hv + d * (2 * p - 1); // kChunk × d × p
  T *qs = g + kChunk * d * p;  // kChunk
  const int box = a.taylor_boxes[blockIdx.x];
  const double *c = a.tgt_center + box * d;
  T *B = a.B + std::int64_t(blockIdx.x) * P;
  for (int beta = threadIdx.x; beta < P; beta += blockDim.x)
    B[beta] = 0;
  for (std::int64_t at = a.pair_begin[box]; at < a.pair_begin[box + 1]; ++at) {
    const std::uint8_t route = a.route[at];
    const std::int64_t sb = a.pair_src[at];
    const double *s = a.src_center + sb * d;
    if (route == kTaylor) {
      T shift[kGpuMaxDim] = {0, 0, 0, 0};
      for (int k = 0; k < d; ++k)
        shift[k] = T(c[k] - s[k]);
      accumulate_sources(a, a.src_begin[sb], a.src_begin[sb + 1], shift, 1, B, g, qs);
    } else if (route == kTranslate) {
      const T *A = a.A + std::int64_t(a.hermite_slot[sb]) * P;
      __syncthreads();
      for (int i = threadIdx.x; i < P; i += blockDim.x)
        buf0[i] = A[i];
      if (threadIdx.x < d)
        hermite_functions(T(c[threadIdx.x] - s[threadIdx.x]), 2 * p - 1,
                          hv + threadIdx.x * (2 * p - 1));
      __syncthreads();
      for (int task = threadIdx.x; task < d * p * p; task += blockDim.x) {
        const int k = task / (p * p), b = (task / p) % p, al = task % p;
        T fact = 1;
        for (int n = 2; n <= b; ++n)
          fact *= T(n);
        mat[task] = ((b & 1) ? T(-1) : T(1)) / fact * hv[k * (2 * p - 1) + al + b];
      }
      T *in = buf0, *out = buf1;
      int post = P;
      for (int k = 0; k < d; ++k) {
        __syncthreads();
        post /= p;
        const T *mk = mat + k * p * p;
        for (int idx = threadIdx.x; idx < P; idx += blockDim.x) {
          const int j = idx % post, b = (idx / post) % p, i = idx / (post * p);
          const T *src = in + i * p * post + j;
          T sum = 0;
          for (int al = 0; al < p; ++al)
            sum += mk[b * p + al] * src[al * post];
          out[idx] = sum;
        }
        T *t = in;
        in = out;
        out = t;
      }
      __syncthreads();
      for (int beta = threadIdx.x; beta < P; beta += blockDim.x)
        B[beta] += in[beta];
    }
  }
}

// One tile of ≤ 128 targets of one box: its Taylor series, its Hermite pairs (seed 002 §4.2:
// each source box's coefficients and centre loaded collaboratively into shared memory, then
// evaluated by every thread at its target) and its direct pairs (sources staged in chunks).
template <class T> __global__ void k_eval(GpuFgtArgs<T> a) {
  extern __shared__ unsigned char smem[];
  const int d = a.d, p = a.p, P = int(a.terms);
  T *coef = reinterpret_cast<T *>(smem); // P
  T *ctr = coef + P;                     // d
  T *pts = ctr + kGpuMaxDim;             // kThreads × d
  T *qs = pts + kThreads * d;            // kThreads
  const std::int64_t box = a.tiles[3 * blockIdx.x], first = a.tiles[3 * blockIdx.x + 1];
  const int count = int(a.tiles[3 * blockIdx.x + 2]);
  const bool valid = int(threadIdx.x) < count;
  const std::int64_t t = first + threadIdx.x;
  T y[kGpuMaxDim] = {0, 0, 0, 0};
  for (int k = 0; k < d && valid; ++k)
    y[k] = a.tgt[t * d + k];
  T f[kGpuMaxDim][kGpuMaxOrder];
  T acc = 0;
  const int ts = a.taylor_slot[box];
  if (ts >= 0) {
    for (int i = threadIdx.x; i < P; i += blockDim.x)
      coef[i] = a.B[std::int64_t(ts) * P + i];
    __syncthreads();
    if (valid) {
      for (int k = 0; k < d; ++k) {
        const T tau = y[k];
        T pw = 1;
        for (int n = 0; n < p; ++n, pw *= tau)
          f[kGpuMaxDim - d + k][n] = pw;
      }
      acc += contract(coef, f, d, p);
    }
  }
  for (std::int64_t at = a.pair_begin[box]; at < a.pair_begin[box + 1]; ++at) {
    const std::uint8_t route = a.route[at];
    const std::int64_t sb = a.pair_src[at];
    if (route == kHermite) {
      __syncthreads();
      const T *A = a.A + std::int64_t(a.hermite_slot[sb]) * P;
      for (int i = threadIdx.x; i < P; i += blockDim.x)
        coef[i] = A[i];
      if (threadIdx.x < d)
        ctr[threadIdx.x] =
            T(a.tgt_center[box * d + threadIdx.x] - a.src_center[sb * d + threadIdx.x]);
      __syncthreads();
      if (valid) {
        for (int k = 0; k < d; ++k)
          hermite_functions(y[k] + ctr[k], p, f[kGpuMaxDim - d + k]);
        acc += contract(coef, f, d, p);
      }
    } else if (route == kDirect) {
      __syncthreads(); // ctr may still be read for the previous pair
      if (threadIdx.x < d)
        ctr[threadIdx.x] =
            T(a.tgt_center[box * d + threadIdx.x] - a.src_center[sb * d + threadIdx.x]);
      const std::int64_t s0 = a.src_begin[sb], s1 = a.src_begin[sb + 1];
      for (std::int64_t c0 = s0; c0 < s1; c0 += kThreads) {
        const int cnt = int(lmin(kThreads, s1 - c0));
        __syncthreads();
        for (int i = threadIdx.x; i < cnt * d; i += blockDim.x)
          pts[i] = a.src[c0 * d + i];
        if (int(threadIdx.x) < cnt)
          qs[threadIdx.x] = a.q[c0 + threadIdx.x];
        __syncthreads();
        if (valid)
          for (int s = 0; s < cnt; ++s) {
            T r2 = 0;
            for (int k = 0; k < d; ++k) {
              const T dz = y[k] + ctr[k] - pts[s * d + k];
              r2 += dz * dz;
            }
            acc += qs[s] * expo(-r2);
          }
      }
    }
  }
  if (valid)
    a.out[t] = acc;
}

// Seed 002 tables 4–5: 2D Hermite evaluation with p fixed at compile time (unrolled recurrences
// and Horner-like contraction), coefficients and centres of kStage clusters staged in shared
// memory by collaborative loads, and TPT targets per thread so that each coefficient read from
// shared memory feeds TPT fused multiply-adds.
template <class T, int P, int TPT>
__global__ void __launch_bounds__(kThreads)
    k_hermite_table(const T *tgt, std::int64_t n, const T *centers, const T *coef,
                    std::int64_t clusters, T *out) {
  constexpr int kStage = 8;
  __shared__ T sA[kStage * P * P];
  __shared__ T sc[kStage * 2];
  const std::int64_t base = std::int64_t(blockIdx.x) * kThreads * TPT + threadIdx.x;
  T x[TPT], y[TPT], acc[TPT];
#pragma unroll
  for (int j = 0; j < TPT; ++j) {
    const std::int64_t i = lmin(base + j * kThreads, n - 1);
    x[j] = tgt[2 * i];
    y[j] = tgt[2 * i + 1];
    acc[j] = 0;
  }
  for (std::int64_t c0 = 0; c0 < clusters; c0 += kStage) {
    const int cnt = int(lmin(kStage, clusters - c0));
    __syncthreads();
    for (int i = threadIdx.x; i < cnt * P * P; i += kThreads)
      sA[i] = coef[c0 * P * P + i];
    if (threadIdx.x < 2 * cnt)
      sc[threadIdx.x] = centers[2 * c0 + threadIdx.x];
    __syncthreads();
    for (int c = 0; c < cnt; ++c) {
      T hx[TPT][P], hy[TPT][P];
#pragma unroll
      for (int j = 0; j < TPT; ++j) {
        const T u = x[j] - sc[2 * c], v = y[j] - sc[2 * c + 1];
        const T u2 = u + u, v2 = v + v;
        hx[j][0] = expo(-u * u);
        hy[j][0] = expo(-v * v);
        hx[j][1] = u2 * hx[j][0];
        hy[j][1] = v2 * hy[j][0];
#pragma unroll
        for (int k = 1; k + 1 < P; ++k) {
          hx[j][k + 1] = u2 * hx[j][k] - T(2 * k) * hx[j][k - 1];
          hy[j][k + 1] = v2 * hy[j][k] - T(2 * k) * hy[j][k - 1];
        }
      }
      const T *A = sA + c * P * P;
#pragma unroll
      for (int r = 0; r < P; ++r) {
        T s[TPT];
#pragma unroll
        for (int j = 0; j < TPT; ++j)
          s[j] = 0;
#pragma unroll
        for (int b = 0; b < P; ++b) {
          const T ab = A[r * P + b];
#pragma unroll
          for (int j = 0; j < TPT; ++j)
            s[j] += ab * hy[j][b];
        }
#pragma unroll
        for (int j = 0; j < TPT; ++j)
          acc[j] += hx[j][r] * s[j];
      }
    }
  }
#pragma unroll
  for (int j = 0; j < TPT; ++j)
    if (base + j * kThreads < n)
      out[base + j * kThreads] = acc[j];
}

template <class T, int P>
void table_launch(const T *tgt, std::int64_t n, const T *centers, const T *coef,
                  std::int64_t clusters, T *out, cudaStream_t st) {
  // Four targets per thread where that still gives every SM several blocks, else two.
  if (n >= std::int64_t(kThreads) * 4 * 132 * 4) {
    const auto blocks = (n + kThreads * 4 - 1) / (kThreads * 4);
    k_hermite_table<T, P, 4>
        <<<unsigned(blocks), kThreads, 0, st>>>(tgt, n, centers, coef, clusters, out);
  } else {
    const auto blocks = (n + kThreads * 2 - 1) / (kThreads * 2);
    k_hermite_table<T, P, 2>
        <<<unsigned(blocks), kThreads, 0, st>>>(tgt, n, centers, coef, clusters, out);
  }
}

template <class T> std::size_t taylor_smem(const GpuFgtArgs<T> &a) {
  const std::size_t d = a.d, p = a.p, P = a.terms;
  return sizeof(T) * (2 * P + d * p * p + d * (2 * p - 1) + kChunk * d * p + kChunk);
}

} // namespace

template <class T> const char *launch_fgt(const GpuFgtArgs<T> &a, void *stream) {
  const auto st = static_cast<cudaStream_t>(stream);
  if (a.hermite_count > 0) {
    const std::size_t smem = sizeof(T) * (kChunk * a.d * a.p + kChunk);
    k_hermite<T><<<unsigned(a.hermite_count), kThreads, smem, st>>>(a);
  }
  if (a.taylor_count > 0) {
    const std::size_t smem = taylor_smem(a);
    if (smem > 48 * 1024)
      cudaFuncSetAttribute(k_taylor<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    k_taylor<T><<<unsigned(a.taylor_count), kThreads, smem, st>>>(a);
  }
  if (a.tile_count > 0) {
    const std::size_t smem = sizeof(T) * (a.terms + kGpuMaxDim + kThreads * (a.d + 1));
    if (smem > 48 * 1024)
      cudaFuncSetAttribute(k_eval<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    k_eval<T><<<unsigned(a.tile_count), kThreads, smem, st>>>(a);
  }
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

template <class T>
const char *launch_hermite_table(int p, const T *tgt, std::int64_t n, const T *centers,
                                 const T *coef, std::int64_t clusters, T *out, void *stream) {
  const auto st = static_cast<cudaStream_t>(stream);
  switch (p) {
  case 5:
    table_launch<T, 5>(tgt, n, centers, coef, clusters, out, st);
    break;
  case 9:
    table_launch<T, 9>(tgt, n, centers, coef, clusters, out, st);
    break;
  case 12:
    table_launch<T, 12>(tgt, n, centers, coef, clusters, out, st);
    break;
  default:
    return "the Hermite table kernel is built for p = 5, 9 and 12";
  }
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

template const char *launch_fgt<float>(const GpuFgtArgs<float> &, void *);
template const char *launch_fgt<double>(const GpuFgtArgs<double> &, void *);
template const char *launch_hermite_table<float>(int, const float *, std::int64_t, const float *,
                                                 const float *, std::int64_t, float *, void *);
template const char *launch_hermite_table<double>(int, const double *, std::int64_t, const double *,
                                                  const double *, std::int64_t, double *, void *);

} // namespace ksum::fgt
