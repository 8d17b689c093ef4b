// Seed 003 §4 on the GPU: the Full-Blocking and Contiguous-Blocking kernels of GpuSlices against
// the fp64 scalar summation (sum_slices_scalar) on random slices, for float and double, n_g ∈
// {1, 3, 8}, sub-intervals of the blocks, a history filled by push() or set_history(); and the
// error contract. Tolerance per entry: |gpu − ref| ≤ tol · Σ|terms| with tol = 1e-12 (double) and
// 1e-5 (float): the kernels sum the same terms in another order, so they differ by rounding,
// which Σ|terms| · (terms per entry) · u bounds (u = 2^-53 / 2^-24; a few hundred terms here).
#include "bem/blocking_cuda.hpp"
#include "support/bem_random.hpp"
#include "support/expect_error.hpp"
#include "support/gpu.hpp"

#include <ksum/error.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace ksum::bem {
namespace {

using Range = std::pair<std::int64_t, std::int64_t>;

// Random slices (support/bem_random.hpp) and `steps` past vectors, all exact in float.
struct Problem {
  std::int64_t n = 0;
  std::vector<Triplet<double>> entries;   // values exact in float
  std::vector<std::vector<double>> steps; // a^n pushed in this order, exact in float
};

Problem random_problem(std::int64_t n, int kmax, int dmax, double p, int steps, unsigned seed,
                       int far = 0) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Problem pr;
  pr.n = n;
  pr.entries = test::random_triplets(n, kmax, dmax, p, g, far);
  for (int s = 0; s < steps; ++s) {
    std::vector<double> a(static_cast<std::size_t>(n));
    for (auto &x : a)
      x = static_cast<float>(u(g));
    pr.steps.push_back(std::move(a));
  }
  return pr;
}

template <class T> Slices<T> slices_of(const Problem &pr, bool absolute = false) {
  std::vector<Triplet<T>> e;
  for (const auto &t : pr.entries)
    e.push_back({t.i, t.j, t.k, static_cast<T>(absolute ? std::abs(t.value) : t.value)});
  return Slices<T>::from_triplets(pr.n, e);
}

template <class T> std::vector<T> cast(const std::vector<double> &a, bool absolute = false) {
  std::vector<T> r(a.size());
  for (std::size_t q = 0; q < a.size(); ++q)
    r[q] = static_cast<T>(absolute ? std::abs(a[q]) : a[q]);
  return r;
}

template <class T> History<T> history_of(const Problem &pr, std::int32_t depth, bool absolute) {
  History<T> h(pr.n, depth);
  for (const auto &a : pr.steps)
    h.push(cast<T>(a, absolute));
  return h;
}

// The fp64 reference and Σ|terms| (the same sum over |values| and |a|) of each entry of s.
struct Exact {
  Slices<double> s, sa;
  History<double> h, ha;
  explicit Exact(const Problem &pr)
      : s(slices_of<double>(pr)), sa(slices_of<double>(pr, true)),
        h(history_of<double>(pr, s.kmax, false)), ha(history_of<double>(pr, s.kmax, true)) {}
};

struct Reference {
  std::vector<double> value, scale;
};

Reference reference(const Exact &x, int ng, Range r) {
  Reference ref;
  ref.value.assign(static_cast<std::size_t>(ng * x.s.n), 0.0);
  ref.scale = ref.value;
  sum_slices_scalar(x.s, x.h, ng, r.first, r.second, ref.value.data());
  sum_slices_scalar(x.sa, x.ha, ng, r.first, r.second, ref.scale.data());
  return ref;
}

template <class T> constexpr double tolerance() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}

// s starts at 1 everywhere: sum() must add to it.
template <class T>
void expect_matches(GpuSlices<T> &gpu, const Exact &x, int ng, Range r, const std::string &what) {
  const std::int64_t n = x.s.n;
  std::vector<T> got(static_cast<std::size_t>(ng * n), T(1));
  const double seconds = gpu.sum(ng, r.first, r.second, got.data());
  EXPECT_GE(seconds, 0.0) << what;
  const auto ref = reference(x, ng, r);
  for (std::size_t q = 0; q < got.size(); ++q)
    ASSERT_LE(std::abs((static_cast<double>(got[q]) - 1.0) - ref.value[q]),
              tolerance<T>() * ref.scale[q] + (std::is_same_v<T, float> ? 1e-7 : 1e-15))
        << what << ", ng " << ng << ", slices [" << r.first << ", " << r.second
        << "), entry g = " << q / static_cast<std::size_t>(n)
        << ", i = " << q % static_cast<std::size_t>(n) << ": " << got[q] - T(1) << " vs "
        << ref.value[q] << " (Σ|terms| " << ref.scale[q] << ")";
}

