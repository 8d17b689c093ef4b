// The polyelectrolyte simulation (include/ksum/mc_sim.hpp, seed 004 Paper I): the model builder,
// the chain moves, reproducibility and exact restarts, checkpoint errors, the running energy
// against full recomputes, observables, trajectories and the error contracts. Detailed balance is
// checked in detailed_balance_test.cpp.
#include <ksum/error.hpp>
#include <ksum/mc_sim.hpp>

#include "mc/chain_moves.hpp"
#include "mc/philox.hpp"
#include "support/expect_error.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numbers>
#include <random>
#include <sstream>
#include <string>

namespace ksum::mc {
namespace {

namespace fs = std::filesystem;
using test::expect_error;

double pair_distance(const System &s, const Cell &c, std::int64_t i, std::int64_t j) {
  double d[3] = {s.x[i] - s.x[j], s.y[i] - s.y[j], s.z[i] - s.z[j]};
  if (c.boundary == Boundary::periodic)
    for (int a = 0; a < 3; ++a)
      d[a] -= c.box[a] * std::round(d[a] / c.box[a]);
  return std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
}

// A fresh temporary folder per test, removed at the end.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string &name) {
    path = fs::temp_directory_path() /
           (name + "_" + std::to_string(std::random_device{}()) + "_ksum_mc_test");
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

ModelOptions small_model(Boundary boundary) {
  ModelOptions o;
  o.chains = 2;
  o.monomers = 8;
  o.monomer_radius = 1;
  o.bond_length = 2.5;
  o.counterion_radius = 1;
  o.salt_pairs = 3;
  o.salt_radius = 1;
  o.boundary = boundary;
  o.cell_radius = 14;
  o.box = 24;
  o.seed = 11;
  return o;
}

SimulationOptions small_options(std::uint64_t seed = 5) {
  SimulationOptions o;
  o.potential.bjerrum = 7.14;
  o.potential.bond = BondKind::harmonic;
  o.potential.bond_k = 2;
  o.potential.bond_r0 = 2.5;
  o.moves.monomer_step = 0.8;
  o.moves.ion_step = 3;
  o.moves.pivots = 2;
  o.moves.crankshafts = 2;
  o.sample.every = 2;
  o.sample.recompute_every = 5;
  o.sample.radial_bins = 20;
  o.seed = seed;
  o.execution.backend = Backend::cpu;
  o.execution.threads = 1;
  return o;
}

TEST(McModel, CountsNeutralityBondsAndNoOverlaps) {
  for (Boundary boundary : {Boundary::sphere, Boundary::periodic}) {
    ModelOptions o = small_model(boundary);
    o.monomer_charge = -1;
    o.charge_every = 2; // 4 charged monomers per chain
    o.counterion_valence = 2;
    const Model m = build_polyelectrolyte(o);
    const System &s = m.system;
    // 16 monomers, 8 charged → charge −8 → 4 divalent counter-ions, 6 salt ions.
    ASSERT_EQ(s.size(), 16 + 4 + 6);
    EXPECT_EQ(m.chains, 2);
    EXPECT_EQ(m.monomers, 8);
    double q = 0;
    int counts[5] = {0, 0, 0, 0, 0};
    for (std::int64_t i = 0; i < s.size(); ++i) {
      q += s.charge[i];
      ++counts[s.species[i]];
    }
    EXPECT_EQ(q, 0.0);
    EXPECT_EQ(counts[int(Species::charged_monomer)], 8);
    EXPECT_EQ(counts[int(Species::neutral_monomer)], 8);
    EXPECT_EQ(counts[int(Species::counterion)], 4);
    EXPECT_EQ(counts[int(Species::salt_cation)], 3);
    EXPECT_EQ(counts[int(Species::salt_anion)], 3);
    for (std::int64_t i = 16; i < 20; ++i)
      EXPECT_EQ(s.charge[i], 2.0);
    EXPECT_EQ(s.charge[m.chain_particle(1, 2)], -1.0);
    EXPECT_EQ(s.charge[m.chain_particle(1, 3)], 0.0);
    ASSERT_EQ(s.bonds.size(), 14u);
    for (const auto &b : s.bonds) {
      EXPECT_EQ(b[1], b[0] + 1);
      EXPECT_NE(b[1] % 8, 0) << "a bond between chains";
      EXPECT_NEAR(pair_distance(s, m.cell, b[0], b[1]), 2.5, 1e-12);
    }
    for (std::int64_t i = 0; i < s.size(); ++i) {
      if (boundary == Boundary::sphere) {
        EXPECT_LE(std::hypot(s.x[i], s.y[i], s.z[i]), 14.0);
      } else {
        for (double v : {s.x[i], s.y[i], s.z[i]}) {
          EXPECT_GE(v, 0.0);
          EXPECT_LT(v, 24.0);
        }
      }
      for (std::int64_t j = i + 1; j < s.size(); ++j) {
        const bool bonded = j == i + 1 && i < 16 && j % 8 != 0;
        if (!bonded) {
          EXPECT_GE(pair_distance(s, m.cell, i, j), s.radius[i] + s.radius[j]) << i << " " << j;
        }
      }
    }
  }
}

// A float engine checks the contacts in float: a placement just above contact in double could
// round to an overlap. The 10^6-particle model of mc_bench (seed 7) did, before the builder kept a
// margin (pair 100456 / 100459 at 3.99999583 < 4; this test failed so). 1.4 s.
TEST(McModel, LargeModelStartsWithoutOverlapInFloat) {
  ModelOptions o;
  o.monomers = 100;
  o.chains = 5000;
  o.monomer_radius = o.counterion_radius = 2;
  o.bond_length = 5;
  o.boundary = Boundary::sphere;
  o.monomer_density = 0.05 / (2 * 4.0 / 3.0 * std::numbers::pi * 8.0);
  o.seed = 7;
  const Model m = build_polyelectrolyte(o);
  ASSERT_EQ(m.system.size(), 1000000);
  EngineOptions eo;
  eo.cell = m.cell;
  eo.backend = Backend::cpu;
  eo.potential.bond = BondKind::harmonic;
  eo.potential.bond_k = 0.5;
  eo.potential.bond_r0 = 5;
  Engine<float> engine(eo);
  EXPECT_NO_THROW(engine.set_system(m.system));
}

TEST(McModel, CellFromDensityAndReproducible) {
  ModelOptions o = small_model(Boundary::sphere);
  o.cell_radius = 0;
  o.monomer_density = 1e-3; // 16 monomers → V = 16000, R = (3·16000 / 4π)^{1/3}
  const Model a = build_polyelectrolyte(o), b = build_polyelectrolyte(o);
  EXPECT_NEAR(a.cell.radius, std::cbrt(3 * 16000.0 / (4 * std::numbers::pi)), 1e-12);
  EXPECT_EQ(a.system.x, b.system.x);
  EXPECT_EQ(a.system.z, b.system.z);
  o.seed = 12;
  const Model c = build_polyelectrolyte(o);
  EXPECT_NE(a.system.x, c.system.x);
  o.boundary = Boundary::periodic;
  o.box = 0;
  EXPECT_NEAR(build_polyelectrolyte(o).cell.box[1], std::cbrt(16000.0), 1e-9);
}

TEST(McModel, BadInputs) {
  auto build = [](auto edit) {
    return [edit] {
      ModelOptions o = small_model(Boundary::sphere);
      edit(o);
      build_polyelectrolyte(o);
    };
  };
  expect_error(build([](ModelOptions &o) { o.cell_radius = 0; }), ErrorCode::invalid_argument,
               "radius = 0");
  expect_error(build([](ModelOptions &o) {
                 o.boundary = Boundary::periodic;
                 o.box = 0;
               }),
               ErrorCode::invalid_argument, "box edge = 0");
  expect_error(build([](ModelOptions &o) { o.monomer_charge = std::nan(""); }),
               ErrorCode::non_finite, "monomer_charge");
  expect_error(build([](ModelOptions &o) { o.counterion_valence = 3; }),
               ErrorCode::invalid_argument, "not a multiple of the counter-ion valence 3");
  // 1000 ions of radius 2 in a sphere of radius 14: volume fraction 2.9 > 0.3.
  expect_error(build([](ModelOptions &o) { o.salt_pairs = 500; }), ErrorCode::invalid_argument,
               "volume fraction");
  // Allowed by the volume check but not insertable: a tiny max_tries at a high fraction.
  expect_error(build([](ModelOptions &o) {
                 o.chains = 0;
                 o.salt_pairs = 300;
                 o.max_volume_fraction = 0.6;
                 o.max_tries = 2;
               }),
               ErrorCode::invalid_argument, "cannot insert particle");
  expect_error(build([](ModelOptions &o) {
                 o.bond_length = 30;
                 o.monomers = 30;
                 o.max_tries = 3;
               }),
               ErrorCode::invalid_argument, "cannot place chain 0");
  expect_error(build([](ModelOptions &o) {
                 o.boundary = Boundary::periodic;
                 o.box = 4;
               }),
               ErrorCode::invalid_argument, "half the box edge");
  expect_error(build([](ModelOptions &o) { o.boundary = Boundary::open; }),
               ErrorCode::invalid_argument, "spherical cell or a periodic box");
  expect_error(build([](ModelOptions &o) { o.chains = -1; }), ErrorCode::invalid_argument,
               "chains = -1");
}

// Random Philox words for the proposals (a fixed stream of this test, not the simulation's).
Philox4 test_draw(std::uint64_t k) {
  return draw(99, k, 7);
}

TEST(McChainMoves, PivotAndCrankshaftAreRigidAndKeepBonds) {
  for (Boundary boundary : {Boundary::sphere, Boundary::periodic}) {
    ModelOptions mo = small_model(boundary);
    mo.chains = 1;
    mo.monomers = 12;
    mo.salt_pairs = 0;
    mo.monomer_charge = 0;
    mo.cell_radius = 40;
    const Model m = build_polyelectrolyte(mo);
    std::vector<Vec3> before, after;
    unwrapped_chain(m.system, m.cell, 0, 12, before);
    int proposed = 0;
    for (std::uint64_t k = 0; k < 400; ++k) {
      const bool crank = k % 2 == 1;
      Move move;
      const bool ok = crank
                          ? propose_crankshaft(m.system, m.cell, 0, 12, 3, test_draw(k), 3.0, move)
                          : propose_pivot(m.system, m.cell, 0, 12, test_draw(k), k % 4 == 0,
                                          k % 3 == 0 ? 0.4 : std::numbers::pi, move);
      if (!ok)
        continue;
      ++proposed;
      EXPECT_EQ(move.rigid, boundary != Boundary::periodic);
      System s = m.system;
      for (std::size_t a = 0; a < move.particles.size(); ++a) {
        const auto i = move.particles[a];
        s.x[i] = move.xyz[3 * a];
        s.y[i] = move.xyz[3 * a + 1];
        s.z[i] = move.xyz[3 * a + 2];
        if (boundary == Boundary::periodic)
          for (double v : {s.x[i], s.y[i], s.z[i]}) {
            EXPECT_GE(v, 0.0);
            EXPECT_LT(v, 24.0);
          }
      }
      if (crank) {
        ASSERT_EQ(move.particles.size(), 2u); // span 3: two monomers between i and i + 3
        EXPECT_EQ(move.particles[1], move.particles[0] + 1);
      } else {
        // One end of the chain moves: a contiguous run touching monomer 0 or 11.
        EXPECT_TRUE(move.particles.front() == 0 || move.particles.back() == 11);
      }
      unwrapped_chain(s, m.cell, 0, 12, after);
      // Every distance among the moved monomers and among the fixed ones is unchanged (a rigid
      // motion of each part), so in particular every bond length.
      std::vector<bool> moved(12, false);
      for (auto i : move.particles)
        moved[std::size_t(i)] = true;
      auto dist = [](const std::vector<Vec3> &u, int i, int j) {
        return std::hypot(u[i][0] - u[j][0], u[i][1] - u[j][1], u[i][2] - u[j][2]);
      };
      for (int i = 0; i < 12; ++i)
        for (int j = i + 1; j < 12; ++j)
          if (moved[i] == moved[j] || j == i + 1) {
            ASSERT_NEAR(dist(after, i, j), dist(before, i, j), 1e-11) << i << " " << j;
          }
      // The fixed monomers did not move (the unwrapped chain may be shifted by a box vector when
      // monomer 0 moved: compare the stored positions).
      for (int i = 0; i < 12; ++i)
        if (!moved[i]) {
          EXPECT_EQ(s.x[i], m.system.x[i]);
          EXPECT_EQ(s.z[i], m.system.z[i]);
        }
    }
    EXPECT_GT(proposed, 300);
  }
}

// A Haar-random rotation of angle θ has density (1 − cos θ)/π, so its trace 1 + 2 cos θ has
// mean 0 and second moment 1; its columns are orthonormal with determinant +1.
TEST(McChainMoves, UniformRotationIsHaar) {
  const int n = 40000;
  double s1 = 0, s2 = 0;
  for (int k = 0; k < n; ++k) {
    const Philox4 d = test_draw(std::uint64_t(k));
    const Rotation r = uniform_rotation(uniform01(d.v[0]), uniform01(d.v[1]), uniform01(d.v[2]));
    const double tr = r.m[0][0] + r.m[1][1] + r.m[2][2];
    s1 += tr;
    s2 += tr * tr;
    if (k < 100) {
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
          double dot = 0;
          for (int a = 0; a < 3; ++a)
            dot += r.m[a][i] * r.m[a][j];
          EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, 1e-14);
        }
      const double det = r.m[0][0] * (r.m[1][1] * r.m[2][2] - r.m[1][2] * r.m[2][1]) -
                         r.m[0][1] * (r.m[1][0] * r.m[2][2] - r.m[1][2] * r.m[2][0]) +
                         r.m[0][2] * (r.m[1][0] * r.m[2][1] - r.m[1][1] * r.m[2][0]);
      EXPECT_NEAR(det, 1.0, 1e-14);
    }
  }
  // Var(trace) = 1: 5 standard errors of the mean is 5/sqrt(n) = 0.025.
  EXPECT_NEAR(s1 / n, 0.0, 0.025);
  // E[trace²] = 1 and E[trace⁴] = 3 (moments of the Haar measure), so Var(trace²) = 2.
  EXPECT_NEAR(s2 / n, 1.0, 5 * std::sqrt(2.0 / n));
}

