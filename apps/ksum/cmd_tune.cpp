// ksum tune: the task-size model of seed 004 Paper II on this machine (include/ksum/tasksize.hpp).
// Calibrates the OpenMP task overhead O and the work-unit costs C(S) of the kernels (or reads
// them from the per-machine cache), prints them with the block size the model chooses for each
// problem, writes the cache, and with --plot measures the problems over block size beside the
// model's prediction.
#include "common.hpp"

#include "runtime/tasksize_problems.hpp"

#include <ksum/direct.hpp>
#include <ksum/error.hpp>
#include <ksum/io.hpp>
#include <ksum/tasksize.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <omp.h>
#include <random>

namespace ksum::cli {
namespace {

namespace ts = ksum::tasksize;
namespace tp = ksum::tasksize::problems;

struct TuneArgs {
  int threads = 0;
  std::string cache, plot, problems;
  std::int64_t n = 0;
  bool recalibrate = false, force = false;
};

// The sizes a kernel's C(S) is measured at and the model chooses from: powers of two from 8 (16
// for N-body) to n / 2 (at least two blocks).
std::vector<double> candidate_sizes(tp::Kind k, std::int64_t n) {
  const double lo = k == tp::Kind::nbody_light || k == tp::Kind::nbody_heavy ? 16 : 8;
  return ts::powers_of_two(lo, std::max(lo, static_cast<double>(n) / 2));
}

std::vector<tp::Kind> selected(const TuneArgs &a) {
  if (a.problems.empty())
    return tp::all_kinds();
  std::vector<tp::Kind> out;
  std::size_t b = 0;
  while (b <= a.problems.size()) {
    const std::size_t e = std::min(a.problems.find(',', b), a.problems.size());
    out.push_back(tp::parse_kind(a.problems.substr(b, e - b)));
    b = e + 1;
  }
  return out;
}

// The calibration: O of OpenMP tasks on T threads and C(S) of every problem's task kernel at its
// candidate sizes (one thread; the largest sizes of the heavy kernels capped so that a point
// takes milliseconds, not seconds).
ts::Calibration calibrate(int threads, const std::vector<tp::Kind> &kinds, std::int64_t n) {
  const auto t0 = std::chrono::steady_clock::now();
  ts::Calibration c;
  std::string why;
  c.overhead = ts::measure_task_overhead(threads, 4000, 7, &why);
  if (!why.empty())
    c.fallback.push_back(why);
  c.overhead_by_work = ts::measure_task_overhead_curve(threads, 5, &c.fallback);
  std::string why_loop;
  c.loop_overhead = ts::measure_loop_overhead(threads, 20000, 7, &why_loop);
  if (!why_loop.empty())
    c.fallback.push_back(why_loop);
  c.costs["direct_cpu"] = ts::measure_direct_cpu_cost(&c.fallback);
  ProgressLine progress("calibrating");
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const tp::Kind k = kinds[i];
    const std::int64_t nk = n > 0 ? n : tp::default_n(k);
    std::vector<double> sizes = candidate_sizes(k, nk);
    const double cap = k == tp::Kind::nbody_light || k == tp::Kind::nbody_heavy ? 2048 : 512;
    sizes.erase(std::remove_if(sizes.begin(), sizes.end(), [&](double s) { return s > cap; }),
                sizes.end());
    tp::TaskBench bench(k, static_cast<std::int64_t>(sizes.back()));
    c.costs[std::string(tp::name(k))] =
        ts::measure_work_cost([&](double s) { bench.run(static_cast<std::int64_t>(s)); },
                              [&](double s) { return tp::task_work(k, s); }, sizes, 3, 2e-3,
                              &c.fallback, std::string(tp::name(k)));
    progress.update(static_cast<double>(i + 1) / static_cast<double>(kinds.size()));
  }
  c.seconds = seconds_since(t0);
  return c;
}

ts::Model model_of(const ts::Calibration &c, const std::string &kernel) {
  ts::Model m;
  m.overhead = c.overhead;
  m.threads = c.threads;
  m.cost = c.costs.at(kernel);
  m.parallelism = ts::ParallelismModel::by_kind;
  m.overhead_by_work = c.overhead_by_work;
  return m;
}

void run_tune(const TuneArgs &a) {
  const int threads = a.threads > 0 ? a.threads : omp_get_max_threads();
  const std::vector<tp::Kind> kinds = selected(a);
  if (!a.plot.empty())
    refuse_overwrite(a.plot, {}, a.force);
  const std::filesystem::path cache =
      a.cache.empty() ? ts::default_cache_path() : std::filesystem::path(a.cache);
  bool rebuilt = true;
  std::string why;
  ts::Calibration c;
  auto fresh = [&](int t) { return calibrate(t, kinds, a.n); };
  if (a.recalibrate) {
    // Measured again; the kernels of other problems already in the cache are kept.
    ts::Calibration old;
    const bool had = ts::load_calibration(cache, ts::machine_description(), threads, old);
    c = fresh(threads);
    c.machine = ts::machine_description();
    c.threads = threads;
    if (had)
      for (const auto &[name, w] : old.costs)
        c.costs.emplace(name, w);
    if (!ts::overhead_fell_back(c))
      ts::save_calibration(cache, c);
    why = "--recalibrate";
  } else {
    c = ts::load_or_calibrate(cache, threads, fresh, &rebuilt, &why);
    // A cache written for other problems lacks some kernels: measure them now and add them.
    std::vector<tp::Kind> missing;
    for (tp::Kind k : kinds)
      if (!c.costs.count(std::string(tp::name(k))))
        missing.push_back(k);
    if (!c.costs.count("direct_cpu") || !(c.loop_overhead > 0)) {
      c.loop_overhead = ts::measure_loop_overhead(threads);
      c.costs["direct_cpu"] = ts::measure_direct_cpu_cost(&c.fallback);
      if (!ts::overhead_fell_back(c))
        ts::save_calibration(cache, c);
      rebuilt = true;
    }
    if (!missing.empty()) {
      const ts::Calibration more = calibrate(threads, missing, a.n);
      for (const auto &[name, w] : more.costs)
        c.costs[name] = w;
      c.fallback.insert(c.fallback.end(), more.fallback.begin(), more.fallback.end());
      if (!ts::overhead_fell_back(c))
        ts::save_calibration(cache, c);
      rebuilt = true;
    }
  }
  fmt::print("machine      {}\n", c.machine);
  fmt::print("threads      {}\n", c.threads);
  fmt::print("cache        {} ({})\n", cache.string(),
             rebuilt ? fmt::format("calibrated now{}{}", why.empty() ? "" : ": " + why,
                                   ts::overhead_fell_back(c)
                                       ? "; not written: an overhead fell back to its default"
                                       : "")
                     : "read from the cache; --recalibrate measures again");
  if (rebuilt)
    fmt::print("calibration  {:.2f} s\n", c.seconds);
  fmt::print("overhead O   {:.3g} µs per OpenMP task, {:.3g} µs per dynamic loop chunk\n",
             c.overhead * 1e6, c.loop_overhead * 1e6);
  if (!c.overhead_by_work.empty()) {
    std::string line;
    for (const auto &[w, o] : c.overhead_by_work.points())
      line += fmt::format(" {:.3g}:{:.3g}", w * 1e6, o * 1e6);
    fmt::print("O(w)         µs per task at w µs of work per task:{}\n", line);
  }
  for (const std::string &f : c.fallback)
    fmt::print("fallback     {}\n", f);
  fmt::print("\nwork unit cost C(S), ns per unit (one thread):\n");
  for (tp::Kind k : kinds) {
    const ts::WorkCost &w = c.costs.at(std::string(tp::name(k)));
    std::string line;
    for (const auto &[s, v] : w.points())
      line += fmt::format(" {}:{:.3g}", static_cast<std::int64_t>(s), v * 1e9);
    fmt::print("  {:<17}{}\n", tp::name(k), line);
  }
  if (c.costs.count("direct_cpu")) {
    std::string line;
    for (const auto &[s, v] : c.costs.at("direct_cpu").points())
      line += fmt::format(" {}:{:.3g}", static_cast<std::int64_t>(s), v * 1e9);
    fmt::print("  {:<17}{}\n", "direct_cpu", line);
  }
  fmt::print("\nblock size chosen by the model (C(S), parallelism by task kind and O(w), {} "
             "threads):\n",
             c.threads);
  fmt::print("| problem | n | chosen S | predicted s | tasks at S |\n|---|---|---|---|---|\n");
  for (tp::Kind k : kinds) {
    const std::int64_t n = a.n > 0 ? a.n : tp::default_n(k);
    const ts::Model m = model_of(c, std::string(tp::name(k)));
    const ts::Curve curve = ts::predict(
        m, [&](double s) { return tp::describe(k, n, s); }, candidate_sizes(k, n));
    double tasks = 0;
    for (const auto &kind : tp::describe(k, n, curve.best_size).kinds)
      tasks += kind.count;
    fmt::print("| {} | {} | {} | {:.4g} | {:.0f} |\n", tp::name(k), n,
               static_cast<std::int64_t>(curve.best_size), curve.best_runtime, tasks);
  }
  fmt::print("\nksum's methods (targets per task of the CPU direct sum, {} threads):\n", c.threads);
  fmt::print("| method | m × n | chosen | default |\n|---|---|---|---|\n");
  for (const std::int64_t m : {std::int64_t(10000), std::int64_t(100000), std::int64_t(1000000)})
    fmt::print("| direct_cpu | {} × {} | {} | {} |\n", m, m, ts::direct_cpu_block(m, m, c),
               ts::kDirectCpuBlock);
  fmt::print(
      "\nThe PUM fit and evaluation, the 3D FMM near pass, the FGT evaluation loop and the 2D "
      "FMM\n(downward subtree level, near-field leaves per task) choose their sizes at run "
      "time, from\ntheir own first measured items or execute and the loop-chunk overhead "
      "above; each\nplan's stats report the size it used (docs/tasksize.md).\n");
  if (a.plot.empty())
    return;
  // --plot: each problem measured over block size (solid) beside the model's prediction (dashed),
  // both relative to the best measured time so that the problems share the axes.
  fmt::print("\nmeasured vs predicted ({} threads; time / the best measured):\n", c.threads);
  fmt::print("| problem | S | measured s | predicted s | measured / best | predicted / best |\n"
             "|---|---|---|---|---|---|\n");
  std::vector<io::PlotCurve> curves;
  ProgressLine progress("measuring");
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const tp::Kind k = kinds[i];
    const std::int64_t n = a.n > 0 ? a.n : tp::default_n(k);
    const ts::Model m = model_of(c, std::string(tp::name(k)));
    const auto sizes = candidate_sizes(k, n);
    const ts::Curve curve = ts::predict(
        m, [&](double s) { return tp::describe(k, n, s); }, sizes);
    std::vector<double> measured;
    for (double s : sizes) {
      double best = INFINITY;
      for (int r = 0; r < 3; ++r)
        best = std::min(best, tp::run(k, n, static_cast<std::int64_t>(s), c.threads).seconds);
      measured.push_back(best);
    }
    const double best = *std::min_element(measured.begin(), measured.end());
    io::PlotCurve meas{fmt::format("{} measured", tp::name(k)), {}, {}, false};
    io::PlotCurve pred{fmt::format("{} predicted", tp::name(k)), {}, {}, true};
    for (std::size_t j = 0; j < sizes.size(); ++j) {
      fmt::print("| {} | {} | {:.4g} | {:.4g} | {:.2f}{} | {:.2f} |\n", tp::name(k),
                 static_cast<std::int64_t>(sizes[j]), measured[j], curve.runtime[j],
                 measured[j] / best, sizes[j] == curve.best_size ? " (chosen)" : "",
                 curve.runtime[j] / best);
      meas.x.push_back(std::log10(sizes[j]));
      meas.y.push_back(std::log10(measured[j] / best));
      pred.x.push_back(std::log10(sizes[j]));
      pred.y.push_back(std::log10(curve.runtime[j] / best));
    }
    curves.push_back(std::move(meas));
    curves.push_back(std::move(pred));
    progress.update(static_cast<double>(i + 1) / static_cast<double>(kinds.size()));
  }
  const std::string legend = io::write_log_plot_png(a.plot, curves, a.force);
  note(fmt::format("wrote {}: {}", a.plot, legend));
}

} // namespace

