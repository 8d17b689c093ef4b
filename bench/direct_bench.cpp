// Direct-sum benchmarks through the public API. Prints tables, writes JSON (--json FILE).
//   --gpu     N = M = 2^20 in the unit cube, laplace / gaussian / multiquadric, f32 and f64:
//             pair interactions per second (median of --reps runs after a warm-up).
//   --cpu     every kernel (or --kernels a,b), f32 and f64, pairs per second per core, and the
//   ratio against the plain
//             `#pragma omp simd` double loop of bench/plain_loops.hpp in the same run.
//   --seed000 seed 000's brute-force matrix-vector product (multiquadric, 602 ... 89,702 nodes),
//             beside the seed's GTX 680 / i7-2600K times (its figures 1 and 2).
#include "plain_loops.hpp"

#include <ksum/ksum.hpp>

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

using namespace ksum;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  bool gpu = false, cpu = false, seed000 = false;
  std::int64_t gpu_n = 1 << 20, cpu_n = 1 << 14;
  int reps = 5, threads = 1;
  std::string json;
  std::vector<Kernel> cpu_kernels; // empty: all
};

Table<double> cube(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Table<double> t(n, 3);
  for (std::int64_t k = 0; k < 3 * n; ++k)
    t.data()[k] = u(rng);
  return t;
}

Table<double> charges(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Table<double> t(n, 1);
  for (std::int64_t k = 0; k < n; ++k)
    t.data()[k] = u(rng);
  return t;
}

template <class F> double median_seconds(int reps, F &&f) {
  f(); // warm-up
  std::vector<double> ts;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    ts.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

template <class T>
double time_plan(Kernel k, double eps, Backend b, const Table<double> &pts, const Table<double> &w,
                 int reps, int threads) {
  DirectSum<T> plan({.kernel = k, .eps = eps, .backend = b, .threads = threads});
  plan.set_points(pts.cast<T>());
  const auto wt = w.cast<T>();
  return median_seconds(reps, [&] { plan.execute(wt); });
}

double eps_for(Kernel k) {
  return k == Kernel::laplace || k == Kernel::log ? 1.0 : 2.0;
}

void bench_gpu(const Args &a, nlohmann::json &out) {
  const auto gs = gpus();
  if (gs.empty()) {
    fmt::print("GPU benchmark: no GPU visible, skipped\n");
    return;
  }
  const std::int64_t n = a.gpu_n;
  const auto pts = cube(n, 1);
  const auto w = charges(n, 2);
  const double pairs = static_cast<double>(n) * static_cast<double>(n - 1);
  fmt::print("\nGPU direct sum, {} (N = M = {}, 3D, self term left out, median of {})\n",
             gs[0].name, n, a.reps);
  fmt::print("| kernel | precision | time [s] | pairs/s | target |\n|---|---|---|---|---|\n");
  struct Goal {
    Kernel k;
    double f32, f64;
  };
  for (const Goal g : {Goal{Kernel::laplace, 2.6e12, 8e11}, Goal{Kernel::gaussian, 2.6e12, 6e11},
                       Goal{Kernel::multiquadric, 2.6e12, 8e11}}) {
    for (int prec : {32, 64}) {
      const double t = prec == 32
                           ? time_plan<float>(g.k, eps_for(g.k), Backend::cuda, pts, w, a.reps, 0)
                           : time_plan<double>(g.k, eps_for(g.k), Backend::cuda, pts, w, a.reps, 0);
      const double rate = pairs / t, goal = prec == 32 ? g.f32 : g.f64;
      fmt::print("| {} | f{} | {:.4f} | {:.3e} | {:.1e} {} |\n", kernel_info(g.k).name, prec, t,
                 rate, goal, rate >= goal ? "met" : "MISSED");
      out["gpu"].push_back({{"kernel", kernel_info(g.k).name},
                            {"precision", prec},
                            {"n", n},
                            {"seconds", t},
                            {"pairs_per_second", rate},
                            {"goal", goal},
                            {"device", gs[0].name}});
    }
  }
}

void bench_cpu(const Args &a, nlohmann::json &out) {
  const std::int64_t n = a.cpu_n;
  const auto pts = cube(n, 3);
  const auto w = charges(n, 4);
  const double pairs = static_cast<double>(n) * static_cast<double>(n - 1);
  std::vector<double> u(static_cast<std::size_t>(n));
  fmt::print("\nCPU direct sum (N = M = {}, 3D, {} thread(s), median of {}); rates per core\n", n,
             a.threads, a.reps);
  fmt::print("| kernel | plain f64 [pairs/s] | ksum f64 | ratio f64 | ksum f32 | ratio f32 |\n"
             "|---|---|---|---|---|---|\n");
  for (const auto &info : all_kernels()) {
    const Kernel k = info.kind;
    if (!a.cpu_kernels.empty() &&
        std::find(a.cpu_kernels.begin(), a.cpu_kernels.end(), k) == a.cpu_kernels.end())
      continue;
    const double e = eps_for(k);
    const double tp = median_seconds(a.reps, [&] {
      bench::plain_sum(k, e, pts.col(0).data(), pts.col(1).data(), pts.col(2).data(),
                       w.col(0).data(), n, u.data(), a.threads);
    });
    const double t64 = time_plan<double>(k, e, Backend::cpu, pts, w, a.reps, a.threads);
    const double t32 = time_plan<float>(k, e, Backend::cpu, pts, w, a.reps, a.threads);
    const double per = 1.0 / a.threads;
    fmt::print("| {} | {:.3e} | {:.3e} | {:.2f} | {:.3e} | {:.2f} |\n", info.name, per * pairs / tp,
               per * pairs / t64, tp / t64, per * pairs / t32, tp / t32);
    out["cpu"].push_back({{"kernel", info.name},
                          {"n", n},
                          {"threads", a.threads},
                          {"plain_f64_pairs_per_second_per_core", per * pairs / tp},
                          {"f64_pairs_per_second_per_core", per * pairs / t64},
                          {"f32_pairs_per_second_per_core", per * pairs / t32},
                          {"ratio_f64_vs_plain", tp / t64},
                          {"ratio_f32_vs_plain", tp / t32}});
  }
}

// Seed 000 §4.1 (test system I: i7-2600K, GTX 680), figures 1 and 2, column "GPU".
void bench_seed000(const Args &a, nlohmann::json &out) {
  struct Row {
    std::int64_t n;
    double cpu32, gpu32, cpu64, gpu64; // seed: "CPU no cond." and "GPU" [s]
  };
  const Row rows[] = {
      {602, 3.71e-4, 8.96e-5, 6.34e-4, 6.00e-4},   {1562, 1.08e-3, 1.75e-4, 2.72e-3, 1.52e-3},
      {3542, 4.05e-3, 3.92e-4, 9.98e-3, 4.52e-3},  {9902, 3.09e-2, 1.58e-3, 7.93e-2, 3.04e-2},
      {39802, 4.74e-1, 1.95e-2, 1.25e+0, 4.26e-1}, {89702, 2.42e+0, 9.48e-2, 6.37e+0, 2.10e+0}};
  const bool have_gpu = !gpus().empty();
  const Backend b = have_gpu ? Backend::cuda : Backend::cpu;
  fmt::print("\nSeed 000 brute-force matvec (multiquadric, c = 1), seed test system I vs ksum on "
             "{} ({})\n",
             have_gpu ? gpus()[0].name : std::string("CPU"), have_gpu ? "gpu" : "cpu");
  fmt::print("| nodes | seed CPU f32 [s] | seed GPU f32 [s] | ksum f32 [s] | seed CPU f64 [s] | "
             "seed GPU f64 [s] | ksum f64 [s] |\n|---|---|---|---|---|---|---|\n");
  for (const Row &r : rows) {
    // Boundary nodes: points on the unit sphere surface, as a mesh boundary would give.
    auto pts = cube(r.n, 5);
    for (std::int64_t i = 0; i < r.n; ++i) {
      double nrm = 0;
      for (int c = 0; c < 3; ++c) {
        pts(i, c) -= 0.5;
        nrm += pts(i, c) * pts(i, c);
      }
      for (int c = 0; c < 3; ++c)
        pts(i, c) /= std::sqrt(nrm);
    }
    const auto w = charges(r.n, 6);
    const double t32 = time_plan<float>(Kernel::multiquadric, 1.0, b, pts, w, a.reps, 0);
    const double t64 = time_plan<double>(Kernel::multiquadric, 1.0, b, pts, w, a.reps, 0);
    fmt::print("| {} | {:.2e} | {:.2e} | {:.2e} | {:.2e} | {:.2e} | {:.2e} |\n", r.n, r.cpu32,
               r.gpu32, t32, r.cpu64, r.gpu64, t64);
    out["seed000"].push_back({{"nodes", r.n},
                              {"seed_gpu_f32", r.gpu32},
                              {"seed_gpu_f64", r.gpu64},
                              {"ksum_f32", t32},
                              {"ksum_f64", t64},
                              {"backend", have_gpu ? "gpu" : "cpu"}});
  }
}

} // namespace

