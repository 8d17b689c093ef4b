// ksum interpolate: scattered-data interpolation. --method pum is the RBF partition of unity of
// seed 001 (local RBF fits on overlapping patches, fixed ε or per-patch LOOCV); --method global is
// one RBF interpolant over all the data (seed 000: dense, FGP or preconditioned GMRES).
#include "common.hpp"
#include "rbf/global/solvers.hpp"

#include <ksum/datasets.hpp>
#include <ksum/distributed.hpp>
#include <ksum/error.hpp>
#include <ksum/global.hpp>
#include <ksum/io.hpp>
#include <ksum/pum.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <numeric>

namespace ksum::cli {
namespace {

struct InterpArgs {
  std::string method = "pum", data, eval, grid, output, plot, kernel, eps = "1";
  std::string backend = "auto", solver = "auto", matvec = "direct";
  std::vector<double> eps_range{0.1, 100.0};
  std::int64_t dim = 0, min_points = 0;
  double density = 1.0, radius = 1.4142135623730951;
  bool merge = false, extrapolate = false, force = false;
  int threads = 0, degree = GlobalRbfOptions::kernel_default_degree;
  double tol = 1e-8, smoothing = 0, matvec_tol = 0;
  int max_iter = 300, q = 40;
};

// "40x40" or "20x20x10": one count per axis.
std::vector<std::int64_t> parse_grid(const std::string &spec, std::int64_t dim) {
  std::vector<std::int64_t> counts;
  std::size_t b = 0;
  while (b <= spec.size()) {
    const std::size_t e = std::min(spec.find('x', b), spec.size());
    const std::string part = spec.substr(b, e - b);
    char *end = nullptr;
    const long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 1)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("--grid '{}': '{}' is not a positive count (expected e.g. 100x100)",
                              spec, part));
    counts.push_back(v);
    b = e + 1;
  }
  double total = 1;
  for (const auto c : counts)
    total *= static_cast<double>(c);
  if (total > 4e9)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("--grid '{}' has {:.3g} points; at most 4e9", spec, total));
  if (static_cast<std::int64_t>(counts.size()) != dim)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("--grid '{}' has {} axes but the data have dimension {}", spec,
                            counts.size(), dim));
  return counts;
}

// One row per evaluation point: its coordinates, then the interpolated values; the optional plot.
void write_result(const InterpArgs &a, const Table<double> &y, const Table<double> &u,
                  const Table<double> &table) {
  const std::int64_t dim = y.cols();
  Table<double> out(y.rows(), dim + u.cols());
  for (std::int64_t i = 0; i < y.rows(); ++i) {
    for (std::int64_t k = 0; k < dim; ++k)
      out(i, k) = y(i, k);
    for (std::int64_t q = 0; q < u.cols(); ++q)
      out(i, dim + q) = u(i, q);
  }
  // Column names: the data file's header where it had one.
  for (std::int64_t c = 0; c < out.cols(); ++c)
    out.names.push_back(static_cast<std::int64_t>(table.names.size()) == table.cols()
                            ? table.names[c]
                            : (c < dim ? fmt::format("x{}", c) : fmt::format("f{}", c - dim)));
  io::write_table(a.output, out, {.overwrite = a.force});
  if (!a.plot.empty()) {
    const auto counts = parse_grid(a.grid, dim);
    io::write_heatmap_png(a.plot, u.col(0).data(), counts[0], counts[1], a.force);
  }
}

// --method global's options from the command line (kernel, eps and backend from the PUM's).
GlobalRbfOptions global_options(const InterpArgs &a, const PumOptions &common) {
  GlobalRbfOptions g;
  g.kernel = common.kernel;
  g.eps = common.eps;
  g.degree = a.degree;
  g.smoothing = a.smoothing;
  g.solver = parse_global_solver(a.solver);
  g.tolerance = a.tol;
  g.max_iterations = a.max_iter;
  g.lset_size = a.q;
  g.matvec_method = parse_method(a.matvec);
  g.matvec_tolerance = a.matvec_tol;
  g.backend = common.backend;
  g.threads = a.threads;
  return g;
}

