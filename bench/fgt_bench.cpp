// The fast Gauss transform benchmark (seed 002 §2.2, §4.2, tables 4–5):
//   fgt_bench hermite   --d 2 --p 5,9,12 --n 25600,102400,409600,1638400,6553600 --clusters C
//                       --threads 1,2,4 [--cpu-max-n 409600] [--cpu-reps R] [--gpu] [--single]
//       seed 002 tables 4–5: the Hermite series evaluation alone, n targets against C expansions
//       of p^d terms; particles per second (PPS) on 1, 2, 4 … cores and on the GPU, GOPS on the
//       GPU, beside the seed's FERMI C2050 numbers (table 5). CPU rows above --cpu-max-n: "—".
//   fgt_bench crossover --d 1,2,3,4,5,6 --h 0.01,0.03,0.1,0.3,1 --n 100000 --tol 1e-6
//                       [--backend cpu|gpu] [--precision f32|f64] [--direct-targets K] [--reps R]
//       N = M uniform in the unit cube: GaussTransform auto (its choice and routes), fgt, ifgt and
//       direct per (d, h); the speed-up map direct / best fast method and the error of auto.
//   fgt_bench e2e       --d 3 --n 10000000 --h 0.1 --tol 1e-6 --backend gpu
//                       --direct-targets 1000000 [--precision f32|f64] [--reps R]
//       end to end: method fgt (setup + execute) against the direct Gaussian sum on K targets,
//       scaled to M (its time is exactly linear in M), the ratio and the error relative to Σ|q|.
//   fgt_bench bounds    --d 2,3 --h 0.1,0.2,0.3 --n 100000 --p 1:16 [--threads P]
//       the proven truncation bound against the measured error (issue 26): for boxes of half-side
//       ρ = 0.3 … 1 (in h) and each p, the FGT (CPU, cutoff at 1e-15 so truncation dominates) on
//       uniform and clustered points with positive weights; error = max |Ĝ − G| / Σ q over 300
//       sampled targets against the direct sum; the ratios error / bound and error / estimate
//       (the sampled 1-D error the order choice uses) per row.
// Times are medians of --reps (default 3) runs after a warm-up; --json FILE writes the rows.
#include "bench_common.hpp"
#include "fgt/fgt_cpu.hpp"
#include "fgt/fgt_gpu.hpp"
#include "fgt/fgt_params.hpp"

#include <ksum/error.hpp>
#include <ksum/fgt.hpp>
#include <ksum/io.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace ksum;
using nlohmann::json;

