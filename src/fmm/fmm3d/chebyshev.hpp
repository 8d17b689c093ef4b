#pragma once
// Chebyshev interpolation on [−1, 1] for the interpolation FMM (Fong & Darve's black-box FMM):
// nodes x̄_m = cos((2m + 1)π / 2p), m = 0 … p − 1, and the interpolating polynomials
//   S_p(x̄_m, t) = 1/p + (2/p) Σ_{n=1}^{p−1} T_n(x̄_m) T_n(t),
// so f(t) ≈ Σ_m f(x̄_m) S_p(x̄_m, t) and in 3D the tensor product of three of these. The nodes are
// symmetric, x̄_{p−1−m} = −x̄_m, which the M2L symmetries rely on.
#include <cmath>
#include <numbers>
#include <vector>

namespace ksum::fmm {

struct Chebyshev {
  int p = 0;
  std::vector<double> nodes; // p
  std::vector<double> tn;    // tn[m p + n] = T_n(x̄_m)
  // Child-to-parent transfer per octant bit o: m2m[o][m' p + k] = S_p(x̄_m', (x̄_k + 2o − 1) / 2),
  // the parent's interpolant at the child's node k (used as M2M, and transposed as L2L).
  std::vector<double> m2m[2];

  explicit Chebyshev(int order) : p(order) {
    nodes.resize(static_cast<std::size_t>(p));
    tn.resize(static_cast<std::size_t>(p * p));
    for (int m = 0; m < p; ++m) {
      nodes[static_cast<std::size_t>(m)] = std::cos((2 * m + 1) * std::numbers::pi / (2 * p));
      for (int n = 0; n < p; ++n)
        tn[static_cast<std::size_t>(m * p + n)] =
            std::cos(n * (2 * m + 1) * std::numbers::pi / (2 * p));
    }
    std::vector<double> s(static_cast<std::size_t>(p));
    for (int o = 0; o < 2; ++o) {
      m2m[o].resize(static_cast<std::size_t>(p * p));
      for (int k = 0; k < p; ++k) {
        eval((nodes[static_cast<std::size_t>(k)] + 2 * o - 1) / 2, s.data());
        for (int m = 0; m < p; ++m)
          m2m[o][static_cast<std::size_t>(m * p + k)] = s[static_cast<std::size_t>(m)];
      }
    }
  }

  // s[m] = S_p(x̄_m, t) for t in [−1, 1] (a little outside is harmless).
  void eval(double t, double *s) const {
    double tnt[64];
    tnt[0] = 1;
    if (p > 1)
      tnt[1] = t;
    for (int n = 2; n < p; ++n)
      tnt[n] = 2 * t * tnt[n - 1] - tnt[n - 2];
    for (int m = 0; m < p; ++m) {
      const double *row = tn.data() + m * p;
      double acc = 0;
      for (int n = 1; n < p; ++n)
        acc += row[n] * tnt[n];
      s[m] = (1 + 2 * acc) / p;
    }
  }
};

// Beyond this the 16 M2L matrices of one level (8 · 16 · p⁶ bytes: 2.1 GB at p = 16) are too large.
inline constexpr int max_chebyshev_order = 16;

} // namespace ksum::fmm