int main(int argc, char **argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) {
        fmt::print(stderr, "direct_bench: {} needs a value\n", s);
        std::exit(2);
      }
      return std::string(argv[++i]);
    };
    if (s == "--gpu")
      a.gpu = true;
    else if (s == "--cpu")
      a.cpu = true;
    else if (s == "--seed000")
      a.seed000 = true;
    else if (s == "--gpu-n")
      a.gpu_n = std::stoll(next());
    else if (s == "--cpu-n")
      a.cpu_n = std::stoll(next());
    else if (s == "--reps")
      a.reps = std::stoi(next());
    else if (s == "--threads")
      a.threads = std::stoi(next());
    else if (s == "--json")
      a.json = next();
    else if (s == "--kernels") {
      const std::string list = next();
      for (std::size_t b = 0; b <= list.size();) {
        const std::size_t e = std::min(list.find(',', b), list.size());
        a.cpu_kernels.push_back(parse_kernel(list.substr(b, e - b)));
        b = e + 1;
      }
    } else {
      fmt::print(stderr, "usage: direct_bench [--gpu] [--cpu] [--seed000] [--gpu-n N] [--cpu-n N] "
                         "[--reps R] [--threads T] [--kernels k1,k2] [--json FILE]\n");
      return 2;
    }
  }
  if (!a.gpu && !a.cpu && !a.seed000)
    a.cpu = a.gpu = a.seed000 = true;
  nlohmann::json out;
  out["ksum_version"] = version();
  out["threads_available"] = max_threads();
  for (const auto &g : gpus())
    out["gpus"].push_back(g.name);
  if (a.gpu)
    bench_gpu(a, out);
  if (a.cpu)
    bench_cpu(a, out);
  if (a.seed000)
    bench_seed000(a, out);
  if (!a.json.empty())
    std::ofstream(a.json) << out.dump(2) << "\n";
  return 0;
}
