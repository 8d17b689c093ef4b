// The 2D FMM benchmark (issue 6; seed 004 Paper IV §3–4, seed 002 tables 2–3):
//   fmm2d_bench time    --n N [--dist uniform|line|cluster] [--kernel harmonic|log] [--tol T]
//                       [--backend cpu|gpu] [--gpu-m2l] [--threads P] [--theta θ] [--levels L]
//                       [--tune] [--reps R] [--check S] [--save DIR] [--positive] [--order p]
//       one configuration: per call partition (tree + connectivity) + execute, its phases, the
//       error against the direct sum on S sampled targets. --tune first sweeps Nlevels and θ
//       and keeps the fastest (the paper's "after tuning"). --save writes the points, strengths,
//       sampled reference and our time as .npy for bench/peers/fmm2d_peer.py (same points).
//       --order: p fixed (default: from --tol). --positive: real strengths in (0, 1] (masses) instead of complex ones in [−1, 1]².
//   fmm2d_bench scaling --n N [--dist D] [--threads 1,2,4,8,16] [--gpu]
//       CPU-only strong scaling after tuning per thread count (fig. 3.2), and with --gpu the
//       hybrid code (near field on the GPU) on the most threads (fig. 3.3): hybrid / CPU-only.
//   fmm2d_bench sweep   --n N [--dist D] [--backend B] [--levels a,b,..] [--thetas lo:hi:step]
//       the static sweep: runtime and its M2L / P2P / Q parts against θ and Nlevels (figs.
//       4.1–4.2); CSV with --csv FILE.
//   fmm2d_bench m2l     [--precision f32|f64|both]
//       seed 002 tables 2–3: the GPU M2L kernel (row traversal) for p = 8, 12, 16 and 2,160 …
//       2,359,152 translations: kernel time, transfers, Gop/s, GB/s, translations/s.
// Every mode prints Markdown tables; --json FILE writes the rows.
#include "bench_common.hpp"
#include "fmm/fmm2d/fmm2d_gpu.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>
#include <ksum/fmm2d.hpp>
#include <ksum/io.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace ksum;
using cd = std::complex<double>;

