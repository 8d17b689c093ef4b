#pragma once
// The polynomial part of seed 000 eq. (2): the monomials of total degree ≤ k in d variables, in
// coordinates z = (x − centre) / scale with the data's box mapped into [−1, 1]^d (so that the
// columns of Π have comparable size whatever the data's units).
#include <ksum/error.hpp>
#include <ksum/table.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <vector>

namespace ksum::rbf {

class PolyBasis {
public:
  PolyBasis() = default;
  // degree −1: no terms.
  PolyBasis(int degree, std::int64_t d, std::vector<double> centre, double scale)
      : degree_(degree), d_(d), centre_(std::move(centre)), inv_scale_(1.0 / scale) {
    if (degree < 0)
      return;
    std::vector<int> e(d, 0);
    // Graded order: all exponent vectors of total degree 0, then 1, … (1, z_1 … z_d, z_1², …).
    for (int total = 0; total <= degree; ++total)
      add_terms(e, 0, total);
  }

  int degree() const { return degree_; }
  std::int64_t terms() const {
    return static_cast<std::int64_t>(exps_.size()) / std::max<std::int64_t>(d_, 1);
  }
  std::int64_t dim() const { return d_; }

  // The values of every term at point x (d coordinates, stride `stride` between them).
  void eval(const double *x, std::int64_t stride, double *out) const {
    const std::int64_t m = terms();
    double z[64];
    for (std::int64_t k = 0; k < d_; ++k)
      z[k] = (x[k * stride] - centre_[k]) * inv_scale_;
    for (std::int64_t t = 0; t < m; ++t) {
      double v = 1.0;
      for (std::int64_t k = 0; k < d_; ++k)
        for (int p = 0; p < exps_[t * d_ + k]; ++p)
          v *= z[k];
      out[t] = v;
    }
  }

  // Π: one row per point, one column per term.
  Table<double> matrix(const Table<double> &pts) const {
    const std::int64_t n = pts.rows(), m = terms();
    Table<double> P(n, m, Uninitialized{});
#pragma omp parallel for schedule(static) if (n > 10000)
    for (std::int64_t i = 0; i < n; ++i) {
      double x[max_dim] = {}, v[max_terms];
      for (std::int64_t k = 0; k < d_; ++k)
        x[k] = pts(i, k);
      eval(x, 1, v);
      for (std::int64_t t = 0; t < m; ++t)
        P(i, t) = v[t];
    }
    return P;
  }

  static constexpr std::int64_t max_dim = 64, max_terms = 1024;

  // The number of monomials of total degree ≤ k in d variables: C(k + d, d).
  static double count(int k, std::int64_t d) {
    double c = 1;
    for (std::int64_t i = 1; i <= d; ++i)
      c = c * static_cast<double>(k + i) / static_cast<double>(i);
    return k < 0 ? 0 : c;
  }

private:
  void add_terms(std::vector<int> &e, std::int64_t axis, int left) {
    if (axis == d_ - 1) {
      e[axis] = left;
      exps_.insert(exps_.end(), e.begin(), e.end());
      return;
    }
    for (int p = left; p >= 0; --p) {
      e[axis] = p;
      add_terms(e, axis + 1, left - p);
    }
    e[axis] = 0;
  }

  int degree_ = -1;
  std::int64_t d_ = 0;
  std::vector<double> centre_;
  double inv_scale_ = 1.0;
  std::vector<int> exps_; // terms × d exponents
};

} // namespace ksum::rbf