enum class Kind { full, contiguous };

template <class T>
GpuSlices<T> make_gpu(Kind kind, const Slices<T> &s, int br, int bc, Range blocks, int ng_max) {
  if (kind == Kind::contiguous)
    return GpuSlices<T>(0, ContiguousBlocks<T>::build(s, br, bc, blocks.first, blocks.second),
                        ng_max);
  return GpuSlices<T>(0, FullBlocks<T>::build(s, br, bc, blocks.first, blocks.second), ng_max);
}

// One problem, blocks of [blocks) on the GPU, the history pushed step by step; every n_g and
// every range in `ranges`.
template <class T>
void check_case(Kind kind, const Problem &pr, int br, int bc, Range blocks,
                const std::vector<Range> &ranges, const std::string &what) {
  const auto s = slices_of<T>(pr);
  auto gpu = make_gpu<T>(kind, s, br, bc, blocks, 8);
  for (const auto &a : pr.steps)
    gpu.push(cast<T>(a));
  const Exact x(pr);
  for (int ng : {1, 3, 8})
    for (const auto &r : ranges)
      expect_matches(gpu, x, ng, r, what);
}

template <class T> class BlockingCuda : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(BlockingCuda, Precisions);

TYPED_TEST(BlockingCuda, KernelsMatchTheScalarReference) {
  KSUM_REQUIRE_GPU();
  using T = TypeParam;
  for (Kind kind : {Kind::contiguous, Kind::full}) {
    const std::string name = kind == Kind::contiguous ? "contiguous" : "full";
    // n = 150 is no multiple of b_r; rows and slices empty at random; the history full (more
    // steps than kmax) or partly zero (fewer).
    for (int steps : {45, 7}) {
      const auto pr = random_problem(150, 40, 8, 0.6, steps, 11u + static_cast<unsigned>(steps));
      // Contiguous-Blocking takes b_c = d_max (0), Full-Blocking a wider b_c so that blocks
      // hold several row vectors.
      const int bc = kind == Kind::contiguous ? 0 : 12;
      for (int br : {32, 16, 7, 64})
        check_case<T>(kind, pr, br, bc, {0, 150}, {{0, 150}, {17, 101}, {149, 150}},
                      name + " br " + std::to_string(br) + " steps " + std::to_string(steps));
      // A worker's sub-interval of slices; sums over parts of it, one slice, none.
      check_case<T>(kind, pr, 32, bc, {20, 130}, {{20, 130}, {45, 46}, {60, 60}, {21, 129}},
                    name + " blocks [20, 130)");
    }
    // One unknown; every (i, j) filled.
    check_case<T>(kind, random_problem(1, 9, 4, 1.0, 12, 5u), 32, kind == Kind::full ? 4 : 0,
                  {0, 1}, {{0, 1}}, name + " n = 1");
    // Every b_c of the short-row Contiguous-Blocking kernel's two unrollings (≤ 8, 9 … 16) and
    // just past it (17, 20: the batched kernel), b_r not dividing n, b_r above one block's 256.
    for (int bc : {1, 5, 8, 9, 12, 15, 16, 17, 20})
      for (int br : {7, 128, 300}) {
        if (kind == Kind::full && br > 256) // the Full-Blocking team is at most 256 threads
          continue;
        check_case<T>(kind, random_problem(310, 60, bc, 0.5, 70, 40u + static_cast<unsigned>(bc)),
                      br, kind == Kind::contiguous ? bc : std::max(bc, 16), {0, 310},
                      {{0, 310}, {11, 290}},
                      name + " b_c " + std::to_string(bc) + " b_r " + std::to_string(br));
      }
    // Long row vectors (b_c = 64) and many slices per thread block's chunk.
    check_case<T>(kind, random_problem(300, 120, 64, 0.3, 130, 6u), 128, 64, {0, 300},
                  {{0, 300}, {3, 297}}, name + " b_c 64");
  }
}

TYPED_TEST(BlockingCuda, SetHistoryEqualsPushedSteps) {
  KSUM_REQUIRE_GPU();
  using T = TypeParam;
  const auto pr = random_problem(90, 25, 6, 0.7, 30, 21u);
  const auto s = slices_of<T>(pr);
  const auto h = history_of<T>(pr, s.kmax, false);
  for (Kind kind : {Kind::contiguous, Kind::full}) {
    auto gpu = make_gpu<T>(kind, s, 32, kind == Kind::full ? 8 : 0, {0, 90}, 4);
    gpu.set_history(h);
    expect_matches(gpu, Exact(pr), 4, {0, 90}, "set_history");
    // One more step after set_history shifts the loaded history.
    auto pr2 = pr;
    pr2.steps.push_back(pr.steps.front());
    gpu.push(cast<T>(pr.steps.front()));
    expect_matches(gpu, Exact(pr2), 3, {5, 80}, "set_history + push");
    EXPECT_GT(gpu.device_bytes(), 0);
    EXPECT_GT(gpu.time_kernel(2, 0, 90, 3), 0.0);
  }
}

