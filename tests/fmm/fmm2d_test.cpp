// The adaptive 2D FMM (seed 004 Paper IV) against the long-double direct sum: the error bound
// max_i |u_i − ref_i| ≤ tol · max_i |ref_i| over tolerances 1e-3 … 1e-12, three distributions and
// both kernels; moves of θ and Nlevels; separate targets; degenerate and bad inputs.
#include "fmm/fmm2d/pyramid.hpp"
#include "fmm/fmm2d_reference.hpp"
#include "support/expect_error.hpp"

#include <ksum/error.hpp>
#include <ksum/fmm2d.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <complex>
#include <string>
#include <tuple>
#include <vector>

namespace ksum {
namespace {

using cd = std::complex<double>;

std::vector<std::int64_t> sample(std::int64_t n, int count = 200) {
  std::vector<std::int64_t> at;
  for (int i = 0; i < count && i < n; ++i)
    at.push_back((static_cast<std::int64_t>(i) * 7919) % n);
  return at;
}

double run_error(const std::string &kind, bool harmonic, double tol, double theta, int levels,
                 std::int64_t n = 12000) {
  const auto z = test::fmm2d_points(kind, n, 11);
  const auto q = test::fmm2d_strengths(n, 12, harmonic);
  Fmm2dOptions o;
  o.kernel = harmonic ? Fmm2dKernel::harmonic : Fmm2dKernel::log;
  o.tolerance = tol;
  o.theta = theta;
  o.levels = levels;
  Fmm2d<double> f(o);
  f.set_points(z);
  const auto u = f.execute(q);
  const auto at = sample(n);
  return test::fmm2d_error(u, test::fmm2d_reference(harmonic, z, q, {}, at), at);
}

class Fmm2dAccuracy : public ::testing::TestWithParam<std::tuple<std::string, bool, double>> {};

TEST_P(Fmm2dAccuracy, MeetsTheToleranceAgainstTheLongDoubleSum) {
  const auto &[kind, harmonic, tol] = GetParam();
  const double err = run_error(kind, harmonic, tol, 0.5, 0);
  EXPECT_LE(err, tol) << kind << (harmonic ? " harmonic" : " log") << " tol " << tol;
  EXPECT_TRUE(std::isfinite(err));
}

INSTANTIATE_TEST_SUITE_P(Matrix, Fmm2dAccuracy,
                         ::testing::Combine(::testing::Values("uniform", "line", "cluster"),
                                            ::testing::Bool(),
                                            ::testing::Values(1e-3, 1e-6, 1e-9, 1e-12)),
                         [](const auto &info) {
                           const double tol = std::get<2>(info.param);
                           return std::get<0>(info.param) +
                                  (std::get<1>(info.param) ? "_harmonic_" : "_log_") + "tol1em" +
                                  std::to_string(static_cast<int>(std::lround(-std::log10(tol))));
                         });

TEST(Fmm2d, ErrorSitsCloseBelowTheTolerance) {
  // The order follows the calibrated C(p, θ) θ^p ≤ tol/2 (issue 26): the error stays under the
  // tolerance but no longer orders of magnitude under it (the old C = 0.5 put it 50 … 1000×
  // below). Harmonic within 50× below, log (whose monopole is exact) within 1000× below. (The
  // "cluster" points hold a cluster of width 1e-7, which keeps the old constant: degenerate_boxes.)
  for (const char *kind : {"uniform", "line"})
    for (bool harmonic : {true, false})
      for (double tol : {1e-3, 1e-6, 1e-9}) {
        const double err = run_error(kind, harmonic, tol, 0.5, 0);
        EXPECT_LE(err, tol) << kind << (harmonic ? " harmonic " : " log ") << tol;
        EXPECT_GE(err, tol / (harmonic ? 50 : 1000))
            << kind << (harmonic ? " harmonic " : " log ") << tol;
        std::printf("%s %s tol %.0e: error %.2e (tol / %.0f)\n", kind,
                    harmonic ? "harmonic" : "log", tol, err, tol / err);
      }
}

TEST(Fmm2d, ThetaAndLevelMovesStayWithinTheTolerance) {
  // The autotuner moves θ and Nlevels between calls; the result must stay within the tolerance of
  // the exact sum for every setting (seed 004 Paper IV §4).
  const std::int64_t n = 8000;
  const auto z = test::fmm2d_points("uniform", n, 3);
  const auto q = test::fmm2d_strengths(n, 4);
  const auto at = sample(n);
  const auto ref = test::fmm2d_reference(true, z, q, {}, at);
  Fmm2dOptions o;
  o.tolerance = 1e-8;
  Fmm2d<double> f(o);
  f.set_points(z);
  for (double theta : {0.35, 0.45, 0.55, 0.65, 0.75})
    for (int levels : {2, 4, 5, 6, 7}) {
      f.set_parameters(theta, levels);
      const auto u = f.execute(q);
      EXPECT_EQ(f.levels(), levels);
      EXPECT_LE(test::fmm2d_error(u, ref, at), 1e-8) << "θ " << theta << " levels " << levels;
    }
}

TEST(Fmm2d, SeparateTargetsIncludingOneOnASource) {
  const std::int64_t n = 6000, m = 3000;
  auto z = test::fmm2d_points("cluster", n, 5);
  auto t = test::fmm2d_points("uniform", m, 6);
  t[17] = z[100]; // on top of a source: that source contributes 0
  const auto q = test::fmm2d_strengths(n, 7);
  for (bool harmonic : {true, false}) {
    Fmm2dOptions o;
    o.kernel = harmonic ? Fmm2dKernel::harmonic : Fmm2dKernel::log;
    o.tolerance = 1e-10;
    Fmm2d<double> f(o);
    f.set_points(z, t);
    const auto u = f.execute(q);
    ASSERT_EQ(u.size(), static_cast<std::size_t>(m));
    auto at = sample(m);
    at.push_back(17);
    EXPECT_LE(test::fmm2d_error(u, test::fmm2d_reference(harmonic, z, q, t, at), at), 1e-10);
  }
}

TEST(Fmm2d, ResultDoesNotDependOnTheThreadCount) {
  const std::int64_t n = 20000;
  const auto z = test::fmm2d_points("uniform", n, 8);
  const auto q = test::fmm2d_strengths(n, 9);
  std::vector<cd> first;
  for (int threads : {1, 2, 3}) {
    Fmm2dOptions o;
    o.threads = threads;
    Fmm2d<double> f(o);
    f.set_points(z);
    const auto u = f.execute(q);
    if (first.empty())
      first = u;
    else
      EXPECT_EQ(u, first) << threads << " threads"; // every box sums in a fixed order
  }
}

// The task sizes (the downward pass's subtree level, the near field's leaves per task) change
// how the work is split, never a result's bits; 0 / −1 (the model) first runs the defaults and
// then its choice from the measured times.
TEST(Fmm2d, ResultsDoNotDependOnTheTaskSizes) {
  const std::int64_t n = 20000;
  const auto z = test::fmm2d_points("line", n, 8);
  const auto q = test::fmm2d_strengths(n, 9);
  std::vector<cd> first;
  const std::vector<std::pair<int, std::int64_t>> sizes{
      {-1, 0}, {0, 1}, {1, 7}, {3, 1000}, {14, 2}};
  for (const auto &[level, chunk] : sizes) {
    Fmm2dOptions o;
    o.threads = 2;
    o.subtree_level = level;
    o.near_chunk = chunk;
    Fmm2d<double> f(o);
    f.set_points(z);
    for (int run = 0; run < 3; ++run) {
      const auto u = f.execute(q);
      const int L = f.levels();
      EXPECT_GE(f.stats().subtree_level, 0);
      EXPECT_LT(f.stats().subtree_level, L);
      EXPECT_GE(f.stats().near_chunk, 1);
      if (level >= 0) {
        EXPECT_EQ(f.stats().subtree_level, std::min(level, L - 1));
      }
      if (chunk > 0) {
        EXPECT_EQ(f.stats().near_chunk, chunk);
      }
      if (first.empty())
        first = u;
      else
        ASSERT_EQ(u, first) << "subtree level " << level << ", chunk " << chunk << ", run " << run;
    }
  }
  Fmm2dOptions bad;
  bad.subtree_level = -2;
  test::expect_error([&] { Fmm2d<double> f(bad); }, ErrorCode::invalid_argument, "subtree level");
  bad = {};
  bad.near_chunk = -1;
  test::expect_error([&] { Fmm2d<double> f(bad); }, ErrorCode::invalid_argument, "leaves per task");
}

TEST(Fmm2d, DirectMethodIsTheExactSum) {
  const std::int64_t n = 3000;
  const auto z = test::fmm2d_points("line", n, 1);
  const auto q = test::fmm2d_strengths(n, 2);
  Fmm2dOptions o;
  o.method = Method::direct;
  Fmm2d<double> f(o);
  f.set_points(z);
  const auto u = f.execute(q);
  const auto at = sample(n);
  EXPECT_LE(test::fmm2d_error(u, test::fmm2d_reference(true, z, q, {}, at), at), 1e-13);
}

TEST(Fmm2d, FloatMeetsItsTolerancesAndRefusesTighterOnes) {
  const std::int64_t n = 10000;
  const auto z0 = test::fmm2d_points("uniform", n, 21);
  const auto q0 = test::fmm2d_strengths(n, 22);
  // The reference sums the float inputs (rounded once), so only the FMM's own error is measured.
  std::vector<std::complex<float>> zf(z0.begin(), z0.end()), qf(q0.begin(), q0.end());
  const std::vector<cd> z(zf.begin(), zf.end()), q(qf.begin(), qf.end());
  const auto at = sample(n);
  const auto ref = test::fmm2d_reference(true, z, q, {}, at);
  for (double tol : {1e-3, 1e-5}) {
    Fmm2dOptions o;
    o.tolerance = tol;
    Fmm2d<float> f(o);
    f.set_points(zf);
    const auto u = f.execute(qf);
    std::vector<cd> ud(u.begin(), u.end());
    EXPECT_LE(test::fmm2d_error(ud, ref, at), tol) << tol;
  }
  Fmm2dOptions o;
  o.tolerance = 1e-8;
  test::expect_error([&] { Fmm2d<float> f(o); }, ErrorCode::invalid_argument,
                     "tolerance 1e-08 outside 1e-06");
}

TEST(Fmm2d, FloatClustersWithZeroSizeBoxesAndSeparateTargets) {
  // In float the narrowest clusters (width 1e-7) collapse to repeated points: boxes of zero size
  // next to boxes of finite size. Their expansions' scales must not overflow (this gave NaN).
  const std::int64_t n = 20000, m = 7000;
  const auto [zf, tf, qf, z, t, q] = test::fmm2d_float_case(n, m);
  for (bool separate : {true, false}) {
    Fmm2dOptions o;
    o.tolerance = 1e-5;
    Fmm2d<float> f(o);
    if (separate)
      f.set_points(zf, tf);
    else
      f.set_points(zf);
    const auto u = f.execute(qf);
    std::vector<cd> ud(u.begin(), u.end());
    auto at = sample(separate ? m : n);
    if (separate)
      at.push_back(3);
    const auto ref = test::fmm2d_reference(true, z, q, separate ? t : std::vector<cd>{}, at);
    EXPECT_LE(test::fmm2d_error(ud, ref, at), 1e-5) << "separate " << separate;
    // The same repeated points in double, at a loose and a tight tolerance.
    for (double tol : {1e-3, 1e-9}) {
      o.tolerance = tol;
      Fmm2d<double> g(o);
      if (separate)
        g.set_points(z, t);
      else
        g.set_points(z);
      EXPECT_LE(test::fmm2d_error(g.execute(q), ref, at), tol) << "double " << tol;
    }
  }
}

TEST(Fmm2d, EmptyTinyAndOverRefinedInputs) {
  Fmm2dOptions o;
  Fmm2d<double> f(o);
  f.set_points(std::vector<cd>{});
  EXPECT_TRUE(f.execute(std::vector<cd>{}).empty());
  f.set_points(std::vector<cd>{{0.5, 0.5}});
  const auto one = f.execute(std::vector<cd>{{2.0, 0.0}});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0], cd(0, 0));
  // No sources, some targets: zeros.
  f.set_points(std::vector<cd>{}, std::vector<cd>{{0, 0}, {1, 1}});
  EXPECT_EQ(f.execute(std::vector<cd>{}), (std::vector<cd>{{0, 0}, {0, 0}}));
  // Far more levels than points: most boxes are empty.
  const std::int64_t n = 50;
  const auto z = test::fmm2d_points("uniform", n, 31);
  const auto q = test::fmm2d_strengths(n, 32);
  o.levels = 7;
  o.method = Method::fmm;
  Fmm2d<double> g(o);
  g.set_points(z);
  const auto u = g.execute(q);
  const auto at = sample(n);
  EXPECT_LE(test::fmm2d_error(u, test::fmm2d_reference(true, z, q, {}, at), at), 1e-6);
}

