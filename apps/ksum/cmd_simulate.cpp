// ksum simulate: the three applications of seed 004 Paper IV §5 on the 2D FMM — the vortex
// (Kelvin–Helmholtz) instability, a rotating galaxy, the impulsively started flow around a
// cylinder — each step on one Fmm2d plan tuned by the Autotuner, timed step by step.
#include "common.hpp"

#include <ksum/autotune.hpp>
#include <ksum/device.hpp>
#include <ksum/error.hpp>
#include <ksum/io.hpp>
#include <ksum/simulate.hpp>

#include <cstdio>
#include <filesystem>
#include <fmt/format.h>

namespace ksum::cli {
namespace {

struct SimulateArgs {
  std::string scenario, out, autotune = "at3b", backend = "auto", method = "fmm";
  std::string core_mode = "correction";
  std::int64_t n = 0, steps = 100, every = 25;
  double dt = 0, tol = 1e-6, theta = 0.5, cap = 0.1, core = 1, re = 10000;
  int levels = 0, threads = 0, merge_every = 10;
  std::uint64_t seed = 1;
  bool gpu_m2l = false, force = false;
};

std::string snapshot_name(std::int64_t step, const char *ext) {
  return fmt::format("snapshot_{:06d}.{}", step, ext);
}

void write_snapshot(const std::filesystem::path &dir, std::int64_t step, sim::Simulation &s,
                    bool force) {
  const auto snap = s.snapshot();
  s.field().take_stats(); // the snapshot's velocity evaluation is not part of a step
  const auto n = static_cast<std::int64_t>(snap.z.size());
  Table<double> t(n, 5);
  for (std::int64_t j = 0; j < n; ++j) {
    t(j, 0) = snap.z[j].real();
    t(j, 1) = snap.z[j].imag();
    t(j, 2) = snap.strength[j];
    t(j, 3) = snap.velocity[j].real();
    t(j, 4) = snap.velocity[j].imag();
  }
  t.names = {"x", "y", s.scenario() == sim::Scenario::galaxy ? "mass" : "gamma", "vx", "vy"};
  io::write_table(dir / snapshot_name(step, "csv"), t,
                  {.overwrite = force, .significant_digits = 10});
  const auto pic = s.picture();
  io::write_heatmap_png(dir / snapshot_name(step, "png"), pic.values.data(), pic.nx, pic.ny, force);
}

std::string moves_text(const sim::FieldStats &st) {
  std::string text;
  for (const auto &m : st.moves) {
    if (!text.empty())
      text += "; ";
    if (m.kind == 't')
      text += fmt::format("θ {:.2f}->{:.2f}", m.from.theta, m.to.theta);
    else
      text += fmt::format("L {}->{}", m.from.levels, m.to.levels);
    text += m.accepted ? " kept" : " undone";
  }
  if (st.core_retries > 0) // the plan refused the asked tree for the core radius (FieldStats)
    text += fmt::format("{}core: θ {:.2f}->{:.2f} L {}->{}", text.empty() ? "" : "; ",
                        st.requested_theta, st.theta, st.requested_levels, st.levels);
  return text;
}

void run_simulate(const SimulateArgs &a) {
  namespace fs = std::filesystem;
  if (a.steps < 0)
    throw Error(ErrorCode::invalid_argument, fmt::format("--steps must be ≥ 0, got {}", a.steps));
  if (a.every < 1)
    throw Error(ErrorCode::invalid_argument, fmt::format("--every must be ≥ 1, got {}", a.every));
  sim::SimulationOptions o;
  o.scenario = sim::parse_scenario(a.scenario);
  o.n = a.n;
  o.dt = a.dt;
  o.core = a.core;
  o.reynolds = a.re;
  o.merge_every = a.merge_every;
  o.seed = a.seed;
  o.field.method = parse_method(a.method);
  o.field.tolerance = a.tol;
  o.field.theta = a.theta;
  o.field.levels = a.levels;
  o.field.backend = parse_backend(a.backend);
  o.field.gpu_m2l = a.gpu_m2l;
  o.field.threads = a.threads;
  o.field.core_mode = sim::parse_core_mode(a.core_mode);
  o.field.autotune = parse_autotune_scheme(a.autotune);
  o.field.cap = a.cap;

  // Every file the run writes, refused up front when it exists (before any work).
  const fs::path dir = a.out.empty() ? fs::path("sim-" + a.scenario) : fs::path(a.out);
  std::vector<std::int64_t> snap_steps;
  for (std::int64_t s = 0; s <= a.steps; ++s)
    if (s % a.every == 0 || s == a.steps)
      snap_steps.push_back(s);
  std::vector<std::string> outputs{(dir / "timing.csv").string(), (dir / "autotune.csv").string()};
  for (const auto s : snap_steps)
    for (const char *ext : {"csv", "png"})
      outputs.push_back((dir / snapshot_name(s, ext)).string());
  for (const auto &f : outputs)
    refuse_overwrite(f, {}, a.force);
  const auto t_start = std::chrono::steady_clock::now();
  auto s = sim::make_simulation(o); // validates the options before anything is written
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw Error(ErrorCode::io, fmt::format("{}: exists and is not a folder (--out)", dir.string()));
  fs::create_directories(dir, ec);
  if (ec)
    throw Error(ErrorCode::io,
                fmt::format("{}: cannot create the folder: {}", dir.string(), ec.message()));

  const auto *galaxy = dynamic_cast<const sim::GalaxySimulation *>(s.get());
  const bool energy = galaxy && galaxy->size() <= 50000;
  const double e0 = energy ? galaxy->kinetic_energy() + galaxy->potential_energy() : 0;
  fmt::print("ksum simulate {}\n", s->describe());
  fmt::print("  FMM: {} tol {} on {} ({} threads), core by {}, autotune {} (cap {}), start θ {} "
             "levels {}\n",
             a.method, a.tol, a.backend, a.threads > 0 ? a.threads : max_threads(), a.core_mode,
             a.autotune, a.cap, a.theta,
             a.levels > 0 ? std::to_string(a.levels) : std::string("auto"));
  fmt::print("  output: {} (snapshots every {} steps)\n\n", dir.string(), a.every);
  fmt::print("{:>6} {:>8} {:>8} {:>8} {:>8} {:>5} {:>8} {:>8} {:>8} {:>8} {:>8} {:>5} {:>3} {:>3}  "
             "{}\n",
             "step", "t", "n", "step[s]", "fmm[s]", "calls", "part[s]", "up[s]", "down[s]",
             "near[s]", "core[s]", "theta", "L", "p", "autotuner");
  std::fflush(stdout);
  if (!snap_steps.empty() && snap_steps.front() == 0)
    write_snapshot(dir, 0, *s, a.force);

  Table<double> timing(a.steps, 18);
  timing.names = {"step",
                  "t",
                  "n",
                  "seconds",
                  "fmm_seconds",
                  "fmm_calls",
                  "theta",
                  "levels",
                  "levels_requested",
                  "p",
                  "partition",
                  "upward",
                  "downward",
                  "near",
                  "gpu_near",
                  "core",
                  "core_retries",
                  "cpu_waited_on_gpu"};
  ProgressLine progress(fmt::format("ksum simulate {}", a.scenario));
  double fmm_total = 0, step_total = 0;
  int moves = 0, kept = 0;
  std::size_t next_snap = snap_steps.empty() || snap_steps.front() != 0 ? 0 : 1;
  for (std::int64_t k = 1; k <= a.steps; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    s->step();
    const double secs = seconds_since(t0);
    const auto st = s->field().take_stats();
    fmm_total += st.seconds;
    step_total += secs;
    for (const auto &m : st.moves) {
      ++moves;
      kept += m.accepted ? 1 : 0;
    }
    const double row[18] = {static_cast<double>(k),
                            s->time(),
                            static_cast<double>(s->size()),
                            secs,
                            st.seconds,
                            static_cast<double>(st.calls),
                            st.theta,
                            static_cast<double>(st.levels),
                            static_cast<double>(st.requested_levels),
                            static_cast<double>(st.order),
                            st.seconds_partition,
                            st.seconds_upward,
                            st.seconds_downward,
                            st.seconds_near,
                            st.seconds_gpu_near,
                            st.seconds_core,
                            static_cast<double>(st.core_retries),
                            st.cpu_waited_on_gpu ? 1.0 : 0.0};
    for (int c = 0; c < 18; ++c)
      timing(k - 1, c) = row[c];
    fmt::print("{:>6} {:>8.3f} {:>8} {:>8.3f} {:>8.3f} {:>5} {:>8.3f} {:>8.3f} {:>8.3f} {:>8.3f} "
               "{:>8.3f} {:>5.2f} {:>3} {:>3}  {}\n",
               k, s->time(), s->size(), secs, st.seconds, st.calls, st.seconds_partition,
               st.seconds_upward, st.seconds_downward, st.seconds_near, st.seconds_core, st.theta,
               st.levels, st.order, moves_text(st));
    std::fflush(stdout);
    if (next_snap < snap_steps.size() && snap_steps[next_snap] == k) {
      write_snapshot(dir, k, *s, a.force);
      ++next_snap;
    }
    progress.update(static_cast<double>(k) / static_cast<double>(a.steps));
  }
  io::write_table(dir / "timing.csv", timing, {.overwrite = a.force, .significant_digits = 6});
  io::write_text(dir / "autotune.csv", s->field().autotune_csv(), a.force);

  const double total = seconds_since(t_start);
  const double per = a.steps > 0 ? 1.0 / static_cast<double>(a.steps) : 0.0;
  fmt::print(
      "\nksum simulate {}: {} steps to t = {:.4g}, {} particles; total {:.2f} s, steps "
      "{:.2f} s, FMM {:.2f} s ({:.0f}% of the steps); mean per step {:.4f} s, FMM {:.4f} s\n",
      a.scenario, a.steps, s->time(), s->size(), total, step_total, fmm_total,
      step_total > 0 ? 100 * fmm_total / step_total : 0.0, step_total * per, fmm_total * per);
  if (const auto &tuner = s->field().autotuner())
    fmt::print("  autotuner {}: {} moves, {} kept; now θ = {:.2f}, levels = {}\n", a.autotune,
               moves, kept, tuner->current().theta, tuner->current().levels);
  fmt::print("  {}\n", s->diagnostics());
  if (energy) {
    const double e1 = galaxy->kinetic_energy() + galaxy->potential_energy();
    fmt::print("  energy {:.9f} -> {:.9f} (relative change {:.2e})\n", e0, e1,
               (e1 - e0) / std::abs(e0));
  }
  fmt::print("  wrote {}/: timing.csv, autotune.csv, {} snapshots (csv + png)\n", dir.string(),
             snap_steps.size());
}

} // namespace

void register_simulate(CLI::App &app) {
  static SimulateArgs a;
  auto *cmd = app.add_subcommand(
      "simulate", "Particle simulations of seed 004 Paper IV §5 on the 2D FMM: kh (vortex "
                  "instability), galaxy (2D gravity), cylinder (flow past a cylinder)");
  cmd->footer(
      "Each step sums on one 2D FMM plan whose theta and levels the autotuner moves between "
      "calls. Per-step timings go to stdout and DIR/timing.csv, the autotuner's moves to "
      "DIR/autotune.csv, snapshots (x, y, strength, vx, vy) and pictures to "
      "DIR/snapshot_<step>.csv/.png.\n"
      "Examples:\n"
      "  ksum simulate kh                                 # 20000 vortices, 100 steps\n"
      "  ksum simulate kh --n 1500000 --steps 200         # the seed's large run\n"
      "  ksum simulate galaxy --n 300000 --steps 100      # the seed's galaxy\n"
      "  ksum simulate cylinder --re 10000 --n 4000 --dt 0.05 --steps 800 --core 1");
  cmd->add_option("simulation", a.scenario, "kh, galaxy or cylinder")->required();
  cmd->add_option("--n", a.n,
                  "kh, galaxy: particles (0: 20000); cylinder: wall vortices added per step "
                  "(0: 128)")
      ->capture_default_str();
  cmd->add_option("--steps", a.steps, "Time steps")->capture_default_str();
  cmd->add_option("--dt", a.dt, "Time step (0: kh 0.1, galaxy 0.05, cylinder 0.05)")
      ->capture_default_str();
  cmd->add_option("--core", a.core,
                  "Gaussian core radius in particle spacings (kh: grid, galaxy: mean, cylinder: "
                  "wall vortex spacing 2 pi R / n)")
      ->capture_default_str();
  cmd->add_option("--core-mode", a.core_mode,
                  "correction (plain FMM minus the core's difference over close pairs) or plan "
                  "(the FMM's own smoothed near field; refuses trees finer than the core)")
      ->capture_default_str();
  cmd->add_option("--re", a.re, "cylinder: Reynolds number V 2R / nu")->capture_default_str();
  cmd->add_option("--merge-every", a.merge_every,
                  "cylinder: merge same-sign vortices sharing a core-sized cell every K steps "
                  "(0: never)")
      ->capture_default_str();
  cmd->add_option("--method", a.method, "fmm, or direct (every pair: the exact reference)")
      ->capture_default_str();
  cmd->add_option("--tol", a.tol, "FMM relative tolerance (1e-13 .. 0.1)")->capture_default_str();
  cmd->add_option("--theta", a.theta, "FMM acceptance parameter theta to start from")
      ->capture_default_str();
  cmd->add_option("--levels", a.levels,
                  "FMM pyramid levels to start from (0: from the number of points)")
      ->capture_default_str();
  cmd->add_option("--autotune", a.autotune, "off, at1, at2, at3a or at3b (seed 004 §4)")
      ->capture_default_str();
  cmd->add_option("--cap", a.cap, "at3b: largest share of the runtime for failed level moves")
      ->capture_default_str();
  cmd->add_option("--backend", a.backend, "auto (GPU near field when present), cpu or gpu")
      ->check(CLI::IsMember({"auto", "cpu", "gpu", "cuda"}))
      ->capture_default_str();
  cmd->add_flag("--gpu-m2l", a.gpu_m2l, "gpu: also the M2L translations on the GPU");
  cmd->add_option("--threads", a.threads, "CPU threads (0: all)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", a.seed, "Random seed")->capture_default_str();
  cmd->add_option("--out", a.out, "Output folder (default: sim-<simulation>)");
  cmd->add_option("--every", a.every, "Snapshot every K steps (and the first and last)")
      ->capture_default_str();
  cmd->add_flag("-f,--force", a.force, "Overwrite output files that exist");
  cmd->callback([] { run_simulate(a); });
}

} // namespace ksum::cli
