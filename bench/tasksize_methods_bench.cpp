// The task-size model inside ksum (issue 24 item 3): the CPU direct sum's targets per task as the
// model chooses it (include/ksum/tasksize.hpp: direct_cpu_block, from a fresh calibration of the
// loop-chunk overhead on T threads and of C(S) on one thread) against an exhaustive sweep of the
// block size, on each thread count; the goal is the chosen size within 10 % of the best measured.
//   tasksize_methods_bench [--threads 1,2,16] [--m 20000] [--n 20000] [--pum-n 20000]
//                          [--pum-m 200000] [--fmm-n 100000] [--fgt-n 30000] [--hermite-n 300000]
//                          [--fmm2d-n 200000] [--reps 3] [--json FILE]
// (--m 0 leaves the direct sum's sweep out, --pum-n 0 the PUM sweeps, --pum-m 0 the evaluation's.)
// These sweeps take powers of 4. Every time is the fastest of --reps runs, round-robin over the
// sizes: on the shared 16-core host the machine's speed drifted by ±10 % during a sweep run size
// after size. The
// PUM sweeps: points per task of evaluate() (PumOptions::eval_chunk) and patches per task of the
// fits (fit_chunk), the model's choice (0) against fixed sizes; the loop overhead measured for each
// T is written to this machine's cache (KSUM_CACHE_DIR, see tasksize.hpp) first, as `ksum tune`
// would, since those paths read it there. The 3D FMM sweeps (--fmm-n 0 leaves them out): target
// leaves per task of the near pass, blocks per task of the M2L, boxes per task of the other passes
// (DirectOptions::fmm_near_chunk, fmm_m2l_chunk, fmm_pass_chunk). The FGT sweep (--fgt-n 0 leaves
// it out): target boxes per task of its evaluation loop (GaussOptions::box_chunk). The 2D FMM
// sweeps
// (--fmm2d-n 0 leaves them out): the downward pass's subtree level and the near field's leaves per
// task (Fmm2dOptions::subtree_level, near_chunk). Laplace 3D, double, m targets ≠ n sources,
// uniform in the unit cube; each time is the fastest of
// --reps calls of execute() on a plan built once (set-up excluded). Sizes: powers of two from 8 to
// m, the old fixed 32, and the chosen one.
#include "bench_common.hpp"

#include <ksum/datasets.hpp>
#include <ksum/direct.hpp>
#include <ksum/error.hpp>
#include <ksum/fgt.hpp>
#include <ksum/fmm2d.hpp>
#include <ksum/pum.hpp>
#include <ksum/tasksize.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <omp.h>
#include <random>
#include <string>
#include <vector>

namespace ts = ksum::tasksize;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  std::vector<int> threads;
  std::int64_t m = 20000, n = 20000;
  std::int64_t pum_n = 20000, pum_m = 200000; // PUM evaluation: data points, evaluation points
  std::int64_t fmm_n = 100000;                // 3D FMM (Laplace, 1e-6): points
  std::int64_t fgt_n = 30000;                 // fast Gauss transform (3D, h = 0.1, 1e-6): points
  std::int64_t hermite_n = 300000; // its Hermite loop's sweep (2D, h = 0.05, 1e-6): points
  std::int64_t fmm2d_n = 200000;   // 2D FMM (harmonic, 1e-6): points
  int reps = 3;
  std::string json;
};

// Powers of 4 from 1 to hi, and hi (the sweeps of the PUM and FMM sizes).
std::vector<double> powers_of_four(double hi) {
  std::vector<double> v;
  for (double x = 1; x < hi; x *= 4)
    v.push_back(x);
  v.push_back(hi);
  return v;
}

// The fastest of `reps` values of run(k) (the seconds it returns) for each k < count, the calls
// taken round by round over all k (a drift of the machine's speed during a sweep then falls on
// every k alike), each round in a new random order: a fixed order gave each k the same
// predecessor, and a run after a one-chunk plan (one thread busy, the others idle) was measured
// 12 % slower on the 16-core host than the same size elsewhere in the round.
template <class F>
std::vector<double> fastest_round_robin_of(std::size_t count, int reps, F &&run) {
  std::vector<double> best(count, std::numeric_limits<double>::infinity());
  std::vector<std::size_t> order(count);
  for (std::size_t k = 0; k < count; ++k)
    order[k] = k;
  std::mt19937_64 rng(12345);
  for (int r = 0; r < reps; ++r) {
    std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t k : order)
      best[k] = std::min(best[k], run(k));
  }
  return best;
}

