// Kernel density estimation: the bandwidth rules against hand-computed values, the density against
// an independent fp64 direct sum within the promised bound tolerance · peak, unit mass on grids,
// weights, grids, and every refused input (code and message).
#include "support/expect_error.hpp"

#include <ksum/kde.hpp>

#include <cmath>
#include <gtest/gtest.h>
#include <numbers>
#include <random>
#include <vector>

namespace {

using ksum::Bandwidth;
using ksum::BandwidthRule;
using ksum::ErrorCode;
using ksum::GaussMethod;
using ksum::KdeInfo;
using ksum::KdeOptions;
using ksum::Table;
using ksum::test::expect_error;

Table<double> from_rows(const std::vector<std::vector<double>> &rows) {
  Table<double> t(static_cast<std::int64_t>(rows.size()),
                  static_cast<std::int64_t>(rows.front().size()));
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t k = 0; k < rows[i].size(); ++k)
      t(static_cast<std::int64_t>(i), static_cast<std::int64_t>(k)) = rows[i][k];
  return t;
}

Table<double> column(const std::vector<double> &v) {
  Table<double> t(static_cast<std::int64_t>(v.size()), 1);
  for (std::size_t i = 0; i < v.size(); ++i)
    t(static_cast<std::int64_t>(i), 0) = v[i];
  return t;
}

// Two Gaussian clusters per axis (a bimodal density), fixed seed.
Table<double> clusters(std::int64_t n, std::int64_t d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::bernoulli_distribution side(0.3);
  Table<double> t(n, d);
  for (std::int64_t i = 0; i < n; ++i) {
    const double shift = side(rng) ? 3.0 : 0.0;
    for (std::int64_t k = 0; k < d; ++k)
      t(i, k) = shift + (k + 1) * 0.5 * g(rng);
  }
  return t;
}

// The density written out from its definition, in long double, independent of the library:
// f(y) = Σ_i w_i Π_k exp(−(y_k − x_ik)²/(2σ_k²)) / (√(2π) σ_k), with w_i = 1/n when unweighted.
double reference(const Table<double> &x, const std::vector<double> &w,
                 const std::vector<double> &sigma, const Table<double> &y, std::int64_t row) {
  long double sum = 0, wsum = 0;
  for (std::int64_t i = 0; i < x.rows(); ++i) {
    long double term = w.empty() ? 1.0L : w[i];
    wsum += term;
    for (std::int64_t k = 0; k < x.cols(); ++k) {
      const long double z = (static_cast<long double>(y(row, k)) - x(i, k)) / sigma[k];
      term *= std::exp(-z * z / 2) / (std::sqrt(2 * std::numbers::pi_v<long double>) * sigma[k]);
    }
    sum += term;
  }
  return static_cast<double>(sum / wsum);
}

// max_i |f_i − ref_i| / (tolerance · peak): the library promises ≤ 1 (up to rounding).
template <class T>
double error_ratio(const Table<double> &x, const std::vector<double> &w, const Table<double> &y,
                   const Table<T> &f, const KdeInfo &info, double tolerance) {
  double worst = 0;
  for (std::int64_t i = 0; i < y.rows(); ++i) {
    const double ref = reference(x, w, info.sigma, y, i);
    if (!std::isfinite(static_cast<double>(f(i, 0))))
      return INFINITY;
    worst = std::max(worst, std::abs(static_cast<double>(f(i, 0)) - ref) / (tolerance * info.peak));
  }
  return worst;
}

