// Moving centres of a global RBF interpolant (issue 23 item 4): GlobalRbfInterpolant::
// move_centres by the Woodbury update of the held inverse (bsm.hpp, InverseUpdate) against a
// refit from scratch of the moved set, through the public API.
//   rbf_update_bench [--sizes 500,1000,2000,4000] [--ranks 1,4,16,64] [--dim 3]
//                    [--kernel multiquadric] [--reps 3] [--threads T] [--json FILE]
// Data: N Halton points in [0, 1]^dim, Franke-type values, shape ε h = 1 with h = N^(−1/dim) (as
// global_bench), the kernel's default polynomial degree, the dense CPU solver. Per N: the
// set-up costs, set_data (assembly + LAPACK dsysv + the residual product) and forming the
// inverse (the first move_centres with CentreUpdate::update: assembly + getrf + getrs + getri).
// Per (N, m): --reps moves of m random centres by up to h/4 in each coordinate (new values too),
// applied in turn to two interpolants, one with CentreUpdate::refit (assembly + dsysv + the
// residual product, as set_data) and one with CentreUpdate::update (the rank-2m update, the
// solve with the inverse and its refinement); median times, their ratio, and after the last move
// the largest relative difference between the two (λ, and evaluate() at 200 random points, each
// relative to the refit's max |·|). "auto" is what CentreUpdate::automatic does at that (N, m);
// "break-even" the number of moves after which forming the inverse has paid for itself,
// (inverse − refit) / (refit − update). Prints a markdown table; --json FILE writes the numbers.
#include "bench_common.hpp"

#include <ksum/datasets.hpp>
#include <ksum/device.hpp>
#include <ksum/error.hpp>
#include <ksum/global.hpp>
#include <ksum/kernels.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace ksum;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double value_at(const Table<double> &x, std::int64_t i) {
  double s = 0.5;
  for (std::int64_t k = 0; k < x.cols(); ++k)
    s += std::exp(-4 * (x(i, k) - 0.3) * (x(i, k) - 0.3)) * std::cos((k + 2) * x(i, k));
  return s;
}

double rel_diff(const Table<double> &a, const Table<double> &b) {
  double m = 0, s = 0;
  for (std::int64_t k = 0; k < a.rows() * a.cols(); ++k) {
    m = std::max(m, std::abs(a.data()[k] - b.data()[k]));
    s = std::max(s, std::abs(b.data()[k]));
  }
  return s > 0 ? m / s : m;
}

struct Args {
  std::vector<std::int64_t> sizes{500, 1000, 2000, 4000};
  std::vector<std::int64_t> ranks{1, 4, 16, 64};
  std::int64_t dim = 3;
  Kernel kernel = Kernel::multiquadric;
  int reps = 3;
  int threads = 0;
  std::string json;
};

std::vector<std::int64_t> parse_list(const std::string &s) {
  std::vector<std::int64_t> v;
  for (const std::string &item : bench::split(s))
    v.push_back(static_cast<std::int64_t>(std::stod(item)));
  return v;
}

