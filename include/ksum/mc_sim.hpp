#pragma once
// The polyelectrolyte Monte Carlo simulation (seed 004, Paper I, Holm et al., §2 and Program 1) on
// top of the energy engine of include/ksum/mc.hpp: bead-spring chains of charged monomers with
// their counter-ions and optional salt, in a spherical cell or a periodic box, sampled by
// Metropolis with single-particle translations (Engine::translate) and the chains' pivot and
// crankshaft moves (Engine::delta / apply). Energies in kT, lengths in the model's unit (Å by
// convention).
//
// Every random number is a counter-based draw keyed by (seed, move number t, stream) (the streams
// of src/mc/philox.hpp): a run is one Markov chain whatever the backend's batching, and a restart
// from a checkpoint at sweep k continues it exactly (bit-identically on the CPU, on any number of
// threads: the engine adds its partial sums in a fixed order).
#include <ksum/mc.hpp>
#include <ksum/table.hpp>

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ksum::mc {

// Species ids of a Model's particles (System::species) and their names in trajectories.
enum class Species : std::int32_t {
  charged_monomer = 0,
  neutral_monomer = 1,
  counterion = 2,
  salt_cation = 3,
  salt_anion = 4
};
std::string_view species_name(std::int32_t species); // "M", "U", "CI", "Na", "Cl"

// The polyelectrolyte model. Particle order: chain c's monomers are c·monomers … (c+1)·monomers −
// 1, then the counter-ions, then the salt cations, then the salt anions.
struct ModelOptions {
  std::int64_t chains = 1;
  std::int64_t monomers = 32;    // per chain (≥ 1; bonds between consecutive monomers)
  double monomer_radius = 2;     // R_m
  double monomer_charge = -1;    // z_m of a charged monomer
  std::int64_t charge_every = 1; // every k-th monomer (0, k, 2k, … of each chain) is charged
  double bond_length = 5;        // b: the initial random walks' bond length
  // Counter-ions: valence z_c > 0, their charge is −sign(z_m)·z_c; as many as neutralise the
  // chains (the chains' charge must be a multiple of z_c).
  double counterion_valence = 1;
  double counterion_radius = 2;
  std::int64_t salt_pairs = 0; // pairs of ±1 ions
  double salt_radius = 2;
  Boundary boundary = Boundary::sphere; // sphere or periodic (a cubic box)
  double cell_radius = 0;               // sphere: radius; 0: from monomer_density
  double box = 0;                       // periodic: edge length; 0: from monomer_density
  // Monomers per unit volume (length⁻³; c [mol/L] in Å: c · 6.02214076e-4), used when the cell
  // radius or box edge is 0.
  double monomer_density = 0;
  // The initial configuration's limit on Σ (4/3)πR_i³ / V (random insertion jams near 0.38).
  double max_volume_fraction = 0.3;
  std::int64_t max_tries = 1000; // insertions of one particle (or one chain bead) before failing
  std::uint64_t seed = 1;        // the initial configuration: Philox stream_init
};

struct Model {
  System system; // positions, charges, radii, species and the chains' bonds
  Cell cell;
  std::int64_t chains = 0, monomers = 0; // chain layout (see ModelOptions)
  std::int64_t chain_particle(std::int64_t chain, std::int64_t monomer) const {
    return chain * monomers + monomer;
  }
  std::int64_t monomer_count() const { return chains * monomers; }
};

// Builds the model with a reproducible, overlap-free initial configuration (self-avoiding random
// walks of step b for the chains, then random insertion of the ions, contact distance R_i + R_j
// between non-bonded particles; all draws from stream_init of options.seed). Errors
// (invalid_argument): counts or sizes out of range, non-finite values, a chain charge that z_c
// cannot neutralise, a volume fraction above max_volume_fraction, a chain or ion that cannot be
// placed in max_tries (the message names the particle and its species).
Model build_polyelectrolyte(const ModelOptions &options);

enum class Precision { float32, float64 };
Precision
parse_precision(std::string_view name); // "float"/"float32"/"f32", "double"/"float64"/"f64"
std::string_view to_string(Precision p);

struct MoveOptions {
  double monomer_step = 1; // maximum displacement (per axis) of a monomer translation
  double ion_step = 4;     // … of a counter-ion or salt ion
  // Translations per sweep; −1: one per particle (N).
  std::int64_t translations = -1;
  std::int64_t pivots = 1;          // pivot moves per chain per sweep
  std::int64_t crankshafts = 1;     // crankshaft moves per chain per sweep
  std::int64_t crankshaft_span = 2; // k: monomers i+1 … i+k−1 rotate about the axis (i, i+k)
  // Pivot rotation: ≥ π a uniformly random rotation (Shoemake's quaternion); smaller, a uniform
  // axis and an angle uniform in [−a, a].
  double pivot_max_angle = 3.141592653589793;
  double crankshaft_max_angle = 3.141592653589793; // angle uniform in [−a, a]
};

struct SampleOptions {
  std::int64_t every = 1;             // sweeps between samples (0: no samples)
  std::int64_t recompute_every = 100; // sweeps between full recomputes of U (0: never)
  std::int64_t radial_bins = 100;
  double radial_max = 0; // 0: the cell radius (sphere) or half the shortest box edge (periodic)
};

struct TrajectoryOptions {
  std::filesystem::path xyz; // empty: none. Frames: N, a comment line, "name x y z" per particle
  std::filesystem::path csv; // empty: none. Rows: sweep,particle,x,y,z
  std::int64_t every = 0;    // sweeps between frames (0: none)
  bool overwrite = false;    // replace existing files (else an existing file is Error(io))
  bool append = false;       // append to existing files (a restart continuing its trajectory)
};

// How a run is executed; given again when a checkpoint is loaded (a continuation is bit-identical
// only with the same backend, precision, threads and batch).
struct Execution {
  Backend backend = Backend::automatic;
  Precision precision = Precision::float64;
  int threads = 0;
  int device = 0;
  int batch = 0;
};

struct SimulationOptions {
  Potential potential{};
  MoveOptions moves{};
  SampleOptions sample{};
  std::uint64_t seed = 1; // the moves' draws
  Execution execution{};
  TrajectoryOptions trajectory{};
};

enum class MoveKind { translate = 0, pivot = 1, crankshaft = 2 };
inline constexpr int move_kinds = 3;
std::string_view to_string(MoveKind kind);

struct Acceptance {
  std::int64_t attempted = 0, accepted = 0, rejected_overlap = 0;
  double ratio() const { return attempted ? double(accepted) / double(attempted) : 0.0; }
};

// A mean with its standard error (block averaging, Flyvbjerg & Petersen 1989: the largest error
// estimate over the blocking levels with at least 16 blocks).
struct Estimate {
  double mean = 0, error = 0;
  std::int64_t samples = 0;
};
Estimate block_average(const std::vector<double> &series);

struct Progress {
  double fraction = 0;                             // of this run() call
  std::int64_t sweep = 0;                          // sweeps done in total (checkpoints included)
  double energy = 0;                               // running U (kT)
  std::array<Acceptance, move_kinds> acceptance{}; // since the start
};
// Called after every `progress_every` sweeps of run() and after the last; returning false stops
// run() after that sweep (the state is consistent: it can be checkpointed).
using ProgressCallback = std::function<bool(const Progress &)>;

struct Summary {
  std::int64_t sweeps = 0, moves = 0, samples = 0;
  double energy = 0;                        // running U now
  Estimate energy_mean, ree, ree2, rg, rg2; // R_ee, R_ee², R_g, R_g² averaged over the chains
  std::array<Acceptance, move_kinds> acceptance{};
  // Full recomputes of U: how many, the largest |U_running − U_total| seen, and the last one.
  std::int64_t recomputes = 0;
  double max_drift = 0, last_drift = 0;
};

class Simulation {
public:
  // Validates the options and the model (chain layout against the system, a finite initial
  // energy: the engine names overlapping or outside particles) and computes U.
  Simulation(Model model, SimulationOptions options);
  // Continues the run saved in `checkpoint` (Error(io or parse) naming the file if it is missing,
  // truncated, corrupt or of another version), executed as given; trajectories as given.
  static Simulation load(const std::filesystem::path &checkpoint, const Execution &execution = {},
                         const TrajectoryOptions &trajectory = {});
  ~Simulation();
  Simulation(Simulation &&) noexcept;
  Simulation &operator=(Simulation &&) noexcept;

  // Runs `sweeps` sweeps: each the translations, then per chain its pivots and crankshafts;
  // samples, recomputes and trajectory frames at multiples of their intervals of the total sweep
  // count. Returns the sweeps run (fewer when the callback stopped it).
  std::int64_t run(std::int64_t sweeps, const ProgressCallback &progress = nullptr,
                   std::int64_t progress_every = 1);

  // The whole state (model, options but execution and trajectory, seed, move counter, U,
  // accumulators, acceptance counters) to a binary file with a magic/version header and a
  // checksum; written through a temporary file; an existing file only with overwrite.
  void save(const std::filesystem::path &checkpoint, bool overwrite = false) const;

  const Model &model() const; // the positions as they are now
  const SimulationOptions &options() const;
  Backend backend() const;            // resolved
  std::int64_t sweeps() const;        // done in total
  std::uint64_t move_counter() const; // the next move number t
  double energy() const;              // running U
  // engine.total() now, recorded as a drift (U_running − U_total); the running U restarts from it.
  Energy recompute();
  Summary summary() const;

  // One row per sample: sweep, energy, then (with chains) ree, rg (means over the chains) and
  // ree_<c>, rg_<c> of the first 16 chains.
  Table<double> samples() const;
  // The counter-ions' radial distribution: columns r (bin centre), value, count. Sphere: the
  // number density n(r) around the cell centre (length⁻³); periodic: g(r) of counter-ions around
  // monomers (1 at large r for an ideal gas).
  Table<double> radial() const;

  // R_ee and R_g of one chain now (unwrapped along the chain in a periodic box).
  double end_to_end(std::int64_t chain) const;
  double gyration_radius(std::int64_t chain) const;

private:
  struct Impl;
  explicit Simulation(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace ksum::mc
