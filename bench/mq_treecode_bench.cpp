// Seed 000's multiquadric series (issue 5, §3.2–3.3) as a treecode at the seed's sizes, setup and
// eval on the CPU and (with --gpu) on the GPU, fp32 and fp64, beside the seed's test system I
// (figures 3 and 4: "CPU setup", "CPU eval" of the original code, "GPU setup", "GPU eval"), with
// the measured error against the direct fp64 product. Points: 3D Halton (the seed's mesh nodes are
// not available), c = mean spacing N^(−1/3); tolerance 1e-6 (fp64) and 1e-4 (fp32): the seed states
// none. The CPU treecode computes in double for both tables. Internal API.
//   mq_treecode_bench [--gpu] [--max-n N] [--reps R]
#include "fmm/fmm3d/mq_treecode.hpp"
#include "seed000_multipole.hpp"

#include <ksum/datasets.hpp>
#include <ksum/direct.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <string>
#include <vector>

namespace {

struct Run {
  double setup = 0, eval = 0, error = 0;
  int terms = 0;
  double mean_terms = 0;
  std::int64_t series = 0, direct = 0;
};

// Median setup and eval of `reps` products after a warm-up; max error relative to max |u|.
Run run(const ksum::Table<double> &p, const std::vector<double> &w, const std::vector<double> &ref,
        const ksum::fmm::MqTreecodeOptions &o, int reps) {
  ksum::fmm::MqTreecode tc(p, o);
  auto u = tc.apply(w);
  std::vector<double> setup, eval;
  for (int r = 0; r < reps; ++r) {
    u = tc.apply(w);
    setup.push_back(tc.stats().seconds_setup);
    eval.push_back(tc.stats().seconds_eval);
  }
  std::sort(setup.begin(), setup.end());
  std::sort(eval.begin(), eval.end());
  Run out{.setup = setup[setup.size() / 2],
          .eval = eval[eval.size() / 2],
          .terms = tc.stats().terms,
          .mean_terms = static_cast<double>(tc.stats().series_terms) /
                        static_cast<double>(std::max<std::int64_t>(1, tc.stats().series_pairs)),
          .series = tc.stats().series_pairs,
          .direct = tc.stats().direct_pairs};
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    err = std::max(err, std::abs(u[i] - ref[i]));
    norm = std::max(norm, std::abs(ref[i]));
  }
  out.error = err / norm;
  return out;
}

} // namespace

int main(int argc, char **argv) {
  std::int64_t max_n = 89702;
  bool gpu = false;
  int reps = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--gpu")
      gpu = true;
    else if (a == "--max-n" && i + 1 < argc)
      max_n = std::stoll(argv[++i]);
    else if (a == "--reps" && i + 1 < argc)
      reps = std::max(1, std::stoi(argv[++i]));
    else {
      fmt::print(stderr, "usage: mq_treecode_bench [--gpu] [--max-n N] [--reps R]\n");
      return a == "--help" ? 0 : 2;
    }
  }
  try {
    for (const bool single : {true, false}) {
      const double tol = single ? 1e-4 : 1e-6;
      fmt::print("\n### Seed 000's multiquadric series as a treecode, {} (seed 000 §4.1 figure {}, "
                 "test system I), tolerance {:.0e}\n\n",
                 single ? "single precision" : "double precision", single ? 3 : 4, tol);
      fmt::print(
          "| nodes | seed CPU setup | ksum CPU setup | seed CPU eval | ksum CPU eval | seed GPU "
          "setup | ksum GPU setup | seed GPU eval | ksum GPU eval | terms (mean used) | series / "
          "direct "
          "pairs | max rel. error CPU / GPU |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
      for (const auto &r : ksum::bench::seed000_multipole) {
        const std::int64_t n = r.nodes;
        if (n > max_n)
          break;
        const auto p = ksum::datasets::halton(n, 3);
        const double c = std::pow(static_cast<double>(n), -1.0 / 3.0);
        std::vector<double> w(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i)
          w[static_cast<std::size_t>(i)] = std::sin(3.0 * static_cast<double>(i));
        // The reference: the direct fp64 product. The plan leaves out the self term (φ(0) = 1 in
        // ε units): add it back and scale (its kernel is sqrt(1 + (εr)²) = sqrt(c² + r²) / c).
        ksum::DirectSum<double> ds(ksum::DirectOptions{
            .kernel = ksum::Kernel::multiquadric, .eps = 1 / c, .backend = ksum::Backend::cpu});
        ds.set_points(p);
        ksum::Table<double> wt(n, 1);
        for (std::int64_t i = 0; i < n; ++i)
          wt(i, 0) = w[static_cast<std::size_t>(i)];
        const auto d = ds.execute(wt);
        std::vector<double> ref(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i)
          ref[static_cast<std::size_t>(i)] = c * d(i, 0) + c * w[static_cast<std::size_t>(i)];
        const auto cpu = run(p, w, ref, {.c = c, .tolerance = tol}, reps);
        Run g;
        if (gpu)
          g = run(p, w, ref, {.c = c, .tolerance = tol, .gpu = true, .single = single}, reps);
        const double *t = single ? r.f32 : r.f64;
        using enum ksum::bench::Seed000Column;
        const double s[4] = {t[cpu_setup], t[cpu_eval], t[gpu_setup], t[gpu_eval]};
        auto cell = [gpu](double v) { return gpu ? fmt::format("{:.2e}", v) : std::string("–"); };
        fmt::print("| {} | {:.2e} | {:.2e} | {:.2e} | {:.2e} | {:.2e} | {} | {:.2e} | {} | {} "
                   "({:.1f}) | {} / "
                   "{} | {:.1e} / {} |\n",
                   n, s[0], cpu.setup, s[1], cpu.eval, s[2], cell(g.setup), s[3], cell(g.eval),
                   cpu.terms, cpu.mean_terms, cpu.series, cpu.direct, cpu.error,
                   gpu ? fmt::format("{:.1e}", g.error) : std::string("–"));
        std::fflush(stdout);
      }
    }
  } catch (const std::exception &e) {
    fmt::print(stderr, "mq_treecode_bench: {}\n", e.what());
    return 1;
  }
}
