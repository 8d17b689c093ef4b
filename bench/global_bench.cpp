// Global RBF interpolation benchmarks (seed 000), through the public API.
//   --matvec  the kernel matrix–vector product at seed 000's sizes (602 … 89,702 nodes),
//             multiquadric, fp32 and fp64, CPU and GPU, beside the seed's test system I
//   --fgp     FGP iterations and time to ‖r‖∞ ≤ tol·‖f‖∞ (default 1e-6), 3D multiquadric on
//             Halton points, N = 1e4, 1e5, 1e6 (--fgp-n)
//   --krylov  GMRES with the L-set preconditioner to relative residual 1e-8, N = 1e5 Halton
//             points in 2D and 3D, multiquadric and tps (target: ≤ 50 iterations)
//   --krylov-large N  GMRES on N 3D points, multiquadric, to relative residual 1e-6 (beside FGP)
//   --dense   the dense solver at N = 5,000 and 20,000 (3D multiquadric), CPU and GPU
//   --multipole  the FMM product (issue 5) at seed 000's sizes, setup and eval, f32 and f64, CPU
//             and GPU, beside the seed's multipole tables (figures 3 and 4)
//   --fgp-method fmm  FGP with FMM products, the residual then also checked exactly
// Shape: ε h = 1 with h = N^(−1/d) (c = 1/ε equal to the mean spacing). Prints markdown tables;
// --json FILE writes the numbers.
#include "seed000_multipole.hpp"

#include <ksum/ksum.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace ksum;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<std::int64_t> parse_list(const std::string &s) {
  std::vector<std::int64_t> v;
  std::size_t b = 0;
  while (b < s.size()) {
    const std::size_t e = std::min(s.find(',', b), s.size());
    v.push_back(static_cast<std::int64_t>(std::stod(s.substr(b, e - b))));
    b = e + 1;
  }
  return v;
}

Table<double> test_values(const Table<double> &x) {
  Table<double> f(x.rows(), 1);
  for (std::int64_t i = 0; i < x.rows(); ++i)
    f(i, 0) = x.cols() == 2 ? datasets::franke(x(i, 0), x(i, 1))
                            : datasets::franke3(x(i, 0), x(i, 1), x(i, 2));
  return f;
}