namespace {

struct Args {
  std::string mode, json, backend = "cpu", precision;
  std::string d = "", p = "5,9,12", n = "", h = "", threads = "1,2,4";
  std::int64_t clusters = 64, cpu_max_n = 409600, direct_targets = 0;
  double tol = 1e-6;
  int reps = 3, cpu_reps = 0; // cpu_reps 0: reps
  bool gpu = false, single = false;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Σ_j q(j) e^{−|t − x_j|²/h²} at the point t, accumulated in long double: the benches' fp64
// reference (src(j, c) and q(j) read the sources).
template <class Src, class Q>
double gauss_at(const double *t, std::int64_t n, int d, double h, Src src, Q q) {
  long double acc = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    double r2 = 0;
    for (int c = 0; c < d; ++c) {
      const double dz = t[c] - double(src(j, c));
      r2 += dz * dz;
    }
    acc += (long double)q(j) * std::exp(-r2 / (h * h));
  }
  return double(acc);
}

std::vector<double> num_list(const std::string &s) {
  std::vector<double> v;
  std::stringstream ss(s);
  std::string t;
  while (std::getline(ss, t, ','))
    v.push_back(std::stod(t));
  if (v.empty())
    throw Error(ErrorCode::invalid_argument, fmt::format("empty list '{}'", s));
  return v;
}

std::string dash_or(std::optional<double> v, const char *fmt_spec = "{:.3e}") {
  return v ? fmt::format(fmt::runtime(fmt_spec), *v) : std::string("—");
}

void write_json(const Args &a, const json &j) {
  if (!a.json.empty())
    io::write_text(a.json, j.dump(1) + "\n", true);
}

// Seed 002 table 5 (Nehalem CPU, FERMI C2050 GPU, single precision): per p (5, 9, 12) and N
// (25600 … 6553600): PPS on 1, 2, 4 cores, GOPS (GPU), PPS (GPU).
struct SeedRow {
  double pps1, pps2, pps4, gops, pps_gpu;
};
constexpr std::int64_t seed_n[5] = {25600, 102400, 409600, 1638400, 6553600};
constexpr int seed_p[3] = {5, 9, 12};
constexpr SeedRow seed_table5[3][5] = {{{2.31e5, 4.41e5, 7.11e5, 699.1, 2.34e7},
                                        {2.50e5, 4.93e5, 9.39e5, 780.0, 2.62e7},
                                        {2.54e5, 4.92e5, 9.31e5, 815.3, 2.73e7},
                                        {2.54e5, 4.98e5, 9.35e5, 828.7, 2.78e7},
                                        {2.58e5, 5.00e5, 9.76e5, 830.3, 2.78e7}},
                                       {{7.12e4, 1.38e5, 2.64e5, 786.2, 5.62e6},
                                        {7.24e4, 1.42e5, 2.65e5, 858.7, 6.13e6},
                                        {7.19e4, 1.37e5, 2.78e5, 893.0, 6.38e6},
                                        {7.21e4, 1.39e5, 2.78e5, 905.9, 6.47e6},
                                        {7.29e4, 1.39e5, 2.80e5, 907.3, 6.48e6}},
                                       {{3.33e4, 6.62e4, 1.20e5, 874.5, 2.83e6},
                                        {3.33e4, 6.65e4, 1.27e5, 957.1, 3.09e6},
                                        {3.32e4, 6.64e4, 1.29e5, 996.2, 3.22e6},
                                        {3.38e4, 6.52e4, 1.29e5, 1010.8, 3.27e6},
                                        {3.34e4, 6.64e4, 1.29e5, 1012.1, 3.27e6}}};

const SeedRow *seed_row(int d, int p, std::int64_t n) {
  if (d != 2)
    return nullptr;
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 5; ++k)
      if (seed_p[i] == p && seed_n[k] == n)
        return &seed_table5[i][k];
  return nullptr;
}

