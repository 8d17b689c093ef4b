#pragma once
// Complex multipole and local expansions of the 2D FMM (Greengard–Rokhlin), written once for the
// CPU and the GPU. The expansions are of the log potential
//   φ(z) = Σ_j q_j log(z − z_j),
// whose derivative is the harmonic kernel Σ_j q_j / (z − z_j) and whose real part (real q) is the
// logarithmic potential. With p terms:
//   multipole about c:  φ(z) = a_0 log(z − c) + Σ_{k=1}^{p−1} a_k (z − c)^{−k},
//                       a_0 = Σ q_j,  a_k = −Σ q_j (z_j − c)^k / k
//   local about c:      φ(z) = Σ_{l=0}^{p−1} b_l (z − c)^l.
// Coefficients are stored scaled by the box radius s (a'_k = a_k / s^k, b'_l = b_l s^l), so every
// power that appears is of a ratio ≤ 1 and nothing over- or underflows for any box size or p.
#include "kernels/hd.hpp"

#include <cmath>

namespace ksum::fmm2d {

inline constexpr int kMaxTerms = 100; // the most terms an expansion may have

template <class T> struct cx {
  T re, im;
};
template <class T> KSUM_HD cx<T> operator+(cx<T> a, cx<T> b) { return {a.re + b.re, a.im + b.im}; }
template <class T> KSUM_HD cx<T> operator-(cx<T> a, cx<T> b) { return {a.re - b.re, a.im - b.im}; }
template <class T> KSUM_HD cx<T> operator*(cx<T> a, cx<T> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
template <class T> KSUM_HD cx<T> operator*(T s, cx<T> a) { return {s * a.re, s * a.im}; }
template <class T> KSUM_HD cx<T> inv(cx<T> a) {
  const T d = T(1) / (a.re * a.re + a.im * a.im);
  return {a.re * d, -a.im * d};
}
// a += b·c
template <class T> KSUM_HD void fma_to(cx<T> &a, cx<T> b, cx<T> c) {
  a.re += b.re * c.re - b.im * c.im;
  a.im += b.re * c.im + b.im * c.re;
}

// P2M: adds the sources (z_j, q_j) to the scaled multipole a of a box with centre c and scale s.
template <class T>
KSUM_HD void p2m(const cx<T> *z, const cx<T> *q, int n, cx<T> c, T s, int p, cx<T> *a) {
  const T is = T(1) / s;
  for (int j = 0; j < n; ++j) {
    const cx<T> w = is * (z[j] - c);
    cx<T> wk = w;
    a[0] = a[0] + q[j];
    for (int k = 1; k < p; ++k) {
      const cx<T> t = (T(-1) / T(k)) * (q[j] * wk);
      a[k] = a[k] + t;
      wk = wk * w;
    }
  }
}

// M2M: adds the child's multipole (centre c1, scale s1) to its parent's (c2, s2):
//   b_l = −a_0 z0^l / l + Σ_{k=1}^{l} a_k z0^{l−k} C(l−1, k−1),   z0 = c1 − c2.
// binom[n * ld + k] = C(n, k).
template <class T>
KSUM_HD void m2m(const cx<T> *a, cx<T> c1, T s1, cx<T> c2, T s2, int p, const T *binom, int ld,
                 cx<T> *b) {
  const T is2 = T(1) / s2;
  const cx<T> u = is2 * (c1 - c2); // z0 / s2
  const T rho = s1 * is2;          // s1 / s2
  cx<T> upow[kMaxTerms + 1];              // p ≤ kMaxTerms (checked by the plan)
  upow[0] = {T(1), T(0)};
  for (int l = 1; l < p; ++l)
    upow[l] = upow[l - 1] * u;
  b[0] = b[0] + a[0];
  T rk = 1;
  cx<T> ak[kMaxTerms];
  for (int k = 1; k < p; ++k) {
    rk *= rho;
    ak[k] = rk * a[k];
  }
  for (int l = 1; l < p; ++l) {
    cx<T> acc = (T(-1) / T(l)) * (a[0] * upow[l]);
    for (int k = 1; k <= l; ++k)
      fma_to(acc, binom[(l - 1) * ld + (k - 1)] * ak[k], upow[l - k]);
    b[l] = b[l] + acc;
  }
}

// M2L: adds the multipole a (centre c1, scale s1) to the local b (centre c2, scale s2):
//   b'_0 = a_0 log|z0| + Σ_k σ_k,  b'_l = (s2/z0)^l (−a_0/l + Σ_k C(l+k−1, k−1) σ_k),
//   σ_k = a'_k (−s1/z0)^k,  z0 = c1 − c2.
// Only the real part of b_0 is kept meaningful: log z0 → log|z0| (b_0 feeds only the real log
// potential; the harmonic kernel never reads it).
template <class T>
KSUM_HD void m2l(const cx<T> *a, cx<T> c1, T s1, cx<T> c2, T s2, int p, const T *binom, int ld,
                 cx<T> *b) {
  const cx<T> z0 = c1 - c2;
  const cx<T> iz = inv(z0);
  const cx<T> t1 = (-s1) * iz; // −s1 / z0
  const cx<T> t2 = s2 * iz;    // s2 / z0
  cx<T> sigma[kMaxTerms];
  cx<T> tk = t1;
  const T lg = T(0.5) * static_cast<T>(log(z0.re * z0.re + z0.im * z0.im)); // log|z0|
  cx<T> b0 = {a[0].re * lg, a[0].im * lg};
  for (int k = 1; k < p; ++k) {
    sigma[k] = a[k] * tk;
    b0 = b0 + sigma[k];
    tk = tk * t1;
  }
  b[0] = b[0] + b0;
  cx<T> tl = t2;
  for (int l = 1; l < p; ++l) {
    cx<T> acc = (T(-1) / T(l)) * a[0];
    for (int k = 1; k < p; ++k) {
      const T c = binom[(l + k - 1) * ld + (k - 1)]; // C(l+k−1, k−1)
      acc.re += c * sigma[k].re;
      acc.im += c * sigma[k].im;
    }
    b[l] = b[l] + acc * tl;
    tl = tl * t2;
  }
}

// The same M2L for the CPU: hank[l * p + k] = C(l+k−1, k−1) row by row, σ split into real and
// imaginary arrays, so each row is two contiguous dot products the compiler vectorises.
template <class T>
inline void m2l_rows(const cx<T> *a, cx<T> c1, T s1, cx<T> c2, T s2, int p, const T *hank,
                     cx<T> *b) {
  const cx<T> z0 = c1 - c2;
  const cx<T> iz = inv(z0);
  const cx<T> t1 = (-s1) * iz;
  const cx<T> t2 = s2 * iz;
  alignas(64) T sr[kMaxTerms], si[kMaxTerms];
  sr[0] = si[0] = 0;
  const T lg = T(0.5) * static_cast<T>(std::log(z0.re * z0.re + z0.im * z0.im));
  cx<T> b0 = {a[0].re * lg, a[0].im * lg};
  cx<T> tk = t1;
  for (int k = 1; k < p; ++k) {
    const cx<T> sg = a[k] * tk;
    sr[k] = sg.re;
    si[k] = sg.im;
    b0 = b0 + sg;
    tk = tk * t1;
  }
  b[0] = b[0] + b0;
  cx<T> tl = t2;
  for (int l = 1; l < p; ++l) {
    const T *row = hank + l * p;
    T ar = 0, ai = 0;
#pragma omp simd reduction(+ : ar, ai)
    for (int k = 1; k < p; ++k) {
      ar += row[k] * sr[k];
      ai += row[k] * si[k];
    }
    const T il = T(1) / T(l);
    const cx<T> acc = {ar - a[0].re * il, ai - a[0].im * il};
    b[l] = b[l] + acc * tl;
    tl = tl * t2;
  }
}

// L2L: adds the parent's local b (centre c1, scale s1) to the child's local out (c2, s2):
// the polynomial in u = (z − c1)/s1 = α w + β, w = (z − c2)/s2, α = s2/s1, β = (c2 − c1)/s1, is
// re-expanded in w by a Taylor shift (Horner's scheme, O(p²)) and a scaling by α^l.
template <class T>
KSUM_HD void l2l(const cx<T> *b, cx<T> c1, T s1, cx<T> c2, T s2, int p, cx<T> *out) {
  cx<T> c[kMaxTerms];
  for (int l = 0; l < p; ++l)
    c[l] = b[l];
  const T is1 = T(1) / s1;
  const cx<T> beta = is1 * (c2 - c1);
  for (int k = 0; k < p - 1; ++k)
    for (int j = p - 2; j >= k; --j)
      fma_to(c[j], beta, c[j + 1]);
  const T alpha = s2 * is1;
  T al = 1;
  for (int l = 0; l < p; ++l) {
    out[l] = out[l] + al * c[l];
    al *= alpha;
  }
}

// L2P of the local b (centre c, scale s) at z: the potential Σ b'_l w^l and its derivative
// (1/s) Σ l b'_l w^{l−1}, w = (z − c)/s (Horner).
template <class T>
KSUM_HD void l2p(const cx<T> *b, cx<T> c, T s, int p, cx<T> z, cx<T> &phi, cx<T> &dphi) {
  const T is = T(1) / s;
  const cx<T> w = is * (z - c);
  cx<T> f = b[p - 1], df = {T(0), T(0)};
  for (int l = p - 2; l >= 0; --l) {
    df = df * w + f;
    f = f * w + b[l];
  }
  phi = f;
  dphi = is * df;
}

} // namespace ksum::fmm2d
