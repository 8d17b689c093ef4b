#pragma once
// The state of a polyelectrolyte simulation (include/ksum/mc_sim.hpp), shared by its moves
// (simulation.cpp), observables (observables.cpp) and checkpoints (checkpoint.cpp).
#include <ksum/mc_sim.hpp>

#include <fstream>
#include <memory>

namespace ksum::mc {

// Engine<float> or Engine<double>, chosen at run time.
class AnyEngine {
public:
  virtual ~AnyEngine() = default;
  virtual void set_system(const System &system) = 0;
  virtual const System &system() const = 0;
  virtual Backend backend() const = 0;
  virtual Energy total() const = 0;
  virtual Energy delta(const Move &move) const = 0;
  virtual void apply(const Move &move) = 0;
  virtual TranslateResult translate(const TranslateParams &params) = 0;
};
std::unique_ptr<AnyEngine> make_engine(const Potential &potential, const Cell &cell,
                                       const Execution &execution);

// Per-sample series (one value per sample) and the counter-ions' radial histogram.
struct Accumulators {
  std::vector<double> sweep, energy, ree, rg, ree2, rg2;
  std::int64_t chain_columns = 0;          // min(chains, 16)
  std::vector<double> chain_ree, chain_rg; // sample-major, chain_columns per sample
  std::vector<double> radial_count;        // radial_bins
  std::int64_t radial_samples = 0;
  double radial_max = 0;
};

inline constexpr std::int64_t max_chain_columns = 16;

struct Simulation::Impl {
  mutable Model model; // positions refreshed from the engine by sync()
  SimulationOptions options;
  std::unique_ptr<AnyEngine> engine;
  std::vector<double> step; // per-particle maximum translation step
  std::uint64_t t = 0;      // the next move number
  std::int64_t sweeps = 0;
  double energy = 0; // running U
  std::array<Acceptance, move_kinds> acceptance{};
  std::int64_t recomputes = 0;
  double max_drift = 0, last_drift = 0;
  Accumulators acc;
  std::ofstream xyz, csv;

  // Checks the model and options, builds the engine and makes the system resident; U from the
  // engine unless `energy` is given (a checkpoint's running U).
  Impl(Model model, SimulationOptions options, const double *energy = nullptr);
  void sync() const { model.system = engine->system(); }

  void sweep();
  void sample();
  void record_recompute(const Energy &e);
  void open_trajectories();
  void write_frame();
};

// Observables (observables.cpp).
double end_to_end(const Model &model, std::int64_t chain);
double gyration_radius(const Model &model, std::int64_t chain);
double default_radial_max(const Cell &cell);
// Adds the counter-ions' radial histogram of the current positions to `count` (radial_bins bins of
// width r_max / bins).
void radial_histogram(const Model &model, double r_max, std::vector<double> &count);

} // namespace ksum::mc
