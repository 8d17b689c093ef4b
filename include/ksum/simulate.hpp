#pragma once
// Particle simulations on the 2D FMM: the three applications of seed 004 Paper IV §5.
//
//   kh        the vortex (Kelvin–Helmholtz) instability (§5.1): point vortices on a grid in a long
//             thin rectangle, the upper half of strength −Γ, the lower +Γ; forward Euler.
//   galaxy    a rotating disc of equal masses in 2D gravity (§5.2); velocity Störmer–Verlet.
//   cylinder  the impulsively started flow around a cylinder (§5.3): image vortices (eq. 5.5),
//             vorticity created at the wall to cancel the slip, RK4 convection, a random-walk
//             diffusion step, merging.
//
// Every sum Σ_j q_j/(z_i − z_j) of a simulation runs on ONE Fmm2d plan (set_points() each call,
// since the particles move), and an Autotuner moves θ and Nlevels between the calls (§4).
// Points, velocities and accelerations are complex numbers x + iy.
#include <ksum/autotune.hpp>
#include <ksum/fmm2d.hpp>
#include <ksum/table.hpp>

#include <complex>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ksum::sim {

using Complex = std::complex<double>;

// Where the Gaussian core is applied.
//   correction  the plan sums the plain kernel (any tree); the core's difference from it,
//               q·exp(−r²/δ²)/(z − y), is subtracted over the pairs closer than
//               δ·sqrt(log(10/tol)) found on a cell grid (CPU threads). The FMM's error is then
//               relative to the plain sum, which exceeds the smoothed one where particles sit much
//               closer than δ (tight clusters); method direct corrects every pair (exact).
//   plan        Fmm2dOptions::smoothing in the plan's near field (CPU or GPU). The plan refuses a
//               tree whose weakly coupled boxes come closer than δ·sqrt(log(10/tol)); the field
//               then retries with θ × 0.8 (down to 0.25), then one level coarser. Dense particles
//               whose spacing is below the core (clustered vortices, the cylinder's wall layer and
//               its images) force coarse trees and a large near field.
enum class CoreMode { correction, plan };
CoreMode parse_core_mode(std::string_view name); // "correction" or "plan"
std::string_view to_string(CoreMode mode);

// How the FMM runs and is tuned; shared by the three simulations.
struct FieldOptions {
  Method method = Method::fmm; // direct: every pair (exact; the tests' reference)
  double tolerance = 1e-6;
  double theta = 0.5; // initial θ
  int levels = 0;     // initial Nlevels; 0: from the number of points of the first call
  Backend backend = Backend::cpu;
  bool gpu_m2l = false;
  int threads = 0;
  // δ of the Gaussian (Lamb–Oseen) core: each pair term is multiplied by 1 − exp(−r²/δ²); 0: point
  // particles.
  double core_radius = 0;
  CoreMode core_mode = CoreMode::correction;
  AutotuneScheme autotune = AutotuneScheme::at3b;
  double cap = 0.1; // at3b's largest share of the runtime spent on failed Nlevels moves
};

// What the FMM calls since the last take_stats() did.
struct FieldStats {
  int calls = 0;       // FMM evaluations
  int tuned_calls = 0; // of which reported to the autotuner
  // Wall time of the calls (set_parameters + set_points + execute + the core correction) and the
  // plan's phases, summed.
  double seconds = 0, seconds_partition = 0, seconds_upward = 0, seconds_downward = 0;
  double seconds_near = 0, seconds_gpu_near = 0;
  // The last call: θ, Nlevels and p in use, and the θ and Nlevels asked for (by the autotuner).
  double theta = 0, requested_theta = 0;
  int levels = 0, order = 0, requested_levels = 0;
  // CoreMode::correction: seconds of the core correction (in `seconds`, not in the tuner's time).
  double seconds_core = 0;
  // CoreMode::plan: trees the plan refused for its core-radius check. A call that ran ΔL levels
  // coarser than asked is reported to the autotuner as (1 + ΔL) times its time, so that the move
  // that asked for an infeasible tree is undone.
  int core_retries = 0;
  bool cpu_waited_on_gpu = false;
  std::vector<AutotuneMove> moves; // moves the autotuner decided in these calls
};

// The harmonic sum of a simulation on one reused Fmm2d<double> plan, tuned between calls.
class Field {
public:
  explicit Field(FieldOptions options);
  ~Field();
  Field(Field &&) noexcept;
  Field &operator=(Field &&) noexcept;

  // u_i = Σ_{j≠i} q_j/(z_i − z_j) · (1 − exp(−|z_i − z_j|²/δ²)); targets are the sources.
  // `tuned`: report the call's time to the autotuner (calls of one repeating shape only).
  std::vector<Complex> sum(std::span<const Complex> z, std::span<const Complex> q,
                           bool tuned = true);
  // The same at separate targets; a target on top of a source gets 0 from it.
  std::vector<Complex> sum(std::span<const Complex> sources, std::span<const Complex> q,
                           std::span<const Complex> targets, bool tuned = true);

