#pragma once
// Monte Carlo electrostatics (seed 004, Paper I, Holm et al.): the all-pairs energy of a system of
// charged spheres, off-loaded to the GPU, for Metropolis codes written as the paper's Program 2:
//
//   system = init();  U = engine.total();
//   loop { move = propose(system);  dU = engine.delta(move);
//          if (metropolis(dU)) { engine.apply(move); U += dU; } }
//
// Energies are in kT, lengths in any unit (Å by convention; the Bjerrum length is in that unit).
// The pair energy of particles i, j at distance r (minimum image in a periodic box) is
//
//   u_ij(r) = l_B q_i q_j e^{−κ r} / r   (κ = 0: bare Coulomb; κ = 1/λ_D: Debye–Hückel)
//           + short range with the contact distance σ_ij = R_i + R_j:
//             hard spheres (r < σ_ij is an overlap: infinite energy), Lennard-Jones
//             4ε[(σ/r)¹² − (σ/r)⁶], or WCA (the same, cut and shifted at 2^{1/6}σ: purely repulsive)
//
// plus bonds between listed pairs (bead-spring chains): harmonic k/2 (r − r0)², or FENE
// −k r_max²/2 ln(1 − (r/r_max)²) (r ≥ r_max is a broken bond: infinite energy). In a spherical cell
// a centre outside the cell is infinite energy too. Infinite energies are never stored as inf:
// Energy counts them apart (`overlaps`), so that ΔU stays finite arithmetic and a move with
// overlaps > 0 is simply rejected.
//
// Where the paper goes further than this: it re-sent every particle and recomputed all N² pairs for
// every move (Program 2's calculate_U), and lost most of the GPU to PCIe latency (its table 3.1).
// Here the particles stay on the GPU (set_system uploads them once), a move costs one O(N·m) ΔU
// (m moved particles), and translate() evaluates a whole batch of single-particle trial moves in
// one launch and accepts them in order on the device — the same Markov chain as one move at a time
// (see translate()). The paper's full-recompute path is kept: total_full_recompute().
#include <ksum/direct.hpp>

#include <array>
#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace ksum::mc {

enum class Electrostatics { coulomb, debye_huckel, none };
enum class ShortRange { none, hard_sphere, lennard_jones, wca };
enum class BondKind { none, harmonic, fene };
enum class Boundary { open, sphere, periodic };

Electrostatics parse_electrostatics(std::string_view name); // "coulomb", "debye-huckel", "none"
ShortRange parse_short_range(std::string_view name);        // "none", "hard-sphere", "lj", "wca"
BondKind parse_bond(std::string_view name);                 // "none", "harmonic", "fene"
std::string_view to_string(Electrostatics e);
std::string_view to_string(ShortRange s);
std::string_view to_string(BondKind b);

// l_B = e² / (4π ε0 εr kB T) in Å (7.14 Å for water, εr = 78.4, at 298.15 K).
double bjerrum_length(double relative_permittivity, double temperature_kelvin);

struct Potential {
  Electrostatics electrostatics = Electrostatics::coulomb;
  double bjerrum = 7.14;     // l_B (length unit)
  double debye_length = 0;   // λ_D = 1/κ for debye_huckel (> 0)
  ShortRange short_range = ShortRange::hard_sphere;
  double lj_epsilon = 1;     // ε (kT) of lennard_jones and wca
  BondKind bond = BondKind::none;
  double bond_k = 0;         // harmonic: k (kT / length²); fene: k (kT / length²)
  double bond_r0 = 0;        // harmonic: rest length
  double bond_rmax = 0;      // fene: maximum extension r_max
};

struct Cell {
  Boundary boundary = Boundary::open;
  double radius = 0;                // sphere: centres stay within |x| ≤ radius (origin at 0)
  std::array<double, 3> box{0, 0, 0}; // periodic: edge lengths; positions wrapped into [0, L)
};

// Structure of arrays; charges in units of e, radii R_i ≥ 0 (contact distance R_i + R_j).
struct System {
  std::vector<double> x, y, z, charge, radius;
  std::vector<std::int32_t> species;              // optional: empty, or one per particle
  std::vector<std::array<std::int64_t, 2>> bonds; // bonded pairs (i, j), i ≠ j
  std::int64_t size() const { return static_cast<std::int64_t>(x.size()); }
};

