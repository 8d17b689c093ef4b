// SVSM, BSM and RMBSM (seed 004 Paper III, Algorithms 1–3) over CpuOps.
#include "linalg/bsm/sm.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ksum::bsm {

template <std::floating_point T>
void A0Inverse<T>::apply(CpuOps<T> &ops, bool transpose, const T *in, std::int64_t ld_in, T *out,
                         std::int64_t ld_out, std::int64_t cols) const {
  switch (kind) {
  case Kind::identity:
    for (std::int64_t j = 0; j < cols; ++j)
      std::memcpy(out + j * ld_out, in + j * ld_in, sizeof(T) * static_cast<std::size_t>(n));
    return;
  case Kind::diagonal:
    ops.flops += double(n) * double(cols);
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = 0; i < n; ++i)
        out[j * ld_out + i] = diag[static_cast<std::size_t>(i)] * in[j * ld_in + i];
    return;
  case Kind::dense:
    ops.gemm(transpose, false, n, cols, n, T(1), dense, ld, in, ld_in, T(0), out, ld_out);
    return;
  case Kind::op:
    ops.flops += 2.0 * double(n) * double(n) * double(cols);
    (*fn)(transpose, in, ld_in, out, ld_out, cols);
    return;
  }
}

template <std::floating_point T> Table<T> A0Inverse<T>::materialize() const {
  Table<T> out(n, n);
  switch (kind) {
  case Kind::identity:
    for (std::int64_t i = 0; i < n; ++i)
      out(i, i) = T(1);
    break;
  case Kind::diagonal:
    for (std::int64_t i = 0; i < n; ++i)
      out(i, i) = diag[static_cast<std::size_t>(i)];
    break;
  case Kind::dense:
    for (std::int64_t j = 0; j < n; ++j)
      std::memcpy(out.data() + j * n, dense + j * ld, sizeof(T) * static_cast<std::size_t>(n));
    break;
  case Kind::op: {
    Table<T> eye(n, n);
    for (std::int64_t i = 0; i < n; ++i)
      eye(i, i) = T(1);
    (*fn)(false, eye.data(), n, out.data(), n, n);
    break;
  }
  }
  return out;
}

namespace {

// The last step of every variant (Paper III eq. (10)): A⁻¹ = A0⁻¹ − (A0⁻¹U R⁻¹)(A0⁻ᵀV)ᵀ, with
// AUR = A0⁻¹ U R⁻¹ (n × m) already formed and V (n × m).
template <std::floating_point T>
Table<T> assemble(CpuOps<T> &ops, const A0Inverse<T> &a0, const T *AUR, const T *V,
                  std::int64_t m) {
  const std::int64_t n = a0.n;
  std::vector<T> BV(static_cast<std::size_t>(n * m));
  a0.apply(ops, true, V, n, BV.data(), n, m);
  Table<T> out = a0.materialize();
  ops.gemm(false, true, n, n, m, T(-1), AUR, n, BV.data(), n, T(1), out.data(), n);
  return out;
}

} // namespace

