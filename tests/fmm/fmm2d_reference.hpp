#pragma once
// The 2D FMM's fp64 reference for the tests: every pair in long double, written from the formulas
// (not from the library): harmonic Σ q_j/(z − z_j) (times 1 − exp(−r²/δ²) with a core), log
// Σ q_j log|z − z_j|, self terms and coincident pairs left out; and the point sets the accuracy
// tests use.
#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace ksum::test {

// Reference values at the targets listed in `at` (indices into targets; targets empty: the
// sources, self term excluded).
inline std::vector<std::complex<double>>
fmm2d_reference(bool harmonic, std::span<const std::complex<double>> src,
                std::span<const std::complex<double>> q, std::span<const std::complex<double>> tgt,
                const std::vector<std::int64_t> &at, double core = 0) {
  const bool self = tgt.empty();
  std::vector<std::complex<double>> r(at.size());
  for (std::size_t s = 0; s < at.size(); ++s) {
    const std::int64_t i = at[s];
    const std::complex<long double> z = self ? src[i] : tgt[i];
    long double ur = 0, ui = 0;
    for (std::size_t j = 0; j < src.size(); ++j) {
      if (self && static_cast<std::int64_t>(j) == i)
        continue;
      const long double dx = z.real() - src[j].real(), dy = z.imag() - src[j].imag();
      const long double r2 = dx * dx + dy * dy;
      if (r2 == 0)
        continue;
      if (harmonic) {
        long double f = 1 / r2;
        if (core > 0)
          f *= 1 - std::exp(-r2 / ((long double)core * core));
        ur += f * (q[j].real() * dx + q[j].imag() * dy);
        ui += f * (q[j].imag() * dx - q[j].real() * dy);
      } else {
        const long double lg = 0.5L * std::log(r2);
        ur += q[j].real() * lg;
        ui += q[j].imag() * lg;
      }
    }
    r[s] = {static_cast<double>(ur), static_cast<double>(ui)};
  }
  return r;
}

// Point sets: "uniform" (unit square), "line" (along a line with 1e-3 noise: seed 004 Paper IV
// fig. 4.2), "cluster" (Gaussian clusters of widths 1e-1 … 1e-7 about random centres).
inline std::vector<std::complex<double>> fmm2d_points(const std::string &kind, std::int64_t n,
                                                      std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> g(0, 1);
  std::vector<std::complex<double>> z(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    if (kind == "uniform") {
      z[i] = {u(rng), u(rng)};
    } else if (kind == "line") {
      const double t = u(rng);
      z[i] = {t, 0.3 * t + 1e-3 * g(rng)};
    } else {
      const int c = static_cast<int>(i % 7);
      const double w = std::pow(10.0, -1.0 - c);
      const double cx = 0.1 + 0.12 * c, cy = 0.5 + 0.3 * std::sin(3.0 * c);
      z[i] = {cx + w * g(rng), cy + w * g(rng)};
    }
  }
  return z;
}

inline std::vector<std::complex<double>> fmm2d_strengths(std::int64_t n, std::uint64_t seed,
                                                         bool complex_values = true) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<std::complex<double>> q(static_cast<std::size_t>(n));
  for (auto &v : q)
    v = {u(rng), complex_values ? u(rng) : 0.0};
  return q;
}

// The float case of the CPU and GPU tests: clustered sources (the narrowest clusters collapse to
// repeated points in float), uniform targets with target 3 on source 5, complex strengths; the
// float inputs and the same values in double for the reference.
struct Fmm2dFloatCase {
  std::vector<std::complex<float>> zf, tf, qf;
  std::vector<std::complex<double>> z, t, q;
};
inline Fmm2dFloatCase fmm2d_float_case(std::int64_t n, std::int64_t m) {
  const auto z0 = fmm2d_points("cluster", n, 91);
  auto t0 = fmm2d_points("uniform", m, 92);
  t0[3] = z0[5];
  const auto q0 = fmm2d_strengths(n, 93);
  Fmm2dFloatCase c;
  c.zf.assign(z0.begin(), z0.end());
  c.tf.assign(t0.begin(), t0.end());
  c.qf.assign(q0.begin(), q0.end());
  c.z.assign(c.zf.begin(), c.zf.end());
  c.t.assign(c.tf.begin(), c.tf.end());
  c.q.assign(c.qf.begin(), c.qf.end());
  return c;
}

// max_s |got[at[s]] − ref[s]| / max_s |ref[s]|
inline double fmm2d_error(std::span<const std::complex<double>> got,
                          const std::vector<std::complex<double>> &ref,
                          const std::vector<std::int64_t> &at) {
  double num = 0, den = 0;
  for (std::size_t s = 0; s < at.size(); ++s) {
    num = std::max(num, std::abs(got[at[s]] - ref[s]));
    den = std::max(den, std::abs(ref[s]));
  }
  return den > 0 ? num / den : num;
}

} // namespace ksum::test
