// The local fits of RBF-PUM on the GPU: one thread block per patch, everything in shared memory
// (the matrix as a packed lower triangle, row-major: entry (i, j ≤ i) at i(i+1)/2 + j).
//   assembly  Φ_ab = φ(p0 + c² |x_a − x_b|²) (+ nugget on the diagonal)
//   Cholesky  right-looking, panels of R columns: every thread factors the R × R diagonal block
//             in registers, the panel rows are solved in parallel, then a rank-R trailing update
//   solves    forward and back substitution by one warp
//   LOOCV     per Brent step over log ε (the CPU's linalg::brent_minimize, run by every thread on
//             the same block-wide values) one elimination pass (eliminate()) gives (Φ⁻¹)_kk and
//             Φ⁻¹F, hence Rippa's e_k = c_k / (Φ⁻¹)_kk; the best step's Φ⁻¹F is kept
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

constexpr int R = 4;  // panel width of the Cholesky factorisation (fixed ε)
constexpr int E = 16; // largest panel width of the LOOCV elimination (at most 32: one warp factors)
// Shared scratch: block_max's per-warp values, or the elimination's two L_D⁻¹ with their failure
// flags (the current panel's and the next one's).
constexpr int reduce_slots = 2 * (E * E + 1) > 40 ? 2 * (E * E + 1) : 40;
static_assert(reduce_slots >= 2 * (E * E + 1) && reduce_slots >= 33);

