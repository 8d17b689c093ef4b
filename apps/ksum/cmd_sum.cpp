// ksum sum: the kernel sum of files of points and weights: direct, the FMM, or for the gaussian
// kernel the fast Gauss transform.
#include "common.hpp"

#include <ksum/device.hpp>
#include <ksum/direct.hpp>
#include <ksum/distributed.hpp>
#include <ksum/error.hpp>
#include <ksum/fmm2d.hpp>
#include <ksum/io.hpp>

#include <filesystem>
#include <fmt/format.h>
#include <future>

namespace ksum::cli {
namespace {

struct SumArgs {
  std::string kernel, sources, targets, weights, output;
  std::string backend = "auto", precision = "f64", method = "direct";
  double eps = 1.0, tol = 1e-6;
  int fmm_order = 0;
  bool gradient = false, force = false, force_method = false, timing = false, fmm_double = false;
  int threads = 0;
  std::vector<int> devices;
  std::int64_t device_memory = 0;
};

std::vector<std::string> column_names(std::int64_t nrhs, std::int64_t d, bool gradient) {
  std::vector<std::string> names;
  for (std::int64_t r = 0; r < nrhs; ++r) {
    const std::string u = nrhs == 1 ? "u" : fmt::format("u{}", r);
    names.push_back(u);
    if (gradient)
      for (std::int64_t k = 0; k < d; ++k)
        names.push_back(fmt::format("d{}_dx{}", u, k));
  }
  return names;
}

// The harmonic (Biot–Savart) kernel u(z_i) = Σ_j q_j / (z_i − z_j) of 2D points with complex
// strengths: weights are two columns (Re q, Im q), the output two columns (Re u, Im u). Served by
// the 2D FMM plan (seed 004 Paper IV), exactly with --method direct.
template <class T> void run_harmonic(const SumArgs &a) {
  const auto t0 = std::chrono::steady_clock::now();
  refuse_overwrite(a.output, {&a.sources, &a.targets, &a.weights}, a.force);
  io::format_from_path(a.output);
  if (a.gradient)
    throw Error(ErrorCode::unsupported, "--gradient: the harmonic kernel is already a derivative "
                                        "(of the log potential); drop --gradient");
  if (a.eps != 1.0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("--eps {}: the harmonic kernel has no shape parameter", a.eps));
  const auto src = io::read_table(a.sources);
  if (src.cols() != 2)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("{} has {} columns: the harmonic kernel takes 2D points (x, y)",
                            a.sources, src.cols()));
  Table<double> tgt;
  if (!a.targets.empty())
    tgt = io::read_table(a.targets, {.expect_cols = 2});
  const auto w = io::read_table(a.weights);
  if (w.rows() != src.rows() || w.cols() != 2)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("{} is {} × {}: the harmonic kernel takes one complex strength per "
                            "source as two columns (Re q, Im q), {} rows",
                            a.weights, w.rows(), w.cols(), src.rows()));
  Fmm2dOptions o;
  o.kernel = Fmm2dKernel::harmonic;
  o.method = parse_method(a.method);
  o.tolerance = a.tol;
  o.backend = parse_backend(a.backend);
  o.threads = a.threads;
  Fmm2d<T> plan(o);
  const auto cz = [](const Table<double> &t) {
    std::vector<std::complex<T>> z(static_cast<std::size_t>(t.rows()));
    for (std::int64_t i = 0; i < t.rows(); ++i)
      z[i] = {static_cast<T>(t(i, 0)), static_cast<T>(t(i, 1))};
    return z;
  };
  if (a.targets.empty())
    plan.set_points(cz(src));
  else
    plan.set_points(cz(src), cz(tgt));
  const auto t1 = std::chrono::steady_clock::now();
  const auto u = plan.execute(cz(w));
  const double t_sum = seconds_since(t1);
  Table<double> result(static_cast<std::int64_t>(u.size()), 2);
  for (std::size_t i = 0; i < u.size(); ++i) {
    result(static_cast<std::int64_t>(i), 0) = u[i].real();
    result(static_cast<std::int64_t>(i), 1) = u[i].imag();
  }
  result.names = {"u_re", "u_im"};
  io::write_table(a.output, result,
                  {.overwrite = a.force,
                   .significant_digits = sizeof(T) == 4 ? 9 : 17,
                   .npy_float32 = sizeof(T) == 4});
  const auto &st = plan.stats();
  note(fmt::format("ksum sum: harmonic N={} M={} on {} ({}), {}: sum {:.3f} s, total {:.3f} s "
                   "-> {}",
                   src.rows(), u.size(), to_string(plan.backend()), sizeof(T) == 4 ? "f32" : "f64",
                   o.method == Method::direct ? std::string("direct")
                                              : fmt::format("fmm tol={} θ={} levels={} p={}", a.tol,
                                                            st.theta, st.levels, st.order),
                   t_sum, seconds_since(t0), a.output));
}