TEST(Fmm2d, IdenticalPointsCostNothingAndContributeNothingToEachOther) {
  // 200,000 copies of one point plus 1,000 others: the copies' boxes have zero size and are
  // dropped from each other's near field (every pair is at distance 0 and contributes 0), so this
  // is fast; a quadratic near field would take minutes.
  const std::int64_t copies = 200000, others = 1000;
  auto z = test::fmm2d_points("uniform", others, 41);
  z.insert(z.end(), copies, cd(0.25, 0.75));
  const std::int64_t n = static_cast<std::int64_t>(z.size());
  const auto q = test::fmm2d_strengths(n, 42);
  Fmm2dOptions o;
  o.tolerance = 1e-9;
  Fmm2d<double> f(o);
  f.set_points(z);
  const auto u = f.execute(q);
  std::vector<std::int64_t> at{0, 1, 500, 999, 1000, 1001, n / 2, n - 1};
  EXPECT_LE(test::fmm2d_error(u, test::fmm2d_reference(true, z, q, {}, at), at), 1e-9);
  EXPECT_LT(f.stats().p2p_pairs, 1e9);
}

TEST(Fmm2d, ExtremeClusteringStaysAccurate) {
  // Two clusters of width 1e-12 a distance 1 apart, and a uniform background.
  std::vector<cd> z = test::fmm2d_points("uniform", 2000, 51);
  const auto c = test::fmm2d_points("uniform", 4000, 52);
  for (std::size_t i = 0; i < c.size(); ++i)
    z.push_back((i % 2 ? cd(0.1, 0.1) : cd(0.9, 0.9)) + 1e-12 * (c[i] - cd(0.5, 0.5)));
  const std::int64_t n = static_cast<std::int64_t>(z.size());
  const auto q = test::fmm2d_strengths(n, 53);
  for (bool harmonic : {true, false}) {
    Fmm2dOptions o;
    o.kernel = harmonic ? Fmm2dKernel::harmonic : Fmm2dKernel::log;
    o.tolerance = 1e-6;
    o.levels = 8;
    Fmm2d<double> f(o);
    f.set_points(z);
    const auto u = f.execute(q);
    const auto at = sample(n);
    EXPECT_LE(test::fmm2d_error(u, test::fmm2d_reference(harmonic, z, q, {}, at), at), 1e-6);
  }
}

