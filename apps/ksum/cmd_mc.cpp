// ksum mc: the polyelectrolyte Monte Carlo simulation of seed 004 Paper I on the energy engine
// (include/ksum/mc_sim.hpp): build or restart, sweep with progress, checkpoint, write samples,
// radial distribution, trajectories, plots and a summary with block-averaged estimates.
#include "common.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>
#include <ksum/io.hpp>
#include <ksum/mc_sim.hpp>

#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <numbers>
#include <optional>

namespace ksum::cli {
namespace {

// Avogadro's number in Å⁻³ per mol/L: c [mol/L] · 6.02214076e23 / 1e27 Å³.
constexpr double molar_per_a3 = 6.02214076e-4;

struct McArgs {
  std::int64_t chains = 4, monomers = 32, salt = 0, charge_every = 1;
  double monomer_charge = -1, valence = 1, monomer_radius = 2, counterion_radius = 2,
         salt_radius = 2, bond_length = 5;
  double cell_radius = 0, box = 0, concentration = 0.01;
  std::string boundary = "sphere";
  double bjerrum = 7.14, epsilon_r = 78.4, temperature = 298.15, debye = 0, lj_epsilon = 1;
  std::string electrostatics = "coulomb", short_range = "hard-sphere", bond = "harmonic";
  double bond_k = 0, bond_r0 = 0, bond_rmax = 0; // 0: defaults from the bond kind
  double monomer_step = 1, ion_step = 4;
  std::int64_t translations = -1, pivots = 1, crankshafts = 1;
  std::int64_t steps = 2000, sample_every = 1, recompute_every = 100, radial_bins = 50;
  double radial_max = 0;
  std::string backend = "auto", precision = "double";
  int threads = 0, device = 0, batch = 0;
  std::uint64_t seed = 1;
  std::string checkpoint, restart, xyz, csv, samples, radial, plot, summary;
  std::int64_t checkpoint_every = 0, traj_every = 0, progress_every = 0, equilibrate = 0;
  bool force = false, append = false;
};

// Options that the checkpoint fixes: given with --restart they would be silently ignored.
constexpr const char *checkpointed_options[] = {"--chains",
                                                "--monomers",
                                                "--salt",
                                                "--charge-every",
                                                "--monomer-charge",
                                                "--valence",
                                                "--monomer-radius",
                                                "--counterion-radius",
                                                "--salt-radius",
                                                "--bond-length",
                                                "--cell-radius",
                                                "--box",
                                                "--concentration",
                                                "--boundary",
                                                "--bjerrum",
                                                "--epsilon-r",
                                                "--temperature",
                                                "--debye",
                                                "--electrostatics",
                                                "--short-range",
                                                "--lj-epsilon",
                                                "--bond",
                                                "--bond-k",
                                                "--bond-r0",
                                                "--bond-rmax",
                                                "--monomer-step",
                                                "--ion-step",
                                                "--translations",
                                                "--pivots",
                                                "--crankshafts",
                                                "--sample-every",
                                                "--recompute-every",
                                                "--radial-bins",
                                                "--radial-max",
                                                "--seed"};

volatile std::sig_atomic_t interrupted = 0;
extern "C" void on_interrupt(int) {
  interrupted = 1;
}

[[noreturn]] void bad(const std::string &message) {
  throw Error(ErrorCode::invalid_argument, message);
}

bool given(const CLI::App &cmd, const char *name) {
  return cmd.count(name) > 0;
}

// A count of at least `min`, in one line (CLI11's NonNegativeNumber prints the range up to
// DBL_MAX). Text that is no integer is left to the conversion, which says so.
CLI::Validator at_least(std::int64_t min) {
  return CLI::Validator(
      [min](std::string &text) -> std::string {
        std::int64_t v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec == std::errc() && end == text.data() + text.size() && v < min)
          return fmt::format("must be ≥ {}, got {}", min, v);
        return {};
      },
      fmt::format(">= {}", min));
}

void check_finite(std::initializer_list<std::pair<const char *, double>> values) {
  for (const auto &[name, v] : values)
    if (!std::isfinite(v))
      throw Error(ErrorCode::non_finite, fmt::format("{} {}: expected a finite number", name, v));
}

mc::Potential make_potential(const McArgs &a, const CLI::App &cmd) {
  mc::Potential p;
  p.electrostatics = mc::parse_electrostatics(a.electrostatics);
  if (given(cmd, "--debye")) {
    if (given(cmd, "--electrostatics") && p.electrostatics != mc::Electrostatics::debye_huckel)
      bad(fmt::format("--debye {} screens the Coulomb term: it needs --electrostatics "
                      "debye-huckel (or leave --electrostatics out), not {}",
                      a.debye, a.electrostatics));
    if (!(a.debye > 0))
      bad(fmt::format("--debye {}: the Debye length must be > 0 Å", a.debye));
    p.electrostatics = mc::Electrostatics::debye_huckel;
    p.debye_length = a.debye;
  } else if (p.electrostatics == mc::Electrostatics::debye_huckel) {
    bad("--electrostatics debye-huckel needs --debye LENGTH (the Debye length in Å)");
  }
  const bool dielectric = given(cmd, "--epsilon-r") || given(cmd, "--temperature");
  if (dielectric && given(cmd, "--bjerrum"))
    bad("give --bjerrum or --epsilon-r/--temperature (from which l_B is computed), not both");
  p.bjerrum = dielectric ? mc::bjerrum_length(a.epsilon_r, a.temperature) : a.bjerrum;
  if (!(p.bjerrum > 0) && p.electrostatics != mc::Electrostatics::none)
    bad(fmt::format("--bjerrum {}: the Bjerrum length must be > 0 Å", p.bjerrum));
  p.short_range = mc::parse_short_range(a.short_range);
  p.lj_epsilon = a.lj_epsilon;
  p.bond = mc::parse_bond(a.bond);
  if (p.bond == mc::BondKind::harmonic) {
    p.bond_k = a.bond_k > 0 ? a.bond_k : 2.0;
    p.bond_r0 = given(cmd, "--bond-r0") ? a.bond_r0 : a.bond_length;
  } else if (p.bond == mc::BondKind::fene) {
    // The Kremer–Grest spring, 30 kT/σ² and r_max = 1.5 σ, with σ the bond length.
    p.bond_k = a.bond_k > 0 ? a.bond_k : 30.0 / (a.bond_length * a.bond_length);
    p.bond_rmax = given(cmd, "--bond-rmax") ? a.bond_rmax : 1.5 * a.bond_length;
  }
  for (const auto &[name, flag] : {std::pair{"--bond-k", given(cmd, "--bond-k")},
                                   std::pair{"--bond-r0", given(cmd, "--bond-r0")},
                                   std::pair{"--bond-rmax", given(cmd, "--bond-rmax")}})
    if (flag && p.bond == mc::BondKind::none)
      bad(fmt::format("{} given with --bond none", name));
  if (given(cmd, "--bond-r0") && p.bond == mc::BondKind::fene)
    bad("--bond-r0 is the harmonic bond's rest length; FENE takes --bond-rmax");
  if (given(cmd, "--bond-rmax") && p.bond == mc::BondKind::harmonic)
    bad("--bond-rmax is FENE's maximum extension; the harmonic bond takes --bond-r0");
  if (given(cmd, "--bond-k") && !(a.bond_k > 0))
    bad(fmt::format("--bond-k {}: the spring constant must be > 0 kT/Å²", a.bond_k));
  return p;
}

mc::ModelOptions make_model(const McArgs &a, const CLI::App &cmd) {
  mc::ModelOptions m;
  m.chains = a.chains;
  m.monomers = a.monomers;
  m.monomer_radius = a.monomer_radius;
  m.monomer_charge = a.monomer_charge;
  m.charge_every = a.charge_every;
  m.bond_length = a.bond_length;
  m.counterion_valence = a.valence;
  m.counterion_radius = a.counterion_radius;
  m.salt_pairs = a.salt;
  m.salt_radius = a.salt_radius;
  m.seed = a.seed;
  const int sizes = int(given(cmd, "--cell-radius")) + int(given(cmd, "--box")) +
                    int(given(cmd, "--concentration"));
  if (sizes > 1)
    bad("give one of --cell-radius (sphere), --box (periodic) and --concentration");
  if (given(cmd, "--boundary") && (given(cmd, "--cell-radius") || given(cmd, "--box")))
    bad("--boundary goes with --concentration; --cell-radius is a sphere, --box a periodic box");
  if (given(cmd, "--cell-radius")) {
    if (!(a.cell_radius > 0))
      bad(fmt::format("--cell-radius {}: must be > 0 Å", a.cell_radius));
    m.boundary = mc::Boundary::sphere;
    m.cell_radius = a.cell_radius;
  } else if (given(cmd, "--box")) {
    if (!(a.box > 0))
      bad(fmt::format("--box {}: must be > 0 Å", a.box));
    m.boundary = mc::Boundary::periodic;
    m.box = a.box;
  } else {
    if (!(a.concentration > 0))
      bad(fmt::format("--concentration {}: must be > 0 mol/L", a.concentration));
    m.boundary = a.boundary == "periodic" ? mc::Boundary::periodic : mc::Boundary::sphere;
    m.monomer_density = a.concentration * molar_per_a3;
  }
  return m;
}

std::string signed_charge(double q) {
  return fmt::format("{}{:g}", q > 0 ? "+" : "", q);
}

// The model as the checkpoint or the options made it: counted from the system, so a restart
// describes itself.
std::string describe(const mc::Model &m, const mc::Potential &p) {
  const auto &s = m.system;
  std::int64_t count[5] = {0, 0, 0, 0, 0};
  double charge[5] = {0, 0, 0, 0, 0};
  for (std::int64_t i = 0; i < s.size(); ++i) {
    const auto k = s.species.empty() ? 0 : s.species[std::size_t(i)];
    if (k < 0 || k > 4)
      continue;
    ++count[k];
    charge[k] = s.charge[std::size_t(i)];
  }
  const double volume =
      m.cell.boundary == mc::Boundary::periodic
          ? m.cell.box[0] * m.cell.box[1] * m.cell.box[2]
          : 4.0 / 3.0 * std::numbers::pi * m.cell.radius * m.cell.radius * m.cell.radius;
  std::string t;
  t += fmt::format("model        {} chains x {} monomers ({} charged, z = {}), {} counter-ions "
                   "(z = {}), {} salt pairs: {} particles\n",
                   m.chains, m.monomers, count[0], signed_charge(charge[0]), count[2],
                   signed_charge(charge[2]), count[3], s.size());
  if (m.cell.boundary == mc::Boundary::periodic)
    t += fmt::format("cell         periodic box {:.4g} Å", m.cell.box[0]);
  else
    t += fmt::format("cell         sphere R = {:.4g} Å", m.cell.radius);
  t += fmt::format(" (monomers {:.4g} mol/L)\n", double(m.monomer_count()) / volume / molar_per_a3);
  std::string pot;
  if (p.electrostatics == mc::Electrostatics::none)
    pot = "no electrostatics";
  else
    pot = fmt::format("{} l_B = {:.4g} Å", mc::to_string(p.electrostatics), p.bjerrum);
  if (p.electrostatics == mc::Electrostatics::debye_huckel)
    pot += fmt::format(" (λ_D = {:.4g} Å)", p.debye_length);
  pot += fmt::format(", short range {}", mc::to_string(p.short_range));
  if (p.short_range == mc::ShortRange::lennard_jones || p.short_range == mc::ShortRange::wca)
    pot += fmt::format(" (ε = {:g} kT)", p.lj_epsilon);
  if (p.bond == mc::BondKind::harmonic)
    pot += fmt::format(", harmonic bonds k = {:g} kT/Å², r0 = {:g} Å", p.bond_k, p.bond_r0);
  else if (p.bond == mc::BondKind::fene)
    pot += fmt::format(", FENE bonds k = {:g} kT/Å², r_max = {:g} Å", p.bond_k, p.bond_rmax);
  else
    pot += ", no bonds";
  t += "potential    " + pot + "\n";
  return t;
}

std::string estimate(const mc::Estimate &e) {
  return fmt::format("{:.6g} ± {:.2g}", e.mean, e.error);
}

std::string acceptance_text(const std::array<mc::Acceptance, mc::move_kinds> &acc) {
  std::string t;
  for (int k = 0; k < mc::move_kinds; ++k) {
    const auto &a = acc[std::size_t(k)];
    if (a.attempted == 0)
      continue;
    t += fmt::format("{}{} {:.3f}", t.empty() ? "" : ", ", mc::to_string(mc::MoveKind(k)),
                     a.ratio());
  }
  return t.empty() ? "no moves" : t;
}

std::int64_t attempted(const std::array<mc::Acceptance, mc::move_kinds> &acc) {
  std::int64_t n = 0;
  for (const auto &a : acc)
    n += a.attempted;
  return n;
}

// Plots need two finite points; a run too short for them says so instead of failing at the end.
void plot(const std::string &file, const Table<double> &t, std::int64_t xc, std::int64_t yc,
          bool force) {
  if (t.rows() < 2) {
    note(fmt::format("mc: {} not written ({} point(s); a plot needs 2)", file, t.rows()));
    return;
  }
  std::vector<double> x(std::size_t(t.rows())), y(std::size_t(t.rows()));
  for (std::int64_t r = 0; r < t.rows(); ++r) {
    x[std::size_t(r)] = t(r, xc);
    y[std::size_t(r)] = t(r, yc);
  }
  io::write_line_plot_png(file, x.data(), y.data(), t.rows(), force);
}

void run_mc(const McArgs &a, const CLI::App &cmd) {
  namespace fs = std::filesystem;
  const auto t_start = std::chrono::steady_clock::now();
  check_finite({{"--monomer-charge", a.monomer_charge},
                {"--valence", a.valence},
                {"--monomer-radius", a.monomer_radius},
                {"--counterion-radius", a.counterion_radius},
                {"--salt-radius", a.salt_radius},
                {"--bond-length", a.bond_length},
                {"--cell-radius", a.cell_radius},
                {"--box", a.box},
                {"--concentration", a.concentration},
                {"--bjerrum", a.bjerrum},
                {"--epsilon-r", a.epsilon_r},
                {"--temperature", a.temperature},
                {"--debye", a.debye},
                {"--lj-epsilon", a.lj_epsilon},
                {"--bond-k", a.bond_k},
                {"--bond-r0", a.bond_r0},
                {"--bond-rmax", a.bond_rmax},
                {"--monomer-step", a.monomer_step},
                {"--ion-step", a.ion_step},
                {"--radial-max", a.radial_max}});
  const bool restart = !a.restart.empty();
  if (restart)
    for (const char *name : checkpointed_options)
      if (given(cmd, name))
        bad(fmt::format("{}: with --restart the model, potential, moves, sampling and seed come "
                        "from the checkpoint; give only --steps, execution and output options",
                        name));
  if (a.checkpoint_every > 0 && a.checkpoint.empty())
    bad("--checkpoint-every needs --checkpoint FILE");
  const bool trajectory = !a.xyz.empty() || !a.csv.empty();
  if (a.traj_every > 0 && !trajectory)
    bad("--traj-every needs --xyz FILE or --csv FILE");
  if (!a.plot.empty() && fs::path(a.plot).extension() == ".png")
    bad(fmt::format("--plot {}: expected a prefix (it writes PREFIX_energy.png, PREFIX_rg.png "
                    "and PREFIX_radial.png)",
                    a.plot));

  // Every output is refused before any work when it exists (the checkpoint may replace the
  // checkpoint it continues, with --force).
  const std::string plot_energy = a.plot.empty() ? "" : a.plot + "_energy.png";
  const std::string plot_rg = a.plot.empty() ? "" : a.plot + "_rg.png";
  const std::string plot_radial = a.plot.empty() ? "" : a.plot + "_radial.png";
  if (!a.checkpoint.empty())
    refuse_overwrite(a.checkpoint, {}, a.force);
  for (const auto *out : {&a.samples, &a.radial, &plot_energy, &plot_rg, &plot_radial, &a.summary})
    if (!out->empty())
      refuse_overwrite(*out, {&a.restart, &a.checkpoint}, a.force);
  for (const auto *out : {&a.xyz, &a.csv})
    if (!out->empty())
      refuse_overwrite(*out, {&a.restart, &a.checkpoint}, a.force || a.append);

  mc::Execution ex;
  ex.backend = parse_backend(a.backend);
  ex.precision = mc::parse_precision(a.precision);
  ex.threads = a.threads;
  ex.device = a.device;
  ex.batch = a.batch;
  mc::TrajectoryOptions tr;
  tr.xyz = a.xyz;
  tr.csv = a.csv;
  tr.every =
      trajectory ? (a.traj_every > 0 ? a.traj_every : std::max<std::int64_t>(1, a.steps / 100)) : 0;
  tr.overwrite = a.force;
  tr.append = a.append;

  std::optional<mc::Simulation> built;
  if (restart) {
    built.emplace(mc::Simulation::load(a.restart, ex, tr));
  } else {
    mc::SimulationOptions so;
    so.potential = make_potential(a, cmd);
    so.moves.monomer_step = a.monomer_step;
    so.moves.ion_step = a.ion_step;
    so.moves.translations = a.translations;
    so.moves.pivots = a.pivots;
    so.moves.crankshafts = a.crankshafts;
    so.sample.every = a.sample_every;
    so.sample.recompute_every = a.recompute_every;
    so.sample.radial_bins = a.radial_bins;
    so.sample.radial_max = a.radial_max;
    so.seed = a.seed;
    so.execution = ex;
    so.trajectory = tr;
    built.emplace(mc::build_polyelectrolyte(make_model(a, cmd)), std::move(so));
  }
  mc::Simulation &sim = *built;
  const mc::Potential &pot = sim.options().potential;
  const std::string model_text = describe(sim.model(), pot);
  const std::int64_t first_sweep = sim.sweeps();
  const std::uint64_t first_move = sim.move_counter();
  const std::int64_t first_attempted = attempted(sim.summary().acceptance);
  std::string backend = std::string(to_string(sim.backend()));
  if (sim.backend() == Backend::cuda) {
    const auto g = gpus();
    for (const auto &d : g)
      if (d.id == a.device)
        backend += fmt::format(" (GPU {}: {})", d.id, d.name);
  } else {
    backend += fmt::format(" ({} threads)", a.threads > 0 ? a.threads : max_threads());
  }
  note(fmt::format("mc: {}, {} {} sweeps from sweep {}, U = {:.6g} kT, {} {}",
                   restart ? a.restart : "new run", restart ? "continuing" : "running", a.steps,
                   first_sweep, sim.energy(), backend, to_string(ex.precision)));

  // Ctrl-C stops after the sweep in progress; the outputs and the checkpoint are still written.
  interrupted = 0;
  const auto previous_handler = std::signal(SIGINT, on_interrupt);
  std::unique_ptr<ProgressLine> bar;
  if (a.progress_every == 0)
    bar = std::make_unique<ProgressLine>("mc: sweeps");
  const auto t_run = std::chrono::steady_clock::now();
  auto progress = [&](const mc::Progress &p) {
    const std::int64_t done = p.sweep - first_sweep;
    const double secs = seconds_since(t_run);
    const double moves = double(attempted(p.acceptance) - first_attempted);
    const std::string detail =
        fmt::format("sweep {}  U {:.6g} kT  acceptance {}  {:.3g} moves/s", p.sweep, p.energy,
                    acceptance_text(p.acceptance), secs > 0 ? moves / secs : 0.0);
    if (bar)
      bar->update(a.steps > 0 ? double(done) / double(a.steps) : 1.0, detail);
    else if (done % a.progress_every == 0 || done == a.steps)
      note("mc: " + detail);
    return interrupted == 0;
  };
  std::int64_t done = 0;
  while (done < a.steps && interrupted == 0) {
    std::int64_t chunk = a.steps - done;
    if (a.checkpoint_every > 0)
      chunk = std::min(chunk, a.checkpoint_every - sim.sweeps() % a.checkpoint_every);
    done += sim.run(chunk, progress, 1);
    if (a.checkpoint_every > 0 && sim.sweeps() % a.checkpoint_every == 0 && done < a.steps)
      sim.save(a.checkpoint, true);
  }
  const double run_seconds = seconds_since(t_run);
  bar.reset();
  std::signal(SIGINT, previous_handler);
  // Saved before the final recompute below, which would reset the running U: a continuation
  // is then the very chain of one longer run.
  if (!a.checkpoint.empty())
    sim.save(a.checkpoint, true);
  const auto samples = sim.samples();
  const auto radial = sim.radial();
  if (!a.samples.empty())
    io::write_table(a.samples, samples, {.overwrite = true});
  if (!a.radial.empty())
    io::write_table(a.radial, radial, {.overwrite = true});
  if (!a.plot.empty()) {
    plot(plot_energy, samples, 0, 1, true);
    if (sim.model().chains > 0)
      plot(plot_rg, samples, 0, 3, true);
    plot(plot_radial, radial, 0, 1, true);
  }

  const double running = sim.energy();
  const mc::Energy full = sim.recompute();
  const mc::Summary s = sim.summary();
  const std::int64_t moves = s.moves - std::int64_t(first_move);
  std::string text = model_text;
  text += fmt::format("run          {} sweeps ({} -> {}), {} moves, {} samples, seed {}{}\n",
                      s.sweeps - first_sweep, first_sweep, s.sweeps, moves, s.samples,
                      sim.options().seed, interrupted ? " (interrupted)" : "");
  // Averages over the samples after --equilibrate sweeps (the library's estimates take them
  // all, the relaxation from the initial walks included).
  mc::Estimate u_mean = s.energy_mean, ree = s.ree, rg = s.rg;
  std::string window = "all samples";
  if (a.equilibrate > 0) {
    std::vector<double> col[3];
    for (std::int64_t r = 0; r < samples.rows(); ++r)
      if (samples(r, 0) > double(a.equilibrate))
        for (std::int64_t c = 0; c < std::min<std::int64_t>(3, samples.cols() - 1); ++c)
          col[c].push_back(samples(r, c + 1));
    u_mean = mc::block_average(col[0]);
    ree = mc::block_average(col[1]);
    rg = mc::block_average(col[2]);
    window = fmt::format("{} samples after sweep {}", col[0].size(), a.equilibrate);
  }
  text += fmt::format("energy       U = {:.12g} kT ({:.6g} kT per particle), <U> = {} kT ({})\n",
                      full.value, full.value / double(sim.model().system.size()), estimate(u_mean),
                      window);
  if (sim.model().chains > 0) {
    text += fmt::format("chains       <R_ee> = {} Å, <R_g> = {} Å", estimate(ree), estimate(rg));
    if (a.equilibrate == 0)
      text += fmt::format(", <R_ee²>^½ = {:.6g} Å, <R_g²>^½ = {:.6g} Å", std::sqrt(s.ree2.mean),
                          std::sqrt(s.rg2.mean));
    text += "\n";
  }
  text += "acceptance  ";
  for (int k = 0; k < mc::move_kinds; ++k) {
    const auto &acc = s.acceptance[std::size_t(k)];
    if (acc.attempted > 0)
      text += fmt::format("{} {} {:.3f} ({} of {}, {} overlaps)", k > 0 ? "," : "",
                          mc::to_string(mc::MoveKind(k)), acc.ratio(), acc.accepted, acc.attempted,
                          acc.rejected_overlap);
  }
  text += "\n";
  text += fmt::format("drift        U_running - U_full = {:.3g} kT now ({:.2g} relative), max "
                      "{:.3g} kT over {} recomputes\n",
                      running - full.value,
                      full.value != 0 ? std::abs(running - full.value) / std::abs(full.value) : 0.0,
                      s.max_drift, s.recomputes);
  text += fmt::format("time         {:.3f} s total, {:.3f} s sweeping, {:.4g} moves/s\n",
                      seconds_since(t_start), run_seconds,
                      run_seconds > 0 ? double(moves) / run_seconds : 0.0);
  text += fmt::format("backend      {}, {}\n", backend, to_string(ex.precision));
  std::cout << text << std::flush;
  if (!a.summary.empty())
    io::write_text(a.summary, text, true);
  if (interrupted) {
    note(fmt::format("mc: interrupted at sweep {}{}", s.sweeps,
                     a.checkpoint.empty() ? "" : "; continue with --restart " + a.checkpoint));
    std::exit(130);
  }
}

} // namespace

