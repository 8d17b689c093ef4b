// The impulsively started flow around a cylinder (seed 004 Paper IV §5.3): point vortices with a
// Gaussian core outside |z| = R, their images inside (eq. 5.5), no-slip by new vortices at the
// wall every step, RK4 convection, random-walk diffusion, merging.
#include "sim/sim_detail.hpp"

#include <ksum/error.hpp>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numbers>
#include <numeric>
#include <tuple>

namespace ksum::sim {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kMergeClearance = 3; // no merging within 3δ of the wall (see merge())

// u + iv at c of a vortex of strength Γ at p with the Gaussian core δ (0: a point vortex):
// u − iv = Γ/(2πi(c − p)) · (1 − exp(−|c − p|²/δ²)).
Complex blob_velocity(Complex c, Complex p, double gamma, double core) {
  const Complex dz = c - p;
  const double r2 = std::norm(dz);
  if (!(r2 > 0))
    return {0, 0};
  const double f = core > 0 ? -std::expm1(-r2 / (core * core)) : 1.0;
  return std::conj(gamma * f / (Complex(0, 2 * kPi) * dz));
}

} // namespace

double tangential(Complex velocity, Complex at) {
  return std::imag(velocity * std::conj(at)) / std::abs(at);
}
double normal(Complex velocity, Complex at) {
  return std::real(velocity * std::conj(at)) / std::abs(at);
}

std::vector<Complex> cylinder_velocity(Field &field, std::span<const Complex> z,
                                       std::span<const double> gamma,
                                       std::span<const Complex> targets, double speed,
                                       double radius, bool tuned) {
  if (z.size() != gamma.size())
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("simulate: {} vortices but {} strengths", z.size(), gamma.size()));
  const std::size_t n = z.size();
  const double r2 = radius * radius;
  std::vector<Complex> s(targets.size(), Complex(0, 0));
  if (n > 0) {
    // Eq. (5.5): each vortex Γ_k at z_k and its image −Γ_k at R²/conj(z_k); one sum over both.
    std::vector<Complex> src(2 * n), q(2 * n);
    for (std::size_t k = 0; k < n; ++k) {
      src[k] = z[k];
      src[n + k] = r2 / std::conj(z[k]);
      q[k] = gamma[k];
      q[n + k] = -gamma[k];
    }
    s = field.sum(src, q, targets, tuned);
  }
  std::vector<Complex> u(targets.size());
  const Complex inv_2pi_i(0, -1 / (2 * kPi)); // 1/(2πi)
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const Complex w = speed * (1.0 - r2 / (targets[i] * targets[i])) + inv_2pi_i * s[i];
    u[i] = std::conj(w);
  }
  return u;
}

struct WallVortices::Impl {
  std::vector<Complex> control, position;
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr;
};