// The options of --kernel, --eps, --gradient, --backend, --threads, --devices, --device-memory.
DirectOptions direct_options(const SumArgs &a) {
  DirectOptions opt;
  opt.kernel = parse_kernel(a.kernel);
  opt.eps = a.eps;
  opt.gradient = a.gradient;
  opt.backend = parse_backend(a.backend);
  opt.threads = a.threads;
  opt.devices = a.devices;
  opt.device_memory_limit = a.device_memory;
  return opt;
}

// Under mpirun with several ranks: rank 0 reads the files and scatters contiguous row slices
// (targets and sources split evenly), DistributedSum passes the source slices around the ranks
// (--method fmm: partitions them by Morton key and sends each rank its essential tree),
// rank 0 gathers the sums in the original order and writes the one output file. Every failure
// (a missing file, bad input, a full disk) is agreed: every rank exits with the same error.
template <class T> void run_sum_distributed(const SumArgs &a, const Communicator &comm) {
  const auto t0 = std::chrono::steady_clock::now();
  const int P = comm.size(), rank = comm.rank();
  const bool root = rank == 0;
  if (a.kernel == "harmonic" || a.kernel == "biot-savart" ||
      (a.method != "direct" && a.method != "fmm") || (a.method == "fmm" && a.gradient))
    throw AgreedError(
        ErrorCode::unsupported, // the same arguments on every rank
        fmt::format("under mpirun ({} ranks) ksum sum runs --method direct (every pair, "
                    "over the ranks) or fmm (3D potentials: no --gradient) for the "
                    "kernels of --kernel except harmonic; got --method {} --kernel {}{}: run it "
                    "without mpirun",
                    P, a.method, a.kernel, a.gradient ? " --gradient" : ""));
  DirectOptions opt = direct_options(a);
  opt.method = parse_method(a.method);
  opt.tolerance = a.tol;
  opt.fmm_order = a.fmm_order;
  opt.fmm_mixed_precision = !a.fmm_double;
  DistributedSum<T> plan(comm, opt);

  // Rank 0 reads; the shapes go to every rank.
  Table<double> src, tgt, w;
  comm.agree(capture([&] {
    if (!root)
      return;
    refuse_overwrite(a.output, {&a.sources, &a.targets, &a.weights}, a.force);
    io::format_from_path(a.output);
    src = io::read_table(a.sources);
    if (!a.targets.empty())
      tgt = io::read_table(a.targets, {.expect_cols = src.cols()});
    w = io::read_table(a.weights);
    if (w.rows() != src.rows())
      throw Error(ErrorCode::shape_mismatch,
                  fmt::format("{} has {} rows but {} has {} points: one weight row per source",
                              a.weights, w.rows(), a.sources, src.rows()));
  }));
  double shape[4] = {double(src.rows()), double(src.cols()),
                     a.targets.empty() ? -1.0 : double(tgt.rows()), double(w.cols())};
  comm.broadcast(shape, 4);
  const auto n = static_cast<std::int64_t>(shape[0]), d = static_cast<std::int64_t>(shape[1]),
             nrhs = static_cast<std::int64_t>(shape[3]);
  const bool self = shape[2] < 0;
  const std::int64_t m = self ? n : static_cast<std::int64_t>(shape[2]);
  // Column by column (a Table is column-major): root's rows [first_r, first_r + counts_r) to r.
  const auto scatter = [&](const Table<double> &all, std::int64_t cols,
                           const std::vector<std::int64_t> &counts) {
    Table<double> mine(counts[static_cast<std::size_t>(rank)], cols);
    for (std::int64_t c = 0; c < cols; ++c)
      comm.scatterv(root ? all.data() + c * all.rows() : nullptr, counts,
                    mine.data() + c * mine.rows(), mine.rows());
    return mine;
  };
  const auto ns = comm.even_counts(n), ms = comm.even_counts(m);
  const Table<double> my_src = scatter(src, d, ns), my_w = scatter(w, nrhs, ns);
  const auto t1 = std::chrono::steady_clock::now();
  if (self)
    plan.set_points(my_src.template cast<T>());
  else
    plan.set_points(my_src.template cast<T>(), scatter(tgt, d, ms).template cast<T>());
  const auto out = plan.execute(my_w.template cast<T>()).template cast<double>();
  const double t_sum = seconds_since(t1);

  Table<double> result(root ? m : 0, out.cols());
  for (std::int64_t c = 0; c < out.cols(); ++c)
    comm.gatherv(out.data() + c * out.rows(), out.rows(), root ? result.data() + c * m : nullptr,
                 ms);
  comm.agree(capture([&] {
    if (!root)
      return;
    result.names = column_names(nrhs, d, a.gradient);
    io::write_table(a.output, result,
                    {.overwrite = a.force,
                     .significant_digits = sizeof(T) == 4 ? 9 : 17,
                     .npy_float32 = sizeof(T) == 4});
  }));
  const auto &st = plan.stats();
  const double wait = comm.allreduce_max(st.seconds_wait);
  const double pairs = double(m) * double(n - (self ? 1 : 0));
  if (opt.method == Method::fmm) {
    const auto &st = plan.stats();
    double got[2] = {double(st.fmm_received), double(st.fmm_pseudo_cells_sent)};
    comm.allreduce_sum(got, 2);
    note(fmt::format("ksum sum: {} eps={} d={} N={}{} rhs={} on {} ranks ({}, {}), fmm tol={}: sum "
                     "{:.3f} s ({:.0f} sources received in the essential trees, {:.0f} cells as "
                     "pseudo-particles; longest exchange {:.3f} s), total {:.3f} s -> {}",
                     a.kernel, a.eps, d, n, self ? std::string() : fmt::format(" M={}", m), nrhs,
                     P, a.backend, sizeof(T) == 4 ? "f32" : "f64",
                     a.tol, t_sum, got[0], got[1], wait, seconds_since(t0), a.output));
    return;
  }
  note(fmt::format("ksum sum: {} eps={} d={} N={} M={} rhs={}{} on {} ranks ({}, {}), direct: sum "
                   "{:.3f} s ({:.3g} pairs/s; longest wait for a block {:.3f} s), total {:.3f} s "
                   "-> {}",
                   a.kernel, a.eps, d, n, m, nrhs, a.gradient ? " +gradient" : "", P, a.backend,
                   sizeof(T) == 4 ? "f32" : "f64", t_sum,
                   t_sum > 0 ? std::max(pairs, 0.0) * double(nrhs) / t_sum : 0.0, wait,
                   seconds_since(t0), a.output));
}

