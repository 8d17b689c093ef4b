#pragma once
// The multiquadric treecode's reference (tests): u_i = Σ_j w_j (|x_i − x_j|² + c²)^{1/2} in long
// double, with the scale of its error bound Σ_j |w_j| φ_ij, and the largest error per unit scale.
#include <ksum/table.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace ksum::test {

struct MqReference {
  std::vector<double> exact, scale;
};

inline MqReference mq_reference(const Table<double> &p, const std::vector<double> &w, double c) {
  const std::int64_t n = p.rows();
  MqReference r{std::vector<double>(static_cast<std::size_t>(n)),
                std::vector<double>(static_cast<std::size_t>(n))};
  for (std::int64_t i = 0; i < n; ++i) {
    long double sum = 0, abs_sum = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      long double q = static_cast<long double>(c) * c;
      for (int k = 0; k < 3; ++k)
        q += (p(i, k) - p(j, k)) * static_cast<long double>(p(i, k) - p(j, k));
      sum += w[static_cast<std::size_t>(j)] * std::sqrt(q);
      abs_sum += std::abs(w[static_cast<std::size_t>(j)]) * std::sqrt(q);
    }
    r.exact[static_cast<std::size_t>(i)] = static_cast<double>(sum);
    r.scale[static_cast<std::size_t>(i)] = static_cast<double>(abs_sum);
  }
  return r;
}

// max_i |got_i − want_i| / scale_i
inline double worst_scaled(const std::vector<double> &got, const std::vector<double> &want,
                           const std::vector<double> &scale) {
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i]) / scale[i]);
  return worst;
}

} // namespace ksum::test