// The same for the wall time of run(k).
template <class F> std::vector<double> fastest_round_robin(std::size_t count, int reps, F &&run) {
  return fastest_round_robin_of(count, reps, [&](std::size_t k) {
    const auto t0 = Clock::now();
    run(k);
    return std::chrono::duration<double>(Clock::now() - t0).count();
  });
}

// The rows of a sweep (the model's size and the old default marked), its summary line ("<call>
// with <option> chose S = …", option e.g. "box_chunk = 0"), and its JSON record.
nlohmann::json report_sweep(const std::vector<double> &sizes, const std::vector<double> &times,
                            double t_model, std::int64_t chosen, std::int64_t old_default, int T,
                            const std::string &call, const std::string &option) {
  const auto it = std::min_element(times.begin(), times.end());
  const double best = std::min(*it, t_model);
  const auto best_at =
      static_cast<std::int64_t>(sizes[static_cast<std::size_t>(it - times.begin())]);
  double t_default = 0;
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const auto s = static_cast<std::int64_t>(sizes[k]);
    fmt::print("| {}{} | {:.4g} | {:.3f} |\n", s,
               s == chosen        ? " (the model's size, fixed)"
               : s == old_default ? " (old default)"
                                  : "",
               times[k], times[k] / best);
    if (s == old_default)
      t_default = times[k];
    rows.push_back({{"size", s}, {"seconds", times[k]}});
  }
  const double ratio = t_model / best;
  fmt::print("\n{} with {} chose S = {}: {:.4g} s, {:.3f}× the best measured (S = {}); goal "
             "≤ 1.10: {}; the old fixed S = {}: {:.3f}×\n\n",
             call, option, chosen, t_model, ratio, best_at, ratio <= 1.10 ? "met" : "MISSED",
             old_default, t_default / best);
  return {
      {"threads", T},         {"chosen", chosen},          {"chosen_seconds", t_model},
      {"best_size", best_at}, {"chosen_over_best", ratio}, {"default_over_best", t_default / best},
      {"sweep", rows}};
}

// One sweep over plans that each run with one fixed size (make_fixed(size)), the model's plan
// (its size 0) last: the model's plan is executed once more first (three executes in all with the
// two of its making: its default, its learning run or probe, its kept size), then all plans
// --reps times round-robin; phase(stats) is the time the size changes, chosen_of(stats) the
// size the model used.
template <class Plan, class In, class MakeFixed, class ChosenOf, class Phase>
nlohmann::json plan_sweep(const Args &a, int T, const In &input, std::vector<double> sizes,
                          MakeFixed make_fixed, std::unique_ptr<Plan> model, ChosenOf chosen_of,
                          Phase phase, std::int64_t old_default, const char *option) {
  sizes.push_back(static_cast<double>(old_default)); // the old constant is always measured
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::vector<std::unique_ptr<Plan>> plans;
  for (double s : sizes)
    plans.push_back(make_fixed(s));
  (void)model->execute(input);
  const std::int64_t chosen = chosen_of(model->stats());
  plans.push_back(std::move(model));
  std::vector<double> times = fastest_round_robin_of(plans.size(), a.reps, [&](std::size_t k) {
    (void)plans[k]->execute(input);
    return phase(plans[k]->stats());
  });
  const double t_model = times.back();
  times.pop_back();
  return report_sweep(sizes, times, t_model, chosen, old_default, T, "execute()", option);
}

