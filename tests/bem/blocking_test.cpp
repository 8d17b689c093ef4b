// Seed 003 §4: the Full-Blocking and Contiguous-Blocking cuts and their CPU kernels against the
// fp64 scalar summation (sum_slices_scalar), every ng, precision and slice interval; the block
// counts of small hand-made slices; bad block shapes.
#include "bem/blocking.hpp"
#include "support/bem_random.hpp"
#include "support/expect_error.hpp"

#include <ksum/error.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace ksum::bem {
namespace {

using test::random_triplets;

template <class T> struct Case {
  Slices<T> slices;
  Slices<double> exact;
  History<T> past;
  History<double> past64;
};

template <class T>
Case<T> make_case(std::int64_t n, int kmax, int dmax, double p, int bc_max, int ng_max,
                  unsigned seed) {
  const auto e = random_triplets<T>(n, kmax, dmax, p, seed);
  std::vector<Triplet<double>> e64;
  for (const auto &t : e)
    e64.push_back({t.i, t.j, t.k, static_cast<double>(t.value)});
  auto s = Slices<T>::from_triplets(n, e);
  auto s64 = Slices<double>::from_triplets(n, e64);
  History<T> past(n, s.kmax, ng_max - 1, bc_max);
  History<double> past64(n, s.kmax);
  std::mt19937_64 g(seed + 7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int step = 0; step < s.kmax + 3; ++step) {
    std::vector<T> a(n);
    std::vector<double> a64(n);
    for (std::int64_t j = 0; j < n; ++j)
      a64[j] = static_cast<double>(a[j] = static_cast<T>(u(g)));
    past.push(a);
    past64.push(a64);
  }
  return {std::move(s), std::move(s64), std::move(past), std::move(past64)};
}

template <class T> double tolerance() {
  return std::is_same_v<T, float> ? 2e-5 : 1e-13;
}

template <class T>
void expect_close(const std::vector<T> &got, const std::vector<double> &ref, const char *what) {
  double scale = 1;
  for (double x : ref)
    scale = std::max(scale, std::abs(x));
  for (std::size_t q = 0; q < ref.size(); ++q)
    ASSERT_NEAR(static_cast<double>(got[q]), ref[q], tolerance<T>() * scale * 10)
        << what << " at " << q;
}

template <class T> class Blocking : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Blocking, Precisions);

TYPED_TEST(Blocking, KernelsMatchScalarReference) {
  using T = TypeParam;
  for (std::int64_t n : {1, 37, 130}) {
    auto c = make_case<T>(n, 14, 6, n == 1 ? 1.0 : 0.6, 16, 8, static_cast<unsigned>(n));
    for (int ng : {1, 3, 8})
      for (auto [br, bc] : {std::pair{8, 6}, std::pair{32, 16}, std::pair{5, 9}})
        for (auto [j0, j1] : {std::pair<std::int64_t, std::int64_t>{0, n},
                              std::pair<std::int64_t, std::int64_t>{n / 3, n - n / 4}}) {
          std::vector<double> ref(static_cast<std::size_t>(ng * n), 0.0);
          sum_slices_scalar(c.exact, c.past64, ng, j0, j1, ref.data());
          const auto fb = FullBlocks<T>::build(c.slices, br, bc, 0, n);
          ASSERT_EQ(FullBlocks<T>::count(c.slices, br, bc, 0, n), fb.blocks());
          const auto cb = ContiguousBlocks<T>::build(c.slices, br, bc, 0, n);
          for (int threads : {1, 2}) {
            std::vector<T> got(ref.size(), T(0));
            sum_full_cpu(fb, c.past, ng, j0, j1, got.data(), threads);
            expect_close(got, ref, "full");
            std::fill(got.begin(), got.end(), T(0));
            sum_contiguous_cpu(cb, c.past, ng, j0, j1, got.data(), threads);
            expect_close(got, ref, "contiguous");
          }
          // Blocks of a sub-interval only, as a worker holds them.
          const auto cb_part = ContiguousBlocks<T>::build(c.slices, br, bc, j0, j1);
          const auto fb_part = FullBlocks<T>::build(c.slices, br, bc, j0, j1);
          std::vector<T> got(ref.size(), T(0));
          sum_contiguous_cpu(cb_part, c.past, ng, j0, j1, got.data());
          expect_close(got, ref, "contiguous part");
          std::fill(got.begin(), got.end(), T(0));
          sum_full_cpu(fb_part, c.past, ng, j0, j1, got.data());
          expect_close(got, ref, "full part");
        }
  }
}

