// The fast Gauss transform against the fp64 direct sum: the series identities, the error bounds,
// the guarantee |Ĝ − G| ≤ tol · Σ|q| over dimensions, bandwidths and tolerances, and the
// contract (bad input, degenerate sizes and bandwidths).
#include "fgt/fgt_cpu.hpp"
#include "fgt/fgt_params.hpp"
#include "fgt/fgt_reference.hpp"
#include "fgt/fgt_series.hpp"
#include "support/expect_error.hpp"

#include <ksum/device.hpp>
#include <ksum/fgt.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <gtest/gtest.h>
#include <memory>
#include <random>
#include <utility>

namespace {

using ksum::GaussMethod;
using ksum::GaussOptions;
using ksum::GaussTransform;
using ksum::Table;
namespace fgt = ksum::fgt;

Table<double> weights(std::int64_t n, std::int64_t cols, std::uint64_t seed, bool positive) {
  return ksum::test::random_points(n, cols, seed, positive ? 0.0 : -1.0, 1.0);
}

// One source at u and one target at t (per axis, relative to a centre): the three series of
// fgt_series.hpp against e^{−|t − u|²}, with p large enough for rounding-level agreement. Checks
// in particular the factor (−1)^{|β|}/β! of the translation that seed 002's eq. (5) leaves out.
TEST(FgtSeries, HermiteTaylorAndTranslationReproduceTheGaussian) {
  const int d = 2, p = 24;
  const double u[d] = {0.31, -0.22}, t[d] = {0.35, -0.28}; // positions relative to centres
  const double w[d] = {0.8, -1.1};                         // target centre − source centre
  std::vector<double> g(d * p), f(d * p), work(p * p), A(p * p, 0.0), B(p * p, 0.0);
  // Hermite about the source centre s = 0: target at w + t.
  for (int k = 0; k < d; ++k)
    fgt::scaled_powers(u[k], p, g.data() + k * p);
  fgt::tensor_accumulate(1.0, g.data(), d, p, A.data(), work.data());
  double exact = 1;
  for (int k = 0; k < d; ++k)
    exact *= std::exp(-(w[k] + t[k] - u[k]) * (w[k] + t[k] - u[k]));
  for (int k = 0; k < d; ++k)
    fgt::hermite_functions(w[k] + t[k], p, f.data() + k * p);
  EXPECT_NEAR(fgt::tensor_dot(A.data(), f.data(), d, p, work.data()), exact, 1e-14);
  // Taylor about the target centre c = w: source at −w + u, target at t.
  for (int k = 0; k < d; ++k) {
    fgt::hermite_functions(u[k] - w[k], p, g.data() + k * p);
    double fact = 1;
    for (int n = 0; n < p; ++n, fact *= n)
      g[k * p + n] /= fact;
    double pw = 1;
    for (int n = 0; n < p; ++n, pw *= t[k])
      f[k * p + n] = pw;
  }
  fgt::tensor_accumulate(1.0, g.data(), d, p, B.data(), work.data());
  EXPECT_NEAR(fgt::tensor_dot(B.data(), f.data(), d, p, work.data()), exact, 1e-14);
  // Hermite → Taylor: C_β = ((−1)^{|β|}/β!) Σ_α A_α h_{α+β}(w).
  std::vector<double> m(d * p * p), hv(2 * p), C(p * p), in(A);
  for (int k = 0; k < d; ++k) {
    fgt::hermite_functions(w[k], 2 * p - 1, hv.data());
    double fact = 1;
    for (int b = 0; b < p; ++b, fact *= b)
      for (int a = 0; a < p; ++a)
        m[(k * p + b) * p + a] = ((b & 1) ? -1.0 : 1.0) / fact * hv[a + b];
  }
  fgt::tensor_apply(m.data(), d, p, in.data(), C.data());
  EXPECT_NEAR(fgt::tensor_dot(C.data(), f.data(), d, p, work.data()), exact, 1e-13);
  // Without the factor (seed 002's eq. 5 as printed) the result is wrong.
  for (int k = 0; k < d; ++k) {
    fgt::hermite_functions(w[k], 2 * p - 1, hv.data());
    for (int b = 0; b < p; ++b)
      for (int a = 0; a < p; ++a)
        m[(k * p + b) * p + a] = hv[a + b];
  }
  in = A;
  fgt::tensor_apply(m.data(), d, p, in.data(), C.data());
  EXPECT_GT(std::abs(fgt::tensor_dot(C.data(), f.data(), d, p, work.data()) - exact), 1e-3);
}

// The bounds hold for the worst placements at the box corners, and fall with p.
TEST(FgtBounds, BoundTheTruncationErrorOfOneSource) {
  const int d = 2;
  const double rho[d] = {0.4, 0.4};
  std::vector<double> g(d * 40), f(d * 40), work(1600), A(1600);
  for (int p : {3, 5, 8, 12}) {
    double worst = 0;
    for (double tx : {-4.0, -1.5, -0.7, 0.0, 0.9, 2.2})
      for (double ux : {-0.4, 0.4}) {
        std::fill(A.begin(), A.end(), 0.0);
        const double u[d] = {ux, -0.4}, t[d] = {tx, 0.3};
        for (int k = 0; k < d; ++k) {
          fgt::scaled_powers(u[k], p, g.data() + k * p);
          fgt::hermite_functions(t[k], p, f.data() + k * p);
        }
        fgt::tensor_accumulate(1.0, g.data(), d, p, A.data(), work.data());
        const double exact =
            std::exp(-(t[0] - u[0]) * (t[0] - u[0]) - (t[1] - u[1]) * (t[1] - u[1]));
        worst = std::max(worst,
                         std::abs(fgt::tensor_dot(A.data(), f.data(), d, p, work.data()) - exact));
      }
    const double bound = fgt::bound_series(p, rho, d);
    EXPECT_LE(worst, bound) << "p = " << p;
    EXPECT_LE(fgt::bound_series(p + 1, rho, d), bound);
    EXPECT_LE(bound, fgt::bound_translate(p, rho, d));
  }
  EXPECT_LT(fgt::bound_ifgt(20, 0.5, 4.0), fgt::bound_ifgt(10, 0.5, 4.0));
  EXPECT_EQ(fgt::graded_terms(4, 3), 20); // C(6, 3)
  EXPECT_EQ(fgt::graded_terms(1, 10), 1);
}

// The order choice's estimate (issue 26): the sampled 1-D error of the Hermite → Taylor route,
// summed over the axes, holds for one source and one target at random positions in their boxes
// (computed here with the series helpers, as the engine does), sits under Cramér's bound, by
// 10^2 … 10^6 for p ≥ 4, and falls with p.
TEST(FgtBounds, SampledTranslateErrorHoldsForOneSourceAndSitsUnderCramer) {
  const int d = 2;
  std::mt19937_64 rng(5);
  for (double half : {0.3, 0.5, 0.8})
    for (int p : {2, 4, 8, 12}) {
      const double rho[d] = {half, half};
      const double reach = 3.0;
      const auto e1 = fgt::sampled_translate_errors(p, half, reach);
      const double estimate = d * e1[std::size_t(p)];
      std::uniform_real_distribution<double> pos(-half, half);
      std::vector<double> g(d * p), f(d * p), work(p * p), A(p * p), C(p * p), m(d * p * p),
          hv(2 * p);
      double worst = 0;
      for (int draw = 0; draw < 400; ++draw) {
        double u[d], t[d], w[d], exact = 1;
        for (int k = 0; k < d; ++k) {
          u[k] = pos(rng), t[k] = pos(rng);
          w[k] = 2 * half * double(rng() % std::uint64_t(reach / (2 * half) + 2));
          exact *= std::exp(-(w[k] + t[k] - u[k]) * (w[k] + t[k] - u[k]));
          fgt::scaled_powers(u[k], p, g.data() + k * p);
          fgt::hermite_functions(w[k], 2 * p - 1, hv.data());
          double fact = 1;
          for (int b = 0; b < p; ++b, fact *= b)
            for (int a = 0; a < p; ++a)
              m[std::size_t((k * p + b) * p + a)] = ((b & 1) ? -1.0 : 1.0) / fact * hv[std::size_t(a + b)];
          double pw = 1;
          for (int n = 0; n < p; ++n, pw *= t[k])
            f[std::size_t(k * p + n)] = pw;
        }
        std::fill(A.begin(), A.end(), 0.0);
        fgt::tensor_accumulate(1.0, g.data(), d, p, A.data(), work.data());
        fgt::tensor_apply(m.data(), d, p, A.data(), C.data());
        worst = std::max(worst, std::abs(fgt::tensor_dot(C.data(), f.data(), d, p, work.data()) - exact));
      }
      EXPECT_LE(worst, 1.25 * estimate) << "half " << half << " p " << p;
      EXPECT_LE(estimate, fgt::bound_translate(p, rho, d)) << "half " << half << " p " << p;
      if (p >= 4)
        EXPECT_LE(100 * estimate, fgt::bound_translate(p, rho, d)) << "half " << half << " p " << p;
      EXPECT_LE(fgt::sampled_translate_errors(p + 4, half, reach)[std::size_t(p + 4)], e1[std::size_t(p)]);
    }
}

struct Case {
  int d;
  double h, tol;
  GaussMethod method;
  bool self;
};

void check(const Case &c, std::int64_t n, std::int64_t m, std::uint64_t seed) {
  const auto src = ksum::test::random_points(n, c.d, seed);
  const auto tgt = c.self ? src : ksum::test::random_points(m, c.d, seed + 1, -0.1, 1.1);
  const auto q = weights(n, 2, seed + 2, false);
  GaussOptions o;
  o.bandwidth = c.h;
  o.tolerance = c.tol;
  o.method = c.method;
  o.backend = ksum::Backend::cpu;
  GaussTransform<double> plan(o);
  if (c.self)
    plan.set_points(src);
  else
    plan.set_points(src, tgt);
  const auto got = plan.execute(q);
  const double err = ksum::test::gauss_error(src, tgt, q, c.h, got);
  const auto &s = plan.stats();
  EXPECT_LE(err, c.tol) << "d " << c.d << " h " << c.h << " tol " << c.tol << " method "
                        << to_string(s.method) << " p " << s.order << " routes " << s.pairs_direct
                        << "/" << s.pairs_hermite << "/" << s.pairs_taylor << "/"
                        << s.pairs_translate;
  if (c.method != GaussMethod::automatic) {
    EXPECT_EQ(s.method, c.method);
  }
}

TEST(GaussTransform, FgtMeetsItsToleranceInOneToFourDimensions) {
  for (int d = 1; d <= 4; ++d)
    for (double h : {0.05, 0.2, 0.8, 5.0})
      for (double tol : {1e-3, 1e-6, 1e-10}) {
        if (d == 4 && tol < 1e-6 && h > 0.1)
          continue; // p^4 terms at 1e-10: the IFGT's and the direct sum's ground
        check({d, h, tol, GaussMethod::fgt, d % 2 == 0}, 600, 500, 100 + d);
      }
}

// The order from the sampled estimate (issue 26): with positive weights (a density, the errors
// adding up most) the FGT's error stays under the tolerance, within 300× of it on clustered points
// (measured 17 … 93×) and 10^4× on uniform ones (316 … 5400×: the errors of sources spread over a
// box cancel in part), on 2D and 3D points; Cramér's bound put them 10^4 … 10^6 below.
TEST(GaussTransform, FgtErrorSitsCloserBelowTheTolerance) {
  for (int d : {2, 3})
    for (bool clustered : {false, true}) {
      const std::int64_t n = 6000;
      auto src = ksum::test::random_points(n, d, 71);
      if (clustered) // 3 clusters of width 0.03 … 0.1
        for (std::int64_t i = 0; i < n; ++i)
          for (int k = 0; k < d; ++k)
            src(i, k) = 0.2 + 0.3 * double((i + k) % 3) + (0.03 + 0.035 * double(i % 3)) * (src(i, k) - 0.5);
      const auto q = weights(n, 1, 72, true);
      for (double tol : {1e-3, 1e-6}) {
        GaussOptions o;
        o.bandwidth = 0.2;
        o.tolerance = tol;
        o.method = GaussMethod::fgt;
        o.backend = ksum::Backend::cpu;
        GaussTransform<double> plan(o);
        plan.set_points(src);
        const double err = ksum::test::gauss_error(src, src, q, o.bandwidth, plan.execute(q), 200);
        const auto &s = plan.stats();
        std::printf("d %d %s tol %.0e: p %d, error %.2e (tol / %.0f), routes %lld/%lld/%lld/%lld\n", d,
                    clustered ? "clustered" : "uniform", tol, s.order, err, tol / err,
                    (long long)s.pairs_direct, (long long)s.pairs_hermite, (long long)s.pairs_taylor,
                    (long long)s.pairs_translate);
        EXPECT_LE(err, tol);
        EXPECT_GE(err, tol / (clustered ? 300 : 10000))
            << d << (clustered ? " clustered " : " uniform ") << tol;
      }
    }
}

TEST(GaussTransform, IfgtMeetsItsToleranceUpToSixDimensions) {
  for (int d : {1, 2, 3, 5, 6})
    for (double h : {0.5, 1.0, 3.0})
      for (double tol : {1e-3, 1e-6}) {
        if (d >= 5 && h < 3.0)
          continue; // thousands of graded terms per cluster: correct but slow for a unit test
        check({d, h, tol, GaussMethod::ifgt, d % 2 == 1}, 500, 400, 200 + d);
      }
  check({2, 0.7, 1e-10, GaussMethod::ifgt, false}, 400, 300, 250);
}

TEST(GaussTransform, AutomaticChoiceMeetsTheToleranceUpToSixDimensions) {
  for (int d = 1; d <= 6; ++d)
    for (double h : {0.02, 0.3, 2.0})
      for (double tol : {1e-3, 1e-10})
        check({d, h, tol, GaussMethod::automatic, d == 3}, 700, 400, 300 + d);
}

TEST(GaussTransform, RoutesFollowTheBandwidth) {
  // Half the points spread over the unit square, half in a small dense square.
  auto src = ksum::test::random_points(4000, 2, 7);
  for (std::int64_t i = 0; i < 2000; ++i)
    for (int k = 0; k < 2; ++k)
      src(i, k) = 0.4 + 0.05 * src(i, k);
  const auto q = weights(4000, 1, 8, true);
  const auto routes = [&](double h) {
    GaussOptions o;
    o.bandwidth = h;
    o.tolerance = 1e-6;
    o.method = GaussMethod::fgt;
    o.backend = ksum::Backend::cpu;
    GaussTransform<double> plan(o);
    plan.set_points(src);
    const auto got = plan.execute(q);
    EXPECT_LE(ksum::test::gauss_error(src, src, q, h, got), 1e-6) << "h " << h;
    return plan.stats();
  };
  // Tiny bandwidth: a few points per box, every pair direct.
  const auto small = routes(0.002);
  EXPECT_GT(small.pairs_direct, 0);
  EXPECT_EQ(small.pairs_hermite + small.pairs_taylor + small.pairs_translate, 0);
  // Large bandwidth: one box holds everything, served by a series.
  const auto large = routes(50.0);
  EXPECT_EQ(large.boxes, 1);
  EXPECT_EQ(large.pairs_direct, 0);
  EXPECT_LE(large.order, 4);
  // In between, several kinds at once.
  const auto mid = routes(0.05);
  EXPECT_GT(mid.pairs_translate + mid.pairs_hermite + mid.pairs_taylor, 0);
  EXPECT_LE(mid.error_bound, 1e-6);
}

TEST(GaussTransform, ResultsDoNotDependOnTheBoxesPerTask) {
  // Target boxes per task of the evaluation loop and source boxes per task of the Hermite loop:
  // the old constants, the model (0), and odd fixed sizes.
  const auto src = ksum::test::random_points(6000, 2, 9);
  const auto q = weights(6000, 1, 10, false);
  Table<double> ref;
  for (const auto &[chunk, hchunk] :
       {std::pair<std::int64_t, std::int64_t>{1, 4}, {0, 0}, {7, 3}, {100000, 100000}}) {
    GaussOptions o;
    o.bandwidth = 0.05;
    o.tolerance = 1e-6;
    o.method = GaussMethod::fgt;
    o.backend = ksum::Backend::cpu;
    o.threads = 2;
    o.box_chunk = chunk;
    o.hermite_chunk = hchunk;
    GaussTransform<double> plan(o);
    plan.set_points(src);
    // Hermite expansions are formed (else the Hermite loop's size would not be tested).
    ASSERT_GT(plan.stats().pairs_hermite + plan.stats().pairs_translate, 0);
    // Three executes: with 0 the first uses the old constants and the later ones the model's
    // choice from the measured loop times.
    for (int k = 0; k < 3; ++k) {
      const auto got = plan.execute(q);
      EXPECT_GE(plan.stats().box_chunk, 1);
      EXPECT_GE(plan.stats().hermite_chunk, 1);
      if (chunk > 0) {
        EXPECT_EQ(plan.stats().box_chunk, chunk);
        EXPECT_EQ(plan.stats().hermite_chunk, hchunk);
      }
      if (ref.rows() == 0) {
        ref = got;
        EXPECT_LE(ksum::test::gauss_error(src, src, q, 0.05, got), 1e-6);
        continue;
      }
      for (std::int64_t i = 0; i < got.rows(); ++i)
        ASSERT_EQ(got(i, 0), ref(i, 0))
            << "target " << i << ", box_chunk " << chunk << ", hermite_chunk " << hchunk;
    }
  }
  for (const auto &[name, field] : {std::pair{"box_chunk", &GaussOptions::box_chunk},
                                    {"hermite_chunk", &GaussOptions::hermite_chunk}}) {
    GaussOptions bad;
    bad.*field = -1;
    ksum::test::expect_error([&] { GaussTransform<double> plan(bad); },
                             ksum::ErrorCode::invalid_argument, name);
  }
}

TEST(GaussTransform, FloatPlansMeetTheToleranceWithTheirRounding) {
  const auto src = ksum::test::rounded<float>(ksum::test::random_points(2000, 3, 41));
  const auto q = ksum::test::rounded<float>(weights(2000, 1, 42, false));
  for (auto method : {GaussMethod::fgt, GaussMethod::ifgt, GaussMethod::direct}) {
    GaussOptions o;
    o.bandwidth = 0.4;
    o.tolerance = 1e-5;
    o.method = method;
    o.backend = ksum::Backend::cpu;
    GaussTransform<float> plan(o);
    plan.set_points(src.cast<float>());
    const auto got = plan.execute(q.cast<float>());
    EXPECT_LE(ksum::test::gauss_error(src, src, q, 0.4, got), 1e-5 + 2e-6) << to_string(method);
  }
}

TEST(GaussTransform, DegenerateSizesAndBandwidths) {
  GaussOptions o;
  o.backend = ksum::Backend::cpu;
  GaussTransform<double> plan(o);
  plan.set_points(Table<double>(0, 3));
  EXPECT_EQ(plan.execute(Table<double>(0, 1)).rows(), 0);
  plan.set_points(Table<double>(0, 2), ksum::test::random_points(5, 2, 1));
  const auto z = plan.execute(Table<double>(0, 1));
  ASSERT_EQ(z.rows(), 5);
  for (std::int64_t i = 0; i < 5; ++i)
    EXPECT_EQ(z(i, 0), 0.0);
  // All points at one place: every extent is 0.
  Table<double> same(50, 3, 0.25);
  const auto q = weights(50, 1, 3, false);
  for (auto method : {GaussMethod::fgt, GaussMethod::ifgt, GaussMethod::automatic}) {
    o.method = method;
    GaussTransform<double> p(o);
    p.set_points(same);
    const auto u = p.execute(q);
    double sum = 0;
    for (std::int64_t j = 0; j < 50; ++j)
      sum += q(j, 0);
    EXPECT_NEAR(u(7, 0), sum, 1e-12) << to_string(method);
  }
  // Extreme bandwidths stay finite and correct.
  for (double h : {1e-9, 1e9}) {
    const auto src = ksum::test::random_points(300, 2, 5);
    const auto w = weights(300, 1, 6, false);
    o.method = GaussMethod::automatic;
    o.bandwidth = h;
    GaussTransform<double> p(o);
    p.set_points(src);
    EXPECT_LE(ksum::test::gauss_error(src, src, w, h, p.execute(w)), 1e-6) << "h " << h;
  }
}

// An axis whose spread is tiny but not 0 (1e-20 h): the neighbour reach cutoff / side must not
// overflow (it once did, and every pair was dropped).
TEST(GaussTransform, TinyNonZeroSpreadAlongAnAxis) {
  Table<double> two(2, 1);
  two(1, 0) = 1e-20;
  GaussOptions o;
  o.method = GaussMethod::fgt;
  o.backend = ksum::Backend::cpu;
  GaussTransform<double> plan(o);
  plan.set_points(two);
  const auto u = plan.execute(Table<double>(2, 1, 1.0));
  EXPECT_NEAR(u(0, 0), 2.0, 1e-12);
  EXPECT_NEAR(u(1, 0), 2.0, 1e-12);
  auto flat = ksum::test::random_points(3000, 2, 71);
  for (std::int64_t i = 0; i < flat.rows(); ++i)
    flat(i, 1) = (i % 2) * 1e-20;
  const auto q = weights(3000, 1, 72, false);
  for (auto method : {GaussMethod::automatic, GaussMethod::fgt}) {
    o.method = method;
    o.bandwidth = 0.1;
    GaussTransform<double> p(o);
    p.set_points(flat);
    EXPECT_LE(ksum::test::gauss_error(flat, flat, q, 0.1, p.execute(q)), 1e-6) << to_string(method);
  }
}

// The counting sort splits the points into chunks above 100,000 points: the plan (the order of
// the points in their boxes) must not depend on the number of threads.
TEST(GaussTransform, BoxSortIsTheSameForAnyThreadCount) {
  const auto pts = ksum::test::random_points(250000, 2, 81);
  std::vector<double> z(250000 * 2);
  for (std::int64_t i = 0; i < 250000; ++i)
    for (int k = 0; k < 2; ++k)
      z[i * 2 + k] = pts(i, k) * 20;
  fgt::Extent e{2, 250000, 250000, {0.0, 0.0}, {20.0, 20.0}};
  const auto grid = fgt::fgt_grid(e, 0.5, 1e-6, 0);
  const auto one = fgt::build_fgt(z.data(), 250000, nullptr, 250000, 2, e, grid, 1);
  const auto four = fgt::build_fgt(z.data(), 250000, nullptr, 250000, 2, e, grid, 4);
  ASSERT_EQ(one.src.order.size(), four.src.order.size());
  EXPECT_TRUE(std::equal(one.src.order.begin(), one.src.order.end(), four.src.order.begin()));
  EXPECT_EQ(one.src.begin, four.src.begin);
  for (std::size_t i = 1; i < one.src.order.size(); ++i) // stable: rows ascending in each box
    if (one.src.order[i] < one.src.order[i - 1]) {
      const auto b = std::upper_bound(one.src.begin.begin(), one.src.begin.end(), std::int64_t(i));
      ASSERT_EQ(*(b - 1), std::int64_t(i)) << "rows out of order inside a box at " << i;
    }
}

// The early stop of the set-up (issue 26): build_fgt's estimate from the occupied boxes, made
// before it lists the pairs, is within 2× of the listed plan's cost on uniform and clustered
// points (it stops only above twice the limit, so never a plan the listing would keep), and a
// limit under half of it stops the build with no pairs listed.
TEST(GaussTransform, SetUpStopsEarlyOnlyWhereTheListedPlanWouldCostMore) {
  const std::int64_t n = 40000;
  for (bool clustered : {false, true}) {
    std::mt19937_64 rng(91);
    std::uniform_real_distribution<double> u(0, 1);
    std::normal_distribution<double> g(0, 1);
    std::vector<double> z(static_cast<std::size_t>(n * 3));
    fgt::Extent e{3, n, n, {1e300, 1e300, 1e300}, {-1e300, -1e300, -1e300}};
    for (std::int64_t i = 0; i < n; ++i)
      for (int k = 0; k < 3; ++k) {
        // scaled by 1/h = 10: the unit cube, or 4 clusters of width 0.03
        const double c = 0.2 + 0.6 * double((i % 4) >> (k % 2) & 1);
        const double v = 10 * (clustered ? std::clamp(c + 0.03 * g(rng), 0.0, 1.0) : u(rng));
        z[static_cast<std::size_t>(i * 3 + k)] = v;
        e.lo[k] = std::min(e.lo[k], v);
        e.hi[k] = std::max(e.hi[k], v);
      }
    for (double tol : {1e-3, 1e-8}) {
      const auto grid = fgt::choose_fgt(e, tol, 0);
      const auto full = fgt::build_fgt(z.data(), n, nullptr, n, 3, e, grid, 2);
      ASSERT_FALSE(full.stopped);
      // The estimate alone: a limit of 0 stops every build and returns it.
      const auto est = fgt::build_fgt(z.data(), n, nullptr, n, 3, e, grid, 2, 0.0);
      ASSERT_TRUE(est.stopped);
      EXPECT_TRUE(est.pair_src.empty());
      // Measured 1.0 … 1.6 (the mean box occupancy in the route costs): build_fgt stops where
      // the estimate is over twice the limit.
      EXPECT_LE(est.cost, 2 * full.cost) << (clustered ? "clustered" : "uniform") << " tol " << tol;
      EXPECT_GE(est.cost, 0.5 * full.cost) << (clustered ? "clustered" : "uniform") << " tol " << tol;
      // A limit at half the estimate (not over twice it) lists the pairs as before.
      const auto kept = fgt::build_fgt(z.data(), n, nullptr, n, 3, e, grid, 2, est.cost / 2);
      EXPECT_FALSE(kept.stopped);
      EXPECT_EQ(kept.pair_src, full.pair_src);
    }
  }
}

// GaussOptions::hand_over: method fgt runs the direct sum where the model predicts it cheaper
// (3D, h = 0.1, tol 1e-10: a long cutoff over small boxes), and keeps the FGT where it is cheaper.
TEST(GaussTransform, HandOverRunsTheDirectSumWherePredictedCheaper) {
  const auto pts = ksum::test::random_points(20000, 3, 93);
  const auto w = ksum::test::random_points(20000, 1, 94, -1, 1);
  const auto plan = [&](bool hand_over, double h, double tol) {
    ksum::GaussOptions o;
    o.method = ksum::GaussMethod::fgt;
    o.backend = ksum::Backend::cpu;
    o.hand_over = hand_over;
    o.bandwidth = h;
    o.tolerance = tol;
    auto g = std::make_unique<ksum::GaussTransform<double>>(o);
    g->set_points(pts);
    return g;
  };
  const auto tight = plan(true, 0.1, 1e-10), forced = plan(false, 0.1, 1e-10);
  EXPECT_EQ(tight->stats().method, ksum::GaussMethod::direct);
  EXPECT_GT(tight->stats().predicted_fgt, tight->stats().predicted_direct);
  EXPECT_EQ(forced->stats().method, ksum::GaussMethod::fgt);
  const auto a = tight->execute(w), b = forced->execute(w);
  double sum_w = 0, diff = 0;
  for (std::int64_t i = 0; i < w.rows(); ++i)
    sum_w += std::abs(w(i, 0));
  for (std::int64_t i = 0; i < a.rows(); ++i)
    diff = std::max(diff, std::abs(a(i, 0) - b(i, 0)));
  EXPECT_LE(diff, 1e-10 * sum_w);
  EXPECT_EQ(plan(true, 0.5, 1e-3)->stats().method, ksum::GaussMethod::fgt);
}

TEST(GaussTransform, TenDimensionsNeverBlowUpTheTerms) {
  const auto src = ksum::test::random_points(600, 10, 61);
  const auto q = weights(600, 1, 62, false);
  for (double h : {0.1, 1.0, 10.0}) {
    GaussOptions o;
    o.bandwidth = h;
    o.tolerance = 1e-6;
    o.backend = ksum::Backend::cpu;
    GaussTransform<double> plan(o);
    plan.set_points(src);
    const auto got = plan.execute(q);
    EXPECT_LE(ksum::test::gauss_error(src, src, q, h, got), 1e-6) << "h " << h;
    EXPECT_LE(plan.stats().terms, fgt::max_terms);
  }
}

TEST(GaussTransform, RefusesBadInputWithAClearMessage) {
  using ksum::ErrorCode;
  using ksum::test::expect_error;
  GaussOptions o;
  o.bandwidth = 0;
  expect_error([&] { GaussTransform<double> p(o); }, ErrorCode::invalid_argument, "bandwidth");
  o.bandwidth = NAN;
  expect_error([&] { GaussTransform<double> p(o); }, ErrorCode::invalid_argument, "bandwidth");
  o.bandwidth = 1;
  o.tolerance = 1e-14;
  expect_error([&] { GaussTransform<double> p(o); }, ErrorCode::invalid_argument,
               "outside what the Gauss transform reaches in float64");
  o.tolerance = 1e-8;
  expect_error([&] { GaussTransform<float> p(o); }, ErrorCode::invalid_argument, "float32");
  o.tolerance = 1e-6;
  o.order = 99;
  expect_error([&] { GaussTransform<double> p(o); }, ErrorCode::invalid_argument, "order 99");
  o.order = 0;
  o.backend = ksum::Backend::cpu;
  GaussTransform<double> plan(o);
  expect_error([&] { plan.execute(Table<double>(3, 1)); }, ErrorCode::invalid_argument,
               "set_points first");
  auto bad = ksum::test::random_points(10, 2, 1);
  bad(4, 1) = NAN;
  expect_error([&] { plan.set_points(bad); }, ErrorCode::non_finite, "row 4, column 1");
  expect_error(
      [&] {
        plan.set_points(ksum::test::random_points(10, 2, 1), ksum::test::random_points(10, 3, 1));
      },
      ErrorCode::shape_mismatch, "dimensions differ");
  plan.set_points(ksum::test::random_points(10, 2, 1));
  expect_error([&] { plan.execute(Table<double>(9, 1)); }, ErrorCode::shape_mismatch,
               "9 rows but there are 10 sources");
  o.bandwidth = 1e-300;
  GaussTransform<double> tiny(o);
  expect_error([&] { tiny.set_points(ksum::test::random_points(10, 2, 1, 1e10, 2e10)); },
               ErrorCode::invalid_argument, "overflows");
  if (ksum::gpus().empty()) {
    GaussOptions g;
    g.backend = ksum::Backend::cuda;
    GaussTransform<double> gpu(g);
    expect_error([&] { gpu.set_points(ksum::test::random_points(10, 2, 1)); },
                 ErrorCode::unsupported, "no CUDA backend or no GPU");
  }
  expect_error([] { ksum::parse_gauss_method("fast"); }, ErrorCode::invalid_argument,
               "valid: auto, direct, fgt, ifgt");
}

} // namespace
