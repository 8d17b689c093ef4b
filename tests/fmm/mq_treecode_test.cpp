// The multiquadric treecode (seed 000 §3.2–3.3) against the direct fp64 sum: per target,
// |u_i − ũ_i| ≤ tolerance · Σ_j |w_j| φ_ij, for uniform and clustered points, small and large c,
// tolerances 1e-3 … 1e-9; N = 0 and 1; bad options refused.
#include "fmm/fmm3d/mq_treecode.hpp"
#include "fmm/mq_reference.hpp"
#include "support/expect_error.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <random>

namespace {

using ksum::Table;

Table<double> points(std::int64_t n, bool clustered, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> g(0, 1);
  Table<double> p(n, 3);
  for (std::int64_t i = 0; i < n; ++i)
    for (int a = 0; a < 3; ++a)
      p(i, a) = clustered ? (i % 3 == 0 ? 0.05 * g(rng) : 0.3 + 0.2 * g(rng)) : u(rng);
  return p;
}

TEST(MqTreecode, MeetsItsErrorBoundAgainstTheDirectSum) {
  for (const bool clustered : {false, true}) {
    const std::int64_t n = 500;
    const auto p = points(n, clustered, 3);
    std::mt19937_64 rng(4);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> w(static_cast<std::size_t>(n));
    for (auto &x : w)
      x = u(rng);
    for (const double c : {0.01, 0.2}) {
      const auto ref = ksum::test::mq_reference(p, w, c);
      for (const double tol : {1e-3, 1e-6, 1e-9}) {
        ksum::fmm::MqTreecode tc(p, {.c = c, .tolerance = tol, .leaf_size = 16});
        const auto got = tc.apply(w);
        const double worst = ksum::test::worst_scaled(got, ref.exact, ref.scale);
        SCOPED_TRACE(::testing::Message() << "clustered " << clustered << " c " << c << " tol "
                                          << tol << " terms " << tc.stats().terms);
        EXPECT_LE(worst, tol + 1e-14);
        EXPECT_GT(tc.stats().series_pairs, 0); // the series did part of the work
      }
    }
  }
}

TEST(MqTreecode, TinyInputsAndBadOptions) {
  ksum::fmm::MqTreecode none(Table<double>(0, 3), {});
  EXPECT_TRUE(none.apply({}).empty());
  Table<double> one(1, 3);
  ksum::fmm::MqTreecode single(one, {.c = 0.5});
  EXPECT_DOUBLE_EQ(single.apply({2.0})[0], 1.0); // w φ(0) = 2 · 0.5
  using ksum::ErrorCode;
  ksum::test::expect_error([&] { ksum::fmm::MqTreecode(one, {.c = -1}); },
                           ErrorCode::invalid_argument, "c = -1");
  ksum::test::expect_error([&] { ksum::fmm::MqTreecode(one, {.tolerance = 1e-16}); },
                           ErrorCode::invalid_argument, "tolerance");
  ksum::test::expect_error(
      [&] {
        (void)single.apply({1.0, 2.0});
      },
      ErrorCode::shape_mismatch, "2 weights for 1 points");
}

} // namespace
