// Monte Carlo electrostatics benchmark (issue 22; seed 004 Paper I, figure 3.1 and table 3.1)
// through the public API (include/ksum/mc.hpp, mc_sim.hpp, direct.hpp). Prints Markdown tables,
// writes JSON (--json FILE) and the rate curves as PNG (--png FILE: FILE_f32.png, FILE_f64.png).
//   mc_bench [--max-n 1e6] [--sizes 1e3,3e3,...] [--precision f32,f64] [--budget 3]
//            [--sim-budget 10] [--reps 3] [--threads T] [--no-sim] [--json F] [--png F]
// The system: the polyelectrolyte of build_polyelectrolyte, N/200 chains of 100 charged beads
// (R = 2 Å, bond 5 Å) and their N/2 monovalent counter-ions in a spherical cell at volume
// fraction --phi (0.05), bare Coulomb (l_B = 7.14 Å), hard spheres, harmonic bonds.
// (a) pair interactions per second vs N. What one call counts:
//   total()                  N(N−1)/2 unique pairs
//   total_full_recompute()   N² ordered pairs (the paper's count: its one-thread-per-particle
//                            kernel evaluates each pair twice) and, beside it, N(N−1)/2 unique
//   delta(), one particle    N−1 ΔU pairs (each evaluated at the old and at the new position)
//   translate(), K trials    K·(N−1) ΔU pairs (likewise two evaluations each), K attempted moves
//   DirectSum (Laplace)      N(N−1) ordered pairs, targets = sources
// (b) MC moves per second of Simulation::run: sweeps of N translations and one pivot and one
//     crankshaft per chain, samples every 10 sweeps, no full recomputes.
// Timing: host wall clock (std::chrono) around whole calls, after a warm-up call, median of
// --reps. Every call timed returns its result (an energy, a move count, a table), so the GPU work
// is finished when it returns and the host time is fair; it includes the launch and read-back
// latencies a caller pays, as the seed's measurements did. A size whose predicted time (the last
// size's, scaled by N²) exceeds the budget is skipped ("—").
#include "bench_common.hpp"
#include "log_plot.hpp"

#include <ksum/device.hpp>
#include <ksum/direct.hpp>
#include <ksum/error.hpp>
#include <ksum/io.hpp>
#include <ksum/mc.hpp>
#include <ksum/mc_sim.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>
#include <string>
#include <vector>

using namespace ksum;
using namespace ksum::mc;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// Seed 004 Paper I, table 3.1 (millions of interactions per second): PS3 600 peak / 600
// measured, GTX 260 28000 / 8487 (limited by the largest problem its program could run), one
// i7 920 core 440 / 222. Its library recomputed all N² pairs for every move (Program 2).
constexpr double kSeedGpu = 8.487e9, kSeedGpuPeak = 2.8e10, kSeedCpu = 2.22e8, kSeedCpuPeak = 4.4e8,
                 kSeedPs3 = 6.0e8;

