// RBF partition of unity (seed 001) against known functions. Tolerances: the interpolation property
// at the data to 1e-10 relative; accuracy bounds are 3-5x above the errors measured when the tests
// were written (Franke on Halton points, M4), so a regression in the method fails them.
#include "linalg/brent.hpp"
#include "spatial/grid_index.hpp"
#include "support/expect_error.hpp"

#include <ksum/datasets.hpp>
#include <ksum/error.hpp>
#include <ksum/pum.hpp>

#include <cmath>
#include <gtest/gtest.h>

namespace ksum {
namespace {

using test::expect_error;

Table<double> franke_values(const Table<double> &x) {
  Table<double> f(x.rows(), 1);
  for (std::int64_t i = 0; i < x.rows(); ++i)
    f(i, 0) = datasets::franke(x(i, 0), x(i, 1));
  return f;
}

// A smooth test function in any dimension: exp(−|x − ½|²) cos(Σ x_k).
double smooth(const Table<double> &x, std::int64_t i) {
  double r = 0, c = 0;
  for (std::int64_t k = 0; k < x.cols(); ++k) {
    r += (x(i, k) - 0.5) * (x(i, k) - 0.5);
    c += x(i, k);
  }
  return std::exp(-r) * std::cos(c);
}

Table<double> interior_grid(std::int64_t n) {
  const std::int64_t cnt[2] = {n, n};
  const double lo[2] = {0.02, 0.02}, hi[2] = {0.98, 0.98};
  return datasets::grid(cnt, lo, hi, 2);
}

double franke_rmse(const PumInterpolant &p, std::int64_t grid_n = 40) {
  const auto g = interior_grid(grid_n);
  const auto u = p.evaluate(g);
  double se = 0;
  for (std::int64_t i = 0; i < g.rows(); ++i)
    se += std::pow(u(i, 0) - datasets::franke(g(i, 0), g(i, 1)), 2);
  return std::sqrt(se / static_cast<double>(g.rows()));
}

TEST(GridIndex, SeedFormulaHashAndCompressedIndex) {
  const auto x = datasets::halton(4225, 2);
  spatial::GridIndex g(x);
  // d_PU = ceil(0.5 sqrt(4225 / 2)) = 23 on both axes of the (nearly square) Halton box.
  EXPECT_EQ(g.cells_per_axis()[0], 23);
  EXPECT_EQ(g.cells_per_axis()[1], 23);
  EXPECT_NEAR(g.patch_radius(),
              std::sqrt(2.0) / 23 * std::min(g.hi(0) - g.lo(0), g.hi(1) - g.lo(1)), 1e-15);
  // Every point is in exactly one cell, the one its hash names; within a cell in input order (the
  // parallel counting sort is stable, like a serial one).
  std::vector<int> seen(x.rows(), 0);
  const auto &c = g.cells();
  for (std::int64_t cell = 0; cell < g.num_cells(); ++cell)
    for (std::int64_t a = c.ptr[cell]; a < c.ptr[cell + 1]; ++a) {
      const std::int64_t i = c.idx[a];
      const double p[2] = {x(i, 0), x(i, 1)};
      EXPECT_EQ(g.hash(p), cell);
      if (a > c.ptr[cell])
        EXPECT_LT(c.idx[a - 1], i) << "cell " << cell;
      ++seen[i];
    }
  for (int s : seen)
    ASSERT_EQ(s, 1);
  // 3^s neighbours in the interior.
  std::int64_t count = 0;
  g.for_neighbours(g.num_cells() / 2, 1, [&](std::int64_t) { ++count; });
  EXPECT_EQ(count, 9);
}

// The patch radius option: 0.75 cell widths is taken as given; 0.5 is raised to just cover a cell
// (the half diagonal, √2 / 2 widths, times 1.001); still an interpolant.
TEST(GridIndex, PatchRadiusFactor) {
  const auto x = datasets::halton(4225, 2);
  spatial::GridIndex g75(x, 1.0, 0.75), g50(x, 1.0, 0.5);
  const double width = std::min(g75.cell_width(0), g75.cell_width(1));
  EXPECT_NEAR(g75.patch_radius(), 0.75 * width, 1e-15);
  const double half_diag =
      0.5 * std::sqrt(g50.cell_width(0) * g50.cell_width(0) + g50.cell_width(1) * g50.cell_width(1));
  EXPECT_NEAR(g50.patch_radius(), 1.001 * half_diag, 1e-15);
  const auto f = franke_values(x);
  PumInterpolant p({.kernel = Kernel::matern4, .eps = 10.0, .patch_radius = 0.75});
  p.set_data(x, f);
  const auto at_data = p.evaluate(x);
  for (std::int64_t i = 0; i < x.rows(); ++i)
    ASSERT_NEAR(at_data(i, 0), f(i, 0), 1e-10 * 1.22) << i;
  EXPECT_LT(p.stats().median_points, 20); // about 8 points per cell × π 0.75²
  expect_error([&] { spatial::GridIndex bad(x, 1.0, -1.0); }, ErrorCode::invalid_argument,
               "radius factor");
}

TEST(Brent, MinimaOfKnownFunctions) {
  const auto a =
      linalg::brent_minimize([](double x) { return (x - 0.3) * (x - 0.3) + 1; }, -1, 2, 1e-9, 100);
  EXPECT_NEAR(a.x, 0.3, 1e-6);
  EXPECT_NEAR(a.fx, 1.0, 1e-12);
  const auto b =
      linalg::brent_minimize([](double x) { return std::exp(x) - 2 * x; }, -3, 3, 1e-9, 100);
  EXPECT_NEAR(b.x, std::log(2.0), 1e-6); // d/dx = e^x − 2
  // +inf on part of the bracket (an unusable ε in LOOCV) must not stop the search.
  const auto c = linalg::brent_minimize(
      [](double x) { return x < 0 ? INFINITY : (x - 1.5) * (x - 1.5); }, -2, 3, 1e-9, 100);
  EXPECT_NEAR(c.x, 1.5, 1e-5);
}

TEST(Pum, InterpolatesTheDataAndConvergesOnFranke) {
  double previous = 1;
  for (std::int64_t n : {1089, 4225, 16641}) {
    const auto x = datasets::halton(n, 2);
    const auto f = franke_values(x);
    PumInterpolant p({.kernel = Kernel::matern4, .eps = 10.0});
    p.set_data(x, f);
    const auto at_data = p.evaluate(x);
    for (std::int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(at_data(i, 0), f(i, 0), 1e-10 * 1.22) << "data point " << i; // max |f| = 1.22
    const double rmse = franke_rmse(p);
    EXPECT_LT(rmse, previous / 4) << "N = " << n; // M4: error falls faster than h^2
    previous = rmse;
    EXPECT_EQ(p.stats().regularised_patches, 0);
  }
  EXPECT_LT(previous, 2e-6); // measured 4.2e-7 at N = 16641, eps = 10
}

TEST(Pum, FitAndEvaluationDoNotDependOnTheTaskSizes) {
  const auto x = datasets::halton(4225, 2);
  const auto f = franke_values(x);
  const auto g = interior_grid(60);
  Table<double> ref;
  // (points per evaluation task, patches per fit task); 0: the task-size model's choice.
  const std::pair<std::int64_t, std::int64_t> sizes[] = {
      {256, 16}, {0, 0}, {1, 1}, {7, 3}, {100000, 100000}};
  for (const auto &[chunk, fit_chunk] : sizes) {
    PumInterpolant p({.kernel = Kernel::matern4,
                      .eps = 10.0,
                      .loocv = true,
                      .threads = 2,
                      .eval_chunk = chunk,
                      .fit_chunk = fit_chunk,
                      .backend = Backend::cpu});
    p.set_data(x, f);
    const auto u = p.evaluate(g);
    EXPECT_GE(p.last_eval_chunk(), 1) << chunk;
    EXPECT_GE(p.stats().fit_chunk, 1) << fit_chunk;
    if (chunk > 0)
      EXPECT_EQ(p.last_eval_chunk(), chunk);
    if (fit_chunk > 0)
      EXPECT_EQ(p.stats().fit_chunk, fit_chunk);
    if (ref.rows() == 0) {
      ref = u;
      continue;
    }
    for (std::int64_t i = 0; i < g.rows(); ++i)
      ASSERT_EQ(u(i, 0), ref(i, 0)) << "point " << i << ", eval_chunk " << chunk << ", fit_chunk "
                                    << fit_chunk;
  }
  expect_error(
      [&] {
        PumInterpolant p({.eval_chunk = -1, .backend = Backend::cpu});
        p.set_data(x, f);
      },
      ErrorCode::invalid_argument, "eval_chunk");
  expect_error(
      [&] {
        PumInterpolant p({.fit_chunk = -2, .backend = Backend::cpu});
        p.set_data(x, f);
      },
      ErrorCode::invalid_argument, "fit_chunk");
}

TEST(Pum, LoocvIsCloseToTheBestFixedShape) {
  const auto x = datasets::halton(4225, 2);
  const auto f = franke_values(x);
  double best = INFINITY;
  for (double eps : {1.0, 3.0, 10.0, 20.0}) {
    PumInterpolant p({.kernel = Kernel::matern4, .eps = eps});
    p.set_data(x, f);
    best = std::min(best, franke_rmse(p));
  }
  PumInterpolant cv({.kernel = Kernel::matern4, .loocv = true});
  cv.set_data(x, f);
  EXPECT_LT(franke_rmse(cv), 2 * best);
  const auto &st = cv.stats();
  EXPECT_LT(st.eps_min, st.eps_max); // ε differs between patches
  EXPECT_GE(st.eps_min, 0.1);
  EXPECT_LE(st.eps_max, 100.0);
}

// Polynomial reproduction (issue 3 item 11): with local polynomials of degree d every local
// interpolant reproduces polynomials of degree d, and the Shepard weights sum to one, so the PUM
// interpolant reproduces them everywhere in the box, for every kernel that allows the degree.
TEST(PumPolynomial, ReproducesLinearFunctions) {
  struct Case {
    Kernel kernel;
    int degree;
    std::int64_t s;
  };
  for (const Case c : {Case{Kernel::tps, 1, 2}, Case{Kernel::cubic, 1, 2},
                       Case{Kernel::multiquadric, 1, 2}, Case{Kernel::matern4, 1, 2},
                       Case{Kernel::linear, 1, 3}, Case{Kernel::matern4, 1, 3},
                       Case{Kernel::multiquadric, 0, 2}, Case{Kernel::gaussian, 0, 3}}) {
    const auto x = datasets::halton(3000, c.s);
    // Degree 1: 1 + 2 x − 3 y (+ 0.5 z); degree 0: the constant 1.7.
    const auto poly = [&](const Table<double> &t, std::int64_t i) {
      if (c.degree == 0)
        return 1.7;
      double v = 1 + 2 * t(i, 0) - 3 * t(i, 1);
      if (c.s == 3)
        v += 0.5 * t(i, 2);
      return v;
    };
    Table<double> f(x.rows(), 1);
    for (std::int64_t i = 0; i < x.rows(); ++i)
      f(i, 0) = poly(x, i);
    for (const bool loocv : {false, true}) {
      if (loocv && c.kernel != Kernel::tps && c.kernel != Kernel::matern4)
        continue; // LOOCV on the augmented systems: two kernels suffice (CI time)
      PumInterpolant p({.kernel = c.kernel, .degree = c.degree, .eps = 3.0, .loocv = loocv});
      p.set_data(x, f);
      auto y = datasets::halton(4000, c.s, 31);
      for (std::int64_t k = 0; k < y.rows() * y.cols(); ++k)
        y.data()[k] = 0.01 + 0.98 * y.data()[k];
      const auto u = p.evaluate(y);
      double worst = 0;
      for (std::int64_t i = 0; i < y.rows(); ++i)
        worst = std::max(worst, std::abs(u(i, 0) - poly(y, i)));
      EXPECT_LT(worst, 1e-9) << kernel_info(c.kernel).name << " degree " << c.degree << " s "
                             << c.s << " loocv " << loocv;
      EXPECT_EQ(p.stats().regularised_patches, 0) << kernel_info(c.kernel).name;
    }
  }
  // Without the polynomial a positive definite kernel does not reproduce a linear function (so
  // the test above can fail): M4 at ε = 3 misses it by far more than 1e-9.
  const auto x = datasets::halton(3000, 2);
  Table<double> f(x.rows(), 1);
  for (std::int64_t i = 0; i < x.rows(); ++i)
    f(i, 0) = 1 + 2 * x(i, 0) - 3 * x(i, 1);
  PumInterpolant plain({.kernel = Kernel::matern4, .eps = 3.0});
  plain.set_data(x, f);
  const auto y = interior_grid(20);
  const auto u = plain.evaluate(y);
  double worst = 0;
  for (std::int64_t i = 0; i < y.rows(); ++i)
    worst = std::max(worst, std::abs(u(i, 0) - (1 + 2 * y(i, 0) - 3 * y(i, 1))));
  EXPECT_GT(worst, 1e-7);
}

// tps with its linear polynomial: the interpolation property and convergence on Franke.
TEST(PumPolynomial, ThinPlateSplinesInterpolateFranke) {
  double previous = 1;
  for (std::int64_t n : {1089, 4225, 16641}) {
    const auto x = datasets::halton(n, 2);
    const auto f = franke_values(x);
    PumInterpolant p({.kernel = Kernel::tps, .degree = 1, .eps = 1.0});
    p.set_data(x, f);
    const auto at_data = p.evaluate(x);
    for (std::int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(at_data(i, 0), f(i, 0), 1e-10 * 1.22) << "data point " << i;
    const double rmse = franke_rmse(p);
    EXPECT_LT(rmse, previous / 2.5) << "N = " << n;
    previous = rmse;
  }
}

TEST(PumPolynomial, CollinearPatchIsAnErrorForDegreeOne) {
  Table<double> x(60, 2), f(60, 1);
  for (std::int64_t i = 0; i < 60; ++i) {
    x(i, 0) = static_cast<double>(i) / 59.0;
    x(i, 1) = i == 59 ? 1.0 : 0.25 * x(i, 0); // a line, except the last point (a non-empty box)
    f(i, 0) = x(i, 0);
  }
  expect_error([&] { PumInterpolant({.kernel = Kernel::tps, .degree = 1}).set_data(x, f); },
               ErrorCode::invalid_argument, "do not determine a linear polynomial");
  // On the GPU backend local polynomials are refused with the reason.
  expect_error(
      [&] {
        PumInterpolant({.kernel = Kernel::tps, .degree = 1, .backend = Backend::cuda})
            .set_data(datasets::halton(100, 2), franke_values(datasets::halton(100, 2)));
      },
      ErrorCode::unsupported, "local polynomials");
}

class PumDims : public ::testing::TestWithParam<int> {};

TEST_P(PumDims, SmoothFunctionInDimension) {
  const int s = GetParam();
  const std::int64_t sizes[6] = {0, 200, 1000, 3000, 800, 500};
  const double bounds[6] = {0, 1e-6, 2e-6, 2e-5, 1e-3, 6e-3}; // measured: 1.7e-7 … 1.4e-3
  const auto x = datasets::halton(sizes[s], s);
  Table<double> f(x.rows(), 2);
  for (std::int64_t i = 0; i < x.rows(); ++i) {
    f(i, 0) = smooth(x, i);
    f(i, 1) = -3 * smooth(x, i); // a second column: the same factorisations serve both
  }
  PumInterpolant p({.kernel = Kernel::matern4, .eps = 1.0});
  p.set_data(x, f);
  auto y = datasets::halton(2000, s, 5000);
  for (std::int64_t k = 0; k < y.rows() * y.cols(); ++k)
    y.data()[k] = 0.05 + 0.9 * y.data()[k];
  const auto u = p.evaluate(y);
  double se = 0;
  for (std::int64_t i = 0; i < y.rows(); ++i) {
    se += std::pow(u(i, 0) - smooth(y, i), 2);
    // Linear in the values up to the rounding of two solves with one (ill-conditioned) factor.
    EXPECT_NEAR(u(i, 1), -3 * u(i, 0), 3e-9); // |f| <= 3: 1e-9 relative to the data
  }
  EXPECT_LT(std::sqrt(se / 2000.0), bounds[s]);
}

INSTANTIATE_TEST_SUITE_P(OneToFive, PumDims, ::testing::Range(1, 6));

// Seed 001 §5.2: Halton points on S² in R³ (most grid cells are empty), f3, spiral evaluation
// points (whose poles lie just outside the data's box: extrapolate).
TEST(Pum, SphereHaltonDataSpiralEvaluation) {
  const auto y = datasets::spiral_sphere(20000);
  double previous = 1;
  for (std::int64_t n : {1089, 4225}) {
    const auto x = datasets::halton_sphere(n);
    Table<double> f(n, 1);
    for (std::int64_t i = 0; i < n; ++i)
      f(i, 0) = datasets::franke3(x(i, 0), x(i, 1), x(i, 2));
    PumInterpolant p({.kernel = Kernel::matern4, .eps = 5.0, .extrapolate = true});
    p.set_data(x, f);
    EXPECT_GT(p.stats().empty_patches, 0);
    const auto at = p.evaluate(x);
    for (std::int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(at(i, 0), f(i, 0), 1e-10) << "data point " << i;
    const auto u = p.evaluate(y);
    double se = 0;
    for (std::int64_t i = 0; i < y.rows(); ++i)
      se += std::pow(u(i, 0) - datasets::franke3(y(i, 0), y(i, 1), y(i, 2)), 2);
    const double rmse = std::sqrt(se / static_cast<double>(y.rows()));
    EXPECT_LT(rmse, previous / 10) << "N = " << n;
    previous = rmse;
  }
  EXPECT_LT(previous, 6e-5); // measured 1.5e-5 at N = 4225
}

TEST(PumRobustness, DuplicatesAreNamedOrMerged) {
  auto x = datasets::halton(500, 2);
  x(321, 0) = x(17, 0);
  x(321, 1) = x(17, 1);
  auto f = franke_values(x);
  f(321, 0) = f(17, 0) + 0.2;
  PumInterpolant p({.kernel = Kernel::matern2, .eps = 5.0});
  expect_error([&] { p.set_data(x, f); }, ErrorCode::invalid_argument, "data rows 17 and 321");
  PumInterpolant m({.kernel = Kernel::matern2, .eps = 5.0, .merge_duplicates = true});
  m.set_data(x, f);
  EXPECT_EQ(m.stats().merged_duplicates, 1);
  const auto all = m.evaluate(x); // every other data point keeps its own value
  for (std::int64_t i = 0; i < x.rows(); ++i) {
    if (i != 17 && i != 321) {
      ASSERT_NEAR(all(i, 0), f(i, 0), 1e-9) << "row " << i;
    }
  }
  Table<double> one(1, 2);
  one(0, 0) = x(17, 0);
  one(0, 1) = x(17, 1);
  EXPECT_NEAR(m.evaluate(one)(0, 0), f(17, 0) + 0.1, 1e-9); // the mean of the two values
}

TEST(PumRobustness, OutsideTheBoxIsAnErrorUnlessExtrapolating) {
  const auto x = datasets::halton(1089, 2);
  const auto f = franke_values(x);
  Table<double> y(2, 2, 0.5);
  y(1, 0) = 1.05;
  PumInterpolant p({.kernel = Kernel::matern4, .eps = 5.0});
  p.set_data(x, f);
  expect_error([&] { p.evaluate(y); }, ErrorCode::invalid_argument,
               "evaluation point 1 (1.05, 0.5) lies outside");
  PumInterpolant e({.kernel = Kernel::matern4, .eps = 5.0, .extrapolate = true});
  e.set_data(x, f);
  const auto u = e.evaluate(y);
  EXPECT_NEAR(u(0, 0), datasets::franke(0.5, 0.5), 1e-4);
  EXPECT_NEAR(u(1, 0), datasets::franke(1.05, 0.5), 0.05); // extrapolated: close, not exact
  // Far outside every patch: the nearest patch's interpolant, finite, found in bounded time.
  Table<double> far(2, 2);
  far(0, 0) = 3.0;
  far(0, 1) = 0.5;
  far(1, 0) = 1e20;
  far(1, 1) = -1e20;
  const auto uf = e.evaluate(far);
  EXPECT_TRUE(std::isfinite(uf(0, 0)));
  EXPECT_TRUE(std::isfinite(uf(1, 0)));
}

TEST(PumRobustness, TwoPointsInAnElongated3DBox) {
  // One cell whose patch must still hold both points (radius covers the cell's half-diagonal).
  Table<double> x(2, 3, 0.0), f(2, 1);
  x(1, 0) = 1;
  x(1, 1) = 1.9;
  x(1, 2) = 1.9;
  f(0, 0) = 1;
  f(1, 0) = 2;
  PumInterpolant p({.kernel = Kernel::matern2, .eps = 1.0, .extrapolate = true});
  p.set_data(x, f);
  const auto u = p.evaluate(x);
  EXPECT_NEAR(u(0, 0), 1.0, 1e-10);
  EXPECT_NEAR(u(1, 0), 2.0, 1e-10);
}

TEST(PumRobustness, SparsePatchesGrowAndIllConditionedOnesAreRegularised) {
  // A dense cluster and a few far points: patches near the far points start with too few points.
  auto x = datasets::halton(600, 2);
  for (std::int64_t i = 0; i < 590; ++i)
    for (std::int64_t k = 0; k < 2; ++k)
      x(i, k) = 0.2 * x(i, k);
  const auto f = franke_values(x);
  PumInterpolant p({.kernel = Kernel::matern4, .eps = 3.0, .extrapolate = true});
  p.set_data(x, f);
  EXPECT_GT(p.stats().grown_patches, 0);
  EXPECT_GE(p.stats().min_points, 9); // 3 (s + 1)
  // A very flat Gaussian makes every local matrix numerically singular: a nugget, no NaN.
  PumInterpolant flat({.kernel = Kernel::gaussian, .eps = 0.01});
  const auto xs = datasets::halton(1089, 2);
  flat.set_data(xs, franke_values(xs));
  EXPECT_GT(flat.stats().regularised_patches, 0);
  const auto u = flat.evaluate(interior_grid(20));
  for (std::int64_t i = 0; i < u.rows(); ++i)
    ASSERT_TRUE(std::isfinite(u(i, 0)));
  // Regularised, the fit no longer interpolates exactly (ε = 0.01 makes the kernel nearly constant
  // over a patch), but it degrades gracefully: within 5 % of the data's range, not garbage
  // (2.2 % measured).
  const auto fx = franke_values(xs);
  const auto at = flat.evaluate(xs);
  double worst = 0;
  for (std::int64_t i = 0; i < xs.rows(); ++i)
    worst = std::max(worst, std::abs(at(i, 0) - fx(i, 0)));
  EXPECT_LT(worst, 0.05 * 1.22);
}

TEST(PumContract, BadInputsAreErrors) {
  const auto x = datasets::halton(100, 2);
  const auto f = franke_values(x);
  expect_error([&] { PumInterpolant({.kernel = Kernel::tps}).set_data(x, f); },
               ErrorCode::invalid_argument, "polynomial of degree 1 (--degree 1)");
  expect_error([&] { PumInterpolant({.kernel = Kernel::quintic, .degree = 1}).set_data(x, f); },
               ErrorCode::invalid_argument, "supports up to 1");
  expect_error([&] { PumInterpolant({.kernel = Kernel::laplace, .degree = 1}).set_data(x, f); },
               ErrorCode::invalid_argument, "singular");
  expect_error([&] { PumInterpolant({.degree = 2}).set_data(x, f); }, ErrorCode::invalid_argument,
               "-1 (none), 0 or 1");
  expect_error([&] { PumInterpolant({.eps = -1}).set_data(x, f); }, ErrorCode::invalid_argument,
               "eps must be > 0");
  expect_error([&] { PumInterpolant({.loocv = true, .eps_min = 5, .eps_max = 1}).set_data(x, f); },
               ErrorCode::invalid_argument, "bracket");
  expect_error([&] { PumInterpolant({}).set_data(x, Table<double>(99, 1)); },
               ErrorCode::shape_mismatch, "99 value rows");
  auto bad = x;
  bad(4, 1) = NAN;
  expect_error([&] { PumInterpolant({}).set_data(bad, f); }, ErrorCode::non_finite, "row 4");
  expect_error([&] { PumInterpolant({}).evaluate(x); }, ErrorCode::invalid_argument, "set_data");
  PumInterpolant p({});
  p.set_data(x, f);
  expect_error([&] { p.evaluate(Table<double>(3, 3)); }, ErrorCode::shape_mismatch, "dimension 2");
  Table<double> line(10, 2, 0.5); // zero extent along both axes
  for (std::int64_t i = 0; i < 10; ++i)
    line(i, 0) = 0.1 * static_cast<double>(i);
  expect_error([&] { PumInterpolant({}).set_data(line, Table<double>(10, 1)); },
               ErrorCode::invalid_argument, "zero extent along axis 1");
  expect_error(
      [&] {
        PumInterpolant({.kernel = Kernel::wendland2})
            .set_data(datasets::halton(50, 4), Table<double>(50, 1));
      },
      ErrorCode::invalid_argument, "up to dimension 3");
}

} // namespace
} // namespace ksum
