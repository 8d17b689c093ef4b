// GPU direct sum (CTest label `gpu`): every kernel in both precisions against the fp64 reference,
// the general kernel (d up to 8, several right-hand sides, gradient), the chunked path under a tiny
// memory limit, and agreement with the CPU. Skips cleanly where no GPU is visible.
#include "direct/direct_cases.hpp"
#include "support/gpu.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>

namespace ksum::test {
namespace {

class GpuKernels : public ::testing::TestWithParam<Kernel> {};

TEST_P(GpuKernels, SelfSum3DBothPrecisions) {
  KSUM_REQUIRE_GPU();
  expect_self_sum_3d(GetParam(), Backend::cuda);
}

TEST_P(GpuKernels, TargetsGradientAndSeveralRhs2D) {
  KSUM_REQUIRE_GPU();
  expect_targets_gradient_rhs_2d(GetParam(), Backend::cuda);
}

TEST_P(GpuKernels, GradientSingleRhs3DWithDuplicates) {
  KSUM_REQUIRE_GPU();
  SumCase c{.kernel = GetParam(),
            .eps = default_eps(GetParam()),
            .n = 400,
            .gradient = true,
            .duplicates = true};
  EXPECT_LE(run_case<double>(c, Backend::cuda), tolerance<double>());
  EXPECT_LE(run_case<float>(c, Backend::cuda), tolerance<float>());
}

TEST_P(GpuKernels, ChunkedUnderTinyMemoryLimit) {
  KSUM_REQUIRE_GPU();
  // 24 KiB per device forces a few hundred points per chunk: many target and source chunks, the
  // self term crossing chunk boundaries.
  SumCase self{
      .kernel = GetParam(), .eps = default_eps(GetParam()), .n = 2000, .device_memory = 24 << 10};
  EXPECT_LE(run_case<double>(self, Backend::cuda), tolerance<double>());
  SumCase sep{.kernel = GetParam(),
              .eps = default_eps(GetParam()),
              .n = 1500,
              .m = 900,
              .d = 4,
              .nrhs = 6,
              .gradient = true,
              .device_memory = 16 << 10};
  EXPECT_LE(run_case<double>(sep, Backend::cuda), tolerance<double>());
}

INSTANTIATE_TEST_SUITE_P(AllKernels, GpuKernels, ::testing::ValuesIn(every_kernel()),
                         [](const auto &info) { return kernel_test_name(info.param); });

class GpuDims : public ::testing::TestWithParam<int> {};

TEST_P(GpuDims, AnyDimensionWithGradient) {
  KSUM_REQUIRE_GPU();
  expect_dimension(GetParam(), 5, Backend::cuda);
}

INSTANTIATE_TEST_SUITE_P(OneToEight, GpuDims, ::testing::Range(1, 9));

TEST(GpuDirect, AgreesWithCpuInDouble) {
  KSUM_REQUIRE_GPU();
  const auto p = random_points(5000, 3, 11);
  const auto w = random_points(5000, 1, 12, -1, 1);
  for (Kernel k : {Kernel::laplace, Kernel::gaussian, Kernel::multiquadric, Kernel::tps}) {
    DirectSum<double> cpu({.kernel = k, .eps = default_eps(k), .backend = Backend::cpu});
    DirectSum<double> gpu({.kernel = k, .eps = default_eps(k), .backend = Backend::cuda});
    cpu.set_points(p);
    gpu.set_points(p);
    const auto a = cpu.execute(w), b = gpu.execute(w);
    double num = 0, den = 0;
    for (std::int64_t i = 0; i < 5000; ++i) {
      num += (a(i, 0) - b(i, 0)) * (a(i, 0) - b(i, 0));
      den += a(i, 0) * a(i, 0);
    }
    EXPECT_LE(std::sqrt(num / den), 1e-12) << kernel_info(k).name;
  }
}

TEST(GpuDirect, AutoPicksTheGpuAndLargeDimensionFallsBackToCpu) {
  KSUM_REQUIRE_GPU();
  DirectSum<double> plan({});
  plan.set_points(random_points(10, 3, 1));
  EXPECT_EQ(plan.backend(), Backend::cuda);
  plan.set_points(random_points(10, 9, 1));
  EXPECT_EQ(plan.backend(), Backend::cpu);
  DirectSum<double> forced({.backend = Backend::cuda});
  try {
    forced.set_points(random_points(10, 9, 1));
    ADD_FAILURE() << "no error for d = 9 on the GPU";
  } catch (const Error &e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
  }
}

// Targets split over several workers, each with its own host thread, stream and buffers. With one
// GPU the three workers share GPU 0 (the same code path); with more, the first two GPUs are used.
TEST(GpuDirect, SplitsTargetsOverSeveralDevices) {
  KSUM_REQUIRE_GPU();
  const std::vector<int> devs =
      gpus().size() >= 2 ? std::vector<int>{0, 1} : std::vector<int>{0, 0, 0};
  for (std::int64_t limit : {std::int64_t(0), std::int64_t(20) << 10}) {
    SumCase self{
        .kernel = Kernel::gaussian, .eps = 2.0, .n = 3001, .device_memory = limit, .devices = devs};
    EXPECT_LE(run_case<double>(self, Backend::cuda), tolerance<double>()) << "limit " << limit;
    SumCase sep{.kernel = Kernel::laplace,
                .n = 1200,
                .m = 2501,
                .d = 3,
                .nrhs = 5,
                .gradient = true,
                .device_memory = limit,
                .devices = devs};
    EXPECT_LE(run_case<double>(sep, Backend::cuda), tolerance<double>()) << "limit " << limit;
    EXPECT_LE(run_case<float>(sep, Backend::cuda), tolerance<float>()) << "limit " << limit;
  }
}

// A plan whose points are resident for one right-hand side must not reuse them after an execute
// with more right-hand sides had to stream chunks through the same device arrays.
TEST(GpuDirect, ResidentGeometrySurvivesAStreamingExecute) {
  KSUM_REQUIRE_GPU();
  const auto p = random_points(2000, 3, 31);
  const auto w1 = random_points(2000, 1, 32, -1, 1), w4 = random_points(2000, 4, 33, -1, 1);
  // 1 rhs needs 2000 * (3 + 1) * 8 * 2 = 128 KB: resident; 4 rhs need 224 KB: streamed.
  DirectSum<double> plan(
      {.kernel = Kernel::multiquadric, .backend = Backend::cuda, .device_memory_limit = 160 << 10});
  plan.set_points(p);
  for (const auto *w : {&w1, &w4, &w1, &w4}) {
    const auto u = plan.execute(*w);
    EXPECT_LE(sum_error(Kernel::multiquadric, 1.0, p, p, *w, false, true, u), tolerance<double>());
  }
}

TEST(GpuDirect, BadDeviceIdIsAnError) {
  KSUM_REQUIRE_GPU();
  DirectSum<double> plan({.backend = Backend::cuda, .devices = {99}});
  try {
    plan.set_points(random_points(10, 3, 1));
    ADD_FAILURE() << "no error for GPU 99";
  } catch (const Error &e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("GPU 99"), std::string::npos);
  }
}

TEST(GpuDirect, LargeSelfSumMatchesReferenceAtSamples) {
  KSUM_REQUIRE_GPU();
  SumCase c{.kernel = Kernel::laplace, .n = 70000};
  EXPECT_LE(run_case<double>(c, Backend::cuda), tolerance<double>());
  EXPECT_LE(run_case<float>(c, Backend::cuda), tolerance<float>());
}

TEST(GpuDirect, CoincidentTargetsOfSingularKernels) {
  KSUM_REQUIRE_GPU();
  expect_coincident_singular(Backend::cuda);
}

} // namespace
} // namespace ksum::test