// PUM evaluation (PumOptions::eval_chunk): the points per task that evaluate() chooses (0: the
// model, from the cost of the first 64 points and the cached loop overhead, or kDefaultOverhead
// without a cache) against a sweep of fixed chunks; Matérn C4 (eps 10) on Halton points in 2D,
// the evaluation points a second Halton set. The chosen run's time includes its one-thread prefix.
nlohmann::json pum_eval_sweep(const Args &a) {
  const auto x = ksum::datasets::halton(a.pum_n, 2);
  ksum::Table<double> f(a.pum_n, 1);
  for (std::int64_t i = 0; i < a.pum_n; ++i)
    f(i, 0) = ksum::datasets::franke(x(i, 0), x(i, 1));
  auto y = ksum::datasets::halton(a.pum_m + 1000, 2);
  ksum::Table<double> g(a.pum_m, 2);
  for (std::int64_t i = 0; i < a.pum_m; ++i)
    for (int k = 0; k < 2; ++k)
      g(i, k) = 0.01 + 0.98 * y(i + 1000, k); // inside the data's box
  fmt::print("## PUM evaluation: {} data points, {} evaluation points (2D, Matérn C4)\n\n", a.pum_n,
             a.pum_m);
  nlohmann::json out = nlohmann::json::object();
  for (int T : a.threads) {
    const auto make = [&](std::int64_t chunk) {
      auto p =
          std::make_unique<ksum::PumInterpolant>(ksum::PumOptions{.kernel = ksum::Kernel::matern4,
                                                                  .eps = 10.0,
                                                                  .threads = T,
                                                                  .eval_chunk = chunk,
                                                                  .backend = ksum::Backend::cpu});
      p->set_data(x, f);
      (void)p->evaluate(g); // warm-up (and the model's choice)
      return p;
    };
    auto model = make(0);
    const std::int64_t chosen = model->last_eval_chunk();
    std::vector<double> sizes = powers_of_four(static_cast<double>(a.pum_m));
    sizes.push_back(256); // the old fixed chunk
    sizes.push_back(static_cast<double>(chosen));
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    fmt::print("### {} thread{}\n\n| points per task S | time [s] | / best |\n|---|---|---|\n", T,
               T == 1 ? "" : "s");
    std::vector<std::unique_ptr<ksum::PumInterpolant>> plans;
    for (double s : sizes)
      plans.push_back(make(static_cast<std::int64_t>(s)));
    plans.push_back(std::move(model)); // last: eval_chunk = 0
    std::vector<double> times = fastest_round_robin(
        plans.size(), a.reps, [&](std::size_t k) { (void)plans[k]->evaluate(g); });
    const double t_model = times.back();
    times.pop_back();
    out["threads_" + std::to_string(T)] =
        report_sweep(sizes, times, t_model, chosen, 256, T, "evaluate()", "eval_chunk = 0");
  }
  return out;
}

// PUM fit (PumOptions::fit_chunk): the patches per task that set_data() chooses (0: the model,
// from the cost of the first 32 cells' fits) against a sweep of fixed chunks; Matérn C4 with
// LOOCV shape selection per patch on the Halton points. The chosen run's time includes its
// one-thread prefix; every time is the whole set_data() (the index too, the same for all S).
nlohmann::json pum_fit_sweep(const Args &a) {
  const auto x = ksum::datasets::halton(a.pum_n, 2);
  ksum::Table<double> f(a.pum_n, 1);
  for (std::int64_t i = 0; i < a.pum_n; ++i)
    f(i, 0) = ksum::datasets::franke(x(i, 0), x(i, 1));
  fmt::print("## PUM fit: {} data points (2D, Matérn C4, LOOCV per patch)\n\n", a.pum_n);
  nlohmann::json out = nlohmann::json::object();
  for (int T : a.threads) {
    std::int64_t patches = 0;
    const auto fit = [&](std::int64_t chunk, std::int64_t *used) {
      ksum::PumInterpolant p({.kernel = ksum::Kernel::matern4,
                              .loocv = true,
                              .threads = T,
                              .fit_chunk = chunk,
                              .backend = ksum::Backend::cpu});
      const auto t0 = Clock::now();
      p.set_data(x, f);
      const double t = std::chrono::duration<double>(Clock::now() - t0).count();
      if (used)
        *used = p.stats().fit_chunk;
      patches = p.stats().patches + p.stats().empty_patches;
      return t;
    };
    std::int64_t chosen = 0;
    (void)fit(0, &chosen); // warm-up, the model's choice and the number of cells
    std::vector<double> sizes = powers_of_four(static_cast<double>(patches));
    sizes.push_back(16); // the old fixed chunk
    sizes.push_back(static_cast<double>(chosen));
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    fmt::print("### {} thread{} ({} cells)\n\n| patches per task S | time [s] | / best "
               "|\n|---|---|---|\n",
               T, T == 1 ? "" : "s", patches);
    // The sizes and the model (0, last); each time is the whole set_data() with the construction.
    std::vector<double> times = fastest_round_robin(sizes.size() + 1, a.reps, [&](std::size_t k) {
      (void)fit(k < sizes.size() ? static_cast<std::int64_t>(sizes[k]) : 0, nullptr);
    });
    const double t_model = times.back();
    times.pop_back();
    out["threads_" + std::to_string(T)] =
        report_sweep(sizes, times, t_model, chosen, 16, T, "set_data()", "fit_chunk = 0");
  }
  return out;
}