void register_tune(CLI::App &app) {
  auto a = std::make_shared<TuneArgs>();
  CLI::App *sub = app.add_subcommand(
      "tune",
      "Calibrate the task-size model of seed 004 Paper II on this machine: the OpenMP task "
      "overhead O and the work-unit cost C(S) of each kernel, cached per machine and thread "
      "count; print them and the block size the model chooses for each test problem.\n"
      "  R(S) = (O M(S) + C(S) sum_k W_k(S) M_k(S)) / P(T, M)\n"
      "The cache also sets how the CPU direct sum (ksum sum, DirectSum) splits its targets into "
      "tasks on this machine; KSUM_TASKSIZE=off in the environment keeps its fixed default. A "
      "calibration whose overhead could not be measured (a busy machine) is used but not cached.\n"
      "Example: ksum tune --threads 2 --plot tune.png");
  sub->add_option("--threads", a->threads, "Threads T (default: OpenMP's, all cores)")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--cache", a->cache,
                  "Cache file (default: $KSUM_CACHE_DIR/tasksize.json, else "
                  "$XDG_CACHE_HOME/ksum/tasksize.json, else ~/.cache/ksum/tasksize.json)");
  sub->add_flag("--recalibrate", a->recalibrate, "Measure again even when the cache has values");
  sub->add_option("--problems", a->problems,
                  "Comma-separated: matmul_few_loops, matmul_few_blas, matmul_many_blas, "
                  "nbody_light, nbody_heavy, cholesky (default: all)");
  sub->add_option("--n", a->n, "Problem size for every problem (default: per problem)")
      ->check(CLI::Range(std::int64_t(16), std::int64_t(1) << 20));
  sub->add_option("--plot", a->plot,
                  "PNG: measure each problem over block size; plot measured (solid) and predicted "
                  "(dashed) time / the best measured, log-log");
  sub->add_flag("-f,--force", a->force, "Overwrite the --plot file");
  sub->callback([a] { run_tune(*a); });
}

} // namespace ksum::cli
