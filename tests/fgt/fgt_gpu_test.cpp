// The FGT on the GPU against the fp64 reference and against the CPU plan: the same boxes and
// routes, so the two differ by rounding only; and seed 002's Hermite table kernel against the CPU.
#include "fgt/fgt_gpu.hpp"
#include "fgt/fgt_reference.hpp"
#include "support/gpu.hpp"

#include <ksum/fgt.hpp>

#include <gtest/gtest.h>

namespace {

using ksum::GaussMethod;
using ksum::GaussOptions;
using ksum::GaussTransform;
using ksum::Table;

template <class T> void gpu_case(int d, double h, double tol, bool self, std::uint64_t seed) {
  const auto src = ksum::test::rounded<T>(ksum::test::random_points(3000, d, seed));
  const auto tgt =
      self ? src : ksum::test::rounded<T>(ksum::test::random_points(2000, d, seed + 1, -0.2, 1.2));
  const auto q = ksum::test::rounded<T>(ksum::test::random_points(3000, 2, seed + 2, -1, 1));
  GaussOptions o;
  o.bandwidth = h;
  o.tolerance = tol;
  o.method = GaussMethod::fgt;
  Table<T> got, cpu;
  ksum::GaussStats stats;
  for (auto backend : {ksum::Backend::cuda, ksum::Backend::cpu}) {
    o.backend = backend;
    GaussTransform<T> plan(o);
    if (self)
      plan.set_points(src.template cast<T>());
    else
      plan.set_points(src.template cast<T>(), tgt.template cast<T>());
    (backend == ksum::Backend::cuda ? got : cpu) = plan.execute(q.template cast<T>());
    if (backend == ksum::Backend::cuda)
      stats = plan.stats();
  }
  const double rounding = sizeof(T) == 4 ? 3e-6 : 1e-12;
  const std::string what =
      "d " + std::to_string(d) + " h " + std::to_string(h) + " routes " +
      std::to_string(stats.pairs_direct) + "/" + std::to_string(stats.pairs_hermite) + "/" +
      std::to_string(stats.pairs_taylor) + "/" + std::to_string(stats.pairs_translate);
  EXPECT_EQ(stats.backend, ksum::Backend::cuda) << what;
  EXPECT_LE(ksum::test::gauss_error(src, tgt, q, h, got), tol + rounding) << what;
  // CPU vs GPU: the GPU's plan keeps p ≤ 16 and p^d ≤ 4096, so its grid may differ from the
  // CPU's; both meet the tolerance, so they agree to twice it plus rounding.
  double l1 = 0, worst = 0;
  for (std::int64_t j = 0; j < q.rows(); ++j)
    l1 += std::abs(q(j, 0));
  for (std::int64_t i = 0; i < got.rows(); ++i)
    worst = std::max(worst, std::abs(double(got(i, 0)) - double(cpu(i, 0))) / l1);
  EXPECT_LE(worst, 2 * (tol + rounding)) << what;
}

TEST(FgtGpu, MatchesTheReferenceAndTheCpuInFloatAndDouble) {
  KSUM_REQUIRE_GPU();
  for (int d = 1; d <= 3; ++d)
    for (double h : {0.02, 0.1, 0.5, 3.0}) {
      gpu_case<float>(d, h, 1e-5, d != 2, 10 + d);
      gpu_case<double>(d, h, 1e-9, d == 2, 20 + d);
    }
  gpu_case<double>(4, 0.6, 1e-6, false, 30);
}

// Far from the origin float keeps its digits: the GPU stores points relative to their box.
TEST(FgtGpu, FloatKeepsItsAccuracyFarFromTheOrigin) {
  KSUM_REQUIRE_GPU();
  for (double offset : {100.0, 10000.0}) {
    auto src = ksum::test::random_points(20000, 2, 91, offset, offset + 0.05);
    src = ksum::test::rounded<float>(src);
    const auto q = ksum::test::rounded<float>(ksum::test::random_points(20000, 1, 92, -1, 1));
    GaussOptions o;
    o.bandwidth = 0.01;
    o.tolerance = 1e-5;
    o.method = GaussMethod::fgt;
    o.backend = ksum::Backend::cuda;
    GaussTransform<float> plan(o);
    plan.set_points(src.cast<float>());
    const auto got = plan.execute(q.cast<float>());
    EXPECT_EQ(plan.stats().backend, ksum::Backend::cuda);
    EXPECT_LE(ksum::test::gauss_error(src, src, q, 0.01, got), 1e-5 + 3e-6) << "offset " << offset;
  }
}

TEST(FgtGpu, PlansBeyondTheKernelsRunOnTheCpu) {
  KSUM_REQUIRE_GPU();
  const auto src = ksum::test::random_points(500, 5, 3);
  const auto q = ksum::test::random_points(500, 1, 4, -1, 1);
  GaussOptions o;
  o.bandwidth = 2.0;
  o.tolerance = 1e-6;
  o.method = GaussMethod::fgt;
  o.backend = ksum::Backend::cuda;
  GaussTransform<double> plan(o);
  plan.set_points(src);
  const auto got = plan.execute(q);
  EXPECT_EQ(plan.stats().backend, ksum::Backend::cpu);
  EXPECT_LE(ksum::test::gauss_error(src, src, q, 2.0, got), 1e-6);
}

TEST(FgtGpu, HermiteTableKernelMatchesTheCpu) {
  KSUM_REQUIRE_GPU();
  for (int p : {5, 9, 12}) {
    const auto f = ksum::fgt::hermite_bench_gpu(2, p, 5000, 37, 1, true);
    EXPECT_LE(f.max_error, 1e-6) << "p " << p;
    const auto g = ksum::fgt::hermite_bench_gpu(2, p, 5000, 37, 1, false);
    EXPECT_LE(g.max_error, 1e-13) << "p " << p;
    EXPECT_GT(g.seconds, 0);
  }
}

} // namespace
