// ksum kde: Gaussian kernel density estimation of a file of points, evaluated by the fast Gauss
// transform on a grid or at given points, with an optional PNG plot.
#include "common.hpp"

#include <ksum/error.hpp>
#include <ksum/fgt.hpp>
#include <ksum/io.hpp>
#include <ksum/kde.hpp>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <numeric>

namespace ksum::cli {
namespace {

struct KdeArgs {
  std::string data, weights, eval, grid, output, plot;
  std::string bandwidth = "scott", method = "auto", backend = "auto", precision = "f64";
  std::vector<double> range;
  double tol = 1e-6;
  int threads = 0;
  bool grid_dims = false, force = false;
};

// "200" (every axis) or "200x100" (one count per axis), at least 2 per axis.
std::vector<std::int64_t> parse_grid(const KdeArgs &a, std::int64_t dim) {
  std::vector<std::int64_t> counts;
  for (std::size_t b = 0; b <= a.grid.size();) {
    const std::size_t e = std::min(a.grid.find('x', b), a.grid.size());
    const std::string part = a.grid.substr(b, e - b);
    char *end = nullptr;
    const long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 2)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("--grid '{}': '{}' is not a count >= 2 (expected e.g. 200 or "
                              "200x100)",
                              a.grid, part));
    counts.push_back(v);
    b = e + 1;
  }
  if (counts.size() == 1)
    counts.assign(static_cast<std::size_t>(dim), counts[0]);
  if (static_cast<std::int64_t>(counts.size()) != dim)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("--grid '{}' has {} axes but {} has dimension {}", a.grid,
                            counts.size(), a.data, dim));
  if (dim > 2 && !a.grid_dims)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("--grid on {}-dimensional data ({}) makes a {}-dimensional grid; add "
                            "--grid-dims to allow it, or give the points with --eval",
                            dim, a.data, dim));
  double total = 1;
  for (const auto c : counts)
    total *= static_cast<double>(c);
  if (total > 1e9)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("--grid '{}' makes {:.3g} points in {} dimensions; at most 1e9", a.grid,
                            total, dim));
  return counts;
}

KdeRange given_range(const KdeArgs &a, std::int64_t dim) {
  const auto m = static_cast<std::int64_t>(a.range.size());
  if (m != 2 && m != 2 * dim)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("--range has {} numbers; give lo,hi (every axis) or lo,hi per axis "
                            "({} numbers for dimension {})",
                            m, 2 * dim, dim));
  KdeRange r;
  for (std::int64_t k = 0; k < dim; ++k) {
    const double lo = a.range[m == 2 ? 0 : 2 * k], hi = a.range[m == 2 ? 1 : 2 * k + 1];
    if (!std::isfinite(lo) || !std::isfinite(hi) || !(hi > lo))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("--range: axis {} is [{}, {}]; need finite lo < hi", k, lo, hi));
    r.lo.push_back(lo);
    r.hi.push_back(hi);
  }
  return r;
}

// The plot: a line through the points in x order (1D), or a heat map of the grid (2D).
void write_plot(const KdeArgs &a, const Table<double> &y, const Table<double> &f,
                const std::vector<std::int64_t> &counts) {
  if (y.cols() == 2) {
    io::write_heatmap_png(a.plot, f.data(), counts[0], counts[1], a.force);
    return;
  }
  std::vector<std::int64_t> order(static_cast<std::size_t>(y.rows()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t i, std::int64_t j) { return y(i, 0) < y(j, 0); });
  std::vector<double> px, py;
  for (const auto i : order) {
    px.push_back(y(i, 0));
    py.push_back(f(i, 0));
  }
  io::write_line_plot_png(a.plot, px.data(), py.data(), y.rows(), a.force);
}

