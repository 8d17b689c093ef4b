// ksum tdbem: time-domain boundary elements for the 3D wave equation (seed 003): a plane-wave
// pulse scattered by a closed triangulated surface, the summation stage in slices on the CPU and
// GPU workers (and MPI ranks under mpirun), the scattered field at probe points.
#include "common.hpp"

#include <ksum/error.hpp>
#include <ksum/io.hpp>
#include <ksum/mesh.hpp>
#include <ksum/tdbem.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>

namespace ksum::cli {
namespace {

struct TdbemArgs {
  std::string mesh, probes, probe_csv, plot, vtu, summary;
  std::string basis = "constant", kernel = "contiguous", ordering = "morton", backend = "auto",
              precision = "f32";
  std::string block;
  double sphere = 1.0, c = 1.0, dt = 0.0, t0 = -1, width = -1;
  std::vector<double> direction = {1, 0, 0};
  int refine = 3, ng = 4, threads = 0, vtu_every = 0;
  std::int64_t steps = 0;
  std::vector<int> devices;
  bool balance = true, force = false;
};

// "RxC": b_r and b_c (0 = automatic), e.g. 128x0 or 32x16.
std::pair<int, int> parse_block(const std::string &s) {
  const auto x = s.find('x');
  auto number = [&](const std::string &part) {
    char *end = nullptr;
    const long v = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 0 || v > 4096)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("--block '{}': expected RxC with 0 … 4096 each (0: automatic), "
                              "e.g. 128x0 or 32x16",
                              s));
    return static_cast<int>(v);
  };
  if (x == std::string::npos)
    return {number(s), 0};
  return {number(s.substr(0, x)), number(s.substr(x + 1))};
}

Mesh surface_mesh(const TriangleSurface &s) {
  Mesh m;
  m.dim = 2;
  m.nodes = s.nodes;
  m.node_tags = s.node_tags;
  if (m.node_tags.empty())
    for (std::int64_t r = 0; r < s.nodes.rows(); ++r)
      m.node_tags.push_back(r + 1);
  ElementBlock b;
  b.connectivity = s.triangles;
  b.tags = s.tags;
  m.blocks.push_back(std::move(b));
  return m;
}

