// The vortex (Kelvin–Helmholtz) instability of seed 004 Paper IV §5.1: vortices on a regular grid
// in a long thin rectangle, the upper half of the opposite strength to the lower half (total
// circulation zero), moved with the flow by forward Euler.
#include "sim/sim_detail.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numbers>

namespace ksum::sim {
namespace {

constexpr double kHeight = 1;          // the rectangle is [0, nx·h] × [−½, ½]
constexpr double kAspect = 8;          // length / height
constexpr double kVorticity = 2;       // |ω| of each half: Γ = ±ω h²
constexpr double kPerturbation = 0.05; // sin perturbation of y (in heights) seeding the roll-up
constexpr int kWaves = 4;              // its wave count along the rectangle
constexpr double kJitter = 0.05;       // random displacement (in spacings) seeding the other modes

std::int64_t kh_rows(std::int64_t n) {
  // ny even so the two halves hold the same number of vortices (Σ Γ = 0).
  const auto half = static_cast<std::int64_t>(std::lround(std::sqrt(n / kAspect) / 2));
  return std::max<std::int64_t>(2, 2 * half);
}

FieldOptions kh_field(const SimulationOptions &o) {
  const std::int64_t n = o.n > 0 ? o.n : 20000;
  detail::require(n >= 16, "kh", "n", static_cast<double>(n), "is too small (at least 16)");
  detail::require(o.core > 0 && std::isfinite(o.core), "kh", "core", o.core,
                  "must be positive (δ in grid spacings)");
  FieldOptions f = o.field;
  f.core_radius = o.core * kHeight / static_cast<double>(kh_rows(n));
  return f;
}

} // namespace

KhSimulation::KhSimulation(const SimulationOptions &o) : Simulation(kh_field(o)) {
  const std::int64_t n = o.n > 0 ? o.n : 20000;
  detail::require(o.dt >= 0 && std::isfinite(o.dt), "kh", "dt", o.dt, "must be positive (0: 0.1)");
  dt_ = o.dt > 0 ? o.dt : 0.1;
  ny_ = kh_rows(n);
  nx_ = std::max<std::int64_t>(
      2, static_cast<std::int64_t>(std::lround(static_cast<double>(n) / static_cast<double>(ny_))));
  h_ = kHeight / static_cast<double>(ny_);
  length_ = static_cast<double>(nx_) * h_;
  height_ = kHeight;
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> jitter(-0.5 * kJitter * h_, 0.5 * kJitter * h_);
  const double gamma = kVorticity * h_ * h_;
  z_.reserve(static_cast<std::size_t>(nx_ * ny_));
  gamma_.reserve(static_cast<std::size_t>(nx_ * ny_));
  for (std::int64_t j = 0; j < ny_; ++j)
    for (std::int64_t i = 0; i < nx_; ++i) {
      const double x = (static_cast<double>(i) + 0.5) * h_;
      const double y =
          -0.5 * kHeight + (static_cast<double>(j) + 0.5) * h_ +
          kPerturbation * kHeight * std::sin(2 * std::numbers::pi * kWaves * x / length_);
      const double jx = jitter(rng);
      const double jy = jitter(rng);
      z_.emplace_back(x + jx, y + jy);
      gamma_.push_back(j < ny_ / 2 ? gamma : -gamma);
    }
}

void KhSimulation::step() {
  const auto u = vortex_velocity(field_, z_, gamma_, true);
  for (std::size_t j = 0; j < z_.size(); ++j)
    z_[j] += dt_ * u[j];
  t_ += dt_;
}

Snapshot KhSimulation::snapshot() {
  Snapshot s;
  s.z = z_;
  s.strength = gamma_;
  s.velocity = vortex_velocity(field_, z_, gamma_, false);
  return s;
}

Picture KhSimulation::picture() const {
  double x0 = z_[0].real(), x1 = x0, y0 = z_[0].imag(), y1 = y0;
  for (const auto &z : z_) {
    x0 = std::min(x0, z.real());
    x1 = std::max(x1, z.real());
    y0 = std::min(y0, z.imag());
    y1 = std::max(y1, z.imag());
  }
  const double margin = 0.1 * kHeight;
  const Complex lo(x0 - margin, y0 - margin);
  std::int64_t nx = 0, ny = 0;
  const double core = field_.options().core_radius;
  const double cell =
      detail::grid_for(x1 - x0 + 2 * margin, y1 - y0 + 2 * margin, 0.5 * core, 480, nx, ny);
  auto p = detail::splat(z_, gamma_, lo, cell, nx, ny, core); // the blobs' vorticity
  detail::normalise_signed(p);
  return p;
}

std::string KhSimulation::diagnostics() const {
  // Compensated sums: Σ Γ is zero by construction and stays so (strengths never change).
  long double total = 0, impulse_x = 0, impulse_y = 0;
  for (std::size_t j = 0; j < z_.size(); ++j) {
    total += gamma_[j];
    impulse_x += static_cast<long double>(gamma_[j]) * z_[j].imag();
    impulse_y -= static_cast<long double>(gamma_[j]) * z_[j].real();
  }
  return fmt::format("circulation {:.3e}, impulse ({:.6e}, {:.6e})", static_cast<double>(total),
                     static_cast<double>(impulse_x), static_cast<double>(impulse_y));
}

std::string KhSimulation::describe() const {
  return fmt::format(
      "kh: {} vortices ({} x {} grid, spacing h = {:.4g}) in [0, {:.4g}] x [-{}, {}], "
      "Γ = ±{:.3g} (ω = ±{}), core δ = {:.4g}, dt = {}, forward Euler",
      z_.size(), nx_, ny_, h_, length_, 0.5 * height_, 0.5 * height_, kVorticity * h_ * h_,
      kVorticity, field_.options().core_radius, dt_);
}

} // namespace ksum::sim