template <class T> void run_sum(const SumArgs &a) {
  if (const Communicator comm = Communicator::world(); comm.distributed())
    return run_sum_distributed<T>(a, comm);
  if (a.kernel == "harmonic" || a.kernel == "biot-savart")
    return run_harmonic<T>(a);
  namespace fs = std::filesystem;
  const auto t0 = std::chrono::steady_clock::now();
  refuse_overwrite(a.output, {&a.sources, &a.targets, &a.weights}, a.force);
  io::format_from_path(a.output);

  // Unless the sum is on the CPU, the CUDA driver and context start on another thread while the
  // inputs are read and the plan's host work (bounding boxes, the FGT's boxes) runs: the plan's
  // first GPU call waits for them there. With no GPU (or no CUDA in the build) the thread ends at
  // once and backend auto picks the CPU.
  std::future<double> gpu_start;
  if (a.backend != "cpu")
    gpu_start = std::async(std::launch::async, [d = a.devices.empty() ? 0 : a.devices.front()] {
      return gpu_warm_up(d);
    });
  const auto src = io::read_table(a.sources);
  Table<double> tgt;
  if (!a.targets.empty())
    tgt = io::read_table(a.targets, {.expect_cols = src.cols()});
  const auto w = io::read_table(a.weights);
  const double t_read = seconds_since(t0);
  if (w.rows() != src.rows())
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("{} has {} rows but {} has {} points: one weight row per source",
                            a.weights, w.rows(), a.sources, src.rows()));

  DirectOptions opt = direct_options(a);
  opt.method = parse_method(a.method);
  opt.tolerance = a.tol;
  opt.fmm_order = a.fmm_order;
  opt.fmm_mixed_precision = !a.fmm_double;
  opt.force_method = a.force_method;
  ProgressLine progress("ksum sum");
  opt.progress = progress.callback();

  const auto t_plan = std::chrono::steady_clock::now();
  DirectSum<T> plan(opt);
  if (a.targets.empty())
    plan.set_points(src.template cast<T>());
  else
    plan.set_points(src.template cast<T>(), tgt.template cast<T>());
  const double t_setup = seconds_since(t_plan);
  const auto t1 = std::chrono::steady_clock::now();
  const auto out = plan.execute(w.template cast<T>());
  const double t_sum = seconds_since(t1);
  const double t_gpu_start = gpu_start.valid() ? gpu_start.get() : 0.0;

  const auto t_out = std::chrono::steady_clock::now();
  auto result = out.template cast<double>();
  result.names = column_names(w.cols(), src.cols(), a.gradient);
  io::write_table(a.output, result,
                  {.overwrite = a.force,
                   .significant_digits = sizeof(T) == 4 ? 9 : 17,
                   .npy_float32 = sizeof(T) == 4});
  if (a.timing) {
    const auto &s = plan.stats();
    note(fmt::format("ksum sum timing: read {:.3f} s; GPU context {:.3f} s (the driver's start "
                     "and the context, on their own thread from the start beside the reading and "
                     "the plan's host work; the set-up includes any wait for them); plan set-up "
                     "{:.3f} s (tree {:.3f}, "
                     "of which sort {:.3f}; operators {:.3f}); sum {:.3f} s; write {:.3f} s; total "
                     "{:.3f} s since main() (the process start before it is not counted)",
                     t_read, t_gpu_start, t_setup, s.seconds_tree, s.seconds_sort,
                     s.seconds_operators, t_sum, seconds_since(t_out), seconds_since(t0)));
  }
  const double pairs = static_cast<double>(plan.num_targets()) *
                       static_cast<double>(plan.num_sources() - (a.targets.empty() ? 1 : 0));
  const auto &st = plan.stats();
  if (!st.note.empty())
    note("ksum sum: " + st.note);
  std::string how = "direct";
  if (st.method == Method::fmm)
    how = fmt::format("fmm tol={} order={} depth={} boxes={}{}, setup {:.3f} s", a.tol,
                      st.fmm_order, st.tree_depth, st.tree_boxes,
                      st.fmm_mixed_precision ? " (mixed precision)" : "", st.seconds_setup);
  else if (st.method == Method::fgt)
    how = fmt::format("fgt h={:.6g} tol={} p={} boxes={} bound={:.2e}, setup {:.3f} s", 1 / a.eps,
                      a.tol, st.fmm_order, st.tree_boxes, st.estimated_error, st.seconds_setup);
  note(fmt::format("ksum sum: {} eps={} d={} N={} M={} rhs={}{} on {} ({}), {}: sum {:.3f} s "
                   "({:.3g} pairs/s), total {:.3f} s -> {}",
                   a.kernel, a.eps, plan.dimension(), plan.num_sources(), plan.num_targets(),
                   w.cols(), a.gradient ? " +gradient" : "", to_string(plan.backend()),
                   sizeof(T) == 4 ? "f32" : "f64", how, t_sum,
                   t_sum > 0 ? std::max(pairs, 0.0) * w.cols() / t_sum : 0.0, seconds_since(t0),
                   a.output));
}

} // namespace

