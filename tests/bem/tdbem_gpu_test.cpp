// The TD-BEM solver with GPU workers (seed 003 §5.2): GPU only and CPU + GPU balanced give the
// CPU scalar marching's density, every kernel and precision; the balancer moves slices between
// the workers. Skipped without a GPU.
#include <ksum/device.hpp>
#include <ksum/tdbem.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace ksum {
namespace {

template <class T>
std::vector<double> run(Backend backend, TdbemKernel kernel, int ng, TdbemStats *stats = nullptr) {
  TdbemOptions o;
  o.backend = backend;
  o.kernel = kernel;
  o.ng = ng;
  o.dt = 0.15;
  o.devices = {0};
  o.block_rows = kernel == TdbemKernel::full ? 32 : 64;
  TdbemSolver<T> solver(sphere_surface(1.0, 2), o);
  solver.set_incident(plane_wave_pulse({0, 1, 1}, 1.0, 2.0, 0.5));
  solver.run(30);
  if (stats)
    *stats = solver.stats();
  const auto a = solver.density();
  return {a.begin(), a.end()};
}

TEST(TdbemGpu, GpuAndHybridWorkersMatchTheCpuScalarMarching) {
  if (gpus().empty())
    GTEST_SKIP() << "no GPU";
  const auto ref = run<double>(Backend::cpu, TdbemKernel::scalar, 1);
  double scale = 0;
  for (double v : ref)
    scale = std::max(scale, std::abs(v));
  ASSERT_GT(scale, 0.1);
  for (auto backend : {Backend::cuda, Backend::automatic})
    for (auto kernel : {TdbemKernel::contiguous, TdbemKernel::full})
      for (int ng : {1, 4, 8}) {
        TdbemStats st;
        const auto d = run<double>(backend, kernel, ng, &st);
        const auto f = run<float>(backend, kernel, ng);
        ASSERT_EQ(st.workers.size(), backend == Backend::cuda ? 1u : 2u);
        for (std::size_t i = 0; i < ref.size(); ++i) {
          ASSERT_NEAR(d[i], ref[i], 1e-11 * scale) << "ng " << ng << " at " << i;
          ASSERT_NEAR(f[i], ref[i], 2e-4 * scale) << "float, ng " << ng << " at " << i;
        }
      }
}

TEST(TdbemGpu, BalancerMovesSlicesTowardsTheFasterWorker) {
  if (gpus().empty())
    GTEST_SKIP() << "no GPU";
  TdbemStats st;
  run<float>(Backend::automatic, TdbemKernel::contiguous, 1, &st);
  ASSERT_EQ(st.balance_slices.size(), 30u);
  // First call: equal halves of the 320 slices; afterwards the intervals moved.
  EXPECT_EQ(st.balance_slices.front()[0], 160);
  EXPECT_NE(st.balance_slices.back()[0], 160);
  EXPECT_EQ(st.balance_slices.back()[0] + st.balance_slices.back()[1], 320);
}

} // namespace
} // namespace ksum