// One line per iteration at most every second (the first and the last always).
std::function<void(int, double)> iteration_notes() {
  return [last = std::chrono::steady_clock::now()](int k, double rel) mutable {
    const auto now = std::chrono::steady_clock::now();
    if (k == 1 || now - last > std::chrono::seconds(1)) {
      note(fmt::format("  iteration {}: relative residual {:.3e}", k, rel));
      last = now;
    }
  };
}

// The summary lines of a global fit (stderr, rank 0 only under mpirun).
void note_global(const InterpArgs &a, const GlobalRbfOptions &g, const GlobalRbfStats &st,
                 std::int64_t dim, std::int64_t n, std::int64_t values, std::int64_t m,
                 double secs_eval, std::chrono::steady_clock::time_point t0) {
  note(fmt::format("ksum interpolate: global, {} eps={} degree {} ({} terms), d={} N={} ({} "
                   "values each) M={}{}",
                   kernel_info(g.kernel).name, g.eps, st.degree, st.poly_terms, dim, n, values, m,
                   st.ranks > 1 ? fmt::format(", {} ranks", st.ranks) : std::string()));
  if (st.solver == GlobalSolver::dense)
    note(fmt::format("  solver dense ({}), matvec {}", to_string(st.backend), st.matvec));
  else
    note(fmt::format("  solver {}: {} iterations ({} matvecs, {}), {} L-sets of q = {}{}",
                     to_string(st.solver), st.iterations, st.matvecs, st.matvec, st.lsets,
                     g.lset_size,
                     st.lsets_skipped ? fmt::format(" ({} singular, skipped)", st.lsets_skipped)
                                      : std::string()) +
         (st.ranks > 1 ? fmt::format("; their halo: at most {} other ranks' rows on a rank "
                                     "(their search received at most {} points)",
                                     st.lset_halo_rows, st.lset_search_received)
                       : std::string()));
  note(fmt::format("  final residual at the data: max |f - s| = {:.3e}, relative l2 = {:.3e} "
                   "(tolerance {:.1e})",
                   st.residual_max, st.residual_rel, g.tolerance));
  note(fmt::format("  setup {:.3f} s, solve {:.3f} s, evaluate {:.3f} s, total {:.3f} s -> {}{}",
                   st.seconds_setup, st.seconds_solve, secs_eval, seconds_since(t0), a.output,
                   a.plot.empty() ? std::string() : ", " + a.plot));
}

// --method global: one interpolant over all the data.
void run_global(const InterpArgs &a, const PumOptions &common, const Table<double> &x,
                const Table<double> &f, const Table<double> &y, const Table<double> &table,
                std::chrono::steady_clock::time_point t0) {
  GlobalRbfOptions g = global_options(a, common);
  g.progress = iteration_notes();
  GlobalRbfInterpolant rbf(g);
  rbf.set_data(x, f);
  const auto t_eval = std::chrono::steady_clock::now();
  const auto u = rbf.evaluate(y);
  const double secs_eval = seconds_since(t_eval);
  write_result(a, y, u, table);
  note_global(a, g, rbf.stats(), x.cols(), x.rows(), f.cols(), y.rows(), secs_eval, t0);
}