int mode_hermite(const Args &a) {
  const int d = a.d.empty() ? 2 : int(num_list(a.d).front());
  const auto ps = num_list(a.p);
  const auto ns = num_list(a.n.empty() ? "25600,102400,409600,1638400,6553600" : a.n);
  const auto threads = num_list(a.threads);
  fmt::print("Hermite evaluation (seed 002 tables 4–5 format): d = {}, {} expansions (clusters) of "
             "p^{} terms, every target against every cluster; {} on the GPU; median of {} (CPU: "
             "{}).\n"
             "PPS = targets / s. GOPS = N · clusters · flops per pair / s / 1e9, where an op is a "
             "flop and an FMA counts 2 (our count of the kernel's arithmetic); the seed's GOPS "
             "counts its own operations with its (unstated) number of clusters, so compare its "
             "GOPS, not its PPS. CPU: double precision; rows with N > {} not run on the CPU (—).\n"
             "seed 002 C2050 = table 5 (Nehalem CPU cores, FERMI C2050 GPU, single precision).\n\n",
             d, a.clusters, d, a.gpu ? (a.single ? "float" : "double") : "not run", a.reps,
             a.cpu_reps > 0 ? a.cpu_reps : a.reps, a.cpu_max_n);
  std::string head = "| N | p |", rule = "|---|---|";
  for (double t : threads) {
    head += fmt::format(" PPS ({} core{}) |", int(t), t > 1 ? "s" : "");
    rule += "---|";
  }
  head += " GOPS (GPU) | PPS (GPU) | seed 002 C2050: PPS (1 core) | PPS (4 cores) | GOPS (GPU) | "
          "PPS (GPU) | GOPS ours/seed | max error |";
  rule += "---|---|---|---|---|---|---|---|";
  fmt::print("{}\n{}\n", head, rule);
  json rows = json::array();
  std::string gpu_note;
  for (double pd : ps)
    for (double nd : ns) {
      const int p = int(pd);
      const auto n = std::int64_t(nd);
      json row{{"n", n}, {"p", p}, {"d", d}, {"clusters", a.clusters}};
      std::string line = fmt::format("| {} | {} |", n, p);
      json cpu = json::array();
      for (double t : threads) {
        if (n > a.cpu_max_n) {
          line += " — |";
          continue;
        }
        const auto r = fgt::hermite_bench_cpu(d, p, n, a.clusters, int(t),
                                              a.cpu_reps > 0 ? a.cpu_reps : a.reps);
        line += fmt::format(" {:.2e} |", double(n) / r.seconds);
        cpu.push_back({{"threads", int(t)},
                       {"seconds", r.seconds},
                       {"pps", double(n) / r.seconds},
                       {"gflops", double(n) * a.clusters * r.flops_per_pair / r.seconds / 1e9},
                       {"flops_per_pair", r.flops_per_pair}});
      }
      row["cpu"] = cpu;
      std::optional<double> gops, pps, err;
      if (a.gpu) {
        try {
          const auto r = fgt::hermite_bench_gpu(d, p, n, a.clusters, a.reps, a.single);
          gops = double(n) * a.clusters * r.flops_per_pair / r.seconds / 1e9;
          pps = double(n) / r.seconds;
          err = r.max_error;
          row["gpu"] = {{"seconds", r.seconds}, {"gops", *gops},
                        {"pps", *pps},          {"max_error", r.max_error},
                        {"single", a.single},   {"flops_per_pair", r.flops_per_pair}};
        } catch (const Error &e) {
          gpu_note = e.what();
        }
      }
      const SeedRow *s = seed_row(d, p, n);
      line += fmt::format(" {} | {} |", dash_or(gops, "{:.1f}"), dash_or(pps, "{:.2e}"));
      if (s) {
        line += fmt::format(" {:.2e} | {:.2e} | {:.1f} | {:.2e} | {} |", s->pps1, s->pps4, s->gops,
                            s->pps_gpu, gops ? fmt::format("{:.2f}", *gops / s->gops) : "—");
        row["seed002_c2050"] = {{"pps_1core", s->pps1},
                                {"pps_2cores", s->pps2},
                                {"pps_4cores", s->pps4},
                                {"gops", s->gops},
                                {"pps_gpu", s->pps_gpu}};
      } else {
        line += " | | | | |";
      }
      line += fmt::format(" {} |", dash_or(err, "{:.1e}"));
      fmt::print("{}\n", line);
      std::fflush(stdout);
      rows.push_back(row);
    }
  if (!gpu_note.empty())
    fmt::print("\nGPU not run: {}\n", gpu_note);
  write_json(a, {{"mode", "hermite"},
                 {"d", d},
                 {"clusters", a.clusters},
                 {"single", a.single},
                 {"op_convention", "flop, FMA = 2"},
                 {"rows", rows}});
  return 0;
}

template <class T> Table<T> uniform(std::int64_t n, std::int64_t d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Table<T> t(n, d, Uninitialized{});
  for (std::int64_t k = 0; k < n * d; ++k)
    t.data()[k] = static_cast<T>(u(rng));
  return t;
}

template <class T> Table<T> first_rows(const Table<T> &t, std::int64_t k) {
  Table<T> s(k, t.cols(), Uninitialized{});
  for (std::int64_t c = 0; c < t.cols(); ++c)
    std::copy_n(t.col(c).data(), k, s.col(c).data());
  return s;
}