TEST(Fmm2d, GaussianCoreSmoothsTheNearFieldAndChecksItsRadius) {
  const std::int64_t n = 8000;
  const auto z = test::fmm2d_points("uniform", n, 61);
  const auto q = test::fmm2d_strengths(n, 62);
  const double core = 2e-3;
  Fmm2dOptions o;
  o.tolerance = 1e-8;
  o.smoothing = Fmm2dSmoothing::gaussian;
  o.core_radius = core;
  Fmm2d<double> f(o);
  f.set_points(z);
  const auto u = f.execute(q);
  const auto at = sample(n);
  EXPECT_LE(test::fmm2d_error(u, test::fmm2d_reference(true, z, q, {}, at, core), at), 1e-8);
  o.core_radius = 0.2; // wider than the gaps between weakly coupled boxes
  Fmm2d<double> g(o);
  test::expect_error([&] { g.set_points(z); }, ErrorCode::invalid_argument, "core radius");
}

TEST(Fmm2d, BadInputsGetClearErrors) {
  Fmm2dOptions o;
  o.theta = 1.2;
  test::expect_error([&] { Fmm2d<double> f(o); }, ErrorCode::invalid_argument, "θ = 1.2");
  o = {};
  o.tolerance = 1e-15;
  test::expect_error([&] { Fmm2d<double> f(o); }, ErrorCode::invalid_argument, "tolerance");
  o = {};
  o.order = 1;
  test::expect_error([&] { Fmm2d<double> f(o); }, ErrorCode::invalid_argument, "order 1");
  o = {};
  o.levels = 16;
  test::expect_error([&] { Fmm2d<double> f(o); }, ErrorCode::invalid_argument, "levels 16");
  o = {};
  o.kernel = Fmm2dKernel::log;
  o.smoothing = Fmm2dSmoothing::gaussian;
  o.core_radius = 0.1;
  test::expect_error([&] { Fmm2d<double> f(o); }, ErrorCode::invalid_argument, "harmonic");
  o = {};
  o.tolerance = 1e-13;
  o.theta = 0.9;
  test::expect_error(
      [&] {
        Fmm2d<double> f(o);
        f.set_points(std::vector<cd>{{0, 0}, {1, 1}});
      },
      ErrorCode::invalid_argument, "smaller θ");
  Fmm2d<double> f(Fmm2dOptions{});
  test::expect_error([&] { f.execute(std::vector<cd>{}); }, ErrorCode::invalid_argument,
                     "before set_points");
  std::vector<cd> z{{0, 0}, {1, std::nan("")}, {2, 2}};
  test::expect_error([&] { f.set_points(z); }, ErrorCode::non_finite, "source 1");
  z[1] = {1, 1};
  f.set_points(z);
  test::expect_error(
      [&] {
        f.execute(std::vector<cd>{{1, 0}});
      },
      ErrorCode::shape_mismatch, "1 strengths for 3 sources");
  test::expect_error(
      [&] {
        f.execute(std::vector<cd>{{1, 0}, {INFINITY, 0}, {0, 0}});
      },
      ErrorCode::non_finite, "strength 1");
  test::expect_error([&] { f.set_parameters(0.01, 3); }, ErrorCode::invalid_argument, "θ");
  EXPECT_THROW(parse_fmm2d_kernel("gauss"), Error);
  EXPECT_EQ(parse_fmm2d_kernel("log"), Fmm2dKernel::log);
  EXPECT_EQ(parse_fmm2d_smoothing("oseen"), Fmm2dSmoothing::gaussian);
}