template <class T> double median_matvec(Backend b, const Table<double> &x, int reps) {
  DirectSum<T> ds(DirectOptions{.kernel = Kernel::multiquadric, .eps = 1.0, .backend = b});
  const Table<T> xt = x.template cast<T>();
  ds.set_points(xt);
  Table<T> w(x.rows(), 1, T(1));
  ds.execute(w); // warm-up
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    const auto u = ds.execute(w);
    t.push_back(seconds(t0));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void bench_matvec(bool gpu, std::int64_t cpu_max_n, int reps, nlohmann::json &out) {
  // Seed 000 §4.1, test system I (i7-2600K, 8 threads; GTX 680): figures 1 and 2, "CPU no cond."
  // and "GPU" columns, seconds.
  struct Row {
    std::int64_t n;
    double cpu32, gpu32, cpu64, gpu64;
  };
  const Row seed[] = {
      {602, 3.71e-4, 8.96e-5, 6.34e-4, 6.00e-4},   {1562, 1.08e-3, 1.75e-4, 2.72e-3, 1.52e-3},
      {3542, 4.05e-3, 3.92e-4, 9.98e-3, 4.52e-3},  {9902, 3.09e-2, 1.58e-3, 7.93e-2, 3.04e-2},
      {39802, 4.74e-1, 1.95e-2, 1.25e+0, 4.26e-1}, {89702, 2.42e+0, 9.48e-2, 6.37e+0, 2.10e+0}};
  fmt::print("\n### Matrix–vector product, multiquadric (seed 000 §4.1, test system I beside "
             "ksum)\n\n");
  fmt::print(
      "| nodes | seed CPU f32 | ksum CPU f32 | seed GPU f32 | ksum GPU f32 | seed CPU f64 "
      "| ksum CPU f64 | seed GPU f64 | ksum GPU f64 |\n|---|---|---|---|---|---|---|---|---|\n");
  auto cell = [](double v) { return v > 0 ? fmt::format("{:.2e}", v) : std::string("–"); };
  for (const auto &r : seed) {
    const auto x = datasets::halton(r.n, 3);
    const bool cpu_ok = r.n <= cpu_max_n;
    const double c32 = cpu_ok ? median_matvec<float>(Backend::cpu, x, reps) : 0;
    const double c64 = cpu_ok ? median_matvec<double>(Backend::cpu, x, reps) : 0;
    const double g32 = gpu ? median_matvec<float>(Backend::cuda, x, reps) : 0;
    const double g64 = gpu ? median_matvec<double>(Backend::cuda, x, reps) : 0;
    fmt::print("| {} | {:.2e} | {} | {:.2e} | {} | {:.2e} | {} | {:.2e} | {} |\n", r.n, r.cpu32,
               cell(c32), r.gpu32, cell(g32), r.cpu64, cell(c64), r.gpu64, cell(g64));
    out["matvec"].push_back({{"nodes", r.n},
                             {"cpu_f32", c32},
                             {"cpu_f64", c64},
                             {"gpu_f32", g32},
                             {"gpu_f64", g64},
                             {"seed_cpu_f32", r.cpu32},
                             {"seed_gpu_f32", r.gpu32},
                             {"seed_cpu_f64", r.cpu64},
                             {"seed_gpu_f64", r.gpu64}});
    std::fflush(stdout);
  }
}

// One FMM product: set_points (setup) and the median execute (eval), multiquadric ε = 1.
template <class T>
std::pair<double, double> fmm_matvec(Backend b, const Table<double> &x, double tol, int reps) {
  const auto t0 = Clock::now();
  DirectSum<T> ds(DirectOptions{.kernel = Kernel::multiquadric,
                                .eps = 1.0,
                                .backend = b,
                                .method = Method::fmm,
                                .tolerance = tol});
  ds.set_points(x.template cast<T>());
  const double setup = seconds(t0);
  Table<T> w(x.rows(), 1, T(1));
  ds.execute(w); // warm-up
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t1 = Clock::now();
    ds.execute(w);
    t.push_back(seconds(t1));
  }
  std::sort(t.begin(), t.end());
  return {setup, t[t.size() / 2]};
}

void bench_multipole(bool gpu, int reps, nlohmann::json &out) {
  // Seed 000 figures 3 and 4: "CPU setup mod.", "CPU eval mod.", "GPU setup", "GPU eval".
  for (const bool single : {true, false}) {
    const double tol = single ? 1e-4 : 1e-6;
    fmt::print("\n### Multipole matrix–vector product, multiquadric, {} (seed 000 §4.1 figure {}, "
               "test system I, beside ksum's FMM at tolerance {:.0e})\n\n",
               single ? "single precision" : "double precision", single ? 3 : 4, tol);
    fmt::print(
        "| nodes | seed CPU setup | ksum CPU setup | seed CPU eval | ksum CPU eval | seed GPU "
        "setup | ksum GPU setup | seed GPU eval | ksum GPU eval |\n"
        "|---|---|---|---|---|---|---|---|---|\n");
    for (const auto &r : ksum::bench::seed000_multipole) {
      const auto x = datasets::halton(r.nodes, 3);
      const auto c = single ? fmm_matvec<float>(Backend::cpu, x, tol, reps)
                            : fmm_matvec<double>(Backend::cpu, x, tol, reps);
      std::pair<double, double> g{0, 0};
      if (gpu)
        g = single ? fmm_matvec<float>(Backend::cuda, x, tol, reps)
                   : fmm_matvec<double>(Backend::cuda, x, tol, reps);
      const double *t = single ? r.f32 : r.f64;
      using enum ksum::bench::Seed000Column;
      const double s[4] = {t[cpu_setup_mod], t[cpu_eval_mod], t[gpu_setup], t[gpu_eval]};
      auto cell = [](double v) { return v > 0 ? fmt::format("{:.2e}", v) : std::string("–"); };
      fmt::print("| {} | {:.2e} | {:.2e} | {:.2e} | {:.2e} | {:.2e} | {} | {:.2e} | {} |\n",
                 r.nodes, s[0], c.first, s[1], c.second, s[2], cell(g.first), s[3], cell(g.second));
      out[single ? "multipole_f32" : "multipole_f64"].push_back(
          {{"nodes", r.nodes},
           {"cpu_setup", c.first},
           {"cpu_eval", c.second},
           {"gpu_setup", g.first},
           {"gpu_eval", g.second},
           {"seed", {s[0], s[1], s[2], s[3]}}});
      std::fflush(stdout);
    }
  }
}