void register_mc(CLI::App &app) {
  static McArgs a;
  auto *cmd = app.add_subcommand(
      "mc", "Monte Carlo electrostatics (seed 004 Paper I): a polyelectrolyte (bead-spring chains "
            "of charged monomers, counter-ions, salt) sampled by Metropolis");
  cmd->footer(
      "Units: energies in kT, lengths in Å, charges in e, concentrations in mol/L.\n"
      "Model: chains of hard-sphere beads (every --charge-every'th monomer charged "
      "--monomer-charge), as many counter-ions of valence --valence as neutralise them, --salt "
      "pairs of ±1 ions, in a spherical cell (--cell-radius) or a periodic box (--box, minimum "
      "image), or sized from the monomer --concentration. Pair energy u_ij = l_B q_i q_j "
      "exp(-r/λ_D) / r (λ_D infinite unless --debye) plus the short-range term at contact "
      "σ_ij = R_i + R_j (hard-sphere; lj 4ε[(σ/r)^12 - (σ/r)^6]; wca the same cut at 2^(1/6)σ) "
      "and the bonds (harmonic k/2 (r - r0)^2; fene -k r_max^2/2 ln(1 - (r/r_max)^2)).\n"
      "Moves: a sweep is N single-particle translations (uniform in a cube of half-edge "
      "--monomer-step / --ion-step), then per chain --pivots pivots and --crankshafts "
      "crankshafts; every draw is keyed by (seed, move number), so a run is reproducible and "
      "--restart continues a --checkpoint exactly.\n"
      "Outputs: progress on stderr; a summary on stdout (and --summary): block-averaged <U>, "
      "<R_ee>, <R_g> with errors, acceptance per move kind, the drift of the running U against a "
      "full recompute, timing. --samples CSV (sweep, energy, ree, rg, per chain), --radial CSV "
      "(counter-ion density n(r) around the cell centre, or g(r) around monomers in a box), "
      "--xyz/--csv trajectories, --plot PREFIX (PREFIX_energy.png, PREFIX_rg.png, "
      "PREFIX_radial.png). Existing files are kept unless -f.\n"
      "Examples:\n"
      "  ksum mc                                          # 4 chains of 32, 2000 sweeps\n"
      "  ksum mc --chains 4 --monomers 64 --salt 100 --steps 5000 --samples s.csv --plot pe\n"
      "  ksum mc --box 200 --debye 30 --bond fene --short-range wca --checkpoint run.ck\n"
      "  ksum mc --restart run.ck --steps 5000 --checkpoint run2.ck");
  const auto nonneg = at_least(0);
  const auto positive = at_least(1);
  cmd->add_option("--chains", a.chains, "Polyelectrolyte chains")
      ->check(nonneg)
      ->capture_default_str();
  cmd->add_option("--monomers", a.monomers, "Monomers per chain")
      ->check(positive)
      ->capture_default_str();
  cmd->add_option("--salt", a.salt, "Pairs of ±1 salt ions")->check(nonneg)->capture_default_str();
  cmd->add_option("--charge-every", a.charge_every, "Every k-th monomer is charged")
      ->check(positive)
      ->capture_default_str();
  cmd->add_option("--monomer-charge", a.monomer_charge, "Charge z_m of a charged monomer (e)")
      ->capture_default_str();
  cmd->add_option("--valence", a.valence, "Counter-ion valence z_c > 0")->capture_default_str();
  cmd->add_option("--monomer-radius", a.monomer_radius, "Monomer radius R_m (Å)")
      ->capture_default_str();
  cmd->add_option("--counterion-radius", a.counterion_radius, "Counter-ion radius (Å)")
      ->capture_default_str();
  cmd->add_option("--salt-radius", a.salt_radius, "Salt ion radius (Å)")->capture_default_str();
  cmd->add_option("--bond-length", a.bond_length,
                  "Bond length b of the initial chains (Å); default harmonic r0 and FENE "
                  "r_max = 1.5 b")
      ->capture_default_str();
  cmd->add_option("--cell-radius", a.cell_radius, "Spherical cell of this radius (Å)");
  cmd->add_option("--box", a.box, "Periodic cubic box of this edge (Å)");
  cmd->add_option("--concentration", a.concentration,
                  "Monomer concentration (mol/L) sizing the cell or box when neither is given")
      ->capture_default_str();
  cmd->add_option("--boundary", a.boundary, "With --concentration: sphere or periodic")
      ->check(CLI::IsMember({"sphere", "periodic"}))
      ->capture_default_str();
  cmd->add_option("--bjerrum", a.bjerrum, "Bjerrum length l_B (Å; 7.14 is water at 298 K)")
      ->capture_default_str();
  cmd->add_option("--epsilon-r", a.epsilon_r,
                  "Relative permittivity, l_B computed with --temperature (instead of --bjerrum)");
  cmd->add_option("--temperature", a.temperature, "Temperature (K) for l_B with --epsilon-r");
  cmd->add_option("--debye", a.debye, "Debye length λ_D (Å): screened Debye–Hückel electrostatics");
  cmd->add_option("--electrostatics", a.electrostatics,
                  "coulomb, debye-huckel (with --debye) or none")
      ->capture_default_str();
  cmd->add_option("--short-range", a.short_range, "hard-sphere, lj, wca or none")
      ->capture_default_str();
  cmd->add_option("--lj-epsilon", a.lj_epsilon, "ε of lj and wca (kT)")->capture_default_str();
  cmd->add_option("--bond", a.bond, "Bonds along the chains: harmonic, fene or none")
      ->capture_default_str();
  cmd->add_option("--bond-k", a.bond_k,
                  "Bond spring constant (kT/Å²; default harmonic 2, FENE 30/b²)");
  cmd->add_option("--bond-r0", a.bond_r0, "Harmonic rest length (Å; default --bond-length)");
  cmd->add_option("--bond-rmax", a.bond_rmax, "FENE maximum extension (Å; default 1.5 b)");
  cmd->add_option("--monomer-step", a.monomer_step, "Largest monomer displacement per axis (Å)")
      ->capture_default_str();
  cmd->add_option("--ion-step", a.ion_step, "Largest ion displacement per axis (Å)")
      ->capture_default_str();
  cmd->add_option("--translations", a.translations, "Translations per sweep (-1: one per particle)")
      ->capture_default_str();
  cmd->add_option("--pivots", a.pivots, "Pivot moves per chain per sweep")
      ->check(nonneg)
      ->capture_default_str();
  cmd->add_option("--crankshafts", a.crankshafts, "Crankshaft moves per chain per sweep")
      ->check(nonneg)
      ->capture_default_str();
  cmd->add_option("--steps", a.steps, "Sweeps to run (after the checkpoint's, with --restart)")
      ->check(nonneg)
      ->capture_default_str();
  cmd->add_option("--sample-every", a.sample_every, "Sweeps between samples (0: none)")
      ->check(nonneg)
      ->capture_default_str();
  cmd->add_option("--recompute-every", a.recompute_every,
                  "Sweeps between full recomputes of U (drift check; 0: only at the end)")
      ->check(nonneg)
      ->capture_default_str();
  cmd->add_option("--radial-bins", a.radial_bins, "Bins of the radial distribution")
      ->check(positive)
      ->capture_default_str();
  cmd->add_option("--radial-max", a.radial_max, "Its range (Å; 0: the cell radius or half the box)")
      ->capture_default_str();
  cmd->add_option("--equilibrate", a.equilibrate,
                  "Leave the samples of the first K sweeps (in total) out of the summary's "
                  "averages")
      ->check(nonneg);
  cmd->add_option("--backend", a.backend, "auto (the GPU when present), cpu or gpu")
      ->check(CLI::IsMember({"auto", "cpu", "gpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--precision", a.precision, "Pair arithmetic: double or float (sums in double)")
      ->check(CLI::IsMember({"double", "float", "f64", "f32", "float64", "float32"}))
      ->capture_default_str();
  cmd->add_option("--threads", a.threads, "CPU threads (0: all)")->check(nonneg);
  cmd->add_option("--device", a.device, "GPU index")->check(nonneg)->capture_default_str();
  cmd->add_option("--batch", a.batch, "GPU trial moves per launch (0: chosen from N)")
      ->check(nonneg);
  cmd->add_option("--seed", a.seed, "Seed of the initial configuration and the moves")
      ->capture_default_str();
  cmd->add_option("--checkpoint", a.checkpoint, "Write the whole state here at the end");
  cmd->add_option("--checkpoint-every", a.checkpoint_every, "… and every K sweeps")->check(nonneg);
  cmd->add_option("--restart", a.restart, "Continue the run saved in this checkpoint");
  cmd->add_option("--xyz", a.xyz, "Trajectory as .xyz frames");
  cmd->add_option("--csv", a.csv, "Trajectory as CSV rows sweep,particle,x,y,z");
  cmd->add_option("--traj-every", a.traj_every,
                  "Sweeps between trajectory frames (default: 100 frames over the run)")
      ->check(nonneg);
  cmd->add_flag("--append", a.append,
                "Append to existing trajectory files (a restart continuing its trajectory)");
  cmd->add_option("--samples", a.samples, "Samples table (CSV or .npy)");
  cmd->add_option("--radial", a.radial, "Counter-ions' radial distribution (CSV or .npy)");
  cmd->add_option("--plot", a.plot,
                  "PNG plots: PREFIX_energy.png, PREFIX_rg.png, PREFIX_radial.png");
  cmd->add_option("--summary", a.summary, "Write the run summary to this text file");
  cmd->add_option("--progress-every", a.progress_every,
                  "A progress line every K sweeps (default: a progress bar after 2 s)")
      ->check(nonneg);
  cmd->add_flag("-f,--force", a.force, "Overwrite existing output files");
  cmd->callback([cmd] { run_mc(a, *cmd); });
}

} // namespace ksum::cli