// The data and evaluation points of the command line: --data split into coordinates x and values
// f, the points y of --eval or --grid (over x's box); the output and plot checked first.
struct Inputs {
  Table<double> table, x, f, y;
};
Inputs read_inputs(const InterpArgs &a) {
  namespace fs = std::filesystem;
  refuse_overwrite(a.output, {&a.data, &a.eval}, a.force);
  io::format_from_path(a.output);
  if (!a.plot.empty()) {
    if (fs::path(a.plot).extension() != ".png")
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("--plot {}: expected a .png file", a.plot));
    refuse_overwrite(a.plot, {&a.data, &a.eval, &a.output}, a.force);
    if (a.grid.empty())
      throw Error(ErrorCode::invalid_argument, "--plot needs --grid (a heat map of 2D data)");
  }
  if (a.eval.empty() == a.grid.empty())
    throw Error(ErrorCode::invalid_argument, "give exactly one of --eval FILE and --grid N1xN2…");

  Inputs in;
  in.table = io::read_table(a.data);
  const Table<double> &table = in.table;
  const std::int64_t dim = a.dim > 0 ? a.dim : table.cols() - 1;
  if (dim < 1 || dim >= table.cols())
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("{} has {} columns: need d coordinate columns (--dim {}) and at least "
                            "one value column",
                            a.data, table.cols(), dim));
  Table<double> &x = in.x, &f = in.f;
  x = Table<double>(table.rows(), dim);
  f = Table<double>(table.rows(), table.cols() - dim);
  for (std::int64_t i = 0; i < table.rows(); ++i) {
    for (std::int64_t k = 0; k < dim; ++k)
      x(i, k) = table(i, k);
    for (std::int64_t q = 0; q < f.cols(); ++q)
      f(i, q) = table(i, dim + q);
  }

  Table<double> &y = in.y;
  if (!a.eval.empty()) {
    y = io::read_table(a.eval, {.expect_cols = dim});
  } else {
    const auto counts = parse_grid(a.grid, dim);
    std::vector<double> lo(dim), hi(dim);
    for (std::int64_t k = 0; k < dim; ++k) {
      lo[k] = hi[k] = x(0, k);
      for (std::int64_t i = 0; i < x.rows(); ++i) {
        lo[k] = std::min(lo[k], x(i, k));
        hi[k] = std::max(hi[k], x(i, k));
      }
    }
    y = datasets::grid(counts.data(), lo.data(), hi.data(), dim);
    if (!a.plot.empty() && dim != 2)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("--plot draws 2D data; these have dimension {}", dim));
  }

  return in;
}

// The PUM's options from the command line (the global method reads kernel, eps and degree too).
PumOptions make_options(const InterpArgs &a) {
  const bool global_method = a.method == "global";
  PumOptions opt;
  opt.kernel =
      parse_kernel(a.kernel.empty() ? (global_method ? "multiquadric" : "matern4") : a.kernel);
  opt.degree = a.degree == GlobalRbfOptions::kernel_default_degree ? -1 : a.degree;
  if (!global_method && (opt.degree < -1 || opt.degree > 1))
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("--degree {}: the PUM's local polynomials have degree -1, 0 or 1", a.degree));
  if (a.eps == "loocv") {
    if (global_method)
      throw Error(ErrorCode::invalid_argument,
                  "--eps loocv chooses eps per patch (--method pum); the global method needs a "
                  "number");
    opt.loocv = true;
  } else {
    char *end = nullptr;
    opt.eps = std::strtod(a.eps.c_str(), &end);
    if (a.eps.empty() || *end != '\0')
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("--eps '{}': expected a number or 'loocv'", a.eps));
  }
  if (a.eps_range.size() != 2)
    throw Error(ErrorCode::invalid_argument, "--eps-range needs two numbers: MIN,MAX");
  opt.eps_min = a.eps_range[0];
  opt.eps_max = a.eps_range[1];
  opt.patch_density = a.density;
  opt.patch_radius = a.radius;
  opt.min_patch_points = a.min_points;
  opt.merge_duplicates = a.merge;
  opt.extrapolate = a.extrapolate;
  opt.threads = a.threads;
  opt.backend = parse_backend(a.backend);

  return opt;
}

