#include <ksum/datasets.hpp>
#include <ksum/error.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <random>

namespace ksum::datasets {

Table<double> halton(std::int64_t n, std::int64_t s, std::int64_t skip) {
  static constexpr int primes[32] = {2,  3,  5,  7,   11,  13,  17,  19,  23,  29, 31,
                                     37, 41, 43, 47,  53,  59,  61,  67,  71,  73, 79,
                                     83, 89, 97, 101, 103, 107, 109, 113, 127, 131};
  if (s < 1 || s > 32 || n < 0 || skip < 0)
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("halton: need 1 <= s <= 32, n >= 0, skip >= 0 (got s={}, n={}, skip={})", s, n,
                    skip));
  Table<double> t(n, s);
  for (std::int64_t k = 0; k < s; ++k) {
    const int b = primes[k];
    for (std::int64_t i = 0; i < n; ++i) {
      // Radical inverse of i + skip in base b.
      std::int64_t m = i + skip;
      double f = 1.0, r = 0.0;
      while (m > 0) {
        f /= b;
        r += f * static_cast<double>(m % b);
        m /= b;
      }
      t(i, k) = r;
    }
  }
  return t;
}

Table<double> grid(const std::int64_t *counts, const double *lo, const double *hi, std::int64_t s) {
  std::int64_t total = 1;
  for (std::int64_t k = 0; k < s; ++k) {
    if (counts[k] < 1)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("grid: axis {} has {} points; need at least 1", k, counts[k]));
    if (counts[k] > (std::int64_t(1) << 40) / total)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("grid: more than 2^40 points ({} on axis {})", counts[k], k));
    total *= counts[k];
  }
  Table<double> t(total, s);
  for (std::int64_t i = 0; i < total; ++i) {
    std::int64_t rest = i;
    for (std::int64_t k = 0; k < s; ++k) {
      const std::int64_t j = rest % counts[k];
      rest /= counts[k];
      t(i, k) = counts[k] == 1 ? 0.5 * (lo[k] + hi[k])
                               : lo[k] + (hi[k] - lo[k]) * static_cast<double>(j) /
                                             static_cast<double>(counts[k] - 1);
    }
  }
  return t;
}

double franke(double x, double y) {
  return 0.75 * std::exp(-(std::pow(9 * x - 2, 2) + std::pow(9 * y - 2, 2)) / 4) +
         0.75 * std::exp(-std::pow(9 * x + 1, 2) / 49 - (9 * y + 1) / 10) +
         0.5 * std::exp(-(std::pow(9 * x - 7, 2) + std::pow(9 * y - 3, 2)) / 4) -
         0.2 * std::exp(-std::pow(9 * x - 4, 2) - std::pow(9 * y - 7, 2));
}

double franke3(double x, double y, double z) {
  return 0.75 *
             std::exp(-(std::pow(9 * x - 2, 2) + std::pow(9 * y - 2, 2) + std::pow(9 * z - 2, 2)) /
                      4) +
         0.75 * std::exp(-std::pow(9 * x + 1, 2) / 49 - (9 * y + 1) / 10 - (9 * z + 1) / 10) +
         0.5 *
             std::exp(-(std::pow(9 * x - 7, 2) + std::pow(9 * y - 3, 2) + std::pow(9 * z - 5, 2)) /
                      4) -
         0.2 * std::exp(-std::pow(9 * x - 4, 2) - std::pow(9 * y - 7, 2) - std::pow(9 * z - 5, 2));
}

double g_s(const double *x, std::int64_t s) {
  double v = 1;
  for (std::int64_t k = 0; k < s; ++k)
    v *= 4 * x[k] * (1 - x[k]);
  return v;
}

Table<double> halton_sphere(std::int64_t n, std::int64_t skip) {
  const auto uv = halton(n, 2, skip);
  Table<double> t(n, 3);
  for (std::int64_t i = 0; i < n; ++i) {
    const double z = 2 * uv(i, 0) - 1, phi = 2 * M_PI * uv(i, 1), r = std::sqrt(1 - z * z);
    t(i, 0) = r * std::cos(phi);
    t(i, 1) = r * std::sin(phi);
    t(i, 2) = z;
  }
  return t;
}

Table<double> spiral_sphere(std::int64_t n) {
  if (n < 2)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("spiral_sphere: need at least 2 points, got {}", n));
  Table<double> t(n, 3);
  double phi = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const double z = -1 + 2 * static_cast<double>(k) / static_cast<double>(n - 1);
    const double r = std::sqrt(std::max(0.0, 1 - z * z));
    if (k == 0 || k == n - 1)
      phi = 0;
    else
      phi = std::fmod(phi + 3.6 / std::sqrt(static_cast<double>(n)) / r, 2 * M_PI);
    t(k, 0) = r * std::cos(phi);
    t(k, 1) = r * std::sin(phi);
    t(k, 2) = z;
  }
  return t;
}

namespace {
void check_count(std::int64_t n, const char *what) {
  if (n < 0)
    throw Error(ErrorCode::invalid_argument, fmt::format("{}: n = {} (expected >= 0)", what, n));
}
// A uniformly random direction, scaled by r, into row i.
void direction(std::mt19937_64 &rng, double r, Table<double> &t, std::int64_t i) {
  std::normal_distribution<double> g(0, 1);
  double v[3], len = 0;
  do {
    len = 0;
    for (auto &x : v) {
      x = g(rng);
      len += x * x;
    }
  } while (len < 1e-300);
  for (int a = 0; a < 3; ++a)
    t(i, a) = v[a] * r / std::sqrt(len);
}
} // namespace

Table<double> uniform_cube(std::int64_t n, std::uint64_t seed) {
  check_count(n, "uniform_cube");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Table<double> t(n, 3);
  for (std::int64_t i = 0; i < n; ++i)
    for (int a = 0; a < 3; ++a)
      t(i, a) = u(rng);
  return t;
}

Table<double> plummer(std::int64_t n, std::uint64_t seed) {
  check_count(n, "plummer");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Table<double> t(n, 3);
  for (std::int64_t i = 0; i < n; ++i) {
    // The enclosed mass fraction is X = r³ / (1 + r²)^{3/2}: invert it (X kept below 1 so the
    // radius stays finite; the outermost of 10^8 points lands near r ≈ 10^5).
    const double x = std::min(u(rng), 1 - 1e-15);
    const double r = 1 / std::sqrt(std::pow(std::max(x, 1e-300), -2.0 / 3.0) - 1);
    direction(rng, r, t, i);
  }
  return t;
}

Table<double> sphere_shell(std::int64_t n, std::uint64_t seed) {
  check_count(n, "sphere_shell");
  std::mt19937_64 rng(seed);
  Table<double> t(n, 3);
  for (std::int64_t i = 0; i < n; ++i)
    direction(rng, 1.0, t, i);
  return t;
}

} // namespace ksum::datasets
