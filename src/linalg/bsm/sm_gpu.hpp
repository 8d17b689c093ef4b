#pragma once
// SVSM, BSM and RMBSM (seed 004 Paper III, Algorithms 1–3) over GpuOps (gpu_ops.hpp): the
// recursions of sm.cpp step for step, with its loops over host memory replaced by cuBLAS calls
// (dgmm for A0⁻¹ and R's diagonal, geam for transposes, strided copies), and the Q_k = R P_k
// products and the final A0⁻¹ U R⁻¹ as strided-batched GEMMs over R's s × s diagonal blocks.
// Included by bsm_gpu.cpp only (CUDA builds).
#include "linalg/bsm/gpu_ops.hpp"
#include "linalg/bsm/sm.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ksum::bsm::gpu {

using detail::DeviceArray;

// A0⁻¹ on the device: identity or diagonal (the vector d of A0⁻¹'s diagonal, and −d), dense
// (uploaded), or the caller's host operator applied to columns copied off and back on.
template <std::floating_point T> struct DevA0 {
  using Kind = typename A0Inverse<T>::Kind;
  Kind kind = Kind::identity;
  std::int64_t n = 0;
  DeviceArray<T> d, nd, dense;
  const ApplyInverse<T> *fn = nullptr;

  // diag: A0⁻¹'s diagonal on the host (identity and diagonal kinds).
  DevA0(GpuOps<T> &ops, const A0Inverse<T> &a0, const std::vector<T> &diag)
      : kind(a0.kind), n(a0.n), fn(a0.fn) {
    if (kind == Kind::identity || kind == Kind::diagonal) {
      std::vector<T> neg(diag.size());
      for (std::size_t i = 0; i < diag.size(); ++i)
        neg[i] = -diag[i];
      d.reserve(n);
      nd.reserve(n);
      ops.upload(n, 1, diag.data(), n, d.ptr, n);
      ops.upload(n, 1, neg.data(), n, nd.ptr, n);
    } else if (kind == Kind::dense) {
      dense.reserve(n * n);
      ops.upload(n, n, a0.dense, a0.ld, dense.ptr, n);
    }
  }

  // out = A0⁻¹ in (transpose: A0⁻ᵀ in), n × cols; in and out do not overlap.
  void apply(GpuOps<T> &ops, bool transpose, const T *in, std::int64_t ld_in, T *out,
             std::int64_t ld_out, std::int64_t cols) const {
    switch (kind) {
    case Kind::identity:
      ops.copy(n, cols, in, ld_in, out, ld_out);
      return;
    case Kind::diagonal:
      ops.flops += double(n) * double(cols);
      ops.dgmm(true, n, cols, in, ld_in, d.ptr, out, ld_out);
      return;
    case Kind::dense:
      ops.gemm(transpose, false, n, cols, n, T(1), dense.ptr, n, in, ld_in, T(0), out, ld_out);
      return;
    case Kind::op: {
      ops.flops += 2.0 * double(n) * double(n) * double(cols);
      std::vector<T> hin(static_cast<std::size_t>(n * cols)), hout(hin.size());
      ops.download(n, cols, in, ld_in, hin.data(), n);
      (*fn)(transpose, hin.data(), n, hout.data(), n, cols);
      ops.upload(n, cols, hout.data(), n, out, ld_out);
      return;
    }
    }
  }

  // out (n × n, leading dimension n) = A0⁻¹.
  void materialize(GpuOps<T> &ops, T *out) const {
    switch (kind) {
    case Kind::identity:
    case Kind::diagonal:
      ops.set_diagonal(n, d.ptr, out, n);
      return;
    case Kind::dense:
      ops.copy(n, n, dense.ptr, n, out, n);
      return;
    case Kind::op: {
      std::vector<T> eye(static_cast<std::size_t>(n * n), T(0)), h(eye.size());
      for (std::int64_t i = 0; i < n; ++i)
        eye[static_cast<std::size_t>(i * n + i)] = T(1);
      (*fn)(false, eye.data(), n, h.data(), n, n);
      ops.upload(n, n, h.data(), n, out, n);
      return;
    }
    }
  }
};

