// CPU direct sum against the fp64 reference (tolerances: tests/support/reference.hpp), and the
// plan's contract: every bad input is an Error with a code and a message naming it.
#include "direct/direct_cases.hpp"
#include "support/expect_error.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>

#include <random>

namespace ksum::test {
namespace {

class CpuKernels : public ::testing::TestWithParam<Kernel> {};

TEST_P(CpuKernels, SelfSum3DBothPrecisions) {
  expect_self_sum_3d(GetParam(), Backend::cpu);
}

TEST_P(CpuKernels, TargetsGradientAndSeveralRhs2D) {
  expect_targets_gradient_rhs_2d(GetParam(), Backend::cpu);
}

TEST_P(CpuKernels, DuplicatePointsSelfSum) {
  SumCase c{.kernel = GetParam(),
            .eps = default_eps(GetParam()),
            .n = 400,
            .gradient = true,
            .duplicates = true};
  EXPECT_LE(run_case<double>(c, Backend::cpu), tolerance<double>());
}

INSTANTIATE_TEST_SUITE_P(AllKernels, CpuKernels, ::testing::ValuesIn(every_kernel()),
                         [](const auto &info) { return kernel_test_name(info.param); });

class CpuDims : public ::testing::TestWithParam<int> {};

TEST_P(CpuDims, AnyDimensionWithGradient) {
  expect_dimension(GetParam(), 2, Backend::cpu);
}

INSTANTIATE_TEST_SUITE_P(OneToSix, CpuDims, ::testing::Range(1, 7));

TEST(CpuDirect, SinglePointSelfSumIsZero) {
  DirectSum<double> plan({.kernel = Kernel::gaussian, .backend = Backend::cpu});
  Table<double> p(1, 3, 0.5), w(1, 1, 2.0);
  plan.set_points(p);
  const auto u = plan.execute(w);
  ASSERT_EQ(u.rows(), 1);
  EXPECT_EQ(u(0, 0), 0.0); // the only pair is the self pair
}

TEST(CpuDirect, GradientChosenPerCallMatchesAGradientPlan) {
  const auto x = random_points(300, 3, 7);
  Table<double> w(300, 2);
  for (std::int64_t i = 0; i < 300; ++i) {
    w(i, 0) = std::sin(0.1 * i);
    w(i, 1) = 1.0;
  }
  DirectSum<double> values({.kernel = Kernel::gaussian, .eps = 2.0, .backend = Backend::cpu});
  DirectSum<double> grads(
      {.kernel = Kernel::gaussian, .eps = 2.0, .gradient = true, .backend = Backend::cpu});
  values.set_points(x);
  grads.set_points(x);
  const auto u0 = values.execute(w);
  const auto g = values.execute(w, true), ref = grads.execute(w);
  ASSERT_EQ(g.cols(), ref.cols());
  for (std::int64_t k = 0; k < g.rows() * g.cols(); ++k)
    EXPECT_EQ(g.data()[k], ref.data()[k]);
  EXPECT_FALSE(values.options().gradient); // the option is back
  const auto u1 = values.execute(w, false);
  for (std::int64_t k = 0; k < u0.rows() * u0.cols(); ++k)
    EXPECT_EQ(u0.data()[k], u1.data()[k]);
  DirectSum<double> fmm(
      {.kernel = Kernel::laplace, .backend = Backend::cpu, .method = Method::fmm});
  fmm.set_points(random_points(2000, 3, 8));
  expect_error([&] { fmm.execute(Table<double>(2000, 1, 1.0), true); }, ErrorCode::unsupported,
               "values only");
}

TEST(CpuDirect, SinglePointSeparateTarget) {
  DirectSum<double> plan({.kernel = Kernel::multiquadric, .eps = 2.0, .backend = Backend::cpu});
  Table<double> p(1, 2, 0.0), t(1, 2, 0.0), w(1, 1, 3.0);
  t(0, 0) = 0.3;
  t(0, 1) = 0.4; // r = 0.5, eps r = 1
  plan.set_points(p, t);
  EXPECT_NEAR(plan.execute(w)(0, 0), 3.0 * std::sqrt(2.0), 1e-15);
}

TEST(CpuDirect, NoSourcesGivesZerosNoTargetsGivesNoRows) {
  DirectSum<double> plan({.kernel = Kernel::laplace, .backend = Backend::cpu});
  plan.set_points(Table<double>(0, 3), random_points(5, 3, 1));
  const auto u = plan.execute(Table<double>(0, 2));
  ASSERT_EQ(u.rows(), 5);
  ASSERT_EQ(u.cols(), 2);
  for (std::int64_t k = 0; k < 10; ++k)
    EXPECT_EQ(u.data()[k], 0.0);
  plan.set_points(random_points(4, 3, 2), Table<double>(0, 3));
  EXPECT_EQ(plan.execute(Table<double>(4, 1, 1.0)).rows(), 0);
}

TEST(CpuDirect, ThreadCountDoesNotChangeTheResultBeyondRounding) {
  const auto p = random_points(900, 3, 3);
  const auto w = random_points(900, 1, 4, -1, 1);
  DirectSum<double> one({.kernel = Kernel::laplace, .backend = Backend::cpu, .threads = 1});
  DirectSum<double> two({.kernel = Kernel::laplace, .backend = Backend::cpu, .threads = 2});
  one.set_points(p);
  two.set_points(p);
  const auto a = one.execute(w), b = two.execute(w);
  for (std::int64_t i = 0; i < 900; ++i)
    EXPECT_EQ(a(i, 0), b(i, 0)); // blocks are independent: bitwise the same
}

TEST(DirectContract, BadShapeParameter) {
  expect_error([] { DirectSum<double>({.eps = 0.0}); }, ErrorCode::invalid_argument, "eps");
  expect_error([] { DirectSum<double>({.eps = -1.0}); }, ErrorCode::invalid_argument, "-1");
  expect_error([] { DirectSum<double>({.eps = NAN}); }, ErrorCode::invalid_argument, "nan");
  expect_error([] { DirectSum<double>({.threads = -2}); }, ErrorCode::invalid_argument, "-2");
}

TEST(DirectContract, NonFiniteInputsNameTheirRowAndColumn) {
  DirectSum<double> plan({.backend = Backend::cpu});
  auto p = random_points(10, 3, 5);
  p(7, 2) = NAN;
  expect_error([&] { plan.set_points(p); }, ErrorCode::non_finite, "row 7, column 2");
  auto t = random_points(4, 3, 6);
  t(3, 0) = INFINITY;
  expect_error([&] { plan.set_points(random_points(10, 3, 5), t); }, ErrorCode::non_finite,
               "targets: non-finite value inf at row 3, column 0");
  plan.set_points(random_points(10, 3, 5));
  auto w = random_points(10, 1, 7);
  w(4, 0) = NAN;
  expect_error([&] { plan.execute(w); }, ErrorCode::non_finite, "weights");
}

TEST(DirectContract, ShapeMismatches) {
  DirectSum<double> plan({.backend = Backend::cpu});
  expect_error([&] { plan.execute(Table<double>(3, 1)); }, ErrorCode::invalid_argument,
               "set_points");
  expect_error([&] { plan.set_points(random_points(5, 3, 1), random_points(5, 2, 1)); },
               ErrorCode::shape_mismatch, "2 columns but sources have 3");
  plan.set_points(random_points(5, 3, 1));
  expect_error([&] { plan.execute(Table<double>(4, 1)); }, ErrorCode::shape_mismatch,
               "4 rows but there are 5 sources");
  expect_error([&] { plan.execute(Table<double>(5, 0)); }, ErrorCode::invalid_argument,
               "at least one column");
  expect_error([&] { plan.set_points(Table<double>(5, 0)); }, ErrorCode::invalid_argument,
               "dimension");
}

TEST(DirectContract, GpuBackendWithoutGpuSaysWhy) {
  if (!gpus().empty())
    GTEST_SKIP() << "a GPU is present";
  DirectSum<double> plan({.backend = Backend::cuda});
  expect_error([&] { plan.set_points(random_points(5, 3, 1)); }, ErrorCode::unsupported, "CUDA");
}

TEST(DirectContract, AutoPicksCpuWithoutGpu) {
  if (!gpus().empty())
    GTEST_SKIP() << "a GPU is present";
  DirectSum<float> plan({});
  plan.set_points(random_points(5, 3, 1).cast<float>());
  EXPECT_EQ(plan.backend(), Backend::cpu);
}

TEST(DirectContract, FailedSetPointsLeavesThePlanAsItWas) {
  DirectSum<double> plan({.kernel = Kernel::gaussian, .backend = Backend::cpu});
  const auto a = random_points(50, 3, 1);
  const auto w = random_points(50, 1, 2);
  plan.set_points(a);
  const auto before = plan.execute(w);
  auto bad = random_points(80, 3, 3);
  bad(10, 1) = NAN;
  expect_error([&] { plan.set_points(bad); }, ErrorCode::non_finite, "row 10");
  EXPECT_EQ(plan.num_sources(), 50);
  const auto after = plan.execute(w);
  for (std::int64_t i = 0; i < 50; ++i)
    EXPECT_EQ(before(i, 0), after(i, 0));
  DirectSum<double> never({.backend = Backend::cuda});
  expect_error([&] { never.set_points(random_points(5, 9, 1)); }, ErrorCode::unsupported, "9");
  expect_error([&] { never.execute(Table<double>(5, 1)); }, ErrorCode::invalid_argument,
               "set_points first");
}

TEST(DirectContract, ShapeParameterThatOverflowsTheCoordinates) {
  DirectSum<float> plan({.kernel = Kernel::gaussian, .eps = 1e30, .backend = Backend::cpu});
  Table<float> p(2, 1);
  p(1, 0) = 1e10f;
  expect_error([&] { plan.set_points(p); }, ErrorCode::invalid_argument, "overflows the float32");
}

TEST(DirectContract, OverflowIsReportedNotReturned) {
  DirectSum<float> plan({.kernel = Kernel::quintic, .backend = Backend::cpu});
  Table<float> p(2, 1);
  p(0, 0) = 0;
  p(1, 0) = 1e8f; // r^5 = 1e40 > float max
  plan.set_points(p);
  expect_error([&] { plan.execute(Table<float>(2, 1, 1.0f)); }, ErrorCode::non_finite,
               "overflowed the float32 range");
}

TEST(CpuDirect, CoincidentTargetsOfSingularKernels) {
  expect_coincident_singular(Backend::cpu);
}

} // namespace
} // namespace ksum::test

