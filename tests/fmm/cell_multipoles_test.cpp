// The distributed FMM's pseudo-particle weights (fmm/fmm3d/cell_multipoles.hpp): the CPU's dgemm
// formulation against the plain fp64 triple loop of the definition, and (label gpu, in
// cell_multipoles_gpu_test) the GPU's P2M kernel against the CPU.
#include "fmm/fmm3d/cell_multipoles.hpp"
#include "fmm/fmm3d/chebyshev.hpp"
#include "support/expect_error.hpp"
#include "support/reference.hpp"

#include <ksum/error.hpp>

#include <cmath>
#include <gtest/gtest.h>

using namespace ksum;
using ksum::test::expect_error;
using ksum::test::random_points;

namespace {

// Cells over points [0, 1)³ of every order 2 … 16, sizes 0, 1, 127, 128, 129 and 300 (the chunk
// is 128), some inside others, some with points outside [−1, 1] (harmless for the formula).
std::vector<fmm::CellRange> test_cells(std::int64_t n) {
  std::vector<fmm::CellRange> cells;
  const std::int64_t sizes[] = {0, 1, 127, 128, 129, 300};
  for (int p = 2; p <= fmm::max_chebyshev_order; ++p) {
    const std::int64_t len = sizes[p % 6], b = (37 * p) % (n - len);
    cells.push_back({{0.5, 0.4 + 0.01 * p, 0.6}, 0.5 + 0.02 * p, b, b + len, p});
  }
  return cells;
}

// W[r p³ + m0 p² + m1 p + m2] = Σ_j S(m0, t_j0) S(m1, t_j1) S(m2, t_j2) w(j, r): the definition.
std::vector<double> reference(const Table<double> &x, const Table<double> &w,
                              const fmm::CellRange &c) {
  const fmm::Chebyshev ch(c.p);
  const int p = c.p;
  const std::int64_t p3 = std::int64_t{p} * p * p;
  std::vector<double> out(static_cast<std::size_t>(p3 * w.cols()), 0.0);
  double s[3][fmm::max_chebyshev_order];
  for (std::int64_t j = c.begin; j < c.end; ++j) {
    for (int a = 0; a < 3; ++a)
      ch.eval((x(j, a) - c.centre[a]) / c.half, s[a]);
    for (std::int64_t r = 0; r < w.cols(); ++r)
      for (int m0 = 0; m0 < p; ++m0)
        for (int m1 = 0; m1 < p; ++m1)
          for (int m2 = 0; m2 < p; ++m2)
            out[static_cast<std::size_t>(r * p3 + (m0 * p + m1) * p + m2)] +=
                s[0][m0] * s[1][m1] * s[2][m2] * w(j, r);
  }
  return out;
}

} // namespace

TEST(CellMultipoles, CpuMatchesTheDefinition) {
  const std::int64_t n = 1000;
  const auto x = random_points(n, 3, 91);
  const auto w = random_points(n, 2, 92, -1, 1);
  const auto cells = test_cells(n);
  for (int threads : {1, 3}) {
    std::vector<std::vector<double>> got;
    fmm::cell_multipoles(x.data(), n, cells, w.data(), 2, threads, got);
    ASSERT_EQ(got.size(), cells.size());
    for (std::size_t k = 0; k < cells.size(); ++k) {
      const auto want = reference(x, w, cells[k]);
      ASSERT_EQ(got[k].size(), want.size()) << "cell " << k;
      double scale = 0, diff = 0;
      for (std::size_t q = 0; q < want.size(); ++q) {
        scale = std::max(scale, std::abs(want[q]));
        diff = std::max(diff, std::abs(got[k][q] - want[q]));
      }
      // A sum of ≤ 300 products: rounding of a few ulp of the largest |W|.
      EXPECT_LE(diff, 1e-13 * std::max(scale, 1.0))
          << "order " << cells[k].p << ", " << cells[k].end - cells[k].begin << " points";
    }
  }
}

TEST(CellMultipoles, RefusesCellsOutsideThePoints) {
  const auto x = random_points(10, 3, 93);
  const Table<double> w(10, 1, 1.0);
  std::vector<std::vector<double>> out;
  expect_error(
      [&] {
        fmm::cell_multipoles(x.data(), 10, {{{0, 0, 0}, 1, 5, 11, 4}}, w.data(), 1, 1, out);
      },
      ErrorCode::invalid_argument, "points [5, 11) of 10");
  expect_error(
      [&] {
        fmm::cell_multipoles(x.data(), 10, {{{0, 0, 0}, 1, 0, 5, 17}}, w.data(), 1, 1, out);
      },
      ErrorCode::invalid_argument, "order 17");
}