struct SolveRow {
  std::string label;
  std::int64_t d, n;
  Kernel kernel;
  GlobalSolver solver;
  double tol;
};

void bench_solves(const std::vector<SolveRow> &rows, const char *title, nlohmann::json &out,
                  const char *key, Backend backend = Backend::automatic,
                  Method method = Method::direct) {
  fmt::print("\n### {}\n\n", title);
  fmt::print("| d | N | kernel | solver | tol | iterations | matvecs | final rel. residual | "
             "max abs residual | L-sets [s] | solve [s] | per iteration [s] | matvec |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto &r : rows) {
    const auto x = datasets::halton(r.n, r.d);
    const auto f = test_values(x);
    GlobalRbfOptions o;
    o.kernel = r.kernel;
    o.eps = std::pow(static_cast<double>(r.n), 1.0 / static_cast<double>(r.d)); // ε h = 1
    o.solver = r.solver;
    o.tolerance = r.tol;
    o.backend = backend;
    o.matvec_method = method;
    GlobalRbfInterpolant rbf(o);
    std::string status = "ok";
    try {
      rbf.set_data(x, f);
    } catch (const Error &e) {
      status = e.what();
    }
    const auto &st = rbf.stats();
    const double per = st.iterations > 0 ? st.seconds_solve / st.iterations : 0.0;
    // With fast products, the residual measured exactly (direct sums) at 1000 sampled centres.
    double exact = -1;
    if (method != Method::direct && status == "ok") {
      const std::int64_t s = std::min<std::int64_t>(r.n, 1000);
      Table<double> xs(s, r.d), fs(s, f.cols());
      for (std::int64_t i = 0; i < s; ++i) {
        for (std::int64_t k = 0; k < r.d; ++k)
          xs(i, k) = x(i * r.n / s, k);
        for (std::int64_t c = 0; c < f.cols(); ++c)
          fs(i, c) = f(i * r.n / s, c);
      }
      const auto us = rbf.evaluate(xs, Method::direct);
      exact = 0;
      for (std::int64_t k = 0; k < s * f.cols(); ++k)
        exact = std::max(exact, std::abs(us.data()[k] - fs.data()[k]));
      status = fmt::format("exact max residual at 1000 sampled centres: {:.2e}", exact);
    }
    fmt::print("| {} | {} | {} | {} | {:.0e} | {} | {} | {:.2e} | {:.2e} | {:.2f} | {:.2f} | "
               "{:.3f} | {} |{}\n",
               r.d, r.n, kernel_info(r.kernel).name, to_string(r.solver), r.tol, st.iterations,
               st.matvecs, st.residual_rel, st.residual_max, st.seconds_setup, st.seconds_solve,
               per, st.matvec, status == "ok" ? "" : " " + status);
    if (exact >= 0)
      out[key + std::string("_exact_residual")].push_back(exact);
    out[key].push_back({{"d", r.d},
                        {"n", r.n},
                        {"kernel", kernel_info(r.kernel).name},
                        {"solver", to_string(r.solver)},
                        {"tol", r.tol},
                        {"iterations", st.iterations},
                        {"matvecs", st.matvecs},
                        {"residual_rel", st.residual_rel},
                        {"residual_max", st.residual_max},
                        {"seconds_setup", st.seconds_setup},
                        {"seconds_solve", st.seconds_solve},
                        {"matvec", st.matvec},
                        {"history", st.history},
                        {"status", status}});
    std::fflush(stdout);
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string json;
  bool matvec = false, fgp = false, krylov = false, dense = false, multipole = false;
  std::int64_t krylov_large = 0;
  std::vector<std::int64_t> fgp_n{10000, 100000, 1000000};
  std::int64_t krylov_n = 100000, cpu_max_n = 89702;
  double fgp_tol = 1e-6;
  Method fgp_method = Method::direct;
  int reps = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--json" && i + 1 < argc)
      json = argv[++i];
    else if (s == "--matvec")
      matvec = true;
    else if (s == "--fgp")
      fgp = true;
    else if (s == "--multipole")
      multipole = true;
    else if (s == "--krylov")
      krylov = true;
    else if (s == "--dense")
      dense = true;
    else if (s == "--krylov-large" && i + 1 < argc)
      krylov_large = std::stoll(argv[++i]);
    else if (s == "--fgp-n" && i + 1 < argc)
      fgp_n = parse_list(argv[++i]);
    else if (s == "--fgp-tol" && i + 1 < argc)
      fgp_tol = std::stod(argv[++i]);
    else if (s == "--fgp-method" && i + 1 < argc)
      fgp_method = parse_method(argv[++i]);
    else if (s == "--krylov-n" && i + 1 < argc)
      krylov_n = std::stoll(argv[++i]);
    else if (s == "--cpu-max-n" && i + 1 < argc)
      cpu_max_n = std::stoll(argv[++i]);
    else if (s == "--reps" && i + 1 < argc)
      reps = std::stoi(argv[++i]);
    else {
      fmt::print(
          stderr,
          "usage: global_bench [--matvec] [--multipole] [--fgp] [--krylov] [--fgp-n N1,N2,..] "
          "[--fgp-tol T] [--fgp-method direct|fmm] [--krylov-n N] [--cpu-max-n N] [--reps R] "
          "[--json FILE]\n");
      return 2;
    }
  }
  if (!matvec && !fgp && !krylov && !dense && !multipole && krylov_large == 0)
    matvec = fgp = krylov = dense = multipole = true;
  const bool gpu = !gpus().empty();
  nlohmann::json out;
  out["gpu"] = gpu ? gpus()[0].name : "none";
  fmt::print("## Global RBF (seed 000): {}; ε h = 1, Halton points\n",
             gpu ? gpus()[0].name : "CPU only");
  if (matvec)
    bench_matvec(gpu, cpu_max_n, reps, out);
  if (multipole)
    bench_multipole(gpu, reps, out);
  if (fgp) {
    std::vector<SolveRow> rows;
    for (const auto n : fgp_n)
      rows.push_back({"fgp", 3, n, Kernel::multiquadric, GlobalSolver::fgp, fgp_tol});
    bench_solves(rows,
                 fgp_method == Method::direct
                     ? "FGP (seed 000 §3.1), 3D multiquadric, q = 40"
                     : "FGP (seed 000 §3.1), 3D multiquadric, q = 40, FMM products (issue 5)",
                 out, fgp_method == Method::direct ? "fgp" : "fgp_fmm", Backend::automatic,
                 fgp_method);
  }
  if (krylov) {
    std::vector<SolveRow> rows;
    for (const std::int64_t d : {2, 3})
      for (const auto k : {Kernel::multiquadric, Kernel::tps})
        rows.push_back({"krylov", d, krylov_n, k, GlobalSolver::krylov, 1e-8});
    bench_solves(rows,
                 "GMRES with the L-set preconditioner, relative residual 1e-8 (target ≤ 50 "
                 "iterations)",
                 out, "krylov");
  }
  if (krylov_large > 0)
    bench_solves({{"krylov", 3, krylov_large, Kernel::multiquadric, GlobalSolver::krylov, 1e-6}},
                 "GMRES, 3D multiquadric, relative residual 1e-6 (beside FGP above)", out,
                 "krylov_large");
  if (dense) {
    std::vector<SolveRow> rows;
    for (const std::int64_t n : {5000, 20000})
      rows.push_back({"dense", 3, n, Kernel::multiquadric, GlobalSolver::dense, 1e-8});
    bench_solves(rows, "Dense solver, 3D multiquadric (CPU: LAPACK dsysv; GPU: cuSOLVER getrf)",
                 out, "dense_gpu");
    if (gpu)
      bench_solves(rows, "Dense solver on the CPU cores (LAPACK dsysv)", out, "dense_cpu",
                   Backend::cpu);
  }
  if (!json.empty())
    std::ofstream(json) << out.dump(1) << "\n";
  return 0;
}
