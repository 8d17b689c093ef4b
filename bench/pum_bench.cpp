// RBF-PUM benchmarks through the public API (seed 001 §4.3 "linear cost"):
//   time of set_data vs N (index + local fits) and of evaluate vs M, with the slope of a
//   least-squares fit of log(time) against log(size): 1 means linear cost.
// 2D Franke on Halton points, M4, ε = 10. Prints a table, writes JSON (--json FILE).
#include <ksum/ksum.hpp>

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

double slope(const std::vector<double> &x, const std::vector<double> &t) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = static_cast<double>(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double a = std::log(x[i]), b = std::log(t[i]);
    sx += a, sy += b, sxx += a * a, sxy += a * b;
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

Table<double> franke_values(const Table<double> &x) {
  Table<double> f(x.rows(), 1);
  for (std::int64_t i = 0; i < x.rows(); ++i)
    f(i, 0) = datasets::franke(x(i, 0), x(i, 1));
  return f;
}

} // namespace

int main(int argc, char **argv) {
  std::string json;
  std::int64_t max_n = 1 << 20;
  bool gpu_section = false, skip_cpu = false;
  int only_dim = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--json" && i + 1 < argc)
      json = argv[++i];
    else if (s == "--max-n" && i + 1 < argc)
      max_n = std::stoll(argv[++i]);
    else if (s == "--gpu")
      gpu_section = true;
    else if (s == "--dim" && i + 1 < argc)
      only_dim = std::stoi(argv[++i]);
    else if (s == "--skip-cpu")
      skip_cpu = true;
    else {
      fmt::print(stderr, "usage: pum_bench [--max-n N] [--gpu [--dim 2|3] [--skip-cpu]] "
                         "[--json FILE]\n");
      return 2;
    }
  }
  nlohmann::json out;
  out["threads"] = max_threads();
  // The CPU path unless a section asks for the GPU.
  const PumOptions opt{
      .kernel = Kernel::matern4, .eps = 10.0, .extrapolate = true, .backend = Backend::cpu};
  if (gpu_section) {
    // Issue 3 item 10's sizes (seed 001 fig. 5-6), end to end without file I/O on the GPU: index,
    // fits and evaluation (host-to-device copies included), fixed eps and LOOCV; then the CPU
    // path on the same data for agreement (evaluation on a subset of the points).
    if (gpus().empty()) {
      fmt::print("GPU section: no GPU visible\n");
      return 1;
    }
    fmt::print("RBF-PUM on {} (M4): GPU index + fits + evaluation; CPU path on {} threads\n",
               gpus()[0].name, max_threads());
    {
      // Warm-up: CUDA context and module loading are not part of a run.
      const auto x = datasets::halton(5000, 2);
      PumOptions o = opt;
      o.backend = Backend::cuda;
      PumInterpolant p(o);
      p.set_data(x, franke_values(x));
      p.evaluate(x);
    }
    fmt::print("| s | N | M | eps | index [s] | fits [s] | evaluate [s] | end to end [s] | "
               "eps min/median/max | LOOCV / fixed |\n|---|---|---|---|---|---|---|---|---|---|\n");
    struct Size {
      std::int64_t s, n, m;
    };
    for (const Size z : {Size{2, 4000000, 9000000}, Size{3, 4913000, 8000000}}) {
      if (only_dim != 0 && z.s != only_dim)
        continue;
      const auto x = datasets::halton(z.n, z.s);
      Table<double> f(z.n, 1);
      for (std::int64_t i = 0; i < z.n; ++i)
        f(i, 0) = z.s == 2 ? datasets::franke(x(i, 0), x(i, 1))
                           : datasets::franke3(x(i, 0), x(i, 1), x(i, 2));
      auto y = datasets::halton(z.m, z.s, 1000003);
      for (std::int64_t k = 0; k < y.rows() * y.cols(); ++k)
        y.data()[k] = 0.01 + 0.98 * y.data()[k];
      double fixed_best = 1e300;
      Table<double> ug;
      nlohmann::json runs;
      for (const bool loocv : {false, false, false, true}) {
        PumOptions o = opt;
        o.backend = Backend::cuda;
        o.loocv = loocv;
        PumInterpolant p(o);
        const auto t0 = Clock::now();
        p.set_data(x, f);
        auto u = p.evaluate(y);
        const double total = seconds(t0);
        const auto &st = p.stats();
        const double teval = total - st.seconds_index - st.seconds_fit;
        if (!loocv) {
          fixed_best = std::min(fixed_best, total);
          ug = std::move(u);
        }
        fmt::print(
            "| {} | {} | {} | {} | {:.3f} | {:.3f} | {:.3f} | **{:.3f}** | {:.3g} / {:.3g} / "
            "{:.3g} | {} |\n",
            z.s, z.n, z.m, loocv ? "LOOCV" : "10", st.seconds_index, st.seconds_fit, teval, total,
            st.eps_min, st.eps_median, st.eps_max,
            loocv ? fmt::format("{:.2f}", total / fixed_best) : std::string("-"));
        runs.push_back({{"loocv", loocv},
                        {"fit_backend", std::string(to_string(st.fit_backend))},
                        {"index", st.seconds_index},
                        {"fits", st.seconds_fit},
                        {"evaluate", teval},
                        {"total", total},
                        {"eps_median", st.eps_median},
                        {"regularised", st.regularised_patches},
                        {"patches", st.patches},
                        {"median_points", st.median_points}});
      }
      if (skip_cpu)
        continue;
      // The CPU path on the same data, evaluated on the first 200,000 points.
      PumOptions o = opt;
      o.backend = Backend::cpu;
      PumInterpolant c(o);
      auto t0 = Clock::now();
      c.set_data(x, f);
      const double tf = seconds(t0);
      const std::int64_t ms = std::min<std::int64_t>(z.m, 200000);
      Table<double> ys(ms, z.s);
      for (std::int64_t k = 0; k < z.s; ++k)
        for (std::int64_t i = 0; i < ms; ++i)
          ys(i, k) = y(i, k);
      t0 = Clock::now();
      const auto uc = c.evaluate(ys);
      const double te = seconds(t0) * static_cast<double>(z.m) / static_cast<double>(ms);
      double diff = 0, scale = 0;
      for (std::int64_t i = 0; i < ms; ++i) {
        diff = std::max(diff, std::abs(ug(i, 0) - uc(i, 0)));
        scale = std::max(scale, std::abs(uc(i, 0)));
      }
      fmt::print("  CPU path ({} threads): fits {:.3f} s, evaluation {:.3f} s (scaled from {} "
                 "points); max |GPU - CPU| / max |CPU| = {:.1e}; GPU speed-up {:.0f}x\n",
                 max_threads(), tf, te, ms, diff / scale, (tf + te) / fixed_best);
      out["gpu"].push_back({{"s", z.s},
                            {"n", z.n},
                            {"m", z.m},
                            {"runs", runs},
                            {"fixed_best_total", fixed_best},
                            {"cpu_fit", tf},
                            {"cpu_eval_scaled", te},
                            {"max_rel_diff", diff / scale}});
    }
    if (!json.empty())
      std::ofstream(json) << out.dump(2) << "\n";
    return 0;
  }

  fmt::print("RBF-PUM fit cost vs N (2D Halton, Franke, M4, eps = 10, {} threads)\n",
             max_threads());
  fmt::print("| N | patches | index [s] | fit [s] | total [s] | us per point "
             "|\n|---|---|---|---|---|---|\n");
  std::vector<double> ns, ts;
  for (std::int64_t n = 1 << 14; n <= max_n; n *= 4) {
    const auto x = datasets::halton(n, 2);
    const auto f = franke_values(x);
    PumInterpolant p(opt);
    const auto t0 = Clock::now();
    p.set_data(x, f);
    const double t = seconds(t0);
    ns.push_back(static_cast<double>(n));
    ts.push_back(t);
    fmt::print("| {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.2f} |\n", n, p.stats().patches,
               p.stats().seconds_index, p.stats().seconds_fit, t, 1e6 * t / static_cast<double>(n));
    out["fit"].push_back({{"n", n}, {"seconds", t}, {"patches", p.stats().patches}});
  }
  const double fit_slope = slope(ns, ts);
  fmt::print("fitted slope of log(time) vs log(N): {:.3f}\n\n", fit_slope);
  out["fit_slope"] = fit_slope;

  const std::int64_t n = std::min<std::int64_t>(max_n, 1 << 18);
  const auto x = datasets::halton(n, 2);
  PumInterpolant p(opt);
  p.set_data(x, franke_values(x));
  fmt::print(
      "RBF-PUM evaluation cost vs M (N = {})\n| M | evaluate [s] | us per point |\n|---|---|---|\n",
      n);
  std::vector<double> ms, te;
  for (std::int64_t m = 1 << 14; m <= (1 << 20); m *= 4) {
    const auto y = datasets::halton(m, 2, 1000003);
    const auto t0 = Clock::now();
    const auto u = p.evaluate(y);
    const double t = seconds(t0);
    ms.push_back(static_cast<double>(m));
    te.push_back(t);
    fmt::print("| {} | {:.3f} | {:.2f} |\n", m, t, 1e6 * t / static_cast<double>(m));
    out["evaluate"].push_back({{"m", m}, {"n", n}, {"seconds", t}});
  }
  const double eval_slope = slope(ms, te);
  fmt::print("fitted slope of log(time) vs log(M): {:.3f}\n", eval_slope);
  out["evaluate_slope"] = eval_slope;
  if (!json.empty())
    std::ofstream(json) << out.dump(2) << "\n";
  return 0;
}
