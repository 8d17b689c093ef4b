// Seed 003 §3: slices against dense M^k products (float64 reference), the multi-step summation
// (n_g vectors, completed shell by shell) against the one-step marching, and bad input.
#include "bem/slices.hpp"
#include "support/bem_random.hpp"
#include "support/expect_error.hpp"

#include <ksum/error.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace ksum::bem {
namespace {

using test::random_triplets;

// Dense M^k, k = 1 … kmax: m[k][i][j].
std::vector<std::vector<double>> dense(std::int64_t n, int kmax,
                                       const std::vector<Triplet<double>> &e) {
  std::vector<std::vector<double>> m(kmax + 1, std::vector<double>(n * n, 0.0));
  for (const auto &t : e)
    m[t.k][t.i * n + t.j] = t.value;
  return m;
}

TEST(Slices, SummationMatchesDenseProducts) {
  const std::int64_t n = 60;
  const int kmax = 12;
  const auto e = random_triplets(n, kmax, 5, 0.3, 1);
  const auto s = Slices<double>::from_triplets(n, e);
  EXPECT_EQ(s.kmax, kmax >= s.kmax ? s.kmax : -1);
  EXPECT_LE(s.dmax(), 5);
  const auto m = dense(n, kmax, e);
  History<double> past(n, s.kmax);
  std::mt19937_64 g(2);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<std::vector<double>> a; // a[t] = a^{n−1−t}
  for (int t = 0; t < s.kmax; ++t)
    a.emplace_back();
  for (int t = s.kmax - 1; t >= 0; --t) { // oldest first
    a[t].resize(n);
    for (auto &x : a[t])
      x = u(g);
    past.push(a[t]);
  }
  std::vector<double> got(n, 0.0), ref(n, 0.0);
  sum_slices_scalar(s, past, 1, 0, n, got.data());
  for (int k = 1; k <= s.kmax; ++k)
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        ref[i] += m[k][i * n + j] * a[k - 1][j];
  for (std::int64_t i = 0; i < n; ++i)
    EXPECT_NEAR(got[i], ref[i], 1e-12) << "row " << i;
  // Slice intervals add up: [0, 20) + [20, 60) is the whole.
  std::vector<double> split(n, 0.0);
  sum_slices_scalar(s, past, 1, 0, 20, split.data());
  sum_slices_scalar(s, past, 1, 20, n, split.data());
  for (std::int64_t i = 0; i < n; ++i)
    EXPECT_NEAR(split[i], got[i], 1e-13);
}

// Marching on in time with M^0 = I: a^n = l^n − s^n. With n_g > 1 the n_g summation vectors of a
// block are completed by add_shell() as each a^m becomes known; the result must be the one-step
// marching's.
std::vector<std::vector<double>> march(const Slices<double> &s, int steps, int ng) {
  const std::int64_t n = s.n;
  History<double> past(n, s.kmax);
  std::vector<std::vector<double>> out;
  for (int n0 = 0; n0 < steps; n0 += ng) {
    const int nb = std::min(ng, steps - n0);
    std::vector<double> sums(static_cast<std::size_t>(nb * n), 0.0);
    sum_slices_scalar(s, past, nb, 0, n, sums.data());
    for (int g = 0; g < nb; ++g) {
      std::vector<double> a(n);
      for (std::int64_t i = 0; i < n; ++i) // an incident pulse, then free evolution
        a[i] = (n0 + g < 3 ? std::cos(0.3 * i + n0 + g) : 0.0) - sums[g * n + i];
      for (int h = g + 1; h < nb; ++h)
        add_shell(s, h - g, std::span<const double>(a), sums.data() + h * n);
      past.push(a);
      out.push_back(a);
    }
  }
  return out;
}

TEST(Slices, MultiStepSummationEqualsOneStep) {
  const std::int64_t n = 40;
  const auto e = random_triplets(n, 9, 4, 0.15, 3);
  auto s = Slices<double>::from_triplets(n, e);
  for (auto &v : s.values)
    v *= 0.05; // a stable marching: the sums stay of order one
  const auto one = march(s, 25, 1);
  for (int ng : {2, 3, 5, 8}) {
    const auto many = march(s, 25, ng);
    ASSERT_EQ(many.size(), one.size());
    for (std::size_t t = 0; t < one.size(); ++t)
      for (std::int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(many[t][i], one[t][i], 1e-12 * (1 + std::abs(one[t][i])))
            << "ng " << ng << " step " << t << " row " << i;
  }
}

TEST(Slices, EmptyRowsSingleUnknownAndGaps) {
  // unknown 1 has no interactions at all; (0, 0) has a gap at k = 3 (stored as a zero)
  const std::vector<Triplet<double>> e{{0, 0, 2, 1.5}, {0, 0, 4, -2.0}, {2, 0, 1, 0.5}};
  const auto s = Slices<double>::from_triplets(3, e);
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0].length, 3);
  EXPECT_EQ(s.values[1], 0.0);
  EXPECT_EQ(s.ptr[1] - s.ptr[0], 2);
  EXPECT_EQ(s.ptr[2] - s.ptr[1], 0);
  History<double> past(3, s.kmax);
  for (int t = 0; t < 4; ++t)
    past.push(std::vector<double>{1.0 + t, 7.0, 3.0}); // a^{n−1}(0) = 4, a^{n−2}(0) = 3, …
  std::vector<double> out(3, 0.0);
  sum_slices_scalar(s, past, 1, 0, 3, out.data());
  EXPECT_DOUBLE_EQ(out[0], 1.5 * 3.0 + -2.0 * 1.0); // k = 2: a^{n−2}, k = 4: a^{n−4}
  EXPECT_DOUBLE_EQ(out[1], 0.0);
  EXPECT_DOUBLE_EQ(out[2], 0.5 * 4.0);
  const auto one = Slices<double>::from_triplets(1, std::vector<Triplet<double>>{{0, 0, 1, 2.0}});
  History<double> p1(1, 1);
  p1.push(std::vector<double>{3.0});
  double s1 = 0;
  sum_slices_scalar(one, p1, 1, 0, 1, &s1);
  EXPECT_DOUBLE_EQ(s1, 6.0);
}

TEST(Slices, BadInputIsNamed) {
  using V = std::vector<Triplet<double>>;
  test::expect_error(
      [] {
        Slices<double>::from_triplets(2, V{{0, 2, 1, 1.0}});
      },
      ErrorCode::invalid_argument, "entry 0: (i, j) = (0, 2) outside 0 … 1");
  test::expect_error(
      [] {
        Slices<double>::from_triplets(2, V{{0, 1, 0, 1.0}});
      },
      ErrorCode::invalid_argument, "k = 0");
  test::expect_error(
      [] {
        Slices<double>::from_triplets(2, V{{1, 1, 2, NAN}});
      },
      ErrorCode::non_finite, "M^2(1, 1)");
  test::expect_error(
      [] {
        Slices<double>::from_triplets(2, V{{1, 0, 3, 1.0}, {1, 0, 3, 2.0}});
      },
      ErrorCode::invalid_argument, "M^3(1, 0) given twice");
  const auto s = Slices<double>::from_triplets(2, V{{1, 0, 3, 1.0}});
  History<double> shallow(2, 2);
  double out[2] = {0, 0};
  test::expect_error([&] { sum_slices_scalar(s, shallow, 1, 0, 2, out); },
                     ErrorCode::shape_mismatch, "depth 2");
}

} // namespace
} // namespace ksum::bem
