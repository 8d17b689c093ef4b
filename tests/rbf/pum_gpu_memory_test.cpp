// RBF-PUM when the GPU has no memory left (CTest label `gpu`, run alone): the automatic backend
// falls back to the CPU for the fits and the evaluation, the explicit GPU backend reports the
// failure.
#include "support/expect_error.hpp"
#include "support/gpu.hpp"

#include <ksum/datasets.hpp>
#include <ksum/device.hpp>
#include <ksum/error.hpp>
#include <ksum/pum.hpp>

#include <cmath>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

namespace ksum {
namespace {

Table<double> values(const Table<double> &x) {
  Table<double> f(x.rows(), 1);
  for (std::int64_t i = 0; i < x.rows(); ++i)
    f(i, 0) = std::sin(3 * x(i, 0)) + std::sin(3 * x(i, 1) + 1);
  return f;
}

// With the GPU's memory taken (all but 64 MiB), the automatic backend falls back to the CPU for the
// fits and the evaluation; the explicit GPU backend reports the failure.
TEST(PumGpu, OutOfGpuMemoryFallsBackWithTheAutomaticBackend) {
  KSUM_REQUIRE_GPU();
  const auto x = datasets::halton(2000000, 2);
  const auto f = values(x);
  std::size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  void *hog = nullptr;
  ASSERT_EQ(cudaMalloc(&hog, free_bytes - (std::size_t{64} << 20)), cudaSuccess);
  PumInterpolant automatic({.eps = 10.0});
  automatic.set_data(x, f);
  EXPECT_EQ(automatic.stats().fit_backend, Backend::cpu);
  Table<double> y(3, 2, 0.5);
  y(1, 0) = 0.25, y(2, 1) = 0.75;
  const auto u = automatic.evaluate(y); // the GPU upload fails too: CPU evaluation
  for (std::int64_t i = 0; i < 3; ++i) {
    Table<double> yi(1, 2);
    yi(0, 0) = y(i, 0), yi(0, 1) = y(i, 1);
    EXPECT_NEAR(u(i, 0), values(yi)(0, 0), 1e-8) << i;
  }
  PumInterpolant gpu({.eps = 10.0, .backend = Backend::cuda});
  test::expect_error([&] { gpu.set_data(x, f); }, ErrorCode::device, "out of memory");
  cudaFree(hog);
}

} // namespace
} // namespace ksum
