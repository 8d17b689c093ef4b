// The rotating galaxy of seed 004 Paper IV §5.2: equal masses uniform in a disc, set rotating,
// moved by 2D gravity with velocity Störmer–Verlet.
//
// 2D gravity: the Newtonian potential in the plane solves ∇²Φ = 2πGρ, Φ = G Σ_j m_j log|z − z_j|,
// and its force per mass, G m_j/r towards each mass, is the harmonic kernel's sum (gravity() in
// field.cpp). The seed's eq. (5.1) prints the 3D potential −Gm/r, whose 1/r² force no 2D
// harmonic sum represents; the 2D law is the one the FMM computes.
#include "sim/sim_detail.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numbers>
#include <numeric>
#include <omp.h>

namespace ksum::sim {
namespace {

constexpr double kPi = std::numbers::pi;

FieldOptions galaxy_field(const SimulationOptions &o) {
  const std::int64_t n = o.n > 0 ? o.n : 20000;
  detail::require(n >= 2, "galaxy", "n", static_cast<double>(n), "is too small (at least 2)");
  detail::require(o.core > 0 && std::isfinite(o.core), "galaxy", "core", o.core,
                  "must be positive (δ in mean spacings)");
  FieldOptions f = o.field;
  // Mean spacing of n points in the unit disc: sqrt(π/n).
  f.core_radius = o.core * std::sqrt(kPi / static_cast<double>(n));
  return f;
}

} // namespace

GalaxySimulation::GalaxySimulation(const SimulationOptions &o) : Simulation(galaxy_field(o)) {
  const std::int64_t n = o.n > 0 ? o.n : 20000;
  detail::require(o.dt >= 0 && std::isfinite(o.dt), "galaxy", "dt", o.dt,
                  "must be positive (0: 0.05)");
  dt_ = o.dt > 0 ? o.dt : 0.05;
  const double total_mass = 1;
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  z_.resize(static_cast<std::size_t>(n));
  for (auto &z : z_) {
    const double r = radius_ * std::sqrt(unit(rng)); // uniform in area
    const double phi = 2 * kPi * unit(rng);
    z = std::polar(r, phi);
  }
  m_.assign(static_cast<std::size_t>(n), total_mass / static_cast<double>(n));
  // Rotation from the enclosed mass: a symmetric disc pulls a body at radius r with G M(r)/r in 2D
  // (Gauss's law with the potential above), so the circular speed is v = sqrt(G M(r)),
  // counter-clockwise.
  std::vector<std::size_t> order(z_.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return std::abs(z_[a]) < std::abs(z_[b]); });
  v_.resize(z_.size());
  double inside = 0;
  for (const auto j : order) {
    const double r = std::abs(z_[j]);
    const double speed = std::sqrt(G_ * inside);
    v_[j] = r > 0 ? Complex(0, speed) * z_[j] / r : Complex(0, 0);
    inside += m_[j];
  }
  // Centre of mass at rest at the origin: the total momentum is zero.
  Complex zc(0, 0), vc(0, 0);
  for (std::size_t j = 0; j < z_.size(); ++j) {
    zc += m_[j] * z_[j];
    vc += m_[j] * v_[j];
  }
  for (std::size_t j = 0; j < z_.size(); ++j) {
    z_[j] -= zc / total_mass;
    v_[j] -= vc / total_mass;
  }
}

void GalaxySimulation::step() {
  // Velocity Störmer–Verlet (seed 004 Paper IV §5.2; Hairer–Lubich–Wanner ch. 3.1): half kick,
  // drift, force at the new positions, half kick; one force evaluation per step.
  if (!have_a_) {
    a_ = gravity(field_, z_, m_, G_, true);
    have_a_ = true;
  }
  for (std::size_t j = 0; j < z_.size(); ++j) {
    v_[j] += 0.5 * dt_ * a_[j];
    z_[j] += dt_ * v_[j];
  }
  a_ = gravity(field_, z_, m_, G_, true);
  for (std::size_t j = 0; j < z_.size(); ++j)
    v_[j] += 0.5 * dt_ * a_[j];
  t_ += dt_;
}

Snapshot GalaxySimulation::snapshot() {
  return {z_, v_, m_};
}

Picture GalaxySimulation::picture() const {
  // log10 of the surface density in a fixed window of 1.5 disc radii, so frames compare.
  const double w = 1.5 * radius_;
  const auto n = static_cast<double>(z_.size());
  const auto cells = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::sqrt(n / 2)), 64, 400);
  std::int64_t nx = 0, ny = 0;
  const double cell =
      detail::grid_for(2 * w, 2 * w, 2 * w / static_cast<double>(cells), cells, nx, ny);
  auto p = detail::splat(z_, m_, Complex(-w, -w), cell, nx, ny, core_radius());
  // Below 1e-4 of the mean disc density (1/π) the sky is empty: white.
  for (double &v : p.values)
    v = v > 1e-4 / std::numbers::pi ? std::log10(v) : std::nan("");
  return p;
}

Complex GalaxySimulation::momentum() const {
  Complex p(0, 0);
  for (std::size_t j = 0; j < z_.size(); ++j)
    p += m_[j] * v_[j];
  return p;
}

double GalaxySimulation::angular_momentum() const {
  double l = 0;
  for (std::size_t j = 0; j < z_.size(); ++j)
    l += m_[j] * std::imag(std::conj(z_[j]) * v_[j]);
  return l;
}

double GalaxySimulation::kinetic_energy() const {
  double e = 0;
  for (std::size_t j = 0; j < z_.size(); ++j)
    e += 0.5 * m_[j] * std::norm(v_[j]);
  return e;
}

double GalaxySimulation::potential_energy() const {
  // The pair potential of two Gaussian-cored masses whose force is (1 − exp(−r²/δ²))/r:
  // φ(r) = log r + ½E₁(r²/δ²), since d/dr ½E₁(r²/δ²) = −exp(−r²/δ²)/r. Near r = 0,
  // E₁(x) = −γ − log x + x − …, so φ → log δ − γ/2 + x/2.
  const double delta = core_radius();
  const auto n = static_cast<std::int64_t>(z_.size());
  const double euler_gamma = std::numbers::egamma;
  double e = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : e)
  for (std::int64_t i = 0; i < n; ++i) {
    double row = 0;
    for (std::int64_t j = i + 1; j < n; ++j) {
      const double r2 = std::norm(z_[i] - z_[j]);
      double phi;
      if (delta <= 0) {
        phi = 0.5 * std::log(r2);
      } else {
        const double x = r2 / (delta * delta);
        if (x < 1e-8)
          phi = std::log(delta) - 0.5 * euler_gamma + 0.5 * x;
        else if (x > 40) // E₁(40) < 1e-19
          phi = 0.5 * std::log(r2);
        else
          phi = 0.5 * std::log(r2) - 0.5 * std::expint(-x); // E₁(x) = −Ei(−x)
      }
      row += m_[j] * phi;
    }
    e += G_ * m_[i] * row;
  }
  return e;
}

std::string GalaxySimulation::diagnostics() const {
  const Complex p = momentum();
  return fmt::format("momentum ({:.3e}, {:.3e}), angular momentum {:.6f}, kinetic energy {:.6f}",
                     p.real(), p.imag(), angular_momentum(), kinetic_energy());
}

std::string GalaxySimulation::describe() const {
  return fmt::format("galaxy: {} equal masses (total 1) uniform in the unit disc, G = {}, rotating "
                     "with v = sqrt(G M(r)), core δ = {:.4g}, dt = {}, velocity Störmer-Verlet",
                     z_.size(), G_, core_radius(), dt_);
}

} // namespace ksum::sim