// The summary lines of a PUM run (stderr, rank 0 only under mpirun).
void note_pum(const InterpArgs &a, const PumInterpolant &pum, const PumOptions &opt,
              std::int64_t dim, std::int64_t n, std::int64_t values, std::int64_t m,
              double secs_eval, std::chrono::steady_clock::time_point t0, int ranks) {
  const auto &st = pum.stats();
  note(fmt::format("ksum interpolate: pum, {} {}, d={} N={} ({} values each) M={}", a.kernel,
                   opt.loocv ? "eps=loocv" : fmt::format("eps={}", opt.eps), dim, n, values, m));
  note(fmt::format("  patches {} (empty {}, grown {}, regularised {}), radius {:.4g}, points per "
                   "patch min/median/max {}/{}/{}",
                   st.patches, st.empty_patches, st.grown_patches, st.regularised_patches,
                   st.radius, st.min_points, st.median_points, st.max_points));
  if (opt.loocv)
    note(fmt::format("  LOOCV eps over patches: min {:.4g}, median {:.4g}, max {:.4g} (bracket "
                     "[{}, {}])",
                     st.eps_min, st.eps_median, st.eps_max, opt.eps_min, opt.eps_max));
  if (st.merged_duplicates)
    note(fmt::format("  merged {} repeated data points (values averaged)", st.merged_duplicates));
  note(fmt::format("  index {:.3f} s, fit {:.3f} s ({}), evaluate {:.3f} s, total {:.3f} s -> {}{}",
                   st.seconds_index, st.seconds_fit,
                   st.fit_backend == Backend::cuda ? "GPU"
                   : ranks > 1                     ? fmt::format("CPU, {} ranks", ranks)
                                                   : std::string("CPU"),
                   secs_eval, seconds_since(t0), a.output,
                   a.plot.empty() ? std::string() : ", " + a.plot));
}

// Rank 0 reads the inputs into `in` (agreed: every rank fails alike); every rank gets their
// shapes: data rows, dimension, value columns, evaluation points.
std::array<std::int64_t, 4> read_on_root(const InterpArgs &a, const Communicator &comm,
                                         Inputs &in) {
  comm.agree(capture([&] {
    if (comm.rank() == 0)
      in = read_inputs(a);
  }));
  double shape[4] = {double(in.x.rows()), double(in.x.cols()), double(in.f.cols()),
                     double(in.y.rows())};
  comm.broadcast(shape, 4);
  return {static_cast<std::int64_t>(shape[0]), static_cast<std::int64_t>(shape[1]),
          static_cast<std::int64_t>(shape[2]), static_cast<std::int64_t>(shape[3])};
}

// Rank 0's rows split evenly over the ranks (scatterv per column): this rank's slice.
Table<double> scatter_rows(const Communicator &comm, const Table<double> &all, std::int64_t rows,
                           std::int64_t cols) {
  const auto counts = comm.even_counts(rows);
  Table<double> mine(counts[static_cast<std::size_t>(comm.rank())], cols);
  for (std::int64_t k = 0; k < cols; ++k)
    comm.scatterv(comm.rank() == 0 ? all.data() + k * rows : nullptr, counts,
                  mine.data() + k * mine.rows(), mine.rows());
  return mine;
}

// Each rank's slice of `rows` rows (split evenly) gathered at rank 0 in the original order.
Table<double> gather_rows(const Communicator &comm, const Table<double> &mine, std::int64_t rows) {
  const auto counts = comm.even_counts(rows);
  const bool root = comm.rank() == 0;
  Table<double> all(root ? rows : 0, mine.cols());
  for (std::int64_t q = 0; q < mine.cols(); ++q)
    comm.gatherv(mine.data() + q * mine.rows(), mine.rows(), root ? all.data() + q * rows : nullptr,
                 counts);
  return all;
}