template <class T> struct Timed {
  double setup = 0, execute = 0, total = 0;
  GaussStats stats;
  Table<T> out;
};

// Median (by total) of reps runs of a fresh plan: set_points (setup) + execute.
template <class T>
Timed<T> time_gauss(const GaussOptions &o, const Table<T> &src, const Table<T> &tgt,
                    const Table<T> &q, int reps) {
  std::vector<Timed<T>> runs;
  for (int r = 0; r < std::max(reps, 1); ++r) {
    Timed<T> t;
    const auto t0 = std::chrono::steady_clock::now();
    GaussTransform<T> g(o);
    g.set_points(src, tgt);
    t.setup = seconds_since(t0);
    const auto t1 = std::chrono::steady_clock::now();
    t.out = g.execute(q);
    t.execute = seconds_since(t1);
    t.total = t.setup + t.execute;
    t.stats = g.stats();
    runs.push_back(std::move(t));
  }
  std::sort(runs.begin(), runs.end(),
            [](const auto &x, const auto &y) { return x.total < y.total; });
  return std::move(runs[runs.size() / 2]);
}

// max over the first rows of |a − b| / Σ|q| (the FGT's error measure).
template <class T> double error_l1(const Table<T> &a, const Table<T> &b, const Table<T> &q) {
  double l1 = 0, worst = 0;
  for (std::int64_t j = 0; j < q.rows(); ++j)
    l1 += std::abs(double(q(j, 0)));
  for (std::int64_t i = 0; i < b.rows(); ++i)
    worst = std::max(worst, std::abs(double(a(i, 0)) - double(b(i, 0))));
  return worst / l1;
}

template <class T> void warm_up(Backend b) {
  GaussOptions o;
  o.method = GaussMethod::direct;
  o.backend = b;
  const auto p = uniform<T>(256, 3, 9);
  GaussTransform<T> g(o);
  g.set_points(p);
  g.execute(Table<T>(256, 1, T(1)));
}

std::string routes(const GaussStats &s) {
  if (s.method != GaussMethod::fgt)
    return s.method == GaussMethod::ifgt ? fmt::format("{} clusters", s.boxes) : "";
  return fmt::format("{}/{}/{}/{}", s.pairs_direct, s.pairs_hermite, s.pairs_taylor,
                     s.pairs_translate);
}