// The 3D FMM's CPU task sizes (DirectOptions::fmm_near_chunk, fmm_m2l_chunk, fmm_pass_chunk):
// the near pass's target leaves per task (L2P, M2P, P2P), the M2L's blocks of 16 target boxes per
// task, and the boxes per task of the upward, X-list and downward passes, that the model chooses
// from the previous execute's times (0; per level for the last two) against fixed sizes; Laplace,
// tolerance 1e-6, fmm_n uniform points, sources = targets. Each sweep varies one size (the others
// held at their old constants 4, 1, 8) and times the phases it changes (stats().seconds_near;
// seconds_m2l; seconds_upward + seconds_downward).
nlohmann::json fmm3d_sweeps(const Args &a) {
  const auto pts = ksum::datasets::uniform_cube(a.fmm_n, 47);
  std::mt19937_64 rng(48);
  std::uniform_real_distribution<double> u(-1, 1);
  ksum::Table<double> w(a.fmm_n, 1);
  for (std::int64_t i = 0; i < a.fmm_n; ++i)
    w(i, 0) = u(rng);
  fmt::print("## 3D FMM: {} points (Laplace, tolerance 1e-6, CPU)\n\n", a.fmm_n);
  nlohmann::json out = nlohmann::json::object();
  using Plan = ksum::DirectSum<double>;
  for (int T : a.threads) {
    const auto make = [&](std::int64_t near, std::int64_t m2l, std::int64_t pass) {
      ksum::DirectOptions o;
      o.method = ksum::Method::fmm;
      o.backend = ksum::Backend::cpu;
      o.tolerance = 1e-6;
      o.threads = T;
      o.fmm_near_chunk = near;
      o.fmm_m2l_chunk = m2l;
      o.fmm_pass_chunk = pass;
      auto p = std::make_unique<Plan>(o);
      p->set_points(pts);
      (void)p->execute(w);
      (void)p->execute(w);
      return p;
    };
    const auto probe = make(4, 1, 8);
    const std::int64_t boxes = probe->stats().tree_boxes;
    fmt::print("### {} thread{}: near pass (L2P, M2P, P2P; {} boxes, depth {})\n\n| target "
               "leaves per task S | near [s] | / best |\n|---|---|---|\n",
               T, T == 1 ? "" : "s", boxes, probe->stats().tree_depth);
    nlohmann::json rec = nlohmann::json::object();
    const auto sz = [](double s) { return static_cast<std::int64_t>(s); };
    rec["near_chunk"] = plan_sweep(
        a, T, w, powers_of_four(4096), [&](double s) { return make(sz(s), 1, 8); }, make(0, 1, 8),
        [](const ksum::SumStats &st) { return st.fmm_near_chunk; },
        [](const ksum::SumStats &st) { return st.seconds_near; }, 4, "fmm_near_chunk = 0");
    fmt::print("### {} thread{}: M2L\n\n| blocks of 16 target boxes per task S | M2L [s] | / "
               "best |\n|---|---|---|\n",
               T, T == 1 ? "" : "s");
    rec["m2l_chunk"] = plan_sweep(
        a, T, w, powers_of_four(256), [&](double s) { return make(4, sz(s), 8); }, make(4, 0, 8),
        [](const ksum::SumStats &st) { return st.fmm_m2l_chunk; },
        [](const ksum::SumStats &st) { return st.seconds_m2l; }, 1, "fmm_m2l_chunk = 0");
    fmt::print("### {} thread{}: upward, X-list and downward passes\n\n| boxes per task S | "
               "upward + downward [s] | / best |\n|---|---|---|\n",
               T, T == 1 ? "" : "s");
    rec["pass_chunk"] = plan_sweep(
        a, T, w, powers_of_four(1024), [&](double s) { return make(4, 1, sz(s)); }, make(4, 1, 0),
        [](const ksum::SumStats &st) { return st.fmm_pass_chunk; },
        [](const ksum::SumStats &st) { return st.seconds_upward + st.seconds_downward; }, 8,
        "fmm_pass_chunk = 0");
    out["threads_" + std::to_string(T)] = rec;
  }
  return out;
}