// The data rows in Morton order (min(21, 63 / d) bits per axis of the bounding box, any d; the
// FMM's octree.hpp interleaves 3D only): rank 0 sends the slices in this order, so that each
// rank's rows fill a compact region and the L-sets' halo (τ's exchange with the other ranks,
// rbf/global/distributed_global.hpp) is a boundary layer, not most of the other ranks' rows as for
// rows in no spatial order. The interpolant does not depend on the order of its data beyond the
// solver's tolerance (the L-sets' random order differs).
std::vector<std::int64_t> spatial_order(const Table<double> &x) {
  const std::int64_t n = x.rows(), d = x.cols();
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  const int bits = d > 0 ? static_cast<int>(std::min<std::int64_t>(21, 63 / d)) : 0;
  if (bits == 0 || n < 2)
    return order;
  std::vector<std::uint64_t> key(static_cast<std::size_t>(n), 0);
  const double cells = std::ldexp(1.0, bits);
  for (std::int64_t c = 0; c < d; ++c) {
    double lo = x(0, c), hi = x(0, c);
    for (std::int64_t i = 1; i < n; ++i) {
      lo = std::min(lo, x(i, c));
      hi = std::max(hi, x(i, c));
    }
    const double scale = hi > lo ? cells / (hi - lo) : 0.0;
    for (std::int64_t i = 0; i < n; ++i) {
      const auto q = static_cast<std::uint64_t>(std::min(cells - 1, (x(i, c) - lo) * scale));
      std::uint64_t &k = key[static_cast<std::size_t>(i)];
      for (int b = 0; b < bits; ++b)
        k |= ((q >> b) & 1U) << (b * d + (d - 1 - c));
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return key[static_cast<std::size_t>(a)] < key[static_cast<std::size_t>(b)];
  });
  return order;
}

Table<double> take_rows(const Table<double> &t, const std::vector<std::int64_t> &order) {
  Table<double> out(t.rows(), t.cols());
  for (std::int64_t c = 0; c < t.cols(); ++c)
    for (std::int64_t i = 0; i < t.rows(); ++i)
      out(i, c) = t(order[static_cast<std::size_t>(i)], c);
  return out;
}

// Under mpirun with several ranks, --method global: rank 0 reads the files and sends each rank an
// even slice of the data rows (in Morton order, spatial_order above) and of the evaluation
// points; the ranks fit together
// (GlobalRbfInterpolant::set_data with the communicator: FGP or GMRES with vectors spread by rows,
// products around the ranks) and evaluate their points; rank 0 gathers and writes them in the
// original order. Every failure is agreed: every rank exits with the same error.
void run_global_distributed(const InterpArgs &a, const Communicator &comm,
                            std::chrono::steady_clock::time_point t0) {
  const bool root = comm.rank() == 0;
  GlobalRbfOptions g;
  comm.agree(capture([&] { g = global_options(a, make_options(a)); }));
  if (root)
    g.progress = iteration_notes();
  Inputs in;
  const auto [n, dim, values, m] = read_on_root(a, comm, in);
  comm.agree(capture([&] {
    if (root) {
      // Identical points named by their rows in the file, before the rows move.
      rbf::check_distinct(in.x);
      const auto order = spatial_order(in.x);
      in.x = take_rows(in.x, order);
      in.f = take_rows(in.f, order);
    }
  }));
  const Table<double> x = scatter_rows(comm, in.x, n, dim), f = scatter_rows(comm, in.f, n, values),
                      y = scatter_rows(comm, in.y, m, dim);
  GlobalRbfInterpolant rbf(g);
  rbf.set_data(x, f, comm);
  const auto t_eval = std::chrono::steady_clock::now();
  const Table<double> all = gather_rows(comm, rbf.evaluate(y), m);
  const double secs_eval = comm.allreduce_max(seconds_since(t_eval));
  comm.agree(capture([&] {
    if (root)
      write_result(a, in.y, all, in.table);
  }));
  note_global(a, g, rbf.stats(), dim, n, values, m, secs_eval, t0);
}

