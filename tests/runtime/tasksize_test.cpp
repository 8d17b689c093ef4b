// The task-size model of seed 004 Paper II (include/ksum/tasksize.hpp): its equations on
// hand-computed cases, the interpolated work-unit cost, the calibration's guarantees (positive,
// finite, a default when a measurement fails) and the cache (missing or corrupt: rebuilt).
#include <ksum/error.hpp>
#include <ksum/tasksize.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <thread>

using namespace ksum;
using namespace ksum::tasksize;

namespace {

// Matrix multiplication with few tasks (§4.1.1): M = B², W = N S², P = min(T, B²).
Program matmul_few(double n, double s) {
  const double b = std::ceil(n / s);
  return Program{{TaskKind{b * b, n * s * s, b * b}}, b * b};
}

// N-body (§4.1.2): B diagonal tasks of (S² − S)/2 pairs, (B² − B)/2 off-diagonal ones of S², half
// of which can run at once; the basic P = M / 2.
Program nbody(double n, double s) {
  const double b = std::ceil(n / s), diag = b, off = (b * b - b) / 2;
  return Program{{TaskKind{diag, (s * s - s) / 2, diag}, TaskKind{off, s * s, off / 2}},
                 (diag + off) / 2};
}

} // namespace

TEST(TaskSize, BasicModelOnAHandComputedCase) {
  // N = 1024, S = 256: B = 4, M = 16 tasks of W = 1024·256² units; T = 4, P = 4.
  Model m;
  m.overhead = 2e-6;
  m.threads = 4;
  m.cost = WorkCost(1e-9);
  m.parallelism = ParallelismModel::basic;
  const double r = predict_runtime(m, matmul_few(1024, 256), 256);
  const double expect = (2e-6 * 16 + 1e-9 * 1024.0 * 256 * 256 * 16) / 4;
  EXPECT_NEAR(r, expect, 1e-15 * expect);
  // T = 32 > B² = 16: P = 16.
  m.threads = 32;
  EXPECT_NEAR(predict_runtime(m, matmul_few(1024, 256), 256),
              (2e-6 * 16 + 1e-9 * 1024.0 * 256 * 256 * 16) / 16, 1e-15 * expect);
}

TEST(TaskSize, ParallelismByKindOnAHandComputedCase) {
  // N = 64, S = 8: B = 8; 8 diagonal tasks (all concurrent), 28 off-diagonal (14 at once).
  const Program p = nbody(64, 8);
  // T = 4: P_diag = 4, Ns_diag = 2; P_off = 4, Ns_off = 7; P = (2·4 + 7·4) / 9 = 4.
  EXPECT_DOUBLE_EQ(effective_parallelism(p, 4, ParallelismModel::by_kind), 4.0);
  // T = 16: P_diag = 8, Ns_diag = 1; P_off = 14, Ns_off = 2; P = (1·8 + 2·14) / 3 = 12.
  EXPECT_DOUBLE_EQ(effective_parallelism(p, 16, ParallelismModel::by_kind), 12.0);
  // The basic model's P = min(T, M / 2) = min(16, 18) = 16.
  EXPECT_DOUBLE_EQ(effective_parallelism(p, 16, ParallelismModel::basic), 16.0);
  EXPECT_DOUBLE_EQ(effective_parallelism(p, 64, ParallelismModel::basic), 18.0);
  // R with both kinds' work: (O·36 + C·(8·28 + 28·64)) / 12.
  Model m;
  m.overhead = 1e-6;
  m.threads = 16;
  m.cost = WorkCost(3e-9);
  const double r = predict_runtime(m, p, 8);
  const double expect = (1e-6 * 36 + 3e-9 * (8.0 * 28 + 28.0 * 64)) / 12;
  EXPECT_NEAR(r, expect, 1e-15 * expect);
}

TEST(TaskSize, NoTasksAndOneThread) {
  EXPECT_DOUBLE_EQ(effective_parallelism(Program{}, 8, ParallelismModel::by_kind), 1.0);
  EXPECT_DOUBLE_EQ(effective_parallelism(nbody(64, 8), 1, ParallelismModel::by_kind), 1.0);
  EXPECT_THROW(effective_parallelism(nbody(64, 8), 0, ParallelismModel::basic), Error);
  EXPECT_THROW(effective_parallelism(Program{{TaskKind{-1, 1, 1}}, 0}, 2, ParallelismModel::basic),
               Error);
}