TEST(McBlockAverage, IidAndCorrelatedSeriesAgainstTheirKnownErrors) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal;
  const std::size_t n = 1 << 15;
  std::vector<double> iid(n), ar(n);
  const double rho = 0.9;
  double x = 0;
  for (std::size_t i = 0; i < n; ++i) {
    iid[i] = 2 + normal(rng);
    x = rho * x + normal(rng);
    ar[i] = x;
  }
  const Estimate a = block_average(iid);
  EXPECT_NEAR(a.mean, 2, 5 / std::sqrt(double(n)));
  // σ/√n; the largest level estimate lies above it by its own noise (≤ ~35 % at 16 blocks).
  const double se_iid = 1 / std::sqrt(double(n));
  EXPECT_GT(a.error, 0.9 * se_iid);
  EXPECT_LT(a.error, 1.4 * se_iid);
  // AR(1): Var x = 1/(1 − ρ²), integrated correlation (1 + ρ)/(1 − ρ) = 19.
  const double se_ar = std::sqrt(1 / (1 - rho * rho) * (1 + rho) / (1 - rho) / double(n));
  const Estimate b = block_average(ar);
  EXPECT_GT(b.error, 0.75 * se_ar);
  EXPECT_LT(b.error, 1.4 * se_ar);
  // The naive error would be ~4.4 times too small.
  EXPECT_GT(b.error, 3 * std::sqrt(1 / (1 - rho * rho) / double(n)));
  EXPECT_EQ(block_average({}).samples, 0);
}

