// The 3D FMM benchmark (issue 5), public API only (DirectSum with method fmm):
//   fmm3d_bench time  --kernel K --n N [--dist D] [--tol T] [--backend B] [--precision f32|f64]
//                     [--eps E] [--reps R] [--check S] [--save DIR] [--order P] [--leaf S]
//                     [--lowrank 0|1]  (the M2L in low rank on both backends or neither;
//                     default: the library's, CPU yes, GPU from 2^22 points) [--devices 0,1]
//                     (the GPUs that share the targets; default: the library's choice)
//                     [--mixed 0|1] (from 1e-4 on: the CPU's low-rank M2L and near sums, the
//                     GPU's near field, in float; default 1)
//       setup and execute times (median of R executes after W ≥ 1 warm-ups, --warmup W, default 1;
//       the GPU FMM takes pinned host copies from its fourth execute), the order and tree, and
//       the relative l2 error on S sampled targets against the fp64 reference; --save writes the
//       points, weights and result as .npy (for the FMM3D peer script, same points).
//   fmm3d_bench accuracy --n N [--backend B]
//       the accuracy matrix: kernels × distributions × tolerances, fp64 and fp32.
//   fmm3d_bench orders --n N [--kernel K|all] [--max-order P] [--backend B]
//       every fixed order 2 … P per kernel, distribution and ε: the order choice's estimate
//       against the measured error (the calibration of the order choice, issue 26).
//   fmm3d_bench crossover [--backend B] [--precision P]
//       per kernel and tolerance the smallest N (powers of 2) where the FMM's execute beats the
//       direct sum's on the same backend.
// Every mode prints a Markdown table and, with --json FILE, writes the rows as JSON.
#include <ksum/datasets.hpp>
#include <ksum/direct.hpp>
#include <ksum/io.hpp>
#include <ksum/reference.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace ksum;