TEST(TaskSize, WorkCostInterpolatesInLogLog) {
  WorkCost c;
  c.add(16, 4e-9);
  c.add(256, 1e-9);
  EXPECT_DOUBLE_EQ(c(16), 4e-9);
  EXPECT_DOUBLE_EQ(c(8), 4e-9);    // constant before the first point
  EXPECT_DOUBLE_EQ(c(1024), 1e-9); // and after the last
  EXPECT_NEAR(c(64), 2e-9, 1e-21); // log-log: halfway in log S, the geometric mean of the costs
  c.add(64, 5e-9);                 // a point between replaces the line there
  EXPECT_NEAR(c(64), 5e-9, 1e-21);
  c.add(64, 3e-9); // the same size again: replaced, not duplicated
  EXPECT_EQ(c.points().size(), 3u);
  EXPECT_THROW(c.add(0, 1e-9), Error);
  EXPECT_THROW(c.add(8, NAN), Error);
  EXPECT_THROW(c.add(8, -1), Error);
  EXPECT_THROW(WorkCost()(8), Error);
}

TEST(TaskSize, PredictFindsTheBalanceOfOverheadAndParallelism) {
  // Constant C: small S pays overhead, large S loses parallelism. N = 4096, T = 8, matmul few
  // tasks: S ≥ 2048 leaves B² ≤ 4 < 8 tasks; the overhead is negligible beside the work here, so
  // every S ≤ 1024 (B² ≥ 16 ≥ T) ties on work and the largest of them has the fewest tasks.
  Model m;
  m.overhead = 1e-5;
  m.threads = 8;
  m.cost = WorkCost(1e-10);
  m.parallelism = ParallelismModel::basic;
  const auto sizes = powers_of_two(16, 4096);
  ASSERT_EQ(sizes.size(), 9u);
  const Curve c = predict(
      m, [](double s) { return matmul_few(4096, s); }, sizes);
  EXPECT_EQ(c.best_size, 1024);
  for (std::size_t i = 0; i < c.sizes.size(); ++i)
    EXPECT_GE(c.runtime[i], c.best_runtime);
  // Variable C(S) that rises past 256 (a cache-bound loop): the best moves down to 256.
  WorkCost rising;
  rising.add(256, 1e-10);
  rising.add(512, 2e-10);
  m.cost = rising;
  EXPECT_EQ(predict(
                m, [](double s) { return matmul_few(4096, s); }, sizes)
                .best_size,
            256);
  EXPECT_THROW(predict(m, [](double s) { return matmul_few(64, s); }, {}), Error);
  EXPECT_THROW(predict(m, [](double s) { return matmul_few(64, s); }, {-1.0}), Error);
}

TEST(TaskSize, PowersOfTwo) {
  EXPECT_EQ(powers_of_two(3, 40), (std::vector<double>{4, 8, 16, 32}));
  EXPECT_EQ(powers_of_two(1, 1), (std::vector<double>{1}));
  EXPECT_THROW(powers_of_two(8, 4), Error);
}