bool same_positions(const System &a, const System &b) {
  return a.x == b.x && a.y == b.y && a.z == b.z;
}

TEST(McSimulation, SameSeedSameTrajectory) {
  const Model m = build_polyelectrolyte(small_model(Boundary::sphere));
  Simulation a(m, small_options(5)), b(m, small_options(5)), c(m, small_options(6));
  a.run(12);
  b.run(12);
  c.run(12);
  EXPECT_TRUE(same_positions(a.model().system, b.model().system));
  EXPECT_EQ(a.energy(), b.energy());
  EXPECT_FALSE(same_positions(a.model().system, c.model().system));
  const Summary s = a.summary();
  EXPECT_EQ(s.sweeps, 12);
  EXPECT_EQ(s.samples, 6);
  // 38 particles (16 monomers, 16 counter-ions, 6 salt ions): 38 translations, then 2 chains ×
  // (2 pivots + 2 crankshafts) per sweep.
  EXPECT_EQ(a.move_counter(), 12u * (38 + 8));
  EXPECT_EQ(s.acceptance[0].attempted, 12 * 38);
  EXPECT_EQ(s.acceptance[1].attempted, 12 * 4);
  EXPECT_EQ(s.acceptance[2].attempted, 12 * 4);
  for (const Acceptance &acc : s.acceptance) {
    EXPECT_GT(acc.accepted, 0);
    EXPECT_LT(acc.accepted, acc.attempted);
  }
  EXPECT_EQ(s.recomputes, 2);
  EXPECT_LT(s.max_drift, 1e-9);
}

