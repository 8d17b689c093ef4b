// The test problems of seed 004 Paper II (src/runtime/tasksize_problems.hpp): every problem's
// task-parallel run gives the serial reference's checksum (relative 1e-12) for block sizes that
// divide n, that do not, and s = n, on 1 and 2 threads, and creates exactly describe()'s Σ M_k
// tasks; describe() matches hand-computed counts, work and concurrencies; bad input is refused.
#include "runtime/tasksize_problems.hpp"
#include "support/expect_error.hpp"

#include <ksum/error.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace ksum::tasksize::problems {
namespace {

constexpr double kTol = 1e-12; // relative, checksum vs the serial reference

double total_tasks(const Program &p) {
  double m = 0;
  for (const TaskKind &k : p.kinds)
    m += k.count;
  return m;
}

struct Case {
  Kind kind;
  std::int64_t n;
  std::vector<std::int64_t> sizes; // one not dividing n, one dividing n, and n
};

class RunMatchesReference : public ::testing::TestWithParam<Case> {};

TEST_P(RunMatchesReference, ChecksumAndTaskCount) {
  const Case &c = GetParam();
  const double ref = reference_checksum(c.kind, c.n);
  ASSERT_TRUE(std::isfinite(ref) && ref > 0) << ref;
  for (std::int64_t s : c.sizes)
    for (int threads : {1, 2}) {
      const RunResult r = run(c.kind, c.n, s, threads);
      SCOPED_TRACE(testing::Message()
                   << name(c.kind) << " n " << c.n << " s " << s << " threads " << threads);
      EXPECT_NEAR(r.checksum, ref, kTol * std::abs(ref));
      EXPECT_EQ(static_cast<double>(r.tasks),
                total_tasks(describe(c.kind, c.n, static_cast<double>(s))));
      EXPECT_GE(r.seconds, 0.0);
    }
}

INSTANTIATE_TEST_SUITE_P(AllProblems, RunMatchesReference,
                         ::testing::Values(Case{Kind::matmul_few_loops, 120, {7, 24, 120}},
                                           Case{Kind::matmul_few_blas, 120, {7, 24, 120}},
                                           Case{Kind::matmul_many_blas, 120, {7, 24, 120}},
                                           Case{Kind::nbody_light, 150, {16, 30, 150}},
                                           Case{Kind::nbody_heavy, 150, {16, 30, 150}},
                                           Case{Kind::cholesky, 144, {10, 36, 144}}),
                         [](const auto &info) { return std::string(name(info.param.kind)); });

void expect_kind(const TaskKind &k, double count, double work, double concurrency) {
  EXPECT_DOUBLE_EQ(k.count, count);
  EXPECT_DOUBLE_EQ(k.work, work);
  EXPECT_DOUBLE_EQ(k.concurrency, concurrency);
}

// n = 8, s = 2: B = 4.
TEST(TasksizeProblems, DescribeHandComputed) {
  for (Kind k : {Kind::matmul_few_loops, Kind::matmul_few_blas}) {
    const Program p = describe(k, 8, 2);
    ASSERT_EQ(p.kinds.size(), 1u);
    expect_kind(p.kinds[0], 16, 8 * 2 * 2, 16); // M = B², W = n·s², concurrency B²
    EXPECT_DOUBLE_EQ(p.parallelism, 16);
  }
  {
    const Program p = describe(Kind::matmul_many_blas, 8, 2);
    ASSERT_EQ(p.kinds.size(), 1u);
    expect_kind(p.kinds[0], 64, 8, 16); // M = B³, W = s³, concurrency B²
    EXPECT_DOUBLE_EQ(p.parallelism, 16);
  }
  for (Kind k : {Kind::nbody_light, Kind::nbody_heavy}) {
    const Program p = describe(k, 8, 2);
    ASSERT_EQ(p.kinds.size(), 2u);
    expect_kind(p.kinds[0], 4, 1, 4);   // diagonal: B tasks of (s² − s)/2 pairs
    expect_kind(p.kinds[1], 6, 4, 3);   // off-diagonal: (B² − B)/2 of s², half concurrent
    EXPECT_DOUBLE_EQ(p.parallelism, 5); // M / 2 = (4 + 6) / 2
  }
  {
    const Program p = describe(Kind::cholesky, 8, 2);
    ASSERT_EQ(p.kinds.size(), 4u);
    expect_kind(p.kinds[0], 4, 8.0 / 3, 1); // potrf
    expect_kind(p.kinds[1], 6, 8, 1.5);     // trsm: B(B − 1)/2, s³, (B − 1)/2
    expect_kind(p.kinds[2], 6, 8, 1.5);     // syrk
    expect_kind(p.kinds[3], 4, 16, 1);  // gemm: B(B − 1)(B − 2)/6, 2s³, (B − 1)(B − 2)/6
    EXPECT_DOUBLE_EQ(p.parallelism, 5); // M / B = 20 / 4
  }
}

// n = 10, s = 4: B = ⌈10/4⌉ = 3 (the last block short); s = n: one block.
TEST(TasksizeProblems, DescribeShortLastBlockAndOneBlock) {
  const Program mm = describe(Kind::matmul_many_blas, 10, 4);
  expect_kind(mm.kinds[0], 27, 64, 9);
  const Program nb = describe(Kind::nbody_light, 10, 4);
  expect_kind(nb.kinds[0], 3, 6, 3);
  expect_kind(nb.kinds[1], 3, 16, 1.5);
  EXPECT_DOUBLE_EQ(nb.parallelism, 3);
  const Program ch = describe(Kind::cholesky, 10, 4);
  EXPECT_DOUBLE_EQ(total_tasks(ch), 3 + 3 + 3 + 1);
  EXPECT_DOUBLE_EQ(ch.parallelism, 10.0 / 3);

  const Program one = describe(Kind::cholesky, 10, 10);
  EXPECT_DOUBLE_EQ(total_tasks(one), 1);
  const Program nb1 = describe(Kind::nbody_heavy, 10, 10);
  EXPECT_DOUBLE_EQ(total_tasks(nb1), 1);
  // The model still gives a finite runtime with P ≥ 1.
  Model m;
  m.threads = 2;
  m.cost = WorkCost(1e-9);
  for (Kind k : all_kinds())
    for (ParallelismModel pm : {ParallelismModel::basic, ParallelismModel::by_kind}) {
      m.parallelism = pm;
      const double r = predict_runtime(m, describe(k, 10, 10), 10);
      EXPECT_TRUE(std::isfinite(r) && r > 0) << name(k);
    }
}

TEST(TasksizeProblems, TaskWorkMatchesDescribe) {
  // matmul_few: a task is B block products of task_work(s) = s³: W = n·s² when s divides n.
  EXPECT_DOUBLE_EQ(describe(Kind::matmul_few_blas, 64, 16).kinds[0].work,
                   4 * task_work(Kind::matmul_few_blas, 16));
  EXPECT_DOUBLE_EQ(describe(Kind::matmul_many_blas, 64, 16).kinds[0].work,
                   task_work(Kind::matmul_many_blas, 16));
  EXPECT_DOUBLE_EQ(describe(Kind::nbody_light, 64, 16).kinds[1].work,
                   task_work(Kind::nbody_light, 16));
  EXPECT_DOUBLE_EQ(describe(Kind::cholesky, 64, 16).kinds[3].work, task_work(Kind::cholesky, 16));
}

TEST(TasksizeProblems, NamesRoundTrip) {
  EXPECT_EQ(all_kinds().size(), 6u);
  for (Kind k : all_kinds())
    EXPECT_EQ(parse_kind(name(k)), k);
}

TEST(TasksizeProblems, TaskBenchRunsEverySizeUpToItsMaximum) {
  for (Kind k : all_kinds()) {
    TaskBench tb(k, 48);
    for (std::int64_t s : {1, 5, 16, 48})
      EXPECT_NO_THROW(tb.run(s)) << name(k) << " s " << s;
    test::expect_error([&] { tb.run(49); }, ErrorCode::invalid_argument, "49");
    test::expect_error([&] { tb.run(0); }, ErrorCode::invalid_argument, "s = 0");
  }
}

TEST(TasksizeProblems, BadInputIsRefused) {
  using test::expect_error;
  const ErrorCode bad = ErrorCode::invalid_argument;
  expect_error([] { parse_kind("matmul_fast"); }, bad, "matmul_fast");
  expect_error([] { describe(Kind::cholesky, 0, 1); }, bad, "n = 0");
  expect_error([] { describe(Kind::cholesky, 16, 0); }, bad, "s = 0");
  expect_error([] { describe(Kind::nbody_light, 16, 17); }, bad, "s = 17");
  expect_error([] { run(Kind::matmul_few_loops, -3, 1, 1); }, bad, "n = -3");
  expect_error([] { run(Kind::matmul_few_loops, 16, 0, 1); }, bad, "s = 0");
  expect_error([] { run(Kind::nbody_heavy, 16, 32, 1); }, bad, "s = 32");
  expect_error([] { run(Kind::cholesky, 16, 4, -1); }, bad, "threads = -1");
  expect_error([] { reference_checksum(Kind::cholesky, 0); }, bad, "n = 0");
  expect_error([] { task_work(Kind::nbody_light, 0.5); }, bad, "s = 0.5");
  expect_error([] { TaskBench tb(Kind::matmul_few_blas, 0); }, bad, "n = 0");
}

} // namespace
} // namespace ksum::tasksize::problems