TEST(TaskSize, CalibrationGivesPositiveFiniteParameters) {
  std::string why;
  const double o = measure_task_overhead(2, 2000, 3, &why);
  EXPECT_TRUE(std::isfinite(o));
  EXPECT_GT(o, 0);
  EXPECT_LT(o, 1e-2); // an OpenMP task costs nanoseconds to microseconds, never 10 ms
  std::vector<std::string> fallback;
  double sink = 0;
  const WorkCost c = measure_work_cost(
      [&](double s) {
        for (int i = 0; i < static_cast<int>(s); ++i)
          sink += std::sqrt(static_cast<double>(i) + sink * 1e-300);
      },
      [](double s) { return s; }, {64, 256, 1024}, 3, 1e-4, &fallback, "sqrt loop");
  EXPECT_TRUE(fallback.empty());
  ASSERT_EQ(c.points().size(), 3u);
  for (const auto &[s, v] : c.points()) {
    EXPECT_TRUE(std::isfinite(v)) << s;
    EXPECT_GT(v, 0) << s;
    EXPECT_LT(v, 1e-6) << s; // one sqrt and an add per unit
  }
  EXPECT_TRUE(std::isfinite(sink));
  // O(w): each point kept is at one of the five work sizes, positive, finite and below 10 ms;
  // every size is either a point or a fallback line.
  std::vector<std::string> curve_fallback;
  const WorkCost ow = measure_task_overhead_curve(2, 3, &curve_fallback);
  EXPECT_EQ(ow.points().size() + curve_fallback.size(), 5u);
  for (const auto &[w, v] : ow.points()) {
    EXPECT_TRUE(w == 1e-6 || w == 4e-6 || w == 16e-6 || w == 64e-6 || w == 256e-6) << w;
    EXPECT_TRUE(std::isfinite(v)) << w;
    EXPECT_GT(v, 0) << w;
    EXPECT_LT(v, 1e-2) << w;
  }
  for (const std::string &f : curve_fallback)
    EXPECT_EQ(f.find("overhead"), std::string::npos) << f; // a dropped point is not a fallback O
}

TEST(TaskSize, UnmeasurableWorkFallsBackToADocumentedDefault) {
  // work(S) = 0 at one size: that size takes the median of the others, and says so.
  std::vector<std::string> fallback;
  const WorkCost c = measure_work_cost([](double) {}, [](double s) { return s == 32 ? 0.0 : s; },
                                       {16, 32, 64}, 1, 1e-5, &fallback, "empty");
  ASSERT_EQ(fallback.size(), 1u);
  EXPECT_NE(fallback[0].find("empty"), std::string::npos);
  EXPECT_EQ(c.points().size(), 3u);
  for (const auto &[s, v] : c.points())
    EXPECT_GT(v, 0) << s;
  // No measurable size at all: the default constant.
  fallback.clear();
  const WorkCost d = measure_work_cost([](double) {}, [](double) { return 0.0; }, {8, 16}, 1, 1e-5,
                                       &fallback, "none");
  EXPECT_FALSE(fallback.empty());
  EXPECT_DOUBLE_EQ(d(8), kDefaultWorkCost);
}