// Algorithm 1. The inner loop over l uses only the original columns X(:,k), Y(:,k) in its dot
// products, so the k − 1 updates of U(:,k) (and of V(:,k)) are one pair of gemv each.
template <std::floating_point T>
SmResult<T> svsm(CpuOps<T> &ops, const A0Inverse<T> &a0, const T *X, const T *Y, std::int64_t m,
                 double threshold) {
  const std::int64_t n = a0.n;
  SmResult<T> res;
  std::vector<T> U(X, X + n * m), V(Y, Y + n * m), r(static_cast<std::size_t>(m)),
      w(static_cast<std::size_t>(n)), z(static_cast<std::size_t>(n)),
      c(static_cast<std::size_t>(m));
  for (std::int64_t k = 0; k < m; ++k) {
    T *uk = U.data() + k * n, *vk = V.data() + k * n;
    a0.apply(ops, false, X + k * n, n, w.data(), n, 1); // A0⁻¹ X(:,k)
    a0.apply(ops, true, Y + k * n, n, z.data(), n, 1);  // A0⁻ᵀ Y(:,k)
    if (k > 0) {
      // c_l = (V(:,l)ᵀ A0⁻¹ X(:,k)) R(l,l);  U(:,k) −= Σ_l c_l U(:,l)
      ops.gemv(true, n, k, T(1), V.data(), n, w.data(), T(0), c.data());
      for (std::int64_t l = 0; l < k; ++l)
        c[static_cast<std::size_t>(l)] *= r[static_cast<std::size_t>(l)];
      ops.gemv(false, n, k, T(-1), U.data(), n, c.data(), T(1), uk);
      // c_l = (Y(:,k)ᵀ A0⁻¹ U(:,l)) R(l,l);  V(:,k) −= Σ_l c_l V(:,l)
      ops.gemv(true, n, k, T(1), U.data(), n, z.data(), T(0), c.data());
      for (std::int64_t l = 0; l < k; ++l)
        c[static_cast<std::size_t>(l)] *= r[static_cast<std::size_t>(l)];
      ops.gemv(false, n, k, T(-1), V.data(), n, c.data(), T(1), vk);
    }
    // R(k,k) = 1 / (1 + V(:,k)ᵀ A0⁻¹ X(:,k))
    const T d = T(1) + ops.dot(n, vk, w.data());
    const double scale = 1 + ops.frobenius(n, 1, vk, n) * ops.frobenius(n, 1, w.data(), n);
    const double rho = std::isfinite(double(d)) ? std::abs(double(d)) / scale : 0.0;
    res.min_pivot = std::min(res.min_pivot, rho);
    if (breaks(rho, threshold)) {
      res.broke_down = true;
      res.breakdown = {k + 1, k, 1, rho};
      return res;
    }
    r[static_cast<std::size_t>(k)] = T(1) / d;
  }
  // A0⁻¹ U R, then eq. (3).
  std::vector<T> AUR(static_cast<std::size_t>(n * m));
  a0.apply(ops, false, U.data(), n, AUR.data(), n, m);
  for (std::int64_t k = 0; k < m; ++k)
    for (std::int64_t i = 0; i < n; ++i)
      AUR[static_cast<std::size_t>(k * n + i)] *= r[static_cast<std::size_t>(k)];
  res.inverse = assemble(ops, a0, AUR.data(), V.data(), m);
  return res;
}

// Algorithm 2. R = diag(R_1⁻¹, …, R_p⁻¹) is kept as its diagonal blocks (s × s each, the last one
// m mod s wide when s does not divide m), so Q_k = R P_k costs the 2(k−1)s³ of Paper III Table 1.
template <std::floating_point T>
SmResult<T> block_sm(CpuOps<T> &ops, const A0Inverse<T> &a0, const T *X, const T *Y, std::int64_t m,
                     std::int64_t s, double threshold) {
  const std::int64_t n = a0.n;
  SmResult<T> res;
  std::vector<T> U(X, X + n * m), V(Y, Y + n * m), AU(static_cast<std::size_t>(n * m)),
      Rinv(static_cast<std::size_t>(s * m)), W(static_cast<std::size_t>(n * s)),
      P(static_cast<std::size_t>(m * s)), Q(static_cast<std::size_t>(m * s));
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
    for (std::int64_t j = 0; j < sk; ++j)
      for (std::int64_t i = 0; i < sk; ++i)
        R[j * s + i] = i == j ? T(1) : T(0);
    ops.gemm(true, false, sk, sk, n, T(1), Yk, n, AUk, n, T(1), R, s);
    const double scale = 1 + ops.frobenius(n, sk, Yk, n) * ops.frobenius(n, sk, AUk, n);
    const double rho = factor_pivot(ops, sk, R, s, scale);
    res.min_pivot = std::min(res.min_pivot, rho);
    if (breaks(rho, threshold)) {
      res.broke_down = true;
      res.breakdown = {k, c0, sk, rho};
      return res;
    }
  }
  // A0⁻¹ U R⁻¹ block by block into U's storage (U is no longer needed), then eq. (10).
  for (std::int64_t c0 = 0; c0 < m; c0 += s) {
    const std::int64_t sk = std::min(s, m - c0);
    ops.gemm(false, false, n, sk, sk, T(1), AU.data() + c0 * n, n, Rinv.data() + c0 * s, s, T(0),
             U.data() + c0 * n, n);
  }
  res.inverse = assemble(ops, a0, U.data(), V.data(), m);
  return res;
}