// The fast Gauss transform (GaussOptions::box_chunk, hermite_chunk): target boxes per task of the
// CPU evaluation loop and source boxes per task of the loop forming the Hermite expansions, that
// the model chooses from the previous execute's loop times (0) against fixed sizes; d = 3,
// h = 0.1, tolerance 1e-6, fgt_n uniform points in the unit cube, sources = targets (the Hermite
// loop's sweep: hermite_n points in the unit square, h = 0.05, where boxes form expansions; at
// 30,000 points that loop took 1–10 ms and plans of the same size differed by up to 39 %). Each
// sweep varies one size (the other at its old constant, 1 or 4) and times stats().seconds_execute
// or seconds_hermite; plans executed twice first, then --reps times round-robin.
nlohmann::json fgt_sweep(const Args &a) {
  const auto pts = ksum::datasets::uniform_cube(a.fgt_n, 49);
  std::mt19937_64 rng(50);
  std::uniform_real_distribution<double> u(0, 1);
  ksum::Table<double> w(a.fgt_n, 1);
  for (std::int64_t i = 0; i < a.fgt_n; ++i)
    w(i, 0) = u(rng);
  // The Hermite loop's sweep in 2D (at h = 0.1 in 3D every box pair is summed directly: a box
  // holds fewer points than an expansion's p³ terms).
  ksum::Table<double> pts2(a.hermite_n, 2), w2(a.hermite_n, 1);
  for (std::int64_t i = 0; i < a.hermite_n; ++i) {
    pts2(i, 0) = u(rng);
    pts2(i, 1) = u(rng);
    w2(i, 0) = u(rng);
  }
  fmt::print("## Fast Gauss transform: {} points (3D, h = 0.1, tolerance 1e-6, CPU)\n\n", a.fgt_n);
  nlohmann::json out = nlohmann::json::object();
  using Plan = ksum::GaussTransform<double>;
  for (int T : a.threads) {
    const auto make = [&](std::int64_t chunk, std::int64_t hermite, const ksum::Table<double> &z,
                          const ksum::Table<double> &q) {
      ksum::GaussOptions o;
      o.bandwidth = z.cols() == 3 ? 0.1 : 0.05;
      o.tolerance = 1e-6;
      o.method = ksum::GaussMethod::fgt;
      o.backend = ksum::Backend::cpu;
      o.threads = T;
      o.box_chunk = chunk;
      o.hermite_chunk = hermite;
      auto p = std::make_unique<Plan>(o);
      p->set_points(z);
      (void)p->execute(q);
      (void)p->execute(q);
      return p;
    };
    const auto sz = [](double s) { return static_cast<std::int64_t>(s); };
    const auto st0 = make(1, 4, pts, w)->stats();
    fmt::print("### {} thread{}: evaluation loop ({} occupied boxes)\n\n| target boxes per task "
               "S | execute [s] | / best |\n|---|---|---|\n",
               T, T == 1 ? "" : "s", st0.boxes);
    nlohmann::json rec = nlohmann::json::object();
    rec["box_chunk"] = plan_sweep(
        a, T, w, powers_of_four(4096), [&](double s) { return make(sz(s), 4, pts, w); },
        make(0, 4, pts, w), [](const ksum::GaussStats &st) { return st.box_chunk; },
        [](const ksum::GaussStats &st) { return st.seconds_execute; }, 1, "box_chunk = 0");
    out["threads_" + std::to_string(T)] = rec;
    if (a.hermite_n <= 0)
      continue;
    const auto st2 = make(1, 4, pts2, w2)->stats();
    fmt::print("### {} thread{}: Hermite expansions (2D, {} points, h = 0.05: {} occupied boxes, "
               "{} Hermite and {} translated box pairs)\n\n| source boxes per task S | Hermite "
               "loop [s] | / best |\n|---|---|---|\n",
               T, T == 1 ? "" : "s", a.hermite_n, st2.boxes, st2.pairs_hermite,
               st2.pairs_translate);
    rec["hermite_chunk"] = plan_sweep(
        a, T, w2, powers_of_four(4096), [&](double s) { return make(1, sz(s), pts2, w2); },
        make(1, 0, pts2, w2), [](const ksum::GaussStats &st) { return st.hermite_chunk; },
        [](const ksum::GaussStats &st) { return st.seconds_hermite; }, 4, "hermite_chunk = 0");
    out["threads_" + std::to_string(T)] = rec;
  }
  return out;
}

