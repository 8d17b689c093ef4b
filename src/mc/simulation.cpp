// The polyelectrolyte Metropolis simulation (seed 004 Paper I, Programs 1 and 2) on the energy
// engine: a sweep is the engine's batched single-particle translations, then each chain's pivots
// and crankshafts as rigid Moves through delta()/apply(). Every draw is keyed by (seed, t, stream),
// t the move number, so a run is reproducible and a restart at a sweep boundary continues it
// exactly.
#include "mc/simulation_impl.hpp"

#include <ksum/error.hpp>

#include "mc/chain_moves.hpp"
#include "mc/philox.hpp"
#include "mc/proposal.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <numbers>

namespace ksum::mc {

Precision parse_precision(std::string_view name) {
  if (name == "float" || name == "float32" || name == "f32" || name == "single")
    return Precision::float32;
  if (name == "double" || name == "float64" || name == "f64")
    return Precision::float64;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown precision '{}' (expected float or double)", name));
}

std::string_view to_string(Precision p) {
  return p == Precision::float32 ? "float" : "double";
}

std::string_view to_string(MoveKind kind) {
  switch (kind) {
  case MoveKind::translate:
    return "translate";
  case MoveKind::pivot:
    return "pivot";
  case MoveKind::crankshaft:
    return "crankshaft";
  }
  return "?";
}

namespace {

template <class T> class EngineOf final : public AnyEngine {
public:
  explicit EngineOf(EngineOptions o) : e_(std::move(o)) {}
  void set_system(const System &system) override { e_.set_system(system); }
  const System &system() const override { return e_.system(); }
  Backend backend() const override { return e_.backend(); }
  Energy total() const override { return e_.total(); }
  Energy delta(const Move &move) const override { return e_.delta(move); }
  void apply(const Move &move) override { e_.apply(move); }
  TranslateResult translate(const TranslateParams &p) override { return e_.translate(p); }

private:
  Engine<T> e_;
};

[[noreturn]] void bad(const std::string &message) {
  throw Error(ErrorCode::invalid_argument, "mc simulation: " + message);
}

void check_options(const SimulationOptions &o, const Model &m) {
  const MoveOptions &mv = o.moves;
  for (const auto &[name, v] :
       {std::pair{"monomer_step", mv.monomer_step}, std::pair{"ion_step", mv.ion_step},
        std::pair{"pivot_max_angle", mv.pivot_max_angle},
        std::pair{"crankshaft_max_angle", mv.crankshaft_max_angle},
        std::pair{"radial_max", o.sample.radial_max}})
    if (!std::isfinite(v) || v < 0)
      throw Error(std::isfinite(v) ? ErrorCode::invalid_argument : ErrorCode::non_finite,
                  fmt::format("mc simulation: {} = {} (must be finite and ≥ 0)", name, v));
  if (mv.translations < -1)
    bad(fmt::format("translations = {} (−1: one per particle, or ≥ 0)", mv.translations));
  if (mv.pivots < 0 || mv.crankshafts < 0)
    bad(fmt::format("pivots = {}, crankshafts = {} (must be ≥ 0)", mv.pivots, mv.crankshafts));
  if (mv.crankshaft_span < 2)
    bad(fmt::format("crankshaft_span = {} (must be ≥ 2: the monomers strictly between i and i+k "
                    "rotate)",
                    mv.crankshaft_span));
  if (o.sample.every < 0 || o.sample.recompute_every < 0 || o.sample.radial_bins < 1)
    bad(fmt::format("sample every = {}, recompute_every = {} (must be ≥ 0), radial_bins = {} "
                    "(must be ≥ 1)",
                    o.sample.every, o.sample.recompute_every, o.sample.radial_bins));
  if (o.trajectory.every < 0)
    bad(fmt::format("trajectory every = {} (must be ≥ 0)", o.trajectory.every));
  if (m.chains < 0 || m.monomers < 0 || m.chains * m.monomers > m.system.size())
    bad(fmt::format("chain layout {} chains × {} monomers does not fit the system's {} particles",
                    m.chains, m.monomers, m.system.size()));
  if (!m.system.species.empty() && std::int64_t(m.system.species.size()) != m.system.size())
    throw Error(ErrorCode::shape_mismatch, fmt::format("mc simulation: {} species for {} particles",
                                                       m.system.species.size(), m.system.size()));
  if (m.cell.boundary == Boundary::periodic && o.sample.radial_max > 0) {
    const double half = 0.5 * std::min({m.cell.box[0], m.cell.box[1], m.cell.box[2]});
    if (o.sample.radial_max > half)
      bad(fmt::format("radial_max = {} exceeds half the shortest box edge {} (minimum image)",
                      o.sample.radial_max, half));
  }
}

} // namespace

std::unique_ptr<AnyEngine> make_engine(const Potential &potential, const Cell &cell,
                                       const Execution &execution) {
  EngineOptions eo;
  eo.potential = potential;
  eo.cell = cell;
  eo.backend = execution.backend;
  eo.threads = execution.threads;
  eo.device = execution.device;
  eo.batch = execution.batch;
  if (execution.precision == Precision::float32)
    return std::make_unique<EngineOf<float>>(std::move(eo));
  return std::make_unique<EngineOf<double>>(std::move(eo));
}

Simulation::Impl::Impl(Model m, SimulationOptions o, const double *saved_energy)
    : model(std::move(m)), options(std::move(o)) {
  check_options(options, model);
  engine = make_engine(options.potential, model.cell, options.execution);
  engine->set_system(model.system);
  const std::int64_t n = model.system.size();
  step.assign(std::size_t(n), options.moves.ion_step);
  for (std::int64_t i = 0; i < model.monomer_count(); ++i)
    step[std::size_t(i)] = options.moves.monomer_step;
  if (saved_energy) {
    energy = *saved_energy;
  } else {
    const Energy e = engine->total();
    if (!e.finite())
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("mc simulation: the initial configuration has {} infinite energy "
                              "terms (overlaps, broken bonds or centres outside the cell)",
                              e.overlaps));
    energy = e.value;
  }
  acc.chain_columns = std::min(model.chains, max_chain_columns);
  acc.radial_max =
      options.sample.radial_max > 0 ? options.sample.radial_max : default_radial_max(model.cell);
  acc.radial_count.assign(std::size_t(options.sample.radial_bins), 0.0);
  open_trajectories();
}