WallVortices::WallVortices(std::int64_t count, double radius, double distance, double core_radius,
                           double smoothing)
    : impl_(std::make_unique<Impl>()) {
  detail::require(count >= 3, "cylinder", "wall vortices", static_cast<double>(count),
                  "is too few (at least 3)");
  detail::require(radius > 0 && std::isfinite(radius), "cylinder", "radius", radius,
                  "must be positive");
  detail::require(distance > 0 && std::isfinite(distance), "cylinder", "wall distance", distance,
                  "must be positive");
  detail::require(smoothing >= 0 && std::isfinite(smoothing), "cylinder", "wall smoothing",
                  smoothing, "must be ≥ 0");
  auto &I = *impl_;
  const auto m = static_cast<Eigen::Index>(count);
  I.control.resize(static_cast<std::size_t>(m));
  I.position.resize(static_cast<std::size_t>(m));
  for (Eigen::Index k = 0; k < m; ++k) {
    const Complex e = std::polar(1.0, 2 * kPi * (static_cast<double>(k) + 0.5) / count);
    I.control[k] = radius * e;
    I.position[k] = (radius + distance) * e;
  }
  // Influence of a unit new vortex (and its image −1 at R²/conj(p), eq. 5.5) on the tangential
  // velocity at each control point, with the same core as the FMM's near field.
  Eigen::MatrixXd a(m, m);
  for (Eigen::Index i = 0; i < m; ++i)
    for (Eigen::Index k = 0; k < m; ++k) {
      const Complex p = I.position[k], img = radius * radius / std::conj(p);
      const Complex v = blob_velocity(I.control[i], p, 1.0, core_radius) +
                        blob_velocity(I.control[i], img, -1.0, core_radius);
      a(i, k) = tangential(v, I.control[i]);
    }
  // Least squares with a first-difference penalty: min |Aγ + slip|² + λ²|Dγ|², (Dγ)_k = γ_k −
  // γ_{k+1}, as one QR of [A; λD]. The uniform and slowly varying modes of γ pass untouched (D
  // annihilates the uniform one), while the alternating mode, whose influence on the wall is
  // weak (e^{−π} for vortices one spacing out), is damped instead of amplified from the noisy slip
  // of the blobs already near the wall. λ is `smoothing` times the uniform mode's response.
  Eigen::MatrixXd aug = Eigen::MatrixXd::Zero(2 * m, m);
  aug.topRows(m) = a;
  const double lam = smoothing * std::abs(a.row(0).sum());
  for (Eigen::Index k = 0; k < m; ++k) {
    aug(m + k, k) = lam;
    aug(m + k, (k + 1) % m) -= lam;
  }
  I.qr.compute(aug);
  if (I.qr.rank() < m)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("simulate cylinder: the wall-vortex system is singular (rank {} of "
                            "{}); move the vortices further from the wall than {}",
                            I.qr.rank(), m, distance));
}

WallVortices::~WallVortices() = default;
WallVortices::WallVortices(WallVortices &&) noexcept = default;
WallVortices &WallVortices::operator=(WallVortices &&) noexcept = default;

std::span<const Complex> WallVortices::control_points() const {
  return impl_->control;
}
std::span<const Complex> WallVortices::positions() const {
  return impl_->position;
}

std::vector<double> WallVortices::solve(std::span<const double> slip) const {
  const auto m = static_cast<Eigen::Index>(impl_->control.size());
  if (static_cast<Eigen::Index>(slip.size()) != m)
    throw Error(
        ErrorCode::shape_mismatch,
        fmt::format("simulate cylinder: {} slip values for {} control points", slip.size(), m));
  Eigen::VectorXd b = Eigen::VectorXd::Zero(2 * m);
  for (Eigen::Index i = 0; i < m; ++i)
    b(i) = -slip[static_cast<std::size_t>(i)];
  const Eigen::VectorXd g = impl_->qr.solve(b);
  return {g.data(), g.data() + m};
}

namespace {

FieldOptions cylinder_field(const SimulationOptions &o) {
  const std::int64_t m = o.n > 0 ? o.n : 128;
  detail::require(m >= 8 && m <= 1000000, "cylinder", "n (wall vortices)", static_cast<double>(m),
                  "outside 8 … 1e6");
  detail::require(o.core > 0 && std::isfinite(o.core), "cylinder", "core", o.core,
                  "must be positive (δ in wall spacings 2πR/n)");
  FieldOptions f = o.field;
  f.core_radius = o.core * 2 * kPi / static_cast<double>(m);
  return f;
}

} // namespace