// The 2D FMM (seed 004 Paper IV; Fmm2dOptions::subtree_level and near_chunk): the pyramid level
// whose boxes are the downward pass's tasks, and the leaves per task of the CPU near field, that
// the model chooses from the previous execute's times (−1 and 0) against every level and powers
// of 4 up to 4096; harmonic kernel, tolerance 1e-6, fmm2d_n uniform points in the unit square,
// CPU only. Each sweep varies one size (the other held at its old constant: the near field at 4,
// the level at ≥ 8 boxes per thread) and times the phase it changes (stats().seconds_downward,
// seconds_near); plans executed twice first, then --reps times round-robin.
nlohmann::json fmm2d_sweep(const Args &a) {
  std::mt19937_64 rng(51);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::complex<double>> z(static_cast<std::size_t>(a.fmm2d_n)), q(z.size());
  for (auto &p : z)
    p = {u(rng), u(rng)};
  for (auto &v : q)
    v = {u(rng) - 0.5, u(rng) - 0.5};
  fmt::print("## 2D FMM: {} points (harmonic, tolerance 1e-6, CPU)\n\n", a.fmm2d_n);
  nlohmann::json out = nlohmann::json::object();
  for (int T : a.threads) {
    const auto make = [&](int level, std::int64_t chunk) {
      ksum::Fmm2dOptions o;
      o.tolerance = 1e-6;
      o.backend = ksum::Backend::cpu;
      o.threads = T;
      o.subtree_level = level;
      o.near_chunk = chunk;
      auto p = std::make_unique<ksum::Fmm2d<double>>(o);
      p->set_points(z);
      (void)p->execute(q);
      (void)p->execute(q);
      return p;
    };
    // The old constant level: the shallowest with ≥ 8 boxes per thread.
    const int L = make(0, 4)->levels();
    int old_level = 0;
    while (old_level < L - 1 && std::ldexp(1.0, 2 * old_level) < 8.0 * T)
      ++old_level;
    using Plan = ksum::Fmm2d<double>;
    nlohmann::json rec = nlohmann::json::object();
    std::vector<double> levels;
    for (int l = 0; l < L; ++l)
      levels.push_back(l);
    fmt::print("### {} thread{}: downward pass (M2L, L2L, L2P; {} levels)\n\n| subtree level S "
               "(4^S tasks) | downward [s] | / best |\n|---|---|---|\n",
               T, T == 1 ? "" : "s", L);
    rec["subtree_level"] = plan_sweep<Plan>(
        a, T, q, levels, [&](double l) { return make(static_cast<int>(l), 4); }, make(-1, 4),
        [](const ksum::Fmm2dStats &st) { return std::int64_t(st.subtree_level); },
        [](const ksum::Fmm2dStats &st) { return st.seconds_downward; }, old_level,
        "subtree_level = −1");
    fmt::print("### {} thread{}: near field (P2P)\n\n| leaves per task S | near [s] | / best "
               "|\n|---|---|---|\n",
               T, T == 1 ? "" : "s");
    rec["near_chunk"] = plan_sweep<Plan>(
        a, T, q, powers_of_four(4096),
        [&](double s) { return make(old_level, static_cast<std::int64_t>(s)); }, make(old_level, 0),
        [](const ksum::Fmm2dStats &st) { return st.near_chunk; },
        [](const ksum::Fmm2dStats &st) { return st.seconds_near; }, 4, "near_chunk = 0");
    out["threads_" + std::to_string(T)] = rec;
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  // Line-buffered: a run cut short by a time limit keeps the rows printed so far.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Args a;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string k = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc)
          throw ksum::Error(ksum::ErrorCode::invalid_argument, fmt::format("{} needs a value", k));
        return argv[++i];
      };
      if (k == "--help" || k == "-h")
        return bench::print_header_help(__FILE__);
      if (k == "--threads") {
        a.threads.clear();
        for (const std::string &t : bench::split(value()))
          a.threads.push_back(std::stoi(t));
      } else if (k == "--m")
        a.m = static_cast<std::int64_t>(std::stod(value()));
      else if (k == "--n")
        a.n = static_cast<std::int64_t>(std::stod(value()));
      else if (k == "--pum-n")
        a.pum_n = static_cast<std::int64_t>(std::stod(value()));
      else if (k == "--pum-m")
        a.pum_m = static_cast<std::int64_t>(std::stod(value()));
      else if (k == "--fmm-n")
        a.fmm_n = static_cast<std::int64_t>(std::stod(value()));
      else if (k == "--fgt-n")
        a.fgt_n = static_cast<std::int64_t>(std::stod(value()));
      else if (k == "--hermite-n")
        a.hermite_n = static_cast<std::int64_t>(std::stod(value()));
      else if (k == "--fmm2d-n")
        a.fmm2d_n = static_cast<std::int64_t>(std::stod(value()));
      else if (k == "--reps")
        a.reps = std::max(1, std::stoi(value()));
      else if (k == "--json")
        a.json = value();
      else
        throw ksum::Error(ksum::ErrorCode::invalid_argument,
                          fmt::format("unknown option '{}' (see --help)", k));
    }
    if ((a.m != 0 && a.m < 8) || a.n < 1)
      throw ksum::Error(
          ksum::ErrorCode::invalid_argument,
          fmt::format("--m {} --n {}: need m ≥ 8 (0: no direct-sum sweep) and n ≥ 1", a.m, a.n));
  } catch (const std::exception &e) {
    fmt::print(stderr, "tasksize_methods_bench: {}\n", e.what());
    return 2;
  }
  if (a.threads.empty())
    a.threads = {1, 2, omp_get_max_threads()};
  std::sort(a.threads.begin(), a.threads.end());
  a.threads.erase(std::unique(a.threads.begin(), a.threads.end()), a.threads.end());
  if (a.threads.front() < 1) {
    fmt::print(stderr, "tasksize_methods_bench: --threads {}: each must be ≥ 1\n",
               a.threads.front());
    return 2;
  }

  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  ksum::Table<double> src(a.n, 3), tgt(a.m, 3), w(a.n, 1);
  for (std::int64_t k = 0; k < 3 * a.n; ++k)
    src.data()[k] = u(rng);
  for (std::int64_t k = 0; k < 3 * a.m; ++k)
    tgt.data()[k] = u(rng);
  for (std::int64_t k = 0; k < a.n; ++k)
    w.data()[k] = u(rng) - 0.5;

  fmt::print("# tasksize_methods_bench: {}; Laplace 3D f64, m = {} targets, n = {} sources\n\n",
             ts::machine_description(), a.m, a.n);
  std::vector<std::string> fallback;
  const ts::WorkCost cost = ts::measure_direct_cpu_cost(&fallback); // one thread: shared by all T
  nlohmann::json out = {{"machine", ts::machine_description()}, {"m", a.m}, {"n", a.n}};
  for (int T : a.threads) {
    ts::Calibration c;
    c.threads = T;
    std::string why;
    c.loop_overhead = ts::measure_loop_overhead(T, 20000, 7, &why);
    c.costs["direct_cpu"] = cost;
    // Into this machine's cache for T threads (merged with what is there), as `ksum tune
    // --threads T` would write them: the PUM and FMM sweeps below read the loop overhead from it.
    if (why.empty()) {
      ts::Calibration stored;
      if (!ts::load_calibration(ts::default_cache_path(), ts::machine_description(), T, stored)) {
        stored = ts::Calibration{};
        stored.machine = ts::machine_description();
        stored.threads = T;
        // A cache entry needs a positive task overhead (an entry with 0 is read as corrupt, and
        // the methods would use kDefaultOverhead instead of the loop overhead measured here).
        stored.overhead = ts::measure_task_overhead(T);
      }
      stored.loop_overhead = c.loop_overhead;
      stored.costs["direct_cpu"] = cost;
      try {
        ts::save_calibration(ts::default_cache_path(), stored);
      } catch (const std::exception &e) {
        fmt::print("(the cache {} was not written: {})\n", ts::default_cache_path().string(),
                   e.what());
      }
    }
    if (a.m == 0) { // --m 0: no direct-sum sweep, the loop overhead only
      fmt::print("## {} thread{}: loop-chunk overhead {:.3g} µs{}\n\n", T, T == 1 ? "" : "s",
                 c.loop_overhead * 1e6, why.empty() ? "" : "; " + why);
      out["threads_" + std::to_string(T)] = {{"threads", T}, {"loop_overhead", c.loop_overhead}};
      continue;
    }
    const std::int64_t chosen = ts::direct_cpu_block(a.m, a.n, c);
    std::vector<double> sizes = ts::powers_of_two(8, static_cast<double>(a.m));
    sizes.push_back(static_cast<double>(ts::kDirectCpuBlock));
    sizes.push_back(static_cast<double>(chosen));
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    fmt::print("## {} thread{} (loop-chunk overhead {:.3g} µs{})\n\n", T, T == 1 ? "" : "s",
               c.loop_overhead * 1e6, why.empty() ? "" : "; " + why);
    fmt::print("| targets per task S | tasks | time [s] | / best |\n|---|---|---|---|\n");
    // All sizes' plans first, then the repetitions round-robin over them: a drift of the machine's
    // speed during the sweep (seen on the shared 16-core host) then falls on every size alike.
    std::vector<std::unique_ptr<ksum::DirectSum<double>>> plans;
    for (double s : sizes) {
      ksum::DirectOptions o;
      o.backend = ksum::Backend::cpu;
      o.threads = T;
      o.cpu_block = static_cast<std::int64_t>(s);
      plans.push_back(std::make_unique<ksum::DirectSum<double>>(o));
      plans.back()->set_points(src, tgt);
      (void)plans.back()->execute(w); // warm-up
    }
    const std::vector<double> times = fastest_round_robin(
        sizes.size(), a.reps, [&](std::size_t k) { (void)plans[k]->execute(w); });
    const double best = *std::min_element(times.begin(), times.end());
    const auto best_at = sizes[static_cast<std::size_t>(
        std::min_element(times.begin(), times.end()) - times.begin())];
    double t_chosen = 0, t_default = 0;
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      const auto s = static_cast<std::int64_t>(sizes[k]);
      const std::string tag = s == chosen                ? " (chosen)"
                              : s == ts::kDirectCpuBlock ? " (old default)"
                                                         : "";
      fmt::print("| {}{} | {} | {:.4g} | {:.3f} |\n", s, tag, (a.m + s - 1) / s, times[k],
                 times[k] / best);
      if (s == chosen)
        t_chosen = times[k];
      if (s == ts::kDirectCpuBlock)
        t_default = times[k];
      rows.push_back({{"size", s}, {"seconds", times[k]}});
    }
    const double ratio = t_chosen / best;
    fmt::print("\nchosen S = {}: {:.3f}× the best measured (S = {}); goal ≤ 1.10: {}; the old "
               "fixed S = 32: {:.3f}×\n\n",
               chosen, ratio, static_cast<std::int64_t>(best_at), ratio <= 1.10 ? "met" : "MISSED",
               t_default / best);
    out["threads_" + std::to_string(T)] = {{"threads", T},
                                           {"loop_overhead", c.loop_overhead},
                                           {"chosen", chosen},
                                           {"best_size", best_at},
                                           {"chosen_over_best", ratio},
                                           {"default_over_best", t_default / best},
                                           {"sweep", rows}};
  }
  if (a.pum_n > 0 && a.pum_m > 0)
    out["pum_eval"] = pum_eval_sweep(a);
  if (a.pum_n > 0)
    out["pum_fit"] = pum_fit_sweep(a);
  if (a.fmm_n > 0)
    out["fmm3d"] = fmm3d_sweeps(a);
  if (a.fgt_n > 0)
    out["fgt"] = fgt_sweep(a);
  if (a.fmm2d_n > 0)
    out["fmm2d"] = fmm2d_sweep(a);
  for (const std::string &f : fallback)
    fmt::print("fallback: {}\n", f);
  if (!a.json.empty())
    std::ofstream(a.json) << out.dump(1) << "\n";
  return 0;
}