namespace {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path =
        std::filesystem::temp_directory_path() /
        ("ksum-tasksize-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

Calibration fake_calibration(int threads) {
  Calibration c;
  c.threads = threads;
  c.overhead = 1.5e-6;
  WorkCost w;
  w.add(8, 2e-9);
  w.add(64, 1e-9);
  c.costs["kernel"] = w;
  c.overhead_by_work.add(1e-6, 3e-6);
  c.overhead_by_work.add(64e-6, 4e-7);
  return c;
}

} // namespace

TEST(TaskSize, CacheIsWrittenReadAndRebuiltWhenMissingOrCorrupt) {
  TempDir dir;
  const auto file = dir.path / "sub" / "tasksize.json";
  int calls = 0;
  auto calibrate = [&](int t) {
    ++calls;
    return fake_calibration(t);
  };
  bool rebuilt = false;
  std::string why;
  // Missing: calibrated and written (the directory created).
  Calibration a = load_or_calibrate(file, 3, calibrate, &rebuilt, &why);
  EXPECT_TRUE(rebuilt);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(std::filesystem::exists(file));
  EXPECT_EQ(a.threads, 3);
  // Present: read back, equal, no calibration.
  Calibration b = load_or_calibrate(file, 3, calibrate, &rebuilt, &why);
  EXPECT_FALSE(rebuilt);
  EXPECT_EQ(calls, 1);
  EXPECT_DOUBLE_EQ(b.overhead, a.overhead);
  ASSERT_EQ(b.costs.count("kernel"), 1u);
  EXPECT_DOUBLE_EQ(b.costs.at("kernel")(8), 2e-9);
  EXPECT_DOUBLE_EQ(b.costs.at("kernel")(64), 1e-9);
  ASSERT_EQ(b.overhead_by_work.points().size(), 2u);
  EXPECT_DOUBLE_EQ(b.overhead_by_work(1e-6), 3e-6);
  EXPECT_DOUBLE_EQ(b.overhead_by_work(64e-6), 4e-7);
  // Another thread count is another key: calibrated, and the first key kept.
  load_or_calibrate(file, 5, calibrate, &rebuilt, &why);
  EXPECT_TRUE(rebuilt);
  EXPECT_EQ(calls, 2);
  load_or_calibrate(file, 3, calibrate, &rebuilt, &why);
  EXPECT_FALSE(rebuilt);
  // Corrupt file: rebuilt, never an exception.
  std::ofstream(file) << "{ this is not json";
  load_or_calibrate(file, 3, calibrate, &rebuilt, &why);
  EXPECT_TRUE(rebuilt);
  EXPECT_NE(why.find("corrupt"), std::string::npos) << why;
  EXPECT_EQ(calls, 3);
  // A valid JSON file with a bad entry (a zero overhead): rebuilt, the reason names it.
  std::ofstream(file)
      << R"({")" << machine_description()
      << R"( | threads 3": {"version": 2, "threads": 3, "overhead": 0, "costs": {}}})";
  load_or_calibrate(file, 3, calibrate, &rebuilt, &why);
  EXPECT_TRUE(rebuilt);
  EXPECT_NE(why.find("overhead"), std::string::npos) << why;
  Calibration c;
  EXPECT_TRUE(load_calibration(file, machine_description(), 3, c, &why)) << why;
  // A bad point of O(w): rebuilt, named.
  std::ofstream(file) << R"({")" << machine_description()
                      << R"( | threads 3": {"version": 2, "threads": 3, "overhead": 1e-6, )"
                      << R"("overhead_by_work": [[1e-6, -2]], "costs": {}}})";
  EXPECT_FALSE(load_calibration(file, machine_description(), 3, c, &why));
  EXPECT_NE(why.find("overhead by work"), std::string::npos) << why;
}

TEST(TaskSize, MalformedEntriesAndOtherVersionsAreRebuiltNotThrown) {
  TempDir dir;
  const auto file = dir.path / "tasksize.json";
  const std::string key = machine_description() + " | threads 2";
  auto calibrate = [](int t) { return fake_calibration(t); };
  bool rebuilt = false;
  std::string why;
  for (const char *entry :
       {R"({"version": 2, "machine": 5, "threads": 2, "overhead": 1e-6, "costs": {}})",
        R"({"version": 2, "threads": 2, "overhead": 1e-6, "seconds": "x", "costs": {}})",
        R"({"version": 2, "threads": 99999999999, "overhead": 1e-6, "costs": {}})",
        R"({"version": 0, "threads": 2, "overhead": 1e-6, "costs": {}})",
        R"({"threads": 2, "overhead": 1e-6, "costs": {"k": [[1, "a"]]}})"}) {
    std::ofstream(file) << "{\"" << key << "\": " << entry << "}";
    Calibration c;
    EXPECT_FALSE(load_calibration(file, machine_description(), 2, c, &why)) << entry;
    EXPECT_NO_THROW(load_or_calibrate(file, 2, calibrate, &rebuilt, &why)) << entry;
    EXPECT_TRUE(rebuilt) << entry;
    EXPECT_TRUE(load_calibration(file, machine_description(), 2, c, &why)) << why;
  }
}

TEST(TaskSize, ConcurrentWritersKeepEveryEntry) {
  TempDir dir;
  const auto file = dir.path / "tasksize.json";
  auto writer = [&](int first) {
    for (int t = first; t < first + 40; ++t) {
      Calibration c = fake_calibration(t);
      c.machine.assign(1, 'm'); // (not = "m": a GCC 12 -Wrestrict false positive)
      save_calibration(file, c);
    }
  };
  std::thread a(writer, 1), b(writer, 101);
  a.join();
  b.join();
  for (int t : {1, 40, 101, 140}) {
    Calibration c;
    std::string why;
    EXPECT_TRUE(load_calibration(file, "m", t, c, &why)) << t << ": " << why;
  }
  int leftovers = 0;
  for (const auto &e : std::filesystem::directory_iterator(dir.path))
    leftovers += e.path().extension() == ".tmp";
  EXPECT_EQ(leftovers, 0);
}