TEST(Fmm2dPyramid, ParallelMedianSplitsAreExactAndThreadIndependent) {
  // 300,000 points: the top levels take the parallel selection (sampled bracket + three-way
  // partition) with 3 threads, the one-thread split with 1; both must give the exact rank
  // splits: with distinct coordinates every leaf holds the same points, with many equal
  // coordinates the same number of points.
  const std::int64_t n = 300000;
  auto z = test::fmm2d_points("line", n, 91);
  for (bool ties : {false, true}) {
    if (ties)
      for (std::int64_t i = 0; i < n; i += 3)
        z[i] = {std::round(z[i].real() * 50) / 50, z[i].imag()};
    fmm2d::Pyramid<double> one, three;
    fmm2d::build_pyramid<double>(one, z.data(), n, nullptr, 0, 6, 0.5, 1);
    fmm2d::build_pyramid<double>(three, z.data(), n, nullptr, 0, 6, 0.5, 3);
    ASSERT_EQ(one.src_off, three.src_off) << "ties " << ties;
    // The top levels' parallel three-way partition puts every point where the one-thread split
    // does: the same order, so every box sums in the same order.
    EXPECT_EQ(one.src_index, three.src_index) << "ties " << ties;
    {
      // Separate targets (split at the sources' values), some on the sources.
      const auto t = test::fmm2d_points("uniform", n / 3, 92);
      std::vector<cd> tt(t);
      for (std::size_t i = 0; i < tt.size(); i += 7)
        tt[i] = z[(i * 13) % n];
      fmm2d::Pyramid<double> a, b;
      fmm2d::build_pyramid<double>(a, z.data(), n, tt.data(), n / 3, 6, 0.5, 1);
      fmm2d::build_pyramid<double>(b, z.data(), n, tt.data(), n / 3, 6, 0.5, 4);
      EXPECT_EQ(a.src_index, b.src_index) << "ties " << ties;
      EXPECT_EQ(a.tgt_off, b.tgt_off) << "ties " << ties;
      EXPECT_EQ(a.tgt_index, b.tgt_index) << "ties " << ties;
    }
    for (std::size_t k = 0; k + 1 < one.src_off.size(); ++k) {
      // A quarter of a quarter …: leaf sizes differ by at most one point per split.
      EXPECT_NEAR(static_cast<double>(one.src_off[k + 1] - one.src_off[k]), n / 1024.0, 6.0);
      if (ties)
        continue; // equal coordinates at a median may go either way
      std::vector<std::int32_t> a(one.src_index.begin() + one.src_off[k],
                                  one.src_index.begin() + one.src_off[k + 1]),
          b(three.src_index.begin() + three.src_off[k],
            three.src_index.begin() + three.src_off[k + 1]);
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      ASSERT_EQ(a, b) << "leaf " << k;
    }
  }
}