struct Args {
  double max_n = 1e6;
  std::vector<std::int64_t> sizes{1000, 3000, 10000, 30000, 100000, 300000, 1000000};
  std::vector<int> precisions{32, 64};
  double budget = 3, sim_budget = 10, phi = 0.05;
  int reps = 3, threads = 0;
  int batch = 0; // translate() trials per GPU batch; 0: the engine's choice
  bool sim = true;
  bool cpu = true; // --gpu-only: the CPU series are left out
  std::string json, png;
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Timing {
  double seconds = 0; // median per call
  int reps = 0;       // timed calls after the warm-up (0: only the warm-up call, taken as is)
};

// A warm-up call, then up to `reps` timed calls while the time spent stays within `budget`.
template <class F> Timing measure(F &&f, int reps, double budget) {
  auto t0 = Clock::now();
  f();
  const double first = seconds_since(t0);
  double spent = first;
  std::vector<double> ts;
  while (static_cast<int>(ts.size()) < reps && spent < budget) {
    t0 = Clock::now();
    f();
    ts.push_back(seconds_since(t0));
    spent += ts.back();
  }
  if (ts.empty())
    return {first, 0};
  std::sort(ts.begin(), ts.end());
  return {ts[ts.size() / 2], static_cast<int>(ts.size())};
}

ModelOptions model_options(std::int64_t n, double phi) {
  ModelOptions o;
  o.monomers = std::min<std::int64_t>(100, std::max<std::int64_t>(1, n / 2));
  o.chains = std::max<std::int64_t>(1, n / (2 * o.monomers));
  o.monomer_radius = o.counterion_radius = 2;
  o.bond_length = 5;
  o.boundary = Boundary::sphere;
  // φ = N (4/3)πR³ / V with N = 2 × monomers.
  o.monomer_density = phi / (2 * 4.0 / 3.0 * std::numbers::pi * 8.0);
  o.seed = 7;
  return o;
}

Potential potential() {
  Potential p;
  p.electrostatics = Electrostatics::coulomb;
  p.bjerrum = 7.14;
  p.short_range = ShortRange::hard_sphere;
  p.bond = BondKind::harmonic;
  p.bond_k = 0.5;
  p.bond_r0 = 5;
  return p;
}

// One row of (a): a series' rate at one size; rate 0 and a note when skipped or failed.
struct Rate {
  std::string series, note;
  int precision = 0;
  std::int64_t n = 0;
  double seconds = 0, per_call = 0, rate = 0, moves_per_second = 0;
  int reps = 0;
};

Rate row(const std::string &series, int precision, std::int64_t n, const std::string &note = "") {
  Rate r;
  r.series = series;
  r.precision = precision;
  r.n = n;
  r.note = note;
  return r;
}

struct Series {
  std::string key, label, unit;
  bool quadratic; // cost per call ∝ N²: skip by prediction
};

const std::vector<Series> &series_list() {
  static const std::vector<Series> s{
      {"cpu1_total", "CPU 1 core total()", "unique pairs/s", true},
      {"cpu_total", "CPU all cores total()", "unique pairs/s", true},
      {"cpu_translate", "CPU all cores translate()", "ΔU pairs/s", false},
      {"gpu_full", "GPU total_full_recompute()", "ordered pairs/s (N²)", true},
      {"gpu_full_unique", "GPU total_full_recompute()", "unique pairs/s", true},
      {"gpu_total", "GPU total()", "unique pairs/s", true},
      {"gpu_delta", "GPU delta(), 1 particle", "ΔU pairs/s", false},
      {"gpu_translate", "GPU translate()", "ΔU pairs/s", false},
      {"gpu_direct", "GPU DirectSum laplace", "ordered pairs/s", true},
      {"cpu_direct", "CPU all cores DirectSum laplace", "ordered pairs/s", true}};
  return s;
}

struct Bench {
  Args a;
  bool gpu = false;
  std::string device = "CPU";
  json out;
  std::map<std::int64_t, Model> models;
  std::vector<Rate> rates;
  // Per series and precision: the last measured (N, seconds per call), for the skip prediction.
  std::map<std::pair<std::string, int>, std::pair<std::int64_t, double>> last;

  const Model &model(std::int64_t n) {
    auto it = models.find(n);
    if (it == models.end()) {
      const auto t0 = Clock::now();
      it = models.emplace(n, build_polyelectrolyte(model_options(n, a.phi))).first;
      fmt::print("model N = {}: {} chains × {} monomers + {} counter-ions, sphere R = {:.0f} Å, "
                 "built in {:.2f} s\n",
                 it->second.system.size(), it->second.chains, it->second.monomers,
                 it->second.system.size() - it->second.monomer_count(), it->second.cell.radius,
                 seconds_since(t0));
    }
    return it->second;
  }

