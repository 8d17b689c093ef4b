#pragma once
// Shared by the 3D FMM's CPU and GPU tests: point sets, signed weights, the sampled relative l2
// error against the fp64 reference (ksum::reference_sum), and the plan options of a case.
#include <ksum/datasets.hpp>
#include <ksum/direct.hpp>
#include <ksum/reference.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace ksum::test {

enum class Dist { uniform, plummer, shell };

inline Table<double> points(Dist d, std::int64_t n, std::uint64_t seed) {
  switch (d) {
  case Dist::uniform:
    return datasets::uniform_cube(n, seed);
  case Dist::plummer:
    return datasets::plummer(n, seed);
  case Dist::shell:
    return datasets::sphere_shell(n, seed);
  }
  return {};
}

inline Table<double> signed_weights(std::int64_t n, std::int64_t cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Table<double> w(n, cols);
  for (std::int64_t k = 0; k < n * cols; ++k)
    w.data()[k] = u(rng);
  return w;
}

// Relative l2 error of u (all columns) on up to `samples` evenly spaced target rows.
inline double sampled_error(Kernel k, double eps, const Table<double> &src,
                            const Table<double> *tgt, const Table<double> &w,
                            const Table<double> &u, std::int64_t samples = 200) {
  const std::int64_t m = u.rows();
  std::vector<std::int64_t> rows;
  for (std::int64_t i = 0; i < std::min(m, samples); ++i)
    rows.push_back(i * m / std::min(m, samples));
  const auto ref = reference_sum(k, eps, src, tgt ? *tgt : src, w, false, tgt == nullptr, rows);
  double e2 = 0, r2 = 0;
  for (std::int64_t c = 0; c < u.cols(); ++c)
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const double d = u(rows[i], c) - ref(static_cast<std::int64_t>(i), c);
      e2 += d * d;
      r2 += ref(static_cast<std::int64_t>(i), c) * ref(static_cast<std::int64_t>(i), c);
    }
  return r2 > 0 ? std::sqrt(e2 / r2) : std::sqrt(e2);
}

// ‖a − b‖₂ / ‖b‖₂ over every entry (two results of the same shape).
inline double relative_l2(const Table<double> &a, const Table<double> &b) {
  double e2 = 0, r2 = 0;
  for (std::int64_t k = 0; k < a.rows() * a.cols(); ++k) {
    e2 += (a.data()[k] - b.data()[k]) * (a.data()[k] - b.data()[k]);
    r2 += b.data()[k] * b.data()[k];
  }
  return std::sqrt(e2 / r2);
}

inline double eps_for(Kernel k) {
  return k == Kernel::laplace ? 1.0 : 3.0;
}

inline DirectOptions fmm_options(Kernel k, double tol, std::int64_t leaf = 32,
                                 Backend backend = Backend::cpu) {
  DirectOptions o;
  o.kernel = k;
  o.eps = eps_for(k);
  o.method = Method::fmm;
  o.backend = backend;
  o.tolerance = tol;
  o.fmm_leaf_size = leaf; // small leaves so that small tests exercise every list
  return o;
}

struct Case {
  Kernel kernel;
  Dist dist;
  double tol;
  bool self;
};

inline std::string case_name(const Case &c) {
  std::string s(kernel_info(c.kernel).name);
  for (auto &ch : s)
    if (ch == '-')
      ch = '_';
  s += c.dist == Dist::uniform ? "_uniform" : c.dist == Dist::plummer ? "_plummer" : "_shell";
  s += "_tol" + std::to_string(static_cast<int>(std::lround(-std::log10(c.tol))));
  s += c.self ? "_self" : "_targets";
  return s;
}

} // namespace ksum::test
