// Seed 004 Paper I: the Monte Carlo energy engine on the CPU against the fp64 reference
// (reference_total: the plain double loop over i < j), closed-form pair energies, ΔU against
// U(after) − U(before) over random single-particle and cluster moves, overlap detection, the
// counter-based Metropolis chain of translate(), and bad input.
#include "mc/engine_gpu.hpp"
#include "mc/pair.hpp"
#include "mc/philox.hpp"
#include "mc/potential.hpp"
#include "mc/proposal.hpp"
#include "support/expect_error.hpp"
#include "support/mc_support.hpp"

#include <ksum/error.hpp>
#include <ksum/mc.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <random>
#include <stdexcept>
#include <vector>

namespace ksum::mc {
namespace {

using test::expect_error;
using test_support::magnitude;
using test_support::make_potential;
using test_support::rounded;

template <class T> constexpr double tol() {
  return sizeof(T) == 4 ? 1e-5 : 1e-12;
}

Cell make_cell(Boundary b) {
  Cell c;
  c.boundary = b;
  if (b == Boundary::sphere)
    c.radius = 8;
  if (b == Boundary::periodic)
    c.box = {12, 11, 13};
  return c;
}

// Into [0, L), as include/ksum/mc.hpp promises (the rounding of x − L⌊x/L⌋ can give L itself).
double wrapped(double x, double L) {
  const double w = x - L * std::floor(x / L);
  return w >= L ? w - L : w;
}

double dist2(const Cell &c, double dx, double dy, double dz) {
  if (c.boundary == Boundary::periodic) {
    dx -= c.box[0] * std::nearbyint(dx / c.box[0]);
    dy -= c.box[1] * std::nearbyint(dy / c.box[1]);
    dz -= c.box[2] * std::nearbyint(dz / c.box[2]);
  }
  return dx * dx + dy * dy + dz * dz;
}

// Chains of monomers (radius 0.5, charge −1 or 0, bonds of length 1.0 … 1.4) and ions (radius
// 0.3 … 0.4, charges +1, +2, −1), no two closer than 1.05 contact distances: a valid start for
// every potential of the tests (FENE r_max = 2).
System random_system(const Cell &cell, int chains, int length, int ions, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(0, 1);
  System s;
  const auto fits = [&](double x, double y, double z, double r, std::size_t upto) {
    if (cell.boundary == Boundary::sphere && x * x + y * y + z * z > cell.radius * cell.radius)
      return false;
    for (std::size_t j = 0; j < upto; ++j) {
      const double c = 1.05 * (r + s.radius[j]);
      if (dist2(cell, x - s.x[j], y - s.y[j], z - s.z[j]) < c * c)
        return false;
    }
    return true;
  };
  const auto point = [&](double &x, double &y, double &z) {
    if (cell.boundary == Boundary::periodic) {
      x = cell.box[0] * u(g), y = cell.box[1] * u(g), z = cell.box[2] * u(g);
    } else {
      const double h = cell.boundary == Boundary::sphere ? cell.radius : 7;
      x = h * (2 * u(g) - 1), y = h * (2 * u(g) - 1), z = h * (2 * u(g) - 1);
    }
  };
  const auto push = [&](double x, double y, double z, double q, double r) {
    s.x.push_back(x), s.y.push_back(y), s.z.push_back(z), s.charge.push_back(q),
        s.radius.push_back(r);
  };
  for (int c = 0; c < chains; ++c) {
    const std::size_t first = s.x.size();
    for (int attempt = 0; s.x.size() < first + length; ++attempt) {
      if (attempt >= 1000)
        throw std::runtime_error("could not grow a chain");
      s.x.resize(first), s.y.resize(first), s.z.resize(first), s.charge.resize(first),
          s.radius.resize(first);
      double x, y, z;
      point(x, y, z);
      if (!fits(x, y, z, 0.5, first))
        continue;
      push(x, y, z, -1, 0.5);
      for (int k = 1; k < length; ++k) {
        bool placed = false;
        for (int t = 0; t < 200 && !placed; ++t) {
          const double ct = 2 * u(g) - 1, ph = 2 * std::numbers::pi * u(g),
                       st = std::sqrt(1 - ct * ct), b = 1.0 + 0.4 * u(g);
          double nx = s.x.back() + b * st * std::cos(ph), ny = s.y.back() + b * st * std::sin(ph),
                 nz = s.z.back() + b * ct;
          if (cell.boundary == Boundary::periodic)
            nx = wrapped(nx, cell.box[0]), ny = wrapped(ny, cell.box[1]),
            nz = wrapped(nz, cell.box[2]);
          if (fits(nx, ny, nz, 0.5, s.x.size())) {
            push(nx, ny, nz, k % 3 == 2 ? 0 : -1, 0.5);
            placed = true;
          }
        }
        if (!placed)
          break;
      }
    }
    for (int k = 1; k < length; ++k)
      s.bonds.push_back(
          {static_cast<std::int64_t>(first) + k - 1, static_cast<std::int64_t>(first) + k});
  }
  for (int k = 0; k < ions; ++k) {
    const double r = k % 4 == 3 ? 0.3 : 0.4, q = k % 5 == 4 ? 2 : (k % 7 == 6 ? -1 : 1);
    for (int attempt = 0;; ++attempt) {
      if (attempt >= 100000)
        throw std::runtime_error("could not place an ion");
      double x, y, z;
      point(x, y, z);
      if (fits(x, y, z, r, s.x.size())) {
        push(x, y, z, q, r);
        break;
      }
    }
  }
  return s;
}

template <class T> Engine<T> cpu_engine(const Potential &pot, const Cell &cell, int threads = 2) {
  EngineOptions o;
  o.potential = pot;
  o.cell = cell;
  o.backend = Backend::cpu;
  o.threads = threads;
  return Engine<T>(o);
}

TEST(McPhilox, KnownAnswerVectors) {
  // Random123's known-answer vectors for Philox4x32-10: (counter; key) → output.
  struct Kat {
    std::uint32_t c[4], k[2], out[4];
  };
  const Kat kats[] = {{{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
                      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                       {0xffffffffu, 0xffffffffu},
                       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
                      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                       {0xa4093822u, 0x299f31d0u},
                       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}};
  for (const auto &kat : kats) {
    const Philox4 r =
        philox4x32_10(Philox4{{kat.c[0], kat.c[1], kat.c[2], kat.c[3]}}, kat.k[0], kat.k[1]);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(r.v[i], kat.out[i]) << "word " << i << " of counter " << std::hex << kat.c[0];
  }
}

TEST(McProposal, TrialsAreInRangeAndUniform) {
  // 20000 trials over 7 slots: every slot within 5 sigma of 1/7, displacements in [−1, 1).
  const int n = 7, count = 20000;
  std::vector<int> hits(n, 0);
  double mean = 0;
  for (std::uint64_t t = 0; t < count; ++t) {
    const Trial tr = translation_trial(11, t, n);
    ASSERT_GE(tr.slot, 0);
    ASSERT_LT(tr.slot, n);
    ++hits[tr.slot];
    for (const double v : {tr.ux, tr.uy, tr.uz}) {
      ASSERT_GE(v, -1);
      ASSERT_LT(v, 1);
    }
    ASSERT_GT(tr.u_accept, 0);
    ASSERT_LT(tr.u_accept, 1);
    mean += tr.ux;
  }
  const double p = 1.0 / n, sd = std::sqrt(count * p * (1 - p));
  for (int k = 0; k < n; ++k)
    EXPECT_LT(std::abs(hits[k] - count * p), 5 * sd) << "slot " << k;
  EXPECT_LT(std::abs(mean / count), 5 * std::sqrt(1.0 / 3 / count));
  EXPECT_TRUE(metropolis(-1, 0, 0.999));
  EXPECT_FALSE(metropolis(-1, 1, 0.001));
  EXPECT_TRUE(metropolis(1, 0, std::exp(-1.0) * 0.999));
  EXPECT_FALSE(metropolis(1, 0, std::exp(-1.0) * 1.001));
}

TEST(McPotential, NamesRoundTripAndBadNamesListTheValidOnes) {
  for (auto e : {Electrostatics::coulomb, Electrostatics::debye_huckel, Electrostatics::none})
    EXPECT_EQ(parse_electrostatics(to_string(e)), e);
  for (auto s :
       {ShortRange::none, ShortRange::hard_sphere, ShortRange::lennard_jones, ShortRange::wca})
    EXPECT_EQ(parse_short_range(to_string(s)), s);
  for (auto b : {BondKind::none, BondKind::harmonic, BondKind::fene})
    EXPECT_EQ(parse_bond(to_string(b)), b);
  EXPECT_EQ(to_string(Electrostatics::debye_huckel), "debye-huckel");
  EXPECT_EQ(to_string(ShortRange::hard_sphere), "hard-sphere");
  expect_error([] { parse_electrostatics("ewald"); }, ErrorCode::invalid_argument,
               "'ewald'; valid: coulomb, debye-huckel, none");
  expect_error([] { parse_short_range("soft"); }, ErrorCode::invalid_argument,
               "'soft'; valid: none, hard-sphere, lj, wca");
  expect_error([] { parse_bond("morse"); }, ErrorCode::invalid_argument,
               "'morse'; valid: none, harmonic, fene");
}

TEST(McPotential, BjerrumLength) {
  // e²/(4π ε0 εr kB T): 7.1487 Å in water at 25 °C, 560.46 Å in vacuum; ∝ 1/(εr T).
  EXPECT_NEAR(bjerrum_length(78.4, 298.15), 7.1487, 1e-4);
  EXPECT_NEAR(bjerrum_length(1, 298.15), 560.459, 1e-3);
  EXPECT_NEAR(bjerrum_length(40, 600), bjerrum_length(80, 300), 1e-12);
  expect_error([] { bjerrum_length(0, 300); }, ErrorCode::invalid_argument,
               "relative permittivity must be finite and > 0, got 0");
  expect_error([] { bjerrum_length(78, -3); }, ErrorCode::invalid_argument,
               "temperature must be finite and > 0 K, got -3");
  expect_error([] { bjerrum_length(std::nan(""), 300); }, ErrorCode::invalid_argument, "nan");
}

// Two particles at distance r: U by the closed forms of include/ksum/mc.hpp, independent of
// pair.hpp, through reference_total and both engines.
TEST(McEngine, ClosedFormPairEnergies) {
  struct Case {
    Potential pot;
    double r, q1, q2, expected;
  };
  const double lb = 7.14, rc = std::pow(2.0, 1.0 / 6);
  std::vector<Case> cases;
  const auto pot = [&](Electrostatics e, ShortRange s, BondKind b) {
    Potential p = make_potential(e, s, b);
    p.bjerrum = lb;
    return p;
  };
  cases.push_back(
      {pot(Electrostatics::coulomb, ShortRange::none, BondKind::none), 2.5, 1, -2, lb * -2 / 2.5});
  cases.push_back({pot(Electrostatics::debye_huckel, ShortRange::hard_sphere, BondKind::none), 2.5,
                   1, 1, lb * std::exp(-2.5 / 3) / 2.5});
  cases.push_back(
      {pot(Electrostatics::none, ShortRange::lennard_jones, BondKind::none), rc, 1, 1, -0.8});
  cases.push_back({pot(Electrostatics::none, ShortRange::lennard_jones, BondKind::none), 1.5, 1, 1,
                   4 * 0.8 * (std::pow(1 / 1.5, 12) - std::pow(1 / 1.5, 6))});
  cases.push_back({pot(Electrostatics::none, ShortRange::wca, BondKind::none), 1, 1, 1, 0.8});
  cases.push_back({pot(Electrostatics::none, ShortRange::wca, BondKind::none), 0.95, 1, 1,
                   4 * 0.8 * (std::pow(1 / 0.95, 12) - std::pow(1 / 0.95, 6)) + 0.8});
  cases.push_back({pot(Electrostatics::none, ShortRange::wca, BondKind::none), 1.2, 1, 1, 0});
  cases.push_back({pot(Electrostatics::none, ShortRange::none, BondKind::harmonic), 1.5, 1, 1,
                   0.5 * 5 * 0.4 * 0.4});
  cases.push_back({pot(Electrostatics::coulomb, ShortRange::hard_sphere, BondKind::fene), 1.5, 1,
                   -1, -lb / 1.5 - 0.5 * 3 * 4 * std::log(1 - 1.5 * 1.5 / 4)});
  for (const auto &c : cases) {
    System s;
    s.x = {0.3, 0.3 + c.r * 0.6};
    s.y = {-0.2, -0.2 + c.r * 0.8};
    s.z = {1, 1};
    s.charge = {c.q1, c.q2};
    s.radius = {0.5, 0.5};
    if (c.pot.bond != BondKind::none)
      s.bonds = {{0, 1}};
    const Cell open;
    const Energy ref = reference_total(s, c.pot, open);
    EXPECT_EQ(ref.overlaps, 0);
    EXPECT_NEAR(ref.value, c.expected, 1e-12 * (1 + std::abs(c.expected)))
        << to_string(c.pot.electrostatics) << " " << to_string(c.pot.short_range) << " "
        << to_string(c.pot.bond) << " r " << c.r;
    auto e64 = cpu_engine<double>(c.pot, open);
    e64.set_system(s);
    EXPECT_NEAR(e64.total().value, c.expected, 1e-12 * (1 + std::abs(c.expected)));
    auto e32 = cpu_engine<float>(c.pot, open);
    e32.set_system(s);
    EXPECT_NEAR(e32.total().value, c.expected, 1e-5 * (1 + std::abs(c.expected)));
  }
}

template <class T> void total_matches_reference() {
  for (const Boundary boundary : {Boundary::open, Boundary::sphere, Boundary::periodic}) {
    const Cell cell = make_cell(boundary);
    const System s = random_system(cell, 3, 10, 30, 100 + static_cast<int>(boundary));
    ASSERT_EQ(s.size(), 60);
    const System sr = rounded<T>(s);
    for (const auto e :
         {Electrostatics::coulomb, Electrostatics::debye_huckel, Electrostatics::none})
      for (const auto sh :
           {ShortRange::none, ShortRange::hard_sphere, ShortRange::lennard_jones, ShortRange::wca})
        for (const auto b : {BondKind::none, BondKind::harmonic, BondKind::fene}) {
          const Potential pot = make_potential(e, sh, b);
          const Energy ref = reference_total(sr, pot, cell);
          const double scale = magnitude(sr, pot, cell);
          auto engine = cpu_engine<T>(pot, cell);
          engine.set_system(s);
          const Energy got = engine.total(), full = engine.total_full_recompute(s);
          const auto what = [&] {
            return ::testing::Message()
                   << to_string(e) << " " << to_string(sh) << " " << to_string(b) << " boundary "
                   << static_cast<int>(boundary);
          };
          ASSERT_EQ(ref.overlaps, 0) << what();
          EXPECT_EQ(got.overlaps, 0) << what();
          EXPECT_EQ(full.overlaps, 0) << what();
          if (e != Electrostatics::none || sh == ShortRange::lennard_jones || b != BondKind::none) {
            EXPECT_GT(scale, 1) << what(); // a test that compares zeros would prove nothing
          }
          EXPECT_LE(std::abs(got.value - ref.value), tol<T>() * scale) << what();
          EXPECT_LE(std::abs(full.value - ref.value), tol<T>() * scale) << what();
        }
  }
}

TEST(McEngine, TotalMatchesReferenceForEveryPotentialDouble) {
  total_matches_reference<double>();
}
TEST(McEngine, TotalMatchesReferenceForEveryPotentialFloat) {
  total_matches_reference<float>();
}

// Enough particles that total() and ΔU take their OpenMP paths; 1 thread and 2 agree.
TEST(McEngine, ParallelPathsMatchReference) {
  const Cell cell = make_cell(Boundary::periodic);
  const System s = random_system(cell, 4, 25, 300, 7);
  ASSERT_EQ(s.size(), 400);
  const Potential pot =
      make_potential(Electrostatics::debye_huckel, ShortRange::hard_sphere, BondKind::fene);
  const Energy ref = reference_total(s, pot, cell);
  const double scale = magnitude(s, pot, cell);
  auto one = cpu_engine<double>(pot, cell, 1);
  auto two = cpu_engine<double>(pot, cell, 2);
  one.set_system(s);
  two.set_system(s);
  EXPECT_LE(std::abs(one.total().value - ref.value), 1e-12 * scale);
  EXPECT_LE(std::abs(two.total().value - ref.value), 1e-12 * scale);
  EXPECT_LE(std::abs(two.total_full_recompute(s).value - ref.value), 1e-12 * scale);
  // Partial sums are added in a fixed order: the same bits on any number of threads.
  EXPECT_EQ(one.total().value, two.total().value);
  EXPECT_EQ(one.total_full_recompute(s).value, two.total_full_recompute(s).value);
  // A 60-particle cluster (N·m = 24000 pairs: the parallel ΔU), each displaced a little.
  std::mt19937_64 g(3);
  std::uniform_real_distribution<double> u(-0.015, 0.015);
  for (int rep = 0; rep < 3; ++rep) {
    Move mv;
    System after = s;
    for (std::int64_t i = 40 * rep; i < 40 * rep + 60; ++i) {
      mv.particles.push_back(i);
      after.x[i] = wrapped(s.x[i] + u(g), cell.box[0]);
      after.y[i] = wrapped(s.y[i] + u(g), cell.box[1]);
      after.z[i] = wrapped(s.z[i] + u(g), cell.box[2]);
      mv.xyz.insert(mv.xyz.end(), {after.x[i], after.y[i], after.z[i]});
    }
    const Energy ra = reference_total(after, pot, cell);
    const Energy d1 = one.delta(mv), d2 = two.delta(mv);
    EXPECT_EQ(d1.value, d2.value); // bit for bit (see above)
    EXPECT_EQ(d1.overlaps, ra.overlaps);
    EXPECT_EQ(d2.overlaps, ra.overlaps);
    if (ra.overlaps == 0) {
      EXPECT_LE(std::abs(d1.value - (ra.value - ref.value)), 1e-12 * scale);
      EXPECT_LE(std::abs(d2.value - (ra.value - ref.value)), 1e-12 * scale);
    }
  }
}

// A random move of the resident system `s`: one particle, a cluster of 2–6 particles, or a whole
// chain moved rigidly (translated, or in a non-periodic cell rotated about its centre).
Move random_move(const System &s, const Cell &cell, int chains, int length, std::mt19937_64 &g) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::uniform_int_distribution<std::int64_t> any(0, s.size() - 1);
  Move mv;
  const int kind = static_cast<int>(g() % 4);
  if (kind == 0 || kind == 1) {
    const int m = kind == 0 ? 1 : 2 + static_cast<int>(g() % 5);
    while (static_cast<int>(mv.particles.size()) < m) {
      const std::int64_t i = any(g);
      if (std::find(mv.particles.begin(), mv.particles.end(), i) == mv.particles.end())
        mv.particles.push_back(i);
    }
    const double step = kind == 0 ? 1.5 : 0.6;
    for (const auto i : mv.particles)
      mv.xyz.insert(mv.xyz.end(),
                    {s.x[i] + step * u(g), s.y[i] + step * u(g), s.z[i] + step * u(g)});
    return mv;
  }
  const std::int64_t c = static_cast<std::int64_t>(g() % chains), first = c * length;
  mv.rigid = true;
  for (std::int64_t i = first; i < first + length; ++i)
    mv.particles.push_back(i);
  if (kind == 2 || cell.boundary == Boundary::periodic) {
    const double d[3] = {0.8 * u(g), 0.8 * u(g), 0.8 * u(g)};
    for (const auto i : mv.particles)
      mv.xyz.insert(mv.xyz.end(), {s.x[i] + d[0], s.y[i] + d[1], s.z[i] + d[2]});
    return mv;
  }
  // Rotation by angle a about a random unit axis n through the chain's centre (Rodrigues).
  double cx = 0, cy = 0, cz = 0;
  for (const auto i : mv.particles)
    cx += s.x[i] / length, cy += s.y[i] / length, cz += s.z[i] / length;
  double n[3] = {u(g), u(g), u(g)};
  const double nn = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  for (double &v : n)
    v /= nn;
  const double a = 0.7 * u(g), ca = std::cos(a), sa = std::sin(a);
  for (const auto i : mv.particles) {
    const double v[3] = {s.x[i] - cx, s.y[i] - cy, s.z[i] - cz};
    const double dot = n[0] * v[0] + n[1] * v[1] + n[2] * v[2];
    const double cr[3] = {n[1] * v[2] - n[2] * v[1], n[2] * v[0] - n[0] * v[2],
                          n[0] * v[1] - n[1] * v[0]};
    mv.xyz.insert(mv.xyz.end(), {cx + v[0] * ca + cr[0] * sa + n[0] * dot * (1 - ca),
                                 cy + v[1] * ca + cr[1] * sa + n[1] * dot * (1 - ca),
                                 cz + v[2] * ca + cr[2] * sa + n[2] * dot * (1 - ca)});
  }
  return mv;
}

System moved(System s, const Move &mv, const Cell &cell) {
  for (std::size_t k = 0; k < mv.particles.size(); ++k) {
    const auto i = mv.particles[k];
    s.x[i] = mv.xyz[3 * k], s.y[i] = mv.xyz[3 * k + 1], s.z[i] = mv.xyz[3 * k + 2];
    if (cell.boundary == Boundary::periodic) {
      s.x[i] = wrapped(s.x[i], cell.box[0]);
      s.y[i] = wrapped(s.y[i], cell.box[1]);
      s.z[i] = wrapped(s.z[i], cell.box[2]);
    }
  }
  return s;
}

// ΔU of `moves` random moves against reference(after) − reference(before); half of the finite
// moves are applied, so the resident system wanders.
template <class T> void delta_matches_reference(int moves) {
  const Potential pots[] = {
      make_potential(Electrostatics::coulomb, ShortRange::hard_sphere, BondKind::fene),
      make_potential(Electrostatics::debye_huckel, ShortRange::lennard_jones, BondKind::harmonic),
      make_potential(Electrostatics::coulomb, ShortRange::wca, BondKind::none)};
  const int chains = 3, length = 10;
  for (const Boundary boundary : {Boundary::open, Boundary::sphere, Boundary::periodic})
    for (const Potential &pot : pots) {
      const Cell cell = make_cell(boundary);
      System s =
          rounded<T>(random_system(cell, chains, length, 30, 200 + static_cast<int>(boundary)));
      auto engine = cpu_engine<T>(pot, cell);
      engine.set_system(s);
      std::mt19937_64 g(17 + static_cast<int>(boundary));
      Energy before = reference_total(s, pot, cell);
      int finite = 0, infinite = 0, rigid = 0, applied = 0;
      for (int t = 0; t < moves; ++t) {
        Move mv = random_move(s, cell, chains, length, g);
        for (double &v : mv.xyz)
          v = static_cast<double>(static_cast<T>(v));
        const System after = rounded<T>(moved(s, mv, cell));
        const Energy ra = reference_total(after, pot, cell);
        const Energy d = engine.delta(mv);
        const double scale = std::max(magnitude(s, pot, cell), magnitude(after, pot, cell));
        ASSERT_EQ(d.overlaps, ra.overlaps)
            << "move " << t << " of " << mv.particles.size() << " particles";
        if (ra.overlaps > 0) {
          ++infinite;
          continue;
        }
        ++finite;
        rigid += mv.rigid;
        ASSERT_LE(std::abs(d.value - (ra.value - before.value)), tol<T>() * scale)
            << "move " << t << " of " << mv.particles.size() << " particles, rigid " << mv.rigid
            << ": dU " << d.value << " reference " << ra.value - before.value << " boundary "
            << static_cast<int>(boundary) << " " << to_string(pot.electrostatics) << " "
            << to_string(pot.short_range) << " " << to_string(pot.bond);
        // Half of the moves that a Metropolis chain could take (ΔU < 3 kT) are applied: a state
        // with LJ cores pressed together (10^6 kT) is no test of float.
        if (ra.value - before.value < 3 && g() % 2) {
          engine.apply(mv);
          s = after;
          before = ra;
          ++applied;
        }
      }
      EXPECT_GE(finite, moves / 4);
      if (pot.short_range == ShortRange::hard_sphere || pot.bond == BondKind::fene ||
          boundary == Boundary::sphere) {
        EXPECT_GT(infinite, 0);
      }
      EXPECT_GT(rigid, 0);
      EXPECT_GT(applied, 0);
      // The resident system followed the applied moves.
      const System now = rounded<T>(engine.system());
      for (std::int64_t i = 0; i < s.size(); ++i) {
        ASSERT_EQ(now.x[i], s.x[i]) << i;
        ASSERT_EQ(now.y[i], s.y[i]) << i;
        ASSERT_EQ(now.z[i], s.z[i]) << i;
      }
      EXPECT_LE(std::abs(engine.total().value - before.value), tol<T>() * magnitude(s, pot, cell));
    }
}

TEST(McEngine, DeltaMatchesReferenceDouble) {
  delta_matches_reference<double>(300);
}
TEST(McEngine, DeltaMatchesReferenceFloat) {
  delta_matches_reference<float>(100);
}

// Three hard spheres on the x axis in a spherical cell of radius 7, FENE bond 1–2 (r_max 3.5).
TEST(McEngine, OverlapsBrokenBondsAndTheCellWallAreCounted) {
  Potential pot = make_potential(Electrostatics::coulomb, ShortRange::hard_sphere, BondKind::fene);
  pot.bond_rmax = 3.5;
  Cell cell;
  cell.boundary = Boundary::sphere;
  cell.radius = 7;
  System s;
  s.x = {0, 3, 6};
  s.y = {0, 0, 0};
  s.z = {0, 0, 0};
  s.charge = {1, -1, 1};
  s.radius = {0.5, 0.5, 0.5};
  s.bonds = {{1, 2}};
  auto engine = cpu_engine<double>(pot, cell);
  engine.set_system(s);
  struct Case {
    Move move;
    std::int64_t overlaps;
  };
  const Case cases[] = {
      {Move{{0}, {2.5, 0, 0}}, 1},             // into sphere 1
      {Move{{0}, {3, 0, 0}}, 1},               // onto sphere 1's centre
      {Move{{2}, {6.9, 0, 0}}, 1},             // FENE bond 1–2 stretched to 3.9 > 3.5
      {Move{{2}, {7.2, 0, 0}}, 2},             // … and out of the cell
      {Move{{0}, {0, 0, -7.5}}, 1},            // out of the cell
      {Move{{0, 1}, {2, 0, 0, 2.6, 0, 0}}, 1}, // the two moved spheres into each other
      {Move{{0, 1}, {1, 0, 0, 2.6, 0, 0}}, 0}, // moved together, apart
      {Move{{0}, {2, 0, 0}}, 0}};              // at contact: not an overlap
  for (const auto &c : cases) {
    const Energy d = engine.delta(c.move);
    EXPECT_EQ(d.overlaps, c.overlaps) << "move of particle " << c.move.particles[0];
    EXPECT_EQ(reference_total(moved(s, c.move, cell), pot, cell).overlaps, c.overlaps);
    EXPECT_TRUE(std::isfinite(d.value));
  }
  // Point charges without a short-range term: coincident centres are the infinite term.
  Potential bare = make_potential(Electrostatics::coulomb, ShortRange::none, BondKind::none);
  auto points = cpu_engine<float>(bare, Cell{});
  points.set_system(s);
  EXPECT_EQ(points.delta(Move{{0}, {3, 0, 0}}).overlaps, 1);
  EXPECT_EQ(points.delta(Move{{0}, {2.5, 0, 0}}).overlaps, 0);
}

System small_system(const Cell &cell, std::uint64_t seed) {
  return random_system(cell, 2, 8, 16, seed);
}

TEST(McTranslate, SameSeedSameTrajectoryAndSeedMatters) {
  const Cell cell = make_cell(Boundary::sphere);
  const Potential pot =
      make_potential(Electrostatics::coulomb, ShortRange::hard_sphere, BondKind::fene);
  const System s = small_system(cell, 5);
  auto a = cpu_engine<double>(pot, cell), b = cpu_engine<double>(pot, cell),
       c = cpu_engine<double>(pot, cell);
  a.set_system(s), b.set_system(s), c.set_system(s);
  TranslateParams p;
  p.seed = 42;
  p.count = 3000;
  p.max_step = 0.8;
  const TranslateResult ra = a.translate(p), rb = b.translate(p);
  p.seed = 43;
  c.translate(p);
  EXPECT_EQ(ra.attempted, 3000);
  EXPECT_EQ(ra.accepted, rb.accepted);
  EXPECT_EQ(ra.rejected_overlap, rb.rejected_overlap);
  EXPECT_EQ(ra.delta_u, rb.delta_u);
  EXPECT_GT(ra.accepted, 300);
  EXPECT_LT(ra.accepted, 2900);
  EXPECT_GT(ra.rejected_overlap, 0);
  EXPECT_EQ(a.system().x, b.system().x);
  EXPECT_EQ(a.system().y, b.system().y);
  EXPECT_EQ(a.system().z, b.system().z);
  EXPECT_NE(a.system().x, c.system().x);
}

TEST(McTranslate, BatchesAreTheSameChainAsOneCall) {
  const Cell cell = make_cell(Boundary::periodic);
  const Potential pot =
      make_potential(Electrostatics::debye_huckel, ShortRange::wca, BondKind::harmonic);
  const System s = small_system(cell, 6);
  auto whole = cpu_engine<double>(pot, cell), halves = cpu_engine<double>(pot, cell);
  whole.set_system(s), halves.set_system(s);
  TranslateParams p;
  p.seed = 9;
  p.count = 4000;
  p.max_step = 1.2;
  const TranslateResult r = whole.translate(p);
  p.count = 2000;
  const TranslateResult r1 = halves.translate(p);
  p.first = 2000;
  const TranslateResult r2 = halves.translate(p);
  EXPECT_EQ(r.accepted, r1.accepted + r2.accepted);
  EXPECT_EQ(r.rejected_overlap, r1.rejected_overlap + r2.rejected_overlap);
  EXPECT_NEAR(r.delta_u, r1.delta_u + r2.delta_u, 1e-9 * (1 + std::abs(r.delta_u)));
  EXPECT_EQ(whole.system().x, halves.system().x);
  EXPECT_EQ(whole.system().y, halves.system().y);
  EXPECT_EQ(whole.system().z, halves.system().z);
  for (std::int64_t i = 0; i < s.size(); ++i) { // wrapped into the box
    ASSERT_GE(whole.system().x[i], 0);
    ASSERT_LT(whole.system().x[i], cell.box[0]);
  }
}

// translate() is the chain documented in include/ksum/mc.hpp, made here by hand from
// translation_trial, delta, metropolis and apply (a movable subset, per-particle steps).
TEST(McTranslate, FollowsTheDocumentedChain) {
  const Cell cell = make_cell(Boundary::periodic);
  const Potential pot =
      make_potential(Electrostatics::coulomb, ShortRange::hard_sphere, BondKind::fene);
  const System s = small_system(cell, 8);
  auto engine = cpu_engine<double>(pot, cell), hand = cpu_engine<double>(pot, cell);
  engine.set_system(s), hand.set_system(s);
  TranslateParams p;
  p.seed = 123456789012345ull;
  p.first = 1000;
  p.count = 1500;
  for (std::int64_t i = 0; i < s.size(); i += 2)
    p.movable.push_back(i);
  p.step.assign(s.size(), 0.0);
  for (std::int64_t i = 0; i < s.size(); ++i)
    p.step[i] = 0.3 + 0.1 * (i % 5);
  const TranslateResult r = engine.translate(p);
  std::int64_t accepted = 0, rejected_overlap = 0;
  double du = 0;
  for (std::uint64_t t = p.first; t < p.first + p.count; ++t) {
    const Trial tr = translation_trial(p.seed, t, static_cast<std::int64_t>(p.movable.size()));
    const std::int64_t i = p.movable[tr.slot];
    const System &now = hand.system();
    const double st = p.step[i];
    const Move mv{{i}, {now.x[i] + st * tr.ux, now.y[i] + st * tr.uy, now.z[i] + st * tr.uz}};
    const Energy d = hand.delta(mv);
    if (metropolis(d.value, d.overlaps, tr.u_accept)) {
      hand.apply(mv);
      ++accepted;
      du += d.value;
    } else if (d.overlaps > 0) {
      ++rejected_overlap;
    }
  }
  EXPECT_EQ(r.accepted, accepted);
  EXPECT_EQ(r.rejected_overlap, rejected_overlap);
  EXPECT_GT(accepted, 0);
  EXPECT_DOUBLE_EQ(r.delta_u, du);
  EXPECT_EQ(engine.system().x, hand.system().x);
  EXPECT_EQ(engine.system().y, hand.system().y);
  EXPECT_EQ(engine.system().z, hand.system().z);
  // Particles not in the movable list stayed.
  for (std::int64_t i = 1; i < s.size(); i += 2)
    ASSERT_EQ(engine.system().x[i], s.x[i]);
}

// 10^5 accepted-or-rejected moves: the running sum of the accepted ΔU against a full recompute.
TEST(McTranslate, EnergyDoesNotDriftOver1e5Moves) {
  const Cell cell = make_cell(Boundary::sphere);
  const Potential pot =
      make_potential(Electrostatics::coulomb, ShortRange::hard_sphere, BondKind::fene);
  const System s = small_system(cell, 10);
  auto engine = cpu_engine<double>(pot, cell);
  engine.set_system(s);
  const Energy u0 = engine.total();
  TranslateParams p;
  p.seed = 2024;
  p.count = 100000;
  p.max_step = 0.7;
  const TranslateResult r = engine.translate(p);
  const Energy u1 = engine.total();
  const Energy ref = reference_total(engine.system(), pot, cell);
  const double scale = std::max(magnitude(s, pot, cell), magnitude(engine.system(), pot, cell));
  EXPECT_EQ(u1.overlaps, 0);
  EXPECT_EQ(ref.overlaps, 0);
  EXPECT_GT(r.accepted, 10000);
  EXPECT_GT(std::abs(u1.value - u0.value), 1); // the system did change
  EXPECT_LE(std::abs(u1.value - u0.value - r.delta_u), 1e-9 * scale)
      << "U0 " << u0.value << " U1 " << u1.value << " sum of dU " << r.delta_u;
  EXPECT_LE(std::abs(u1.value - ref.value), 1e-12 * scale);
}

TEST(McEngine, PeriodicPositionsAreWrappedOnInputAndOnMoves) {
  const Cell cell = make_cell(Boundary::periodic);
  const Potential pot =
      make_potential(Electrostatics::coulomb, ShortRange::hard_sphere, BondKind::none);
  System s;
  s.x = {-0.5, 5, 25.5};
  s.y = {1, 12, 1};
  s.z = {1, 1, -13};
  s.charge = {1, -1, 1};
  s.radius = {0.5, 0.5, 0.5};
  auto engine = cpu_engine<double>(pot, cell);
  engine.set_system(s);
  EXPECT_DOUBLE_EQ(engine.system().x[0], 11.5);
  EXPECT_DOUBLE_EQ(engine.system().y[1], 1);
  EXPECT_DOUBLE_EQ(engine.system().x[2], 1.5);
  EXPECT_DOUBLE_EQ(engine.system().z[2], 0);
  EXPECT_NEAR(engine.total().value, reference_total(s, pot, cell).value, 1e-12);
  // Particle 0 across the x = 0 face: the minimum image makes it a neighbour of particle 2.
  const Move mv{{0}, {12.9, 1, 1}};
  const Energy d = engine.delta(mv);
  EXPECT_EQ(d.overlaps, 0);
  EXPECT_NEAR(d.value,
              reference_total(moved(engine.system(), mv, cell), pot, cell).value -
                  reference_total(engine.system(), pot, cell).value,
              1e-12);
  engine.apply(mv);
  EXPECT_NEAR(engine.system().x[0], 0.9, 1e-12);
  EXPECT_EQ(engine.delta(Move{{0}, {13.5, 1, 13.2}}).overlaps, 1); // into particle 2's image
}

TEST(McEngine, BackendResolution) {
  auto engine = cpu_engine<double>(Potential{}, Cell{});
  EXPECT_EQ(engine.backend(), Backend::cpu);
  EXPECT_EQ(engine.size(), 0);
  EXPECT_EQ(engine.total().value, 0);
  EngineOptions o;
  Engine<float> automatic(o);
  EXPECT_EQ(automatic.backend(), detail::gpu_available() ? Backend::cuda : Backend::cpu);
  if (detail::gpu_available())
    GTEST_SKIP() << "a CUDA GPU is present: the no-GPU error cannot be provoked";
  o.backend = Backend::cuda;
  expect_error([&] { Engine<double> e(o); }, ErrorCode::unsupported, "no CUDA GPU");
}

TEST(McEngine, BadParametersAreRefused) {
  const auto make = [](Potential pot, Cell cell, int threads = 0) {
    EngineOptions o;
    o.potential = pot;
    o.cell = cell;
    o.backend = Backend::cpu;
    o.threads = threads;
    Engine<double> e(o);
  };
  const Potential good =
      make_potential(Electrostatics::coulomb, ShortRange::hard_sphere, BondKind::none);
  Cell box = make_cell(Boundary::periodic);
  box.box[1] = 0;
  expect_error([&] { make(good, box); }, ErrorCode::invalid_argument,
               "the periodic box's y edge must be finite and > 0, got 0");
  box.box[1] = -2;
  expect_error([&] { make(good, box); }, ErrorCode::invalid_argument,
               "y edge must be finite and > 0, got -2");
  box.box[1] = std::numeric_limits<double>::infinity();
  expect_error([&] { make(good, box); }, ErrorCode::invalid_argument, "got inf");
  Cell sphere = make_cell(Boundary::sphere);
  sphere.radius = 0;
  expect_error([&] { make(good, sphere); }, ErrorCode::invalid_argument,
               "spherical cell's radius must be finite and > 0, got 0");
  Potential p = good;
  p.electrostatics = Electrostatics::debye_huckel;
  p.debye_length = 0;
  expect_error([&] { make(p, Cell{}); }, ErrorCode::invalid_argument,
               "Debye length (debye-huckel) must be finite and > 0, got 0");
  p = good;
  p.bjerrum = -1;
  expect_error([&] { make(p, Cell{}); }, ErrorCode::invalid_argument,
               "Bjerrum length must be finite and > 0, got -1");
  p = make_potential(Electrostatics::none, ShortRange::wca, BondKind::none);
  p.lj_epsilon = -0.5;
  expect_error([&] { make(p, Cell{}); }, ErrorCode::invalid_argument,
               "Lennard-Jones epsilon must be finite and >= 0, got -0.5");
  p = make_potential(Electrostatics::coulomb, ShortRange::none, BondKind::harmonic);
  p.bond_k = 0;
  expect_error([&] { make(p, Cell{}); }, ErrorCode::invalid_argument,
               "harmonic bond constant k must be finite and > 0, got 0");
  p.bond_k = 1;
  p.bond_r0 = -1;
  expect_error([&] { make(p, Cell{}); }, ErrorCode::invalid_argument,
               "rest length r0 must be finite and >= 0, got -1");
  p = make_potential(Electrostatics::coulomb, ShortRange::none, BondKind::fene);
  p.bond_rmax = 0;
  expect_error([&] { make(p, Cell{}); }, ErrorCode::invalid_argument,
               "FENE maximum extension r_max must be finite and > 0, got 0");
  expect_error([&] { make(good, Cell{}, -1); }, ErrorCode::invalid_argument,
               "threads must be >= 0");
}

System three() {
  System s;
  s.x = {0, 1.5, 3};
  s.y = {0, 0, 0};
  s.z = {0, 0, 0};
  s.charge = {1, -1, 1};
  s.radius = {0.5, 0.5, 0.5};
  return s;
}

TEST(McEngine, BadSystemsAreRefusedNamingTheParticle) {
  const Potential pot =
      make_potential(Electrostatics::coulomb, ShortRange::hard_sphere, BondKind::fene);
  Cell sphere = make_cell(Boundary::sphere);
  sphere.radius = 5;
  auto engine = cpu_engine<double>(pot, sphere);
  const auto refused = [&](System s, ErrorCode code, const std::string &needle) {
    expect_error([&] { engine.set_system(s); }, code, needle);
  };
  System s = three();
  s.charge.pop_back();
  refused(s, ErrorCode::shape_mismatch, "x 3, y 3, z 3, charge 2, radius 3");
  s = three();
  s.species = {1, 2};
  refused(s, ErrorCode::shape_mismatch, "species has 2 entries for 3 particles");
  s = three();
  s.y[1] = std::nan("");
  refused(s, ErrorCode::non_finite, "particle 1: y = nan is not finite");
  s = three();
  s.charge[2] = -std::numeric_limits<double>::infinity();
  refused(s, ErrorCode::non_finite, "particle 2: charge = -inf is not finite");
  s = three();
  s.radius[0] = -0.1;
  refused(s, ErrorCode::invalid_argument, "particle 0: radius = -0.1 is negative");
  s = three();
  s.bonds = {{0, 1}, {1, 3}};
  refused(s, ErrorCode::invalid_argument, "bond 1 (1, 3) names a particle outside [0, 3)");
  s.bonds = {{0, 1}, {2, 2}};
  refused(s, ErrorCode::invalid_argument, "bond 1 joins particle 2 to itself");
  s.bonds = {{0, 1}, {1, 2}, {1, 0}};
  refused(s, ErrorCode::invalid_argument, "bonds 0 and 2 both join particles 0 and 1");
  s = three();
  s.z[2] = 4.5;
  refused(s, ErrorCode::invalid_argument,
          "particle 2 at (3, 0, 4.5) is outside the spherical cell: |x| = 5.40832");
  s = three();
  s.x[2] = 2.25;
  refused(s, ErrorCode::invalid_argument,
          "hard spheres 1 and 2 overlap at the start: distance 0.75 < contact distance 1");
  s = three();
  s.x[2] = 0;
  refused(s, ErrorCode::invalid_argument, "particles 0 and 2 coincide at the start");
  s = three();
  s.bonds = {{0, 1}, {0, 2}};
  refused(s, ErrorCode::invalid_argument,
          "FENE bond 1 between particles 0 and 2 is broken at the start: length 3 >= r_max 2");
  // Too many to fit: 250 spheres of radius 1 in a cell of radius 5 (+1).
  s = System{};
  for (int i = 0; i < 250; ++i) {
    s.x.push_back(0.01 * i), s.y.push_back(0), s.z.push_back(0), s.charge.push_back(0),
        s.radius.push_back(1);
  }
  refused(s, ErrorCode::invalid_argument, "250 hard spheres of total volume 1047.2 do not fit");
  Cell box = make_cell(Boundary::periodic);
  box.box = {3, 3, 3};
  auto boxed = cpu_engine<double>(pot, box);
  expect_error([&] { boxed.set_system(s); }, ErrorCode::invalid_argument,
               "do not fit in the periodic box 3 x 3 x 3");
  // Coincident point particles (no short-range term) are found too, across a periodic face.
  auto points =
      cpu_engine<double>(make_potential(Electrostatics::coulomb, ShortRange::none, BondKind::none),
                         make_cell(Boundary::periodic));
  s = three();
  s.x[2] = 12;
  s.x[0] = 0;
  expect_error([&] { points.set_system(s); }, ErrorCode::invalid_argument,
               "particles 0 and 2 coincide at the start");
  // The engine still holds nothing after refusals.
  EXPECT_EQ(engine.size(), 0);
}

TEST(McEngine, BadMovesAndTranslateParametersAreRefused) {
  const Potential pot =
      make_potential(Electrostatics::coulomb, ShortRange::hard_sphere, BondKind::none);
  auto engine = cpu_engine<double>(pot, Cell{});
  engine.set_system(three());
  expect_error(
      [&] {
        engine.delta(Move{{0, 1}, {0, 0, 0}});
      },
      ErrorCode::shape_mismatch, "move: xyz has 3 values for 2 particles");
  expect_error(
      [&] {
        engine.delta(Move{{3}, {0, 0, 0}});
      },
      ErrorCode::invalid_argument, "move: particle index 3 (entry 0) is outside [0, 3)");
  expect_error(
      [&] {
        engine.apply(Move{{-1}, {0, 0, 0}});
      },
      ErrorCode::invalid_argument, "particle index -1");
  expect_error(
      [&] {
        engine.delta(Move{{1, 1}, {0, 5, 0, 0, 6, 0}});
      },
      ErrorCode::invalid_argument, "move: particle 1 is listed more than once");
  expect_error(
      [&] {
        engine.delta(Move{{2}, {0, std::nan(""), 0}});
      },
      ErrorCode::non_finite, "move: particle 2: new y = nan is not finite");
  EXPECT_EQ(engine.system().x[2], 3); // nothing applied
  TranslateParams p;
  p.count = 10;
  p.max_step = -1;
  expect_error([&] { engine.translate(p); }, ErrorCode::invalid_argument,
               "max_step must be finite and >= 0, got -1");
  p.max_step = 1;
  p.step = {1, 1};
  expect_error([&] { engine.translate(p); }, ErrorCode::shape_mismatch,
               "step has 2 entries for 3 particles");
  p.step = {1, std::nan(""), 1};
  expect_error([&] { engine.translate(p); }, ErrorCode::invalid_argument,
               "step of particle 1 must be finite and >= 0, got nan");
  p.step.clear();
  p.movable = {0, 7};
  expect_error([&] { engine.translate(p); }, ErrorCode::invalid_argument,
               "movable particle 7 (entry 1) is outside [0, 3)");
  p.movable = {2, 2};
  expect_error([&] { engine.translate(p); }, ErrorCode::invalid_argument,
               "movable particle 2 is listed more than once");
  p.movable.clear();
  p.count = -1;
  expect_error([&] { engine.translate(p); }, ErrorCode::invalid_argument,
               "count must be >= 0, got -1");
  auto empty = cpu_engine<double>(pot, Cell{});
  p.count = 1;
  expect_error([&] { empty.translate(p); }, ErrorCode::invalid_argument, "no particles to move");
  System ragged;
  ragged.x = {1}, ragged.y = {2}, ragged.z = {3}, ragged.charge = {1};
  expect_error([&] { engine.total_full_recompute(ragged); }, ErrorCode::shape_mismatch, "radius 0");
}

} // namespace
} // namespace ksum::mc
