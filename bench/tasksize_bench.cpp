// Task-size model benchmark (issue 24; seed 004 Paper II, "A simple model for tuning tasks"): the
// paper's test problems with OpenMP tasks (src/runtime/tasksize_problems.hpp) timed over block
// sizes, against the three models of include/ksum/tasksize.hpp.
//   tasksize_bench [--problems matmul_few_loops,...,cholesky] [--threads 1,2,T]
//                  [--n 1024 | --n name=N,name=N] [--s-min 16] [--reps 3] [--cost-cap 0.05]
//                  [--time-limit 120] [--json FILE] [--png-prefix PREFIX]
// For each thread count T the OpenMP task overhead O is measured (measure_task_overhead), and for
// each problem the work-unit cost C(S) from single tasks on one thread (TaskBench, through
// measure_work_cost) at the swept sizes whose single task is predicted to take under --cost-cap
// seconds (C(S) is held constant beyond the last measured size). Block sizes: the powers of two
// and three times the powers of two within [--s-min, n], and n. Measured: run() (the task-parallel
// part), median of up to --reps runs (fewer when their sum passes 1.5 s). Predicted:
//   basic     constant C = C(S) at the median swept size, P = min(T, Program::parallelism) (§4.1)
//   variable  C(S) interpolated, the basic P (§4.2)
//   full      C(S) and the parallelism by task kind (§4.3)
//   full+O(w) the full model with O a function of each task's work (Model::overhead_by_work,
//             measure_task_overhead_curve; our extension, not the paper's)
// Per problem and T a markdown table (s, measured seconds, the three predictions) and a summary:
// the measured best s, each model's predicted best s and the measured time there relative to the
// measured best (the paper: Cholesky ~4 % slower than optimum), and the largest relative spread
// of the checksum over s (the problems compute the same result at every s). --json writes all of
// it; --png-prefix P writes P<problem>_T<T>.png, log-log seconds over block size (measured solid,
// models dashed). Default n: matmul_few_loops 512 (its naive loops are slow), the BLAS matmuls
// 1024, nbody_light 8192, nbody_heavy 4096, cholesky 1536; measurements stop once --time-limit
// seconds have passed (the tables of what was measured are still printed).
#include "bench_common.hpp"
#include "log_plot.hpp"

#include "runtime/tasksize_problems.hpp"

#include <ksum/error.hpp>
#include <ksum/tasksize.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

using namespace ksum;
namespace tp = ksum::tasksize::problems;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  std::vector<tp::Kind> problems = tp::all_kinds();
  std::vector<int> threads;
  std::map<tp::Kind, std::int64_t> n;
  std::int64_t all_n = 0;
  std::int64_t s_min = 16;
  int reps = 3;
  double cost_cap = 0.05, time_limit = 120;
  std::string json, png_prefix;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size();
  return m == 0 ? 0.0 : m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

// Powers of two and 3·2^k within [lo, n], and n.
std::vector<std::int64_t> block_sizes(std::int64_t lo, std::int64_t n) {
  std::vector<std::int64_t> s;
  for (std::int64_t p = 1; p <= n; p *= 2) {
    if (p >= lo)
      s.push_back(p);
    if (3 * p / 2 >= lo && 3 * p / 2 <= n && p >= 2)
      s.push_back(3 * p / 2);
  }
  s.push_back(n);
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}

std::string sci(double v) {
  return fmt::format("{:.3g}", v);
}

} // namespace