template <class T> int mode_crossover(const Args &a) {
  const auto ds = num_list(a.d.empty() ? "1,2,3,4,5,6" : a.d);
  const auto hs = num_list(a.h.empty() ? "0.01,0.03,0.1,0.3,1" : a.h);
  const auto n = std::int64_t(num_list(a.n.empty() ? "100000" : a.n).front());
  const Backend b = parse_backend(a.backend);
  const std::int64_t sub = std::min(n, a.direct_targets > 0 ? a.direct_targets : 4000);
  warm_up<T>(b);
  fmt::print("Gauss transform crossover: N = M = {} (separate uniform sets in the unit cube), tol "
             "{:.0e}, {} on {}; times are set-up + execute, median of {}. direct: timed on the "
             "first {} targets and scaled by M / {} (its time is linear in M). routes: boxes "
             "pairs direct/Hermite/Taylor/Hermite→Taylor. error: auto against direct on those "
             "targets, relative to Σ|q|. —: not run (the cost model predicts it slower than "
             "direct) or refused.\n\n| d | h | auto → | p | routes | auto [s] | fgt [s] | ifgt [s] "
             "| direct [s] | speed-up | error |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
             n, a.tol, sizeof(T) == 4 ? "f32" : "f64", to_string(b), a.reps, sub, sub);
  json cells = json::array();
  std::vector<std::vector<std::string>> map(ds.size());
  for (std::size_t di = 0; di < ds.size(); ++di)
    for (double h : hs) {
      const int d = int(ds[di]);
      const auto src = uniform<T>(n, d, 1000 + d), tgt = uniform<T>(n, d, 2000 + d);
      const auto q = uniform<T>(n, 1, 3000 + d);
      GaussOptions o;
      o.bandwidth = h;
      o.tolerance = a.tol;
      o.backend = b;
      o.method = GaussMethod::automatic;
      GaussStats st;
      {
        GaussTransform<T> probe(o); // what auto chooses: where it is direct, it is not re-run
        probe.set_points(src, tgt);
        st = probe.stats();
      }
      const bool auto_direct = st.method == GaussMethod::direct;
      Timed<T> aut;
      if (!auto_direct) {
        aut = time_gauss(o, src, tgt, q, a.reps);
        st = aut.stats;
      }
      std::optional<double> t_fgt, t_ifgt;
      for (auto m : {GaussMethod::fgt, GaussMethod::ifgt}) {
        const double predicted = m == GaussMethod::fgt ? st.predicted_fgt : st.predicted_ifgt;
        if (!(predicted <= st.predicted_direct))
          continue;
        if (st.method == m) {
          (m == GaussMethod::fgt ? t_fgt : t_ifgt) = aut.total;
          continue;
        }
        o.method = m;
        try {
          (m == GaussMethod::fgt ? t_fgt : t_ifgt) = time_gauss(o, src, tgt, q, a.reps).total;
        } catch (const Error &) {
        }
      }
      o.method = GaussMethod::direct;
      const auto dir = time_gauss(o, src, first_rows(tgt, sub), q, a.reps);
      const double t_direct = dir.total * double(n) / double(sub);
      if (auto_direct)
        aut.total = t_direct;
      double best = aut.total;
      for (auto t : {t_fgt, t_ifgt})
        if (t)
          best = std::min(best, *t);
      const double err = auto_direct ? 0.0 : error_l1(aut.out, dir.out, q);
      fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {:.3e} | {:.1f} | {} |\n", d, h,
                 to_string(st.method), st.order, routes(st),
                 auto_direct ? "= direct" : fmt::format("{:.3e}", aut.total), dash_or(t_fgt),
                 dash_or(t_ifgt), t_direct, t_direct / best,
                 auto_direct ? "0 (= direct)" : fmt::format("{:.1e}", err));
      std::fflush(stdout);
      map[di].push_back(fmt::format("{:.1f}× {}", t_direct / best, to_string(st.method)));
      cells.push_back({{"d", d},
                       {"h", h},
                       {"n", n},
                       {"auto_method", to_string(st.method)},
                       {"order", st.order},
                       {"routes", routes(st)},
                       {"auto_seconds", aut.total},
                       {"auto_setup", aut.setup},
                       {"fgt_seconds", t_fgt ? json(*t_fgt) : json()},
                       {"ifgt_seconds", t_ifgt ? json(*t_ifgt) : json()},
                       {"direct_seconds_scaled", t_direct},
                       {"direct_targets", sub},
                       {"speedup", t_direct / best},
                       {"error", err},
                       {"predicted", {st.predicted_direct, st.predicted_fgt, st.predicted_ifgt}}});
    }
  fmt::print(
      "\nspeed-up map: direct time / best fast time, and the method auto chose\n\n| d \\ h |");
  for (double h : hs)
    fmt::print(" {} |", h);
  fmt::print("\n|---|{}\n", [&] {
    std::string s;
    for (std::size_t k = 0; k < hs.size(); ++k)
      s += "---|";
    return s;
  }());
  for (std::size_t di = 0; di < ds.size(); ++di) {
    fmt::print("| {} |", int(ds[di]));
    for (const auto &c : map[di])
      fmt::print(" {} |", c);
    fmt::print("\n");
  }
  write_json(a, {{"mode", "crossover"},
                 {"n", n},
                 {"tol", a.tol},
                 {"backend", to_string(b)},
                 {"precision", sizeof(T) == 4 ? "f32" : "f64"},
                 {"direct_scaled_from_targets", sub},
                 {"cells", cells}});
  return 0;
}