TEST(KdeBandwidth, ScottAndSilvermanByHand) {
  // Columns {0,1,2,3,4} (mean 2, Σ dev² = 10, s² = 10/4) and {1,1,2,2,4} (mean 2, Σ dev² = 6,
  // s² = 6/4). d = 2: both factors are 5^{−1/6} since (d + 2)/4 = 1.
  const auto x = from_rows({{0, 1}, {1, 1}, {2, 2}, {3, 2}, {4, 4}});
  for (const auto rule : {BandwidthRule::scott, BandwidthRule::silverman}) {
    const auto s = ksum::kde_bandwidth(x, Bandwidth{rule, 0});
    ASSERT_EQ(s.size(), 2u);
    EXPECT_NEAR(s[0], 1.2091355875609788, 1e-15); // 5^{−1/6} √2.5
    EXPECT_NEAR(s[1], 0.936592398786078, 1e-15);  // 5^{−1/6} √1.5
  }
  // d = 1: Scott 5^{−1/5} √2.5, Silverman (5 · 3/4)^{−1/5} √2.5.
  const auto x1 = column({0, 1, 2, 3, 4});
  EXPECT_NEAR(ksum::kde_bandwidth(x1, {BandwidthRule::scott, 0})[0], 1.145977269496164, 1e-15);
  EXPECT_NEAR(ksum::kde_bandwidth(x1, {BandwidthRule::silverman, 0})[0], 1.2138464451503568, 1e-15);
  const auto fixed = ksum::kde_bandwidth(x, {BandwidthRule::fixed, 0.25});
  EXPECT_EQ(fixed, (std::vector<double>{0.25, 0.25}));
  // The same in float data.
  EXPECT_NEAR(ksum::kde_bandwidth(x.cast<float>(), {BandwidthRule::scott, 0})[1], 0.936592398786078,
              1e-12);
}

TEST(KdeBandwidth, WeightedAsScipy) {
  // x = {0,1,2,3}, w = {1,1,1,3}/6: mean 2, Σ w dev² = 8/6, 1 − Σw² = 2/3, so s² = 2; n_eff = 3.
  const auto x = column({0, 1, 2, 3});
  const auto w = column({1, 1, 1, 3});
  const auto s = ksum::kde_bandwidth(x, {BandwidthRule::scott, 0}, &w);
  EXPECT_NEAR(s[0], 1.1352480037218777, 1e-15); // 3^{−1/5} √2
}

TEST(KdeBandwidth, Parse) {
  EXPECT_EQ(ksum::parse_bandwidth("scott").rule, BandwidthRule::scott);
  EXPECT_EQ(ksum::parse_bandwidth("silverman").rule, BandwidthRule::silverman);
  const auto b = ksum::parse_bandwidth("0.35");
  EXPECT_EQ(b.rule, BandwidthRule::fixed);
  EXPECT_EQ(b.sigma, 0.35);
  expect_error([] { ksum::parse_bandwidth("wide"); }, ErrorCode::invalid_argument,
               "bandwidth 'wide': expected scott, silverman, or a positive number");
  expect_error([] { ksum::parse_bandwidth(""); }, ErrorCode::invalid_argument, "bandwidth ''");
  expect_error([] { ksum::parse_bandwidth("0.1x"); }, ErrorCode::invalid_argument,
               "bandwidth '0.1x'");
  for (const char *bad : {"0", "-1", "inf", "nan"})
    expect_error([&] { ksum::parse_bandwidth(bad); }, ErrorCode::invalid_argument,
                 std::string("bandwidth '") + bad +
                     "': the kernel's standard deviation σ must be "
                     "positive and finite");
}

struct Case {
  std::int64_t d;
  GaussMethod method;
  double tol;
  std::int64_t n = 3000; // data points (evaluated at 200)
};

class KdeAccuracy : public ::testing::TestWithParam<Case> {};