CylinderSimulation::CylinderSimulation(const SimulationOptions &o)
    : Simulation(cylinder_field(o)), rng_(o.seed) {
  const std::int64_t m = o.n > 0 ? o.n : 128;
  dt_ = o.dt > 0 ? o.dt : 0.05;
  detail::require(o.dt >= 0 && std::isfinite(o.dt), "cylinder", "dt", o.dt,
                  "must be positive (0: 0.05)");
  detail::require(o.reynolds > 0 && std::isfinite(o.reynolds), "cylinder", "Re", o.reynolds,
                  "must be positive");
  detail::require(o.merge_every >= 0, "cylinder", "merge every", o.merge_every,
                  "must be ≥ 0 (0: never)");
  merge_every_ = o.merge_every;
  nu_ = speed_ * 2 * radius_ / o.reynolds;
  delta_ = field_.options().core_radius;
  // Seed 004 §5.3 puts the line at ½√(νΔt), the depth the vorticity diffuses in one step. With one
  // Gaussian core δ for every particle, a vortex closer than δ to the wall is nearly cancelled
  // there by its own image, and the solve would return strengths ~δ/d times the slip; so the line
  // sits at least δ out.
  distance_ = std::max(0.5 * std::sqrt(nu_ * dt_), delta_);
  wall_ = std::make_unique<WallVortices>(m, radius_, distance_, delta_);
}

std::vector<Complex> CylinderSimulation::velocity(std::span<const Complex> z) {
  return cylinder_velocity(field_, z, gamma_, z, speed_, radius_, true);
}

std::vector<double> CylinderSimulation::slip() {
  const auto c = wall_->control_points();
  const auto u = cylinder_velocity(field_, z_, gamma_, c, speed_, radius_, false);
  std::vector<double> s(c.size());
  for (std::size_t i = 0; i < c.size(); ++i)
    s[i] = tangential(u[i], c[i]);
  return s;
}

std::vector<double> CylinderSimulation::create_wall_vortices() {
  const auto g = wall_->solve(slip());
  const auto p = wall_->positions();
  z_.insert(z_.end(), p.begin(), p.end());
  gamma_.insert(gamma_.end(), g.begin(), g.end());
  return g;
}

void CylinderSimulation::reflect() {
  // A random-walk step that crosses the wall is mirrored back into the fluid (Chorin's reflecting
  // wall), which keeps the circulation the wall vortices just created.
  for (auto &z : z_) {
    const double r = std::abs(z);
    if (r < radius_) {
      z = r > 0 ? z * ((2 * radius_ - r) / r) : Complex(radius_ + distance_, 0);
      ++reflected_;
    }
  }
}

void CylinderSimulation::merge() {
  // Same-sign vortices in one δ × δ cell become one at their circulation-weighted centre, which
  // keeps the total circulation Σ Γ and the linear impulse Σ Γ z exactly (seed 004 §5.3 merges
  // with the VRM every 10th step for the same purpose: a homogeneous particle distribution).
  // Groups with a vortex within kMergeClearance·δ of the wall are left alone: a merged vortex there
  // changes the slip the next wall vortices must cancel, and merging in the wall layer fed back
  // into ever stronger wall vortices in our runs.
  const std::size_t n = z_.size();
  const double cell = delta_;
  using Key = std::tuple<std::int64_t, std::int64_t, bool>;
  std::vector<Key> key(n);
  for (std::size_t j = 0; j < n; ++j)
    key[j] = {static_cast<std::int64_t>(std::floor(z_[j].real() / cell)),
              static_cast<std::int64_t>(std::floor(z_[j].imag() / cell)), gamma_[j] > 0};
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return key[a] < key[b]; });
  std::vector<Complex> z;
  std::vector<double> g;
  z.reserve(n);
  g.reserve(n);
  for (std::size_t a = 0; a < n;) {
    std::size_t b = a;
    double sg = 0;
    Complex sz(0, 0);
    for (; b < n && key[order[b]] == key[order[a]]; ++b) {
      sg += gamma_[order[b]];
      sz += gamma_[order[b]] * z_[order[b]];
    }
    bool near_wall = false;
    for (std::size_t k = a; k < b; ++k)
      near_wall = near_wall || std::abs(z_[order[k]]) < radius_ + kMergeClearance * delta_;
    if (b - a == 1 || sg == 0 || near_wall) {
      for (std::size_t k = a; k < b; ++k) {
        z.push_back(z_[order[k]]);
        g.push_back(gamma_[order[k]]);
      }
    } else {
      z.push_back(sz / sg);
      g.push_back(sg);
      merged_ += static_cast<std::int64_t>(b - a - 1);
    }
    a = b;
  }
  z_ = std::move(z);
  gamma_ = std::move(g);
  reflect();
}