template <class T> void run_tdbem(const TdbemArgs &a) {
  namespace fs = std::filesystem;
  const auto t_start = std::chrono::steady_clock::now();
  for (const auto *out : {&a.probe_csv, &a.plot, &a.summary})
    refuse_overwrite(*out, {&a.mesh, &a.probes}, a.force);
  if (!a.plot.empty() && fs::path(a.plot).extension() != ".png")
    throw Error(ErrorCode::invalid_argument,
                fmt::format("--plot {}: expected a .png file", a.plot));
  if (!a.vtu.empty() && a.vtu_every <= 0)
    throw Error(ErrorCode::invalid_argument,
                "--vtu PREFIX needs --vtu-every K (a snapshot every K steps)");
  if (a.direction.size() != 3)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("--direction has {} numbers; give x,y,z", a.direction.size()));

  TriangleSurface surface;
  std::string what;
  if (!a.mesh.empty()) {
    surface = surface_from_mesh(io::read_mesh(a.mesh, true));
    what = a.mesh;
  } else {
    surface = sphere_surface(a.sphere, a.refine);
    what = fmt::format("sphere r = {} ({} triangles)", a.sphere, surface.elements());
  }
  TdbemOptions opt;
  opt.c = a.c;
  opt.dt = a.dt;
  opt.kernel = parse_tdbem_kernel(a.kernel);
  opt.time_basis = a.basis == "linear" ? TimeBasis::linear : TimeBasis::constant;
  opt.ordering = parse_tdbem_ordering(a.ordering);
  if (!a.block.empty())
    std::tie(opt.block_rows, opt.block_cols) = parse_block(a.block);
  opt.ng = a.ng;
  opt.backend = parse_backend(a.backend);
  opt.devices = a.devices;
  opt.threads = a.threads;
  opt.balance = a.balance;

  // Surface extent: the pulse's default start and width, the default probes.
  double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
  for (std::int64_t r = 0; r < surface.nodes.rows(); ++r)
    for (int k = 0; k < 3; ++k) {
      lo[k] = std::min(lo[k], surface.nodes(r, k));
      hi[k] = std::max(hi[k], surface.nodes(r, k));
    }
  const double centre[3] = {(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2};
  const double radius = std::sqrt(std::pow(hi[0] - lo[0], 2) + std::pow(hi[1] - lo[1], 2) +
                                  std::pow(hi[2] - lo[2], 2)) /
                        2;

  std::unique_ptr<ProgressLine> setup;
  if (!mpi_worker())
    setup = std::make_unique<ProgressLine>("tdbem: interaction matrices");
  opt.assembly_progress = [&](std::int64_t done, std::int64_t total) {
    if (setup)
      setup->update(static_cast<double>(done) / static_cast<double>(total));
  };
  TdbemSolver<T> solver(surface, opt);
  setup.reset();
  const auto &st0 = solver.stats();
  const bool root = st0.rank == 0;
  const double dt = solver.dt();
  const double dlen = std::sqrt(a.direction[0] * a.direction[0] + a.direction[1] * a.direction[1] +
                                a.direction[2] * a.direction[2]);
  if (!(dlen > 0))
    throw Error(ErrorCode::invalid_argument, "--direction: a zero vector");
  const std::array<double, 3> d = {a.direction[0] / dlen, a.direction[1] / dlen,
                                   a.direction[2] / dlen};
  // The pulse: 8 steps wide by default, its peak reaching the surface's near side 3 widths in.
  const double width = a.width > 0 ? a.width : 8 * dt;
  const double dc = d[0] * centre[0] + d[1] * centre[1] + d[2] * centre[2];
  const double t0 = a.t0 >= 0 ? a.t0 : 3 * width + (dc - radius) / a.c;
  solver.set_incident(plane_wave_pulse(d, a.c, t0, width));
  Table<double> probes;
  if (!a.probes.empty()) {
    probes = io::read_table(a.probes, {.expect_cols = 3});
  } else { // in front of the surface (back-scattered), behind it, and at its centre
    probes = Table<double>(3, 3);
    for (int k = 0; k < 3; ++k) {
      probes(0, k) = centre[k] - 2 * radius * d[k];
      probes(1, k) = centre[k] + 2 * radius * d[k];
      probes(2, k) = centre[k];
    }
  }
  solver.set_probes(probes);
  const std::int64_t steps =
      a.steps > 0 ? a.steps
                  : static_cast<std::int64_t>(std::ceil((t0 + 3 * width + 4 * radius / a.c) / dt));
  if (root)
    note(fmt::format("tdbem: {}: {} unknowns, c = {}, dt = {:.4g}, Kmax = {}, d_max = {}, {} "
                     "non-zeros ({:.3g} GB), {} steps, {} rank(s)",
                     what, st0.unknowns, a.c, dt, st0.kmax, st0.dmax, st0.nnz,
                     st0.nnz * sizeof(T) / 1e9, steps, st0.ranks));

  const Mesh vmesh = a.vtu.empty() ? Mesh{} : surface_mesh(surface);
  std::unique_ptr<ProgressLine> bar;
  if (root)
    bar = std::make_unique<ProgressLine>("tdbem: time steps");
  std::int64_t done = 0;
  while (done < steps) {
    const std::int64_t chunk =
        a.vtu_every > 0 ? std::min(steps - done, a.vtu_every - done % a.vtu_every) : steps - done;
    solver.run(chunk, [&](std::int64_t k, std::int64_t) {
      if (bar)
        bar->update(static_cast<double>(done + k) / static_cast<double>(steps));
    });
    done += chunk;
    if (root && !a.vtu.empty() && done % a.vtu_every == 0) {
      const auto sigma = solver.density();
      Table<double> field(static_cast<std::int64_t>(sigma.size()), 1);
      for (std::size_t e = 0; e < sigma.size(); ++e)
        field(static_cast<std::int64_t>(e), 0) = static_cast<double>(sigma[e]);
      io::write_mesh(fmt::format("{}_{:06d}.vtu", a.vtu, done), vmesh, vmesh.nodes, {},
                     {io::MeshField{"density", field}}, {.overwrite = a.force});
    }
  }
  bar.reset();
  if (!root)
    return;
  const auto &st = solver.stats();
  const auto &hist = solver.probe_history();
  for (const auto &row : hist)
    for (double u : row)
      if (!std::isfinite(u))
        throw Error(ErrorCode::non_finite, "the scattered field at a probe became non-finite");
  if (!a.probe_csv.empty()) {
    Table<double> out(static_cast<std::int64_t>(hist.size()), 1 + probes.rows());
    out.names.push_back("t");
    for (std::int64_t p = 0; p < probes.rows(); ++p)
      out.names.push_back(
          fmt::format("u_s({:.4g};{:.4g};{:.4g})", probes(p, 0), probes(p, 1), probes(p, 2)));
    for (std::size_t n = 0; n < hist.size(); ++n) {
      out(static_cast<std::int64_t>(n), 0) = static_cast<double>(n) * dt;
      for (std::int64_t p = 0; p < probes.rows(); ++p)
        out(static_cast<std::int64_t>(n), 1 + p) = hist[n][static_cast<std::size_t>(p)];
    }
    io::write_table(a.probe_csv, out, {.overwrite = a.force});
  }
  if (!a.plot.empty() && hist.size() >= 2) { // the first probe's signal over time
    std::vector<double> t, u;
    for (std::size_t n = 0; n < hist.size(); ++n) {
      t.push_back(static_cast<double>(n) * dt);
      u.push_back(hist[n][0]);
    }
    io::write_line_plot_png(a.plot, t.data(), u.data(), static_cast<std::int64_t>(t.size()),
                            a.force);
  }
  std::string text;
  text += fmt::format("surface      {} ({} unknowns, ordering {}, quality {:.1f})\n", what,
                      st.unknowns, a.ordering, st.ordering_quality);
  text +=
      fmt::format("slices       Kmax {}, d_max {}, d_av {:.2f}, {} non-zeros, M^0 {} non-zeros\n",
                  st.kmax, st.dmax, st.dav, st.nnz, st.nnz_m0);
  text += fmt::format("blocks       {} {}x{} ({}), fill {:.1f} %, ng {}\n", st.blocks,
                      st.block_rows, st.block_cols, a.kernel, 100 * st.fill, st.ng);
  text +=
      fmt::format("time         assembly {:.3f} s, factor {:.3f} s, blocking {:.3f} s, "
                  "summation {:.3f} s, solve {:.3f} s, exchange {:.3f} s, total {:.3f} s\n",
                  st.assembly_seconds, st.factor_seconds, st.blocking_seconds, st.summation_seconds,
                  st.solve_seconds, st.exchange_seconds, seconds_since(t_start));
  for (const auto &w : st.workers)
    text += fmt::format("worker       {:<18} {:>8} slices  {:8.3f} s  {:8.1f} GFlop/s\n", w.name,
                        w.slices, w.seconds, w.gflops);
  if (!st.balance_percent.empty() && st.workers.size() > 1) {
    text += "balance      % of the summed time per worker, first and last call:";
    for (double p : st.balance_percent.front())
      text += fmt::format(" {:.1f}", p);
    text += " ->";
    for (double p : st.balance_percent.back())
      text += fmt::format(" {:.1f}", p);
    text += "\n";
  }
  std::cout << text;
  if (!a.summary.empty())
    io::write_text(a.summary, text, a.force);
}

} // namespace