int run(const Args &a) {
  nlohmann::json out;
  const unsigned hw = std::thread::hardware_concurrency();
  out["ksum_version"] = version();
  out["hardware_threads"] = hw;
  out["threads"] = a.threads;
  out["kernel"] = kernel_info(a.kernel).name;
  out["dim"] = a.dim;
  out["timing"] = "host std::chrono around whole public calls; median of --reps moves";
  fmt::print("# rbf_update_bench: {} hardware threads, threads {}; kernel {}, dim {}, ε h = 1, "
             "{} moves per (N, m)\n\n",
             hw, a.threads > 0 ? std::to_string(a.threads) : "default", kernel_info(a.kernel).name,
             a.dim, a.reps);
  fmt::print("| N | set_data s | inverse s | m | rank 2m | refit s | update s | refit / update "
             "| after evaluate: refit s | update s | ratio | max rel. diff | auto | break-even "
             "moves |\n");
  fmt::print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n");
  std::mt19937_64 rng(7);
  for (const std::int64_t n : a.sizes) {
    const Table<double> x0 = datasets::halton(n, a.dim);
    Table<double> f0(n, 1);
    for (std::int64_t i = 0; i < n; ++i)
      f0(i, 0) = value_at(x0, i);
    const double h = std::pow(double(n), -1.0 / double(a.dim));
    GlobalRbfOptions o;
    o.kernel = a.kernel;
    o.eps = 1.0 / h;
    o.solver = GlobalSolver::dense;
    o.backend = Backend::cpu;
    o.threads = a.threads;
    const Table<double> y = datasets::halton(200, a.dim, 5000);
    for (const std::int64_t m : a.ranks) {
      if (m > n)
        continue;
      GlobalRbfOptions orf = o, oup = o;
      orf.centre_update = CentreUpdate::refit;
      oup.centre_update = CentreUpdate::update;
      GlobalRbfInterpolant refit(orf), update(oup);
      auto t0 = Clock::now();
      refit.set_data(x0, f0);
      const double t_set = seconds(t0);
      update.set_data(x0, f0);
      Table<double> x = x0;
      std::uniform_int_distribution<std::int64_t> pick(0, n - 1);
      std::uniform_real_distribution<double> step(-h / 4, h / 4);
      auto random_move = [&](std::vector<std::int64_t> &index, Table<double> &p, Table<double> &v) {
        index.clear();
        std::vector<bool> used(static_cast<std::size_t>(n), false);
        while (static_cast<std::int64_t>(index.size()) < m) {
          const std::int64_t k = pick(rng);
          if (!used[k]) {
            used[k] = true;
            index.push_back(k);
          }
        }
        p = Table<double>(m, a.dim);
        for (std::int64_t r = 0; r < m; ++r)
          for (std::int64_t q = 0; q < a.dim; ++q)
            p(r, q) = x(index[r], q) + step(rng);
        v = Table<double>(m, 1);
        for (std::int64_t r = 0; r < m; ++r)
          v(r, 0) = value_at(p, r);
        for (std::int64_t r = 0; r < m; ++r)
          for (std::int64_t q = 0; q < a.dim; ++q)
            x(index[r], q) = p(r, q);
      };
      std::vector<std::int64_t> index;
      Table<double> p, v;
      // The first move forms the inverse (a refit by getrf + getrs + getri).
      random_move(index, p, v);
      refit.move_centres(index, p, &v);
      t0 = Clock::now();
      update.move_centres(index, p, &v);
      const double t_inv = seconds(t0);
      std::vector<double> tr, tu;
      std::vector<std::vector<std::int64_t>> moves(static_cast<std::size_t>(a.reps));
      std::vector<Table<double>> mp(moves.size()), mv(moves.size());
      for (int r = 0; r < a.reps; ++r)
        random_move(moves[r], mp[r], mv[r]);
      // The refits, then the updates: each loop in its own steady state (alternating them, the
      // OpenMP threads of a refit's assembly still spin when the update's OpenBLAS threads start,
      // which on 2 cores costs the update several ms: see docs/bsm.md).
      for (int r = 0; r < a.reps; ++r) {
        t0 = Clock::now();
        refit.move_centres(moves[r], mp[r], &mv[r]);
        tr.push_back(seconds(t0));
      }
      for (int r = 0; r < a.reps; ++r) {
        t0 = Clock::now();
        update.move_centres(moves[r], mp[r], &mv[r]);
        tu.push_back(seconds(t0));
      }
      // The mesh-deformation pattern: each move follows an evaluate() (OpenMP threads), for
      // both interpolants.
      auto after_evaluate = [&](const GlobalRbfOptions &oo) {
        std::vector<double> t;
        GlobalRbfInterpolant g(oo);
        g.set_data(x0, f0);
        const Table<double> xs = x;
        x = x0;
        std::vector<std::int64_t> idx;
        Table<double> q, w;
        random_move(idx, q, w);
        g.move_centres(idx, q, &w);
        for (int r = 0; r < a.reps; ++r) {
          random_move(idx, q, w);
          (void)g.evaluate(y);
          const auto ts = Clock::now();
          g.move_centres(idx, q, &w);
          t.push_back(seconds(ts));
        }
        x = xs;
        return median(t);
      };
      const double t_refit_eval = after_evaluate(orf), t_update_eval = after_evaluate(oup);
      const auto &st = update.stats();
      const double diff = std::max(rel_diff(update.coefficients(), refit.coefficients()),
                                   rel_diff(update.evaluate(y), refit.evaluate(y)));
      const double t_refit = median(tr), t_update = median(tu);
      const bool auto_updates = centre_update_pays(n, m); // what automatic does

      const double break_even =
          t_update < t_refit ? (t_inv - t_refit) / (t_refit - t_update) : INFINITY;
      fmt::print("| {} | {:.3g} | {:.3g} | {} | {} | {:.3g} | {:.3g} | {:.2f} | {:.3g} | {:.3g} | "
                 "{:.2f} | {:.1e} | {} | {} |\n",
                 n, t_set, t_inv, m, 2 * m, t_refit, t_update, t_refit / t_update, t_refit_eval,
                 t_update_eval, t_refit_eval / t_update_eval, diff,
                 auto_updates ? "update" : "refit",
                 std::isfinite(break_even) ? fmt::format("{:.1f}", std::max(0.0, break_even))
                                           : std::string("never"));
      std::fflush(stdout);
      out["rows"].push_back({{"n", n},
                             {"m", m},
                             {"rank", 2 * m},
                             {"set_data_s", t_set},
                             {"inverse_s", t_inv},
                             {"refit_s", t_refit},
                             {"update_s", t_update},
                             {"refit_after_evaluate_s", t_refit_eval},
                             {"update_after_evaluate_s", t_update_eval},
                             {"ratio", t_refit / t_update},
                             {"max_rel_diff", diff},
                             {"updates", st.updates},
                             {"update_fallbacks", st.update_fallbacks},
                             {"residual_rel", st.residual_rel},
                             {"auto", auto_updates ? "update" : "refit"},
                             {"break_even_moves", std::isfinite(break_even) ? break_even : -1.0}});
      if (st.update_fallbacks > 0)
        fmt::print("  ({} of the {} updates fell back to refitting)\n", st.update_fallbacks,
                   a.reps);
    }
  }
  if (!a.json.empty()) {
    std::ofstream(a.json) << out.dump(2) << "\n";
    fmt::print("\nwrote {}\n", a.json);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Args a;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string k = argv[i];
      auto next = [&] {
        if (i + 1 >= argc)
          throw Error(ErrorCode::invalid_argument, fmt::format("{} needs a value", k));
        return std::string(argv[++i]);
      };
      if (k == "--help" || k == "-h")
        return bench::print_header_help(__FILE__);
      else if (k == "--sizes")
        a.sizes = parse_list(next());
      else if (k == "--ranks")
        a.ranks = parse_list(next());
      else if (k == "--dim")
        a.dim = std::stoll(next());
      else if (k == "--kernel")
        a.kernel = parse_kernel(next());
      else if (k == "--reps")
        a.reps = std::max(1, std::stoi(next()));
      else if (k == "--threads")
        a.threads = std::stoi(next());
      else if (k == "--json")
        a.json = next();
      else
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("unknown option '{}' (see --help)", k));
    }
    return run(a);
  } catch (const std::exception &e) {
    fmt::print(stderr, "rbf_update_bench: {}\n", e.what());
    return 1;
  }
}