// The targets per task (DirectOptions::cpu_block, chosen by the task-size model when 0) change the
// order of nothing: every target's sum runs over the same source chunks, so the results are the
// same bits for any block size.
TEST(DirectCpu, ResultsDoNotDependOnTheBlockSize) {
  // n > 1024: several source chunks per target; the fused path (one right-hand side, no
  // gradient), the general one, and the self sum (targets = sources, j = i split out).
  const std::int64_t m = 301, n = 2500;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  ksum::Table<double> x(m, 3), y(n, 3), w(n, 2);
  for (std::int64_t k = 0; k < m * 3; ++k)
    x.data()[k] = u(rng);
  for (std::int64_t k = 0; k < n * 3; ++k)
    y.data()[k] = u(rng);
  for (std::int64_t k = 0; k < n * 2; ++k)
    w.data()[k] = u(rng);
  ksum::Table<double> first;
  for (std::int64_t block : {1, 7, 32, 100, 301, 1000, 0}) {
    ksum::DirectOptions o;
    o.kernel = ksum::Kernel::gaussian;
    o.backend = ksum::Backend::cpu;
    o.threads = 2;
    o.gradient = true;
    o.cpu_block = block;
    ksum::DirectSum<double> s(o);
    s.set_points(y, x); // sources y (n), targets x (m)
    const ksum::Table<double> r = s.execute(w);
    EXPECT_GT(s.stats().cpu_block, 0) << block;
    if (first.rows() == 0) {
      first = r;
      continue;
    }
    ASSERT_EQ(r.rows(), first.rows());
    ASSERT_EQ(r.cols(), first.cols());
    for (std::int64_t k = 0; k < r.rows() * r.cols(); ++k)
      ASSERT_EQ(r.data()[k], first.data()[k]) << "block " << block << " entry " << k;
  }
  // Fused path and self sum, the same bits for every block.
  for (const bool self : {false, true}) {
    ksum::Table<double> ref;
    for (std::int64_t block : {1, 13, 64, 5000, 0}) {
      ksum::DirectOptions o;
      o.backend = ksum::Backend::cpu;
      o.threads = 2;
      o.cpu_block = block;
      ksum::DirectSum<double> s(o);
      ksum::Table<double> w1(n, 1);
      for (std::int64_t k = 0; k < n; ++k)
        w1.data()[k] = w.data()[k];
      if (self)
        s.set_points(y);
      else
        s.set_points(y, x);
      const ksum::Table<double> r = s.execute(w1);
      EXPECT_LE(s.stats().cpu_block, self ? n : m) << block;
      if (ref.rows() == 0) {
        ref = r;
        continue;
      }
      for (std::int64_t k = 0; k < r.rows(); ++k)
        ASSERT_EQ(r.data()[k], ref.data()[k])
            << "self " << self << " block " << block << " row " << k;
    }
  }
  ksum::DirectOptions bad;
  bad.cpu_block = -1;
  EXPECT_THROW(ksum::DirectSum<double>{bad}, ksum::Error);
}
