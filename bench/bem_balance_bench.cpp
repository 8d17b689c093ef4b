// The dynamic balancing of seed 003 §5.2 against the best contiguous partition (seed 003 §6.2,
// table 1):
//   bem_balance_bench [--iterations 40] [--elements 10000] [--workers 6] [--json FILE]
//   As the seed: one array of element costs (the work distribution, table rows) and one array of
//   worker acceleration factors (the worker heterogeneity, table columns); a worker's virtual time
//   is the sum of the costs of its contiguous interval times its factor, here written as divided
//   by its speed (factor = 1 / speed); the virtual wall time is the largest of the workers' times.
//   ksum::runtime::SliceBalancer starts from equal counts, receives the virtual times after every
//   iteration and, after --iterations reports, rolls back to the best assignment it measured; the
//   extra cost is that best wall time / the optimal wall time − 1.
//   The optimum is the best contiguous partition in whole elements (workers in order, empty
//   intervals allowed), found as the seed does by dynamic programming — exact, O(W·n·log n) since
//   the prefix optimum rises and the last interval's time falls with the split point — and checked
//   against a binary search on the wall time with a greedy feasibility check (exact for contiguous
//   partitions up to the search precision; we report the wall time of the greedy partition it
//   finds, which is feasible, so the two agree to rounding).
//   Work distributions (rows; element j of n, x = j / (n − 1), costs between 1 and 10):
//     Up-Down  tent: 1 + 9·(1 − |2x − 1|), rising to the middle, then falling
//     Up-Up    quadratically increasing: 1 + 9·x²
//     Up       linearly increasing: 1 + 9·x
//     Random   uniform in [1, 10) (std::mt19937_64, seed 3)
//     Stable   equal: 1
//   Worker heterogeneity (columns; speed of worker w of W): the seed's table text lost its column
//   headers, so these four kinds and their labels are ours:
//     Equal    all 1
//     Linear   w + 1 (1 … W)
//     One fast worker 0 at 10, the others 1 (a GPU among CPU workers)
//     Random   uniform in [1, 10) (std::mt19937_64, seed 7)
//   The seed's values are printed beside ours; its Up-Down row kept only three values, whose
//   columns are unknown: we show them in columns 1-3.
#include "bench_common.hpp"
#include "runtime/slice_balancer.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace ksum;
using nlohmann::json;