__device__ __forceinline__ int tri(int i) {
  return i * (i + 1) / 2;
}

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
  double *X, *F, *C, *B, *dv, *red, *A, *P; // P: (n + nc) × E panel scratch (LOOCV)
  // LOOCV: the solution Φ⁻¹F (in C) at the best log ε evaluated so far, and its cost.
  double cached_cost, cached_log_eps;

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

  // Row i of the matrix extended by the value rows: i < n in the packed triangle, i = n + q (the
  // q-th value column as a row of length n) after it; row n + nc is eliminate()'s scratch row.
  __device__ double *row_ptr(int i) const {
    return i < n ? A + tri(i) : A + tri(n) + (i - n) * n;
  }

  // Warp 0: L_D⁻¹ of the panel's diagonal block D = S_KK (rows and columns [k0, k0 + r)) into
  // lis (row-major EP × EP, zero outside the panel), and lis[EP · EP] = 1 when a pivot is not
  // positive and finite. Lane a holds row a of D, factored in place column by column; then lane c
  // forms column c of L_D⁻¹ by forward substitution (row a of L_D from lane a).
  template <int EP> __device__ void factor_panel(int k0, double *lis) const {
    const int r = n - k0 < EP ? n - k0 : EP, a = tid;
    double d[EP], rla = 1;
#pragma unroll
    for (int c = 0; c < EP; ++c)
      d[c] = a < r && c <= a ? A[tri(k0 + a) + k0 + c] : (a == c ? 1.0 : 0.0);
    bool ok = true;
#pragma unroll
    for (int c = 0; c < EP; ++c) {
      const double piv = __shfl_sync(0xffffffffu, d[c], c);
      ok = ok && (c >= r || (piv > 0 && isfinite(piv)));
      const double rl = rsqrt(piv);
      if (a == c)
        rla = rl;
      const double l = a > c ? d[c] * rl : (a == c ? piv * rl : 0.0);
      d[c] = l;
#pragma unroll
      for (int k = c + 1; k < EP; ++k) {
        const double lk = __shfl_sync(0xffffffffu, l, k);
        if (a >= k)
          d[k] = fma(-l, lk, d[k]);
      }
    }
    double x[EP];
#pragma unroll
    for (int q = 0; q < EP; ++q) {
      double v = q == a ? 1.0 : 0.0;
#pragma unroll
      for (int b = 0; b < q; ++b)
        v = fma(-__shfl_sync(0xffffffffu, d[b], q), x[b], v);
      x[q] = v * __shfl_sync(0xffffffffu, rla, q);
    }
    if (a < EP)
#pragma unroll
      for (int q = 0; q < EP; ++q)
        lis[q * EP + a] = q < r && a < r && q >= a ? x[q] : 0.0;
    if (a == 0)
      lis[EP * EP] = ok ? 0.0 : 1.0;
  }

  // One pass that gives everything Rippa's formula needs: Gaussian elimination in Cholesky form
  // of [Φ I] extended by the rows Fᵀ, in place. Row i of the packed triangle holds, left of the
  // current panel, row i of the partial inverse factor Y (its 1 on the diagonal implicit) and,
  // from the panel on, the Schur complement (whose lower triangle is all that symmetry needs).
  // A panel K of EP pivots: D = S_KK = L_D L_Dᵀ and L_D⁻¹ (factor_panel), then
  //   rows below (i ≥ K, value rows included):  G_i = S_iK L_D⁻ᵀ
  //   the panel's rows become rows of X = L⁻¹:  X_K,j = L_D⁻¹ Y_K,j (j < K),  X_KK = L_D⁻¹
  //   Schur complement:                         S_ij −= G_i · G_j
  //   partial inverse rows:                     Y_ij −= G_i · X_K,j (j < K),  Y_iK = −G_i L_D⁻¹
  // Two barriers per panel. Phase 1 puts the panel values of every row / column j into P
  // (column-major: conflict-free reads). Phase 2 updates the rows below; there warp 0 looks ahead:
  // it updates the next panel's diagonal block first and factors it (into the other lis buffer)
  // while the other warps update the rest, 2 rows × 2 columns per thread at a time (P's values
  // serve both rows): pair m of the rows from the panel on goes to thread row m mod TR (in blocks
  // of 512 threads, warp 0's thread rows excluded).
  // Afterwards dv_k = Σ_i X_ik² = (Φ⁻¹)_kk (summed as the rows of X are finished) and the value
  // rows hold −(Φ⁻¹F)ᵀ. False (on every thread) when a pivot is not positive and finite.
  template <int EP> __device__ bool eliminate() {
    const int N = n + nc; // rows, value rows included
    for (int k = tid; k < n; k += bs)
      dv[k] = 0;
    if (tid < 32)
      factor_panel<EP>(0, red);
    __syncthreads();
    for (int k0 = 0, step = 0; k0 < n; k0 += EP, ++step) {
      const int r = n - k0 < EP ? n - k0 : EP, top = k0 + r;
      const double *lis = red + (step & 1) * (EP * EP + 1);
      double *lis_next = red + ((step + 1) & 1) * (EP * EP + 1);
      if (lis[EP * EP] != 0)
        return false; // every thread read the same flag: no barrier is left waiting
      // Phase 1: the panel values of every column / row j into P.
      for (int j = tid; j < N; j += bs) {
        double g[EP];
        if (j >= top || j < k0) {
          // Rows below: G_j = L_D⁻¹ S_Kj (S_jK from row j). Columns left of the panel:
          // X_K,j = L_D⁻¹ Y_K,j (column j of the panel's rows), final, written back and summed
          // into dv_j.
          double v[EP];
          if (j >= top) {
            const double *row = row_ptr(j) + k0;
#pragma unroll
            for (int c = 0; c < EP; ++c)
              v[c] = c < r ? row[c] : 0.0;
          } else {
#pragma unroll
            for (int c = 0; c < EP; ++c)
              v[c] = c < r ? A[tri(k0 + c) + j] : 0.0;
          }
#pragma unroll
          for (int q = 0; q < EP; ++q) {
            double x = 0;
#pragma unroll
            for (int c = 0; c <= q; ++c)
              x = fma(lis[q * EP + c], v[c], x);
            g[q] = x;
          }
          if (j < k0) {
            double dd = dv[j];
#pragma unroll
            for (int q = 0; q < EP; ++q) {
              if (q < r)
                A[tri(k0 + q) + j] = g[q];
              dd = fma(g[q], g[q], dd);
            }
            dv[j] = dd;
          }
        } else { // j in the panel: dv_j from X_KK = L_D⁻¹ (written in phase 2: D is being read)
          const int c = j - k0;
          double dd = 0;
#pragma unroll
          for (int q = 0; q < EP; ++q) {
            const double v = lis[q * EP + c];
            dd = fma(v, v, dd);
            g[q] = 0;
          }
          dv[j] = dd;
        }
#pragma unroll
        for (int q = 0; q < EP; ++q)
          P[q * N + j] = g[q];
      }
      __syncthreads();
      // Phase 2.
      const int next_end = top + EP < n ? top + EP : n; // the next panel's rows: [top, next_end)
      if (tid < 32) {
        // Warp 0: the next panel's diagonal block (Schur entries (i, j), top <= j <= i <
        // next_end), then its factorisation.
        for (int e = tid; e < EP * EP; e += 32) {
          const int i = top + e / EP, j = top + e % EP;
          if (i < next_end && j <= i) {
            double v = A[tri(i) + j];
#pragma unroll
            for (int q = 0; q < EP; ++q)
              v = fma(-P[q * N + i], P[q * N + j], v);
            A[tri(i) + j] = v;
          }
        }
        __syncwarp();
        if (top < n)
          factor_panel<EP>(top, lis_next);
      }
      // Blocks of 512 threads leave warp 0 to the look-ahead; in small blocks (small patches,
      // 2 or 4 warps) it takes its share of the rows as well once it is done.
      const int skip = bs > 128 ? 32 : 0; // threads kept out of the row updates
      if (tid >= skip) {
        for (int e = tid - skip; e < EP * EP; e += bs - skip) { // X_KK = L_D⁻¹
          const int q = e / EP, c = e % EP;
          if (q < r && c <= q)
            A[tri(k0 + q) + k0 + c] = lis[q * EP + c];
        }
        const int TRw = TR - skip / TC, trw = tr - skip / TC; // the thread rows taking part
        const int G = TC; // the column stride: a thread updates the columns ≡ tc (mod TC)
        const int off = tc;
        for (int i0 = top + 2 * trw; i0 < N; i0 += 2 * TRw) { // pairs of rows from top on
          const int i1 = i0 + 1;
          const bool schur0 = i0 >= next_end; // the next panel's block is warp 0's
          double *row0 = row_ptr(i0);
          const int end0 = i0 < n ? i0 + 1 : n;
          // An odd last row is paired with the scratch row N (G = 0), so every pair has two rows.
          double g0[EP], g1[EP];
#pragma unroll
          for (int q = 0; q < EP; ++q) {
            g0[q] = P[q * N + i0];
            g1[q] = i1 < N ? P[q * N + i1] : 0.0;
          }
          const bool schur1 = i1 >= next_end;
          double *row1 = row_ptr(i1);
          // Row i1 alone on the columns ≡ tc in [from, to).
          const auto update1 = [&](int from, int to) {
            for (int j = first(from, off, G); j < to; j += G) {
              double v = row1[j];
#pragma unroll
              for (int q = 0; q < EP; ++q)
                v = fma(-g1[q], P[q * N + j], v);
              row1[j] = v;
            }
          };
          // Both rows on the columns ≡ tc in [from, to), two columns per step.
          const auto update2 = [&](int from, int to) {
            int j = first(from, off, G);
            for (; j + G < to; j += 2 * G) {
              double v00 = row0[j], v01 = row0[j + G], v10 = row1[j], v11 = row1[j + G];
#pragma unroll
              for (int q = 0; q < EP; ++q) {
                const double pa = P[q * N + j], pb = P[q * N + j + G];
                v00 = fma(-g0[q], pa, v00);
                v01 = fma(-g0[q], pb, v01);
                v10 = fma(-g1[q], pa, v10);
                v11 = fma(-g1[q], pb, v11);
              }
              row0[j] = v00;
              row0[j + G] = v01;
              row1[j] = v10;
              row1[j + G] = v11;
            }
            if (j < to) {
              double v0 = row0[j], v1 = row1[j];
#pragma unroll
              for (int q = 0; q < EP; ++q) {
                const double pa = P[q * N + j];
                v0 = fma(-g0[q], pa, v0);
                v1 = fma(-g1[q], pa, v1);
              }
              row0[j] = v0;
              row1[j] = v1;
            }
          };
          update2(0, k0);
          if (schur0) // then schur1 too
            update2(top, end0);
          else if (schur1) // i0 is the next panel's last row, i1 the first after it
            update1(top, end0);
          if (schur1 && i1 < n) // row i1's last column, i1 itself
            update1(i1, i1 + 1);
          for (int j = first(k0, off, G); j < top; j += G) { // Y_iK = −G_i L_D⁻¹
            const int c = j - k0;
            double v0 = 0, v1 = 0;
#pragma unroll
            for (int q = 0; q < EP; ++q) {
              const double l = lis[q * EP + c]; // zero above the diagonal
              v0 = fma(-g0[q], l, v0);
              v1 = fma(-g1[q], l, v1);
            }
            row0[j] = v0;
            row1[j] = v1;
          }
        }
      }
      __syncthreads();
    }
    return true;
  }

  // Seed 001 §3: ‖e‖∞ of Rippa's LOOCV errors at ε; +inf when the system is unusable.
  __device__ double loocv_cost(double log_eps, double c0) {
    const double eps = exp(log_eps), cs = K::coord_scale(eps);
    assemble(cs * cs, 0.0);
    for (int i = tid; i < n * nc; i += bs)
      A[tri(n) + i] = F[i]; // the value rows
    __syncthreads();
    // Panels of 16 in blocks of 512 threads (large patches); small patches (2 or 4 warps, a
    // few panels, little to update) do better with panels of 8.
    if (!(bs > 128 ? eliminate<16>() : eliminate<8>()))
      return __longlong_as_double(0x7ff0000000000000LL); // +inf
    double e = 0, dmax = 0;
    for (int k = tid; k < n; k += bs) {
      dmax = fmax(dmax, dv[k]);
      for (int q = 0; q < nc; ++q) // c_kq = −(value row q)_k
        e = fmax(e, fabs(A[tri(n) + q * n + k] / dv[k]));
    }
    dmax = block_max(dmax, red);
    e = block_max(e, red);
    if (!(1.0 / (c0 * dmax) > pum_min_rcond_loocv) || !isfinite(e))
      return __longlong_as_double(0x7ff0000000000000LL);
    if (e <= cached_cost) { // Brent's best so far (ties: the newer, as Brent): keep Φ⁻¹F
      for (int i = tid; i < n * nc; i += bs)
        C[i] = -A[tri(n) + i];
      cached_cost = e;
      cached_log_eps = log_eps;
      __syncthreads();
    }
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
  P.A = a.work ? a.work + blockIdx.x * a.work_stride : P.P + (a.loocv ? (n + nc) * E : 0);
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
  bool cached = false; // C already holds Φ⁻¹F at eps, from the LOOCV search
  P.cached_cost = __longlong_as_double(0x7ff0000000000000LL);
  P.cached_log_eps = 0;
  if (a.loocv && n > 1) {
    const auto best =
        linalg::brent_minimize([&](double le) { return P.loocv_cost(le, c0); }, a.log_eps_min,
                               a.log_eps_max, pum_loocv_log_tol, a.loocv_iterations);
    eps = isfinite(best.fx) ? exp(best.x) : a.eps_max;
    cached = isfinite(best.fx) && best.x == P.cached_log_eps;
  }
  // The CPU path's acceptance: no nugget, then 1e-12 · K(0) growing ×100 up to 1e-2 · K(0); keep
  // the first that reproduces the data with small rounding noise, or else the closest. With LOOCV
  // the search's own solution at the chosen ε is tried first (no nugget), then the ladder.
  const double cs = K::coord_scale(eps), c2 = cs * cs;
  const double scale = fmax(1.0, fabs(c0));
  const double fmax_ = fmax(P.max_abs(P.F, n * nc), 2.2250738585072014e-308);
  double best_res = __longlong_as_double(0x7ff0000000000000LL), best_nugget = 0;
  bool have = false;
  double last_nug = 0;
  // Judges the solution in C for the nugget nug; true: accepted.
  const auto judge = [&](double nug) {
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
    return res <= pum_max_residual * fmax_ + rounding && rounding <= pum_max_noise * fmax_;
  };
  if (!(cached && judge(0.0))) {
    for (double nug = 0; nug <= 1e-2 * scale; nug = nug == 0 ? 1e-12 * scale : nug * 100) {
      last_nug = nug;
      P.assemble(c2, nug);
      if (!P.cholesky())
        continue;
      P.solve(P.F, P.C);
      if (judge(nug))
        break;
    }
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

std::int64_t pum_fit_matrix_doubles(std::int64_t n, int ncols, bool loocv) {
  // LOOCV: the value rows after the triangle, and a scratch row (partner of an odd last row).
  return n * (n + 1) / 2 + (loocv ? n * (ncols + 1) : 0);
}

std::size_t pum_fit_smem_bytes(std::int64_t n, int s, int ncols, bool loocv, bool matrix) {
  return static_cast<std::size_t>(n * s + 3 * n * ncols + n + reduce_slots +
                                  (loocv ? (n + ncols) * E : 0) +
                                  (matrix ? pum_fit_matrix_doubles(n, ncols, loocv) : 0)) *
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