void CylinderSimulation::step() {
  create_wall_vortices();
  // RK4 convection (seed 004 §5.3: fourth order for the convection-dominated high-Re flow).
  const std::size_t n = z_.size();
  const auto k1 = velocity(z_);
  std::vector<Complex> zs(n);
  for (std::size_t j = 0; j < n; ++j)
    zs[j] = z_[j] + 0.5 * dt_ * k1[j];
  const auto k2 = velocity(zs);
  for (std::size_t j = 0; j < n; ++j)
    zs[j] = z_[j] + 0.5 * dt_ * k2[j];
  const auto k3 = velocity(zs);
  for (std::size_t j = 0; j < n; ++j)
    zs[j] = z_[j] + dt_ * k3[j];
  const auto k4 = velocity(zs);
  for (std::size_t j = 0; j < n; ++j)
    z_[j] += dt_ / 6 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
  // Diffusion by Chorin's random walk: each vortex moves by N(0, 2νΔt) in x and y, the heat
  // equation's Green's function for one step (the seed's VRM redistributes strengths instead).
  const double sigma = std::sqrt(2 * nu_ * dt_);
  std::normal_distribution<double> normal01(0.0, 1.0);
  for (auto &z : z_) {
    const double dx = normal01(rng_);
    const double dy = normal01(rng_);
    z += sigma * Complex(dx, dy);
  }
  reflect();
  ++steps_;
  if (merge_every_ > 0 && steps_ % merge_every_ == 0)
    merge();
  t_ += dt_;
}

Snapshot CylinderSimulation::snapshot() {
  Snapshot s;
  s.z = z_;
  s.strength = gamma_;
  s.velocity = cylinder_velocity(field_, z_, gamma_, z_, speed_, radius_, false);
  return s;
}

Picture CylinderSimulation::picture() const {
  double xmax = 4 * radius_, ymax = 1.5 * radius_;
  for (const auto &z : z_) {
    xmax = std::max(xmax, std::min(z.real() + 0.5 * radius_, 20 * radius_));
    ymax = std::max(ymax, std::min(std::abs(z.imag()) + 0.5 * radius_, 5 * radius_));
  }
  const Complex lo(-1.5 * radius_, -ymax);
  std::int64_t nx = 0, ny = 0;
  const double cell = detail::grid_for(xmax - lo.real(), 2 * ymax, 0.5 * delta_, 400, nx, ny);
  auto p = detail::splat(z_, gamma_, lo, cell, nx, ny, delta_); // the blobs' vorticity
  detail::normalise_signed(p);
  for (std::int64_t iy = 0; iy < ny; ++iy)
    for (std::int64_t ix = 0; ix < nx; ++ix) {
      const Complex c =
          lo + cell * Complex(static_cast<double>(ix) + 0.5, static_cast<double>(iy) + 0.5);
      if (std::abs(c) < radius_)
        p.values[static_cast<std::size_t>(ix + nx * iy)] = std::nan("");
    }
  return p;
}

std::string CylinderSimulation::diagnostics() const {
  double total = 0, positive = 0;
  for (const double g : gamma_) {
    total += g;
    positive += std::max(g, 0.0);
  }
  return fmt::format("vortices {}, circulation {:.3e} (positive {:.4f}), merged {}, reflected {}",
                     z_.size(), total, positive, merged_, reflected_);
}

std::string CylinderSimulation::describe() const {
  return fmt::format(
      "cylinder: R = {}, V∞ = {}, Re = {} (ν = {:.3g}), {} wall vortices per step "
      "at distance {:.3g}, core δ = {:.4g}, dt = {}, RK4 + random walk (σ = {:.3g}), "
      "merge every {} steps",
      radius_, speed_, 2 * radius_ * speed_ / nu_, nu_, wall_->control_points().size(), distance_,
      delta_, dt_, std::sqrt(2 * nu_ * dt_), merge_every_);
}

} // namespace ksum::sim