// kmax = 70000: one slice's past values (≥ 273 KiB in float) exceed the shared memory of a thread
// block on any current GPU (≤ 227 KiB), so the Contiguous-Blocking kernel reads the history in
// place; its results must not change.
TYPED_TEST(BlockingCuda, ContiguousKernelWithAWindowBeyondSharedMemory) {
  KSUM_REQUIRE_GPU();
  using T = TypeParam;
  const auto pr = random_problem(40, 60, 8, 0.8, 70, 31u, 70000);
  const auto s = slices_of<T>(pr);
  ASSERT_EQ(s.kmax, 70000);
  check_case<T>(Kind::contiguous, pr, 32, 0, {0, 40}, {{0, 40}, {1, 39}}, "kmax 70000");
  check_case<T>(Kind::full, pr, 32, 8, {0, 40}, {{0, 40}}, "full, kmax 70000");
}

TEST(BlockingCuda, BadCallsAreRefused) {
  KSUM_REQUIRE_GPU();
  const auto pr = random_problem(40, 12, 5, 0.5, 3, 41u);
  const auto s = slices_of<double>(pr);
  const auto cb = ContiguousBlocks<double>::build(s, 16, 0, 10, 30);
  GpuSlices<double> gpu(0, cb, 4);
  std::vector<double> out(5 * 40);
  test::expect_error([&] { gpu.sum(0, 10, 30, out.data()); }, ErrorCode::invalid_argument,
                     "ng = 0");
  test::expect_error([&] { gpu.sum(5, 10, 30, out.data()); }, ErrorCode::invalid_argument,
                     "ng_max = 4");
  test::expect_error([&] { gpu.sum(2, 5, 30, out.data()); }, ErrorCode::invalid_argument,
                     "outside the blocks");
  test::expect_error([&] { gpu.sum(2, 10, 31, out.data()); }, ErrorCode::invalid_argument,
                     "outside the blocks");
  test::expect_error([&] { (void)gpu.time_kernel(2, 10, 30, 0); }, ErrorCode::invalid_argument,
                     "reps = 0");
  test::expect_error([&] { gpu.push(std::vector<double>(39)); }, ErrorCode::shape_mismatch,
                     "39 values for 40 unknowns");
  test::expect_error([&] { gpu.set_history(History<double>(40, s.kmax + 1)); },
                     ErrorCode::shape_mismatch, "depth");
  test::expect_error([&] { GpuSlices<double>(0, cb, 17); }, ErrorCode::unsupported, "ng_max = 17");
  test::expect_error([&] { GpuSlices<double>(999, cb, 4); }, ErrorCode::invalid_argument,
                     "GPU 999");
  auto bad = cb;
  bad.k0[3] = s.kmax + 1;
  test::expect_error([&] { GpuSlices<double>(0, bad, 4); }, ErrorCode::invalid_argument, "k0");
  bad = cb;
  bad.values.pop_back();
  test::expect_error([&] { GpuSlices<double>(0, bad, 4); }, ErrorCode::shape_mismatch,
                     "do not match");
  auto fb = FullBlocks<double>::build(s, 16, 8, 0, 40);
  fb.col0.back() = 0;
  test::expect_error([&] { GpuSlices<double>(0, fb, 4); }, ErrorCode::invalid_argument, "column");
  // A history larger than any GPU (2 × 10^5 rows of 10^6 steps): refused with its size before
  // anything is allocated. No slices, so the blocks themselves are empty.
  ContiguousBlocks<float> huge;
  huge.n = 200000;
  huge.kmax = 1000000;
  huge.br = 32;
  huge.bc = 1;
  huge.nb = 200000 / 32;
  test::expect_error([&] { GpuSlices<float>(0, huge, 1); }, ErrorCode::unsupported, "bytes");
}

TEST(BlockingCuda, WithoutAGpuTheWorkerCannotBeMade) {
  if (!gpus().empty())
    GTEST_SKIP() << "a GPU is visible";
  const auto s = slices_of<double>(random_problem(8, 4, 2, 0.5, 1, 51u));
  test::expect_error(
      [&] { GpuSlices<double>(0, ContiguousBlocks<double>::build(s, 4, 0, 0, 8), 2); },
      ErrorCode::unsupported, "");
}

} // namespace
} // namespace ksum::bem