// sm.cpp's pivot measure of R_k (factored in place to R_k⁻¹) and breakdown test.
template <std::floating_point T>
double pivot_measure(GpuOps<T> &ops, std::int64_t s, T *R, std::int64_t ldr, double scale) {
  const BlockFactor f = ops.invert_block(s, R, ldr);
  if (f.singular || !std::isfinite(f.min_pivot))
    return 0;
  return f.min_pivot / scale;
}

inline bool broke(double rho, double threshold) {
  return rho == 0 || rho <= threshold;
}

// U's storage: X itself when the caller no longer needs X (U_k starts as X_k and X_k is read
// only before U_k changes), else a copy.
template <std::floating_point T>
T *u_storage(GpuOps<T> &ops, T *X, bool x_scratch, std::int64_t n, std::int64_t m,
             DeviceArray<T> &copy) {
  if (x_scratch)
    return X;
  copy.reserve(n * m);
  ops.copy(n, m, X, n, copy.ptr, n);
  return copy.ptr;
}

// Paper III eq. (10): out = A0⁻¹ − AUR (A0⁻ᵀ V)ᵀ, AUR = A0⁻¹ U R⁻¹; BV is n × m scratch.
template <std::floating_point T>
void assemble(GpuOps<T> &ops, const DevA0<T> &a0, const T *AUR, const T *V, std::int64_t m, T *BV,
              DeviceArray<T> &out) {
  const std::int64_t n = a0.n;
  a0.apply(ops, true, V, n, BV, n, m);
  out.reserve(n * n);
  a0.materialize(ops, out.ptr);
  ops.gemm(false, true, n, n, m, T(-1), AUR, n, BV, n, T(1), out.ptr, n);
}

// Algorithm 1 (sm.cpp's svsm); R's diagonal r_k = 1 / (1 + v_kᵀ A0⁻¹ x_k) kept on both sides.
template <std::floating_point T>
SmResult<T> svsm(GpuOps<T> &ops, const DevA0<T> &a0, T *X, bool x_scratch, const T *Y,
                 std::int64_t m, double threshold, DeviceArray<T> &out) {
  const std::int64_t n = a0.n;
  SmResult<T> res;
  DeviceArray<T> Ucopy, V, AU, w, z, c, c2, dr;
  T *U = u_storage(ops, X, x_scratch, n, m, Ucopy);
  V.reserve(n * m);
  ops.copy(n, m, Y, n, V.ptr, n);
  w.reserve(n);
  z.reserve(n);
  c.reserve(m);
  c2.reserve(m);
  dr.reserve(m);
  std::vector<T> r(static_cast<std::size_t>(m));
  for (std::int64_t k = 0; k < m; ++k) {
    T *uk = U + k * n, *vk = V.ptr + k * n;
    a0.apply(ops, false, X + k * n, n, w.ptr, n, 1);
    a0.apply(ops, true, Y + k * n, n, z.ptr, n, 1);
    if (k > 0) {
      ops.gemv(true, n, k, T(1), V.ptr, n, w.ptr, T(0), c.ptr);
      ops.dgmm(true, k, 1, c.ptr, k, dr.ptr, c2.ptr, k);
      ops.gemv(false, n, k, T(-1), U, n, c2.ptr, T(1), uk);
      ops.gemv(true, n, k, T(1), U, n, z.ptr, T(0), c.ptr);
      ops.dgmm(true, k, 1, c.ptr, k, dr.ptr, c2.ptr, k);
      ops.gemv(false, n, k, T(-1), V.ptr, n, c2.ptr, T(1), vk);
    }
    const T d = T(1) + ops.dot(n, vk, w.ptr);
    const double scale = 1 + ops.frobenius(n, 1, vk, n) * ops.frobenius(n, 1, w.ptr, n);
    const double rho = std::isfinite(double(d)) ? std::abs(double(d)) / scale : 0.0;
    res.min_pivot = std::min(res.min_pivot, rho);
    if (broke(rho, threshold)) {
      res.broke_down = true;
      res.breakdown = {k + 1, k, 1, rho};
      return res;
    }
    r[static_cast<std::size_t>(k)] = T(1) / d;
    ops.upload(1, 1, &r[static_cast<std::size_t>(k)], 1, dr.ptr + k, 1);
  }
  AU.reserve(n * m);
  a0.apply(ops, false, U, n, AU.ptr, n, m);
  ops.dgmm(false, n, m, AU.ptr, n, dr.ptr, U, n); // U ← A0⁻¹ U R (U is not needed any more)
  assemble(ops, a0, U, V.ptr, m, AU.ptr, out);
  return res;
}