template <class T> int mode_e2e(const Args &a) {
  const int d = a.d.empty() ? 3 : int(num_list(a.d).front());
  const auto n = std::int64_t(num_list(a.n.empty() ? "10000000" : a.n).front());
  const double h = a.h.empty() ? 0.1 : num_list(a.h).front();
  const Backend b = parse_backend(a.backend);
  const std::int64_t k = std::min(n, a.direct_targets > 0 ? a.direct_targets : 1000000);
  const auto src = uniform<T>(n, d, 11), tgt = uniform<T>(n, d, 12);
  const auto q = uniform<T>(n, 1, 13);
  warm_up<T>(b);
  GaussOptions o;
  o.bandwidth = h;
  o.tolerance = a.tol;
  o.backend = b;
  o.method = GaussMethod::fgt;
  const auto f = time_gauss(o, src, tgt, q, a.reps);
  o.method = GaussMethod::direct;
  const auto dir = time_gauss(o, src, first_rows(tgt, k), q, a.reps);
  const double scaled = dir.total * double(n) / double(k);
  const double err = error_l1(f.out, dir.out, q);
  // An fp64 reference (long-double accumulation) on 32 sampled targets: the float direct sum's own
  // rounding over 1e7 terms is larger than the FGT's tolerance.
  std::vector<std::int64_t> rows;
  for (std::int64_t r = 0; r < 32; ++r)
    rows.push_back(r * (k - 1) / 31);
  double l1 = 0, err_fgt = 0, err_direct = 0;
  for (std::int64_t j = 0; j < n; ++j)
    l1 += std::abs(double(q(j, 0)));
  std::vector<double> ref(rows.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::vector<double> t(static_cast<std::size_t>(d));
    for (int c = 0; c < d; ++c)
      t[std::size_t(c)] = double(tgt(rows[r], c));
    ref[r] = gauss_at(
        t.data(), n, int(d), h, [&](std::int64_t j, int c) { return src(j, c); },
        [&](std::int64_t j) { return q(j, 0); });
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    err_fgt = std::max(err_fgt, std::abs(double(f.out(rows[r], 0)) - ref[r]) / l1);
    err_direct = std::max(err_direct, std::abs(double(dir.out(rows[r], 0)) - ref[r]) / l1);
  }
  fmt::print("fp64 reference on {} sampled targets: fgt error {:.2e}, direct {} error {:.2e} "
             "(max |Δ| / Σ|q|; bound {:.2e})\n",
             rows.size(), err_fgt, sizeof(T) == 4 ? "f32" : "f64", err_direct, f.stats.error_bound);
  const auto &s = f.stats;
  fmt::print(
      "Gauss transform end to end: N = M = {} (separate uniform sets in the unit cube), d = {}, h "
      "= {}, tol {:.0e}, {} on {}; median of {}.\nfgt total = set-up (boxes, routes, upload) + "
      "execute. direct: the exact Gaussian sum on the {} (DirectSum, eps = 1/h) timed on the "
      "first {} targets and scaled by M / {}: its time is exactly linear in M. error: fgt "
      "against direct on those targets, max |Δ| / Σ|q|.\n\n| N = M | p | boxes | routes D/H/T/HT "
      "| fgt setup [s] | fgt execute [s] | fgt total [s] | direct on {} [s] | direct scaled [s] "
      "| direct / fgt | error | bound |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n"
      "| {} | {} | {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.2f} | {:.1f} | {:.2e} | {:.2e} "
      "|\n",
      n, d, h, a.tol, sizeof(T) == 4 ? "f32" : "f64", to_string(s.backend), a.reps,
      to_string(dir.stats.backend), k, k, k, n, s.order, s.boxes, routes(s), f.setup, f.execute,
      f.total, dir.total, scaled, scaled / f.total, err, s.error_bound);
  write_json(a, {{"mode", "e2e"},
                 {"n", n},
                 {"d", d},
                 {"h", h},
                 {"tol", a.tol},
                 {"precision", sizeof(T) == 4 ? "f32" : "f64"},
                 {"backend", to_string(s.backend)},
                 {"order", s.order},
                 {"boxes", s.boxes},
                 {"routes", routes(s)},
                 {"fgt_setup", f.setup},
                 {"fgt_execute", f.execute},
                 {"fgt_total", f.total},
                 {"direct_targets", k},
                 {"direct_seconds", dir.total},
                 {"direct_seconds_scaled", scaled},
                 {"speedup", scaled / f.total},
                 {"error", err},
                 {"error_fp64_fgt", err_fgt},
                 {"error_fp64_direct", err_direct},
                 {"error_bound", s.error_bound}});
  return 0;
}

} // namespace

