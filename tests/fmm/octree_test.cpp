// The FMM's octree: the radix sort against std::stable_sort, the tree's invariants, and the
// interaction lists' defining property: for every target leaf, each source point is reached
// exactly once, through the leaf's near list or a far box of the leaf or one of its ancestors,
// and every far pair satisfies the acceptance criterion.
#include "fmm/fmm3d/octree.hpp"
#include "support/expect_error.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <numeric>
#include <random>

namespace {

using ksum::Table;
using ksum::fmm::Octree;

Table<double> cloud(const std::string &kind, std::int64_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> g(0, 1);
  Table<double> p(n, 3);
  for (std::int64_t i = 0; i < n; ++i) {
    double v[3];
    if (kind == "uniform") {
      for (auto &x : v)
        x = u(rng);
    } else if (kind == "plummer") { // r = (u^(-2/3) − 1)^(−1/2): a dense core, long tails
      const double r = 1 / std::sqrt(std::pow(std::max(u(rng), 1e-12), -2.0 / 3.0) - 1);
      double len = 0;
      for (auto &x : v) {
        x = g(rng);
        len += x * x;
      }
      for (auto &x : v)
        x *= r / std::sqrt(len);
    } else if (kind == "shell") {
      double len = 0;
      for (auto &x : v) {
        x = g(rng);
        len += x * x;
      }
      for (auto &x : v)
        x /= std::sqrt(len);
    } else { // identical
      v[0] = 0.25, v[1] = -3, v[2] = 7;
    }
    for (int a = 0; a < 3; ++a)
      p(i, a) = v[a];
  }
  return p;
}

TEST(RadixSort, MatchesAStableSortWithItsPermutation) {
  // 5,000 keys: one thread; 300,000: the threaded path (chunks per thread, stable across them).
  for (const std::size_t n : {std::size_t{5000}, std::size_t{300000}}) {
    std::mt19937_64 rng(3);
    std::vector<std::uint64_t> keys(n);
    for (auto &k : keys) // repeats too, and the top bit set in two thirds of them
      k = (rng() >> (rng() % 64) | (rng() % 3 == 0 ? 0 : 0x8000000000000000ULL)) &
          (n > 5000 ? 0x80000000000fffffULL : ~0ULL);
    keys[17] = keys[4000];
    std::vector<std::int64_t> want(keys.size());
    std::iota(want.begin(), want.end(), 0);
    std::stable_sort(want.begin(), want.end(), [&](std::int64_t a, std::int64_t b) {
      return keys[static_cast<std::size_t>(a)] < keys[static_cast<std::size_t>(b)];
    });
    auto sorted = keys;
    std::vector<std::int64_t> order;
    ksum::fmm::radix_sort(sorted, order);
    EXPECT_EQ(order, want) << n << " keys";
    for (std::size_t k = 0; k < keys.size(); ++k)
      ASSERT_EQ(sorted[k], keys[static_cast<std::size_t>(order[k])]) << n << " keys";
  }
}

void check_tree(const Octree &t, const Table<double> &input, std::int64_t leaf_size, double theta) {
  const std::int64_t n = input.rows();
  ASSERT_EQ(t.points.rows(), n);
  std::vector<std::int64_t> seen(t.order.begin(), t.order.end());
  std::sort(seen.begin(), seen.end());
  for (std::int64_t k = 0; k < n; ++k) {
    ASSERT_EQ(seen[static_cast<std::size_t>(k)], k);
    for (int a = 0; a < 3; ++a)
      ASSERT_EQ(t.points(k, a), input(t.order[static_cast<std::size_t>(k)], a));
  }
  // Children partition their parent; points lie within the radius; leaves partition [0, n).
  for (std::size_t b = 0; b < t.boxes.size(); ++b) {
    const auto &box = t.boxes[b];
    if (!box.leaf()) {
      std::int64_t at = box.begin;
      for (std::int32_t c = box.first_child; c < box.first_child + box.children; ++c) {
        const auto &ch = t.boxes[static_cast<std::size_t>(c)];
        ASSERT_EQ(ch.begin, at);
        ASSERT_GT(ch.size(), 0);
        ASSERT_EQ(ch.parent, static_cast<std::int32_t>(b));
        ASSERT_EQ(ch.level, box.level + 1);
        at = ch.end;
      }
      ASSERT_EQ(at, box.end);
    } else if (box.size() > 0) {
      EXPECT_TRUE(box.size() <= leaf_size || box.level == 21) << b;
    }
    for (std::int64_t k = box.begin; k < box.end; ++k) {
      double d2 = 0;
      for (int a = 0; a < 3; ++a)
        d2 += (t.points(k, a) - box.centre[a]) * (t.points(k, a) - box.centre[a]);
      ASSERT_LE(std::sqrt(d2), box.radius * (1 + 1e-12) + 1e-300) << b;
    }
  }
  std::int64_t at = 0;
  for (const auto l : t.leaves) {
    ASSERT_EQ(t.boxes[static_cast<std::size_t>(l)].begin, at);
    at = t.boxes[static_cast<std::size_t>(l)].end;
  }
  ASSERT_EQ(at, n);
  // Each source point exactly once per target leaf.
  for (const auto l : t.leaves) {
    std::vector<int> hits(static_cast<std::size_t>(n), 0);
    for (auto k = t.near_offsets[static_cast<std::size_t>(l)];
         k < t.near_offsets[static_cast<std::size_t>(l) + 1]; ++k) {
      const auto &s = t.boxes[static_cast<std::size_t>(t.near[static_cast<std::size_t>(k)])];
      ASSERT_TRUE(s.leaf());
      for (auto j = s.begin; j < s.end; ++j)
        ++hits[static_cast<std::size_t>(j)];
    }
    for (std::int32_t a = l; a >= 0; a = t.boxes[static_cast<std::size_t>(a)].parent) {
      const auto &A = t.boxes[static_cast<std::size_t>(a)];
      for (auto k = t.far_offsets[static_cast<std::size_t>(a)];
           k < t.far_offsets[static_cast<std::size_t>(a) + 1]; ++k) {
        const auto &B = t.boxes[static_cast<std::size_t>(t.far[static_cast<std::size_t>(k)])];
        double d2 = 0;
        for (int c = 0; c < 3; ++c)
          d2 += (A.centre[c] - B.centre[c]) * (A.centre[c] - B.centre[c]);
        ASSERT_GE(std::sqrt(d2) * theta, A.radius + B.radius);
        for (auto j = B.begin; j < B.end; ++j)
          ++hits[static_cast<std::size_t>(j)];
      }
    }
    for (std::int64_t j = 0; j < n; ++j)
      ASSERT_EQ(hits[static_cast<std::size_t>(j)], 1) << "leaf " << l << " source " << j;
  }
}

class OctreeShapes : public ::testing::TestWithParam<std::string> {};

TEST_P(OctreeShapes, ListsReachEverySourceOnceForEveryTargetLeaf) {
  for (const std::int64_t n : {1, 2, 100, 3000}) {
    const auto p = cloud(GetParam(), n, 11);
    for (const auto &[leaf, theta] : {std::pair<std::int64_t, double>{16, 0.5}, {64, 0.7}}) {
      const auto t = ksum::fmm::build_octree(p, {.leaf_size = leaf, .theta = theta});
      SCOPED_TRACE(::testing::Message() << GetParam() << " n " << n << " leaf " << leaf);
      check_tree(t, p, leaf, theta);
      if (GetParam() == "identical" && n > leaf) {
        EXPECT_EQ(t.depth, 21);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Distributions, OctreeShapes,
                         ::testing::Values("uniform", "plummer", "shell", "identical"));

TEST(Octree, EmptyInputAndBadOptions) {
  const auto t = ksum::fmm::build_octree(Table<double>(0, 3));
  EXPECT_EQ(t.boxes.size(), 1u);
  EXPECT_TRUE(t.leaves.empty());
  using ksum::ErrorCode;
  ksum::test::expect_error([] { (void)ksum::fmm::build_octree(Table<double>(4, 2)); },
                           ErrorCode::shape_mismatch, "3");
  ksum::test::expect_error([] { (void)ksum::fmm::build_octree(Table<double>(4, 3), {.theta = 1}); },
                           ErrorCode::invalid_argument, "theta");
  Table<double> bad(3, 3);
  bad(1, 2) = std::nan("");
  ksum::test::expect_error([&] { (void)ksum::fmm::build_octree(bad); }, ErrorCode::non_finite,
                           "point 1");
}

} // namespace