// An energy, or the number of infinite terms it contains (hard-sphere overlaps, broken FENE bonds,
// centres outside the cell, coincident charges). For a ΔU, overlaps counts the new configuration's.
struct Energy {
  double value = 0;
  std::int64_t overlaps = 0;
  bool finite() const { return overlaps == 0; }
};

// A trial move: new positions of some particles (3 per particle, x y z). rigid: the caller
// guarantees the distances among the moved particles are unchanged (translations, pivots and
// crankshafts of a chain in an open or spherical cell), so their mutual terms are skipped.
struct Move {
  std::vector<std::int64_t> particles;
  std::vector<double> xyz;
  bool rigid = false;
};

// Batched single-particle translations (translate()). Move number t (t = first … first + count − 1)
// draws from the counter-based stream (seed, t): a particle p among `movable` (uniformly), a
// displacement uniform in the cube [−step_p, step_p]³ (step_p = step[p] if step is given, else
// max_step), and the uniform number of the Metropolis test (accept if u < exp(−ΔU)). The draws
// depend only on (seed, t): a run is the same Markov chain whatever the batch size, and a restart
// at move t continues it exactly. In double, CPU and GPU make the same chain up to rounding of ΔU;
// in float the GPU keeps the positions in float on the device (the CPU starts each trial from its
// double copy), so its float chain is its own.
struct TranslateParams {
  std::uint64_t seed = 1;
  std::uint64_t first = 0;              // the first move's number t
  std::int64_t count = 0;               // moves to attempt
  std::vector<std::int64_t> movable{};  // empty: every particle
  double max_step = 1;
  std::vector<double> step{};           // optional per-particle maximum displacement (size N)
};
struct TranslateResult {
  std::int64_t attempted = 0, accepted = 0;
  std::int64_t rejected_overlap = 0; // rejected because the new position overlapped or left the cell
  double delta_u = 0;                // the sum of the accepted moves' ΔU
  std::int64_t launches = 0;         // GPU: batches evaluated (1 per launch sequence)
};

struct EngineOptions {
  Potential potential{};
  Cell cell{};
  Backend backend = Backend::automatic; // automatic: the GPU when one is present
  int threads = 0;                      // CPU threads; 0: OpenMP's default
  int device = 0;                       // GPU index
  int batch = 0; // translate(): trial moves per launch on the GPU; 0: chosen from N
};

// The energy engine (the library of Paper I). T is the precision of the pair arithmetic; sums are
// accumulated in double on both backends (on the GPU in float, T = float, over runs of at most 128
// terms first).
template <std::floating_point T> class Engine {
public:
  explicit Engine(EngineOptions options);
  ~Engine();
  Engine(Engine &&) noexcept;
  Engine &operator=(Engine &&) noexcept;

  // Validates (sizes, NaN/Inf, radii < 0, zero or negative box/cell, particles outside the cell,
  // bond indices, overlapping hard spheres or broken bonds at the start: errors name the particle
  // indices and values) and makes the system resident (on the GPU: one upload).
  void set_system(const System &system);
  // The resident system as it is now (after the moves applied); on the GPU downloaded when stale.
  const System &system() const;
  std::int64_t size() const;
  Backend backend() const; // cpu or cuda, resolved

  // U of the resident system: every pair once, plus the bonds.
  Energy total() const;
  // The paper's path (Program 2's calculate_U): copy every particle of `system` to the device and
  // compute all N² ordered pairs (each pair twice, as the paper's one-thread-per-particle kernel),
  // halved. Does not change the resident system. On the CPU: the same all-pairs loop.
  Energy total_full_recompute(const System &system) const;
  // ΔU = U(after the move) − U(before), in O(N·m); the resident system is unchanged.
  Energy delta(const Move &move) const;
  // Makes the move (after an accepted delta); periodic positions are wrapped into the box.
  void apply(const Move &move);
  // Metropolis with single-particle translations (see TranslateParams), accepted moves applied.
  // GPU: a batch of trials is evaluated in one launch against the current state, then accepted in
  // order on the device; a trial after an accepted one is corrected exactly by the pair terms with
  // the particles moved before it in the batch, and the batch ends early when a particle moves twice.
  TranslateResult translate(const TranslateParams &params);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class Engine<float>;
extern template class Engine<double>;

// The fp64 reference: U of a system by the plain double loop over i < j (tests, benchmarks).
Energy reference_total(const System &system, const Potential &potential, const Cell &cell);

} // namespace ksum::mc