  FieldStats take_stats(); // returns the counters and resets them
  const FieldOptions &options() const;
  // The tuner (scheme off included); empty before the first tuned call.
  const std::optional<Autotuner> &autotuner() const;
  std::string autotune_csv() const; // the move log (header only before the first tuned call)

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Velocity u + iv of point vortices: the Biot–Savart law u − iv = (1/2πi) Σ_j Γ_j/(z − z_j)
// (seed 004 Paper IV §5.1), i.e. u + iv = conj(Σ_j Γ_j/(z − z_j)) · i/(2π).
std::vector<Complex> vortex_velocity(Field &field, std::span<const Complex> z,
                                     std::span<const double> gamma, bool tuned = true);

// Acceleration of masses in 2D gravity (softened by the field's core): the potential Φ(z) = G Σ_j
// m_j log|z − z_j| (the 2D Newtonian potential, ∇²Φ = 2πGρ) gives a_i = −∇Φ = −G conj(Σ_{j≠i}
// m_j/(z_i − z_j)).
std::vector<Complex> gravity(Field &field, std::span<const Complex> z, std::span<const double> mass,
                             double G, bool tuned = true);

// Velocity u + iv at the targets of the cylinder flow of seed 004 Paper IV eq. (5.5), from
//   u − iv = V∞(1 − R²/z²) + (1/2πi) Σ_k Γ_k [1/(z − z_k) − 1/(z − R²/conj(z_k))],
// the vortices outside |z| = R, each with its image of strength −Γ_k at R²/conj(z_k). One FMM
// sum with the 2n sources (vortices and images) and the targets (no sum without vortices).
std::vector<Complex> cylinder_velocity(Field &field, std::span<const Complex> z,
                                       std::span<const double> gamma,
                                       std::span<const Complex> targets, double speed,
                                       double radius, bool tuned = true);

// The no-slip condition at the wall (seed 004 Paper IV §5.3, after Chorin): M new vortices at
// (R + d)e^{iθ_m}, θ_m = 2π(m + ½)/M, whose strengths zero the tangential velocity at the control
// points Re^{iθ_m}. The influence matrix A (each new vortex with its image, with the Gaussian core)
// is factorised once (Eigen, column-pivoting QR). smoothing = 0 solves Aγ = −slip exactly;
// smoothing > 0 solves the least-squares problem min |Aγ + slip|² + λ²Σ_k(γ_k − γ_{k+1})², λ =
// smoothing × (A's uniform-mode response): a smooth slip is still cancelled (to ~(λ·k·2π/M)² for
// its k-th Fourier mode), but the alternating mode, which the wall barely feels, is not amplified
// from the noisy slip of the blobs near the wall (which made the wake a salt-and-pepper of
// opposite-signed vortices in our runs).
class WallVortices {
public:
  WallVortices(std::int64_t count, double radius, double distance, double core_radius,
               double smoothing = 0.5);
  ~WallVortices();
  WallVortices(WallVortices &&) noexcept;
  WallVortices &operator=(WallVortices &&) noexcept;

