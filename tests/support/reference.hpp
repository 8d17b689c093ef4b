#pragma once
// Shared test support: random inputs with fixed seeds, and the error of a computed direct sum
// against the fp64 reference (ksum::reference_sum: libm formulas, long double accumulation).
//
// Error measure: for each sampled target and output column, |got − ref| divided by the sum of the
// magnitudes of the terms, Σ_j |w_j| |term_ij|. This is the quantity a summation's rounding error
// is proportional to, so a test can pass a fixed tolerance even where the terms cancel (tps, log,
// weights of both signs), without letting a wrong result pass.
#include <ksum/kernels.hpp>
#include <ksum/reference.hpp>
#include <ksum/table.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace ksum::test {

// Tolerances on the error measure above: a few hundred ulp of the working precision.
template <class T> constexpr double tolerance() {
  return sizeof(T) == 4 ? 2e-5 : 1e-12;
}

inline Table<double> random_points(std::int64_t n, std::int64_t d, std::uint64_t seed,
                                   double lo = 0.0, double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Table<double> t(n, d);
  for (std::int64_t k = 0; k < n * d; ++k)
    t.data()[k] = u(rng);
  return t;
}

// The values a computation in precision T actually sees: rounding the inputs is not its error.
template <class T> Table<double> rounded(const Table<double> &t) {
  return t.cast<T>().template cast<double>();
}

inline std::vector<std::int64_t> sample_rows(std::int64_t m, std::int64_t count) {
  std::vector<std::int64_t> rows;
  if (m == 0)
    return rows;
  const std::int64_t c = std::min(m, count);
  for (std::int64_t s = 0; s < c; ++s)
    rows.push_back(s * m / c);
  rows.back() = m - 1;
  return rows;
}

// Largest error measure over the sampled rows and all columns of `got` (laid out as
// DirectSum::execute returns it).
inline double sum_error(Kernel k, double eps, const Table<double> &src, const Table<double> &tgt,
                        const Table<double> &w, bool gradient, bool self, const Table<double> &got,
                        std::int64_t samples = 64) {
  const auto rows = sample_rows(tgt.rows(), samples);
  const auto ref = reference_sum(k, eps, src, tgt, w, gradient, self, rows);
  const std::int64_t d = src.cols(), cpr = gradient ? 1 + d : 1;
  double worst = 0;
  for (std::size_t t = 0; t < rows.size(); ++t) {
    const std::int64_t i = rows[t];
    std::vector<double> scale(static_cast<std::size_t>(w.cols() * cpr), 0.0);
    for (std::int64_t j = 0; j < src.rows(); ++j) {
      if (self && i == j)
        continue;
      double r2 = 0;
      std::vector<double> diff(static_cast<std::size_t>(d));
      for (std::int64_t c = 0; c < d; ++c) {
        diff[c] = tgt(i, c) - src(j, c);
        r2 += diff[c] * diff[c];
      }
      const double r = std::sqrt(r2);
      const double v = std::abs(kernel_value(k, eps, r));
      const double g = r > 0 ? std::abs(kernel_derivative(k, eps, r)) : 0.0;
      for (std::int64_t q = 0; q < w.cols(); ++q) {
        scale[q * cpr] += std::abs(w(j, q)) * v;
        for (std::int64_t c = 0; gradient && c < d; ++c)
          scale[q * cpr + 1 + c] += std::abs(w(j, q)) * g * std::abs(diff[c]) / std::max(r, 1e-300);
      }
    }
    for (std::int64_t c = 0; c < w.cols() * cpr; ++c) {
      const double e = std::abs(got(i, c) - ref(static_cast<std::int64_t>(t), c));
      if (!std::isfinite(got(i, c)))
        return INFINITY;
      worst = std::max(worst, scale[c] > 0 ? e / scale[c] : e);
    }
  }
  return worst;
}

} // namespace ksum::test
