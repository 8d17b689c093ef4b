// The k-nearest-neighbour RBF interpolant: with k = N it is the global interpolant (the same
// system at every point), with k < N it reproduces the polynomials of its degree exactly, and bad
// input is refused with a message.
#include <ksum/error.hpp>
#include <ksum/global.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace {

ksum::Table<double> random_points(std::int64_t n, std::int64_t d, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(0, 1);
  ksum::Table<double> t(n, d);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < d; ++k)
      t(i, k) = u(g);
  return t;
}

ksum::Table<double> field(const ksum::Table<double> &x) {
  ksum::Table<double> f(x.rows(), 1);
  for (std::int64_t i = 0; i < x.rows(); ++i)
    f(i, 0) = std::sin(3 * x(i, 0)) * std::cos(2 * x(i, 1)) + x(i, 0) * x(i, 0);
  return f;
}

TEST(LocalRbf, AllNeighboursIsTheGlobalInterpolant) {
  const auto y = random_points(120, 2, 1), x = random_points(40, 2, 2);
  const auto f = field(y);
  for (auto kern : {ksum::Kernel::tps, ksum::Kernel::multiquadric, ksum::Kernel::gaussian}) {
    const double eps = kern == ksum::Kernel::tps ? 1.0 : 6.0;
    ksum::LocalRbfInterpolant local({.kernel = kern, .eps = eps, .neighbors = 120});
    local.set_data(y, f);
    ksum::GlobalRbfOptions go;
    go.kernel = kern;
    go.eps = eps;
    go.solver = ksum::GlobalSolver::dense;
    go.backend = ksum::Backend::cpu;
    ksum::GlobalRbfInterpolant global(go);
    global.set_data(y, f);
    const auto a = local.evaluate(x), b = global.evaluate(x);
    for (std::int64_t i = 0; i < x.rows(); ++i)
      EXPECT_NEAR(a(i, 0), b(i, 0), 1e-9) << ksum::kernel_info(kern).name << " point " << i;
  }
}

TEST(LocalRbf, ReproducesItsPolynomials) {
  const auto y = random_points(500, 3, 3), x = random_points(60, 3, 4);
  ksum::Table<double> f(500, 2);
  for (std::int64_t i = 0; i < 500; ++i) {
    f(i, 0) = 1 + 2 * y(i, 0) - y(i, 1) + 0.5 * y(i, 2);
    f(i, 1) = 3.0;
  }
  ksum::LocalRbfInterpolant local({.kernel = ksum::Kernel::cubic, .neighbors = 20});
  local.set_data(y, f);
  const auto s = local.evaluate(x);
  for (std::int64_t i = 0; i < x.rows(); ++i) {
    EXPECT_NEAR(s(i, 0), 1 + 2 * x(i, 0) - x(i, 1) + 0.5 * x(i, 2), 1e-10);
    EXPECT_NEAR(s(i, 1), 3.0, 1e-10);
  }
}

TEST(LocalRbf, RefusesBadInput) {
  const auto y = random_points(30, 2, 5);
  EXPECT_THROW(ksum::LocalRbfInterpolant({.neighbors = 0}), ksum::Error);
  ksum::LocalRbfInterpolant few({.kernel = ksum::Kernel::tps, .degree = 2, .neighbors = 4});
  try {
    few.set_data(y, field(y));
    FAIL() << "4 neighbours for 6 quadratic terms accepted";
  } catch (const ksum::Error &e) {
    EXPECT_NE(std::string(e.what()).find("At least 6 data points"), std::string::npos);
  }
  ksum::LocalRbfInterpolant ok({.neighbors = 10});
  auto bad = y;
  bad(7, 1) = NAN;
  EXPECT_THROW(ok.set_data(bad, field(y)), ksum::Error);
  ok.set_data(y, field(y));
  EXPECT_THROW(ok.evaluate(random_points(3, 3, 6)), ksum::Error);
}

} // namespace
