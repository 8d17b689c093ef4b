// The simulations of seed 004 Paper IV §5 (ksum::sim): their physics against analytic solutions
// and direct sums written here from the formulas, their invariants, and their option errors.
#include "sim/sim_detail.hpp"
#include "support/expect_error.hpp"

#include <ksum/simulate.hpp>

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <numbers>
#include <numeric>

#ifdef KSUM_CLI_PATH
#include "support/cli_run.hpp"

#include <ksum/io.hpp>
#endif

namespace {

using ksum::sim::Complex;
constexpr double kPi = std::numbers::pi;

// One thread for the small sums: many short OpenMP regions mostly time the barriers when the
// machine is shared.
ksum::sim::FieldOptions direct_field(double core = 0) {
  ksum::sim::FieldOptions f;
  f.method = ksum::Method::direct;
  f.core_radius = core;
  f.autotune = ksum::AutotuneScheme::off;
  f.threads = 1;
  return f;
}

double max_abs(const std::vector<Complex> &v) {
  double m = 0;
  for (const auto &x : v)
    m = std::max(m, std::abs(x));
  return m;
}

double max_diff(const std::vector<Complex> &a, const std::vector<Complex> &b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// Velocity u + iv of Gaussian-cored point vortices, every pair, in real arithmetic: a vortex Γ at
// (x_j, y_j) turns the fluid counter-clockwise about itself, u = −Γ(y − y_j)/(2πr²) f,
// v = Γ(x − x_j)/(2πr²) f with f = 1 − exp(−r²/δ²).
std::vector<Complex> vortex_reference(const std::vector<Complex> &z,
                                      const std::vector<double> &gamma, double core) {
  std::vector<Complex> u(z.size());
  for (std::size_t i = 0; i < z.size(); ++i) {
    long double ux = 0, uy = 0;
    for (std::size_t j = 0; j < z.size(); ++j) {
      const long double dx = z[i].real() - z[j].real(), dy = z[i].imag() - z[j].imag();
      const long double r2 = dx * dx + dy * dy;
      if (i == j || r2 == 0)
        continue;
      const long double f = core > 0 ? 1 - std::exp(-r2 / (core * core)) : 1;
      ux += -gamma[j] * dy / (2 * kPi * r2) * f;
      uy += gamma[j] * dx / (2 * kPi * r2) * f;
    }
    u[i] = {static_cast<double>(ux), static_cast<double>(uy)};
  }
  return u;
}

TEST(VortexPair, VelocitiesAreTheAnalyticRotationAndTranslation) {
  // Two vortices Γ1, Γ2 a distance d apart rotate about their centre of vorticity with
  // Ω = (Γ1 + Γ2)/(2πd²), counter-clockwise for positive Γ; an opposite pair (Γ, −Γ) translates
  // with speed Γ/(2πd) perpendicular to the line between them.
  ksum::sim::Field field(direct_field());
  const std::vector<Complex> z{{-0.3, 0.1}, {0.5, 0.7}};
  const double d = std::abs(z[1] - z[0]);
  const std::vector<double> g{1.0, 3.0};
  const auto u = ksum::sim::vortex_velocity(field, z, g);
  const Complex zc = (g[0] * z[0] + g[1] * z[1]) / (g[0] + g[1]);
  const double omega = (g[0] + g[1]) / (2 * kPi * d * d);
  for (int k = 0; k < 2; ++k)
    EXPECT_LT(std::abs(u[k] - Complex(0, omega) * (z[k] - zc)), 1e-15) << k;

  const std::vector<double> opposite{2.0, -2.0};
  const auto w = ksum::sim::vortex_velocity(field, z, opposite);
  EXPECT_LT(std::abs(w[0] - w[1]), 1e-15);
  EXPECT_NEAR(std::abs(w[0]), 2.0 / (2 * kPi * d), 1e-15);
  // Γ > 0 at z0 pushes z1 to the left of the direction z0 → z1 (seen from z0): i (z1 − z0).
  EXPECT_GT(std::real(std::conj(w[1]) * Complex(0, 1) * (z[1] - z[0])), 0);
}

TEST(VortexPair, RungeKuttaOrbitFollowsTheAnalyticRotation) {
  // A quarter turn of an equal pair with the FMM (a tiny core, e^{-100} ≈ 0) and RK4. One thread:
  // 800 calls on two points would mostly time OpenMP's barriers on a loaded machine.
  ksum::sim::FieldOptions f;
  f.core_radius = 0.1;
  f.threads = 1;
  ksum::sim::Field field(f);
  std::vector<Complex> z{{-1, 0}, {1, 0}};
  const std::vector<double> g{1.0, 1.0};
  const double omega = 2.0 / (2 * kPi * 4.0);
  const double t_end = 0.5 * kPi / omega;
  const int steps = 200;
  const double dt = t_end / steps;
  for (int s = 0; s < steps; ++s) {
    const auto k1 = ksum::sim::vortex_velocity(field, z, g);
    std::vector<Complex> y(2);
    for (int k = 0; k < 2; ++k)
      y[k] = z[k] + 0.5 * dt * k1[k];
    const auto k2 = ksum::sim::vortex_velocity(field, y, g);
    for (int k = 0; k < 2; ++k)
      y[k] = z[k] + 0.5 * dt * k2[k];
    const auto k3 = ksum::sim::vortex_velocity(field, y, g);
    for (int k = 0; k < 2; ++k)
      y[k] = z[k] + dt * k3[k];
    const auto k4 = ksum::sim::vortex_velocity(field, y, g);
    for (int k = 0; k < 2; ++k)
      z[k] += dt / 6 * (k1[k] + 2.0 * k2[k] + 2.0 * k3[k] + k4[k]);
  }
  // Counter-clockwise by 90°: (1, 0) → (0, 1).
  EXPECT_LT(std::abs(z[1] - Complex(0, 1)), 1e-9);
  EXPECT_LT(std::abs(z[0] - Complex(0, -1)), 1e-9);
}

TEST(Kh, CirculationIsConservedExactlyAndTheFmmMatchesTheDirectSum) {
  ksum::sim::SimulationOptions o;
  o.scenario = ksum::sim::Scenario::kh;
  o.n = 4000;
  o.field.tolerance = 1e-6;
  ksum::sim::KhSimulation kh(o);
  ASSERT_NEAR(static_cast<double>(kh.size()), 4000, 40); // a grid of nx × ny (ny even)
  const std::vector<double> g0(kh.strengths().begin(), kh.strengths().end());
  long double total = 0, abs_total = 0;
  for (const double g : g0) {
    total += g;
    abs_total += std::abs(g);
  }
  EXPECT_LE(std::abs(static_cast<double>(total)), 1e-14 * static_cast<double>(abs_total));
  for (int s = 0; s < 5; ++s)
    kh.step();
  EXPECT_TRUE(std::equal(g0.begin(), g0.end(), kh.strengths().begin())); // bit for bit

  // The FMM's velocities against every pair, at the moved positions, with the simulation's core.
  const std::vector<Complex> z(kh.positions().begin(), kh.positions().end());
  const double core = kh.field().options().core_radius;
  EXPECT_NEAR(core, kh.spacing(), 1e-15);
  const auto fmm = ksum::sim::vortex_velocity(kh.field(), z, g0, false);
  const auto ref = vortex_reference(z, g0, core);
  EXPECT_LE(max_diff(fmm, ref), 10 * 1e-6 * max_abs(ref));
  ksum::sim::Field direct(direct_field(core));
  EXPECT_LE(max_diff(ksum::sim::vortex_velocity(direct, z, g0), ref), 1e-12 * max_abs(ref));
  EXPECT_EQ(kh.field().take_stats().tuned_calls, 5); // one FMM call per Euler step, tuned
}

TEST(Kh, OneEulerStepMovesEachVortexByDtTimesItsVelocity) {
  ksum::sim::SimulationOptions o;
  o.n = 200;
  o.dt = 0.05;
  o.field = direct_field();
  ksum::sim::KhSimulation kh(o);
  const std::vector<Complex> z0(kh.positions().begin(), kh.positions().end());
  const std::vector<double> g(kh.strengths().begin(), kh.strengths().end());
  const auto u = vortex_reference(z0, g, kh.field().options().core_radius);
  kh.step();
  for (std::size_t j = 0; j < z0.size(); ++j)
    EXPECT_LT(std::abs(kh.positions()[j] - (z0[j] + 0.05 * u[j])), 1e-14) << j;
  EXPECT_DOUBLE_EQ(kh.time(), 0.05);
}

TEST(Galaxy, GravityIsTheTwoDimensionalNewtonianForce) {
  // a_i = −G Σ_j m_j (r_i − r_j)/|r_i − r_j|² f(r) (2D gravity: force ∝ 1/r), in real arithmetic.
  ksum::sim::SimulationOptions o;
  o.scenario = ksum::sim::Scenario::galaxy;
  o.n = 1500;
  ksum::sim::GalaxySimulation gal(o);
  const std::vector<Complex> z(gal.positions().begin(), gal.positions().end());
  const std::vector<double> m(gal.masses().begin(), gal.masses().end());
  const double core = gal.core_radius();
  std::vector<Complex> ref(z.size());
  for (std::size_t i = 0; i < z.size(); ++i) {
    long double ax = 0, ay = 0;
    for (std::size_t j = 0; j < z.size(); ++j) {
      if (i == j)
        continue;
      const long double dx = z[i].real() - z[j].real(), dy = z[i].imag() - z[j].imag();
      const long double r2 = dx * dx + dy * dy;
      const long double f = 1 - std::exp(-r2 / (core * core));
      ax -= m[j] * dx / r2 * f;
      ay -= m[j] * dy / r2 * f;
    }
    ref[i] = {static_cast<double>(ax), static_cast<double>(ay)};
  }
  const auto fmm = ksum::sim::gravity(gal.field(), z, m, 1.0, false);
  EXPECT_LE(max_diff(fmm, ref), 10 * 1e-6 * max_abs(ref));
  // The force is minus the gradient of potential_energy(): a central difference in x_0.
  ksum::sim::Field direct(direct_field(core));
  const auto a = ksum::sim::gravity(direct, z, m, 1.0);
  EXPECT_LE(max_diff(a, ref), 1e-12 * max_abs(ref));
}

TEST(Galaxy, ForceIsMinusTheGradientOfThePotentialEnergy) {
  // φ(r) = log r + ½E₁(r²/δ²) has dφ/dr = (1 − exp(−r²/δ²))/r: the pair potential of the smoothed
  // force. potential_energy() must be Σ_{i<j} G m_i m_j φ(r_ij), and −∂E/∂z_0 = m_0 a_0.
  ksum::sim::SimulationOptions o;
  o.scenario = ksum::sim::Scenario::galaxy;
  o.n = 60;
  o.field = direct_field();
  ksum::sim::GalaxySimulation gal(o);
  const std::vector<Complex> z(gal.positions().begin(), gal.positions().end());
  const std::vector<double> m(gal.masses().begin(), gal.masses().end());
  const double d = gal.core_radius();
  const auto phi = [d](double r) { return std::log(r) - 0.5 * std::expint(-r * r / (d * d)); };
  double e = 0;
  for (std::size_t i = 0; i < z.size(); ++i)
    for (std::size_t j = i + 1; j < z.size(); ++j)
      e += m[i] * m[j] * phi(std::abs(z[i] - z[j]));
  EXPECT_NEAR(gal.potential_energy(), e, 1e-13 * std::abs(e));

  ksum::sim::Field field(direct_field(d));
  const auto a = ksum::sim::gravity(field, z, m, 1.0);
  const auto energy0 = [&](Complex z0) {
    double s = 0;
    for (std::size_t j = 1; j < z.size(); ++j)
      s += m[0] * m[j] * phi(std::abs(z0 - z[j]));
    return s;
  };
  const double h = 1e-6;
  const double fx = -(energy0(z[0] + h) - energy0(z[0] - h)) / (2 * h);
  const double fy = -(energy0(z[0] + Complex(0, h)) - energy0(z[0] - Complex(0, h))) / (2 * h);
  EXPECT_NEAR(fx, m[0] * a[0].real(), 1e-6 * std::abs(m[0] * a[0]));
  EXPECT_NEAR(fy, m[0] * a[0].imag(), 1e-6 * std::abs(m[0] * a[0]));
}

TEST(Galaxy, VelocityVerletConservesMomentumAndEnergy) {
  ksum::sim::SimulationOptions o;
  o.scenario = ksum::sim::Scenario::galaxy;
  o.n = 800;
  o.dt = 0.01;
  o.field = direct_field();
  ksum::sim::GalaxySimulation exact(o);
  const double e0 = exact.kinetic_energy() + exact.potential_energy();
  const double l0 = exact.angular_momentum();
  double p_scale = 0; // Σ m |v|: the size momentum errors are measured against
  for (std::size_t j = 0; j < exact.velocities().size(); ++j)
    p_scale += exact.masses()[j] * std::abs(exact.velocities()[j]);
  EXPECT_LT(std::abs(exact.momentum()), 1e-15 * p_scale);
  for (int s = 0; s < 20; ++s)
    exact.step();
  const double e1 = exact.kinetic_energy() + exact.potential_energy();
  // Pairwise antisymmetric forces: momentum and angular momentum to rounding.
  EXPECT_LT(std::abs(exact.momentum()), 1e-13 * p_scale);
  EXPECT_NEAR(exact.angular_momentum(), l0, 1e-12 * std::abs(l0));
  // Symplectic Verlet: the energy error stays O(dt²) small over the run.
  EXPECT_LT(std::abs(e1 - e0), 1e-5 * std::abs(e0)) << e0 << " -> " << e1;

  // With the FMM the forces are antisymmetric only to the tolerance.
  o.field = ksum::sim::FieldOptions{};
  o.field.tolerance = 1e-8;
  o.field.threads = 1;
  ksum::sim::GalaxySimulation fmm(o);
  for (int s = 0; s < 20; ++s)
    fmm.step();
  EXPECT_LT(std::abs(fmm.momentum()), 1e-6 * p_scale);
  const double e2 = fmm.kinetic_energy() + fmm.potential_energy();
  EXPECT_LT(std::abs(e2 - e0), 1e-5 * std::abs(e0));
  // And the FMM run follows the exact one.
  double apart = 0;
  for (std::size_t j = 0; j < fmm.positions().size(); ++j)
    apart = std::max(apart, std::abs(fmm.positions()[j] - exact.positions()[j]));
  EXPECT_LT(apart, 1e-6);
}

TEST(Cylinder, FreeStreamHasNoNormalVelocityAndSlipTwoVSinTheta) {
  ksum::sim::Field field(direct_field());
  std::vector<Complex> wall;
  for (int k = 0; k < 24; ++k)
    wall.push_back(std::polar(1.0, 2 * kPi * (k + 0.3) / 24));
  const double speed = 1.7;
  const auto u = ksum::sim::cylinder_velocity(field, {}, {}, wall, speed, 1.0);
  for (std::size_t k = 0; k < wall.size(); ++k) {
    const double th = std::arg(wall[k]);
    EXPECT_NEAR(ksum::sim::normal(u[k], wall[k]), 0, 1e-14) << k;
    // Counter-clockwise component −2V∞ sin θ: the flow runs over the top from left to right.
    EXPECT_NEAR(ksum::sim::tangential(u[k], wall[k]), -2 * speed * std::sin(th), 1e-14) << k;
  }
  // Far away the stream is uniform.
  const std::vector<Complex> far{{1e4, 3e3}};
  EXPECT_LT(std::abs(ksum::sim::cylinder_velocity(field, {}, {}, far, speed, 1.0)[0] - speed),
            1e-7);
}

TEST(Cylinder, ImageVorticesKeepTheWallImpermeable) {
  // Point vortices (no core) with their images (eq. 5.5): no flow through |z| = R.
  ksum::sim::Field field(direct_field());
  const std::vector<Complex> z{{1.3, 0.4}, {-0.2, 1.6}, {2.5, -1.1}, {-1.05, -0.2}};
  const std::vector<double> g{0.7, -1.2, 0.4, 2.0};
  std::vector<Complex> wall;
  for (int k = 0; k < 50; ++k)
    wall.push_back(2.0 * std::polar(1.0, 2 * kPi * k / 50));
  const auto u = ksum::sim::cylinder_velocity(field, z, g, wall, 1.0, 2.0);
  double worst = 0, scale = 0;
  for (std::size_t k = 0; k < wall.size(); ++k) {
    worst = std::max(worst, std::abs(ksum::sim::normal(u[k], wall[k])));
    scale = std::max(scale, std::abs(u[k]));
  }
  EXPECT_LT(worst, 1e-13 * scale);
  EXPECT_GT(scale, 0.1);
}

ksum::sim::SimulationOptions cylinder_options(ksum::Method method) {
  ksum::sim::SimulationOptions o;
  o.scenario = ksum::sim::Scenario::cylinder;
  o.n = 64;
  o.dt = 0.05;
  o.reynolds = 1000;
  o.field.method = method;
  o.field.threads = 1;
  return o;
}

TEST(Cylinder, WallVorticesCancelTheSlipAtTheControlPoints) {
  // The vortices of a short run, then new wall vortices from the exact solve (smoothing 0): the
  // slip at the control points, recomputed from scratch with the images, vanishes.
  ksum::sim::CylinderSimulation run(cylinder_options(ksum::Method::direct));
  for (int s = 0; s < 3; ++s)
    run.step();
  ASSERT_GT(run.size(), 150);
  const double core = run.field().options().core_radius;
  const ksum::sim::WallVortices wall(64, 1.0, 2 * core, core, 0.0);
  const auto c = wall.control_points();
  for (const auto method : {ksum::Method::direct, ksum::Method::fmm}) {
    ksum::sim::FieldOptions f;
    f.method = method;
    f.core_radius = core;
    f.threads = 1;
    ksum::sim::Field field(f);
    std::vector<Complex> z(run.positions().begin(), run.positions().end());
    std::vector<double> g(run.strengths().begin(), run.strengths().end());
    const auto slip = [&] {
      const auto u = ksum::sim::cylinder_velocity(field, z, g, c, 1.0, 1.0);
      std::vector<double> s(c.size());
      for (std::size_t i = 0; i < c.size(); ++i)
        s[i] = ksum::sim::tangential(u[i], c[i]);
      return s;
    };
    const auto before = slip();
    const auto gamma = wall.solve(before);
    z.insert(z.end(), wall.positions().begin(), wall.positions().end());
    g.insert(g.end(), gamma.begin(), gamma.end());
    const auto after = slip();
    double worst_before = 0, worst = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      worst_before = std::max(worst_before, std::abs(before[i]));
      worst = std::max(worst, std::abs(after[i]));
    }
    EXPECT_GT(worst_before, 0.1);
    const double tol = method == ksum::Method::direct ? 1e-10 : 1e-4;
    EXPECT_LT(worst, tol * worst_before) << "direct " << (method == ksum::Method::direct);
  }
}

TEST(Cylinder, TheSmoothedWallSolveCancelsTheImpulsiveSlipAndKeepsKelvin) {
  // The simulation's wall (smoothing 0.5): the first step's slip, the free stream's smooth
  // −2V∞ sin θ, is cancelled to 0.5 %; later the noisy part of the slip is reduced, not removed.
  ksum::sim::CylinderSimulation cyl(cylinder_options(ksum::Method::direct));
  const auto first = cyl.slip();
  for (std::size_t i = 0; i < first.size(); ++i)
    EXPECT_NEAR(first[i], -2 * std::sin(std::arg(cyl.wall().control_points()[i])), 1e-14);
  cyl.create_wall_vortices();
  for (const double s : cyl.slip())
    EXPECT_LT(std::abs(s), 5e-3 * 2); // of the largest slip, 2V∞
  for (int s = 0; s < 4; ++s)
    cyl.step();
  const auto rms = [](const std::vector<double> &v) {
    double a = 0;
    for (const double x : v)
      a += x * x;
    return std::sqrt(a / static_cast<double>(v.size()));
  };
  const double before = rms(cyl.slip());
  cyl.create_wall_vortices();
  EXPECT_LT(rms(cyl.slip()), 0.8 * before);
  // Zero slip around the wall is Kelvin's theorem for eq. (5.5): the vortices' circulation
  // cancels the images' inside the wall, so the total stays close to zero.
  double total = 0, abs_total = 0;
  for (const double x : cyl.strengths()) {
    total += x;
    abs_total += std::abs(x);
  }
  EXPECT_LT(std::abs(total), 5e-2 * abs_total);
}

TEST(Cylinder, ParticlesAreCreatedEachStepStayOutsideAndMergeConservesCirculation) {
  auto o = cylinder_options(ksum::Method::direct);
  o.dt = 0.1;
  o.merge_every = 0;
  ksum::sim::CylinderSimulation plain(o);
  o.merge_every = 12;
  ksum::sim::CylinderSimulation merged(o);
  for (int s = 0; s < 12; ++s) {
    plain.step();
    merged.step();
  }
  EXPECT_EQ(plain.size(), 12 * 64);
  EXPECT_LT(merged.size(), plain.size());
  const auto sums = [](const ksum::sim::CylinderSimulation &c) {
    long double g = 0;
    Complex impulse(0, 0);
    for (std::size_t j = 0; j < c.positions().size(); ++j) {
      g += c.strengths()[j];
      impulse += c.strengths()[j] * c.positions()[j];
    }
    return std::pair{static_cast<double>(g), impulse};
  };
  const auto [g_plain, i_plain] = sums(plain);
  const auto [g_merged, i_merged] = sums(merged);
  double scale = 0;
  for (const double x : plain.strengths())
    scale += std::abs(x);
  EXPECT_NEAR(g_merged, g_plain, 1e-13 * scale);
  EXPECT_LT(std::abs(i_merged - i_plain), 1e-12 * scale);
  for (const auto &c : {&plain, &merged})
    for (const auto &z : c->positions())
      EXPECT_GE(std::abs(z), 1.0);
}

TEST(Field, ThePlansCoreTooWideForTheTreeFallsBackToACoarserTreeAndStaysAccurate) {
  // δ = 0.05 on 3000 points in the unit square: the default tree (7 levels) has weakly coupled
  // boxes far closer than δ·sqrt(log(10/tol)), which the plan refuses; the field coarsens it.
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Complex> z(3000);
  std::vector<double> g(z.size());
  for (std::size_t j = 0; j < z.size(); ++j) {
    z[j] = {u(rng), u(rng)};
    g[j] = u(rng) - 0.5;
  }
  ksum::sim::FieldOptions f;
  f.core_radius = 0.05;
  f.core_mode = ksum::sim::CoreMode::plan;
  f.levels = 7;
  ksum::sim::Field field(f);
  const auto fmm = ksum::sim::vortex_velocity(field, z, g);
  const auto st = field.take_stats();
  EXPECT_GT(st.core_retries, 0);
  EXPECT_LT(st.levels, 7);
  EXPECT_EQ(st.requested_levels, 7);
  const auto ref = vortex_reference(z, g, 0.05);
  EXPECT_LE(max_diff(fmm, ref), 10 * 1e-6 * max_abs(ref));
  // The correction mode sums the plain kernel on the asked tree and corrects the close pairs.
  f.core_mode = ksum::sim::CoreMode::correction;
  ksum::sim::Field corrected(f);
  const auto fc = ksum::sim::vortex_velocity(corrected, z, g);
  const auto sc = corrected.take_stats();
  EXPECT_EQ(sc.core_retries, 0);
  EXPECT_EQ(sc.levels, 7);
  EXPECT_GT(sc.seconds_core, 0);
  EXPECT_LE(max_diff(fc, ref), 10 * 1e-6 * max_abs(ref));
}

TEST(Field, TheCoreCorrectionMatchesTheSmoothedSumOnClusteredPoints) {
  // Clusters far tighter than the core, and separate targets (some on top of sources).
  std::mt19937_64 rng(9);
  std::normal_distribution<double> n01(0, 1);
  std::vector<Complex> z(2500), t(700);
  std::vector<double> g(z.size());
  for (std::size_t j = 0; j < z.size(); ++j) {
    const double w = std::pow(10.0, -1.0 - static_cast<double>(j % 4));
    z[j] = Complex(0.2 * static_cast<double>(j % 5), 0.1 * static_cast<double>(j % 3)) +
           w * Complex(n01(rng), n01(rng));
    g[j] = n01(rng);
  }
  for (std::size_t i = 0; i < t.size(); ++i)
    t[i] = i % 7 == 0 ? z[3 * i] : z[3 * i] + Complex(0.01 * n01(rng), 0.01 * n01(rng));
  const double core = 0.02;
  ksum::sim::FieldOptions f;
  f.core_radius = core;
  f.tolerance = 1e-8;
  ksum::sim::Field field(f);
  const std::vector<Complex> q(g.begin(), g.end());
  const auto u = field.sum(z, q, t);
  std::vector<Complex> ref(t.size()), plain(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    long double ur = 0, ui = 0, pr = 0, pi = 0;
    for (std::size_t j = 0; j < z.size(); ++j) {
      const long double dx = t[i].real() - z[j].real(), dy = t[i].imag() - z[j].imag();
      const long double r2 = dx * dx + dy * dy;
      if (r2 == 0)
        continue;
      const long double fr = (1 - std::exp(-r2 / (core * core))) / r2;
      ur += fr * g[j] * dx; // q/(t − z) = q·conj(t − z)/r²
      ui -= fr * g[j] * dy;
      pr += g[j] * dx / r2;
      pi -= g[j] * dy / r2;
    }
    ref[i] = {static_cast<double>(ur), static_cast<double>(ui)};
    plain[i] = {static_cast<double>(pr), static_cast<double>(pi)};
  }
  // The plain sum's FMM error is relative to the plain sum, which the pairs far closer than δ
  // make 1000 times the smoothed one here: the correction mode's error scale.
  EXPECT_GT(max_abs(plain), 100 * max_abs(ref));
  EXPECT_LE(max_diff(u, ref), 10 * 1e-8 * max_abs(plain));
  EXPECT_LE(max_diff(u, ref), 1e-5 * max_abs(ref));
}

TEST(Field, TheCoreCorrectionsExponentialIsExpToTheLastBits) {
  // The vectorisable e^x of the correction loop against libm's (correctly rounded to within an
  // ulp) on 0 … −700, and its floor below.
  double worst = 0;
  for (int i = 0; i <= 700000; ++i) {
    const double x = -0.001 * i - 1e-7 * (i % 7);
    const double ref = std::exp(x);
    worst = std::max(worst, std::abs(ksum::sim::detail::exp_nonpositive(x) - ref) / ref);
  }
  EXPECT_LE(worst, 4e-16);
  EXPECT_EQ(ksum::sim::detail::exp_nonpositive(0.0), 1.0);
  EXPECT_NEAR(ksum::sim::detail::exp_nonpositive(-800.0) / std::exp(-700.0), 1.0, 1e-15);
}

TEST(Field, TheAutotunerIsFedTunedCallsOnly) {
  std::vector<Complex> z;
  std::vector<double> g;
  for (int j = 0; j < 2000; ++j) {
    z.push_back(std::polar(std::sqrt((j + 0.5) / 2000.0), 2.39996 * j));
    g.push_back(j % 2 ? 1.0 : -1.0);
  }
  ksum::sim::FieldOptions f;
  f.autotune = ksum::AutotuneScheme::at2;
  f.threads = 1;
  ksum::sim::Field field(f);
  EXPECT_FALSE(field.autotuner().has_value());
  for (int c = 0; c < 30; ++c)
    ksum::sim::vortex_velocity(field, z, g, c % 3 != 0);
  ASSERT_TRUE(field.autotuner().has_value());
  EXPECT_EQ(field.autotuner()->calls(), 20);
  const auto st = field.take_stats();
  EXPECT_EQ(st.calls, 30);
  EXPECT_EQ(st.tuned_calls, 20);
  EXPECT_GT(st.seconds, 0);
  EXPECT_FALSE(st.moves.empty()); // at2 tries a θ move after its first window
  EXPECT_EQ(field.autotune_csv().rfind("call,kind,", 0), 0u);
}

TEST(Options, BadOptionsNameTheOptionAndValue) {
  using ksum::ErrorCode;
  using ksum::sim::Scenario;
  using ksum::test::expect_error;
  const auto make = [](Scenario s, auto edit) {
    ksum::sim::SimulationOptions o;
    o.scenario = s;
    o.n = s == Scenario::cylinder ? 16 : 64;
    edit(o);
    return ksum::sim::make_simulation(o);
  };
  expect_error([] { ksum::sim::parse_scenario("vortex"); }, ErrorCode::invalid_argument,
               "unknown simulation 'vortex'");
  expect_error([&] { make(Scenario::kh, [](auto &o) { o.n = 3; }); }, ErrorCode::invalid_argument,
               "simulate kh: n = 3");
  expect_error([&] { make(Scenario::galaxy, [](auto &o) { o.dt = -0.5; }); },
               ErrorCode::invalid_argument, "simulate galaxy: dt = -0.5");
  expect_error([&] { make(Scenario::kh, [](auto &o) { o.core = 0; }); },
               ErrorCode::invalid_argument, "simulate kh: core = 0");
  expect_error([&] { make(Scenario::cylinder, [](auto &o) { o.reynolds = -10; }); },
               ErrorCode::invalid_argument, "simulate cylinder: Re = -10");
  expect_error([&] { make(Scenario::cylinder, [](auto &o) { o.n = 4; }); },
               ErrorCode::invalid_argument, "simulate cylinder: n (wall vortices) = 4");
  expect_error([&] { make(Scenario::cylinder, [](auto &o) { o.merge_every = -1; }); },
               ErrorCode::invalid_argument, "merge every = -1");
  expect_error([&] { make(Scenario::kh, [](auto &o) { o.field.tolerance = 2; }); },
               ErrorCode::invalid_argument, "tolerance 2");
  expect_error([&] { make(Scenario::kh, [](auto &o) { o.field.theta = 0.93; }); },
               ErrorCode::invalid_argument, "0.93");
  expect_error([&] { make(Scenario::galaxy, [](auto &o) { o.field.cap = -1; }); },
               ErrorCode::invalid_argument, "cap");
  ksum::sim::FieldOptions f;
  f.core_radius = -1;
  expect_error([&] { ksum::sim::Field field(f); }, ErrorCode::invalid_argument,
               "core radius δ = -1");
  expect_error([] { ksum::sim::WallVortices w(32, 1.0, 0.0, 0.1); }, ErrorCode::invalid_argument,
               "wall distance = 0");
  expect_error([] { ksum::sim::WallVortices w(32, 1.0, 0.1, 0.1, -2); },
               ErrorCode::invalid_argument, "wall smoothing = -2");
  expect_error([] { ksum::sim::parse_core_mode("fast"); }, ErrorCode::invalid_argument,
               "unknown core mode 'fast'");
}

#ifdef KSUM_CLI_PATH
TEST_F(Cli, SimulateWritesSnapshotsTimingAndTheMoveLogAndRefusesToOverwrite) {
  const std::string out = path("kh");
  const auto r = ksum("simulate kh --n 600 --steps 3 --every 2 --autotune at2 --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("mean per step"), std::string::npos) << r.output;
  for (const char *f : {"timing.csv", "autotune.csv", "snapshot_000000.csv", "snapshot_000000.png",
                        "snapshot_000002.csv", "snapshot_000002.png", "snapshot_000003.png"})
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(out) / f)) << f;
  const auto timing = ksum::io::read_table(out + "/timing.csv");
  EXPECT_EQ(timing.rows(), 3);
  EXPECT_EQ(timing.names[4], "fmm_seconds");
  const auto snap = ksum::io::read_table(out + "/snapshot_000002.csv");
  EXPECT_EQ(snap.rows(), 600);
  EXPECT_EQ(snap.names, (std::vector<std::string>{"x", "y", "gamma", "vx", "vy"}));

  expect_failure("simulate kh --n 600 --steps 3 --every 2 --out " + out, 1, "file exists");
  const auto again = ksum("simulate kh --n 600 --steps 1 --out " + out + " --force");
  EXPECT_EQ(again.code, 0) << again.output;
  expect_failure("simulate kh --autotune at9 --out " + path("x"), 1, "'at9'");
  expect_failure("simulate swirl --out " + path("y"), 1, "unknown simulation 'swirl'");
  expect_failure("simulate galaxy --dt -1 --out " + path("z"), 1, "dt = -1");
}
#endif

} // namespace