void Simulation::Impl::record_recompute(const Energy &e) {
  if (!e.finite())
    throw Error(ErrorCode::internal,
                fmt::format("mc simulation: the recomputed energy has {} infinite terms after "
                            "sweep {} (an accepted move overlapped)",
                            e.overlaps, sweeps));
  last_drift = energy - e.value;
  max_drift = std::max(max_drift, std::abs(last_drift));
  ++recomputes;
  energy = e.value;
}

void Simulation::Impl::sweep() {
  const SimulationOptions &o = options;
  const std::int64_t n = model.system.size();
  const std::int64_t count = o.moves.translations < 0 ? n : o.moves.translations;
  if (count > 0) {
    TranslateParams p;
    p.seed = o.seed;
    p.first = t;
    p.count = count;
    p.max_step = o.moves.ion_step;
    p.step = std::move(step); // lent to the engine for the call, not copied every sweep
    const TranslateResult r = engine->translate(p);
    step = std::move(p.step);
    t += std::uint64_t(count);
    energy += r.delta_u;
    Acceptance &a = acceptance[int(MoveKind::translate)];
    a.attempted += r.attempted;
    a.accepted += r.accepted;
    a.rejected_overlap += r.rejected_overlap;
  }

  const Cell &cell = model.cell;
  Move move;
  // One chain move: proposal draws from stream_cluster, the pivot's side and the Metropolis
  // uniform from stream_cluster_acc, both at move number t.
  auto chain_move = [&](MoveKind kind, std::int64_t chain) {
    const Philox4 r = draw(o.seed, t, stream_cluster);
    const Philox4 u = draw(o.seed, t, stream_cluster_acc);
    ++t;
    Acceptance &a = acceptance[int(kind)];
    ++a.attempted;
    const System &s = engine->system();
    const std::int64_t first = model.chain_particle(chain, 0);
    const bool ok =
        kind == MoveKind::pivot
            ? propose_pivot(s, cell, first, model.monomers, r, (u.v[1] & 1u) != 0,
                            o.moves.pivot_max_angle, move)
            : propose_crankshaft(s, cell, first, model.monomers, o.moves.crankshaft_span, r,
                                 o.moves.crankshaft_max_angle, move);
    if (!ok) {
      ++a.rejected_overlap;
      return;
    }
    const Energy du = engine->delta(move);
    if (!du.finite()) {
      ++a.rejected_overlap;
      return;
    }
    if (metropolis(du.value, du.overlaps, uniform_open(u.v[0]))) {
      engine->apply(move);
      energy += du.value;
      ++a.accepted;
    }
  };
  const bool pivots = model.monomers >= 2 && o.moves.pivots > 0;
  const bool cranks = model.monomers >= o.moves.crankshaft_span + 1 && o.moves.crankshafts > 0;
  if (pivots || cranks)
    for (std::int64_t c = 0; c < model.chains; ++c) {
      for (std::int64_t k = 0; pivots && k < o.moves.pivots; ++k)
        chain_move(MoveKind::pivot, c);
      for (std::int64_t k = 0; cranks && k < o.moves.crankshafts; ++k)
        chain_move(MoveKind::crankshaft, c);
    }

  ++sweeps;
  if (o.sample.recompute_every > 0 && sweeps % o.sample.recompute_every == 0)
    record_recompute(engine->total());
  if (o.sample.every > 0 && sweeps % o.sample.every == 0)
    sample();
  if (o.trajectory.every > 0 && sweeps % o.trajectory.every == 0)
    write_frame();
}

