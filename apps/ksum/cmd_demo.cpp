// ksum demo: a built-in problem end to end. N charged particles in the unit cube (seed 004 Paper
// I's Monte Carlo electrostatics setting), potentials by the direct sum for three kernels in both
// precisions, each checked against the fp64 reference on sampled targets and timed.
#include "common.hpp"

#include <ksum/datasets.hpp>
#include <ksum/device.hpp>
#include <ksum/direct.hpp>
#include <ksum/error.hpp>
#include <ksum/pum.hpp>
#include <ksum/reference.hpp>

#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <random>

namespace ksum::cli {
namespace {

struct DemoArgs {
  std::int64_t n = 20000;
  std::string backend = "auto";
  std::uint64_t seed = 42;
};

double rel_l2(const Table<double> &ref, const Table<double> &got,
              std::span<const std::int64_t> rows) {
  double num = 0, den = 0;
  for (std::size_t t = 0; t < rows.size(); ++t) {
    const double e = got(rows[t], 0) - ref(static_cast<std::int64_t>(t), 0);
    num += e * e;
    den += ref(static_cast<std::int64_t>(t), 0) * ref(static_cast<std::int64_t>(t), 0);
  }
  return std::sqrt(num / den);
}

template <class T>
void run_case(const DemoArgs &a, Kernel k, double eps, const Table<double> &pts,
              const Table<double> &q, std::span<const std::int64_t> rows,
              const Table<double> &ref) {
  DirectOptions opt;
  opt.kernel = k;
  opt.eps = eps;
  opt.backend = parse_backend(a.backend);
  ProgressLine progress(
      fmt::format("ksum demo: {} {}", kernel_info(k).name, sizeof(T) == 4 ? "f32" : "f64"));
  opt.progress = progress.callback();
  DirectSum<T> plan(opt);
  plan.set_points(pts.cast<T>());
  const auto wq = q.cast<T>();
  plan.execute(wq); // warm-up: first GPU launch, page faults
  const auto t0 = std::chrono::steady_clock::now();
  const auto u = plan.execute(wq).template cast<double>();
  const double secs = seconds_since(t0);
  const double pairs = static_cast<double>(a.n) * static_cast<double>(a.n - 1);
  fmt::print("  {:<14}{:>6}{:>7}{:>12.4f}{:>14.3g}{:>14.2e}\n", kernel_info(k).name,
             sizeof(T) == 4 ? "f32" : "f64", to_string(plan.backend()), 1e3 * secs, pairs / secs,
             rel_l2(ref, u, rows));
  std::fflush(stdout); // one row at a time, also when stdout is a pipe
}

// Seed 001's 2D test: Franke's function on 16,641 Halton points, RBF-PUM with M4 local fits, error
// on a 100 x 100 grid inside the data's box.
void run_pum_demo() {
  const std::int64_t n = 16641;
  const auto x = datasets::halton(n, 2);
  Table<double> f(n, 1);
  for (std::int64_t i = 0; i < n; ++i)
    f(i, 0) = datasets::franke(x(i, 0), x(i, 1));
  const std::int64_t counts[2] = {100, 100};
  const double lo[2] = {0.01, 0.01}, hi[2] = {0.99, 0.99};
  const auto g = datasets::grid(counts, lo, hi, 2);
  fmt::print("\nksum demo: RBF partition of unity (seed 001), Franke's function on {} Halton "
             "points, M4 local fits, RMSE on a 100 x 100 grid\n\n",
             n);
  fmt::print("  {:<10}{:>10}{:>12}{:>12}{:>14}{:>24}\n", "eps", "patches", "fit [ms]", "eval [ms]",
             "RMSE", "eps over patches");
  for (const bool loocv : {false, true}) {
    PumInterpolant p({.kernel = Kernel::matern4, .eps = 10.0, .loocv = loocv});
    p.set_data(x, f);
    const auto t0 = std::chrono::steady_clock::now();
    const auto u = p.evaluate(g);
    const double te = seconds_since(t0);
    double se = 0;
    for (std::int64_t i = 0; i < g.rows(); ++i)
      se += std::pow(u(i, 0) - datasets::franke(g(i, 0), g(i, 1)), 2);
    const auto &st = p.stats();
    fmt::print("  {:<10}{:>10}{:>12.1f}{:>12.1f}{:>14.2e}{:>24}\n", loocv ? "loocv" : "10",
               st.patches, 1e3 * (st.seconds_index + st.seconds_fit), 1e3 * te,
               std::sqrt(se / static_cast<double>(g.rows())),
               loocv
                   ? fmt::format("{:.2f} / {:.2f} / {:.2f}", st.eps_min, st.eps_median, st.eps_max)
                   : std::string("fixed"));
    std::fflush(stdout);
  }
}

void run_demo(const DemoArgs &a) {
  if (a.n < 2)
    throw Error(ErrorCode::invalid_argument, fmt::format("--n must be at least 2, got {}", a.n));
  std::mt19937_64 rng(a.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Table<double> pts(a.n, 3), q(a.n, 1);
  for (std::int64_t i = 0; i < a.n; ++i) {
    for (int c = 0; c < 3; ++c)
      pts(i, c) = unit(rng);
    q(i, 0) = unit(rng) < 0.5 ? -1.0 : 1.0;
  }
  const auto gs = gpus();
  fmt::print("ksum demo: {} unit charges (+/-1) uniform in the unit cube, targets = sources "
             "(self term left out)\n",
             a.n);
  fmt::print("  device: {} CPU threads{}\n", max_threads(),
             gs.empty() ? std::string(", no GPU") : fmt::format(", GPU 0 = {}", gs[0].name));
  std::vector<std::int64_t> rows;
  const std::int64_t samples = std::min<std::int64_t>(a.n, 200);
  for (std::int64_t s = 0; s < samples; ++s)
    rows.push_back(s * (a.n / samples));
  fmt::print("  error: relative l2 against the fp64 reference at {} sampled targets; time: one "
             "execute() after a warm-up\n\n",
             samples);
  fmt::print("  {:<14}{:>6}{:>7}{:>12}{:>14}{:>14}\n", "kernel", "prec", "dev", "time [ms]",
             "pairs/s", "rel. error");
  struct Case {
    Kernel k;
    double eps;
  };
  for (const Case c :
       {Case{Kernel::laplace, 1.0}, Case{Kernel::gaussian, 4.0}, Case{Kernel::multiquadric, 1.0}}) {
    const auto ref = reference_sum(c.k, c.eps, pts, pts, q, false, true, rows);
    run_case<double>(a, c.k, c.eps, pts, q, rows, ref);
    run_case<float>(a, c.k, c.eps, pts, q, rows, ref);
  }
  run_pum_demo();
  fmt::print("\nNext: 'ksum sum --help' to sum your own points, 'ksum interpolate --help' to "
             "interpolate your data, 'ksum info' for devices and kernels.\n");
}

} // namespace

void register_demo(CLI::App &app) {
  static DemoArgs a;
  auto *cmd = app.add_subcommand("demo", "Run a built-in problem: time it and check its error");
  cmd->add_option("--n", a.n, "Number of particles")->capture_default_str();
  cmd->add_option("--backend", a.backend, "auto, cpu or gpu")
      ->check(CLI::IsMember({"auto", "cpu", "gpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--seed", a.seed, "Random seed")->capture_default_str();
  cmd->callback([] { run_demo(a); });
}

} // namespace ksum::cli