  // The predicted seconds of one call (quadratic series), or 0 when unknown.
  double predicted(const std::string &key, int prec, std::int64_t n) const {
    const auto it = last.find({key, prec});
    if (it == last.end())
      return 0;
    const double f = static_cast<double>(n) / static_cast<double>(it->second.first);
    return it->second.second * f * f;
  }

  bool skip(const std::string &key, int prec, std::int64_t n, double budget) {
    const double p = predicted(key, prec, n);
    if (p <= budget)
      return false;
    rates.push_back(row(key, prec, n, fmt::format("skipped: {:.0f} s predicted", p)));
    return true;
  }

  template <class F>
  void record(const std::string &key, int prec, std::int64_t n, double per_call, F &&call,
              double moves_per_call = 0) {
    Rate r = row(key, prec, n);
    r.per_call = per_call;
    try {
      const Timing t = measure(call, a.reps, a.budget);
      r.seconds = t.seconds;
      r.reps = t.reps;
      r.rate = per_call / t.seconds;
      r.moves_per_second = moves_per_call / t.seconds;
      last[{key, prec}] = {n, t.seconds};
    } catch (const std::exception &e) {
      r.note = fmt::format("error: {}", e.what());
    }
    rates.push_back(r);
  }

  template <class T> void interactions(std::int64_t n) {
    constexpr int prec = sizeof(T) * 8;
    const Model &m = model(n);
    const System &s = m.system;
    const double nd = static_cast<double>(n), unique = nd * (nd - 1) / 2;
    const int all = a.threads > 0 ? a.threads : max_threads();
    const auto engine = [&](Backend b, int threads) {
      Engine<T> e({.potential = potential(), .cell = m.cell, .backend = b, .threads = threads, .batch = a.batch});
      e.set_system(s);
      return e;
    };
    // The per-particle steps Simulation uses by default: monomers 1 Å, ions 4 Å.
    std::vector<double> step(static_cast<std::size_t>(n), 4.0);
    for (std::int64_t i = 0; i < m.monomer_count(); ++i)
      step[static_cast<std::size_t>(i)] = 1.0;
    // translate(): K trials per call, calibrated so that a call takes about a tenth of the budget:
    // a first call of 256 trials sets the engine up (buffers, the steps sent), a second of 4096
    // measures the rate (calibrating on the first made calls of ~10 batches at N = 10^6, whose
    // fixed cost then weighed on the rate).
    const auto translate_series = [&](Engine<T> &e, const std::string &key) {
      TranslateParams tp{.seed = 3, .count = 256, .step = step};
      e.translate(tp);
      tp.first = 256;
      tp.count = 4096;
      const auto t0 = Clock::now();
      e.translate(tp);
      const double per_move = seconds_since(t0) / 4096;
      tp.first = 256 + 4096;
      tp.count = std::clamp<std::int64_t>(static_cast<std::int64_t>(0.1 * a.budget / per_move), 256,
                                          std::int64_t(1) << 26);
      record(
          key, prec, n, static_cast<double>(tp.count) * (nd - 1),
          [&] {
            e.translate(tp);
            tp.first += static_cast<std::uint64_t>(tp.count);
          },
          static_cast<double>(tp.count));
    };

    if (a.cpu && !skip("cpu1_total", prec, n, a.budget)) {
      auto e = engine(Backend::cpu, 1);
      record("cpu1_total", prec, n, unique, [&] { e.total(); });
    }
    if (a.cpu && !skip("cpu_total", prec, n, a.budget)) {
      auto e = engine(Backend::cpu, all);
      record("cpu_total", prec, n, unique, [&] { e.total(); });
    }
    if (a.cpu) {
      auto e = engine(Backend::cpu, all);
      translate_series(e, "cpu_translate");
    }
    if (a.cpu && !skip("cpu_direct", prec, n, a.budget))
      direct<T>(s, Backend::cpu, all, "cpu_direct");
    if (!gpu)
      return;
    try {
      auto e = engine(Backend::cuda, 0);
      if (!skip("gpu_full", prec, n, a.budget)) {
        record("gpu_full", prec, n, nd * nd, [&] { e.total_full_recompute(s); });
        Rate u = rates.back();
        u.series = "gpu_full_unique";
        u.per_call = unique;
        u.rate = u.seconds > 0 ? unique / u.seconds : 0;
        rates.push_back(u);
      }
      if (!skip("gpu_total", prec, n, a.budget))
        record("gpu_total", prec, n, unique, [&] { e.total(); });
      // delta() of one counter-ion moved by (0.5, −0.3, 0.2) Å: K calls per timed call.
      const std::int64_t p = n - 1;
      const Move mv{
          .particles = {p},
          .xyz = {s.x[std::size_t(p)] + 0.5, s.y[std::size_t(p)] - 0.3, s.z[std::size_t(p)] + 0.2}};
      auto t0 = Clock::now();
      for (int k = 0; k < 8; ++k)
        e.delta(mv);
      const double one = seconds_since(t0) / 8;
      const auto calls =
          std::clamp<std::int64_t>(static_cast<std::int64_t>(0.05 * a.budget / one), 8, 100000);
      record(
          "gpu_delta", prec, n, static_cast<double>(calls) * (nd - 1),
          [&] {
            for (std::int64_t k = 0; k < calls; ++k)
              e.delta(mv);
          },
          static_cast<double>(calls));
      translate_series(e, "gpu_translate");
    } catch (const std::exception &ex) {
      rates.push_back(row("gpu_total", prec, n, fmt::format("error: {}", ex.what())));
    }
    if (!skip("gpu_direct", prec, n, a.budget))
      direct<T>(s, Backend::cuda, 0, "gpu_direct");
  }