void Simulation::Impl::open_trajectories() {
  const TrajectoryOptions &tr = options.trajectory;
  if (tr.every <= 0)
    return;
  auto open = [&](const std::filesystem::path &path, std::ofstream &out, const char *header) {
    if (path.empty())
      return;
    std::error_code ec;
    const bool exists = std::filesystem::exists(path, ec);
    if (exists && !tr.append && !tr.overwrite)
      throw Error(ErrorCode::io,
                  fmt::format("{}: file exists (use --force to overwrite)", path.string()));
    const bool fresh = !exists || !tr.append || std::filesystem::file_size(path, ec) == 0;
    out.open(path, tr.append ? std::ios::app : std::ios::trunc);
    if (!out)
      throw Error(ErrorCode::io, fmt::format("{}: cannot open for writing", path.string()));
    if (fresh && header)
      out << header;
  };
  open(tr.xyz, xyz, nullptr);
  open(tr.csv, csv, "sweep,particle,x,y,z\n");
}

void Simulation::Impl::write_frame() {
  if (!xyz.is_open() && !csv.is_open())
    return;
  sync();
  const System &s = model.system;
  const std::int64_t n = s.size();
  std::string buf;
  auto out = std::back_inserter(buf);
  auto name = [&](std::int64_t i) {
    return s.species.empty() ? std::string_view("X") : species_name(s.species[std::size_t(i)]);
  };
  if (xyz.is_open()) {
    const Cell &c = model.cell;
    fmt::format_to(out, "{}\nsweep={} energy={:.17g}", n, sweeps, energy);
    if (c.boundary == Boundary::sphere)
      fmt::format_to(out, " sphere={}\n", c.radius);
    else if (c.boundary == Boundary::periodic)
      fmt::format_to(out, " box={} {} {}\n", c.box[0], c.box[1], c.box[2]);
    else
      fmt::format_to(out, "\n");
    for (std::int64_t i = 0; i < n; ++i)
      fmt::format_to(out, "{} {:.10g} {:.10g} {:.10g}\n", name(i), s.x[i], s.y[i], s.z[i]);
    xyz << buf;
    xyz.flush();
    if (!xyz)
      throw Error(ErrorCode::io, fmt::format("{}: cannot write", options.trajectory.xyz.string()));
  }
  if (csv.is_open()) {
    buf.clear();
    for (std::int64_t i = 0; i < n; ++i)
      fmt::format_to(out, "{},{},{:.17g},{:.17g},{:.17g}\n", sweeps, i, s.x[i], s.y[i], s.z[i]);
    csv << buf;
    csv.flush();
    if (!csv)
      throw Error(ErrorCode::io, fmt::format("{}: cannot write", options.trajectory.csv.string()));
  }
}

Simulation::Simulation(Model model, SimulationOptions options)
    : impl_(std::make_unique<Impl>(std::move(model), std::move(options))) {}
Simulation::Simulation(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Simulation::~Simulation() = default;
Simulation::Simulation(Simulation &&) noexcept = default;
Simulation &Simulation::operator=(Simulation &&) noexcept = default;

std::int64_t Simulation::run(std::int64_t sweeps, const ProgressCallback &progress,
                             std::int64_t progress_every) {
  if (sweeps < 0)
    bad(fmt::format("run({}) sweeps (must be ≥ 0)", sweeps));
  if (progress_every < 1)
    progress_every = 1;
  Impl &s = *impl_;
  for (std::int64_t k = 0; k < sweeps; ++k) {
    s.sweep();
    if (progress && ((k + 1) % progress_every == 0 || k + 1 == sweeps)) {
      Progress p;
      p.fraction = double(k + 1) / double(sweeps);
      p.sweep = s.sweeps;
      p.energy = s.energy;
      p.acceptance = s.acceptance;
      if (!progress(p))
        return k + 1;
    }
  }
  return sweeps;
}

const Model &Simulation::model() const {
  impl_->sync();
  return impl_->model;
}
const SimulationOptions &Simulation::options() const {
  return impl_->options;
}
Backend Simulation::backend() const {
  return impl_->engine->backend();
}
std::int64_t Simulation::sweeps() const {
  return impl_->sweeps;
}
std::uint64_t Simulation::move_counter() const {
  return impl_->t;
}
double Simulation::energy() const {
  return impl_->energy;
}
Energy Simulation::recompute() {
  const Energy e = impl_->engine->total();
  impl_->record_recompute(e);
  return e;
}

} // namespace ksum::mc
