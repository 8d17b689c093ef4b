// Detailed balance of the polyelectrolyte simulation's moves (include/ksum/mc_sim.hpp, seed 004
// Paper I): small systems whose exact Boltzmann marginal is a one-dimensional integral, computed by
// quadrature independently of the MC code, against the sampled histogram by Pearson's χ² at
// significance 0.001 with fixed seeds.
#include <ksum/mc_sim.hpp>

#include "mc/chain_moves.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

namespace ksum::mc {
namespace {

// Pearson's χ² of observed counts against expected bin probabilities; bins of probability 0 must
// stay empty and do not count. Returns χ² and sets `dof` (non-empty bins − 1).
double chi_square(const std::vector<double> &observed, const std::vector<double> &p, int &dof) {
  double n = 0;
  for (double o : observed)
    n += o;
  double chi2 = 0;
  dof = -1;
  for (std::size_t b = 0; b < p.size(); ++b) {
    if (p[b] == 0) {
      EXPECT_EQ(observed[b], 0) << "a sample in the excluded bin " << b;
      continue;
    }
    const double e = n * p[b];
    chi2 += (observed[b] - e) * (observed[b] - e) / e;
    ++dof;
  }
  return chi2;
}

// The upper 0.1 % point of χ²(k) by the Wilson–Hilferty cube-root normal approximation
// (z_0.999 = 3.0902; 43.95 for k = 19 against the tabulated 43.82).
double chi2_critical_999(int k) {
  const double a = 2.0 / (9.0 * k);
  return k * std::pow(1 - a + 3.0902 * std::sqrt(a), 3);
}

// ∫_a^b f by composite Simpson with 2k panels.
double simpson(const std::function<double(double)> &f, double a, double b, int k = 200) {
  const double h = (b - a) / (2 * k);
  double s = f(a) + f(b);
  for (int i = 1; i < 2 * k; ++i)
    s += f(a + i * h) * (i % 2 ? 4 : 2);
  return s * h / 3;
}

// Bin probabilities of a density (unnormalised) on [lo, hi] in `bins` equal bins; each bin is
// integrated piecewise between the `breaks` inside it (where the density jumps), so that Simpson's
// rule only meets smooth pieces.
std::vector<double> bin_probabilities(const std::function<double(double)> &f, double lo, double hi,
                                      int bins, const std::vector<double> &breaks = {}) {
  std::vector<double> p(static_cast<std::size_t>(bins));
  double total = 0;
  for (int b = 0; b < bins; ++b) {
    const double a = lo + (hi - lo) * b / bins, c = lo + (hi - lo) * (b + 1) / bins;
    std::vector<double> knots = {a};
    for (double x : breaks)
      if (x > a && x < c)
        knots.push_back(x);
    knots.push_back(c);
    std::sort(knots.begin(), knots.end());
    for (std::size_t k = 0; k + 1 < knots.size(); ++k)
      p[std::size_t(b)] += simpson(f, knots[k], knots[k + 1]);
    total += p[std::size_t(b)];
  }
  for (double &v : p)
    v /= total;
  return p;
}

// Checks the MC histogram against the exact density (at significance 0.001) and, to show the test
// can fail, that the same histogram is far from the density without the interaction.
void expect_boltzmann(const std::vector<double> &counts, const std::vector<double> &exact,
                      const std::vector<double> &without, const std::string &what) {
  int dof = 0, dof_free = 0;
  const double chi2 = chi_square(counts, exact, dof);
  const double critical = chi2_critical_999(dof);
  EXPECT_LT(chi2, critical) << what << ": χ² = " << chi2 << " with " << dof << " dof";
  const double chi2_free = chi_square(counts, without, dof_free);
  EXPECT_GT(chi2_free, 10 * critical) << what << ": χ² without the interaction " << chi2_free;
  std::printf("%s: χ² = %.2f (%d dof, critical %.2f at 0.001); without interaction %.0f\n",
              what.c_str(), chi2, dof, critical, chi2_free);
}

SimulationOptions cluster_only(double lb, std::uint64_t seed) {
  SimulationOptions o;
  o.potential.bjerrum = lb;
  o.moves.translations = 0;
  o.moves.pivots = 0;
  o.moves.crankshafts = 0;
  o.sample.every = 0;
  o.sample.recompute_every = 0;
  o.seed = seed;
  o.execution.backend = Backend::cpu;
  o.execution.threads = 1;
  return o;
}

// Two free ions +1 and −1 (hard spheres of radius 0.5, contact σ = 1) in a spherical cell of
// radius R = 4 with bare Coulomb, l_B = 2 (contact energy −2 kT). With both centres uniform in the
// ball, r = |x1 − x2| has density ∝ r² V_lens(r) (V_lens = π(4R + r)(2R − r)²/12, the volume of the
// intersection of two balls of radius R at distance r: the positions of x1 whose partner at
// x1 + r n is in the cell too); with the interaction, p(r) ∝ r² V_lens(r) e^{l_B/r} on [σ, 2R].
TEST(McDetailedBalance, TwoIonsInASphereFollowBoltzmann) {
  const double R = 4, sigma = 1, lb = 2;
  for (Precision precision : {Precision::float64, Precision::float32}) {
    Model m;
    m.cell.boundary = Boundary::sphere;
    m.cell.radius = R;
    m.system.x = {-1, 1};
    m.system.y = {0, 0};
    m.system.z = {0, 0};
    m.system.charge = {1, -1};
    m.system.radius = {0.5, 0.5};
    m.system.species = {int(Species::salt_cation), int(Species::salt_anion)};
    SimulationOptions o = cluster_only(lb, 2024);
    o.moves.ion_step = 2.5;
    o.moves.translations = 40; // samples 40 moves apart: close to independent
    o.execution.precision = precision;
    Simulation sim(m, o);
    const int bins = 20, samples = 60000;
    std::vector<double> counts(bins, 0.0);
    for (int k = 0; k < samples; ++k) {
      sim.run(1);
      const System &s = sim.model().system;
      const double r = std::hypot(s.x[0] - s.x[1], s.y[0] - s.y[1], s.z[0] - s.z[1]);
      ASSERT_GE(r, sigma);
      counts[std::size_t(std::min(bins - 1, int((r - sigma) / (2 * R - sigma) * bins)))] += 1;
    }
    auto density = [&](double l) {
      return [=](double r) {
        return r * r * std::numbers::pi * (4 * R + r) * (2 * R - r) * (2 * R - r) / 12 *
               std::exp(l / r);
      };
    };
    expect_boltzmann(counts, bin_probabilities(density(lb), sigma, 2 * R, bins),
                     bin_probabilities(density(0), sigma, 2 * R, bins),
                     fmt::format("two ions ({})", to_string(precision)));
    const Summary sum = sim.summary();
    EXPECT_GT(sum.acceptance[0].ratio(), 0.2);
    EXPECT_LT(sum.acceptance[0].ratio(), 0.8);
  }
}

// Minimum-image difference a − b in a box (or the plain difference in an open cell).
Vec3 diff(const System &s, const Cell &c, std::int64_t a, std::int64_t b) {
  Vec3 d = {s.x[a] - s.x[b], s.y[a] - s.y[b], s.z[a] - s.z[b]};
  if (c.boundary == Boundary::periodic)
    for (int k = 0; k < 3; ++k)
      d[k] -= c.box[k] * std::round(d[k] / c.box[k]);
  return d;
}

// The model's positions shifted by `shift` (wrapped into a periodic box).
void place(Model &m, const Vec3 &shift) {
  for (std::int64_t i = 0; i < m.system.size(); ++i) {
    double *p[3] = {&m.system.x[i], &m.system.y[i], &m.system.z[i]};
    for (int k = 0; k < 3; ++k) {
      *p[k] += shift[k];
      if (m.cell.boundary == Boundary::periodic)
        *p[k] -= m.cell.box[k] * std::floor(*p[k] / m.cell.box[k]);
    }
  }
}

// A trimer of fixed bond length b = 1.2 (no bond potential), hard spheres of radius 0.5, charged
// ends (+1, 0, +1) with l_B = 2, moved by pivots only, in an open cell and across the corner of a
// periodic box (non-rigid moves, unwrapping). Each bond vector's reference measure is uniform on
// the sphere, so the angle at the middle monomer has p(cos θ) ∝ e^{−l_B/r} on
// r = b sqrt(2 − 2 cos θ) ≥ σ = 1 (the ends' contact).
TEST(McDetailedBalance, TrimerPivotsFollowBoltzmann) {
  const double b = 1.2, lb = 2, sigma = 1;
  for (Boundary boundary : {Boundary::open, Boundary::periodic})
    for (double max_angle : {std::numbers::pi, 0.6}) {
      Model m;
      m.cell.boundary = boundary;
      m.cell.box = {12, 12, 12};
      m.chains = 1;
      m.monomers = 3;
      m.system.x = {-b, 0, 0};
      m.system.y = {0, 0, b};
      m.system.z = {0, 0, 0};
      m.system.charge = {1, 0, 1};
      m.system.radius = {0.5, 0.5, 0.5};
      m.system.bonds = {{0, 1}, {1, 2}};
      place(m, boundary == Boundary::periodic ? Vec3{0.1, 11.9, 0.05} : Vec3{0, 0, 0});
      SimulationOptions o = cluster_only(lb, 77);
      o.moves.pivots = max_angle < 3 ? 16 : 8;
      o.moves.pivot_max_angle = max_angle;
      Simulation sim(m, o);
      const double c_max = 1 - sigma * sigma / (2 * b * b);
      const int bins = 20, samples = 40000;
      std::vector<double> counts(bins, 0.0);
      for (int k = 0; k < samples; ++k) {
        sim.run(1);
        const Model &now = sim.model();
        const Vec3 u = diff(now.system, now.cell, 0, 1), v = diff(now.system, now.cell, 2, 1);
        const double c = (u[0] * v[0] + u[1] * v[1] + u[2] * v[2]) / (b * b);
        ASSERT_LE(c, c_max + 1e-12);
        counts[std::size_t(std::clamp(int((c + 1) / (c_max + 1) * bins), 0, bins - 1))] += 1;
      }
      auto density = [&](double l) {
        return [=](double c) { return std::exp(-l / (b * std::sqrt(2 - 2 * c))); };
      };
      expect_boltzmann(counts, bin_probabilities(density(lb), -1, c_max, bins),
                       bin_probabilities(density(0), -1, c_max, bins),
                       fmt::format("trimer pivots ({}, max angle {:.2f})",
                                   boundary == Boundary::open ? "open" : "periodic", max_angle));
    }
}

// A crankshaft of span 2 turns the middle monomer of a trimer about the axis through the ends
// (fixed at (∓1, 0, 0), b = 1.5: a circle of radius ρ = sqrt(b² − 1) in the plane x = 0). With a
// fixed ion −1 at (0, 0, 2) and the middle monomer +1 (l_B = 1, hard spheres σ = 1), the angle φ
// of the monomer at (0, ρ cos φ, ρ sin φ) has p(φ) ∝ e^{l_B/d(φ)} where d(φ) = |x(φ) − ion| ≥ σ
// (the arc near φ = π/2 is excluded), uniform reference measure (the rotation angle's proposal is
// symmetric). Open cell, and across a periodic box's boundary.
TEST(McDetailedBalance, CrankshaftFollowsBoltzmann) {
  const double b = 1.5, lb = 1, sigma = 1, rho = std::sqrt(b * b - 1), zi = 2;
  for (Boundary boundary : {Boundary::open, Boundary::periodic})
    for (double max_angle : {std::numbers::pi, 0.8}) {
      Model m;
      m.cell.boundary = boundary;
      m.cell.box = {12, 12, 12};
      m.chains = 1;
      m.monomers = 3;
      m.system.x = {-1, 0, 1, 0};
      m.system.y = {0, -rho, 0, 0};
      m.system.z = {0, 0, 0, zi};
      m.system.charge = {0, 1, 0, -1};
      m.system.radius = {0.5, 0.5, 0.5, 0.5};
      m.system.bonds = {{0, 1}, {1, 2}};
      place(m, boundary == Boundary::periodic ? Vec3{11.5, 0.3, 11.0} : Vec3{0, 0, 0});
      SimulationOptions o = cluster_only(lb, 99);
      o.moves.crankshafts = max_angle < 3 ? 16 : 8;
      o.moves.crankshaft_max_angle = max_angle;
      Simulation sim(m, o);
      const int bins = 24, samples = 40000;
      std::vector<double> counts(bins, 0.0);
      for (int k = 0; k < samples; ++k) {
        sim.run(1);
        const Model &now = sim.model();
        const Vec3 u =
            diff(now.system, now.cell, 1, 0); // from the first end: (1, ρ cos φ, ρ sin φ)
        ASSERT_NEAR(u[0], 1.0, 1e-9);
        const double phi = std::atan2(u[2], u[1]);
        counts[std::size_t(std::clamp(int((phi + std::numbers::pi) / (2 * std::numbers::pi) * bins),
                                      0, bins - 1))] += 1;
      }
      auto density = [&](double l) {
        return [=](double phi) {
          const double d2 = rho * rho + zi * zi - 2 * rho * zi * std::sin(phi);
          return d2 < sigma * sigma ? 0.0 : std::exp(l / std::sqrt(d2));
        };
      };
      // The excluded arc d(φ) < σ: sin φ > (ρ² + z² − σ²)/(2ρz), between φ1 and π − φ1; the
      // density inside it is 0 (and evaluates so at the break points' far side).
      const double pi = std::numbers::pi;
      const double phi1 = std::asin((rho * rho + zi * zi - sigma * sigma) / (2 * rho * zi));
      const std::vector<double> breaks = {phi1, pi - phi1};
      expect_boltzmann(counts, bin_probabilities(density(lb), -pi, pi, bins, breaks),
                       bin_probabilities(density(0), -pi, pi, bins, breaks),
                       fmt::format("crankshaft ({}, max angle {:.2f})",
                                   boundary == Boundary::open ? "open" : "periodic", max_angle));
    }
}

} // namespace
} // namespace ksum::mc