std::string fmt_name(Boundary b, Precision p) {
  return std::string(b == Boundary::sphere ? "sphere" : "box") + "_" + std::string(to_string(p)) +
         ".ckpt";
}

TEST(McSimulation, RestartContinuesBitIdentically) {
  TempDir dir("restart");
  for (Boundary boundary : {Boundary::sphere, Boundary::periodic}) {
    for (Precision precision : {Precision::float64, Precision::float32}) {
      const Model m = build_polyelectrolyte(small_model(boundary));
      SimulationOptions o = small_options(21);
      o.execution.precision = precision;
      // 7 sweeps: between the sample (2) and recompute (5) intervals, which the continuation meets.
      Simulation a(m, o);
      a.run(14);
      Simulation b(m, o);
      b.run(7);
      const fs::path file = dir.path / fmt_name(boundary, precision);
      b.save(file);
      Execution ex = o.execution;
      Simulation c = Simulation::load(file, ex);
      EXPECT_EQ(c.sweeps(), 7);
      EXPECT_EQ(c.move_counter(), b.move_counter());
      c.run(7);
      const System &sa = a.model().system, &sc = c.model().system;
      EXPECT_TRUE(same_positions(sa, sc)) << int(boundary) << " " << int(precision);
      EXPECT_EQ(a.energy(), c.energy());
      EXPECT_EQ(a.move_counter(), c.move_counter());
      const Summary s1 = a.summary(), s2 = c.summary();
      for (int k = 0; k < move_kinds; ++k) {
        EXPECT_EQ(s1.acceptance[k].accepted, s2.acceptance[k].accepted);
        EXPECT_EQ(s1.acceptance[k].attempted, s2.acceptance[k].attempted);
      }
      EXPECT_EQ(s1.energy_mean.mean, s2.energy_mean.mean);
      EXPECT_EQ(s1.rg.mean, s2.rg.mean);
      EXPECT_EQ(s1.max_drift, s2.max_drift);
      const Table<double> ta = a.samples(), tc = c.samples();
      ASSERT_EQ(ta.rows(), tc.rows());
      ASSERT_EQ(ta.cols(), tc.cols());
      for (std::int64_t r = 0; r < ta.rows(); ++r)
        for (std::int64_t k = 0; k < ta.cols(); ++k)
          EXPECT_EQ(ta(r, k), tc(r, k));
      const Table<double> ra = a.radial(), rc = c.radial();
      for (std::int64_t r = 0; r < ra.rows(); ++r)
        EXPECT_EQ(ra(r, 2), rc(r, 2));
    }
  }
}