TEST(Fmm2dPyramid, AllBoxesAtOnceMatchOneBoxPerThreadWithEmptyAndSourcelessBoxes) {
  // Many threads send the top levels (fewer boxes than threads) through the all-boxes-at-once
  // split: many segments, empty target ranges (targets packed in a corner), and boxes with
  // targets but no sources (10 sources, split at the targets' own median). The one-thread split
  // must give the same pyramid, point for point.
  const auto z = test::fmm2d_points("uniform", 200000, 93);
  auto corner = test::fmm2d_points("uniform", 50000, 94);
  for (auto &c : corner)
    c = {0.01 * c.real(), 0.01 * c.imag()};
  const auto few = test::fmm2d_points("uniform", 10, 95);
  const auto many = test::fmm2d_points("line", 100000, 96);
  struct Case {
    const std::vector<cd> &s, &t;
    int threads;
  };
  for (const Case &c : {Case{z, corner, 16}, Case{few, many, 64}}) {
    fmm2d::Pyramid<double> one, par;
    const auto ns = static_cast<std::int64_t>(c.s.size()),
               nt = static_cast<std::int64_t>(c.t.size());
    fmm2d::build_pyramid<double>(one, c.s.data(), ns, c.t.data(), nt, 4, 0.5, 1);
    fmm2d::build_pyramid<double>(par, c.s.data(), ns, c.t.data(), nt, 4, 0.5, c.threads);
    EXPECT_EQ(one.src_off, par.src_off) << c.threads;
    EXPECT_EQ(one.src_index, par.src_index) << c.threads;
    EXPECT_EQ(one.tgt_off, par.tgt_off) << c.threads;
    EXPECT_EQ(one.tgt_index, par.tgt_index) << c.threads;
    // Every target is in the box its split values say: the targets of a leaf lie in the leaf's
    // target box, and every target appears once.
    std::vector<std::int32_t> seen(par.tgt_index);
    std::sort(seen.begin(), seen.end());
    for (std::int64_t i = 0; i < nt; ++i)
      ASSERT_EQ(seen[i], i);
  }
}

TEST(Fmm2d, DefaultLevelsKeepAboutThirtyTwoPointsPerLeaf) {
  EXPECT_EQ(fmm2d_default_levels(0), 1);
  EXPECT_EQ(fmm2d_default_levels(32), 1);
  EXPECT_EQ(fmm2d_default_levels(33), 2);
  EXPECT_EQ(fmm2d_default_levels(1000000), 9); // 4^8 = 65536 leaves, 15 points each
}

} // namespace
} // namespace ksum
