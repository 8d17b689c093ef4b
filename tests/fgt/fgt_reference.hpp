#pragma once
// The fp64 reference of the Gauss transform tests: G(y_i) = Σ_j q_j exp(−|y_i − x_j|²/h²) summed
// in long double from libm's exp, and the error measure of the FGT's guarantee,
// max_i |Ĝ_i − G_i| / Σ_j |q_j|.
#include "support/reference.hpp"

#include <ksum/table.hpp>

#include <cmath>
#include <vector>

namespace ksum::test {

inline std::vector<double> gauss_reference(const Table<double> &src, const Table<double> &tgt,
                                           const Table<double> &q, std::int64_t col, double h,
                                           const std::vector<std::int64_t> &rows) {
  std::vector<double> out;
  for (const auto i : rows) {
    long double s = 0;
    for (std::int64_t j = 0; j < src.rows(); ++j) {
      long double r2 = 0;
      for (std::int64_t k = 0; k < src.cols(); ++k) {
        const long double dz = (long double)tgt(i, k) - src(j, k);
        r2 += dz * dz;
      }
      s += (long double)q(j, col) * std::exp(-(r2 / ((long double)h * h)));
    }
    out.push_back(double(s));
  }
  return out;
}

// max over sampled targets and all columns of |got − G| / Σ|q|.
template <class T>
double gauss_error(const Table<double> &src, const Table<double> &tgt, const Table<double> &q,
                   double h, const Table<T> &got, std::int64_t samples = 80) {
  const auto rows = sample_rows(tgt.rows(), samples);
  double worst = 0;
  for (std::int64_t c = 0; c < q.cols(); ++c) {
    double l1 = 0;
    for (std::int64_t j = 0; j < q.rows(); ++j)
      l1 += std::abs(q(j, c));
    const auto ref = gauss_reference(src, tgt, q, c, h, rows);
    for (std::size_t t = 0; t < rows.size(); ++t) {
      const double g = double(got(rows[t], c));
      if (!std::isfinite(g))
        return INFINITY;
      worst = std::max(worst, std::abs(g - ref[t]) / std::max(l1, 1e-300));
    }
  }
  return worst;
}

} // namespace ksum::test