  // The project's direct sum, Laplace 1/r, targets = sources at the particles, charges as weights.
  template <class T> void direct(const System &s, Backend b, int threads, const std::string &key) {
    constexpr int prec = sizeof(T) * 8;
    const std::int64_t n = s.size();
    try {
      Table<T> pts(n, 3), w(n, 1);
      for (std::int64_t i = 0; i < n; ++i) {
        pts(i, 0) = static_cast<T>(s.x[std::size_t(i)]);
        pts(i, 1) = static_cast<T>(s.y[std::size_t(i)]);
        pts(i, 2) = static_cast<T>(s.z[std::size_t(i)]);
        w(i, 0) = static_cast<T>(s.charge[std::size_t(i)]);
      }
      DirectSum<T> plan({.kernel = Kernel::laplace, .backend = b, .threads = threads});
      plan.set_points(pts);
      const double nd = static_cast<double>(n);
      record(key, prec, n, nd * (nd - 1), [&] { plan.execute(w); });
    } catch (const std::exception &e) {
      rates.push_back(row(key, prec, n, fmt::format("error: {}", e.what())));
    }
  }

  const Rate *find(const std::string &key, int prec, std::int64_t n) const {
    for (const Rate &r : rates)
      if (r.series == key && r.precision == prec && r.n == n)
        return &r;
    return nullptr;
  }

  std::string cell(const std::string &key, int prec, std::int64_t n) const {
    const Rate *r = find(key, prec, n);
    if (!r)
      return "";
    if (r->rate > 0)
      return fmt::format("{:.3e}", r->rate);
    return r->note.starts_with("skipped") ? "—" : "error";
  }

  std::vector<Series> shown() const {
    std::vector<Series> v;
    for (const Series &s : series_list())
      if (gpu || !s.key.starts_with("gpu"))
        v.push_back(s);
    return v;
  }