// Algorithm 2 (sm.cpp's block_sm). Every block before c0 is a full s × s one (only the last block
// is short), so Q = R P over them is one strided-batched GEMM.
template <std::floating_point T>
SmResult<T> block_sm(GpuOps<T> &ops, const DevA0<T> &a0, T *X, bool x_scratch, const T *Y,
                     std::int64_t m, std::int64_t s, double threshold, DeviceArray<T> &out) {
  const std::int64_t n = a0.n;
  SmResult<T> res;
  DeviceArray<T> Ucopy, V, AU, Rinv, W, P, Q;
  T *U = u_storage(ops, X, x_scratch, n, m, Ucopy);
  V.reserve(n * m);
  ops.copy(n, m, Y, n, V.ptr, n);
  AU.reserve(n * m);
  Rinv.reserve(s * m);
  W.reserve(n * s);
  P.reserve(m * s);
  Q.reserve(m * s);
  for (std::int64_t c0 = 0, k = 1; c0 < m; c0 += s, ++k) {
    const std::int64_t sk = std::min(s, m - c0), nb = c0 / s;
    const T *Xk = X + c0 * n, *Yk = Y + c0 * n;
    T *Uk = U + c0 * n, *Vk = V.ptr + c0 * n, *AUk = AU.ptr + c0 * n;
    if (c0 > 0) {
      // U_k = X_k − U(:,1:c0) R P_k,  P_k = V(:,1:c0)ᵀ A0⁻¹ X_k   (eq. (7))
      a0.apply(ops, false, Xk, n, W.ptr, n, sk);
      ops.gemm(true, false, c0, sk, n, T(1), V.ptr, n, W.ptr, n, T(0), P.ptr, m);
      ops.gemm_strided(false, false, s, sk, s, T(1), Rinv.ptr, s, s * s, P.ptr, m, s, T(0), Q.ptr,
                       m, s, nb);
      ops.gemm(false, false, n, sk, c0, T(-1), U, n, Q.ptr, m, T(1), Uk, n);
      // V_k = Y_k − V(:,1:c0) Rᵀ P_k,  P_k = U(:,1:c0)ᵀ A0⁻ᵀ Y_k   (eq. (8))
      a0.apply(ops, true, Yk, n, W.ptr, n, sk);
      ops.gemm(true, false, c0, sk, n, T(1), U, n, W.ptr, n, T(0), P.ptr, m);
      ops.gemm_strided(true, false, s, sk, s, T(1), Rinv.ptr, s, s * s, P.ptr, m, s, T(0), Q.ptr, m,
                       s, nb);
      ops.gemm(false, false, n, sk, c0, T(-1), V.ptr, n, Q.ptr, m, T(1), Vk, n);
    }
    // R0 = I_s + Y_kᵀ A0⁻¹ U_k (eq. (9)), then R0⁻¹.
    a0.apply(ops, false, Uk, n, AUk, n, sk);
    T *R = Rinv.ptr + c0 * s;
    ops.set_diagonal(sk, nullptr, R, s);
    ops.gemm(true, false, sk, sk, n, T(1), Yk, n, AUk, n, T(1), R, s);
    const double scale = 1 + ops.frobenius(n, sk, Yk, n) * ops.frobenius(n, sk, AUk, n);
    const double rho = pivot_measure(ops, sk, R, s, scale);
    res.min_pivot = std::min(res.min_pivot, rho);
    if (broke(rho, threshold)) {
      res.broke_down = true;
      res.breakdown = {k, c0, sk, rho};
      return res;
    }
  }
  // A0⁻¹ U R⁻¹ into U's storage: the full blocks batched, the short last one alone.
  const std::int64_t full = m / s, c0 = full * s;
  ops.gemm_strided(false, false, n, s, s, T(1), AU.ptr, n, n * s, Rinv.ptr, s, s * s, T(0), U, n,
                   n * s, full);
  if (c0 < m)
    ops.gemm(false, false, n, m - c0, m - c0, T(1), AU.ptr + c0 * n, n, Rinv.ptr + c0 * s, s, T(0),
             U + c0 * n, n);
  assemble(ops, a0, U, V.ptr, m, AU.ptr, out);
  return res;
}