namespace {

struct Args {
  int iterations = 40, workers = 6;
  std::int64_t elements = 10000;
  std::string json;
};

const char *const kRows[] = {"Up-Down", "Up-Up", "Up", "Random", "Stable"};
const char *const kCols[] = {"Equal", "Linear", "One fast", "Random"};

// Seed 003 table 1, extra cost in % (NaN: lost from the seed's text).
const double kSeed[5][4] = {{0.0, 0.1, 0.1, NAN},
                            {0.0, 0.0, 0.1, 0.1},
                            {0.1, 0.1, 0.2, 0.2},
                            {0.0, 0.0, 0.2, 0.0},
                            {0.0, 0.0, 0.1, 0.1}};

std::vector<double> costs(int row, std::int64_t n) {
  std::vector<double> c(static_cast<std::size_t>(n));
  std::mt19937_64 g(3);
  std::uniform_real_distribution<double> u(1.0, 10.0);
  for (std::int64_t j = 0; j < n; ++j) {
    const double x = n > 1 ? static_cast<double>(j) / static_cast<double>(n - 1) : 0.0;
    double v = 1.0;
    switch (row) {
    case 0:
      v = 1.0 + 9.0 * (1.0 - std::abs(2.0 * x - 1.0));
      break;
    case 1:
      v = 1.0 + 9.0 * x * x;
      break;
    case 2:
      v = 1.0 + 9.0 * x;
      break;
    case 3:
      v = u(g);
      break;
    default:
      break;
    }
    c[static_cast<std::size_t>(j)] = v;
  }
  return c;
}

std::vector<double> speeds(int col, int w) {
  std::vector<double> s(static_cast<std::size_t>(w), 1.0);
  std::mt19937_64 g(7);
  std::uniform_real_distribution<double> u(1.0, 10.0);
  for (int i = 0; i < w; ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (col == 1)
      s[k] = i + 1.0;
    else if (col == 2)
      s[k] = i == 0 ? 10.0 : 1.0;
    else if (col == 3)
      s[k] = u(g);
  }
  return s;
}

// Prefix sums: the cost of [a, b) is p[b] − p[a].
std::vector<double> prefix(const std::vector<double> &cost) {
  std::vector<double> p(cost.size() + 1, 0.0);
  for (std::size_t j = 0; j < cost.size(); ++j)
    p[j + 1] = p[j] + cost[j];
  return p;
}

std::vector<double> virtual_times(const std::vector<std::int64_t> &bounds,
                                  const std::vector<double> &p, const std::vector<double> &speed) {
  std::vector<double> t(speed.size());
  for (std::size_t w = 0; w < speed.size(); ++w)
    t[w] = (p[static_cast<std::size_t>(bounds[w + 1])] - p[static_cast<std::size_t>(bounds[w])]) /
           speed[w];
  return t;
}

// The seed's dynamic programming: best[j] = the smallest wall time of elements [0, j) over the
// workers so far; adding worker w, best'[j] = min_i max(best[i], (p[j] − p[i]) / s_w). best[i]
// rises with i and the second term falls, so the minimum sits where they cross (binary search).
double optimal_dp(const std::vector<double> &p, const std::vector<double> &speed) {
  const std::size_t n = p.size() - 1;
  std::vector<double> best(n + 1), next(n + 1);
  for (std::size_t j = 0; j <= n; ++j)
    best[j] = p[j] / speed[0];
  for (std::size_t w = 1; w < speed.size(); ++w) {
    for (std::size_t j = 0; j <= n; ++j) {
      auto last = [&](std::size_t i) { return (p[j] - p[i]) / speed[w]; };
      std::size_t lo = 0, hi = j; // first i in [0, j] with best[i] >= last(i); j always qualifies
      while (lo < hi) {
        const std::size_t mid = (lo + hi) / 2;
        if (best[mid] >= last(mid))
          hi = mid;
        else
          lo = mid + 1;
      }
      double v = std::max(best[lo], last(lo));
      if (lo > 0)
        v = std::min(v, std::max(best[lo - 1], last(lo - 1)));
      next[j] = v;
    }
    std::swap(best, next);
  }
  return best[n];
}

// Binary search on the wall time T with the greedy check "each worker in turn takes elements while
// its time stays ≤ T"; returns the wall time of the greedy partition at the final upper bound.
double optimal_bisect(const std::vector<double> &p, const std::vector<double> &speed) {
  const std::size_t n = p.size() - 1;
  auto greedy = [&](double limit, double &wall) {
    std::size_t j = 0;
    wall = 0;
    for (double s : speed) {
      const std::size_t a = j;
      while (j < n && (p[j + 1] - p[a]) / s <= limit)
        ++j;
      wall = std::max(wall, (p[j] - p[a]) / s);
    }
    return j == n;
  };
  double lo = 0, hi = p[n] / *std::min_element(speed.begin(), speed.end()), wall = 0;
  for (int it = 0; it < 200 && hi - lo > 1e-15 * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    (greedy(mid, wall) ? hi : lo) = mid;
  }
  greedy(hi, wall);
  return wall;
}

struct Cell {
  double optimal = 0, bisect = 0, first = 0, best = 0, last = 0;
  int best_report = 0;
};

Cell run_cell(const Args &a, int row, int col) {
  const auto p = prefix(costs(row, a.elements));
  const auto speed = speeds(col, a.workers);
  Cell c;
  c.optimal = optimal_dp(p, speed);
  c.bisect = optimal_bisect(p, speed);
  runtime::SliceBalancer b(a.elements, a.workers, a.iterations);
  double tracked = INFINITY;
  while (!b.frozen()) {
    const auto t = virtual_times(b.bounds(), p, speed);
    const double wall = *std::max_element(t.begin(), t.end());
    if (b.reports() == 0)
      c.first = wall;
    if (wall < tracked) {
      tracked = wall;
      c.best_report = b.reports() + 1;
    }
    c.last = wall;
    b.report(t);
  }
  c.best = b.best_time();
  // The rolled-back assignment, measured again: it is what the next iterations would run.
  const auto t = virtual_times(b.bounds(), p, speed);
  if (*std::max_element(t.begin(), t.end()) != c.best)
    throw Error(ErrorCode::internal,
                fmt::format("{} / {}: the rollback does not reproduce the best "
                            "wall time",
                            kRows[row], kCols[col]));
  return c;
}

std::string pct(double v) {
  return std::isnan(v) ? std::string("–") : fmt::format("{:.1f}%", v);
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
    for (int i = 1; i < argc; ++i) {
      const std::string k = argv[i];
      if (k == "--help" || k == "-h")
        return bench::print_header_help(__FILE__);
      if (k == "--iterations")
        a.iterations = std::stoi(need(i));
      else if (k == "--elements")
        a.elements = std::stoll(need(i));
      else if (k == "--workers")
        a.workers = std::stoi(need(i));
      else if (k == "--json")
        a.json = need(i);
      else
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("unknown option '{}' (see --help)", k));
    }
    if (a.iterations < 1 || a.elements < 1 || a.workers < 1)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("--iterations {} --elements {} --workers {}: all must be ≥ 1",
                              a.iterations, a.elements, a.workers));
    json out = {{"bench", "bem_balance"}, {"seed", "003 table 1"}, {"iterations", a.iterations},
                {"elements", a.elements}, {"workers", a.workers},  {"cells", json::array()}};
    for (int col = 0; col < 4; ++col)
      out["columns"].push_back({{"label", kCols[col]}, {"speeds", speeds(col, a.workers)}});
    Cell cells[5][4];
    double disagree = 0;
    for (int row = 0; row < 5; ++row)
      for (int col = 0; col < 4; ++col) {
        const Cell c = cells[row][col] = run_cell(a, row, col);
        disagree = std::max(disagree, std::abs(c.bisect / c.optimal - 1));
        const double seed = kSeed[row][col];
        out["cells"].push_back(
            {{"distribution", kRows[row]},
             {"heterogeneity", kCols[col]},
             {"optimal_wall", c.optimal},
             {"bisection_wall", c.bisect},
             {"first_wall", c.first},
             {"last_wall", c.last},
             {"best_wall", c.best},
             {"best_report", c.best_report},
             {"extra_cost_percent", 100 * (c.best / c.optimal - 1)},
             {"first_extra_cost_percent", 100 * (c.first / c.optimal - 1)},
             {"last_extra_cost_percent", 100 * (c.last / c.optimal - 1)},
             {"seed_extra_cost_percent", std::isnan(seed) ? json(nullptr) : json(seed)}});
      }
    out["dp_vs_bisection_max_relative_difference"] = disagree;

    auto header = [] {
      fmt::print("| work \\ workers |");
      for (const char *c : kCols)
        fmt::print(" {} |", c);
      fmt::print("\n|---|--:|--:|--:|--:|\n");
    };
    fmt::print("Seed 003 table 1: extra cost of the balancer's best assignment (rolled back after "
               "{} reports) over the optimal contiguous partition, {} workers, {} elements.\n",
               a.iterations, a.workers, a.elements);
    fmt::print("Cells: ours (seed). Column labels are ours (the seed's headers are lost); the "
               "seed's Up-Down row kept three values, shown in columns 1-3.\n\n");
    header();
    for (int row = 0; row < 5; ++row) {
      fmt::print("| {} |", kRows[row]);
      for (int col = 0; col < 4; ++col)
        fmt::print(" {:.2f}% ({}) |", 100 * (cells[row][col].best / cells[row][col].optimal - 1),
                   pct(kSeed[row][col]));
      fmt::print("\n");
    }
    fmt::print("\nFor reference: extra cost of the first (equal-count) assignment / of the last "
               "iterate before the rollback; report at which the best was measured.\n\n");
    header();
    for (int row = 0; row < 5; ++row) {
      fmt::print("| {} |", kRows[row]);
      for (int col = 0; col < 4; ++col) {
        const Cell &c = cells[row][col];
        fmt::print(" {:.1f}% / {:.2f}% / #{} |", 100 * (c.first / c.optimal - 1),
                   100 * (c.last / c.optimal - 1), c.best_report);
      }
      fmt::print("\n");
    }
    fmt::print("\nSpeeds (time = Σ costs / speed):");
    for (int col = 0; col < 4; ++col) {
      fmt::print(" {} [", kCols[col]);
      const auto s = speeds(col, a.workers);
      for (std::size_t i = 0; i < s.size(); ++i)
        fmt::print("{}{:.2f}", i ? " " : "", s[i]);
      fmt::print("]");
    }
    fmt::print("\nOptimum: dynamic programming (exact); binary search + greedy agrees to {:.1e} "
               "(relative).\n",
               disagree);
    if (!a.json.empty()) {
      std::ofstream f(a.json);
      f << out.dump(1) << "\n";
      if (!f)
        throw Error(ErrorCode::io, fmt::format("{}: cannot write the JSON results", a.json));
    }
    return 0;
  } catch (const std::exception &e) {
    fmt::print(stderr, "bem_balance_bench: {}\n", e.what());
    return 2;
  }
}