  void print_interactions(int prec) {
    const auto cols = shown();
    fmt::print("\n(a) pair interactions per second vs N, f{} ({}; median of {} after a warm-up)\n",
               prec, device, a.reps);
    std::string head = "| N |", rule = "|---|";
    for (const Series &s : cols) {
      head += fmt::format(" {} [{}] |", s.label, s.unit);
      rule += "---|";
    }
    fmt::print("{}\n{}\n", head, rule);
    for (std::int64_t n : a.sizes) {
      std::string row = fmt::format("| {} |", n);
      for (const Series &s : cols)
        row += fmt::format(" {} |", cell(s.key, prec, n));
      fmt::print("{}\n", row);
    }
    for (const Rate &r : rates)
      if (r.precision == prec && r.note.starts_with("error"))
        fmt::print("  {} N = {}: {}\n", r.series, r.n, r.note);
  }

  // The ΔU path against the direct sum of the same backend, and MC moves/s against the seed's
  // GTX 260 (8.487e9 interactions/s, N² of them per move: 8.487e9 / N² moves/s).
  void print_ratios(int prec) {
    const std::string b = gpu ? "gpu" : "cpu";
    fmt::print("\nΔU path vs the direct sum ({}, f{}); goal ≥ 0.5 at N ≥ 1e5 (ΔU pairs: one per "
               "particle per trial; evaluations: two, old and new position)\n",
               gpu ? "GPU" : "CPU all cores", prec);
    fmt::print("| N | translate() / DirectSum [ΔU pairs] | [evaluations] | delta() / DirectSum "
               "[ΔU pairs] | translate() moves/s | seed GTX 260 moves/s | ratio vs seed |\n"
               "|---|---|---|---|---|---|---|\n");
    for (std::int64_t n : a.sizes) {
      const Rate *t = find(b + "_translate", prec, n), *d = find(b + "_direct", prec, n),
                 *dl = find("gpu_delta", prec, n);
      if (!t)
        continue;
      const double seed = kSeedGpu / (static_cast<double>(n) * static_cast<double>(n));
      const bool dr = d && d->rate > 0 && t->rate > 0;
      const double ratio = dr ? t->rate / d->rate : 0;
      const double dratio = d && dl && d->rate > 0 && dl->rate > 0 ? dl->rate / d->rate : 0;
      const std::string goal = n >= 100000 && dr ? (ratio >= 0.5 ? " (met)" : " (MISSED)") : "";
      const std::string sgoal = t->moves_per_second > 0
                                    ? (t->moves_per_second / seed >= 100 ? " (met)" : " (MISSED)")
                                    : "";
      fmt::print("| {} | {}{} | {} | {} | {:.3e} | {:.3e} | {:.0f}{} |\n", n,
                 dr ? fmt::format("{:.2f}", ratio) : "—", goal,
                 dr ? fmt::format("{:.2f}", 2 * ratio) : "—",
                 dratio > 0 ? fmt::format("{:.3f}", dratio) : "—", t->moves_per_second, seed,
                 t->moves_per_second / seed, gpu ? sgoal : "");
      out["ratios"].push_back({{"n", n},
                               {"precision", prec},
                               {"backend", b},
                               {"translate_over_direct_pairs", ratio},
                               {"translate_over_direct_evaluations", 2 * ratio},
                               {"delta_over_direct_pairs", dratio},
                               {"translate_moves_per_second", t->moves_per_second},
                               {"seed_moves_per_second", seed},
                               {"moves_ratio_vs_seed", t->moves_per_second / seed}});
    }
  }

  double best(const std::string &key, int prec, std::int64_t *at = nullptr) const {
    double b = 0;
    for (const Rate &r : rates)
      if (r.series == key && r.precision == prec && r.rate > b) {
        b = r.rate;
        if (at)
          *at = r.n;
      }
    return b;
  }

