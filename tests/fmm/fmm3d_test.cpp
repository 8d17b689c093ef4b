// The 3D FMM behind DirectSum's method = fmm: relative l2 error on sampled targets against the fp64
// reference (ksum::reference_sum, long double) at most the requested tolerance, for the kernels of
// issue 5, uniform / Plummer / sphere-shell points, sources = targets and sources ≠ targets, fp64
// and fp32; robustness (N = 0, 1, identical and coincident points, coordinates over 24 decades,
// deep trees); the contract (every refused input names itself).
#include "fmm/fmm3d/bbfmm.hpp"
#include "fmm/fmm3d/fmm_tree.hpp"
#include "fmm/fmm_cases.hpp"
#include "support/expect_error.hpp"

#include <ksum/datasets.hpp>
#include <ksum/direct.hpp>
#include <ksum/reference.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace ksum::test {
namespace {

class Fmm64 : public ::testing::TestWithParam<Case> {};

TEST_P(Fmm64, RelativeErrorWithinTolerance) {
  const Case c = GetParam();
  const std::int64_t n = 1500;
  const auto src = points(c.dist, n, 21);
  const auto tgt = points(c.dist, 700, 22);
  const auto w = signed_weights(n, 1, 23);
  DirectSum<double> plan(fmm_options(c.kernel, c.tol));
  if (c.self)
    plan.set_points(src);
  else
    plan.set_points(src, tgt);
  const auto u = plan.execute(w);
  ASSERT_EQ(plan.stats().method, Method::fmm);
  const double err = sampled_error(c.kernel, eps_for(c.kernel), src, c.self ? nullptr : &tgt, w, u);
  EXPECT_LE(err, c.tol) << "order " << plan.stats().fmm_order;
  EXPECT_GT(plan.stats().tree_depth, 1); // the far field was used, not one leaf
}

// The high orders (tolerance 1e-8 and 1e-10) take most of the time: they are built into a second
// binary labelled slow (left out of the sanitizer run), KSUM_FMM_HIGH_ORDER defined.
std::vector<Case> cases64() {
  std::vector<Case> out;
  const Kernel ks[] = {Kernel::laplace,  Kernel::multiquadric, Kernel::inverse_multiquadric,
                       Kernel::gaussian, Kernel::matern2,      Kernel::tps,
                       Kernel::cubic};
#ifdef KSUM_FMM_HIGH_ORDER
  const double tols[] = {1e-8};
  for (const Kernel kern : {Kernel::laplace, Kernel::multiquadric, Kernel::gaussian})
    out.push_back({kern, Dist::uniform, 1e-10, kern != Kernel::multiquadric});
#else
  const double tols[] = {1e-3, 1e-6};
#endif
  int k = 0;
  for (const Kernel kern : ks)
    for (const Dist d : {Dist::uniform, Dist::plummer, Dist::shell})
      for (const double tol : tols)
        out.push_back({kern, d, tol, (k++ % 2) == 0});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Matrix, Fmm64, ::testing::ValuesIn(cases64()),
                         [](const auto &info) { return case_name(info.param); });

#ifndef KSUM_FMM_HIGH_ORDER
class Fmm32 : public ::testing::TestWithParam<Case> {};

TEST_P(Fmm32, RelativeErrorWithinTolerance) {
  const Case c = GetParam();
  const std::int64_t n = 2000;
  // The reference sees the same float-rounded points, so only the method's error is measured.
  const auto src = points(c.dist, n, 31).cast<float>().cast<double>();
  const auto tgt = points(c.dist, 500, 32).cast<float>().cast<double>();
  const auto w = signed_weights(n, 1, 33).cast<float>().cast<double>();
  DirectSum<float> plan(fmm_options(c.kernel, c.tol));
  if (c.self)
    plan.set_points(src.cast<float>());
  else
    plan.set_points(src.cast<float>(), tgt.cast<float>());
  const auto u = plan.execute(w.cast<float>()).cast<double>();
  EXPECT_LE(sampled_error(c.kernel, eps_for(c.kernel), src, c.self ? nullptr : &tgt, w, u), c.tol);
}

std::vector<Case> cases32() {
  std::vector<Case> out;
  for (const Kernel kern : {Kernel::laplace, Kernel::multiquadric, Kernel::gaussian})
    for (const Dist d : {Dist::uniform, Dist::plummer, Dist::shell})
      for (const double tol : {1e-3, 1e-4, 1e-5})
        out.push_back({kern, d, tol, d != Dist::plummer});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Matrix, Fmm32, ::testing::ValuesIn(cases32()),
                         [](const auto &info) { return case_name(info.param); });

TEST(Fmm, SeveralRightHandSidesEqualSeparateRuns) {
  const auto p = datasets::uniform_cube(3000, 41);
  const auto w = signed_weights(3000, 3, 42);
  DirectSum<double> plan(fmm_options(Kernel::multiquadric, 1e-6));
  plan.set_points(p);
  const auto u = plan.execute(w);
  for (std::int64_t r = 0; r < 3; ++r) {
    Table<double> wr(3000, 1);
    for (std::int64_t i = 0; i < 3000; ++i)
      wr(i, 0) = w(i, r);
    const auto ur = plan.execute(wr);
    for (std::int64_t i = 0; i < 3000; ++i)
      EXPECT_NEAR(u(i, r), ur(i, 0), 1e-12 * (1 + std::abs(ur(i, 0))));
  }
  EXPECT_LE(sampled_error(Kernel::multiquadric, 3.0, p, nullptr, w, u), 1e-6);
}

TEST(Fmm, ResultsDoNotDependOnTheTaskSizes) {
  // The near pass's leaves per task, the M2L's blocks per task and the other passes' boxes per
  // task: the old constants, the model (0), and odd fixed sizes; on uniform points and on the
  // clustered Plummer sphere (an adaptive tree with X and W lists).
  struct Sizes {
    std::int64_t near, m2l, pass;
  };
  const Sizes sizes[] = {{4, 1, 8}, {0, 0, 0}, {1, 1, 1}, {1000, 1000, 1000}, {2, 3, 5}};
  for (const bool clustered : {false, true}) {
    const auto p = clustered ? datasets::plummer(4000, 45) : datasets::uniform_cube(4000, 43);
    const auto w = signed_weights(4000, 1, 44);
    Table<double> ref;
    for (const Sizes &sz : sizes) {
      // 1e-4 keeps the order, and this test's 30 executes, small: at 1e-6 the calibrated order on
      // leaves of 32 points took 16 s here and minutes under the sanitizer.
      DirectOptions o = fmm_options(Kernel::multiquadric, 1e-4);
      o.backend = Backend::cpu;
      o.threads = 2;
      o.fmm_near_chunk = sz.near;
      o.fmm_m2l_chunk = sz.m2l;
      o.fmm_pass_chunk = sz.pass;
      DirectSum<double> plan(o);
      plan.set_points(p);
      // Three executes: with 0 the first uses the defaults and the later ones the model's choice
      // from the measured times.
      for (int k = 0; k < 3; ++k) {
        const auto u = plan.execute(w);
        const auto &st = plan.stats();
        EXPECT_GE(st.fmm_near_chunk, 1);
        EXPECT_GE(st.fmm_m2l_chunk, 1);
        EXPECT_GE(st.fmm_pass_chunk, 1);
        if (sz.near > 0) {
          EXPECT_EQ(st.fmm_near_chunk, sz.near);
          EXPECT_EQ(st.fmm_m2l_chunk, sz.m2l);
          EXPECT_EQ(st.fmm_pass_chunk, sz.pass);
        }
        if (ref.rows() == 0) {
          ref = u;
          continue;
        }
        for (std::int64_t i = 0; i < u.rows(); ++i)
          ASSERT_EQ(u(i, 0), ref(i, 0))
              << "target " << i << ", sizes " << sz.near << "/" << sz.m2l << "/" << sz.pass
              << ", run " << k << (clustered ? ", clustered" : ", uniform");
      }
    }
  }
  for (const auto &[name, field] : {std::pair{"fmm_near_chunk", &DirectOptions::fmm_near_chunk},
                                    {"fmm_m2l_chunk", &DirectOptions::fmm_m2l_chunk},
                                    {"fmm_pass_chunk", &DirectOptions::fmm_pass_chunk}}) {
    DirectOptions bad = fmm_options(Kernel::laplace, 1e-6);
    bad.*field = -1;
    expect_error([&] { DirectSum<double> plan(bad); }, ErrorCode::invalid_argument, name);
  }
}

TEST(Fmm, LooserToleranceUsesLowerOrderAndLargerError) {
  const auto p = datasets::uniform_cube(2000, 43);
  const auto w = signed_weights(2000, 1, 44);
  int last_order = 100;
  double last_err = 0;
  for (const double tol : {1e-8, 1e-5, 1e-3}) {
    DirectSum<double> plan(fmm_options(Kernel::laplace, tol));
    plan.set_points(p);
    const double err = sampled_error(Kernel::laplace, 1.0, p, nullptr, w, plan.execute(w));
    EXPECT_LE(err, tol);
    EXPECT_LT(plan.stats().fmm_order, last_order);
    EXPECT_GT(err, last_err);
    last_order = plan.stats().fmm_order;
    last_err = err;
  }
}

// The order choice is calibrated against measured errors (order_calibration.hpp), so the error
// sits close below the tolerance instead of orders of magnitude below it (issue 26): with the
// default leaf size, Laplace at 20,000 uniform points lands within 50× of 1e-3 and 1e-6 (measured
// 0.06 and 0.17 of them), and the orders are lower than the uncalibrated estimate's 6 and 9.
TEST(Fmm, ErrorSitsCloseBelowTheTolerance) {
  const auto p = datasets::uniform_cube(20000, 47);
  const auto w = signed_weights(20000, 1, 48);
  for (const auto &[tol, most] : {std::pair{1e-3, 5}, std::pair{1e-6, 8}}) {
    DirectSum<double> plan(fmm_options(Kernel::laplace, tol, 0));
    plan.set_points(p);
    const double err = sampled_error(Kernel::laplace, 1.0, p, nullptr, w, plan.execute(w));
    EXPECT_LE(err, tol);
    EXPECT_GE(err, tol / 50) << "tol " << tol << " order " << plan.stats().fmm_order;
    EXPECT_LE(plan.stats().fmm_order, most) << "tol " << tol;
  }
}

// The calibration table: every ratio finite, at least its floor, and a kernel the estimate
// under-predicts (wendland6 at orders 4 … 8, where the support's edge cuts far pairs) is charged
// for it: the order it gets at 1e-4 is higher than the bare estimate's.
TEST(Fmm, CalibrationRatiosAreSane) {
  for (const auto &info : all_kernels())
    for (int p = 2; p <= 16; ++p) {
      const double r = fmm::BbFmm::calibrated_ratio(info.kind, p);
      EXPECT_TRUE(std::isfinite(r) && r >= 0.05) << info.name << " p " << p << ": " << r;
    }
  EXPECT_GT(fmm::BbFmm::calibrated_ratio(Kernel::wendland6, 6), 5.0);
  EXPECT_LT(fmm::BbFmm::calibrated_ratio(Kernel::laplace, 8), 0.5);
}

TEST(Fmm, FixedLowOrderIsInaccurate) { // the order, not the near field, carries the accuracy
  const auto p = datasets::uniform_cube(4000, 45);
  const auto w = signed_weights(4000, 1, 46);
  auto o = fmm_options(Kernel::laplace, 1e-6);
  o.fmm_order = 3;
  DirectSum<double> plan(o);
  plan.set_points(p);
  EXPECT_GT(sampled_error(Kernel::laplace, 1.0, p, nullptr, w, plan.execute(w)), 1e-4);
}

TEST(Fmm, SmallAndEmptyInputs) {
  for (const std::int64_t n : {1, 2, 7, 100}) {
    const auto p = datasets::uniform_cube(n, 50 + static_cast<std::uint64_t>(n));
    const auto w = signed_weights(n, 1, 60);
    DirectSum<double> plan(fmm_options(Kernel::gaussian, 1e-8, 4));
    plan.set_points(p);
    const auto u = plan.execute(w);
    EXPECT_LE(sampled_error(Kernel::gaussian, 3.0, p, nullptr, w, u), 1e-8) << n;
  }
  DirectSum<double> plan(fmm_options(Kernel::laplace, 1e-6));
  plan.set_points(Table<double>(0, 3), datasets::uniform_cube(5, 1));
  const auto u = plan.execute(Table<double>(0, 1));
  ASSERT_EQ(u.rows(), 5);
  for (std::int64_t i = 0; i < 5; ++i)
    EXPECT_EQ(u(i, 0), 0.0);
  plan.set_points(datasets::uniform_cube(4, 2), Table<double>(0, 3));
  EXPECT_EQ(plan.execute(Table<double>(4, 1, 1.0)).rows(), 0);
  plan.set_points(Table<double>(0, 3));
  EXPECT_EQ(plan.execute(Table<double>(0, 1)).rows(), 0);
}

TEST(Fmm, IdenticalPointsAreSummedInLinearTime) {
  // 200,000 copies of one point: one leaf at the deepest level, summed as one weighted point.
  const std::int64_t n = 200000;
  Table<double> p(n, 3, 0.25);
  const auto w = signed_weights(n, 1, 70);
  double total = 0;
  for (std::int64_t i = 0; i < n; ++i)
    total += w(i, 0);
  DirectSum<double> g(fmm_options(Kernel::gaussian, 1e-6));
  g.set_points(p);
  const auto u = g.execute(w);
  for (std::int64_t i = 0; i < n; i += 997)
    EXPECT_NEAR(u(i, 0), total - w(i, 0), 1e-9 * n); // φ(0) = 1, self term left out
  DirectSum<double> l(fmm_options(Kernel::laplace, 1e-6));
  l.set_points(p);
  const auto v = l.execute(w);
  for (std::int64_t i = 0; i < n; i += 997)
    EXPECT_EQ(v(i, 0), 0.0); // coincident pairs of a singular kernel contribute 0
}

TEST(Fmm, CoincidentSourcesAndTargetsOfASingularKernel) {
  auto src = datasets::uniform_cube(3000, 80);
  for (std::int64_t i = 0; i < 500; ++i) // duplicated sources too
    for (int a = 0; a < 3; ++a)
      src(2500 + i, a) = src(i, a);
  const auto tgt = src; // every target sits on a source
  const auto w = signed_weights(3000, 1, 81);
  DirectSum<double> plan(fmm_options(Kernel::laplace, 1e-6));
  plan.set_points(src, tgt);
  const auto u = plan.execute(w);
  EXPECT_LE(sampled_error(Kernel::laplace, 1.0, src, &tgt, w, u), 1e-6);
  plan.set_points(src);
  EXPECT_LE(sampled_error(Kernel::laplace, 1.0, src, nullptr, w, plan.execute(w)), 1e-6);
}

TEST(Fmm, CoordinatesSpanningTwentyFourDecades) {
  // Half the sources within 1e-12 of the origin, half spread over 1e12: the small cluster shares
  // one deepest-level cell, summed directly; the rest goes through the expansions. Each group of
  // targets is checked on its own (the cluster's potentials are 1e24 times larger).
  const std::int64_t n = 2000;
  const auto a = datasets::uniform_cube(n, 90);
  Table<double> p(n, 3), near(200, 3), far(200, 3);
  for (std::int64_t i = 0; i < n; ++i)
    for (int k = 0; k < 3; ++k)
      p(i, k) = (i % 2 ? 1e12 : 1e-12) * (a(i, k) - 0.5);
  for (std::int64_t i = 0; i < 200; ++i)
    for (int k = 0; k < 3; ++k) {
      near(i, k) = p(2 * i, k) * 0.7;
      far(i, k) = p(2 * i + 1, k) * 0.7;
    }
  const auto w = signed_weights(n, 1, 91);
  // (1e-3: the loose tolerances' mixed precision must notice that float cannot hold this range.)
  for (const double tol : {1e-6, 1e-3})
    for (const Kernel k : {Kernel::laplace, Kernel::cubic})
      for (const auto *t : {&near, &far}) {
        auto o = fmm_options(k, tol);
        o.eps = 1;
        DirectSum<double> plan(o);
        plan.set_points(p, *t);
        EXPECT_LE(sampled_error(k, 1.0, p, t, w, plan.execute(w)), tol)
            << kernel_info(k).name << (t == &near ? " near" : " far") << " tol " << tol;
      }
}

TEST(Fmm, DefaultLeafSizeAndOrderSelection) {
  // No fmm_leaf_size: the leaf size follows p and the order is re-checked on the real tree.
  const auto p = datasets::uniform_cube(20000, 92);
  const auto w = signed_weights(20000, 1, 93);
  for (const Kernel k : {Kernel::laplace, Kernel::multiquadric}) {
    auto o = fmm_options(k, 1e-6, 0);
    DirectSum<double> plan(o);
    plan.set_points(p);
    EXPECT_GT(plan.stats().tree_depth, 1);
    EXPECT_LE(sampled_error(k, eps_for(k), p, nullptr, w, plan.execute(w)), 1e-6)
        << kernel_info(k).name;
  }
}

TEST(Fmm, LowRankM2LMeetsTheToleranceAndAgreesWithTheFullOperators) {
  // The CPU's M2L on low-rank class operators (each exact to tolerance / 10 relative to the
  // operator beyond its leading singular pair) against the full p³ × p³ matrices on the same tree
  // (a fixed leaf size): they differ by far less than the tolerance, both meet it, and the mean
  // rank is below p³ / 2 (where U W saves over K). Homogeneous (laplace) and not (multiquadric,
  // gaussian), uniform and clustered points, two right-hand sides of signed weights.
  const auto uni = datasets::uniform_cube(8000, 96);
  const auto clu = datasets::plummer(8000, 97);
  const auto w = signed_weights(8000, 2, 98);
  // (gaussian at 1e-3 only: its orders at 1e-6 make a slow unit test; tighter tolerances are in
  // the slow-labelled ksum_fmm3d_high_order_test, whose runs use the low-rank M2L by default.)
  for (const Kernel k : {Kernel::laplace, Kernel::multiquadric, Kernel::gaussian})
    for (const double tol : {1e-3, 1e-6})
      for (const auto *pts : {&uni, &clu}) {
        if (tol < 1e-3 && k == Kernel::gaussian)
          continue;
        const auto o = fmm_options(k, tol, 64);
        auto f = o;
        f.fmm_lowrank = false;
        DirectSum<double> low(o), full(f);
        low.set_points(*pts);
        full.set_points(*pts);
        const auto ul = low.execute(w), uf = full.execute(w);
        const auto &s = low.stats();
        const std::string what =
            fmt::format("{} tol {} {} p {} rank {:.1f}", kernel_info(k).name, tol,
                        pts == &uni ? "uniform" : "plummer", s.fmm_order, s.fmm_m2l_rank);
        ASSERT_EQ(s.fmm_order, full.stats().fmm_order) << what;
        EXPECT_GT(s.fmm_m2l_rank, 0) << what;
        EXPECT_LT(s.fmm_m2l_rank, std::pow(s.fmm_order, 3) / 2) << what;
        EXPECT_EQ(full.stats().fmm_m2l_rank, 0) << what;
        EXPECT_LE(relative_l2(ul, uf), tol / 5) << what;
        EXPECT_LE(sampled_error(k, eps_for(k), *pts, nullptr, w, ul), tol) << what;
      }
}

TEST(Fmm, MixedPrecisionAtLooseTolerancesAgreesWithDouble) {
  // From tolerance 1e-4 on the CPU's low-rank M2L runs in float, with the cube symmetry of each
  // pair folded into the class factors (no permuted gather or scatter), and so do the near field's
  // sums over a leaf's neighbours. Against the same plan in double (BbFmmOptions::mixed_precision
  // off): the results differ by float rounding (measured at most 3e-7), far below the tolerance.
  // Clustered trees use many of the 48 symmetries; laplace has one operator set for all levels,
  // multiquadric one per level; one and two right-hand sides of signed weights.
  const std::int64_t n = 8000;
  std::mt19937_64 rng(71);
  std::uniform_real_distribution<double> uw(-1, 1);
  std::vector<double> w(static_cast<std::size_t>(2 * n));
  for (auto &v : w)
    v = uw(rng);
  for (const Dist d : {Dist::uniform, Dist::plummer}) {
    const auto pts = points(d, n, 72);
    std::vector<double> cm(static_cast<std::size_t>(3 * n));
    for (std::int64_t i = 0; i < n; ++i)
      for (int ax = 0; ax < 3; ++ax)
        cm[static_cast<std::size_t>(ax * n + i)] = pts(i, ax);
    // Separate targets, half of them within 1e-9 of a source (the target leaf's own box and
    // close pairs in the float sums).
    const std::int64_t m = 3000;
    std::vector<double> tg(static_cast<std::size_t>(3 * m));
    for (std::int64_t i = 0; i < m; ++i)
      for (int ax = 0; ax < 3; ++ax)
        tg[static_cast<std::size_t>(ax * m + i)] =
            i % 2 ? pts(i, ax) + 1e-9 * uw(rng) : pts((i * 7) % n, (ax + 1) % 3);
    for (const Kernel k : {Kernel::laplace, Kernel::multiquadric})
      for (const double tol : {1e-3, 1e-4, 1e-5})
        for (const std::int64_t nrhs : {1, 2}) {
          fmm::BbFmmOptions o;
          o.kernel = k;
          o.eps = eps_for(k);
          o.tolerance = tol;
          o.leaf_size = 48;
          auto od = o;
          od.mixed_precision = false;
          for (const bool self : {true, false}) {
            fmm::BbFmm f(o), g(od);
            f.set_points(cm.data(), n, self ? nullptr : tg.data(), self ? 0 : m);
            g.set_points(cm.data(), n, self ? nullptr : tg.data(), self ? 0 : m);
            const std::int64_t rows = self ? n : m;
            const std::string what = fmt::format("{} {} {} tol {} nrhs {}", kernel_info(k).name,
                                                 d == Dist::uniform ? "uniform" : "plummer",
                                                 self ? "self" : "targets", tol, nrhs);
            ASSERT_GT(f.stats().m2l_rank, 0) << what;
            EXPECT_EQ(f.stats().mixed_precision, tol >= 1e-4) << what;
            EXPECT_FALSE(g.stats().mixed_precision) << what;
            std::vector<double> uf(static_cast<std::size_t>(rows * nrhs)), ud(uf.size());
            f.apply(w.data(), nrhs, uf.data());
            g.apply(w.data(), nrhs, ud.data());
            double e2 = 0, r2 = 0;
            for (std::size_t i = 0; i < uf.size(); ++i) {
              e2 += (uf[i] - ud[i]) * (uf[i] - ud[i]);
              r2 += ud[i] * ud[i];
            }
            const double diff = std::sqrt(e2 / r2);
            if (tol >= 1e-4)
              EXPECT_LE(diff, tol / 100) << what;
            else
              EXPECT_EQ(diff, 0) << what;
            std::printf("%s: float against double %.2e\n", what.c_str(), diff);
          }
        }
  }
  // Weights whose expansions could leave float's range run in double (the same bits).
  fmm::BbFmmOptions o;
  o.tolerance = 1e-3;
  o.leaf_size = 48;
  auto od = o;
  od.mixed_precision = false;
  const auto pts = points(Dist::uniform, n, 73);
  std::vector<double> cm(static_cast<std::size_t>(3 * n)), big(w.begin(), w.begin() + n);
  for (std::int64_t i = 0; i < n; ++i)
    for (int ax = 0; ax < 3; ++ax)
      cm[static_cast<std::size_t>(ax * n + i)] = pts(i, ax);
  for (auto &v : big)
    v *= 1e30;
  fmm::BbFmm f(o), g(od);
  f.set_points(cm.data(), n, nullptr, 0);
  g.set_points(cm.data(), n, nullptr, 0);
  EXPECT_TRUE(f.stats().mixed_precision);
  std::vector<double> uf(static_cast<std::size_t>(n)), ud(uf.size());
  f.apply(big.data(), 1, uf.data());
  g.apply(big.data(), 1, ud.data());
  EXPECT_EQ(uf, ud);
}

// Leaves far below the leaf size get a wider root cube (BbFmm::set_points): 35,840 uniform points
// at 1e-6 (Laplace, leaf size 399) fill the 512 level-3 boxes with ~70 points each, and a root
// 2^{1/3} wider holds ~140 per leaf; 76,800 for the multiquadric (leaf size 686, ~150 per box),
// whose order depends on the boxes' sizes. The wider tree has fewer boxes than the one the same
// leaf size gives by hand (the old tree), and meets the tolerance like any other (self and
// separate targets, two right-hand sides); a tree whose leaves are already full (51,200 points at
// 1e-3: ~100 per leaf against ~130) keeps the bounding cube.
TEST(Fmm, WiderRootWhereTheLeavesWouldBeSmall) {
  const std::int64_t m = 5000;
  const auto tgt = points(Dist::uniform, m, 202);
  const auto column_major = [](const Table<double> &t) {
    std::vector<double> c(static_cast<std::size_t>(3 * t.rows()));
    for (std::int64_t i = 0; i < t.rows(); ++i)
      for (int a = 0; a < 3; ++a)
        c[static_cast<std::size_t>(a * t.rows() + i)] = t(i, a);
    return c;
  };
  const auto ct = column_major(tgt);
  for (const Kernel k : {Kernel::laplace, Kernel::multiquadric}) {
    const std::int64_t n = k == Kernel::laplace ? 35840 : 76800;
    const auto src = points(Dist::uniform, n, 201);
    const auto w = signed_weights(n, 2, 203);
    const auto cs = column_major(src);
    for (const bool self : {true, false}) {
      fmm::BbFmmOptions o;
      o.kernel = k;
      o.eps = eps_for(k);
      o.tolerance = 1e-6;
      fmm::BbFmm f(o);
      f.set_points(cs.data(), n, self ? nullptr : ct.data(), self ? 0 : m);
      // The same leaf size given by hand keeps the bounding cube: the old tree, with more boxes.
      auto old_tree = o;
      old_tree.leaf_size = f.stats().leaf_size;
      fmm::BbFmm g(old_tree);
      g.set_points(cs.data(), n, self ? nullptr : ct.data(), self ? 0 : m);
      EXPECT_EQ(g.stats().root_scale, 1.0);
      EXPECT_LT(f.stats().boxes, g.stats().boxes);
      const std::int64_t rows = self ? n : m;
      Table<double> u(rows, 2);
      f.apply(w.data(), 2, u.data());
      const std::string what = fmt::format("{} {}: order {}, leaf size {}, root scale {}",
                                           kernel_info(k).name, self ? "self" : "targets",
                                           f.stats().order, f.stats().leaf_size,
                                           f.stats().root_scale);
      const double err = sampled_error(k, o.eps, src, self ? nullptr : &tgt, w, u);
      EXPECT_LE(err, 1e-6) << what;
      std::printf("%s: error %.2e\n", what.c_str(), err);
      EXPECT_GT(f.stats().root_scale, 1.0) << what;
      if (k == Kernel::laplace && self)
        EXPECT_EQ(f.stats().leaf_size, 399) << what;
    }
  }
  const auto full = points(Dist::uniform, 51200, 204);
  const auto cf = column_major(full);
  fmm::BbFmmOptions o;
  o.tolerance = 1e-3;
  fmm::BbFmm f(o);
  f.set_points(cf.data(), full.rows(), nullptr, 0);
  EXPECT_EQ(f.stats().root_scale, 1.0) << "leaf size " << f.stats().leaf_size;
}

TEST(Fmm, LowRankM2LSetsTheDefaultLeafSizeFromItsRanks) {
  // Without a leaf size the tree's leaves follow the M2L's cost: 2 p³ for the full operators,
  // 2 √(2 p³ r) for low rank r (laplace at 1e-3: p = 5, r ≈ 17, leaves of ~130 instead of 250).
  const auto p = datasets::uniform_cube(20000, 99);
  auto o = fmm_options(Kernel::laplace, 1e-3, 0);
  auto f = o;
  f.fmm_lowrank = false;
  DirectSum<double> low(o), full(f);
  low.set_points(p);
  full.set_points(p);
  const int P = low.stats().fmm_order * low.stats().fmm_order * low.stats().fmm_order;
  EXPECT_EQ(full.stats().fmm_leaf_size, 2 * P);
  EXPECT_EQ(low.stats().fmm_leaf_size,
            std::llround(2 * std::sqrt(2.0 * P * low.stats().fmm_m2l_rank)));
  EXPECT_LT(low.stats().fmm_leaf_size, 2 * P);
}

TEST(Fmm, CompactlySupportedKernelsWhoseEdgeCutsFarPairs) {
  // Wendland functions are only C^k at the edge of their support; with eps = 1.6 the edge
  // (r = 0.625) falls inside the far pairs of boxes of side 1/4 and 1/8. (The order estimate
  // samples every far offset for this; below 1e-6 such kernels need orders near 16, too slow for
  // a unit test.)
  const auto p = datasets::uniform_cube(3000, 94);
  const auto w = signed_weights(3000, 1, 95);
  for (const Kernel k : {Kernel::wendland2, Kernel::wendland4})
    for (const double tol : {1e-3, 1e-4}) {
      auto o = fmm_options(k, tol);
      o.eps = 1.6;
      DirectSum<double> plan(o);
      plan.set_points(p);
      EXPECT_LE(sampled_error(k, 1.6, p, nullptr, w, plan.execute(w)), tol)
          << kernel_info(k).name << " order " << plan.stats().fmm_order;
    }
}

TEST(Fmm, StronglyClusteredDataMakesADeepTree) {
  const auto p = datasets::plummer(20000, 100);
  const auto w = signed_weights(20000, 1, 101);
  DirectSum<double> plan(fmm_options(Kernel::laplace, 1e-6, 64));
  plan.set_points(p);
  const auto u = plan.execute(w);
  EXPECT_GE(plan.stats().tree_depth, 8);
  EXPECT_LE(sampled_error(Kernel::laplace, 1.0, p, nullptr, w, u), 1e-6);
}

TEST(Fmm, AutomaticMethodKeepsSmallProblemsDirect) {
  DirectOptions o;
  o.kernel = Kernel::laplace;
  o.backend = Backend::cpu;
  o.method = Method::automatic;
  DirectSum<double> plan(o);
  plan.set_points(datasets::uniform_cube(500, 110));
  EXPECT_EQ(plan.stats().method, Method::direct);
  plan.set_points(datasets::halton(500, 2)); // 2D: always direct
  EXPECT_EQ(plan.stats().method, Method::direct);
}

TEST(Fmm, Contract) {
  auto o = fmm_options(Kernel::laplace, 1e-12);
  expect_error([&] { DirectSum<double> p(o); }, ErrorCode::invalid_argument, "tolerance 1e-12");
  o.tolerance = 1e-7;
  expect_error([&] { DirectSum<float> p(o); }, ErrorCode::invalid_argument, "float32");
  o.tolerance = 0.5;
  expect_error([&] { DirectSum<double> p(o); }, ErrorCode::invalid_argument, "tolerance 0.5");
  o.tolerance = std::nan("");
  expect_error([&] { DirectSum<double> p(o); }, ErrorCode::invalid_argument, "tolerance nan");
  o.tolerance = 1e-6;
  o.fmm_order = 17;
  expect_error([&] { DirectSum<double> p(o); }, ErrorCode::invalid_argument, "fmm_order 17");
  o.fmm_order = 0;
  o.fmm_leaf_size = -1;
  expect_error([&] { DirectSum<double> p(o); }, ErrorCode::invalid_argument, "fmm_leaf_size");
  o.fmm_leaf_size = 0;
  {
    DirectSum<double> p(o);
    // 2D goes to the 2D FMM, which serves the log kernel only; other dimensions are refused.
    expect_error([&] { p.set_points(datasets::halton(10, 2)); }, ErrorCode::unsupported,
                 "kernel laplace in 2D needs method direct");
    expect_error([&] { p.set_points(datasets::halton(10, 4)); }, ErrorCode::unsupported,
                 "dimension 4");
  }
  o.gradient = true;
  {
    DirectSum<double> p(o);
    expect_error([&] { p.set_points(datasets::uniform_cube(10, 1)); }, ErrorCode::unsupported,
                 "gradient");
  }
  expect_error([] { parse_method("fast"); }, ErrorCode::invalid_argument, "'fast'");
  EXPECT_EQ(parse_method("auto"), Method::automatic);
}

TEST(FmmTree, EveryPairIsCountedExactlyOnce) {
  // With unit weights and K ≡ 1 on every pair, u_i = N − 1: checks that U, V, W and X together
  // cover each (target, source) pair once. K = multiquadric with a tiny eps is 1 to 1e-16.
  for (const Dist d : {Dist::uniform, Dist::plummer, Dist::shell}) {
    const auto p = points(d, 5000, 120);
    const auto t = points(d, 1000, 121);
    DirectOptions o = fmm_options(Kernel::multiquadric, 1e-6, 8);
    o.eps = 1e-9;
    DirectSum<double> plan(o);
    plan.set_points(p, t);
    const auto u = plan.execute(Table<double>(5000, 1, 1.0));
    for (std::int64_t i = 0; i < 1000; ++i)
      ASSERT_NEAR(u(i, 0), 5000.0, 1e-6) << i;
  }
}

// The targets' split over several GPUs: ranges that cover [0, m) in order, cut at leaf boundaries;
// on uniform points (work ∝ targets) parts of nearly equal size.
TEST(FmmTree, SplitTargetsCoversTheTargetsAtLeafBoundaries) {
  for (const Dist d : {Dist::uniform, Dist::plummer}) {
    for (const bool self : {true, false}) {
      const auto s = points(d, 60000, 130);
      const auto t = points(d, 40000, 131);
      const auto sc = s.cast<double>(), tc = t.cast<double>();
      const auto tree = fmm::build_fmm_tree(sc.data(), s.rows(), self ? nullptr : tc.data(),
                                            t.rows(), {.leaf_size = 64, .expansion_size = 125});
      std::vector<std::int64_t> starts; // every leaf's first target
      for (const auto &b : tree.boxes)
        if (b.leaf() && b.targets() > 0)
          starts.push_back(b.tb);
      for (const int parts : {1, 2, 3, 4, 7}) {
        const auto bounds = fmm::split_targets(tree, 125, parts);
        ASSERT_EQ(std::ssize(bounds), parts + 1);
        EXPECT_EQ(bounds.front(), 0);
        EXPECT_EQ(bounds.back(), tree.m);
        for (int k = 1; k < parts; ++k) {
          EXPECT_LE(bounds[k - 1], bounds[k]);
          EXPECT_NE(std::find(starts.begin(), starts.end(), bounds[k]), starts.end())
              << "bound " << bounds[k] << " is not a leaf's first target";
        }
        if (d != Dist::uniform)
          continue;
        const double mean = static_cast<double>(tree.m) / parts;
        for (int k = 0; k < parts; ++k)
          EXPECT_NEAR(static_cast<double>(bounds[k + 1] - bounds[k]), mean, 0.15 * mean)
              << parts << " parts, part " << k;
      }
    }
  }
  // One leaf and more parts than leaves: the leaf goes whole to one part, the others are empty.
  const auto q = points(Dist::uniform, 10, 132);
  const auto qc = q.cast<double>();
  const auto tiny = fmm::build_fmm_tree(qc.data(), 10, nullptr, 0, {.leaf_size = 64});
  const auto b = fmm::split_targets(tiny, 125, 3);
  ASSERT_EQ(std::ssize(b), 4);
  EXPECT_EQ(b.front(), 0);
  EXPECT_EQ(b.back(), 10);
  EXPECT_EQ(std::count_if(b.begin() + 1, b.end(), [](std::int64_t v) { return v == 0; }) +
                std::count_if(b.begin() + 1, b.end(), [](std::int64_t v) { return v == 10; }),
            3);
}

#endif

} // namespace
} // namespace ksum::test