  std::span<const Complex> control_points() const;
  std::span<const Complex> positions() const; // of the new vortices
  // Strengths γ that cancel the slip at the control points (the tangential velocity there without
  // the new vortices, counter-clockwise positive).
  std::vector<double> solve(std::span<const double> slip) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Counter-clockwise tangential and outward normal components of velocities u + iv at points on
// the circle |z| = R (at angle arg z).
double tangential(Complex velocity, Complex at);
double normal(Complex velocity, Complex at);

enum class Scenario { kh, galaxy, cylinder };
Scenario parse_scenario(std::string_view name); // "kh", "galaxy" or "cylinder"
std::string_view to_string(Scenario s);

struct SimulationOptions {
  Scenario scenario = Scenario::kh;
  // kh, galaxy: particles (0: 20000). cylinder: wall vortices per step M (0: 128).
  std::int64_t n = 0;
  double dt = 0;           // 0: the scenario's default (kh 0.1, galaxy 0.02, cylinder 0.05)
  double core = 1;         // δ in particle spacings (kh: grid, galaxy: mean, cylinder: wall)
  double reynolds = 10000; // cylinder: Re = V∞·2R/ν
  int merge_every = 10;    // cylinder: merge vortices every this many steps (0: never)
  std::uint64_t seed = 1;  // initial jitter (kh), positions (galaxy), random walk (cylinder)
  FieldOptions field;      // core_radius is set from `core`
};

// Particle state for snapshots: positions, strengths (circulation or mass) and velocities.
struct Snapshot {
  std::vector<Complex> z, velocity;
  std::vector<double> strength;
};

// A heat map of the particles on a regular grid (values[ix + nx·iy], y upwards; NaN: no value,
// drawn white): vorticity for the vortex simulations, log10 of the surface density for the galaxy.
struct Picture {
  std::int64_t nx = 0, ny = 0;
  std::vector<double> values;
};

class Simulation {
public:
  virtual ~Simulation() = default;
  virtual Scenario scenario() const = 0;
  virtual void step() = 0; // advances the state by dt
  double time() const { return t_; }
  double dt() const { return dt_; }
  virtual std::int64_t size() const = 0; // particles now
  // The state; the vortex simulations evaluate the velocity at the current positions (one untuned
  // FMM call).
  virtual Snapshot snapshot() = 0;
  virtual Picture picture() const = 0;
  // Conserved quantities and counts for the log, e.g. "circulation 0 impulse (0.1, 2)".
  virtual std::string diagnostics() const = 0;
  virtual std::string describe() const = 0; // one line: the setup
  Field &field() { return field_; }

protected:
  explicit Simulation(FieldOptions options) : field_(std::move(options)) {}
  Field field_;
  double t_ = 0, dt_ = 0; // the time reached and the step, kept by every scenario
};

// Validates the options (Error(invalid_argument) naming the option and its value) and sets up the
// initial state.
std::unique_ptr<Simulation> make_simulation(const SimulationOptions &options);

// The three simulations' pieces, for tests and for users who build their own loop.

class KhSimulation final : public Simulation {
public:
  explicit KhSimulation(const SimulationOptions &options);
  Scenario scenario() const override { return Scenario::kh; }
  void step() override; // forward Euler: z ← z + dt·u(z)
  std::int64_t size() const override { return static_cast<std::int64_t>(z_.size()); }
  Snapshot snapshot() override;
  Picture picture() const override;
  std::string diagnostics() const override;
  std::string describe() const override;
  double spacing() const { return h_; }
  std::span<const Complex> positions() const { return z_; }
  std::span<const double> strengths() const { return gamma_; }

private:
  std::vector<Complex> z_;
  std::vector<double> gamma_;
  double h_ = 0, length_ = 0, height_ = 0;
  std::int64_t nx_ = 0, ny_ = 0;
};

class GalaxySimulation final : public Simulation {
public:
  explicit GalaxySimulation(const SimulationOptions &options);
  Scenario scenario() const override { return Scenario::galaxy; }
  void step() override; // velocity Störmer–Verlet (kick, drift, force, kick)
  std::int64_t size() const override { return static_cast<std::int64_t>(z_.size()); }
  Snapshot snapshot() override;
  Picture picture() const override;
  std::string diagnostics() const override;
  std::string describe() const override;
  std::span<const Complex> positions() const { return z_; }
  std::span<const Complex> velocities() const { return v_; }
  std::span<const double> masses() const { return m_; }
  double G() const { return G_; }
  double core_radius() const { return field_.options().core_radius; }
  Complex momentum() const;        // Σ m v
  double angular_momentum() const; // Σ m (x v_y − y v_x)
  double kinetic_energy() const;
  // Σ_{i<j} G m_i m_j [log r + ½E₁(r²/δ²)], the potential whose force is the smoothed one (every
  // pair: O(n²), for tests and small runs).
  double potential_energy() const;

private:
  std::vector<Complex> z_, v_, a_;
  std::vector<double> m_;
  bool have_a_ = false;
  double G_ = 1, radius_ = 1;
};

class CylinderSimulation final : public Simulation {
public:
  explicit CylinderSimulation(const SimulationOptions &options);
  Scenario scenario() const override { return Scenario::cylinder; }
  // New wall vortices (slip cancelled), RK4 convection, random-walk diffusion, reflection of the
  // particles that crossed the wall, merging every merge_every steps.
  void step() override;
  std::int64_t size() const override { return static_cast<std::int64_t>(z_.size()); }
  Snapshot snapshot() override;
  Picture picture() const override;
  std::string diagnostics() const override;
  std::string describe() const override;
  std::span<const Complex> positions() const { return z_; }
  std::span<const double> strengths() const { return gamma_; }
  const WallVortices &wall() const { return *wall_; }
  double viscosity() const { return nu_; }
  // Tangential velocity at the control points from the free stream and the vortices (untuned).
  std::vector<double> slip();
  // Adds the wall vortices that cancel slip(); returns their strengths.
  std::vector<double> create_wall_vortices();

private:
  std::vector<Complex> velocity(std::span<const Complex> z); // at the vortices z (tuned)
  void reflect();
  void merge();
  std::vector<Complex> z_;
  std::vector<double> gamma_;
  std::unique_ptr<WallVortices> wall_;
  double nu_ = 0, radius_ = 1, speed_ = 1, delta_ = 0, distance_ = 0;
  int merge_every_ = 10;
  std::int64_t steps_ = 0, merged_ = 0, reflected_ = 0;
  std::mt19937_64 rng_;
};

} // namespace ksum::sim
