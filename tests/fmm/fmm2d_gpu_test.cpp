// The 2D FMM with its near field (and optionally its M2L) on the GPU, against the long-double
// direct sum and the CPU FMM; the seed 002 M2L kernel against the CPU's m2l().
#include "fmm/fmm2d/fmm2d_gpu.hpp"
#include "fmm/fmm2d_reference.hpp"
#include "support/gpu.hpp"

#include <ksum/error.hpp>
#include <ksum/fmm2d.hpp>

#include <gtest/gtest.h>

#include <complex>
#include <vector>

namespace ksum {
namespace {

using cd = std::complex<double>;

std::vector<std::int64_t> sample(std::int64_t n) {
  std::vector<std::int64_t> at;
  for (int i = 0; i < 200 && i < n; ++i)
    at.push_back((static_cast<std::int64_t>(i) * 7919) % n);
  return at;
}

TEST(Fmm2dGpu, NearFieldAndM2lOnTheGpuMeetTheTolerance) {
  KSUM_REQUIRE_GPU();
  for (const char *kind : {"uniform", "line", "cluster"})
    for (bool harmonic : {true, false})
      for (bool m2l : {false, true})
        for (double tol : {1e-3, 1e-6, 1e-9}) {
          const std::int64_t n = 30000;
          const auto z = test::fmm2d_points(kind, n, 71);
          const auto q = test::fmm2d_strengths(n, 72, harmonic);
          Fmm2dOptions o;
          o.kernel = harmonic ? Fmm2dKernel::harmonic : Fmm2dKernel::log;
          o.tolerance = tol;
          o.backend = Backend::cuda;
          o.gpu_m2l = m2l;
          o.theta = 0.45; // p ≤ 32 at 1e-9 for the GPU M2L
          Fmm2d<double> f(o);
          f.set_points(z);
          const auto u = f.execute(q);
          const auto at = sample(n);
          EXPECT_LE(test::fmm2d_error(u, test::fmm2d_reference(harmonic, z, q, {}, at), at), tol)
              << kind << " harmonic " << harmonic << " m2l " << m2l << " tol " << tol;
          EXPECT_GT(f.stats().seconds_gpu_near, 0);
        }
}

TEST(Fmm2dGpu, AgreesWithTheCpuFmmAndKeepsOnePlanAcrossSteps) {
  KSUM_REQUIRE_GPU();
  const std::int64_t n = 50000;
  auto z = test::fmm2d_points("uniform", n, 81);
  const auto q = test::fmm2d_strengths(n, 82);
  Fmm2dOptions o;
  o.tolerance = 1e-10;
  o.smoothing = Fmm2dSmoothing::gaussian;
  o.core_radius = 1e-4;
  Fmm2d<double> cpu(o);
  o.backend = Backend::cuda;
  Fmm2d<double> gpu(o);
  for (int step = 0; step < 3; ++step) {
    for (auto &v : z)
      v += cd(1e-3 * std::sin(7.0 * v.imag()), 1e-3 * std::cos(5.0 * v.real()));
    cpu.set_points(z);
    gpu.set_points(z);
    gpu.set_parameters(0.45 + 0.05 * step, 6 + step);
    cpu.set_parameters(0.45 + 0.05 * step, 6 + step);
    const auto a = cpu.execute(q), b = gpu.execute(q);
    double num = 0, den = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      num = std::max(num, std::abs(a[i] - b[i]));
      den = std::max(den, std::abs(a[i]));
    }
    EXPECT_LE(num / den, 1e-12) << "step " << step; // same expansions, near field reordered
  }
}

TEST(Fmm2dGpu, SeparateTargetsAndFloat) {
  KSUM_REQUIRE_GPU();
  const std::int64_t n = 20000, m = 7000;
  const auto [zf, tf, qf, z, t, q] = test::fmm2d_float_case(n, m);
  Fmm2dOptions o;
  o.tolerance = 1e-5;
  o.backend = Backend::cuda;
  o.gpu_m2l = true;
  std::vector<std::complex<float>> u;
  try {
    Fmm2d<float> f(o);
    f.set_points(zf, tf);
    u = f.execute(qf);
  } catch (const Error &e) {
    FAIL() << e.what();
  }
  std::vector<cd> ud(u.begin(), u.end());
  auto at = sample(m);
  at.push_back(3);
  EXPECT_LE(test::fmm2d_error(ud, test::fmm2d_reference(true, z, q, t, at), at), 1e-5);
}

TEST(Fmm2dGpu, RowTraversalM2lMatchesTheCpuTranslation) {
  KSUM_REQUIRE_GPU();
  for (int p : {8, 12, 16, 20, 32}) {
    const auto d = fmm2d::m2l_gpu_benchmark<double>(p, 9072, 27, 1, 0);
    EXPECT_LE(d.max_rel_diff, 1e-13) << "p " << p;
    const auto f = fmm2d::m2l_gpu_benchmark<float>(p, 9072, 27, 1, 0);
    EXPECT_LE(f.max_rel_diff, 2e-5) << "p " << p;
  }
  EXPECT_THROW(fmm2d::m2l_gpu_benchmark<double>(33, 100, 27, 1, 0), Error);
}

} // namespace
} // namespace ksum