  void print_seed_table() {
    fmt::print("\nSeed table 3.1 beside ours (interactions/s; seed: PS3, GTX 260 and one i7 920 "
               "core; ours: the best over N)\n| system | seed peak | seed measured | ours | "
               "ours / seed measured |\n|---|---|---|---|---|\n");
    fmt::print("| PS3 (Cell) | {:.3e} | {:.3e} | | |\n", kSeedPs3, kSeedPs3);
    fmt::print("| GTX 260, N² per call | {:.3e} | {:.3e} | | |\n", kSeedGpuPeak, kSeedGpu);
    fmt::print("| i7 920, one core | {:.3e} | {:.3e} | | |\n", kSeedCpuPeak, kSeedCpu);
    struct Row {
      std::string key, what;
      double seed;
    };
    const std::vector<Row> rows{{"gpu_full", "GPU total_full_recompute(), N² per call", kSeedGpu},
                                {"gpu_total", "GPU total(), unique pairs", kSeedGpu},
                                {"gpu_translate", "GPU translate(), ΔU pairs", kSeedGpu},
                                {"cpu1_total", "CPU 1 core total(), unique pairs", kSeedCpu},
                                {"cpu_total", "CPU all cores total(), unique pairs", kSeedCpu}};
    for (int prec : a.precisions)
      for (const Row &r : rows) {
        std::int64_t at = 0;
        const double v = best(r.key, prec, &at);
        if (v <= 0)
          continue;
        fmt::print("| ours: {} f{} ({}, N = {}) | | | {:.3e} | {:.1f} |\n", r.what, prec,
                   r.key.starts_with("gpu") ? device : "CPU", at, v, v / r.seed);
        out["seed_table"].push_back({{"series", r.key},
                                     {"precision", prec},
                                     {"n", at},
                                     {"rate", v},
                                     {"seed_measured", r.seed},
                                     {"ratio", v / r.seed}});
      }
  }