namespace {

struct Args {
  std::string mode = "time", dist = "uniform", kernel = "harmonic", backend = "cpu",
              precision = "both", save, json, csv, threads_list = "1,2,4,8,16", levels_list,
              thetas = "0.30:0.76:0.05";
  std::int64_t n = 1000000, check = 200;
  double tol = 1e-6, theta = 0.5;
  int levels = 0, threads = 0, reps = 5, order = 0;
  bool tune = false, gpu_m2l = false, gpu = false, positive = false;
};

std::vector<cd> make_points(const std::string &dist, std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> g(0, 1);
  std::vector<cd> z(static_cast<std::size_t>(n));
  for (auto &v : z) {
    if (dist == "line") { // approximately along a line (seed 004 Paper IV fig. 4.2)
      const double t = u(rng);
      v = {t, 0.3 * t + 1e-3 * g(rng)};
    } else if (dist == "cluster") { // 8 Gaussian clusters of widths 1e-3 … 0.1 (the order choice's worst cases)
      const int c = static_cast<int>(8 * u(rng)) % 8;
      const double centre[2] = {0.1 + 0.8 * ((c * 37) % 8) / 7.0, 0.1 + 0.8 * ((c * 11) % 8) / 7.0};
      const double width = 1e-3 * std::pow(100.0, c / 7.0);
      v = {centre[0] + width * g(rng), centre[1] + width * g(rng)};
    } else {
      v = {u(rng), u(rng)};
    }
  }
  return z;
}

// Complex strengths uniform in [−1, 1]², or (positive) real ones in (0, 1], like masses.
std::vector<cd> make_strengths(std::int64_t n, std::uint64_t seed, bool positive = false) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<cd> q(static_cast<std::size_t>(n));
  for (auto &v : q)
    v = positive ? cd{0.5 * (1 + u(rng)), 0} : cd{u(rng), u(rng)};
  return q;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<std::int64_t> sample(std::int64_t n, std::int64_t s) {
  std::vector<std::int64_t> at;
  for (std::int64_t i = 0; i < s && i < n; ++i)
    at.push_back((i * 7919 + 13) % n);
  return at;
}

// Direct sum at the sampled sources (self term left out), long double accumulation.
std::vector<cd> reference(bool harmonic, const std::vector<cd> &z, const std::vector<cd> &q,
                          const std::vector<std::int64_t> &at) {
  std::vector<cd> r(at.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (std::size_t s = 0; s < at.size(); ++s) {
    const std::int64_t i = at[s];
    long double ur = 0, ui = 0;
    for (std::size_t j = 0; j < z.size(); ++j) {
      if (static_cast<std::int64_t>(j) == i)
        continue;
      const long double dx = z[i].real() - z[j].real(), dy = z[i].imag() - z[j].imag();
      const long double r2 = dx * dx + dy * dy;
      if (r2 == 0)
        continue;
      if (harmonic) {
        ur += (q[j].real() * dx + q[j].imag() * dy) / r2;
        ui += (q[j].imag() * dx - q[j].real() * dy) / r2;
      } else {
        ur += q[j].real() * 0.5L * std::log(r2);
        ui += q[j].imag() * 0.5L * std::log(r2);
      }
    }
    r[s] = {static_cast<double>(ur), static_cast<double>(ui)};
  }
  return r;
}

double rel_error(const std::vector<cd> &u, const std::vector<cd> &ref,
                 const std::vector<std::int64_t> &at) {
  if (at.empty())
    return -1; // not checked
  double num = 0, den = 0;
  for (std::size_t s = 0; s < at.size(); ++s) {
    num = std::max(num, std::abs(u[at[s]] - ref[s]));
    den = std::max(den, std::abs(ref[s]));
  }
  return num / den;
}

struct Run {
  double total = 0, partition = 0, split = 0, connect = 0, upward = 0, downward = 0, near = 0,
         gpu_near = 0, error = -1;
  double theta = 0;
  int levels = 0, order = 0, threads = 0;
  std::int64_t m2l = 0, p2p = 0;
  std::string backend;
};

// Median over reps of set_points + execute on one plan (after one warm-up call).
Run measure(const Args &a, const std::vector<cd> &z, const std::vector<cd> &q, double theta,
            int levels, int threads, Backend backend, std::vector<cd> *result = nullptr) {
  Fmm2dOptions o;
  o.kernel = parse_fmm2d_kernel(a.kernel);
  o.tolerance = a.tol;
  o.order = a.order;
  o.theta = theta;
  o.levels = levels;
  o.threads = threads;
  o.backend = backend;
  o.gpu_m2l = a.gpu_m2l && backend == Backend::cuda;
  Fmm2d<double> f(o);
  std::vector<Run> runs;
  std::vector<cd> u(z.size()); // one result buffer for every call, as a simulation keeps one
  for (int r = 0; r < a.reps + 1; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f.set_points(z);
    f.execute(q, u);
    const double t = seconds_since(t0);
    const auto &s = f.stats();
    Run run;
    run.total = t;
    run.partition = s.seconds_partition;
    run.split = s.seconds_split;
    run.connect = s.seconds_connect;
    run.upward = s.seconds_upward;
    run.downward = s.seconds_downward;
    run.near = s.seconds_near;
    run.gpu_near = s.seconds_gpu_near;
    run.theta = theta;
    run.levels = s.levels;
    run.order = s.order;
    run.threads = threads;
    run.m2l = s.m2l_translations;
    run.p2p = s.p2p_pairs;
    run.backend = std::string(to_string(backend));
    if (r > 0 || a.reps == 0)
      runs.push_back(run);
    if (result && r == a.reps)
      *result = u;
  }
  std::sort(runs.begin(), runs.end(), [](const Run &x, const Run &y) { return x.total < y.total; });
  return runs[runs.size() / 2];
}

// The paper's "after tuning": the fastest (θ, Nlevels) of a small sweep around the default.
Run tuned(const Args &a, const std::vector<cd> &z, const std::vector<cd> &q, int threads,
          Backend backend) {
  Args quick = a;
  quick.reps = 1;
  const int l0 = fmm2d_default_levels(static_cast<std::int64_t>(z.size()));
  // The GPU's near field is cheap: its optimum sits one or two levels above the CPU's (seed 004
  // Paper IV §3.2).
  const int lo = backend == Backend::cuda ? l0 - 3 : l0 - 1,
            hi = backend == Backend::cuda ? l0 : l0;
  std::vector<Run> probes;
  for (int l = std::max(2, lo); l <= std::min(14, hi); ++l)
    for (double th : {0.45, 0.55})
      probes.push_back(measure(quick, z, q, th, l, threads, backend));
  std::sort(probes.begin(), probes.end(),
            [](const Run &x, const Run &y) { return x.total < y.total; });
  // One probe is one call: a slow outlier could hide the best point, so the two fastest are
  // measured in full and the faster kept.
  Run best = measure(a, z, q, probes[0].theta, probes[0].levels, threads, backend);
  if (probes.size() > 1) {
    const Run second = measure(a, z, q, probes[1].theta, probes[1].levels, threads, backend);
    if (second.total < best.total)
      best = second;
  }
  return best;
}

std::string row(const Run &r) {
  return fmt::format("| {} | {} | {:.2f} | {} | {} | {:.4f} | {:.4f} ({:.4f} + {:.4f}) | {:.4f} | "
                     "{:.4f} | {:.4f} | {:.4f} | {} | {:.2e} |",
                     r.backend, r.threads, r.theta, r.levels, r.order, r.total, r.partition,
                     r.split, r.connect, r.upward, r.downward, r.near, r.gpu_near, r.m2l,
                     static_cast<double>(r.p2p));
}
const char *header =
    "| backend | threads | θ | levels | p | total [s] | partition (splits + lists) | upward | "
    "downward | near (CPU or wait) | GPU near | M2L | P2P pairs |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|";

std::string json_run(const Run &r) {
  return fmt::format("{{\"backend\":\"{}\",\"threads\":{},\"theta\":{},\"levels\":{},\"p\":{},"
                     "\"total\":{},\"partition\":{},\"upward\":{},\"downward\":{},\"near\":{},"
                     "\"gpu_near\":{},\"m2l\":{},\"p2p\":{},\"error\":{}}}",
                     r.backend, r.threads, r.theta, r.levels, r.order, r.total, r.partition,
                     r.upward, r.downward, r.near, r.gpu_near, r.m2l, r.p2p, r.error);
}

void write_json(const Args &a, const std::vector<Run> &runs, const std::string &extra = "") {
  if (a.json.empty())
    return;
  std::ostringstream os;
  os << "{\"mode\":\"" << a.mode << "\",\"n\":" << a.n << ",\"dist\":\"" << a.dist
     << "\",\"tol\":" << a.tol << extra << ",\"runs\":[";
  for (std::size_t i = 0; i < runs.size(); ++i)
    os << (i ? "," : "") << json_run(runs[i]);
  os << "]}\n";
  io::write_text(a.json, os.str(), true);
}

std::vector<int> int_list(const std::string &s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string t;
  while (std::getline(ss, t, ','))
    v.push_back(std::stoi(t));
  return v;
}

int mode_time(const Args &a) {
  const auto z = make_points(a.dist, a.n, 1);
  const auto q = make_strengths(a.n, 2, a.positive);
  const Backend b = parse_backend(a.backend);
  std::vector<cd> u;
  Run r = a.tune ? tuned(a, z, q, a.threads, b) : measure(a, z, q, a.theta, a.levels, a.threads, b);
  {
    Args one = a;
    one.reps = 0;
    measure(one, z, q, r.theta, r.levels, a.threads, b, &u);
  }
  const auto at = sample(a.n, a.check);
  const auto ref = reference(a.kernel == "harmonic", z, q, at);
  r.error = rel_error(u, ref, at);
  fmt::print("fmm2d time: n {} {}, {} kernel, tol {:.0e}{}\n\n{}\n{} error {} |\n", a.n, a.dist,
             a.kernel, a.tol, a.tune ? ", tuned" : "", std::string(header) + " error |", row(r),
             r.error >= 0 ? fmt::format("{:.2e}", r.error) : "not checked (--check 0)");
  if (!a.save.empty()) {
    std::filesystem::create_directories(a.save);
    Table<double> pts(a.n, 2), str(a.n, 2), ri(static_cast<std::int64_t>(at.size()), 1),
        rv(static_cast<std::int64_t>(at.size()), 2), meta(1, 3);
    for (std::int64_t i = 0; i < a.n; ++i) {
      pts(i, 0) = z[i].real(), pts(i, 1) = z[i].imag();
      str(i, 0) = q[i].real(), str(i, 1) = q[i].imag();
    }
    for (std::size_t s = 0; s < at.size(); ++s) {
      ri(static_cast<std::int64_t>(s), 0) = static_cast<double>(at[s]);
      rv(static_cast<std::int64_t>(s), 0) = ref[s].real();
      rv(static_cast<std::int64_t>(s), 1) = ref[s].imag();
    }
    meta(0, 0) = r.total, meta(0, 1) = a.tol, meta(0, 2) = r.error;
    io::write_table(a.save + "/sources.npy", pts, {.overwrite = true});
    io::write_table(a.save + "/strengths.npy", str, {.overwrite = true});
    io::write_table(a.save + "/reference_index.npy", ri, {.overwrite = true});
    io::write_table(a.save + "/reference.npy", rv, {.overwrite = true});
    io::write_table(a.save + "/ksum.npy", meta, {.overwrite = true});
    fmt::print("saved the points, strengths and reference under {}\n", a.save);
  }
  write_json(a, {r});
  return 0;
}

int mode_scaling(const Args &a) {
  const auto z = make_points(a.dist, a.n, 1);
  const auto q = make_strengths(a.n, 2, a.positive);
  std::vector<Run> runs;
  fmt::print("fmm2d scaling: n {} {}, {} kernel, tol {:.0e}, tuned per row\n\n{}\n", a.n, a.dist,
             a.kernel, a.tol, header);
  double one = 0, best_cpu = 1e300;
  for (int t : int_list(a.threads_list)) {
    Run r = tuned(a, z, q, t, Backend::cpu);
    if (one == 0)
      one = r.total;
    best_cpu = std::min(best_cpu, r.total);
    fmt::print("{} speed-up {:.2f}\n", row(r), one / r.total);
    std::fflush(stdout);
    runs.push_back(r);
  }
  std::string extra;
  if (a.gpu) {
    const int tmax = int_list(a.threads_list).back();
    Run h = tuned(a, z, q, tmax, Backend::cuda);
    fmt::print("{} hybrid / CPU-only (best) {:.2f}x, vs 1 thread {:.1f}x\n", row(h),
               best_cpu / h.total, one / h.total);
    runs.push_back(h);
    extra = fmt::format(",\"hybrid_speedup\":{}", best_cpu / h.total);
  }
  write_json(a, runs, extra);
  return 0;
}

int mode_sweep(const Args &a) {
  const auto z = make_points(a.dist, a.n, 1);
  const auto q = make_strengths(a.n, 2, a.positive);
  const Backend b = parse_backend(a.backend);
  double lo = 0.3, hi = 0.76, step = 0.05;
  std::sscanf(a.thetas.c_str(), "%lf:%lf:%lf", &lo, &hi, &step);
  std::vector<int> levels = a.levels_list.empty() ? std::vector<int>{fmm2d_default_levels(a.n) - 1,
                                                                     fmm2d_default_levels(a.n)}
                                                  : int_list(a.levels_list);
  std::ostringstream csv;
  csv << "levels,theta,p,total,partition,upward,downward,near,gpu_near,m2l_cpu_part,q_part\n";
  std::vector<Run> runs;
  fmt::print("fmm2d sweep (figs. 4.1–4.2): n {} {}, backend {}\n\n{}\n", a.n, a.dist, a.backend,
             header);
  for (int l : levels)
    for (double th = lo; th <= hi + 1e-9; th += step) {
      const Run r = measure(a, z, q, th, l, a.threads, b);
      fmt::print("{}\n", row(r));
      std::fflush(stdout);
      // The paper's split (4.1): M2L = the downward pass, P2P = the near field, Q = the rest.
      csv << fmt::format("{},{:.3f},{},{},{},{},{},{},{},{},{}\n", l, th, r.order, r.total,
                         r.partition, r.upward, r.downward, r.near, r.gpu_near, r.downward,
                         r.total - r.downward - (b == Backend::cuda ? r.gpu_near : r.near));
      runs.push_back(r);
    }
  if (!a.csv.empty())
    io::write_text(a.csv, csv.str(), true);
  write_json(a, runs);
  return 0;
}

int mode_m2l(const Args &a) {
  // Seed 002 table 2 (TESLA C1060, single precision): million translations per second.
  const double seed_mtps[3][6] = {{37.28, 97.57, 136.54, 152.49, 159.93, 163.31},
                                  {29.13, 56.71, 71.84, 77.37, 79.31, 80.05},
                                  {22.99, 40.14, 47.82, 50.07, 50.93, 51.14}};
  const std::int64_t counts[6] = {2160, 9072, 36720, 147312, 589680, 2359152};
  const int ps[3] = {8, 12, 16};
  std::ostringstream js;
  js << "{\"mode\":\"m2l\",\"rows\":[";
  bool first = true;
  for (const std::string prec : {"f32", "f64"}) {
    if (a.precision != "both" && a.precision != prec)
      continue;
    fmt::print("\nM2L row traversal on the GPU, {} (seed 002 table 2 format; ops = 8 p² per "
               "translation, bytes = 2 p complex per translation)\n\n| # of terms | # of trans. "
               "| M2L kernel [s] | Data HtD [s] | Data DtH [s] | OPS. [Giga] | B. [GB/s] | Mill. "
               "trans. per sec | seed 002 C1060 | ratio | max rel. diff. to CPU |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|\n",
               prec);
    for (int pi = 0; pi < 3; ++pi)
      for (int ci = 0; ci < 6; ++ci) {
        const int p = ps[pi];
        const std::int64_t n = counts[ci];
        const auto r = prec == "f32" ? fmm2d::m2l_gpu_benchmark<float>(p, n, 27, a.reps, 0)
                                     : fmm2d::m2l_gpu_benchmark<double>(p, n, 27, a.reps, 0);
        const double tps = static_cast<double>(n) / r.kernel;
        const double gops = 8.0 * p * p * tps * 1e-9;
        const double bytes = 2.0 * p * (prec == "f32" ? 8 : 16);
        fmt::print("| {} | {} | {:.2e} | {:.2e} | {:.2e} | {:.1f} | {:.1f} | {:.1f} | {:.2f} | "
                   "{:.0f}x | {:.1e} |\n",
                   p, n, r.kernel, r.upload, r.download, gops, bytes * tps * 1e-9, tps * 1e-6,
                   seed_mtps[pi][ci], tps * 1e-6 / seed_mtps[pi][ci], r.max_rel_diff);
        std::fflush(stdout);
        js << (first ? "" : ",")
           << fmt::format("{{\"precision\":\"{}\",\"p\":{},\"translations\":{},\"kernel\":{},"
                          "\"upload\":{},\"download\":{},\"gops\":{},\"translations_per_s\":{},"
                          "\"seed_mtps\":{},\"max_rel_diff\":{}}}",
                          prec, p, n, r.kernel, r.upload, r.download, gops, tps, seed_mtps[pi][ci],
                          r.max_rel_diff);
        first = false;
      }
  }
  js << "]}\n";
  if (!a.json.empty())
    io::write_text(a.json, js.str(), true);
  return 0;
}

} // namespace

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
      else if (k == "--n")
        a.n = static_cast<std::int64_t>(std::stod(need(i)));
      else if (k == "--dist")
        a.dist = need(i);
      else if (k == "--kernel")
        a.kernel = need(i);
      else if (k == "--tol")
        a.tol = std::stod(need(i));
      else if (k == "--backend")
        a.backend = need(i);
      else if (k == "--gpu-m2l")
        a.gpu_m2l = true;
      else if (k == "--gpu")
        a.gpu = true;
      else if (k == "--threads") {
        const std::string v = need(i);
        if (v.find(',') != std::string::npos)
          a.threads_list = v;
        else
          a.threads = std::stoi(v), a.threads_list = v;
      } else if (k == "--theta")
        a.theta = std::stod(need(i));
      else if (k == "--thetas")
        a.thetas = need(i);
      else if (k == "--levels") {
        const std::string v = need(i);
        if (v.find(',') != std::string::npos)
          a.levels_list = v;
        else
          a.levels = std::stoi(v), a.levels_list = v;
      } else if (k == "--tune")
        a.tune = true;
      else if (k == "--positive")
        a.positive = true;
      else if (k == "--order")
        a.order = std::stoi(need(i));
      else if (k == "--reps")
        a.reps = std::stoi(need(i));
      else if (k == "--check")
        a.check = std::stoll(need(i));
      else if (k == "--save")
        a.save = need(i);
      else if (k == "--json")
        a.json = need(i);
      else if (k == "--csv")
        a.csv = need(i);
      else if (k == "--precision")
        a.precision = need(i);
      else
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("unknown option '{}' (see --help)", k));
    }
    if (a.dist != "uniform" && a.dist != "line" && a.dist != "cluster")
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("--dist {}: valid are uniform, line, cluster", a.dist));
    if (a.mode == "time")
      return mode_time(a);
    if (a.mode == "scaling")
      return mode_scaling(a);
    if (a.mode == "sweep")
      return mode_sweep(a);
    if (a.mode == "m2l")
      return mode_m2l(a);
    throw Error(ErrorCode::invalid_argument,
                fmt::format("unknown mode '{}'; valid: time, scaling, sweep, m2l", a.mode));
  } catch (const std::exception &e) {
    fmt::print(stderr, "fmm2d_bench: {}\n", e.what());
    return 2;
  }
}
