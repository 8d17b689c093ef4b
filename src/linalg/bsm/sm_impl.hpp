#pragma once
// SVSM, BSM and RMBSM (seed 004 Paper III, Algorithms 1–3), in general (A0 + X Yᵀ) and in the
// standard case (A0 = diag(a0), X = A − A0, Y = I), written once over an ops type (sm.hpp): CpuOps
// (instantiated in sm.cpp and standard.cpp) and GpuOps (bsm_gpu.cpp, CUDA builds). Every buffer
// comes from ops.alloc and every operation on it is an ops member, so the same code runs on host
// or device memory.
#include "linalg/bsm/sm.hpp"

#include <algorithm>
#include <cmath>

namespace ksum::bsm {

namespace sm_detail {

// The last step of every general variant (Paper III eq. (10)): A⁻¹ = A0⁻¹ − (A0⁻¹U R⁻¹)(A0⁻ᵀV)ᵀ,
// with AUR = A0⁻¹ U R⁻¹ (n × m) already formed and V (n × m).
template <class Ops, class A0>
typename Ops::Buffer assemble(Ops &ops, const A0 &a0, const OpsValue<Ops> *AUR,
                              const OpsValue<Ops> *V, std::int64_t m) {
  using T = OpsValue<Ops>;
  const std::int64_t n = a0.n;
  auto BV = ops.alloc(n, m);
  a0.apply(ops, true, V, n, BV.data(), n, m);
  auto out = ops.alloc(n, n);
  a0.materialize(ops, out.data());
  ops.gemm(false, true, n, n, m, T(-1), AUR, n, BV.data(), n, T(1), out.data(), n);
  return out;
}

// U_k = X_k for the columns [c0, c0 + sk) in the standard case: A's columns with A0 taken off
// their diagonal entries.
template <class Ops>
void load_x(Ops &ops, const StandardSplit<OpsValue<Ops>> &sp, std::int64_t c0, std::int64_t sk,
            OpsValue<Ops> *out) {
  ops.copy(sp.n, sk, sp.A + c0 * sp.lda, sp.lda, out, sp.n);
  ops.subtract_diagonal(sk, sp.a0 + c0, out + c0, sp.n);
}

// R_k = I + Y_kᵀ A0⁻¹ U_k (eq. (9)) with Y = I, from W = A0⁻¹ U_k (rows c0 … c0 + sk), factored
// in place to R_k⁻¹; returns the pivot measure with ‖Y_k‖_F = √sk.
template <class Ops>
double factor_r(Ops &ops, std::int64_t n, std::int64_t c0, std::int64_t sk, const OpsValue<Ops> *W,
                OpsValue<Ops> *R, std::int64_t ldr) {
  using T = OpsValue<Ops>;
  ops.copy(sk, sk, W + c0, n, R, ldr);
  ops.shift_diagonal(sk, T(1), R, ldr);
  const double scale = 1 + std::sqrt(double(sk)) * ops.frobenius(n, sk, W, n);
  return factor_pivot(ops, sk, R, ldr, scale);
}

// Records step k's pivot measure rho in res; true (with res's breakdown filled in) when the step
// breaks down at `threshold`.
template <class Result>
bool broke_down(Result &res, double threshold, std::int64_t step, std::int64_t column,
                std::int64_t size, double rho) {
  res.min_pivot = std::min(res.min_pivot, rho);
  if (!breaks(rho, threshold))
    return false;
  res.broke_down = true;
  res.breakdown = {step, column, size, rho};
  return true;
}

} // namespace sm_detail

// Algorithm 1. The inner loop over l uses only the original columns X(:,k), Y(:,k) in its dot
// products, so the k − 1 updates of U(:,k) (and of V(:,k)) are one pair of gemv each.
template <class Ops, class A0>
OpsResult<Ops> svsm(Ops &ops, const A0 &a0, const OpsValue<Ops> *X, const OpsValue<Ops> *Y,
                    std::int64_t m, double threshold) {
  using T = OpsValue<Ops>;
  const std::int64_t n = a0.n;
  OpsResult<Ops> res;
  auto U = ops.alloc(n, m, false), V = ops.alloc(n, m, false), r = ops.alloc(m, 1),
       w = ops.alloc(n, 1), z = ops.alloc(n, 1), c = ops.alloc(m, 1), rc = ops.alloc(m, 1);
  ops.copy(n, m, X, n, U.data(), n);
  ops.copy(n, m, Y, n, V.data(), n);
  for (std::int64_t k = 0; k < m; ++k) {
    T *uk = U.data() + k * n, *vk = V.data() + k * n;
    a0.apply(ops, false, X + k * n, n, w.data(), n, 1); // A0⁻¹ X(:,k)
    a0.apply(ops, true, Y + k * n, n, z.data(), n, 1);  // A0⁻ᵀ Y(:,k)
    if (k > 0) {
      // c_l = (V(:,l)ᵀ A0⁻¹ X(:,k)) R(l,l);  U(:,k) −= Σ_l c_l U(:,l)
      ops.gemv(true, n, k, T(1), V.data(), n, w.data(), T(0), c.data());
      ops.scale_rows(k, 1, r.data(), c.data(), m, rc.data(), m);
      ops.gemv(false, n, k, T(-1), U.data(), n, rc.data(), T(1), uk);
      // c_l = (Y(:,k)ᵀ A0⁻¹ U(:,l)) R(l,l);  V(:,k) −= Σ_l c_l V(:,l)
      ops.gemv(true, n, k, T(1), U.data(), n, z.data(), T(0), c.data());
      ops.scale_rows(k, 1, r.data(), c.data(), m, rc.data(), m);
      ops.gemv(false, n, k, T(-1), V.data(), n, rc.data(), T(1), vk);
    }
    // R(k,k) = 1 / (1 + V(:,k)ᵀ A0⁻¹ X(:,k))
    const T d = T(1) + ops.dot(n, vk, w.data());
    const double scale = 1 + ops.frobenius(n, 1, vk, n) * ops.frobenius(n, 1, w.data(), n);
    const double rho = std::isfinite(double(d)) ? std::abs(double(d)) / scale : 0.0;
    if (sm_detail::broke_down(res, threshold, k + 1, k, 1, rho))
      return res;
    ops.store(r.data() + k, T(1) / d);
  }
  // A0⁻¹ U R, then eq. (3).
  auto AU = ops.alloc(n, m, false), AUR = ops.alloc(n, m, false);
  a0.apply(ops, false, U.data(), n, AU.data(), n, m);
  ops.scale_cols(n, m, r.data(), AU.data(), n, AUR.data(), n);
  res.inverse = sm_detail::assemble(ops, a0, AUR.data(), V.data(), m);
  return res;
}

// Algorithm 2. R = diag(R_1⁻¹, …, R_p⁻¹) is kept as its diagonal blocks (s × s each, the last one
// m mod s wide when s does not divide m), so Q_k = R P_k costs the 2(k−1)s³ of Paper III Table 1.
template <class Ops, class A0>
OpsResult<Ops> block_sm(Ops &ops, const A0 &a0, const OpsValue<Ops> *X, const OpsValue<Ops> *Y,
                        std::int64_t m, std::int64_t s, double threshold) {
  using T = OpsValue<Ops>;
  const std::int64_t n = a0.n;
  OpsResult<Ops> res;
  auto U = ops.alloc(n, m, false), V = ops.alloc(n, m, false), AU = ops.alloc(n, m),
       Rinv = ops.alloc(s, m), W = ops.alloc(n, s), P = ops.alloc(m, s), Q = ops.alloc(m, s);
  ops.copy(n, m, X, n, U.data(), n);
  ops.copy(n, m, Y, n, V.data(), n);
  for (std::int64_t c0 = 0, k = 1; c0 < m; c0 += s, ++k) {
    const std::int64_t sk = std::min(s, m - c0);
    const T *Xk = X + c0 * n, *Yk = Y + c0 * n;
    T *Uk = U.data() + c0 * n, *Vk = V.data() + c0 * n, *AUk = AU.data() + c0 * n;
    if (c0 > 0) {
      // U_k = X_k − U(:,1:c0) R P_k,  P_k = V(:,1:c0)ᵀ A0⁻¹ X_k   (eq. (7))
      a0.apply(ops, false, Xk, n, W.data(), n, sk);
      ops.gemm(true, false, c0, sk, n, T(1), V.data(), n, W.data(), n, T(0), P.data(), m);
      for (std::int64_t ci = 0; ci < c0; ci += s)
        ops.gemm(false, false, std::min(s, c0 - ci), sk, std::min(s, c0 - ci), T(1),
                 Rinv.data() + ci * s, s, P.data() + ci, m, T(0), Q.data() + ci, m);
      ops.gemm(false, false, n, sk, c0, T(-1), U.data(), n, Q.data(), m, T(1), Uk, n);
      // V_k = Y_k − V(:,1:c0) Rᵀ P_k,  P_k = U(:,1:c0)ᵀ A0⁻ᵀ Y_k   (eq. (8))
      a0.apply(ops, true, Yk, n, W.data(), n, sk);
      ops.gemm(true, false, c0, sk, n, T(1), U.data(), n, W.data(), n, T(0), P.data(), m);
      for (std::int64_t ci = 0; ci < c0; ci += s)
        ops.gemm(true, false, std::min(s, c0 - ci), sk, std::min(s, c0 - ci), T(1),
                 Rinv.data() + ci * s, s, P.data() + ci, m, T(0), Q.data() + ci, m);
      ops.gemm(false, false, n, sk, c0, T(-1), V.data(), n, Q.data(), m, T(1), Vk, n);
    }
    // R0 = I_s + Y_kᵀ A0⁻¹ U_k (eq. (9)), then R0⁻¹.
    a0.apply(ops, false, Uk, n, AUk, n, sk);
    T *R = Rinv.data() + c0 * s;
    ops.set_identity(sk, R, s);
    ops.gemm(true, false, sk, sk, n, T(1), Yk, n, AUk, n, T(1), R, s);
    const double scale = 1 + ops.frobenius(n, sk, Yk, n) * ops.frobenius(n, sk, AUk, n);
    const double rho = factor_pivot(ops, sk, R, s, scale);
    if (sm_detail::broke_down(res, threshold, k, c0, sk, rho))
      return res;
  }
  // A0⁻¹ U R⁻¹ block by block into U's storage (U is no longer needed), then eq. (10).
  for (std::int64_t c0 = 0; c0 < m; c0 += s) {
    const std::int64_t sk = std::min(s, m - c0);
    ops.gemm(false, false, n, sk, sk, T(1), AU.data() + c0 * n, n, Rinv.data() + c0 * s, s, T(0),
             U.data() + c0 * n, n);
  }
  res.inverse = sm_detail::assemble(ops, a0, U.data(), V.data(), m);
  return res;
}

// Algorithm 3: only H = Σ_k U_k R_k⁻¹ V_kᵀ (n × n) is kept; U_k, V_k are recomputed from H
// (U_k = X_k − H A0⁻¹ X_k, V_k = Y_k − Hᵀ A0⁻ᵀ Y_k), and A⁻¹ = A0⁻¹ − A0⁻¹ H A0⁻¹.
template <class Ops, class A0>
OpsResult<Ops> reduced_memory_sm(Ops &ops, const A0 &a0, const OpsValue<Ops> *X,
                                 const OpsValue<Ops> *Y, std::int64_t m, std::int64_t s,
                                 double threshold) {
  using T = OpsValue<Ops>;
  const std::int64_t n = a0.n;
  OpsResult<Ops> res;
  auto H = ops.alloc(n, n), U = ops.alloc(n, s), V = ops.alloc(n, s), W = ops.alloc(n, s),
       AU = ops.alloc(n, s), R = ops.alloc(s, s);
  for (std::int64_t c0 = 0, k = 1; c0 < m; c0 += s, ++k) {
    const std::int64_t sk = std::min(s, m - c0);
    const T *Xk = X + c0 * n, *Yk = Y + c0 * n;
    ops.copy(n, sk, Xk, n, U.data(), n);
    ops.copy(n, sk, Yk, n, V.data(), n);
    if (c0 > 0) { // H = 0 before the first step: U = X_1, V = Y_1
      a0.apply(ops, false, Xk, n, W.data(), n, sk);
      ops.gemm(false, false, n, sk, n, T(-1), H.data(), n, W.data(), n, T(1), U.data(), n);
      a0.apply(ops, true, Yk, n, W.data(), n, sk);
      ops.gemm(true, false, n, sk, n, T(-1), H.data(), n, W.data(), n, T(1), V.data(), n);
    }
    a0.apply(ops, false, U.data(), n, AU.data(), n, sk);
    ops.set_identity(sk, R.data(), s);
    ops.gemm(true, false, sk, sk, n, T(1), Yk, n, AU.data(), n, T(1), R.data(), s);
    const double scale = 1 + ops.frobenius(n, sk, Yk, n) * ops.frobenius(n, sk, AU.data(), n);
    const double rho = factor_pivot(ops, sk, R.data(), s, scale);
    if (sm_detail::broke_down(res, threshold, k, c0, sk, rho))
      return res;
    // H += U R0⁻¹ Vᵀ
    ops.gemm(false, false, n, sk, sk, T(1), U.data(), n, R.data(), s, T(0), W.data(), n);
    ops.gemm(false, true, n, n, sk, T(1), W.data(), n, V.data(), n, T(1), H.data(), n);
  }
  // G = A0⁻¹ H, then A0⁻¹ − G A0⁻¹ with G A0⁻¹ = (A0⁻ᵀ Gᵀ)ᵀ. (A diagonal A0 takes the standard
  // path, so no diagonal shortcut here.)
  auto G = ops.alloc(n, n, false);
  a0.apply(ops, false, H.data(), n, G.data(), n, n);
  ops.transpose(n, n, G.data(), n, H.data(), n);
  a0.apply(ops, true, H.data(), n, G.data(), n, n);
  res.inverse = ops.alloc(n, n);
  a0.materialize(ops, res.inverse.data());
  ops.subtract_transposed(n, G.data(), n, res.inverse.data(), n);
  return res;
}

// The standard case (sm.hpp, StandardSplit): the same recursions with what Y = I makes of them.
// Y_kᵀ Z and A0⁻ᵀ Y_k are row selections, A0⁻¹ is a row scaling, V is unit upper triangular and H
// has nonzero columns only where steps have been taken. U_k R_k⁻¹ is stored instead of U_k
// (G = U R⁻¹), which turns the products with R in eqs. (7)–(8) into products with G.

// Algorithm 1 with level-2 BLAS: u_k = x_k − G(:,1:k−1) c with c_l = v_lᵀ A0⁻¹ x_k (a triangular
// product, V(1:k−1,1:k−1) unit upper), v_k(1:k−1) = −V(1:k−1,1:k−1) c' with c'_l = d_k G(k, l).
template <class Ops>
OpsResult<Ops> svsm_standard(Ops &ops, const StandardSplit<OpsValue<Ops>> &sp, double threshold) {
  using T = OpsValue<Ops>;
  const std::int64_t n = sp.n;
  const T *d = sp.d;
  OpsResult<Ops> res;
  auto G = ops.alloc(n, n, false), V = ops.alloc(n, n), w = ops.alloc(n, 1), c = ops.alloc(n, 1);
  for (std::int64_t k = 0; k < n; ++k) {
    T *gk = G.data() + k * n, *vk = V.data() + k * n;
    sm_detail::load_x(ops, sp, k, 1, gk);
    ops.scale_rows(n, 1, d, gk, n, w.data(), n); // A0⁻¹ X(:,k)
    ops.store(vk + k, T(1));
    if (k > 0) {
      ops.copy(k, 1, w.data(), n, c.data(), n);
      ops.trmm(true, true, true, true, k, 1, T(1), V.data(), n, c.data(), n);
      ops.gemv(false, n, k, T(-1), G.data(), n, c.data(), T(1), gk);
      ops.transpose_scaled(k, 1, d + k, G.data() + k, n, vk, n);
      ops.trmm(true, true, false, true, k, 1, T(-1), V.data(), n, vk, n);
    }
    // R(k,k) = 1 / (1 + V(:,k)ᵀ A0⁻¹ X(:,k)); V(k+1:n, k) = 0.
    const T piv = T(1) + ops.dot(k + 1, vk, w.data());
    const double scale = 1 + ops.frobenius(k + 1, 1, vk, n) * ops.frobenius(n, 1, w.data(), n);
    const double rho = std::isfinite(double(piv)) ? std::abs(double(piv)) / scale : 0.0;
    if (sm_detail::broke_down(res, threshold, k + 1, k, 1, rho))
      return res;
    ops.scale(n, 1, T(1) / piv, gk, n);
  }
  // A⁻¹ = A0⁻¹ − A0⁻¹ G Vᵀ A0⁻¹ (eq. (3)).
  ops.trmm(false, true, true, true, n, n, T(1), V.data(), n, G.data(), n);
  ops.diagonal_minus_scaled(n, d, G.data(), n);
  res.inverse = std::move(G);
  return res;
}

// Algorithm 2. Step k (columns [c0, c0 + sk)):
//   P_k = V(1:c0,1:c0)ᵀ A0⁻¹ X_k(1:c0,:)          (triangular; V's rows below c0 are zero)
//   U_k = X_k − G(:,1:c0) P_k                        (eq. (7), gemm n × sk × c0)
//   V_k(1:c0,:) = −V(1:c0,1:c0) (d_{c0+j} G(c0+j, l))_{l,j}   (eq. (8): Uᵀ A0⁻ᵀ Y_k is a row
//   selection), V_k(c0+1:c0+sk,:) = I
//   R_k = I + (A0⁻¹ U_k)(c0+1:c0+sk,:) → R_k⁻¹, G_k = U_k R_k⁻¹.
// Then A⁻¹ = A0⁻¹ − A0⁻¹ G Vᵀ A0⁻¹ (eq. (10)) with one triangular product.
template <class Ops>
OpsResult<Ops> block_sm_standard(Ops &ops, const StandardSplit<OpsValue<Ops>> &sp, std::int64_t s,
                                 double threshold) {
  using T = OpsValue<Ops>;
  const std::int64_t n = sp.n;
  const T *d = sp.d;
  OpsResult<Ops> res;
  // V: the strictly upper part of its diagonal blocks must read zero (their identity is implicit).
  auto G = ops.alloc(n, n, false), V = ops.alloc(n, n), U = ops.alloc(n, s), W = ops.alloc(n, s),
       R = ops.alloc(s, s);
  for (std::int64_t c0 = 0, k = 1; c0 < n; c0 += s, ++k) {
    const std::int64_t sk = std::min(s, n - c0);
    sm_detail::load_x(ops, sp, c0, sk, U.data());
    if (c0 > 0) {
      ops.scale_rows(c0, sk, d, sp.A + c0 * sp.lda, sp.lda, W.data(), n);
      ops.trmm(true, true, true, true, c0, sk, T(1), V.data(), n, W.data(), n);
      ops.gemm(false, false, n, sk, c0, T(-1), G.data(), n, W.data(), n, T(1), U.data(), n);
      T *Vk = V.data() + c0 * n;
      ops.transpose_scaled(c0, sk, d + c0, G.data() + c0, n, Vk, n);
      ops.trmm(true, true, false, true, c0, sk, T(-1), V.data(), n, Vk, n);
    }
    ops.scale_rows(n, sk, d, U.data(), n, W.data(), n);
    const double rho = sm_detail::factor_r(ops, n, c0, sk, W.data(), R.data(), s);
    if (sm_detail::broke_down(res, threshold, k, c0, sk, rho))
      return res;
    ops.gemm(false, false, n, sk, sk, T(1), U.data(), n, R.data(), s, T(0), G.data() + c0 * n, n);
  }
  ops.trmm(false, true, true, true, n, n, T(1), V.data(), n, G.data(), n);
  ops.diagonal_minus_scaled(n, d, G.data(), n);
  res.inverse = std::move(G);
  return res;
}

// Algorithm 3. H = Σ_{i<k} U_i R_i⁻¹ V_iᵀ has nonzero columns 1 … c0 only (V_i's rows), so
//   U_k = X_k − H(:,1:c0) A0⁻¹ X_k(1:c0,:)                     (gemm n × sk × c0)
//   V_k = Y_k − Hᵀ A0⁻ᵀ Y_k: V_k(1:c0, j) = −d_{c0+j} H(c0+j, 1:c0)ᵀ, V_k(c0+1:c0+sk,:) = I
//   H(:,1:c0) −= (U_k R_k⁻¹) (d_{c0+j} H(c0+j, l))ᵀ,  H(:, c0+1:c0+sk) = U_k R_k⁻¹
// (rank-sk update, gemm n × c0 × sk), and A⁻¹ = A0⁻¹ − A0⁻¹ H A0⁻¹ is a scaling of H.
template <class Ops>
OpsResult<Ops> reduced_memory_sm_standard(Ops &ops, const StandardSplit<OpsValue<Ops>> &sp,
                                          std::int64_t s, double threshold) {
  using T = OpsValue<Ops>;
  const std::int64_t n = sp.n;
  const T *d = sp.d;
  OpsResult<Ops> res;
  // H: column block k is written at step k, before it is read.
  auto H = ops.alloc(n, n, false), U = ops.alloc(n, s), W = ops.alloc(n, s), Vt = ops.alloc(n, s),
       R = ops.alloc(s, s);
  for (std::int64_t c0 = 0, k = 1; c0 < n; c0 += s, ++k) {
    const std::int64_t sk = std::min(s, n - c0);
    sm_detail::load_x(ops, sp, c0, sk, U.data());
    if (c0 > 0) {
      ops.scale_rows(c0, sk, d, sp.A + c0 * sp.lda, sp.lda, W.data(), n);
      ops.gemm(false, false, n, sk, c0, T(-1), H.data(), n, W.data(), n, T(1), U.data(), n);
    }
    ops.scale_rows(n, sk, d, U.data(), n, W.data(), n);
    const double rho = sm_detail::factor_r(ops, n, c0, sk, W.data(), R.data(), s);
    if (sm_detail::broke_down(res, threshold, k, c0, sk, rho))
      return res;
    ops.gemm(false, false, n, sk, sk, T(1), U.data(), n, R.data(), s, T(0), W.data(), n);
    if (c0 > 0) {
      ops.transpose_scaled(c0, sk, d + c0, H.data() + c0, n, Vt.data(), n);
      ops.gemm(false, true, n, c0, sk, T(-1), W.data(), n, Vt.data(), n, T(1), H.data(), n);
    }
    ops.copy(n, sk, W.data(), n, H.data() + c0 * n, n);
  }
  ops.diagonal_minus_scaled(n, d, H.data(), n);
  res.inverse = std::move(H);
  return res;
}

} // namespace ksum::bsm