void register_tdbem(CLI::App &app) {
  static TdbemArgs a;
  auto *cmd = app.add_subcommand(
      "tdbem", "Time-domain BEM for the 3D wave equation (seed 003): a plane-wave pulse scattered "
               "by a closed surface, marching on in time with the summation stage in slices");
  cmd->footer(
      "Model: sound-soft scattering, the retarded single-layer potential with one unknown per "
      "triangle (collocated at its centroid), piecewise constant (or linear) in time; M^k couples "
      "elements "
      "about k c dt apart. Each step: s^n = sum_{k>=1} M^k a^{n-k} (the summation stage, ng "
      "steps at a time), then M^0 a^n = l^n - s^n (sparse LU factored once).\n"
      "Workers: one CPU worker plus one per GPU, their slice intervals balanced every call "
      "(--no-balance keeps them equal). Under mpirun each rank owns a slice interval.\n"
      "Outputs: --probe-csv the scattered field at the probes over time; --plot a PNG of the "
      "first probe's signal; --vtu PREFIX --vtu-every K the density on the surface for ParaView; "
      "--summary the run summary (blocks, fill, GFlop/s per worker, balance).\n"
      "Example: ksum tdbem --refine 3 --steps 120 --probe-csv probes.csv --plot probe.png\n"
      "         ksum tdbem --mesh plane.msh --c 340 --kernel contiguous --block 128x0 --ng 8\n"
      "         mpirun -n 4 ksum tdbem --refine 4 --backend cpu --summary run.txt");
  cmd->add_option("--mesh", a.mesh, "Closed triangulated surface (Gmsh .msh); default: a sphere");
  cmd->add_option("--sphere", a.sphere, "Radius of the default sphere")->capture_default_str();
  cmd->add_option("--refine", a.refine, "Refinements of the default icosphere (20·4^L triangles)")
      ->check(CLI::Range(0, 8))
      ->capture_default_str();
  cmd->add_option("--c", a.c, "Wave speed")->capture_default_str();
  cmd->add_option("--dt", a.dt, "Time step (default: the mean edge length / c)");
  cmd->add_option("--time-basis", a.basis,
                  "constant (stable, default) or linear (hat functions; grows a sawtooth after "
                  "a few transits)")
      ->check(CLI::IsMember({"constant", "linear"}))
      ->capture_default_str();
  cmd->add_option("--steps", a.steps, "Time steps (default: until the pulse has passed)");
  cmd->add_option("--direction", a.direction, "Plane wave direction x,y,z")->delimiter(',');
  cmd->add_option("--t0", a.t0,
                  "Time of the pulse's peak at the origin (default: it starts "
                  "3 widths before the surface)");
  cmd->add_option("--width", a.width,
                  "Pulse width (exp(-((t - t0 - d.x/c)/width)^2); default 8 dt)");
  cmd->add_option("--kernel", a.kernel, "Summation kernel: contiguous, full or scalar (reference)")
      ->check(CLI::IsMember({"contiguous", "full", "scalar"}))
      ->capture_default_str();
  cmd->add_option("--ordering", a.ordering, "Numbering of the unknowns: natural, morton, hilbert")
      ->check(CLI::IsMember({"natural", "morton", "hilbert"}))
      ->capture_default_str();
  cmd->add_option("--block", a.block,
                  "Block size RxC (b_r x b_c; 0 = automatic: contiguous 128 x d_max, full chosen "
                  "from measured kernel rates)");
  cmd->add_option("--ng", a.ng, "Summation vectors computed at once (1 … 16)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  cmd->add_option("--backend", a.backend, "auto (CPU worker + every GPU), cpu or gpu (GPUs only)")
      ->check(CLI::IsMember({"auto", "cpu", "gpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--devices", a.devices, "GPU ids (default: all)");
  cmd->add_option("--threads", a.threads, "CPU worker threads (0: the cores not driving a GPU)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--balance,!--no-balance", a.balance,
                "Balance the workers' slice intervals every summation call (§5.2; default on); "
                "--no-balance keeps them equal");
  cmd->add_option("--precision", a.precision, "Summation precision (the solve is f64)")
      ->check(CLI::IsMember({"f32", "f64"}))
      ->capture_default_str();
  cmd->add_option("--probes", a.probes,
                  "Probe points (x, y, z columns; default: in front, "
                  "behind and at the centre)");
  cmd->add_option("--probe-csv", a.probe_csv,
                  "The scattered field at the probes over time (CSV/.npy)");
  cmd->add_option("--plot", a.plot, "PNG of the first probe's signal over time");
  cmd->add_option("--vtu", a.vtu, "Prefix of .vtu snapshots of the density on the surface");
  cmd->add_option("--vtu-every", a.vtu_every, "A snapshot every K steps")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--summary", a.summary, "Write the run summary to this text file");
  cmd->add_flag("-f,--force", a.force, "Overwrite existing output files");
  cmd->callback([] {
    if (a.precision == "f32")
      run_tdbem<float>(a);
    else
      run_tdbem<double>(a);
  });
}

} // namespace ksum::cli
