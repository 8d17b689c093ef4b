// The GPU's pseudo-particle weights (fmm_gpu.hpp, the FMM's P2M kernel over cells cut into chunks
// of 8,192 points) against the CPU's (cell_multipoles_test checks the CPU against the definition):
// every order 2 … 16, two right-hand sides, cells of 0 … 20,000 points.
#include "fmm/fmm3d/cell_multipoles.hpp"
#include "fmm/fmm3d/fmm_gpu.hpp"
#include "support/gpu.hpp"
#include "support/reference.hpp"

#include <cmath>
#include <gtest/gtest.h>

using namespace ksum;
using ksum::test::random_points;

TEST(CellMultipolesGpu, MatchesTheCpu) {
  KSUM_REQUIRE_GPU();
  const std::int64_t n = 40000;
  const auto x = random_points(n, 3, 95);
  const auto w = random_points(n, 2, 96, -1, 1);
  std::vector<fmm::CellRange> cells;
  const std::int64_t sizes[] = {0, 1, 300, 8192, 8193, 20000};
  for (int p = 2; p <= 16; ++p) {
    const std::int64_t len = sizes[p % 6], b = (997 * p) % (n - len);
    cells.push_back({{0.5, 0.5, 0.4 + 0.01 * p}, 0.5 + 0.01 * p, b, b + len, p});
  }
  std::vector<std::vector<double>> cpu, gpu;
  fmm::cell_multipoles(x.data(), n, cells, w.data(), 2, 0, cpu);
  auto engine = fmm::make_gpu_cell_multipoles(x.data(), n, cells, 0);
  engine->compute(w.data(), 2, gpu);
  engine->compute(w.data(), 2, gpu); // a second call reuses the resident points
  ASSERT_EQ(gpu.size(), cells.size());
  for (std::size_t k = 0; k < cells.size(); ++k) {
    ASSERT_EQ(gpu[k].size(), cpu[k].size()) << "cell " << k;
    double scale = 0, diff = 0;
    for (std::size_t q = 0; q < cpu[k].size(); ++q) {
      scale = std::max(scale, std::abs(cpu[k][q]));
      diff = std::max(diff, std::abs(gpu[k][q] - cpu[k][q]));
    }
    // Sums of ≤ 20,000 products in two summation orders (and (y − c)·(1/h) on the GPU against
    // (y − c)/h): a few hundred ulp of the largest |W|.
    EXPECT_LE(diff, 1e-12 * std::max(scale, 1.0))
        << "order " << cells[k].p << ", " << cells[k].end - cells[k].begin << " points";
  }
}