  void simulations() {
    std::vector<Backend> backends{Backend::cpu};
    if (gpu)
      backends.push_back(Backend::cuda);
    fmt::print("\n(b) MC moves per second through Simulation::run ({}; sweeps of N translations "
               "and per chain one pivot and one crankshaft; budget {} s per row)\n",
               device, a.sim_budget);
    fmt::print("| N | backend | precision | set-up [s] | sweeps | moves | time [s] | moves/s | "
               "seed GTX 260 moves/s | ratio vs seed | translate acceptance |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::map<std::pair<Backend, int>, std::pair<std::int64_t, double>> prev; // N, s per sweep
    for (std::int64_t n : a.sizes)
      for (Backend b : backends)
        for (int prec : a.precisions) {
          const std::string bn(to_string(b));
          const double seed = kSeedGpu / (static_cast<double>(n) * static_cast<double>(n));
          json row{{"n", n}, {"backend", bn}, {"precision", prec}};
          if (const auto it = prev.find({b, prec}); it != prev.end()) {
            const double f = static_cast<double>(n) / static_cast<double>(it->second.first);
            const double p = it->second.second * f * f;
            if (p > a.sim_budget) {
              fmt::print("| {} | {} | f{} | | — | | | skipped: {:.0f} s predicted | {:.3e} | | "
                         "|\n",
                         n, bn, prec, p, seed);
              row["skipped_predicted_seconds"] = p;
              out["simulation"].push_back(row);
              continue;
            }
          }
          try {
            SimulationOptions o;
            o.potential = potential();
            o.sample.every = 10;
            o.sample.recompute_every = 0;
            o.seed = 11;
            o.execution.backend = b;
            o.execution.precision = prec == 32 ? Precision::float32 : Precision::float64;
            o.execution.threads = b == Backend::cpu ? a.threads : 0;
            auto t0 = Clock::now();
            Simulation sim(model(n), o);
            const double setup = seconds_since(t0);
            // The first sweep is the warm-up and the calibration; then as many as fit the budget.
            t0 = Clock::now();
            sim.run(1);
            const double one = seconds_since(t0);
            const auto sweeps = static_cast<std::int64_t>(
                std::clamp(std::floor(0.5 * a.sim_budget / one), 0.0, 1000.0));
            const Summary s0 = sim.summary();
            t0 = Clock::now();
            if (sweeps > 0)
              sim.run(sweeps);
            const double t = sweeps > 0 ? seconds_since(t0) : one;
            const Summary s1 = sim.summary();
            const std::int64_t moves = sweeps > 0 ? s1.moves - s0.moves : s0.moves;
            const double rate = static_cast<double>(moves) / t;
            prev[{b, prec}] = {n,
                               t / static_cast<double>(std::max<std::int64_t>(1, sweeps)) + setup};
            fmt::print("| {} | {} | f{} | {:.2f} | {} | {} | {:.3f} | {:.3e} | {:.3e} | {:.0f} | "
                       "{:.3f} |\n",
                       n, bn, prec, setup, std::max<std::int64_t>(1, sweeps), moves, t, rate, seed,
                       rate / seed, s1.acceptance[0].ratio());
            row.update({{"setup_seconds", setup},
                        {"sweeps", std::max<std::int64_t>(1, sweeps)},
                        {"moves", moves},
                        {"seconds", t},
                        {"moves_per_second", rate},
                        {"seed_moves_per_second", seed},
                        {"ratio_vs_seed", rate / seed},
                        {"translate_acceptance", s1.acceptance[0].ratio()},
                        {"pivot_acceptance", s1.acceptance[1].ratio()},
                        {"crankshaft_acceptance", s1.acceptance[2].ratio()},
                        {"energy", s1.energy}});
          } catch (const std::exception &e) {
            fmt::print("| {} | {} | f{} | | | | | error: {} | | | |\n", n, bn, prec, e.what());
            row["error"] = e.what();
          }
          out["simulation"].push_back(row);
        }
  }

  // The curves of (a) for one precision (bench/log_plot.hpp) with the seed's two measured
  // rates as dashed levels.
  void plot(const std::string &path, int prec) {
    std::vector<bench::Curve> cs;
    double x0 = INFINITY, x1 = -INFINITY;
    for (const Series &s : shown()) {
      if (s.key == "gpu_full_unique")
        continue;
      bench::Curve c;
      c.label = s.label + " [" + s.unit + "]";
      for (const Rate &r : rates)
        if (r.series == s.key && r.precision == prec && r.rate > 0) {
          c.x.push_back(std::log10(static_cast<double>(r.n)));
          c.y.push_back(std::log10(r.rate));
          x0 = std::min(x0, c.x.back());
          x1 = std::max(x1, c.x.back());
        }
      if (!c.x.empty())
        cs.push_back(c);
    }
    if (!(x1 > x0))
      return;
    for (const auto &[label, v] : {std::pair{"seed GTX 260 measured", kSeedGpu},
                                   std::pair{"seed i7 920 core measured", kSeedCpu}})
      cs.push_back({label, {x0, x1}, {std::log10(v), std::log10(v)}, true});
    const std::string what = bench::write_log_plot(path, cs);
    if (!what.empty())
      fmt::print("\nplot {}: N across, interactions/s up; {}\n", path, what);
  }

  void write_rates_json() {
    for (const Rate &r : rates) {
      json j{{"series", r.series}, {"precision", r.precision}, {"n", r.n}};
      if (r.rate > 0) {
        const auto &sl = series_list();
        const auto it =
            std::find_if(sl.begin(), sl.end(), [&](const Series &s) { return s.key == r.series; });
        j.update({{"seconds_per_call", r.seconds},
                  {"interactions_per_call", r.per_call},
                  {"rate", r.rate},
                  {"unit", it != sl.end() ? it->unit : ""},
                  {"timed_calls", r.reps}});
        if (r.moves_per_second > 0)
          j["moves_per_second"] = r.moves_per_second;
      } else {
        j["note"] = r.note;
      }
      out["interactions"].push_back(j);
    }
  }
};

std::int64_t parse_count(const std::string &s) {
  return static_cast<std::int64_t>(std::llround(std::stod(s)));
}

} // namespace

int main(int argc, char **argv) {
  Bench b;
  Args &a = b.a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) {
        fmt::print(stderr, "mc_bench: {} needs a value\n", s);
        std::exit(2);
      }
      return std::string(argv[++i]);
    };
    try {
      if (s == "--max-n")
        a.max_n = std::stod(next());
      else if (s == "--sizes") {
        a.sizes.clear();
        for (const auto &v : bench::split(next()))
          a.sizes.push_back(parse_count(v));
      } else if (s == "--precision") {
        a.precisions.clear();
        for (const auto &v : bench::split(next()))
          a.precisions.push_back(parse_precision(v) == Precision::float32 ? 32 : 64);
      } else if (s == "--budget")
        a.budget = std::stod(next());
      else if (s == "--sim-budget")
        a.sim_budget = std::stod(next());
      else if (s == "--phi")
        a.phi = std::stod(next());
      else if (s == "--reps")
        a.reps = std::stoi(next());
      else if (s == "--threads")
        a.threads = std::stoi(next());
      else if (s == "--no-sim")
        a.sim = false;
      else if (s == "--batch")
        a.batch = std::stoi(next());
      else if (s == "--gpu-only")
        a.cpu = false;
      else if (s == "--json")
        a.json = next();
      else if (s == "--png")
        a.png = next();
      else
        throw std::invalid_argument("unknown option " + s);
    } catch (const std::exception &e) {
      fmt::print(stderr,
                 "mc_bench: {}\nusage: mc_bench [--max-n 1e6] [--sizes 1e3,3e3,...] "
                 "[--precision f32,f64] [--budget S] [--sim-budget S] [--phi 0.05] [--reps R] "
                 "[--threads T] [--batch B] [--no-sim] [--gpu-only] [--json FILE] [--png FILE]\n",
                 e.what());
      return 2;
    }
  }
  std::erase_if(a.sizes, [&](std::int64_t n) { return n < 2 || static_cast<double>(n) > a.max_n; });
  const auto gs = gpus();
  b.gpu = !gs.empty();
  b.device = b.gpu ? gs[0].name : "CPU only, no GPU visible";
  const int all = a.threads > 0 ? a.threads : max_threads();
  fmt::print("# mc_bench: {}; CPU {} threads; sizes {}; budget {} s per measurement\n", b.device,
             all, fmt::join(a.sizes, ", "), a.budget);
  b.out["ksum_version"] = version();
  b.out["device"] = b.device;
  b.out["threads"] = all;
  b.out["budget_seconds"] = a.budget;
  b.out["volume_fraction"] = a.phi;
  b.out["timing"] = "host std::chrono around calls that return their results, warm-up call, "
                    "median of the timed calls";
  b.out["seed"] = {{"gpu_gtx260_measured", kSeedGpu},
                   {"gpu_gtx260_peak", kSeedGpuPeak},
                   {"cpu_i7_core_measured", kSeedCpu},
                   {"cpu_i7_core_peak", kSeedCpuPeak},
                   {"ps3", kSeedPs3}};
  try {
    for (std::int64_t n : a.sizes)
      for (int prec : a.precisions) {
        if (prec == 32)
          b.interactions<float>(n);
        else
          b.interactions<double>(n);
      }
    for (int prec : a.precisions) {
      b.print_interactions(prec);
      b.print_ratios(prec);
    }
    b.print_seed_table();
    b.write_rates_json();
    if (!a.png.empty())
      for (int prec : a.precisions)
        b.plot(bench::png_path(a.png, prec), prec);
    if (a.sim)
      b.simulations();
  } catch (const std::exception &e) {
    fmt::print(stderr, "mc_bench: {}\n", e.what());
    if (!a.json.empty())
      std::ofstream(a.json) << b.out.dump(2) << "\n";
    return 1;
  }
  if (!a.json.empty())
    std::ofstream(a.json) << b.out.dump(2) << "\n";
  return 0;
}