template <class T> void run_kde(const KdeArgs &a) {
  namespace fs = std::filesystem;
  const auto t0 = std::chrono::steady_clock::now();
  refuse_overwrite(a.output, {&a.data, &a.weights, &a.eval}, a.force);
  io::format_from_path(a.output);
  if (!a.plot.empty()) {
    if (fs::path(a.plot).extension() != ".png")
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("--plot {}: expected a .png file", a.plot));
    if (a.plot == a.output)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("--plot {}: the same file as -o", a.plot));
    refuse_overwrite(a.plot, {&a.data, &a.weights, &a.eval, &a.output}, a.force);
  }
  if (a.eval.empty() == a.grid.empty())
    throw Error(ErrorCode::invalid_argument, "give exactly one of --eval FILE and --grid N");
  if (!a.range.empty() && a.grid.empty())
    throw Error(ErrorCode::invalid_argument, "--range sets the box of --grid; it needs --grid");
  KdeOptions opt;
  opt.bandwidth = parse_bandwidth(a.bandwidth);
  opt.tolerance = a.tol;
  opt.method = parse_gauss_method(a.method);
  opt.backend = parse_backend(a.backend);
  opt.threads = a.threads;

  const auto table = io::read_table(a.data);
  const std::int64_t dim = table.cols();
  if (!a.plot.empty() && dim > 2)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("--plot draws 1D or 2D densities; {} has dimension {}", a.data, dim));
  if (!a.plot.empty() && dim == 2 && a.grid.empty())
    throw Error(ErrorCode::invalid_argument,
                "--plot of 2D data draws a heat map of --grid; scattered --eval points cannot be "
                "drawn (use --grid, or drop --plot)");
  const auto x = table.template cast<T>();
  Table<T> w;
  if (!a.weights.empty()) {
    w = io::read_table(a.weights, {.expect_cols = 1}).template cast<T>();
    if (w.rows() != x.rows())
      throw Error(ErrorCode::shape_mismatch,
                  fmt::format("{} has {} rows but {} has {} points: one weight per data point",
                              a.weights, w.rows(), a.data, x.rows()));
  }
  const Table<T> *wp = a.weights.empty() ? nullptr : &w;

  std::vector<std::int64_t> counts;
  KdeRange box;
  Table<T> y;
  if (!a.grid.empty()) {
    counts = parse_grid(a, dim);
    box = a.range.empty() ? kde_range(x, kde_bandwidth(x, opt.bandwidth, wp)) : given_range(a, dim);
    y = kde_grid<T>(box.lo, box.hi, counts);
  } else {
    y = io::read_table(a.eval, {.expect_cols = dim}).template cast<T>();
  }

  ProgressLine progress("ksum kde");
  opt.progress = progress.callback();
  KdeInfo info;
  const auto f = (wp ? kernel_density(x, *wp, y, opt, &info) : kernel_density(x, y, opt, &info))
                     .template cast<double>();

  const auto yd = y.template cast<double>();
  Table<double> out(yd.rows(), dim + 1);
  for (std::int64_t k = 0; k < dim; ++k)
    std::copy(yd.col(k).begin(), yd.col(k).end(), out.col(k).begin());
  std::copy(f.col(0).begin(), f.col(0).end(), out.col(dim).begin());
  for (std::int64_t k = 0; k < dim; ++k)
    out.names.push_back(static_cast<std::int64_t>(table.names.size()) == dim
                            ? table.names[k]
                            : fmt::format("x{}", k));
  out.names.push_back("density");
  io::write_table(a.output, out,
                  {.overwrite = a.force,
                   .significant_digits = sizeof(T) == 4 ? 9 : 17,
                   .npy_float32 = sizeof(T) == 4});
  if (!a.plot.empty())
    write_plot(a, yd, f, counts);

  const auto &st = info.stats;
  std::string how(to_string(st.method));
  if (st.method != GaussMethod::direct)
    how += fmt::format(" p={}", st.order);
  std::string check;
  if (!a.grid.empty()) {
    double sum = 0;
    for (const double v : f.col(0))
      sum += v;
    check = fmt::format(", grid {} points, integral sum(f) * cell = {:.6f}", y.rows(),
                        sum * kde_cell_volume(box.lo, box.hi, counts));
  }
  note(fmt::format("ksum kde: n={}{} d={} sigma=({:.4g}) ({}), {} on {} ({}) tol {:g} (|error| <= "
                   "{:.2e}): {:.3f} s{}, total {:.3f} s -> {}{}",
                   x.rows(), wp ? fmt::format(" (n_eff={:.1f})", info.effective_n) : std::string(),
                   dim, fmt::join(info.sigma, ", "), to_string(opt.bandwidth.rule), how,
                   to_string(st.backend), sizeof(T) == 4 ? "f32" : "f64", a.tol, info.error_bound,
                   info.seconds, check, seconds_since(t0), a.output,
                   a.plot.empty() ? std::string() : ", " + a.plot));
}

} // namespace

