// The local fits of RBF-PUM on the GPU: one thread block per patch, everything in shared memory
// (the matrix as a packed lower triangle, row-major: entry (i, j ≤ i) at i(i+1)/2 + j).
//   assembly  Φ_ab = φ(p0 + c² |x_a − x_b|²) (+ nugget on the diagonal)
//   Cholesky  right-looking, panels of R columns: every thread factors the R × R diagonal block
//             in registers, the panel rows are solved in parallel, then a rank-R trailing update
//   solves    forward and back substitution by one warp
//   LOOCV     L⁻¹ in place (column by column from the last), (Φ⁻¹)_kk = Σ_i (L⁻¹)_ik², c = L⁻ᵀ L⁻¹ f,
//             Rippa's e_k = c_k / (Φ⁻¹)_kk, Brent over log ε (the CPU's linalg::brent_minimize,
//             run by every thread on the same block-wide values)
//   accept    the CPU path's residual and rounding tests, the nugget ladder, the diagonal fallback.
#include "kernels/kernel_defs.hpp"
#include "linalg/brent.hpp"
#include "rbf/pum/pum_gpu.hpp"
#include "spatial/cell_box.hpp"

#include <ksum/error.hpp>

#include <cuda_runtime.h>
#include <string>

namespace ksum::detail {
namespace {

constexpr int R = 4; // panel width of the Cholesky factorisation and of the inverse
static_assert(R == 4, "the unrolled updates of invert_factor() assume panels of 4 columns");
constexpr int reduce_slots = 40;

__device__ __forceinline__ int tri(int i) { return i * (i + 1) / 2; }

// Block-wide maximum (every thread gets it). red: reduce_slots doubles of shared memory.
__device__ double block_max(double v, double *red) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  __syncthreads(); // red may still be read from the previous call
  if (lane == 0)
    red[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    double m = red[0];
    for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w)
      m = fmax(m, red[w]);
    red[32] = m;
  }
  __syncthreads();
  return red[32];
}