std::string read_bytes(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
void write_bytes(const fs::path &p, const std::string &b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << b;
}

TEST(McSimulation, CheckpointErrors) {
  TempDir dir("ckpt");
  const Model m = build_polyelectrolyte(small_model(Boundary::sphere));
  Simulation sim(m, small_options());
  sim.run(2);
  const fs::path good = dir.path / "good.ckpt";
  sim.save(good);
  // Never overwrite without being asked; with overwrite the file is replaced.
  expect_error([&] { sim.save(good); }, ErrorCode::io, "good.ckpt: file exists");
  sim.run(1);
  sim.save(good, true);
  EXPECT_EQ(Simulation::load(good, small_options().execution).sweeps(), 3);

  const std::string bytes = read_bytes(good);
  auto variant = [&](const std::string &name, const std::function<void(std::string &)> &edit) {
    std::string b = bytes;
    edit(b);
    const fs::path p = dir.path / name;
    write_bytes(p, b);
    return p;
  };
  const fs::path flipped = variant("flipped.ckpt", [](std::string &b) { b[b.size() / 2] ^= 0x10; });
  expect_error([&] { Simulation::load(flipped); }, ErrorCode::parse,
               "flipped.ckpt: corrupt checkpoint (checksum mismatch)");
  const fs::path cut = variant("cut.ckpt", [](std::string &b) { b.resize(b.size() - 9); });
  expect_error([&] { Simulation::load(cut); }, ErrorCode::parse, "cut.ckpt: truncated");
  const fs::path magic = variant("magic.ckpt", [](std::string &b) { b[0] = 'X'; });
  expect_error([&] { Simulation::load(magic); }, ErrorCode::parse,
               "magic.ckpt: not a ksum MC checkpoint");
  const fs::path version = variant("version.ckpt", [](std::string &b) { b[8] = 7; });
  expect_error([&] { Simulation::load(version); }, ErrorCode::parse,
               "version.ckpt: checkpoint version 7");
  const fs::path tiny = variant("tiny.ckpt", [](std::string &b) { b.resize(5); });
  expect_error([&] { Simulation::load(tiny); }, ErrorCode::parse, "only 5 bytes");
  expect_error([&] { Simulation::load(dir.path / "missing.ckpt"); }, ErrorCode::io,
               "missing.ckpt: cannot open");
}

TEST(McSimulation, ChainMovesAloneKeepBondLengths) {
  for (Boundary boundary : {Boundary::sphere, Boundary::periodic}) {
    ModelOptions mo = small_model(boundary);
    SimulationOptions o = small_options();
    o.potential.bond = BondKind::none;
    o.moves.translations = 0;
    o.moves.pivots = 4;
    o.moves.crankshafts = 4;
    o.moves.crankshaft_span = 3;
    const Model m = build_polyelectrolyte(mo);
    Simulation sim(m, o);
    sim.run(60);
    const System &s = sim.model().system;
    for (const auto &b : s.bonds)
      EXPECT_NEAR(pair_distance(s, m.cell, b[0], b[1]), 2.5, 1e-9);
    // The ions did not move; the chains did.
    for (std::int64_t i = 16; i < s.size(); ++i)
      EXPECT_EQ(s.x[i], m.system.x[i]);
    EXPECT_NE(s.x[3], m.system.x[3]);
    const Summary sum = sim.summary();
    EXPECT_GT(sum.acceptance[1].accepted, 0);
    EXPECT_GT(sum.acceptance[2].accepted, 0);
    EXPECT_EQ(sum.acceptance[0].attempted, 0);
  }
}

TEST(McSimulation, RunningEnergyMatchesFullRecomputeOver1e5Moves) {
  const Model m = build_polyelectrolyte(small_model(Boundary::sphere));
  for (Precision precision : {Precision::float64, Precision::float32}) {
    SimulationOptions o = small_options(8);
    o.sample.every = 0;
    o.sample.recompute_every = 0; // the running U is never reset
    o.execution.precision = precision;
    Simulation sim(m, o);
    const double u0 = sim.energy();
    sim.run(2200); // 2200 × (38 + 8) = 101,200 moves
    EXPECT_GE(sim.move_counter(), 100000u);
    const double running = sim.energy();
    const Energy full = sim.recompute();
    ASSERT_TRUE(full.finite());
    EXPECT_NE(running, u0);
    // double: each ΔU is a sum of O(N) terms with ~1e-16 relative rounding, 1e5 of them drift
    // ~1e-13 kT. float: the pair terms carry ~1e-7 relative rounding, the ΔU of a move ~1e-6 kT,
    // a random walk of 1e5 such steps ~1e-4 kT.
    const double tolerance = precision == Precision::float64 ? 1e-10 : 1e-4;
    EXPECT_NEAR(running, full.value, tolerance * (1 + std::abs(full.value)));
    std::printf("%s: running U %.12f, recomputed %.12f (drift %.2e) after %llu moves\n",
                std::string(to_string(precision)).c_str(), running, full.value,
                running - full.value, static_cast<unsigned long long>(sim.move_counter()));
    // The engine's total agrees with the fp64 reference on the final positions.
    const Energy ref = reference_total(sim.model().system, o.potential, m.cell);
    EXPECT_NEAR(full.value, ref.value,
                (precision == Precision::float64 ? 1e-10 : 1e-5) * (1 + std::abs(ref.value)));
  }
}

TEST(McObservables, ChainSizesUnwrappedAcrossTheBox) {
  Model m;
  m.cell.boundary = Boundary::periodic;
  m.cell.box = {10, 10, 10};
  m.chains = 1;
  m.monomers = 4;
  // A straight chain x = 8.5, 9.5, 10.5, 11.5 wrapped into [0, 10).
  m.system.x = {8.5, 9.5, 0.5, 1.5};
  m.system.y = {5, 5, 5, 5};
  m.system.z = {5, 5, 5, 5};
  m.system.charge = {0, 0, 0, 0};
  m.system.radius = {0.4, 0.4, 0.4, 0.4};
  m.system.bonds = {{0, 1}, {1, 2}, {2, 3}};
  SimulationOptions o;
  o.execution.backend = Backend::cpu;
  Simulation sim(m, o);
  EXPECT_NEAR(sim.end_to_end(0), 3.0, 1e-12);
  EXPECT_NEAR(sim.gyration_radius(0), std::sqrt(1.25), 1e-12); // offsets ±0.5, ±1.5
  expect_error([&] { sim.end_to_end(1); }, ErrorCode::invalid_argument, "chain 1 out of range");
}

// Without interactions the counter-ions are an ideal gas: the sphere's n(r) integrates to their
// number, and the box's g(r) is 1.
TEST(McObservables, RadialDistributionOfAnIdealGas) {
  for (Boundary boundary : {Boundary::sphere, Boundary::periodic}) {
    ModelOptions mo = small_model(boundary);
    mo.monomer_radius = mo.counterion_radius = mo.salt_radius = 0;
    mo.salt_pairs = 0;
    SimulationOptions o = small_options();
    o.potential.electrostatics = Electrostatics::none;
    o.potential.short_range = ShortRange::none;
    o.moves.ion_step = 10;
    o.sample.every = 1;
    o.sample.radial_bins = 6;
    const Model m = build_polyelectrolyte(mo);
    Simulation sim(m, o);
    sim.run(400);
    const Table<double> t = sim.radial();
    ASSERT_EQ(t.rows(), 6);
    EXPECT_EQ(t.names[1], boundary == Boundary::sphere ? "density" : "g");
    if (boundary == Boundary::sphere) {
      // Every counter-ion is inside: Σ n(r) × shell volume = 16.
      double total = 0, counted = 0;
      for (std::int64_t b = 0; b < 6; ++b) {
        const double r0 = 14.0 * b / 6, r1 = 14.0 * (b + 1) / 6;
        total += t(b, 1) * 4.0 / 3 * std::numbers::pi * (r1 * r1 * r1 - r0 * r0 * r0);
        counted += t(b, 2);
      }
      EXPECT_NEAR(total, 16.0, 1e-9);
      EXPECT_EQ(counted, 16.0 * 400);
      // Uniform density 16 / V in the outer shells (most samples), within 15 %.
      const double n0 = 16 / (4.0 / 3 * std::numbers::pi * 14 * 14 * 14);
      for (std::int64_t b = 3; b < 6; ++b)
        EXPECT_NEAR(t(b, 1), n0, 0.15 * n0) << b;
    } else {
      for (std::int64_t b = 2; b < 6; ++b)
        EXPECT_NEAR(t(b, 1), 1.0, 0.1) << b;
    }
  }
}

TEST(McSimulation, TrajectoriesAndProgress) {
  TempDir dir("traj");
  const Model m = build_polyelectrolyte(small_model(Boundary::sphere));
  SimulationOptions o = small_options();
  o.trajectory.xyz = dir.path / "t.xyz";
  o.trajectory.csv = dir.path / "t.csv";
  o.trajectory.every = 2;
  std::vector<Progress> seen;
  {
    Simulation sim(m, o);
    const auto done = sim.run(
        6,
        [&](const Progress &p) {
          seen.push_back(p);
          return true;
        },
        2);
    EXPECT_EQ(done, 6);
    // Stopped by the callback after the first report.
    EXPECT_EQ(sim.run(4, [](const Progress &) { return false; }), 1);
    EXPECT_EQ(sim.sweeps(), 7);
  }
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_DOUBLE_EQ(seen.back().fraction, 1.0);
  EXPECT_EQ(seen.back().sweep, 6);
  EXPECT_EQ(seen[0].acceptance[0].attempted, 2 * 38);

  std::ifstream xyz(o.trajectory.xyz);
  std::string line;
  int lines = 0, frames = 0;
  while (std::getline(xyz, line)) {
    if (lines % 40 == 0) {
      EXPECT_EQ(line, "38");
      ++frames;
    }
    if (lines % 40 == 2) {
      EXPECT_EQ(line.substr(0, 2), "M ");
    }
    if (lines % 40 == 18) {
      EXPECT_EQ(line.substr(0, 3), "CI ");
    }
    if (lines % 40 == 39) {
      EXPECT_EQ(line.substr(0, 3), "Cl ");
    }
    ++lines;
  }
  EXPECT_EQ(frames, 3); // sweeps 2, 4, 6
  std::ifstream csv(o.trajectory.csv);
  std::getline(csv, line);
  EXPECT_EQ(line, "sweep,particle,x,y,z");
  int rows = 0;
  while (std::getline(csv, line))
    ++rows;
  EXPECT_EQ(rows, 3 * 38);
  // An existing trajectory is not overwritten unless asked.
  expect_error([&] { Simulation(m, o); }, ErrorCode::io, "t.xyz: file exists");
  o.trajectory.append = true;
  {
    Simulation sim(m, o);
    sim.run(2);
  }
  std::ifstream csv2(o.trajectory.csv);
  rows = 0;
  while (std::getline(csv2, line))
    ++rows;
  EXPECT_EQ(rows, 1 + 4 * 38); // one header, four frames
}

TEST(McSimulation, BadInputs) {
  const Model good = build_polyelectrolyte(small_model(Boundary::sphere));
  auto with_model = [&](auto edit) {
    return [&good, edit] {
      Model m = good;
      edit(m);
      Simulation(m, small_options());
    };
  };
  auto with_options = [&](auto edit) {
    return [&good, edit] {
      SimulationOptions o = small_options();
      edit(o);
      Simulation(good, o);
    };
  };
  expect_error(with_model([](Model &m) { m.system.charge[3] = std::nan(""); }),
               ErrorCode::non_finite, "3");
  expect_error(with_model([](Model &m) { m.cell.radius = 0; }), ErrorCode::invalid_argument,
               "radius");
  expect_error(with_model([](Model &m) {
                 m.system.x[5] = m.system.x[20];
                 m.system.y[5] = m.system.y[20];
                 m.system.z[5] = m.system.z[20];
               }),
               ErrorCode::invalid_argument, "5");
  expect_error(with_model([](Model &m) { m.monomers = 40; }), ErrorCode::invalid_argument,
               "chain layout 2 chains × 40 monomers");
  expect_error(with_model([](Model &m) { m.system.species.pop_back(); }), ErrorCode::shape_mismatch,
               "37 species for 38 particles");
  expect_error(with_options([](SimulationOptions &o) { o.moves.crankshaft_span = 1; }),
               ErrorCode::invalid_argument, "crankshaft_span = 1");
  expect_error(with_options([](SimulationOptions &o) { o.moves.ion_step = -1; }),
               ErrorCode::invalid_argument, "ion_step = -1");
  expect_error(with_options([](SimulationOptions &o) { o.moves.monomer_step = INFINITY; }),
               ErrorCode::non_finite, "monomer_step = inf");
  expect_error(with_options([](SimulationOptions &o) { o.sample.radial_bins = 0; }),
               ErrorCode::invalid_argument, "radial_bins = 0");
  expect_error([] { parse_precision("half"); }, ErrorCode::invalid_argument, "'half'");
  EXPECT_EQ(parse_precision("f32"), Precision::float32);
  EXPECT_EQ(to_string(MoveKind::crankshaft), "crankshaft");
  EXPECT_EQ(species_name(int(Species::counterion)), "CI");
}

} // namespace
} // namespace ksum::mc