void register_sum(CLI::App &app) {
  static SumArgs a;
  auto *cmd = app.add_subcommand(
      "sum", "Kernel sum u(x_i) = sum_j w_j K(|x_i - y_j|) over files of points: direct, the "
             "fast multipole method (2D/3D), or the fast Gauss transform (gaussian kernel)");
  cmd->footer("Files are CSV (optional header line) or NumPy .npy, by extension. Without "
              "--targets the targets are the sources and the self term j = i is left out.\n"
              "Example: ksum sum --kernel laplace --sources pts.csv --weights q.csv -o u.csv\n"
              "Fast (3D): ksum sum --kernel laplace --method fmm --tol 1e-6 --sources pts.csv "
              "--weights q.csv -o u.csv\n"
              "Fast (2D): ksum sum --kernel log --method fmm --tol 1e-8 --sources xy.csv "
              "--weights q.csv -o u.csv\n"
              "Fast Gauss transform (any d, bandwidth h = 1/eps): ksum sum --kernel gaussian "
              "--eps 10 --method fgt --tol 1e-8 --sources pts.csv --weights q.csv -o u.csv\n"
              "Vortex velocities: ksum sum --kernel harmonic --method fmm --sources xy.csv "
              "--weights gamma_re_im.csv -o u.csv\n"
              "Over several processes or nodes (direct): mpirun -n 4 ksum sum --kernel laplace "
              "--sources pts.npy --weights q.npy -o u.npy (rank 0 reads and writes; the source "
              "slices travel around the ranks; one GPU per rank with --backend gpu)");
  cmd->add_option("--kernel", a.kernel,
                  "Kernel: " + kernel_names() +
                      ", harmonic (2D Biot–Savart 1/(z − z_j), complex weights as 2 columns)")
      ->required();
  cmd->add_option("--eps", a.eps, "Shape parameter: K = phi(eps r)")->capture_default_str();
  cmd->add_option("--sources", a.sources, "Source points, one row per point (d columns)")
      ->required();
  cmd->add_option("--targets", a.targets,
                  "Target points (default: the sources, self term left "
                  "out)");
  cmd->add_option("--weights", a.weights,
                  "Weights, one row per source, one column per right-hand side")
      ->required();
  cmd->add_flag("--gradient", a.gradient, "Also write the gradient (d more columns per rhs)");
  cmd->add_option(
         "--method", a.method,
         "direct|fmm|fgt|auto: direct (every pair), fmm (fast multipole method to --tol: "
         "3D, or 2D log/harmonic), fgt (the fast Gauss transform: gaussian kernel only, "
         "any dimension, bandwidth h = 1/eps, i.e. exp(-|x-y|^2/h^2)), or auto (the fastest of "
         "direct, fmm (3D) and, for the gaussian kernel, fgt, by rates timed on this "
         "machine first; --timing's set-up includes that; the note says what it chose)")
      ->check(CLI::IsMember({"direct", "fmm", "fgt", "auto"}))
      ->capture_default_str();
  cmd->add_flag("--force-method", a.force_method,
                "fgt: run the fast Gauss transform even where its cost model predicts the direct "
                "sum cheaper (without it such a run hands over to the direct sum and says so)");
  cmd->add_option(
         "--tol", a.tol,
         "fmm: relative error wanted (3D f64: 1e-11 .. 0.1; 2D f64: 1e-13 .. 0.1; f32: "
         "1e-6 .. 0.1). fgt: absolute error per target relative to sum_j |w_j|, "
         "|u_i - exact| <= tol * sum_j |w_j| (f64: 1e-12 .. 0.5; f32: 1e-6 .. 0.5). auto: the "
         "meaning of the method it chose (the note names it)")
      ->capture_default_str();
  cmd->add_option("--fmm-order", a.fmm_order,
                  "FMM: Chebyshev nodes per axis (2 .. 16); 0: chosen from --tol")
      ->capture_default_str();
  cmd->add_flag("--fmm-double", a.fmm_double,
                "3D FMM (f64): double precision throughout. Without it, from --tol 1e-4 on the "
                "CPU's M2L products and near sums and the GPU's near field run in float, their "
                "results added in double (rounding ~1e-7 of the terms, far below the tolerance; "
                "the note then says 'mixed precision')");
  cmd->add_option("--backend", a.backend, "auto (GPU when present), cpu or gpu")
      ->check(CLI::IsMember({"auto", "cpu", "gpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--precision", a.precision, "Arithmetic precision")
      ->check(CLI::IsMember({"f32", "f64"}))
      ->capture_default_str();
  cmd->add_option("--threads", a.threads, "CPU threads (0: all)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--devices", a.devices,
                  "GPU ids to split the targets over (default: all; the 3D FMM takes all from 2^22 "
                  "targets on, else the first; an id may repeat to share one GPU)")
      ->delimiter(',');
  cmd->add_option("--device-memory", a.device_memory,
                  "Bytes of GPU memory to use per device (0: 90% of free); larger inputs are "
                  "streamed in chunks")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("-o,--output", a.output, "Output file (.csv or .npy): one row per target")
      ->required();
  cmd->add_flag("-f,--force", a.force, "Overwrite the output file if it exists");
  cmd->add_flag("--timing", a.timing,
                "Also print where the time went: reading, the GPU's start, the plan's set-up "
                "(tree, operators), the sum, writing");
  cmd->callback([] {
    if (a.precision == "f32")
      run_sum<float>(a);
    else
      run_sum<double>(a);
  });
}

} // namespace ksum::cli