TEST(TaskSize, AnOverheadFallbackIsNotCached) {
  TempDir dir;
  const auto file = dir.path / "tasksize.json";
  auto calibrate = [](int t) {
    Calibration c = fake_calibration(t);
    c.fallback.push_back("task overhead: measured -1e-07 s each; using the default 1e-06 s");
    return c;
  };
  bool rebuilt = false;
  const Calibration c = load_or_calibrate(file, 2, calibrate, &rebuilt);
  EXPECT_TRUE(rebuilt);
  EXPECT_TRUE(overhead_fell_back(c));
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST(TaskSize, DefaultCachePathFollowsTheEnvironment) {
  const char *old = std::getenv("KSUM_CACHE_DIR");
  const std::string saved = old ? old : "";
  ::setenv("KSUM_CACHE_DIR", "/tmp/ksum-cache-test", 1);
  EXPECT_EQ(default_cache_path(), std::filesystem::path("/tmp/ksum-cache-test/tasksize.json"));
  if (old)
    ::setenv("KSUM_CACHE_DIR", saved.c_str(), 1);
  else
    ::unsetenv("KSUM_CACHE_DIR");
}

// The tail extension: + tail · C · (the largest task's work) on T > 1 threads, nothing on one.
TEST(TaskSize, TailTermOnAHandComputedCase) {
  Model m;
  m.overhead = 1e-6;
  m.threads = 4;
  m.cost = WorkCost(2e-9);
  m.tail = 0.5;
  const Program p = nbody(64, 8); // 8 diagonal tasks of 28 pairs, 28 off-diagonal of 64
  const double base = (1e-6 * 36 + 2e-9 * (8.0 * 28 + 28.0 * 64)) / 4;
  EXPECT_NEAR(predict_runtime(m, p, 8), base + 0.5 * 2e-9 * 64, 1e-15);
  m.threads = 1;
  EXPECT_NEAR(predict_runtime(m, p, 8), base * 4, 1e-15);
}

// O(w): each kind pays O at its task's work C·W_k. Two kinds on 4 threads, C = 1 ns per unit:
// 10 tasks of 1000 units (1 µs each) and 2 of 64,000 (64 µs); O(1 µs) = 3 µs, O(64 µs) = 0.4 µs;
// the parallelism by kind: P = (⌈10/4⌉·4 + ⌈2/2⌉·2) / (3 + 1) = 3.5.
TEST(TaskSize, OverheadByWorkOnAHandComputedCase) {
  Model m;
  m.overhead = 1e-6;
  m.threads = 4;
  m.cost = WorkCost(1e-9);
  const Program p{{TaskKind{10, 1000, 10}, TaskKind{2, 64000, 2}}, 0};
  const double work = 1e-9 * (10 * 1000.0 + 2 * 64000.0);
  EXPECT_NEAR(predict_runtime(m, p, 1), (1e-6 * 12 + work) / 3.5, 1e-15); // the constant O
  m.overhead_by_work.add(1e-6, 3e-6);
  m.overhead_by_work.add(64e-6, 4e-7);
  EXPECT_NEAR(predict_runtime(m, p, 1), (10 * 3e-6 + 2 * 4e-7 + work) / 3.5, 1e-15);
  // Between the points, log-log: O(8 µs) = 3e-6 · (4e-7 / 3e-6)^(log 8 / log 64) = 3e-6 ·
  // (2/15)^0.5.
  const Program q{{TaskKind{4, 8000, 4}}, 0};
  EXPECT_NEAR(predict_runtime(m, q, 1), (4 * 3e-6 * std::sqrt(0.4 / 3.0) + 4 * 8e-6) / 4, 1e-15);
}

// The CPU direct sum's block size from a calibration: M = ⌈m / S⌉ blocks of S · n pairs, all
// concurrent, with the tail term 0.5: R = O·M/T + C·m·n/T + C·S·n/2 for M ≥ T, smallest near
// S = √(2 O m / (T C n)), and one block per thread when the overhead dominates.
TEST(TaskSize, DynamicChunkOnHandComputedCases) {
  // 1000 items of 1e-6 s on 4 threads, O = 1e-7 s per chunk: R(S) = (O⌈N/S⌉ + C N) / 4 + 0.5 C S,
  // whose continuous optimum √(2 O N / (T C)) = 7.07 lies between the candidates 4 and 8:
  // R(4) = (2.5e-5 + 1e-3) / 4 + 2e-6 = 2.5825e-4 s, R(8) = (1.25e-5 + 1e-3) / 4 + 4e-6 =
  // 2.5713e-4 s, R(16) = (6.3e-6 + 1e-3) / 4 + 8e-6 = 2.5958e-4 s.
  EXPECT_EQ(dynamic_chunk_with_overhead(1000, 1e-6, 4, 1e-7), 8);
  // Chunks that cost more than their items: one chunk per thread.
  EXPECT_EQ(dynamic_chunk_with_overhead(1000, 1e-9, 4, 1e-3), 250);
  // Cheaper items never get smaller chunks.
  std::int64_t last = 0;
  for (double c : {1e-3, 1e-5, 1e-7, 1e-9}) {
    const std::int64_t s = dynamic_chunk_with_overhead(100000, c, 16, 1e-6);
    EXPECT_GE(s, last) << c;
    EXPECT_GE(s, 1);
    EXPECT_LE(s, 100000);
    last = s;
  }
  EXPECT_EQ(dynamic_chunk_with_overhead(1, 1e-6, 4, 1e-7), 1);
  EXPECT_EQ(dynamic_chunk_with_overhead(0, 1e-6, 4, 1e-7), 1);
  // A cost that cannot be used, or the model switched off: the caller's fallback.
  EXPECT_EQ(dynamic_chunk(1000, 0.0, 4, 256), 256);
  EXPECT_EQ(dynamic_chunk(1000, std::nan(""), 4, 256), 256);
  ::setenv("KSUM_TASKSIZE", "off", 1);
  EXPECT_EQ(dynamic_chunk(1000, 1e-6, 4, 256), 256);
  ::unsetenv("KSUM_TASKSIZE");
}

TEST(TaskSize, LearnedChunkUsesTheRecordedCost) {
  const char *old = std::getenv("KSUM_CACHE_DIR");
  const std::string saved = old ? old : "";
  ::setenv("KSUM_CACHE_DIR", "/nonexistent/ksum-test-cache", 1); // O = kDefaultOverhead = 1 µs
  LearnedChunk c(4);
  EXPECT_EQ(c.choose(8, 0), 4);   // nothing recorded yet: the fallback
  EXPECT_EQ(c.choose(8, 17), 17); // a size given by the user wins
  c.record(1000, 8, 8e-3, 4);     // 64 µs per item at S = 4 on 8 threads
  const std::int64_t s = c.choose(8, 0);
  EXPECT_EQ(s, dynamic_chunk_with_overhead(1000, 64e-6, 8, kDefaultOverhead));
  EXPECT_NE(s, 4);              // (the model's S is not the measured one: no probe)
  EXPECT_EQ(c.choose(1, 0), 4); // one thread: no model
  ::setenv("KSUM_TASKSIZE", "off", 1);
  EXPECT_EQ(c.choose(8, 0), 4);
  ::unsetenv("KSUM_TASKSIZE");
  c.reset();
  EXPECT_EQ(c.choose(8, 0), 4);

  // C(S) online. 1 ms per item at S = 1 on 8 threads, 1000 items: R(1) = (1e-3 + 1) / 8 + 0.5e-3
  // = 0.1256 s < R(2) = (5e-4 + 1) / 8 + 1e-3 = 0.1261 s, so the model keeps S = 1, the size it
  // measured, and the next run probes S = 4.
  LearnedChunk d(1);
  d.record(1000, 8, 0.125, 1);
  EXPECT_EQ(d.choose(8, 0), 4);
  // At S = 4 an item costs half (shared data): C(S) = 1e-3 at 1, 5e-4 from 4 on. R(4) = (2.5e-4 +
  // 0.5) / 8 + 0.5 · 5e-4 · 4 = 0.0635 s, R(8) = 0.0645 s, R(2) = 0.0892 s: S = 4.
  d.record(1000, 8, 0.0625, 4);
  d.record(1000, 8, 0.09, 4); // a slower run at a measured size: the least is kept
  EXPECT_DOUBLE_EQ(d.costs().at(4), 5e-4);
  WorkCost w;
  w.add(1, 1e-3);
  w.add(4, 5e-4);
  EXPECT_EQ(d.choose(8, 0), dynamic_chunk_with_cost(1000, w, 8, kDefaultOverhead));
  EXPECT_EQ(d.choose(8, 0), 4);
  // Settled: a later run's cost (here: S = 16 measured very cheap) no longer moves the size.
  d.record(1000, 8, 1e-4, 16);
  EXPECT_EQ(d.choose(8, 0), 4);
  // Another loop (another item count): measured again from its first run.
  d.record(500, 8, 0.0625, 4);
  EXPECT_EQ(d.costs().size(), 1u);
  // A probe that would leave fewer than 2 chunks per thread is not run: 40 items, S = 1 measured
  // at 1 ms per item, 4·1·2·8 = 64 > 40.
  LearnedChunk e(1);
  e.record(40, 8, 5e-3, 1);
  EXPECT_EQ(e.choose(8, 0), dynamic_chunk_with_overhead(40, 1e-3, 8, kDefaultOverhead));
  if (old)
    ::setenv("KSUM_CACHE_DIR", saved.c_str(), 1);
  else
    ::unsetenv("KSUM_CACHE_DIR");
}

TEST(TaskSize, SubtreeLevelOnHandComputedCases) {
  // A tree of 4 levels of branching 4 (1, 4, 16, 64 boxes), C = 1 µs per box, T = 4, O = 0.1 µs:
  // R(t) = C·B_above + (O·4^t + C·B_below) / min(4, 4^t) + 0.5·C·B_below / 4^t:
  // R(0) = 85.1 + 42.5 = 127.6 µs, R(1) = 1 + 21.1 + 10.5 = 32.6 µs,
  // R(2) = 5 + 20.4 + 2.5 = 27.9 µs, R(3) = 21 + 17.6 + 0.5 = 39.1 µs.
  EXPECT_NEAR(subtree_pass_runtime(4, 4, 0, 1e-6, 4, 1e-7), 127.6e-6, 1e-12);
  EXPECT_NEAR(subtree_pass_runtime(4, 4, 1, 1e-6, 4, 1e-7), 32.6e-6, 1e-12);
  EXPECT_NEAR(subtree_pass_runtime(4, 4, 2, 1e-6, 4, 1e-7), 27.9e-6, 1e-12);
  EXPECT_NEAR(subtree_pass_runtime(4, 4, 3, 1e-6, 4, 1e-7), 39.1e-6, 1e-12);
  EXPECT_EQ(subtree_task_level_with_overhead(4, 4, 1e-6, 4, 1e-7), 2);
  // Tasks 100× dearer (O = 10 µs): R(1) = 1 + 31 + 10.5 = 42.5 µs < R(2) = 5 + 60 + 2.5 µs.
  EXPECT_EQ(subtree_task_level_with_overhead(4, 4, 1e-6, 4, 1e-5), 1);
  // More threads never move the tasks up the tree; a one-level tree has one task.
  int last = 0;
  for (int T : {2, 4, 16, 64, 256}) {
    const int t = subtree_task_level_with_overhead(10, 4, 1e-6, T, 1e-6);
    EXPECT_GE(t, last) << T;
    last = t;
  }
  EXPECT_EQ(subtree_task_level_with_overhead(1, 4, 1e-6, 8, 1e-6), 0);
  EXPECT_THROW((void)subtree_pass_runtime(4, 4, 4, 1e-6, 4, 1e-7), Error);
  EXPECT_THROW((void)subtree_task_level_with_overhead(0, 4, 1e-6, 4, 1e-7), Error);
}

TEST(TaskSize, LearnedLevelUsesTheRecordedCost) {
  const char *old = std::getenv("KSUM_CACHE_DIR");
  const std::string saved = old ? old : "";
  ::setenv("KSUM_CACHE_DIR", "/nonexistent/ksum-test-cache", 1); // O = kDefaultOverhead
  LearnedLevel l;
  EXPECT_EQ(l.choose(6, 4, 8, -1, 3), 3); // nothing recorded yet: the fallback
  EXPECT_EQ(l.choose(6, 4, 8, -1, 9), 5); // clamped to the tree
  EXPECT_EQ(l.choose(6, 4, 8, 2, 3), 2);  // a level given by the user wins
  EXPECT_EQ(l.choose(6, 4, 8, 40, 3), 5); // clamped
  EXPECT_EQ(l.choose(6, 4, 1, -1, 3), 0); // one thread: one task
  // Level 2 (16 tasks) on 8 threads took 3.1 ms: span = 5 + 1360 / 8 = 175 boxes, 17.7 µs each.
  l.record(6, 4, 2, 8, 3.1e-3);
  EXPECT_NEAR(l.seconds_per_box(), 3.1e-3 / 175.0, 1e-15);
  const int first = subtree_task_level_with_overhead(6, 4, 3.1e-3 / 175.0, 8, kDefaultOverhead);
  EXPECT_EQ(l.choose(6, 4, 8, -1, 3), first);
  // A slower second run: the least cost is kept, and the level settles.
  l.record(6, 4, first, 8, 1.0);
  EXPECT_NEAR(l.seconds_per_box(), 3.1e-3 / 175.0, 1e-15);
  EXPECT_EQ(l.choose(6, 4, 8, -1, 3), first);
  // A much cheaper third run lowers the cost but the settled level stays (same tree, threads).
  l.record(6, 4, first, 8, 1e-7);
  EXPECT_LT(l.seconds_per_box(), 3.1e-3 / 175.0);
  EXPECT_EQ(l.choose(6, 4, 8, -1, 3), first);
  ::setenv("KSUM_TASKSIZE", "off", 1);
  EXPECT_EQ(l.choose(6, 4, 8, -1, 3), 3);
  ::unsetenv("KSUM_TASKSIZE");
  l.reset();
  EXPECT_EQ(l.choose(6, 4, 8, -1, 3), 3);
  if (old)
    ::setenv("KSUM_CACHE_DIR", saved.c_str(), 1);
  else
    ::unsetenv("KSUM_CACHE_DIR");
}

TEST(TaskSize, DirectCpuBlockFromACalibration) {
  Calibration c;
  c.threads = 4;
  c.loop_overhead = 1e-7;
  c.costs["direct_cpu"] = WorkCost(1e-9);
  // √(2·1e-7·1000 / (4·1e-9·1000)) = 7.1: the candidates 8 (7.1e-6 s) and 4 (8.3e-6 s).
  EXPECT_EQ(direct_cpu_block(1000, 1000, c), 8);
  c.loop_overhead = 1e-1; // tasks cost more than their work: one block per thread
  EXPECT_EQ(direct_cpu_block(1000, 1000, c), 250);
  // C(S) that rises past 64 targets: the overhead-dominated choice stops below the rise.
  WorkCost rising;
  rising.add(64, 1e-9);
  rising.add(128, 1e-6);
  c.loop_overhead = 1e-4;
  c.costs["direct_cpu"] = rising;
  EXPECT_LE(direct_cpu_block(1000, 1000, c), 64);
  // Never past the largest calibrated size (C(S) is only extrapolated there): one thread and a
  // tiny overhead would otherwise take all m targets in one block.
  Calibration one;
  one.threads = 1;
  one.loop_overhead = 1e-7;
  WorkCost small;
  small.add(8, 1e-9);
  small.add(64, 1e-9);
  one.costs["direct_cpu"] = small;
  EXPECT_LE(direct_cpu_block(1000000, 1000, one), 64);
  EXPECT_GE(direct_cpu_block(1000000, 1000, one), 8);
  EXPECT_LE(direct_cpu_block(5, 1000, one), 5);
  // No kernel cost or no loop overhead: the fixed default.
  Calibration empty;
  EXPECT_EQ(direct_cpu_block(1000, 1000, empty), kDirectCpuBlock);
}