TEST(Blocking, FullBlockingGreedyCutOfAHandMadeSlice) {
  // Slice 0 of 6 unknowns: rows 0–2 share columns 1…3, row 3 starts at 7, row 5 at 2.
  std::vector<Triplet<double>> e;
  for (int i = 0; i < 3; ++i)
    for (int k = 1; k <= 3; ++k)
      e.push_back({i, 0, k, 1.0 + i});
  e.push_back({3, 0, 7, 4.0});
  e.push_back({5, 0, 2, 6.0});
  e.push_back({5, 0, 3, 6.0});
  const auto s = Slices<double>::from_triplets(6, e);
  // 4 × 4 blocks: {rows 0–2 and 5? no: row 5 is beyond row0 + 4} → block A (row 0, k 1) holds
  // rows 0–2; row 3 (k 7) opens block B; row 5 opens block C (row 5, k 2).
  const auto fb = FullBlocks<double>::build(s, 4, 4, 0, 1);
  ASSERT_EQ(fb.blocks(), 3);
  EXPECT_EQ(fb.row0[0], 0);
  EXPECT_EQ(fb.col0[0], 1);
  EXPECT_EQ(fb.row0[1], 3);
  EXPECT_EQ(fb.col0[1], 7);
  EXPECT_EQ(fb.row0[2], 5);
  EXPECT_EQ(fb.col0[2], 2);
  // Block A, row 2, column 2 (k = 3) is M^3(2, 0) = 3.
  EXPECT_EQ(fb.values[(0 * 4 + 2) * 4 + 2], 3.0);
  // 6 × 4 blocks take row 5 into block A (rows 0–5, columns 1–4).
  EXPECT_EQ(FullBlocks<double>::build(s, 6, 4, 0, 1).blocks(), 2);
  // Contiguous-Blocking: always ⌈6 / 4⌉ = 2 blocks per slice, b_c = d_max = 3 by default.
  const auto cb = ContiguousBlocks<double>::build(s, 4, 0, 0, 6);
  EXPECT_EQ(cb.bc, 3);
  EXPECT_EQ(cb.blocks(), 12);
  EXPECT_EQ(cb.k0[3], 7);
  EXPECT_EQ(cb.k0[5], 2);
  EXPECT_EQ(cb.k0[4], 1); // empty row
  EXPECT_NEAR(fill_ratio(s, cb.blocks() * 4 * 3), 12.0 / 144.0, 1e-15);
}

TEST(Blocking, BadShapesAndCallsAreRefused) {
  auto c = make_case<double>(20, 10, 5, 0.5, 8, 4, 3);
  const int dmax = c.slices.dmax();
  test::expect_error([&] { (void)FullBlocks<double>::build(c.slices, 4, dmax - 1, 0, 20); },
                     ErrorCode::invalid_argument, "d_max");
  test::expect_error([&] { (void)ContiguousBlocks<double>::build(c.slices, 4, dmax - 1, 0, 20); },
                     ErrorCode::invalid_argument, "d_max");
  test::expect_error([&] { (void)ContiguousBlocks<double>::build(c.slices, 0, 8, 0, 20); },
                     ErrorCode::invalid_argument, "block 0 x 8");
  test::expect_error([&] { (void)ContiguousBlocks<double>::build(c.slices, 4, 8, 5, 21); },
                     ErrorCode::invalid_argument, "outside");
  const auto cb = ContiguousBlocks<double>::build(c.slices, 4, 8, 5, 15);
  std::vector<double> s(4 * 20);
  test::expect_error([&] { sum_contiguous_cpu(cb, c.past, 1, 0, 15, s.data()); },
                     ErrorCode::invalid_argument, "outside the blocks");
  test::expect_error([&] { sum_contiguous_cpu(cb, c.past, 0, 5, 15, s.data()); },
                     ErrorCode::invalid_argument, "ng = 0");
  History<double> short_pad(20, c.slices.kmax, 0, 8);
  test::expect_error([&] { sum_contiguous_cpu(cb, short_pad, 2, 5, 15, s.data()); },
                     ErrorCode::shape_mismatch, "padded");
}

} // namespace
} // namespace ksum::bem