void register_kde(CLI::App &app) {
  static KdeArgs a;
  auto *cmd = app.add_subcommand(
      "kde", "Gaussian kernel density estimate f(y) = 1/(n prod_k sqrt(2 pi) sigma_k) sum_i "
             "exp(-sum_k (y_k - x_ik)^2 / (2 sigma_k^2)), by the fast Gauss transform");
  cmd->footer(
      "Bandwidth: sigma is the kernel's standard deviation (per axis with the rules; one value "
      "for every axis when fixed). The Gauss transform underneath is written exp(-r^2/h^2): its "
      "h = sqrt(2) sigma. scott: sigma_k = n^(-1/(d+4)) s_k; silverman: sigma_k = "
      "(n (d+2)/4)^(-1/(d+4)) s_k, with s_k the sample standard deviation of column k (with "
      "--weights: the weighted one and n_eff = 1/sum w^2, as SciPy). SciPy's gaussian_kde uses "
      "the full covariance; ksum uses its diagonal.\n"
      "Error: every density value is within tol / prod_k (sqrt(2 pi) sigma_k) (tol times one "
      "kernel's peak) of the exact sum.\n"
      "Output: the evaluation coordinates, then 'density'. Files are CSV or NumPy .npy.\n"
      "Example: ksum kde --data samples.csv --grid 400 -o density.csv --plot density.png\n"
      "         ksum kde --data xy.csv --grid 200 --bandwidth 0.1 -o f.csv --plot f.png\n"
      "         ksum kde --data x.npy --eval y.npy --bandwidth silverman --tol 1e-9 -o f.npy");
  cmd->add_option("--data", a.data, "Data points, one row per point (d columns)")->required();
  cmd->add_option("--weights", a.weights,
                  "Optional weights, one non-negative value per data point (normalised to sum 1)");
  cmd->add_option("--eval", a.eval, "Evaluate at these points (d columns)");
  cmd->add_option("--grid", a.grid,
                  "Evaluate on a regular grid: N points per axis, or N1xN2 (1D and 2D data; "
                  "more with --grid-dims)");
  cmd->add_flag("--grid-dims", a.grid_dims, "Allow --grid for data of more than 2 dimensions");
  cmd->add_option("--range", a.range,
                  "Grid box lo,hi (every axis) or lo,hi,lo,hi per axis (default: the data's box "
                  "padded by 3 sigma_k)")
      ->delimiter(',');
  cmd->add_option("--bandwidth", a.bandwidth,
                  "scott, silverman, or sigma (the kernel's standard deviation; h = sqrt(2) "
                  "sigma)")
      ->capture_default_str();
  cmd->add_option("--tol", a.tol,
                  "Absolute error of f relative to one kernel's peak 1/prod(sqrt(2 pi) sigma_k) "
                  "(f64: 1e-12 .. 0.5; f32: 1e-6 .. 0.5)")
      ->capture_default_str();
  cmd->add_option("--method", a.method,
                  "auto (cheapest by a cost model), direct, fgt (tensor Hermite series, low d) or "
                  "ifgt (clustered Taylor series, higher d)")
      ->check(CLI::IsMember({"auto", "direct", "fgt", "ifgt"}))
      ->capture_default_str();
  cmd->add_option("--backend", a.backend, "auto (GPU when present), cpu or gpu")
      ->check(CLI::IsMember({"auto", "cpu", "gpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--precision", a.precision, "Arithmetic precision")
      ->check(CLI::IsMember({"f32", "f64"}))
      ->capture_default_str();
  cmd->add_option("--threads", a.threads, "CPU threads (0: all)")->check(CLI::NonNegativeNumber);
  cmd->add_option("-o,--output", a.output, "Output file (.csv or .npy)")->required();
  cmd->add_option("--plot", a.plot, "PNG plot: a line plot of 1D data, a heat map of a 2D --grid");
  cmd->add_flag("-f,--force", a.force, "Overwrite the output (and plot) file if it exists");
  cmd->callback([] {
    if (a.precision == "f32")
      run_kde<float>(a);
    else
      run_kde<double>(a);
  });
}

} // namespace ksum::cli
