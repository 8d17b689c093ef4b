#pragma once
// The series of the fast Gauss transform in scaled coordinates z = x / h, where the kernel is
// e^{−|z_y − z_x|²}. Written from the generating function of the Hermite polynomials,
// e^{2tu − u²} = Σ_n H_n(t) uⁿ/n!, so with the Hermite functions h_n(t) = e^{−t²} H_n(t):
//
//   e^{−(t − u)²} = Σ_n (uⁿ/n!) h_n(t)                                              (1)
//
// and per dimension of a tensor product in d dimensions (α, β multi-indices, t^α = Π t_k^{α_k}).
//   Hermite (seed 002 eq. 3, 6), about a source centre s:   u = z_x − s, t = z_y − s
//     A_α = Σ_j q_j u_j^α / α!,             G(y) = Σ_α A_α h_α(z_y − s)
//   Taylor (eq. 4, 7), about a target centre c, (1) with the roles of t and u swapped:
//     B_β = Σ_j q_j h_β(z_j − c) / β!,      G(y) = Σ_β B_β (z_y − c)^β
//   Hermite → Taylor (eq. 5): h_α(w + τ) = Σ_β (τ^β/β!) (−1)^{|β|} h_{α+β}(w) since h_n' =
//   −h_{n+1},
//     C_β = ((−1)^{|β|}/β!) Σ_α A_α h_{α+β}(c − s)
//   Seed 002's eq. (5) omits the factor (−1)^{|β|}/β!; the tests check the form above.
//
// Tensor index layout: α flattened with dimension 0 slowest, dimension d − 1 fastest.
#include "kernels/hd.hpp"

#include <cmath>
#include <cstdint>

namespace ksum::fgt {

// h_0 … h_{n−1} at t: h_0 = e^{−t²}, h_1 = 2t h_0, h_{k+1} = 2t h_k − 2k h_{k−1} (the forward
// recurrence of the Hermite polynomials, stable: H_n is its dominant solution).
template <class T> KSUM_HD void hermite_functions(T t, int n, T *h) {
  h[0] = exp(-t * t);
  if (n > 1)
    h[1] = 2 * t * h[0];
  for (int k = 1; k + 1 < n; ++k)
    h[k + 1] = 2 * t * h[k] - T(2 * k) * h[k - 1];
}

// tⁿ/n! for n < count.
template <class T> KSUM_HD void scaled_powers(T t, int count, T *out) {
  out[0] = 1;
  for (int k = 1; k < count; ++k)
    out[k] = out[k - 1] * t / T(k);
}

inline std::int64_t ipow(std::int64_t b, int e) {
  std::int64_t r = 1;
  for (int k = 0; k < e; ++k)
    r *= b;
  return r;
}

// Σ_α A_α Π_k f_k[α_k] over the p^d tensor coefficients, contracting the fastest dimension
// first: P (1 + 1/p + …) multiply-adds. f holds d rows of p values; work holds p^{d−1} values.
inline double tensor_dot(const double *a, const double *f, int d, int p, double *work) {
  if (d == 1) {
    double s = 0;
    for (int c = 0; c < p; ++c)
      s += a[c] * f[c];
    return s;
  }
  std::int64_t rows = ipow(p, d - 1);
  const double *fl = f + std::int64_t(d - 1) * p;
  for (std::int64_t i = 0; i < rows; ++i) {
    double s = 0;
    for (int c = 0; c < p; ++c)
      s += a[i * p + c] * fl[c];
    work[i] = s;
  }
  for (int k = d - 2; k >= 0; --k) {
    const double *fk = f + std::int64_t(k) * p;
    rows /= p;
    for (std::int64_t i = 0; i < rows; ++i) {
      double s = 0;
      for (int c = 0; c < p; ++c)
        s += work[i * p + c] * fk[c];
      work[i] = s;
    }
  }
  return work[0];
}

// a_α += q Π_k g_k[α_k] for all p^d multi-indices; work holds p^d values.
inline void tensor_accumulate(double q, const double *g, int d, int p, double *a, double *work) {
  std::int64_t len = 1;
  work[0] = q;
  for (int k = 0; k < d; ++k) {
    const double *gk = g + std::int64_t(k) * p;
    // expand in place from the back: work[i·p + c] = work[i]·g_k[c]
    for (std::int64_t i = len - 1; i >= 0; --i) {
      const double v = work[i];
      for (int c = p - 1; c >= 0; --c)
        work[i * p + c] = v * gk[c];
    }
    len *= p;
  }
  for (std::int64_t i = 0; i < len; ++i)
    a[i] += work[i];
}

// out = (⊗_k M_k) in with M_k[b][a] = m[k][b·p + a], applied one dimension at a time (d p^{d+1}
// multiply-adds). in is overwritten (it is the scratch of the passes); out must hold p^d values.
inline void tensor_apply(const double *m, int d, int p, double *in, double *out) {
  const std::int64_t total = ipow(p, d);
  double *src = in, *dst = out;
  for (int k = 0; k < d; ++k) {
    const double *mk = m + std::int64_t(k) * p * p;
    const std::int64_t post = ipow(p, d - 1 - k), pre = total / (post * p);
    for (std::int64_t i = 0; i < pre; ++i)
      for (int b = 0; b < p; ++b) {
        double *o = dst + (i * p + b) * post;
        for (std::int64_t j = 0; j < post; ++j)
          o[j] = 0;
        for (int a = 0; a < p; ++a) {
          const double c = mk[b * p + a];
          const double *s = src + (i * p + a) * post;
          for (std::int64_t j = 0; j < post; ++j)
            o[j] += c * s[j];
        }
      }
    double *t = src;
    src = dst;
    dst = t;
  }
  if (src != out)
    for (std::int64_t i = 0; i < total; ++i)
      out[i] = src[i];
}

} // namespace ksum::fgt
