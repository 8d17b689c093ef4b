// The dynamic balancing of seed 003 §5.2 on synthetic workers: the worst time falls towards the
// best contiguous partition (equal or uneven work per slice, as the seed's table 1), and the
// balancer rolls back to the best assignment it measured.
#include "runtime/slice_balancer.hpp"
#include "support/expect_error.hpp"

#include <ksum/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace ksum::runtime {
namespace {

// Worker w's time: Σ of the costs of its slices divided by its speed.
std::vector<double> times(const std::vector<std::int64_t> &bounds, const std::vector<double> &cost,
                          const std::vector<double> &speed) {
  std::vector<double> t(speed.size(), 0.0);
  for (std::size_t w = 0; w < speed.size(); ++w) {
    for (std::int64_t j = bounds[w]; j < bounds[w + 1]; ++j)
      t[w] += cost[static_cast<std::size_t>(j)];
    t[w] /= speed[w];
  }
  return t;
}

// The best contiguous partition's time (binary search on the answer, greedy check).
double optimal(const std::vector<double> &cost, const std::vector<double> &speed) {
  double lo = 0, hi = std::accumulate(cost.begin(), cost.end(), 0.0) /
                      *std::min_element(speed.begin(), speed.end());
  for (int it = 0; it < 200; ++it) {
    const double mid = 0.5 * (lo + hi);
    std::size_t j = 0;
    for (double v : speed) {
      double acc = 0;
      while (j < cost.size() && (acc + cost[j]) / v <= mid)
        acc += cost[j++];
    }
    (j == cost.size() ? hi : lo) = mid;
  }
  return hi;
}

TEST(SliceBalancer, EqualWorkConvergesToTheOptimum) {
  // The heuristic aims every worker at the last average time, so with workers of different
  // speeds the worst time falls every iteration towards the optimum (total work / Σ speeds).
  const std::vector<double> speed{1.0, 4.0, 2.0, 9.0, 0.5, 3.0};
  const std::vector<double> cost(10000, 1e-4);
  SliceBalancer b(10000, 6, 40);
  double previous = 1e300;
  for (int it = 0; it < 5; ++it) {
    const auto t = times(b.bounds(), cost, speed);
    const double worst = *std::max_element(t.begin(), t.end());
    EXPECT_LT(worst, previous) << "iteration " << it;
    previous = worst;
    b.report(t);
  }
  while (!b.frozen())
    b.report(times(b.bounds(), cost, speed));
  const auto t = times(b.bounds(), cost, speed);
  EXPECT_LE(*std::max_element(t.begin(), t.end()), optimal(cost, speed) + 2 * 1e-4 / 0.5);
  EXPECT_EQ(std::accumulate(b.counts().begin(), b.counts().end(), std::int64_t{0}), 10000);
}

TEST(SliceBalancer, UnevenWorkConvergesNearTheOptimumAndRollsBack) {
  // The seed's table 1 cases: work rising, falling, random; workers of speeds 1 … 6.
  std::mt19937_64 g(4);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  for (int shape = 0; shape < 3; ++shape) {
    std::vector<double> cost(10000);
    for (std::size_t j = 0; j < cost.size(); ++j)
      cost[j] = shape == 0 ? 1.0 + j * 1e-3 : shape == 1 ? 11.0 - j * 1e-3 : u(g);
    const std::vector<double> speed{1, 2, 3, 4, 5, 6};
    SliceBalancer b(10000, 6, 40);
    while (!b.frozen())
      b.report(times(b.bounds(), cost, speed));
    const auto t = times(b.bounds(), cost, speed);
    const double worst = *std::max_element(t.begin(), t.end());
    EXPECT_DOUBLE_EQ(worst, b.best_time()) << "shape " << shape; // the rollback
    EXPECT_LE(worst, 1.02 * optimal(cost, speed)) << "shape " << shape;
    EXPECT_EQ(b.reports(), 40);
  }
}

TEST(SliceBalancer, IdleAndZeroTimeWorkersAndBadInput) {
  // A worker given no slice still receives some when others are slow.
  const auto c =
      SliceBalancer::rebalance(std::vector<std::int64_t>{0, 10}, std::vector<double>{0.0, 5.0});
  EXPECT_GT(c[0], 0);
  EXPECT_EQ(c[0] + c[1], 10);
  const auto same =
      SliceBalancer::rebalance(std::vector<std::int64_t>{3, 4}, std::vector<double>{0.0, 0.0});
  EXPECT_EQ(same, (std::vector<std::int64_t>{3, 4}));
  test::expect_error([] { SliceBalancer(10, 0); }, ErrorCode::invalid_argument, "workers = 0");
  SliceBalancer b(10, 2);
  test::expect_error([&] { b.report(std::vector<double>{1.0}); }, ErrorCode::shape_mismatch,
                     "1 times for 2 workers");
  test::expect_error(
      [&] {
        b.report(std::vector<double>{1.0, NAN});
      },
      ErrorCode::invalid_argument, "worker 1");
}

} // namespace
} // namespace ksum::runtime