int main(int argc, char **argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--help" || s == "-h")
      return bench::print_header_help(__FILE__);
    auto next = [&] {
      if (i + 1 >= argc) {
        fmt::print(stderr, "tasksize_bench: {} needs a value\n", s);
        std::exit(2);
      }
      return std::string(argv[++i]);
    };
    try {
      if (s == "--problems") {
        a.problems.clear();
        for (const std::string &p : bench::split(next()))
          a.problems.push_back(tp::parse_kind(p));
      } else if (s == "--threads") {
        for (const std::string &t : bench::split(next()))
          a.threads.push_back(std::stoi(t));
      } else if (s == "--n") {
        for (const std::string &item : bench::split(next())) {
          const auto eq = item.find('=');
          if (eq == std::string::npos)
            a.all_n = static_cast<std::int64_t>(std::stod(item));
          else
            a.n[tp::parse_kind(item.substr(0, eq))] =
                static_cast<std::int64_t>(std::stod(item.substr(eq + 1)));
        }
      } else if (s == "--s-min")
        a.s_min = static_cast<std::int64_t>(std::stod(next()));
      else if (s == "--reps")
        a.reps = std::stoi(next());
      else if (s == "--cost-cap")
        a.cost_cap = std::stod(next());
      else if (s == "--time-limit")
        a.time_limit = std::stod(next());
      else if (s == "--json")
        a.json = next();
      else if (s == "--png-prefix")
        a.png_prefix = next();
      else
        throw std::invalid_argument("unknown option " + s);
    } catch (const std::exception &e) {
      fmt::print(stderr, "tasksize_bench: {}\n(--help for the usage)\n", e.what());
      return 2;
    }
  }
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (a.threads.empty())
    a.threads = {1, 2, hw};
  std::sort(a.threads.begin(), a.threads.end());
  a.threads.erase(std::unique(a.threads.begin(), a.threads.end()), a.threads.end());
  if (a.threads.front() < 1 || a.s_min < 1 || a.reps < 1) {
    fmt::print(stderr, "tasksize_bench: --threads, --s-min and --reps must be ≥ 1\n");
    return 2;
  }

  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  json out;
  out["machine"] = tasksize::machine_description();
  out["threads"] = a.threads;
  out["timing"] = "run(): omp_get_wtime around the parallel region that creates and runs the "
                  "tasks (set-up excluded), median of up to --reps runs";
  fmt::print("# tasksize_bench: {}; threads {}\n", tasksize::machine_description(),
             fmt::join(a.threads, ", "));

  // O per thread count.
  std::map<int, double> overhead;
  std::map<int, tasksize::WorkCost> by_work;
  for (int T : a.threads) {
    std::string why;
    overhead[T] = tasksize::measure_task_overhead(T, 4000, 7, &why);
    fmt::print("# task overhead O(T = {}) = {} s per task{}\n", T, sci(overhead[T]),
               why.empty() ? "" : " (" + why + ")");
    out["overhead"][std::to_string(T)] = overhead[T];
    if (!why.empty())
      out["fallback"].push_back(why);
    std::vector<std::string> fb;
    by_work[T] = tasksize::measure_task_overhead_curve(T, 5, &fb);
    std::string line;
    json pts = json::array();
    for (const auto &[w, o] : by_work[T].points()) {
      line += fmt::format(" {}:{}", sci(w), sci(o));
      pts.push_back({w, o});
    }
    fmt::print("# O(w) on T = {}, s per task at w s of work per task:{}\n", T,
               line.empty() ? " (no point above the noise: the constant O)" : line);
    out["overhead_by_work"][std::to_string(T)] = pts;
    for (const std::string &f : fb)
      out["fallback"].push_back(f);
  }

  int rc = 0;
  for (tp::Kind kind : a.problems) {
    const std::string pname(tp::name(kind));
    const std::int64_t n = a.n.count(kind) ? a.n[kind]
                           : a.all_n > 0   ? a.all_n
                                           : tp::default_n(kind);
    json pj = {{"problem", pname}, {"n", n}};
    try {
      const std::vector<std::int64_t> sizes = block_sizes(std::min(a.s_min, n), n);
      // C(S) on one thread, smallest size first, while a single task stays under the cap.
      tasksize::WorkCost cost;
      {
        tp::TaskBench tb(kind, n);
        std::vector<std::string> fallback;
        double c_prev = 0;
        for (std::int64_t s : sizes) {
          const double units = tp::task_work(kind, static_cast<double>(s));
          if (c_prev > 0 && c_prev * units > a.cost_cap)
            break;
          const tasksize::WorkCost one =
              tasksize::measure_work_cost([&](double S) { tb.run(static_cast<std::int64_t>(S)); },
                                          [&](double S) { return tp::task_work(kind, S); },
                                          {static_cast<double>(s)}, 3, 2e-3, &fallback, pname);
          c_prev = one(static_cast<double>(s));
          cost.add(static_cast<double>(s), c_prev);
        }
        for (const auto &f : fallback)
          pj["fallback"].push_back(f);
      }
      std::vector<std::string> cs;
      for (const auto &[s, c] : cost.points()) {
        cs.push_back(fmt::format("{}: {}", s, sci(c)));
        pj["cost"].push_back({s, c});
      }
      fmt::print("\n## {} (n = {})\n\nC(S), s per work unit (one thread): {}\n", pname, n,
                 fmt::join(cs, ", "));

      std::vector<double> dsizes(sizes.begin(), sizes.end());
      const double c_med = cost(dsizes[dsizes.size() / 2]);
      const tasksize::Describe describe = [&](double S) { return tp::describe(kind, n, S); };

      for (int T : a.threads) {
        // Measured.
        std::vector<double> measured, checks;
        std::vector<std::int64_t> tasks;
        std::vector<double> msizes;
        for (std::int64_t s : sizes) {
          if (elapsed() > a.time_limit)
            break;
          std::vector<double> t;
          double sum = 0, check = 0;
          std::int64_t m = 0;
          for (int r = 0; r < a.reps && (r == 0 || sum < 1.5); ++r) {
            const tp::RunResult res = tp::run(kind, n, s, T);
            t.push_back(res.seconds);
            sum += res.seconds;
            check = res.checksum;
            m = res.tasks;
          }
          msizes.push_back(static_cast<double>(s));
          measured.push_back(median(t));
          checks.push_back(check);
          tasks.push_back(m);
        }
        if (measured.empty()) {
          fmt::print("\nT = {}: skipped (--time-limit {} s reached)\n", T, a.time_limit);
          continue;
        }
        // Predicted over the measured sizes.
        tasksize::Model basic{overhead[T], T, tasksize::WorkCost(c_med),
                              tasksize::ParallelismModel::basic};
        tasksize::Model variable{overhead[T], T, cost, tasksize::ParallelismModel::basic};
        tasksize::Model full{overhead[T], T, cost, tasksize::ParallelismModel::by_kind};
        tasksize::Model full_w = full;
        full_w.overhead_by_work = by_work[T];
        const std::vector<std::pair<std::string, tasksize::Curve>> curves = {
            {"basic", tasksize::predict(basic, describe, msizes)},
            {"variable", tasksize::predict(variable, describe, msizes)},
            {"full", tasksize::predict(full, describe, msizes)},
            {"full+O(w)", tasksize::predict(full_w, describe, msizes)}};

        const std::size_t ibest = static_cast<std::size_t>(
            std::min_element(measured.begin(), measured.end()) - measured.begin());
        double spread = 0;
        for (double c : checks)
          spread = std::max(spread, std::abs(c - checks[0]) / std::abs(checks[0]));

        fmt::print("\n### {} on T = {} (O = {} s)\n\n| s | tasks | measured s | basic | variable "
                   "| full | full+O(w) |\n|---:|---:|---:|---:|---:|---:|---:|\n",
                   pname, T, sci(overhead[T]));
        json rows = json::array();
        for (std::size_t i = 0; i < msizes.size(); ++i) {
          fmt::print("| {} | {} | {} | {} | {} | {} | {} |\n", msizes[i], tasks[i],
                     sci(measured[i]), sci(curves[0].second.runtime[i]),
                     sci(curves[1].second.runtime[i]), sci(curves[2].second.runtime[i]),
                     sci(curves[3].second.runtime[i]));
          rows.push_back({{"s", msizes[i]},
                          {"tasks", tasks[i]},
                          {"measured", measured[i]},
                          {"basic", curves[0].second.runtime[i]},
                          {"variable", curves[1].second.runtime[i]},
                          {"full", curves[2].second.runtime[i]},
                          {"full+O(w)", curves[3].second.runtime[i]},
                          {"checksum", checks[i]}});
        }
        fmt::print("\nmeasured best s = {} ({} s); checksum spread over s {}\n", msizes[ibest],
                   sci(measured[ibest]), sci(spread));
        json tj = {{"threads", T},
                   {"overhead", overhead[T]},
                   {"rows", rows},
                   {"measured_best_s", msizes[ibest]},
                   {"measured_best_seconds", measured[ibest]},
                   {"checksum_spread", spread}};
        for (const auto &[label, c] : curves) {
          const std::size_t ip = static_cast<std::size_t>(
              std::find(msizes.begin(), msizes.end(), c.best_size) - msizes.begin());
          const double rel = measured[ip] / measured[ibest];
          fmt::print("{:9} model: best s = {} (predicted {} s); measured there {} s = {:.3f}× the "
                     "measured best\n",
                     label, c.best_size, sci(c.best_runtime), sci(measured[ip]), rel);
          tj["models"][label] = {{"best_s", c.best_size},
                                 {"predicted_seconds", c.best_runtime},
                                 {"measured_seconds_there", measured[ip]},
                                 {"relative_to_best", rel}};
        }
        if (!a.png_prefix.empty()) {
          std::vector<bench::Curve> pc;
          auto logs = [](const std::vector<double> &v) {
            std::vector<double> l;
            for (double x : v)
              l.push_back(std::log10(x));
            return l;
          };
          pc.push_back({"measured", logs(msizes), logs(measured), false});
          for (const auto &[label, c] : curves)
            pc.push_back({label, logs(c.sizes), logs(c.runtime), true});
          const std::string path = fmt::format("{}{}_T{}.png", a.png_prefix, pname, T);
          const std::string desc = bench::write_log_plot(path, pc);
          fmt::print("plot: {} ({})\n", path, desc);
          tj["png"] = path;
        }
        pj["runs"].push_back(tj);
      }
    } catch (const Error &e) {
      fmt::print(stderr, "tasksize_bench: {}: {}\n", pname, e.what());
      pj["error"] = e.what();
      rc = 1;
    }
    out["problems"].push_back(pj);
  }
  out["seconds"] = elapsed();
  fmt::print("\n# total {:.1f} s\n", elapsed());
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    f << out.dump(1) << "\n";
    if (!f) {
      fmt::print(stderr, "tasksize_bench: cannot write {}\n", a.json);
      rc = 1;
    }
  }
  return rc;
}