template <class K> struct Patch {
  const K kf{};
  int n, s, nc, tid, bs;
  int tr, tc, TR, TC; // the block as a TR × TC grid: thread (tr, tc) owns rows ≡ tr, columns ≡ tc
  double *X, *F, *C, *B, *dv, *red, *A, *P; // P: n × R panel scratch

  __device__ double phi(int a, int b, double c2) const {
    constexpr double p0 = kdef::p_offset<K>();
    double d2 = 0;
    for (int k = 0; k < s; ++k) {
      const double d = X[k * n + a] - X[k * n + b];
      d2 += d * d;
    }
    return kf.value(p0 + c2 * d2);
  }

  // The first index >= from that is ≡ r (mod M).
  __device__ static int first(int from, int r, int M) { return from + ((r - from % M) + M) % M; }

  __device__ void assemble(double c2, double nugget) {
    for (int i = tr; i < n; i += TR) {
      double *row = A + tri(i);
      for (int j = tc; j <= i; j += TC)
        row[j] = phi(i, j, c2) + (i == j ? nugget : 0.0);
    }
    __syncthreads();
  }

  // In-place Cholesky; false (on every thread) when a pivot is not positive and finite.
  __device__ bool cholesky() {
    for (int k0 = 0; k0 < n; k0 += R) {
      const int r = n - k0 < R ? n - k0 : R;
      double L[R][R], rL[R]; // the diagonal block's factor and its reciprocal diagonal
      bool ok = true;
#pragma unroll
      for (int a = 0; a < R; ++a)
#pragma unroll
        for (int b = 0; b <= a; ++b) {
          if (a >= r)
            continue;
          double v = A[tri(k0 + a) + k0 + b];
#pragma unroll
          for (int c = 0; c < b; ++c)
            v -= L[a][c] * L[b][c];
          if (a == b) {
            // One reciprocal square root instead of a square root and a division: this chain
            // runs once per panel on every thread and dominated the panel's latency.
            ok = ok && v > 0 && isfinite(v);
            rL[a] = rsqrt(v);
            L[a][a] = v * rL[a];
          } else {
            L[a][b] = v * rL[b];
          }
        }
      if (!ok)
        return false; // the same decision on every thread: no barrier is left waiting
      for (int i = k0 + r + tid; i < n; i += bs) {
        double *row = A + tri(i) + k0;
        double l[R];
#pragma unroll
        for (int b = 0; b < R; ++b) {
          if (b >= r)
            continue;
          double v = row[b];
#pragma unroll
          for (int c = 0; c < b; ++c)
            v -= l[c] * L[b][c];
          l[b] = v * rL[b];
          row[b] = l[b];
        }
      }
      __syncthreads();
      // The diagonal block is read by nobody in the trailing update: written now.
      if (tid < R * R) {
        const int a = tid / R, b = tid % R;
        if (a < r && b <= a) {
#pragma unroll
          for (int aa = 0; aa < R; ++aa)
#pragma unroll
            for (int bb = 0; bb < R; ++bb)
              if (aa == a && bb == b) {
                A[tri(k0 + a) + k0 + b] = L[aa][bb];
                if (aa == bb)
                  dv[k0 + a] = rL[aa]; // the reciprocal diagonal, for the solves and the inverse
              }
        }
      }
      // Rank-r update of the trailing block; a thread keeps its row's panel entries in registers.
      const int base = k0 + r;
      for (int i = first(base, tr, TR); i < n; i += TR) {
        double *row = A + tri(i);
        double li[R];
#pragma unroll
        for (int b = 0; b < R; ++b)
          li[b] = b < r ? row[k0 + b] : 0.0;
        int j = first(base, tc, TC);
        if (r == R) { // full panels: no predicates, two columns per step (independent chains)
          for (; j + TC <= i; j += 2 * TC) {
            const double *lj = A + tri(j) + k0, *lk = A + tri(j + TC) + k0;
            double v = row[j], w = row[j + TC];
#pragma unroll
            for (int b = 0; b < R; ++b) {
              v = fma(-li[b], lj[b], v);
              w = fma(-li[b], lk[b], w);
            }
            row[j] = v;
            row[j + TC] = w;
          }
        }
        for (; j <= i; j += TC) {
          const double *lj = A + tri(j) + k0;
          double v = row[j];
#pragma unroll
          for (int b = 0; b < R; ++b)
            if (b < r)
              v = fma(-li[b], lj[b], v);
          row[j] = v;
        }
      }
      __syncthreads();
    }
    return true;
  }

  // out = Φ⁻¹ rhs from the factor (one warp: forward, then back substitution); out may be rhs.
  __device__ void solve(const double *rhs, double *out) {
    if (tid < 32) { // dv holds the factor's reciprocal diagonal (cholesky())
      for (int q = 0; q < nc; ++q)
        for (int a = tid; a < n; a += 32)
          out[q * n + a] = rhs[q * n + a];
      __syncwarp();
      for (int k = 0; k < n; ++k) {
        const double rkk = dv[k];
        for (int q = 0; q < nc; ++q) {
          const double ck = out[q * n + k] * rkk;
          for (int i = k + 1 + tid; i < n; i += 32)
            out[q * n + i] -= A[tri(i) + k] * ck;
          __syncwarp();
          if (tid == 0)
            out[q * n + k] = ck;
          __syncwarp();
        }
      }
      for (int k = n - 1; k >= 0; --k) {
        const double *row = A + tri(k);
        for (int q = 0; q < nc; ++q) {
          const double ck = out[q * n + k] * dv[k];
          for (int i = tid; i < k; i += 32)
            out[q * n + i] -= row[i] * ck;
          __syncwarp();
          if (tid == 0)
            out[q * n + k] = ck;
          __syncwarp();
        }
      }
    }
    __syncthreads();
  }

  // L ← X = L⁻¹ in place, by panels of R rows. Before panel [p0, p0 + r), rows < p0 hold X and
  // a row i >= p0 holds L[i][m] for m >= p0 and S[i][m] = −Σ_{p<p0} L[i][p] X[p][m] for m < p0.
  // The panel rows are finished one by one, then the rows below take the panel's rank-r update
  // (their panel entries of L copied to P first, since the update overwrites them).
  __device__ void invert_factor() {
    for (int p0 = 0; p0 < n; p0 += R) {
      const int r = n - p0 < R ? n - p0 : R;
      double Lp[R][R]; // the diagonal block of L
#pragma unroll
      for (int a = 0; a < R; ++a)
#pragma unroll
        for (int b = 0; b < R; ++b)
          Lp[a][b] = a < r && b <= a ? A[tri(p0 + a) + p0 + b] : 0.0;
      for (int i = p0 + r + tid; i < n; i += bs)
#pragma unroll
        for (int b = 0; b < R; ++b)
          P[i * R + b] = b < r ? A[tri(i) + p0 + b] : 0.0;
      __syncthreads();
      // The panel rows, one column per thread: X[p0 + a][m] needs only X[p0 + b][m], b < a, of the
      // same column (kept in registers), so one barrier serves the whole panel.
      double inv[R]; // the reciprocal diagonal left by cholesky() in dv
#pragma unroll
      for (int a = 0; a < R; ++a)
        inv[a] = a < r ? dv[p0 + a] : 0.0;
      for (int m = tid; m < p0 + r; m += bs) {
        double x[R];
#pragma unroll
        for (int a = 0; a < R; ++a) {
          x[a] = 0;
          const int i = p0 + a;
          if (a >= r || m > i)
            continue;
          double v = m < p0 ? A[tri(i) + m] : (m == i ? 1.0 : 0.0);
#pragma unroll
          for (int b = 0; b < R; ++b)
            if (b < a && m <= p0 + b)
              v = fma(-Lp[a][b], x[b], v);
          x[a] = v * inv[a];
          A[tri(i) + m] = x[a];
        }
      }
      __syncthreads();
      // Rows below: S[i][m] −= Σ_{p in panel, p >= m} L[i][p] X[p][m] for m < p0 + r.
      const int top = p0 + r;
      for (int i = first(top, tr, TR); i < n; i += TR) {
        double li[R];
#pragma unroll
        for (int b = 0; b < R; ++b)
          li[b] = P[i * R + b];
        double *row = A + tri(i);
        const double *x0 = A + tri(p0); // panel row p0 of X (x1 .. x3: the next ones)
        int m = tc;
        if (r == R) { // columns left of the panel: no predicates, two per step
          const double *x1 = A + tri(p0 + 1), *x2 = A + tri(p0 + 2), *x3 = A + tri(p0 + 3);
          for (; m + TC < p0; m += 2 * TC) {
            double v = row[m], w = row[m + TC];
            v = fma(-li[0], x0[m], v);
            w = fma(-li[0], x0[m + TC], w);
            v = fma(-li[1], x1[m], v);
            w = fma(-li[1], x1[m + TC], w);
            v = fma(-li[2], x2[m], v);
            w = fma(-li[2], x2[m + TC], w);
            v = fma(-li[3], x3[m], v);
            w = fma(-li[3], x3[m + TC], w);
            row[m] = v;
            row[m + TC] = w;
          }
        }
        for (; m < top; m += TC) {
          double v = m < p0 ? row[m] : 0.0;
#pragma unroll
          for (int b = 0; b < R; ++b)
            if (b < r && m <= p0 + b)
              v = fma(-li[b], A[tri(p0 + b) + m], v);
          row[m] = v;
        }
      }
      __syncthreads();
    }
  }

  // Seed 001 §3: ‖e‖∞ of Rippa's LOOCV errors at ε; +inf when the system is unusable.
  __device__ double loocv_cost(double log_eps, double c0) {
    const double eps = exp(log_eps), cs = K::coord_scale(eps);
    assemble(cs * cs, 0.0);
    if (!cholesky())
      return __longlong_as_double(0x7ff0000000000000LL); // +inf
    invert_factor();
    // dv_k = Σ_{i≥k} (L⁻¹)_ik²; B = L⁻¹ F
    for (int k = tid; k < n; k += bs) {
      double acc = 0;
      for (int i = k; i < n; ++i) {
        const double v = A[tri(i) + k];
        acc = fma(v, v, acc);
      }
      dv[k] = acc;
      const double *row = A + tri(k);
      for (int q = 0; q < nc; ++q) {
        double y = 0;
        for (int m = 0; m <= k; ++m)
          y = fma(row[m], F[q * n + m], y);
        B[q * n + k] = y;
      }
    }
    __syncthreads();
    double e = 0, dmax = 0;
    for (int k = tid; k < n; k += bs) {
      dmax = fmax(dmax, dv[k]);
      for (int q = 0; q < nc; ++q) {
        double c = 0;
        for (int i = k; i < n; ++i)
          c = fma(A[tri(i) + k], B[q * n + i], c);
        e = fmax(e, fabs(c / dv[k]));
      }
    }
    dmax = block_max(dmax, red);
    e = block_max(e, red);
    if (!(1.0 / (c0 * dmax) > pum_min_rcond_loocv) || !isfinite(e))
      return __longlong_as_double(0x7ff0000000000000LL);
    return e;
  }

  // max_a,q |(Φ C − F)_aq| with Φ recomputed (no nugget).
  __device__ double residual(double c2) {
    double res = 0;
    for (int a = tid; a < n; a += bs) {
      // Constant indices (unrolled, guarded by nc): the sums stay in registers.
      double acc[pum_gpu_max_cols] = {0, 0, 0, 0};
      for (int b = 0; b < n; ++b) {
        const double v = phi(a, b, c2);
#pragma unroll
        for (int q = 0; q < pum_gpu_max_cols; ++q)
          if (q < nc)
            acc[q] = fma(v, C[q * n + b], acc[q]);
      }
#pragma unroll
      for (int q = 0; q < pum_gpu_max_cols; ++q)
        if (q < nc)
          res = fmax(res, fabs(acc[q] - F[q * n + a]));
    }
    return block_max(res, red);
  }

  __device__ double max_abs(const double *v, int len) {
    double m = 0;
    for (int a = tid; a < len; a += bs)
      m = fmax(m, fabs(v[a]));
    return block_max(m, red);
  }
};

