// ksum demo: a built-in problem end to end. N charged particles in the unit cube (seed 004 Paper
// I's Monte Carlo electrostatics setting), potentials by the direct sum for three kernels in both
// precisions, each checked against the fp64 reference on sampled targets and timed.
#include "common.hpp"

#include <ksum/device.hpp>
#include <ksum/direct.hpp>
#include <ksum/error.hpp>
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
  fmt::print("\nNext: 'ksum sum --help' to sum your own points, 'ksum info' for devices and "
             "kernels.\n");
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
