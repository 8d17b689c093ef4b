// Google Benchmark: throughput of the branch-free elementary functions of kernels/kmath.hpp against
// libm over arrays (the loop shapes of the CPU direct sum). Elements per second are reported.
//   build/default/bench/kmath_bench --benchmark_out=kmath.json --benchmark_out_format=json
#include "kernels/kmath.hpp"

#include <benchmark/benchmark.h>
#include <cmath>
#include <random>
#include <vector>

namespace {

constexpr std::size_t n = 4096; // fits L1 with the output: measures arithmetic, not memory

template <class T> std::vector<T> inputs(T lo, T hi) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<T> u(lo, hi);
  std::vector<T> v(n);
  for (auto &x : v)
    x = u(rng);
  return v;
}

template <class T, class F> void run(benchmark::State &state, T lo, T hi, F f) {
  const auto x = inputs<T>(lo, hi);
  std::vector<T> y(n);
  for (auto _ : state) {
    const T *__restrict xp = x.data();
    T *__restrict yp = y.data();
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i)
      yp[i] = f(xp[i]);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}

template <class T> void BM_exp2_ksum(benchmark::State &s) {
  run<T>(s, T(-60), T(0), [](T v) { return ksum::kmath::exp2_nonpos(v); });
}
template <class T> void BM_exp2_libm(benchmark::State &s) {
  run<T>(s, T(-60), T(0), [](T v) { return std::exp2(v); });
}
template <class T> void BM_rsqrt_ksum(benchmark::State &s) {
  run<T>(s, T(1e-3), T(1e3), [](T v) { return ksum::kmath::rsqrt(v); });
}
template <class T> void BM_rsqrt_libm(benchmark::State &s) {
  run<T>(s, T(1e-3), T(1e3), [](T v) { return T(1) / std::sqrt(v); });
}
template <class T> void BM_log_ksum(benchmark::State &s) {
  run<T>(s, T(1e-3), T(1e3), [](T v) { return ksum::kmath::log(v); });
}
template <class T> void BM_log_libm(benchmark::State &s) {
  run<T>(s, T(1e-3), T(1e3), [](T v) { return std::log(v); });
}

BENCHMARK(BM_exp2_ksum<double>);
BENCHMARK(BM_exp2_libm<double>);
BENCHMARK(BM_rsqrt_ksum<double>);
BENCHMARK(BM_rsqrt_libm<double>);
BENCHMARK(BM_log_ksum<double>);
BENCHMARK(BM_log_libm<double>);
BENCHMARK(BM_exp2_ksum<float>);
BENCHMARK(BM_exp2_libm<float>);
BENCHMARK(BM_rsqrt_ksum<float>);
BENCHMARK(BM_rsqrt_libm<float>);
BENCHMARK(BM_log_ksum<float>);
BENCHMARK(BM_log_libm<float>);

} // namespace

BENCHMARK_MAIN();