// Under mpirun with several ranks (--method pum): rank 0 reads the files and sends each rank an
// even slice of the data rows and of the evaluation points; the data are partitioned over the
// ranks by cell ranges with halos (PumInterpolant::set_data_partitioned: the interpolant one
// process makes, the same bits), the ranks evaluate their points together, and rank 0 gathers and
// writes them in the original order. Every failure is agreed: every rank exits with the same error.
void run_pum_distributed(const InterpArgs &a, const Communicator &comm,
                         std::chrono::steady_clock::time_point t0) {
  const int P = comm.size(), rank = comm.rank();
  const bool root = rank == 0;
  PumOptions opt;
  comm.agree(capture([&] { opt = make_options(a); }));
  Inputs in;
  const auto [n, dim, values, m] = read_on_root(a, comm, in);
  const Table<double> x = scatter_rows(comm, in.x, n, dim), f = scatter_rows(comm, in.f, n, values),
                      my_y = scatter_rows(comm, in.y, m, dim);
  if (root) { // rank 0 keeps only what it writes
    in.x = Table<double>();
    in.f = Table<double>();
  }

  ProgressLine fit_progress("ksum interpolate: local fits");
  if (root)
    opt.progress = fit_progress.callback();
  PumInterpolant pum(opt);
  pum.set_data_partitioned(x, f, comm);
  const auto &st = pum.stats();
  const auto held = comm.allgather(st.owned_points + st.halo_points);
  const auto patches_in = comm.allgather(st.halo_patches);
  const auto t_eval = std::chrono::steady_clock::now();
  pum.set_progress(nullptr);
  const Table<double> all = gather_rows(comm, pum.evaluate(my_y), m); // errors agreed
  const double secs_eval = comm.allreduce_max(seconds_since(t_eval));
  comm.agree(capture([&] {
    if (root)
      write_result(a, in.y, all, in.table);
  }));
  note_pum(a, pum, opt, dim, n, values, m, secs_eval, t0, P);
  note(fmt::format("  over {} ranks, data partitioned by cells: most points held by a rank {} "
                   "of {} (its own and the halo, {} exchange round(s)); most fitted patches "
                   "received by a rank {}",
                   P, *std::max_element(held.begin(), held.end()), n, st.halo_rounds,
                   *std::max_element(patches_in.begin(), patches_in.end())));
}

void run_interpolate(const InterpArgs &a) {
  const auto t0 = std::chrono::steady_clock::now();
  if (const Communicator comm = Communicator::world(); comm.distributed())
    return a.method == "global" ? run_global_distributed(a, comm, t0)
                                : run_pum_distributed(a, comm, t0);
  const bool global_method = a.method == "global";
  const Inputs in = read_inputs(a);
  PumOptions opt = make_options(a);
  const Table<double> &table = in.table, &x = in.x, &f = in.f, &y = in.y;
  const std::int64_t dim = x.cols();
  if (global_method) {
    run_global(a, opt, x, f, y, table, t0);
    return;
  }
  ProgressLine fit_progress("ksum interpolate: local fits");
  opt.progress = fit_progress.callback();
  PumInterpolant pum(opt);
  pum.set_data(x, f);
  const auto t_eval = std::chrono::steady_clock::now();
  ProgressLine eval_progress("ksum interpolate: evaluation");
  pum.set_progress(eval_progress.callback());
  const auto u = pum.evaluate(y);
  const double secs_eval = seconds_since(t_eval);

  write_result(a, y, u, table);

  note_pum(a, pum, opt, dim, x.rows(), f.cols(), y.rows(), secs_eval, t0, 1);
}

} // namespace