int mode_bounds(const Args &a) {
  const auto ds = num_list(a.d.empty() ? "2,3" : a.d);
  const auto hs = num_list(a.h.empty() ? "0.1,0.2,0.3" : a.h);
  const auto n = std::int64_t(num_list(a.n.empty() ? "100000" : a.n).front());
  int p_lo = 1, p_hi = 16;
  if (const auto c = a.p.find(':'); c != std::string::npos)
    p_lo = std::stoi(a.p.substr(0, c)), p_hi = std::stoi(a.p.substr(c + 1));
  const int threads = int(num_list(a.threads).back());
  json rows = json::array();
  fmt::print("| d | points | h | ρ | p | pairs direct / hermite / taylor / translate | error | bound | "
             "error / bound | estimate | error / estimate |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (double dd : ds)
    for (const char *dist : {"uniform", "cluster"})
      for (double h : hs) {
        const int d = int(dd);
        std::mt19937_64 rng(7);
        std::uniform_real_distribution<double> u(0, 1);
        std::normal_distribution<double> g(0, 1);
        std::vector<double> z(static_cast<std::size_t>(n * d)), q(static_cast<std::size_t>(n));
        fgt::Extent e{d, n, n, std::vector<double>(d, 1e300), std::vector<double>(d, -1e300)};
        for (std::int64_t i = 0; i < n; ++i) {
          const int c = int(i % 5);
          for (int k = 0; k < d; ++k) {
            double x = u(rng);
            if (std::string(dist) == "cluster") // 5 Gaussian clusters of width 0.02 … 0.2
              x = std::clamp(0.15 + 0.7 * ((c * (k + 2)) % 5) / 4.0 + 0.02 * std::pow(10.0, c / 4.0) * g(rng), 0.0, 1.0);
            const double v = x / h;
            z[std::size_t(i * d + k)] = v;
            e.lo[k] = std::min(e.lo[k], v);
            e.hi[k] = std::max(e.hi[k], v);
          }
          q[std::size_t(i)] = u(rng);
        }
        double sum_q = 0;
        for (double v : q)
          sum_q += v;
        std::vector<std::int64_t> at;
        for (std::int64_t i = 0; i < 300; ++i)
          at.push_back((i * 7919) % n);
        std::vector<double> ref(at.size());
#pragma omp parallel for num_threads(threads)
        for (std::size_t t = 0; t < at.size(); ++t)
          ref[t] = gauss_at(
              z.data() + at[t] * d, n, d, 1.0,
              [&](std::int64_t j, int k) { return z[std::size_t(j * d + k)]; },
              [&](std::int64_t j) { return q[std::size_t(j)]; });
        std::vector<double> out(static_cast<std::size_t>(n));
        for (double rho : {0.3, 0.5, 0.7, 1.0})
          for (int p = p_lo; p <= p_hi; ++p) {
            const auto grid = fgt::fgt_grid(e, rho, 1e-15, p);
            if (grid.terms > fgt::max_terms)
              break;
            const auto plan = fgt::build_fgt(z.data(), n, nullptr, n, d, e, grid, threads);
            if (plan.pairs[1] + plan.pairs[2] + plan.pairs[3] == 0)
              continue; // every pair direct: no truncation to measure
            fgt::execute_fgt(plan, q.data(), out.data(), threads, {}, 16);
            double err = 0;
            for (std::size_t t = 0; t < at.size(); ++t)
              err = std::max(err, std::abs(out[std::size_t(at[t])] - ref[t]));
            err /= sum_q;
            fmt::print("| {} | {} | {} | {} | {} | {} / {} / {} / {} | {:.2e} | {:.2e} | {:.2e} | "
                       "{:.2e} | {:.3f} |\n",
                       d, dist, h, rho, p, plan.pairs[0], plan.pairs[1], plan.pairs[2],
                       plan.pairs[3], err, grid.bound, err / grid.bound, grid.estimate,
                       err / grid.estimate);
            std::fflush(stdout);
            rows.push_back({{"d", d}, {"dist", dist}, {"h", h}, {"rho", rho}, {"p", p},
                            {"error", err}, {"bound", grid.bound}, {"estimate", grid.estimate},
                            {"pairs", {plan.pairs[0], plan.pairs[1], plan.pairs[2], plan.pairs[3]}}});
            if (err < 1e-14)
              break;
          }
      }
  if (!a.json.empty())
    io::write_text(a.json, json{{"mode", "bounds"}, {"n", n}, {"rows", rows}}.dump(1), true);
  return 0;
}

int main(int argc, char **argv) {
  Args a;
  auto need = [&](int &i) -> std::string {
    if (i + 1 >= argc)
      throw Error(ErrorCode::invalid_argument, fmt::format("{} needs a value", argv[i]));
    return argv[++i];
  };
  try {
    int i = 1;
    if (argc > 1 && argv[1][0] != '-')
      a.mode = argv[i++];
    for (; i < argc; ++i) {
      const std::string k = argv[i];
      if (k == "--help" || k == "-h")
        return bench::print_header_help(__FILE__);
      if (k == "--d")
        a.d = need(i);
      else if (k == "--p")
        a.p = need(i);
      else if (k == "--n")
        a.n = need(i);
      else if (k == "--h")
        a.h = need(i);
      else if (k == "--threads")
        a.threads = need(i);
      else if (k == "--clusters")
        a.clusters = std::int64_t(std::stod(need(i)));
      else if (k == "--cpu-max-n")
        a.cpu_max_n = std::int64_t(std::stod(need(i)));
      else if (k == "--direct-targets")
        a.direct_targets = std::int64_t(std::stod(need(i)));
      else if (k == "--tol")
        a.tol = std::stod(need(i));
      else if (k == "--reps")
        a.reps = std::max(1, std::stoi(need(i)));
      else if (k == "--cpu-reps")
        a.cpu_reps = std::max(1, std::stoi(need(i)));
      else if (k == "--backend")
        a.backend = need(i);
      else if (k == "--precision")
        a.precision = need(i);
      else if (k == "--gpu")
        a.gpu = true;
      else if (k == "--single")
        a.single = true;
      else if (k == "--json")
        a.json = need(i);
      else
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("unknown option '{}' (see --help)", k));
    }
    if (!a.precision.empty() && a.precision != "f32" && a.precision != "f64")
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("--precision {}: valid are f32, f64", a.precision));
    if (a.mode == "hermite")
      return mode_hermite(a);
    if (a.mode == "crossover")
      return a.precision == "f32" ? mode_crossover<float>(a) : mode_crossover<double>(a);
    if (a.mode == "e2e")
      return a.precision == "f64" ? mode_e2e<double>(a) : mode_e2e<float>(a);
    if (a.mode == "bounds")
      return mode_bounds(a);
    throw Error(ErrorCode::invalid_argument,
                fmt::format("unknown mode '{}'; valid: hermite, crossover, e2e, bounds", a.mode));
  } catch (const std::exception &e) {
    fmt::print(stderr, "fgt_bench: {}\n", e.what());
    return 2;
  }
}