namespace {

struct Args {
  std::string mode = "time", kernel = "laplace", dist = "uniform", backend = "auto",
              precision = "f64", save, json;
  std::int64_t n = 1000000, check = 500;
  double tol = 1e-6, eps = 1;
  int reps = 3, warmup = 1;
  int order = 0, max_order = 12; // orders mode: the fixed order of a run, the last one tried
  std::int64_t leaf = 0;         // fixed leaf size (0: the FMM's choice)
  std::vector<int> devices;      // --devices 0,1 (empty: the library's choice)
  int lowrank = -1; // the M2L's low-rank operators on both backends (1), neither (0), or the
                    // library's defaults (−1: CPU yes, GPU from 2^22 points)
  bool mixed_precision = true; // DirectOptions::fmm_mixed_precision
};

Table<double> make_points(const std::string &d, std::int64_t n, std::uint64_t seed) {
  if (d == "plummer")
    return datasets::plummer(n, seed);
  if (d == "shell")
    return datasets::sphere_shell(n, seed);
  return datasets::uniform_cube(n, seed);
}

Table<double> weights(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Table<double> w(n, 1);
  for (std::int64_t i = 0; i < n; ++i)
    w(i, 0) = u(rng);
  return w;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double sampled_error(Kernel k, double eps, const Table<double> &p, const Table<double> &w,
                     const Table<double> &u, std::int64_t samples) {
  const std::int64_t n = p.rows(), s = std::min(n, samples);
  std::vector<std::int64_t> rows;
  for (std::int64_t i = 0; i < s; ++i)
    rows.push_back(i * n / s);
  const auto ref = reference_sum(k, eps, p, p, w, false, true, rows);
  double e2 = 0, r2 = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double d = u(rows[i], 0) - ref(static_cast<std::int64_t>(i), 0);
    e2 += d * d;
    r2 += ref(static_cast<std::int64_t>(i), 0) * ref(static_cast<std::int64_t>(i), 0);
  }
  return std::sqrt(e2 / std::max(r2, 1e-300));
}

struct Timing {
  double setup = 0, execute = 0, error = 0;
  SumStats stats;
  Backend backend = Backend::cpu;
};

template <class T>
Timing run(const Args &a, Method method, const Table<double> &p, const Table<double> &w,
           Table<double> *out = nullptr) {
  DirectOptions o;
  o.kernel = parse_kernel(a.kernel);
  o.eps = a.eps;
  o.method = method;
  o.tolerance = a.tol;
  o.fmm_order = a.order;
  o.fmm_leaf_size = a.leaf;
  if (a.lowrank >= 0) {
    o.fmm_lowrank = o.fmm_lowrank_gpu = a.lowrank == 1;
    o.fmm_lowrank_gpu_from = 0; // --lowrank 1: whatever the size
  }
  o.fmm_mixed_precision = a.mixed_precision;
  o.backend = parse_backend(a.backend);
  o.devices = a.devices;
  const auto pt = p.cast<T>();
  const auto wt = w.cast<T>();
  Timing t;
  const auto t0 = std::chrono::steady_clock::now();
  DirectSum<T> plan(o);
  plan.set_points(pt);
  t.setup = seconds_since(t0);
  Table<T> u = plan.execute(wt); // warm-up
  for (int r = 1; r < a.warmup; ++r)
    u = plan.execute(wt);
  std::vector<double> times;
  for (int r = 0; r < a.reps; ++r) {
    const auto t1 = std::chrono::steady_clock::now();
    u = plan.execute(wt);
    times.push_back(seconds_since(t1));
  }
  // The median (of an even count the mean of the middle two: the upper one alone made a median
  // of 2 the slower execute, which may hold one-time costs such as the GPU FMM's pinned buffers,
  // allocated in its fourth apply).
  std::sort(times.begin(), times.end());
  const std::size_t mid = times.size() / 2;
  t.execute = times.size() % 2 ? times[mid] : 0.5 * (times[mid - 1] + times[mid]);
  t.stats = plan.stats();
  t.backend = plan.backend();
  const auto ud = u.template cast<double>();
  if (a.check > 0)
    t.error = sampled_error(o.kernel, a.eps, p.cast<T>().template cast<double>(),
                            w.cast<T>().template cast<double>(), ud, a.check);
  if (out)
    *out = ud;
  return t;
}

Timing run_any(const Args &a, Method m, const Table<double> &p, const Table<double> &w,
               Table<double> *out = nullptr) {
  return a.precision == "f32" ? run<float>(a, m, p, w, out) : run<double>(a, m, p, w, out);
}

void time_mode(const Args &a) {
  const auto p = make_points(a.dist, a.n, 1);
  const auto w = weights(a.n, 2);
  Table<double> u;
  const auto t = run_any(a, Method::fmm, p, w, &u);
  fmt::print(
      "| kernel | dist | N | tol | prec | backend | order | M2L rank | leaf | depth | boxes | "
      "setup [s] | tree (sort) / operators [s] | execute [s] | up / M2L / down / near [s] "
      "| transfers [s] | rel. l2 error |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  const auto &s = t.stats;
  fmt::print(
      "| {} | {} | {} | {:.0e} | {} | {} | {} | {} | {} | {} | {} | {:.4f} | {:.4f} "
      "({:.4f}) / {:.4f} | {:.4f} | {:.4f} / {:.4f} / {:.4f} / {:.4f} | {:.4f} | {:.2e} |\n",
      a.kernel, a.dist, a.n, a.tol, a.precision,
      a.devices.empty() ? std::string(to_string(t.backend))
                        : fmt::format("{} {}", to_string(t.backend), fmt::join(a.devices, ",")),
      s.fmm_order, s.fmm_m2l_rank > 0 ? fmt::format("{:.1f}", s.fmm_m2l_rank) : std::string("full"),
      s.fmm_leaf_size, s.tree_depth, s.tree_boxes, t.setup, s.seconds_tree, s.seconds_sort,
      s.seconds_operators, t.execute, s.seconds_upward, s.seconds_m2l, s.seconds_downward,
      s.seconds_near, s.seconds_transfer, t.error);
  if (!a.save.empty()) {
    io::write_table(a.save + "/points.npy", p, {.overwrite = true});
    io::write_table(a.save + "/weights.npy", w, {.overwrite = true});
    io::write_table(a.save + "/ksum_u.npy", u, {.overwrite = true});
  }
  if (!a.json.empty())
    std::ofstream(a.json) << fmt::format(
        "{{\"kernel\": \"{}\", \"dist\": \"{}\", \"n\": {}, \"tol\": {}, \"precision\": \"{}\", "
        "\"backend\": \"{}\", \"order\": {}, \"depth\": {}, \"setup_s\": {}, \"tree_s\": {}, "
        "\"sort_s\": {}, \"operators_s\": {}, \"execute_s\": {}, \"error\": {}}}\n",
        a.kernel, a.dist, a.n, a.tol, a.precision, to_string(t.backend), t.stats.fmm_order,
        t.stats.tree_depth, t.setup, s.seconds_tree, s.seconds_sort, s.seconds_operators, t.execute,
        t.error);
}

void accuracy_mode(Args a) {
  fmt::print("| kernel | dist | prec | tol | order | rel. l2 error | error / tol |\n"
             "|---|---|---|---|---|---|---|\n");
  std::string rows;
  a.reps = 1;
  for (const std::string k :
       {"laplace", "multiquadric", "inverse-multiquadric", "gaussian", "matern2", "tps", "cubic"})
    for (const std::string d : {"uniform", "plummer", "shell"})
      for (const std::string prec : {"f64", "f32"}) {
        const auto tols = prec == "f64" ? std::vector<double>{1e-3, 1e-4, 1e-6, 1e-8, 1e-10}
                                        : std::vector<double>{1e-3, 1e-4, 1e-5};
        const auto p = make_points(d, a.n, 3);
        const auto w = weights(a.n, 4);
        for (const double tol : tols) {
          Args b = a;
          b.kernel = k;
          b.dist = d;
          b.precision = prec;
          b.tol = tol;
          b.eps = k == "laplace" ? 1 : 3;
          const auto t = run_any(b, Method::fmm, p, w);
          fmt::print("| {} | {} | {} | {:.0e} | {} | {:.2e} | {:.2f} |\n", k, d, prec, tol,
                     t.stats.fmm_order, t.error, t.error / tol);
          rows += fmt::format("{}{{\"kernel\": \"{}\", \"dist\": \"{}\", \"precision\": \"{}\", "
                              "\"tol\": {}, \"order\": {}, \"error\": {}, \"n\": {}}}",
                              rows.empty() ? "" : ",\n", k, d, prec, tol, t.stats.fmm_order,
                              t.error, a.n);
        }
      }
  if (!a.json.empty())
    std::ofstream(a.json) << "[\n" << rows << "\n]\n";
}

// The order calibration (issue 26): per kernel, distribution and shape parameter, every order p
// from 2 to --max-order at N points (fp64, signed weights): the estimate the order choice uses
// (stats().estimated_error), the measured relative l2 error, and their ratio.
void orders_mode(Args a) {
  fmt::print("| kernel | dist | eps | order | estimate | rel. l2 error | error / estimate |\n"
             "|---|---|---|---|---|---|---|\n");
  std::string rows;
  a.reps = 1;
  std::vector<std::string> kernels;
  if (a.kernel == "all") {
    for (const auto &info : all_kernels())
      if (info.kind != Kernel::log)
        kernels.emplace_back(info.name);
  } else {
    kernels.push_back(a.kernel);
  }
  for (const auto &k : kernels) {
    const Kernel kk = parse_kernel(k);
    const bool scale_free = kk == Kernel::laplace || kk == Kernel::linear || kk == Kernel::cubic ||
                            kk == Kernel::quintic;
    for (const std::string d : {"uniform", "plummer"})
      for (const double eps : scale_free ? std::vector<double>{1} : std::vector<double>{1, 3}) {
        const auto p = make_points(d, a.n, 3);
        const auto w = weights(a.n, 4);
        for (int order = 2; order <= a.max_order; ++order) {
          Args b = a;
          b.kernel = k;
          b.dist = d;
          b.precision = "f64";
          b.eps = eps;
          b.order = order;
          const auto t = run_any(b, Method::fmm, p, w);
          const double est = t.stats.estimated_error;
          fmt::print("| {} | {} | {} | {} | {:.2e} | {:.2e} | {:.3g} |\n", k, d, eps, order, est,
                     t.error, est > 0 ? t.error / est : 0.0);
          std::fflush(stdout);
          rows += fmt::format("{}{{\"kernel\": \"{}\", \"dist\": \"{}\", \"eps\": {}, "
                              "\"order\": {}, \"estimate\": {}, \"error\": {}, \"n\": {}}}",
                              rows.empty() ? "" : ",\n", k, d, eps, order, est, t.error, a.n);
        }
      }
  }
  if (!a.json.empty())
    std::ofstream(a.json) << "[\n" << rows << "\n]\n";
}

void crossover_mode(Args a) {
  fmt::print("| kernel | tol | prec | backend | crossover N | FMM [s] | direct [s] at that N |\n"
             "|---|---|---|---|---|---|---|\n");
  std::string rows;
  a.check = 0;
  a.reps = 3;
  for (const std::string k : {"laplace", "multiquadric", "gaussian"})
    for (const double tol : {1e-3, 1e-6, 1e-9}) {
      if (a.precision == "f32" && tol < 1e-6)
        continue;
      Args b = a;
      b.kernel = k;
      b.tol = tol;
      b.eps = k == "laplace" ? 1 : 3;
      std::int64_t found = 0;
      Timing tf, td;
      for (std::int64_t n = 4096; n <= (std::int64_t{1} << 22) && !found; n *= 2) {
        const auto p = make_points("uniform", n, 5);
        const auto w = weights(n, 6);
        tf = run_any(b, Method::fmm, p, w);
        td = run_any(b, Method::direct, p, w);
        if (tf.execute < td.execute)
          found = n;
      }
      fmt::print("| {} | {:.0e} | {} | {} | {} | {:.4f} | {:.4f} |\n", k, tol, b.precision,
                 to_string(tf.backend), found ? fmt::format("{}", found) : "> 4194304", tf.execute,
                 td.execute);
      rows +=
          fmt::format("{}{{\"kernel\": \"{}\", \"tol\": {}, \"precision\": \"{}\", "
                      "\"backend\": \"{}\", \"crossover\": {}, \"fmm_s\": {}, \"direct_s\": {}}}",
                      rows.empty() ? "" : ",\n", k, tol, b.precision, to_string(tf.backend), found,
                      tf.execute, td.execute);
    }
  if (!a.json.empty())
    std::ofstream(a.json) << "[\n" << rows << "\n]\n";
}

} // namespace

int main(int argc, char **argv) {
  Args a;
  int i = 1;
  if (argc > 1 && argv[1][0] != '-')
    a.mode = argv[i++];
  for (; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--kernel")
      a.kernel = v;
    else if (k == "--n")
      a.n = static_cast<std::int64_t>(std::stod(v));
    else if (k == "--dist")
      a.dist = v;
    else if (k == "--tol")
      a.tol = std::stod(v);
    else if (k == "--backend")
      a.backend = v;
    else if (k == "--precision")
      a.precision = v;
    else if (k == "--eps")
      a.eps = std::stod(v);
    else if (k == "--reps")
      a.reps = std::stoi(v);
    else if (k == "--warmup")
      a.warmup = std::stoi(v);
    else if (k == "--check")
      a.check = std::stoll(v);
    else if (k == "--save")
      a.save = v;
    else if (k == "--json")
      a.json = v;
    else if (k == "--max-order")
      a.max_order = std::stoi(v);
    else if (k == "--order")
      a.order = std::stoi(v);
    else if (k == "--leaf")
      a.leaf = static_cast<std::int64_t>(std::stod(v));
    else if (k == "--lowrank")
      a.lowrank = v == "0" ? 0 : 1;
    else if (k == "--mixed")
      a.mixed_precision = v != "0";
    else if (k == "--devices") {
      std::stringstream ss(v);
      for (std::string id; std::getline(ss, id, ',');)
        a.devices.push_back(std::stoi(id));
    } else {
      fmt::print(stderr, "fmm3d_bench: unknown option {}\n", k);
      return 2;
    }
  }
  try {
    if (a.mode == "accuracy")
      accuracy_mode(a);
    else if (a.mode == "crossover")
      crossover_mode(a);
    else if (a.mode == "orders")
      orders_mode(a);
    else
      time_mode(a);
  } catch (const std::exception &e) {
    fmt::print(stderr, "fmm3d_bench: {}\n", e.what());
    return 1;
  }
}
