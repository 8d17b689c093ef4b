// SVSM, BSM and RMBSM (seed 004 Paper III, Algorithms 1–3) in the standard case A0 = diag(a0),
// X = A − A0, Y = I (Paper III §1), over CpuOps. Same recursions as sm.cpp, with what Y = I makes
// of them (sm.hpp, StandardSplit): Y_kᵀ Z and A0⁻ᵀ Y_k are row selections, A0⁻¹ is a row scaling,
// V is unit upper triangular and H has nonzero columns only where steps have been taken. U_k R_k⁻¹
// is stored instead of U_k (G = U R⁻¹), which turns the products with R in eqs. (7)–(8) into
// products with G.
#include "linalg/bsm/sm.hpp"

#include <algorithm>
#include <cmath>

namespace ksum::bsm {

namespace {

// U_k = X_k for the columns [c0, c0 + sk): A's columns with A0 taken off their diagonal entries.
template <std::floating_point T>
void load_x(CpuOps<T> &ops, const StandardSplit<T> &sp, std::int64_t c0, std::int64_t sk, T *out) {
  ops.copy(sp.n, sk, sp.A + c0 * sp.lda, sp.lda, out, sp.n);
  ops.subtract_diagonal(sk, sp.a0.data() + c0, out + c0, sp.n);
}

// R_k = I + Y_kᵀ A0⁻¹ U_k (eq. (9)) from W = A0⁻¹ U_k (rows c0 … c0 + sk), factored in place to
// R_k⁻¹; returns the pivot measure with ‖Y_k‖_F = √sk.
template <std::floating_point T>
double factor_r(CpuOps<T> &ops, std::int64_t n, std::int64_t c0, std::int64_t sk, const T *W, T *R,
                std::int64_t ldr) {
  ops.copy(sk, sk, W + c0, n, R, ldr);
  ops.shift_diagonal(sk, T(1), R, ldr);
  const double scale = 1 + std::sqrt(double(sk)) * ops.frobenius(n, sk, W, n);
  return factor_pivot(ops, sk, R, ldr, scale);
}

} // namespace

// Algorithm 1 with level-2 BLAS: u_k = x_k − G(:,1:k−1) c with c_l = v_lᵀ A0⁻¹ x_k (a triangular
// product, V(1:k−1,1:k−1) unit upper), v_k(1:k−1) = −V(1:k−1,1:k−1) c' with c'_l = d_k G(k, l).
template <std::floating_point T>
SmResult<T> svsm_standard(CpuOps<T> &ops, const StandardSplit<T> &sp, double threshold) {
  const std::int64_t n = sp.n;
  const T *d = sp.d.data();
  SmResult<T> res;
  Table<T> G(n, n, Uninitialized{}), V(n, n);
  std::vector<T> w(static_cast<std::size_t>(n)), c(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) {
    T *gk = G.data() + k * n, *vk = V.data() + k * n;
    load_x(ops, sp, k, 1, gk);
    ops.scale_rows(n, 1, d, gk, n, w.data(), n); // A0⁻¹ X(:,k)
    vk[k] = T(1);
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
    res.min_pivot = std::min(res.min_pivot, rho);
    if (breaks(rho, threshold)) {
      res.broke_down = true;
      res.breakdown = {k + 1, k, 1, rho};
      return res;
    }
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
template <std::floating_point T>
SmResult<T> block_sm_standard(CpuOps<T> &ops, const StandardSplit<T> &sp, std::int64_t s,
                              double threshold) {
  const std::int64_t n = sp.n;
  const T *d = sp.d.data();
  SmResult<T> res;
  // V: the strictly upper part of its diagonal blocks must read zero (their identity is implicit).
  Table<T> G(n, n, Uninitialized{}), V(n, n);
  std::vector<T> U(static_cast<std::size_t>(n * s)), W(static_cast<std::size_t>(n * s)),
      R(static_cast<std::size_t>(s * s));
  for (std::int64_t c0 = 0, k = 1; c0 < n; c0 += s, ++k) {
    const std::int64_t sk = std::min(s, n - c0);
    load_x(ops, sp, c0, sk, U.data());
    if (c0 > 0) {
      ops.scale_rows(c0, sk, d, sp.A + c0 * sp.lda, sp.lda, W.data(), n);
      ops.trmm(true, true, true, true, c0, sk, T(1), V.data(), n, W.data(), n);
      ops.gemm(false, false, n, sk, c0, T(-1), G.data(), n, W.data(), n, T(1), U.data(), n);
      T *Vk = V.data() + c0 * n;
      ops.transpose_scaled(c0, sk, d + c0, G.data() + c0, n, Vk, n);
      ops.trmm(true, true, false, true, c0, sk, T(-1), V.data(), n, Vk, n);
    }
    ops.scale_rows(n, sk, d, U.data(), n, W.data(), n);
    const double rho = factor_r(ops, n, c0, sk, W.data(), R.data(), s);
    res.min_pivot = std::min(res.min_pivot, rho);
    if (breaks(rho, threshold)) {
      res.broke_down = true;
      res.breakdown = {k, c0, sk, rho};
      return res;
    }
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
template <std::floating_point T>
SmResult<T> reduced_memory_sm_standard(CpuOps<T> &ops, const StandardSplit<T> &sp, std::int64_t s,
                                       double threshold) {
  const std::int64_t n = sp.n;
  const T *d = sp.d.data();
  SmResult<T> res;
  Table<T> H(n, n, Uninitialized{}); // column block k is written at step k, before it is read
  std::vector<T> U(static_cast<std::size_t>(n * s)), W(static_cast<std::size_t>(n * s)),
      Vt(static_cast<std::size_t>(n * s)), R(static_cast<std::size_t>(s * s));
  for (std::int64_t c0 = 0, k = 1; c0 < n; c0 += s, ++k) {
    const std::int64_t sk = std::min(s, n - c0);
    load_x(ops, sp, c0, sk, U.data());
    if (c0 > 0) {
      ops.scale_rows(c0, sk, d, sp.A + c0 * sp.lda, sp.lda, W.data(), n);
      ops.gemm(false, false, n, sk, c0, T(-1), H.data(), n, W.data(), n, T(1), U.data(), n);
    }
    ops.scale_rows(n, sk, d, U.data(), n, W.data(), n);
    const double rho = factor_r(ops, n, c0, sk, W.data(), R.data(), s);
    res.min_pivot = std::min(res.min_pivot, rho);
    if (breaks(rho, threshold)) {
      res.broke_down = true;
      res.breakdown = {k, c0, sk, rho};
      return res;
    }
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

template SmResult<float> svsm_standard(CpuOps<float> &, const StandardSplit<float> &, double);
template SmResult<double> svsm_standard(CpuOps<double> &, const StandardSplit<double> &, double);
template SmResult<float> block_sm_standard(CpuOps<float> &, const StandardSplit<float> &,
                                           std::int64_t, double);
template SmResult<double> block_sm_standard(CpuOps<double> &, const StandardSplit<double> &,
                                            std::int64_t, double);
template SmResult<float> reduced_memory_sm_standard(CpuOps<float> &, const StandardSplit<float> &,
                                                    std::int64_t, double);
template SmResult<double>
reduced_memory_sm_standard(CpuOps<double> &, const StandardSplit<double> &, std::int64_t, double);

} // namespace ksum::bsm