TEST_P(KdeAccuracy, WithinToleranceTimesPeak) {
  const auto [d, method, tol, n] = GetParam();
  const auto x = clusters(n, d, 7 + d);
  const auto y = clusters(200, d, 99 + d);
  KdeOptions o;
  o.method = method;
  o.tolerance = tol;
  o.backend = ksum::Backend::cpu; // the method asked for is the one run (a GPU may fall back)
  KdeInfo info;
  const auto f = ksum::kernel_density(x, y, o, &info);
  ASSERT_EQ(f.rows(), y.rows());
  ASSERT_EQ(f.cols(), 1);
  EXPECT_EQ(f.names, std::vector<std::string>{"density"});
  EXPECT_EQ(info.sigma, ksum::kde_bandwidth(x, o.bandwidth));
  EXPECT_EQ(info.effective_n, static_cast<double>(n));
  EXPECT_DOUBLE_EQ(info.error_bound, tol * info.peak);
  if (method != GaussMethod::automatic) {
    EXPECT_EQ(info.stats.method, method);
  }
  EXPECT_LE(error_ratio(x, {}, y, f, info, tol), 1.0 + 1e-3);
  // float: the same points in float precision, the same guarantee at float's tolerances.
  if (tol >= 1e-5) {
    const auto xf = x.cast<float>(), yf = y.cast<float>();
    KdeInfo fi;
    const auto ff = ksum::kernel_density(xf, yf, o, &fi);
    EXPECT_LE(error_ratio(xf.cast<double>(), {}, yf.cast<double>(), ff, fi, tol), 1.0 + 1e-2);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kde, KdeAccuracy,
    ::testing::Values(Case{1, GaussMethod::direct, 1e-6}, Case{1, GaussMethod::fgt, 1e-6},
                      Case{1, GaussMethod::fgt, 1e-10}, Case{1, GaussMethod::automatic, 1e-4},
                      Case{2, GaussMethod::fgt, 1e-6}, Case{2, GaussMethod::ifgt, 1e-5, 1000},
                      Case{2, GaussMethod::automatic, 1e-9}, Case{3, GaussMethod::automatic, 1e-6},
                      Case{3, GaussMethod::ifgt, 1e-6, 400},
                      Case{5, GaussMethod::automatic, 1e-5}));

TEST(KdeAccuracy, FixedBandwidthAndSilverman) {
  const auto x = clusters(1500, 2, 3);
  const auto y = clusters(100, 2, 4);
  for (const auto b : {Bandwidth{BandwidthRule::fixed, 0.2}, Bandwidth{BandwidthRule::silverman}}) {
    KdeOptions o;
    o.bandwidth = b;
    KdeInfo info;
    const auto f = ksum::kernel_density(x, y, o, &info);
    EXPECT_LE(error_ratio(x, {}, y, f, info, o.tolerance), 1.0 + 1e-3);
  }
}

// Σ f · cell volume over a grid that covers the data: 1 up to the mass outside the box, the
// Riemann sum's error (exponentially small at spacing σ/4) and tolerance · peak · box volume.
template <class T> double grid_mass(const Table<T> &x, double padding, double spacing) {
  KdeOptions o;
  o.tolerance = sizeof(T) == 4 ? 1e-6 : 1e-10;
  const auto sigma = ksum::kde_bandwidth(x, o.bandwidth);
  const auto box = ksum::kde_range(x, sigma, padding);
  std::vector<std::int64_t> counts;
  for (std::size_t k = 0; k < sigma.size(); ++k)
    counts.push_back(
        static_cast<std::int64_t>(std::ceil((box.hi[k] - box.lo[k]) / (spacing * sigma[k]))) + 1);
  const auto f = ksum::kernel_density(x, ksum::kde_grid<T>(box.lo, box.hi, counts), o);
  double sum = 0;
  for (const T v : f.col(0))
    sum += static_cast<double>(v);
  return sum * ksum::kde_cell_volume(box.lo, box.hi, counts);
}

TEST(KdeMass, IntegratesToOneIn1D) {
  const auto x = clusters(2000, 1, 11);
  EXPECT_NEAR(grid_mass(x, 7.0, 0.25), 1.0, 1e-7);
  EXPECT_NEAR(grid_mass(x.cast<float>(), 7.0, 0.25), 1.0, 1e-4);
  // The default 3σ padding loses at most the tails of the outermost kernels.
  EXPECT_NEAR(grid_mass(x, 3.0, 0.25), 1.0, 3e-3);
}

TEST(KdeMass, IntegratesToOneIn2D) {
  const auto x = clusters(1000, 2, 12);
  EXPECT_NEAR(grid_mass(x, 7.0, 0.3), 1.0, 1e-6);
  EXPECT_NEAR(grid_mass(x, 3.0, 0.3), 1.0, 5e-3);
}

TEST(KdeWeights, AgainstReferenceAndDuplicates) {
  const auto x = clusters(800, 2, 21);
  const auto y = clusters(60, 2, 22);
  std::vector<double> w(800);
  for (std::size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<double>(i % 5); // zeros included
  const auto wt = column(w);
  KdeOptions o;
  o.tolerance = 1e-9;
  KdeInfo info;
  const auto f = ksum::kernel_density(x, wt, y, o, &info);
  EXPECT_LE(error_ratio(x, w, y, f, info, o.tolerance), 1.0 + 1e-3);
  EXPECT_LT(info.effective_n, 800.0);
  EXPECT_EQ(info.sigma, ksum::kde_bandwidth(x, o.bandwidth, &wt));

  // Integer weights are repeated points (fixed σ, since the rules see n_eff instead of n).
  const auto few = from_rows({{0, 0}, {1, 0.5}, {2, -1}});
  const auto many = from_rows({{0, 0}, {0, 0}, {0, 0}, {1, 0.5}, {2, -1}, {2, -1}});
  o.bandwidth = {BandwidthRule::fixed, 0.7};
  const auto a = ksum::kernel_density(few, column({3, 1, 2}), y, o);
  const auto b = ksum::kernel_density(many, y, o);
  for (std::int64_t i = 0; i < y.rows(); ++i)
    EXPECT_NEAR(a(i, 0), b(i, 0), 2e-9 / (2 * std::numbers::pi * 0.49));

  // Equal weights are no weights at all (same σ: n_eff = n and the same variance).
  KdeOptions s;
  const auto u = ksum::kernel_density(x, y, s);
  const auto e = ksum::kernel_density(x, Table<double>(800, 1, 2.5), y, s);
  for (std::int64_t i = 0; i < y.rows(); ++i)
    EXPECT_NEAR(u(i, 0), e(i, 0), 1e-12);
}

TEST(KdeGrid, FirstCoordinateFastestEndsIncluded) {
  const std::vector<double> lo{0, -1}, hi{1, 1};
  const std::vector<std::int64_t> counts{3, 2};
  const auto g = ksum::kde_grid<double>(lo, hi, counts);
  ASSERT_EQ(g.rows(), 6);
  ASSERT_EQ(g.cols(), 2);
  const double want[6][2] = {{0, -1}, {0.5, -1}, {1, -1}, {0, 1}, {0.5, 1}, {1, 1}};
  for (int i = 0; i < 6; ++i)
    for (int k = 0; k < 2; ++k)
      EXPECT_EQ(g(i, k), want[i][k]);
  EXPECT_DOUBLE_EQ(ksum::kde_cell_volume(lo, hi, counts), 0.5 * 2);
  const auto g3 = ksum::kde_grid<float>(std::vector<double>{0, 0, 0}, std::vector<double>{1, 2, 3},
                                        std::vector<std::int64_t>{2, 3, 4});
  EXPECT_EQ(g3.rows(), 24);
  EXPECT_EQ(g3(23, 2), 3.0f);
  const auto box = ksum::kde_range(column({-1, 4, 2}), std::vector<double>{0.5}, 3.0);
  EXPECT_EQ(box.lo, std::vector<double>{-2.5});
  EXPECT_EQ(box.hi, std::vector<double>{5.5});
}

TEST(KdeContract, NoEvaluationPoints) {
  const auto f = ksum::kernel_density(column({0, 1, 3}), Table<double>(0, 1), KdeOptions{});
  EXPECT_EQ(f.rows(), 0);
  EXPECT_EQ(f.cols(), 1);
}

TEST(KdeContract, RefusedData) {
  const KdeOptions o;
  const auto y = column({0.5});
  expect_error([&] { ksum::kernel_density(Table<double>(0, 1), y, o); }, ErrorCode::empty_input,
               "KDE data: no points");
  expect_error([&] { ksum::kernel_density(column({2.0}), y, o); }, ErrorCode::invalid_argument,
               "the scott rule needs at least 2 data points to estimate the spread, got 1");
  KdeOptions sil;
  sil.bandwidth = {BandwidthRule::silverman, 0};
  expect_error([&] { ksum::kernel_density(column({2.0}), y, sil); }, ErrorCode::invalid_argument,
               "the silverman rule needs at least 2 data points");
  auto flat = from_rows({{0, 5}, {1, 5}, {2, 5}});
  expect_error(
      [&] {
        ksum::kernel_density(flat, from_rows({{0, 0}}), o);
      },
      ErrorCode::invalid_argument,
      "KDE data column 1: every point has the value 5 (zero spread), so the scott rule");
  flat.names = {"time", "height"};
  expect_error([&] { ksum::kde_bandwidth(flat, o.bandwidth); }, ErrorCode::invalid_argument,
               "column 1 (height)");
  auto nan = column({0, 1, NAN});
  expect_error([&] { ksum::kernel_density(nan, y, o); }, ErrorCode::non_finite,
               "KDE data: non-finite value nan at row 2, column 0");
  expect_error(
      [&] {
        ksum::kernel_density(column({0, 1}), from_rows({{0, 0}}), o);
      },
      ErrorCode::shape_mismatch, "KDE evaluation points have 2 columns but the data have 1");
  expect_error(
      [&] {
        ksum::kernel_density(column({0, 1}), column({0, INFINITY}), o);
      },
      ErrorCode::non_finite, "KDE evaluation points: non-finite value inf at row 1");
  // One point is fine with a fixed σ, but a bad fixed σ is not.
  KdeOptions fixed;
  fixed.bandwidth = {BandwidthRule::fixed, 1.0};
  EXPECT_NEAR(ksum::kernel_density(column({2.0}), column({2.0}), fixed)(0, 0),
              1 / std::sqrt(2 * std::numbers::pi), 1e-6 / std::sqrt(2 * std::numbers::pi));
  for (const double bad : {0.0, -2.0, double(INFINITY), double(NAN)}) {
    fixed.bandwidth.sigma = bad;
    expect_error(
        [&] {
          ksum::kernel_density(column({0, 1}), y, fixed);
        },
        ErrorCode::invalid_argument, "the kernel's standard deviation must be positive and finite");
  }
}

TEST(KdeContract, RefusedWeights) {
  const KdeOptions o;
  const auto x = column({0, 1, 2, 3});
  const auto y = column({1.5});
  expect_error(
      [&] {
        ksum::kernel_density(x, column({1, 1, -1, 1}), y, o);
      },
      ErrorCode::invalid_argument, "KDE weights: negative weight -1 at row 2");
  expect_error(
      [&] {
        ksum::kernel_density(x, column({1, 1, 1}), y, o);
      },
      ErrorCode::shape_mismatch, "KDE weights are 3 x 1 but the data have 4 points");
  expect_error([&] { ksum::kernel_density(x, Table<double>(4, 2, 1.0), y, o); },
               ErrorCode::shape_mismatch, "KDE weights are 4 x 2");
  expect_error(
      [&] {
        ksum::kernel_density(x, column({0, 0, 0, 0}), y, o);
      },
      ErrorCode::invalid_argument, "KDE weights sum to 0");
  expect_error(
      [&] {
        ksum::kernel_density(x, column({0, 1, NAN, 0}), y, o);
      },
      ErrorCode::non_finite, "KDE weights: non-finite value nan at row 2");
  expect_error(
      [&] {
        ksum::kernel_density(x, column({0, 0, 0, 7}), y, o);
      },
      ErrorCode::invalid_argument,
      "all the weight is on one data point (row 3), so the scott rule has no spread");
  expect_error(
      [&] {
        ksum::kernel_density(x, column({0, 2, 0, 0}), y, o);
      },
      ErrorCode::invalid_argument, "(row 1)");
  expect_error(
      [&] {
        ksum::kernel_density(column({0, 5, 5, 9}), column({0, 1, 2, 0}), y, o);
      },
      ErrorCode::invalid_argument,
      "column 0: every point with positive weight has the value 5 (zero spread)");
}

TEST(KdeContract, RefusedGridsAndTolerance) {
  const std::vector<double> lo{0, 0}, hi{1, 1}, hi1{1};
  const std::vector<std::int64_t> counts{4, 4};
  expect_error([&] { ksum::kde_grid<double>(lo, hi1, counts); }, ErrorCode::invalid_argument,
               "KDE grid: 2 lower bounds, 1 upper bounds and 2 counts");
  expect_error(
      [&] {
        ksum::kde_grid<double>(lo, std::vector<double>{1, -1}, counts);
      },
      ErrorCode::invalid_argument, "KDE grid: axis 1 has range [0, -1]");
  expect_error(
      [&] {
        ksum::kde_grid<double>(lo, hi, std::vector<std::int64_t>{4, 0});
      },
      ErrorCode::invalid_argument, "axis 1 has 0 points");
  const auto x = column({0, 1, 2});
  expect_error(
      [&] {
        ksum::kde_range(x, std::vector<double>{0.1, 0.1});
      },
      ErrorCode::shape_mismatch, "KDE range: 2 bandwidths for data of dimension 1");
  expect_error([&] { ksum::kde_range(x, std::vector<double>{0.1}, -1.0); },
               ErrorCode::invalid_argument, "KDE range: padding -1");
  KdeOptions o;
  o.tolerance = 0;
  expect_error([&] { ksum::kernel_density(x, x, o); }, ErrorCode::invalid_argument, "tolerance");
}

} // namespace