void register_interpolate(CLI::App &app) {
  static InterpArgs a;
  auto *cmd = app.add_subcommand("interpolate", "Scattered-data interpolation: RBF partition of "
                                                "unity (pum) or one global RBF interpolant");
  cmd->footer("The data file has d coordinate columns, then one or more value columns.\n"
              "Example: ksum interpolate --method pum --data xyf.csv --grid 200x200 "
              "--kernel matern4 --eps loocv -o grid.csv\n"
              "         ksum interpolate --method global --data xyf.csv --grid 200x200 "
              "--kernel multiquadric --eps 5 --solver fgp --tol 1e-8 -o grid.csv\n"
              "Under mpirun -n P: rank 0 reads the files and spreads the rows over the ranks "
              "(pum: partitioned by grid cells with halos; global: the solver's vectors by rows) "
              "and writes the one output file, the same as one process's (docs/distributed.md).");
  cmd->add_option("--method", a.method,
                  "Method: pum (RBF partition of unity, seed 001) or global (one interpolant, "
                  "seed 000)")
      ->check(CLI::IsMember({"pum", "global"}))
      ->capture_default_str();
  cmd->add_option("--data", a.data, "Data file: d coordinate columns, then value columns")
      ->required();
  cmd->add_option("--dim", a.dim, "Number of coordinate columns (default: all but the last)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--eval", a.eval, "Evaluation points (d columns)");
  cmd->add_option("--grid", a.grid, "Evaluate on a regular grid over the data's box, e.g. 100x100");
  cmd->add_option("--kernel", a.kernel,
                  "RBF (default: matern4 for pum, multiquadric for global). pum: gaussian, "
                  "inverse-multiquadric, inverse-quadratic, matern0..6, wendland2..6; with "
                  "--degree also multiquadric (0), tps, cubic, linear (1). global: any "
                  "non-singular kernel");
  cmd->add_option("--degree", a.degree,
                  "Polynomial part: -1 none, k total degree k (reproduces polynomials of that "
                  "degree exactly). pum: -1 (default), 0 or 1 per local fit (CPU); global: "
                  "default the kernel's minimum (multiquadric 0, tps/cubic 1, else none)");
  cmd->add_option("--solver", a.solver,
                  "global: auto (dense up to 6000 points, else fgp for degree 0, else krylov), "
                  "dense (LAPACK / cuSOLVER), fgp (seed 000 §3.1), krylov (GMRES with the "
                  "L-set preconditioner)")
      ->check(CLI::IsMember({"auto", "dense", "fgp", "krylov"}))
      ->capture_default_str();
  cmd->add_option("--tol", a.tol,
                  "global, iterative: stop at max|f - s| <= tol max|f| (fgp) or "
                  "||f - s||_2 <= tol ||f||_2 (krylov)")
      ->capture_default_str();
  cmd->add_option("--matvec", a.matvec,
                  "global, iterative (3D): direct (exact products), fmm (fast multipole products; "
                  "also used to evaluate), or auto")
      ->check(CLI::IsMember({"direct", "fmm", "auto"}))
      ->capture_default_str();
  cmd->add_option("--matvec-tol", a.matvec_tol,
                  "global, --matvec fmm: the products' relative tolerance (0: --tol / 10)")
      ->capture_default_str();
  cmd->add_option("--max-iter", a.max_iter, "global, iterative: iteration limit")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--q", a.q, "global, iterative: L-set size q (seed 000: 30-50)")
      ->capture_default_str();
  cmd->add_option("--smoothing", a.smoothing,
                  "global: add this to the matrix diagonal (smoothing instead of interpolation)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--eps", a.eps, "Shape parameter, or 'loocv' to choose it per patch")
      ->capture_default_str();
  cmd->add_option("--eps-range", a.eps_range, "LOOCV bracket MIN,MAX")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--radius", a.radius,
                  "Patch radius in cell widths (seed 001 eq. 10: sqrt 2; at least what covers a "
                  "cell)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--density", a.density, "Multiplies the seed's number of patches per axis")
      ->capture_default_str();
  cmd->add_option("--min-points", a.min_points,
                  "Grow sparse patches to this many points (default 3(d+1))")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--merge-duplicates", a.merge, "Average repeated data points instead of an error");
  cmd->add_flag("--extrapolate", a.extrapolate,
                "Evaluate outside the data's box from the nearest patches instead of an error");
  cmd->add_option("--threads", a.threads, "CPU threads (0: all)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--backend", a.backend,
                  "Where the work runs: auto (the GPU when present; pum: 2D/3D data with up to 4 "
                  "value columns), cpu or gpu (global: the matvecs and the dense solve)")
      ->check(CLI::IsMember({"auto", "cpu", "gpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", a.output,
                  "Output (.csv or .npy): per evaluation point its coordinates, then the values")
      ->required();
  cmd->add_option("--plot", a.plot,
                  "With --grid on 2D data: a PNG heat map of the first value column");
  cmd->add_flag("-f,--force", a.force, "Overwrite the output (and plot) file if it exists");
  cmd->callback([] { run_interpolate(a); });
}

} // namespace ksum::cli