template <class K> __global__ void __launch_bounds__(512) pum_fit_kernel(PumFitArgs a) {
  extern __shared__ double sm[];
  const int cell = a.list[blockIdx.x];
  Patch<K> P;
  P.n = a.cnt[cell];
  P.s = a.grid.s;
  P.nc = a.ncols;
  P.tid = threadIdx.x;
  P.bs = blockDim.x;
  P.TC = P.bs >= 256 ? 16 : 8; // 64: 8 × 8, 128: 16 × 8, 512: 32 × 16
  P.TR = P.bs / P.TC;
  P.tr = P.tid / P.TC;
  P.tc = P.tid % P.TC;
  const int n = P.n, s = P.s, nc = P.nc;
  P.X = sm;
  P.F = P.X + n * s;
  P.C = P.F + n * nc;
  P.B = P.C + n * nc;
  P.dv = P.B + n * nc;
  P.red = P.dv + n;
  P.P = P.red + reduce_slots;
  // The matrix: in shared memory, or (patches too large for it) in this block's global slot.
  P.A = a.work ? a.work + blockIdx.x * a.work_stride : P.P + n * R;
  // Local coordinates relative to the patch centre, and the values.
  double xi[3];
  std::int64_t rest = cell;
  for (int k = s - 1; k >= 0; --k) {
    xi[k] = spatial::centre_coord(rest % a.grid.d[k], a.grid.lo[k], a.grid.width[k]);
    rest /= a.grid.d[k];
  }
  const std::int64_t off = a.off[cell];
  for (int i = P.tid; i < n; i += P.bs) {
    for (int k = 0; k < s; ++k)
      P.X[k * n + i] = a.px[k * a.total + off + i] - xi[k];
    for (int q = 0; q < nc; ++q)
      P.F[q * n + i] = a.pv[q * a.total + off + i];
  }
  __syncthreads();
  const K kf{};
  constexpr double p0 = kdef::p_offset<K>();
  const double c0 = kf.value(p0);
  double eps = a.eps;
  if (a.loocv && n > 1) {
    const auto best = linalg::brent_minimize([&](double le) { return P.loocv_cost(le, c0); },
                                             a.log_eps_min, a.log_eps_max, pum_loocv_log_tol,
                                             a.loocv_iterations);
    eps = isfinite(best.fx) ? exp(best.x) : a.eps_max;
  }
  // The CPU path's acceptance: no nugget, then 1e-12 · K(0) growing ×100 up to 1e-2 · K(0); keep
  // the first that reproduces the data with small rounding noise, or else the closest.
  const double cs = K::coord_scale(eps), c2 = cs * cs;
  const double scale = fmax(1.0, fabs(c0));
  const double fmax_ = fmax(P.max_abs(P.F, n * nc), 2.2250738585072014e-308);
  double best_res = __longlong_as_double(0x7ff0000000000000LL), best_nugget = 0;
  bool have = false;
  double last_nug = 0;
  for (double nug = 0; nug <= 1e-2 * scale; nug = nug == 0 ? 1e-12 * scale : nug * 100) {
    last_nug = nug;
    P.assemble(c2, nug);
    if (!P.cholesky())
      continue;
    P.solve(P.F, P.C);
    const double res = P.residual(c2);
    const double cmax = P.max_abs(P.C, n * nc);
    const double rounding = 8.0 * n * 2.220446049250313e-16 * (c0 + nug) * cmax;
    if (res < best_res) {
      best_res = res;
      best_nugget = nug;
      have = true;
      for (int i = P.tid; i < n * nc; i += P.bs)
        P.B[i] = P.C[i];
      __syncthreads();
    }
    if (res <= pum_max_residual * fmax_ + rounding && rounding <= pum_max_noise * fmax_)
      break;
  }
  double *out = a.coef + off * nc;
  if (have) {
    for (int i = P.tid; i < n * nc; i += P.bs)
      out[i] = P.B[i];
  } else { // no factorisation succeeded: the diagonal solve of the CPU path, never NaN
    for (int i = P.tid; i < n * nc; i += P.bs)
      out[i] = P.F[i] / (c0 + last_nug);
    best_nugget = 1;
  }
  if (P.tid == 0) {
    a.eps_out[cell] = eps;
    a.regularised[cell] = best_nugget > 0;
  }
}

} // namespace

std::size_t pum_fit_smem_bytes(std::int64_t n, int s, int ncols, bool matrix) {
  return static_cast<std::size_t>(n * s + 3 * n * ncols + n + reduce_slots + n * R +
                                  (matrix ? n * (n + 1) / 2 : 0)) *
         sizeof(double);
}

void launch_pum_fit(const PumFitArgs &a, int threads, std::size_t smem_bytes, void *stream) {
  if (a.count == 0)
    return;
  kdef::visit_pd<double>(a.kernel, [&](auto kf) {
    using K = decltype(kf);
    auto *fn = &pum_fit_kernel<K>;
    cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         static_cast<int>(smem_bytes));
    fn<<<static_cast<unsigned>(a.count), threads, smem_bytes, static_cast<cudaStream_t>(stream)>>>(
        a);
  });
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(ErrorCode::device,
                std::string("PUM GPU fit: CUDA error at kernel launch: ") + cudaGetErrorString(e));
}

} // namespace ksum::detail