// Algorithm 3: only H = Σ_k U_k R_k⁻¹ V_kᵀ (n × n) is kept; U_k, V_k are recomputed from H
// (U_k = X_k − H A0⁻¹ X_k, V_k = Y_k − Hᵀ A0⁻ᵀ Y_k), and A⁻¹ = A0⁻¹ − A0⁻¹ H A0⁻¹.
template <std::floating_point T>
SmResult<T> reduced_memory_sm(CpuOps<T> &ops, const A0Inverse<T> &a0, const T *X, const T *Y,
                              std::int64_t m, std::int64_t s, double threshold) {
  const std::int64_t n = a0.n;
  SmResult<T> res;
  Table<T> H(n, n);
  std::vector<T> U(static_cast<std::size_t>(n * s)), V(static_cast<std::size_t>(n * s)),
      W(static_cast<std::size_t>(n * s)), AU(static_cast<std::size_t>(n * s)),
      R(static_cast<std::size_t>(s * s));
  for (std::int64_t c0 = 0, k = 1; c0 < m; c0 += s, ++k) {
    const std::int64_t sk = std::min(s, m - c0);
    const T *Xk = X + c0 * n, *Yk = Y + c0 * n;
    std::memcpy(U.data(), Xk, sizeof(T) * static_cast<std::size_t>(n * sk));
    std::memcpy(V.data(), Yk, sizeof(T) * static_cast<std::size_t>(n * sk));
    if (c0 > 0) { // H = 0 before the first step: U = X_1, V = Y_1
      a0.apply(ops, false, Xk, n, W.data(), n, sk);
      ops.gemm(false, false, n, sk, n, T(-1), H.data(), n, W.data(), n, T(1), U.data(), n);
      a0.apply(ops, true, Yk, n, W.data(), n, sk);
      ops.gemm(true, false, n, sk, n, T(-1), H.data(), n, W.data(), n, T(1), V.data(), n);
    }
    a0.apply(ops, false, U.data(), n, AU.data(), n, sk);
    for (std::int64_t j = 0; j < sk; ++j)
      for (std::int64_t i = 0; i < sk; ++i)
        R[static_cast<std::size_t>(j * s + i)] = i == j ? T(1) : T(0);
    ops.gemm(true, false, sk, sk, n, T(1), Yk, n, AU.data(), n, T(1), R.data(), s);
    const double scale = 1 + ops.frobenius(n, sk, Yk, n) * ops.frobenius(n, sk, AU.data(), n);
    const double rho = factor_pivot(ops, sk, R.data(), s, scale);
    res.min_pivot = std::min(res.min_pivot, rho);
    if (breaks(rho, threshold)) {
      res.broke_down = true;
      res.breakdown = {k, c0, sk, rho};
      return res;
    }
    // H += U R0⁻¹ Vᵀ
    ops.gemm(false, false, n, sk, sk, T(1), U.data(), n, R.data(), s, T(0), W.data(), n);
    ops.gemm(false, true, n, n, sk, T(1), W.data(), n, V.data(), n, T(1), H.data(), n);
  }
  using Kind = typename A0Inverse<T>::Kind;
  if (a0.kind == Kind::identity || a0.kind == Kind::diagonal) {
    // A0⁻¹ H A0⁻¹ in place: row i and column j scaled by d_i d_j.
    ops.flops += 3.0 * double(n) * double(n);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) {
        const T di = a0.kind == Kind::identity ? T(1) : a0.diag[static_cast<std::size_t>(i)];
        const T dj = a0.kind == Kind::identity ? T(1) : a0.diag[static_cast<std::size_t>(j)];
        H(i, j) = (i == j ? di : T(0)) - di * H(i, j) * dj;
      }
    res.inverse = std::move(H);
    return res;
  }
  // G = A0⁻¹ H, then A0⁻¹ − G A0⁻¹ with G A0⁻¹ = (A0⁻ᵀ Gᵀ)ᵀ.
  Table<T> G(n, n, Uninitialized{});
  a0.apply(ops, false, H.data(), n, G.data(), n, n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i)
      H(j, i) = G(i, j);
  a0.apply(ops, true, H.data(), n, G.data(), n, n);
  res.inverse = a0.materialize();
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i)
      res.inverse(i, j) -= G(j, i);
  return res;
}

template struct A0Inverse<float>;
template struct A0Inverse<double>;
template SmResult<float> svsm(CpuOps<float> &, const A0Inverse<float> &, const float *,
                              const float *, std::int64_t, double);
template SmResult<double> svsm(CpuOps<double> &, const A0Inverse<double> &, const double *,
                               const double *, std::int64_t, double);
template SmResult<float> block_sm(CpuOps<float> &, const A0Inverse<float> &, const float *,
                                  const float *, std::int64_t, std::int64_t, double);
template SmResult<double> block_sm(CpuOps<double> &, const A0Inverse<double> &, const double *,
                                   const double *, std::int64_t, std::int64_t, double);
template SmResult<float> reduced_memory_sm(CpuOps<float> &, const A0Inverse<float> &, const float *,
                                           const float *, std::int64_t, std::int64_t, double);
template SmResult<double> reduced_memory_sm(CpuOps<double> &, const A0Inverse<double> &,
                                            const double *, const double *, std::int64_t,
                                            std::int64_t, double);

} // namespace ksum::bsm