// Algorithm 3 (sm.cpp's reduced_memory_sm): H = Σ_k U_k R_k⁻¹ V_kᵀ accumulated in `out`.
template <std::floating_point T>
SmResult<T> reduced_memory_sm(GpuOps<T> &ops, const DevA0<T> &a0, const T *X, const T *Y,
                              std::int64_t m, std::int64_t s, double threshold,
                              DeviceArray<T> &out) {
  const std::int64_t n = a0.n;
  SmResult<T> res;
  out.reserve(n * n);
  T *H = out.ptr;
  ops.zero(n, n, H, n);
  DeviceArray<T> U, V, W, AU, R;
  U.reserve(n * s);
  V.reserve(n * s);
  W.reserve(n * s);
  AU.reserve(n * s);
  R.reserve(s * s);
  for (std::int64_t c0 = 0, k = 1; c0 < m; c0 += s, ++k) {
    const std::int64_t sk = std::min(s, m - c0);
    const T *Xk = X + c0 * n, *Yk = Y + c0 * n;
    ops.copy(n, sk, Xk, n, U.ptr, n);
    ops.copy(n, sk, Yk, n, V.ptr, n);
    if (c0 > 0) { // H = 0 before the first step: U = X_1, V = Y_1
      a0.apply(ops, false, Xk, n, W.ptr, n, sk);
      ops.gemm(false, false, n, sk, n, T(-1), H, n, W.ptr, n, T(1), U.ptr, n);
      a0.apply(ops, true, Yk, n, W.ptr, n, sk);
      ops.gemm(true, false, n, sk, n, T(-1), H, n, W.ptr, n, T(1), V.ptr, n);
    }
    a0.apply(ops, false, U.ptr, n, AU.ptr, n, sk);
    ops.set_diagonal(sk, nullptr, R.ptr, s);
    ops.gemm(true, false, sk, sk, n, T(1), Yk, n, AU.ptr, n, T(1), R.ptr, s);
    const double scale = 1 + ops.frobenius(n, sk, Yk, n) * ops.frobenius(n, sk, AU.ptr, n);
    const double rho = pivot_measure(ops, sk, R.ptr, s, scale);
    res.min_pivot = std::min(res.min_pivot, rho);
    if (broke(rho, threshold)) {
      res.broke_down = true;
      res.breakdown = {k, c0, sk, rho};
      return res;
    }
    // H += U R0⁻¹ Vᵀ
    ops.gemm(false, false, n, sk, sk, T(1), U.ptr, n, R.ptr, s, T(0), W.ptr, n);
    ops.gemm(false, true, n, n, sk, T(1), W.ptr, n, V.ptr, n, T(1), H, n);
  }
  using Kind = typename A0Inverse<T>::Kind;
  if (a0.kind == Kind::identity || a0.kind == Kind::diagonal) {
    // A0⁻¹ − A0⁻¹ H A0⁻¹ = D − D H D, s columns at a time through W (dgmm out of place).
    ops.flops += 3.0 * double(n) * double(n);
    for (std::int64_t j0 = 0; j0 < n; j0 += s) {
      const std::int64_t cb = std::min(s, n - j0);
      ops.dgmm(true, n, cb, H + j0 * n, n, a0.nd.ptr, W.ptr, n);
      ops.dgmm(false, n, cb, W.ptr, n, a0.d.ptr + j0, H + j0 * n, n);
    }
    ops.axpy(n, T(1), a0.d.ptr, 1, H, n + 1);
    return res;
  }
  // G = A0⁻¹ H, then A0⁻¹ − G A0⁻¹ with G A0⁻¹ = (A0⁻ᵀ Gᵀ)ᵀ.
  DeviceArray<T> G;
  G.reserve(n * n);
  a0.apply(ops, false, H, n, G.ptr, n, n);
  ops.transpose(n, n, G.ptr, n, H, n);
  a0.apply(ops, true, H, n, G.ptr, n, n);
  a0.materialize(ops, H);
  ops.geam(false, true, n, n, T(1), H, n, T(-1), G.ptr, n, H, n); // in place: C = A, op N
  return res;
}

} // namespace ksum::bsm::gpu
