// Seed 004 Paper I on the GPU: the resident-particle engine against the fp64 reference
// (reference_total) and the CPU backend — U by all pairs once and by the paper's all-ordered-pairs
// recompute for every potential, cell and bond kind; ΔU of single-particle, cluster and rigid
// moves; overlap counting; and translate(), whose batches on the device must be the CPU's
// one-move-at-a-time Metropolis chain whatever the batch size. Skipped without a GPU.
#include "mc/pair.hpp"
#include "mc/potential.hpp"
#include "support/expect_error.hpp"
#include "support/gpu.hpp"
#include "support/mc_support.hpp"

#include <ksum/error.hpp>
#include <ksum/mc.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
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

constexpr double kSpacing = 1.3; // lattice spacing: contact distances are ≤ 1.0

// The cell around a lattice of `side`³ sites.
Cell make_cell(Boundary b, int side) {
  Cell c;
  c.boundary = b;
  if (b == Boundary::sphere)
    c.radius = 0.5 * std::sqrt(3.0) * kSpacing * side + 1;
  if (b == Boundary::periodic)
    c.box = {kSpacing * side, kSpacing * side, kSpacing * side};
  return c;
}

int side_for(std::int64_t n) {
  int side = 1;
  while (std::int64_t(side) * side * side < n)
    ++side;
  return side;
}

// n particles on a jittered cubic lattice (no two closer than 1.1, so valid for hard spheres of
// radius ≤ 0.5), chains of `chain` consecutive sites along x (bond lengths 1.1 … 1.5, inside
// FENE's r_max = 2, also across a periodic box), charges −1 on the chains and +1/+2/−1 ions,
// radii 0.5 and 0.35.
System lattice_system(const Cell &cell, int side, std::int64_t n, int chain, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> jit(-0.1, 0.1);
  System s;
  const double origin = cell.boundary == Boundary::periodic ? 0.5 : -0.5 * kSpacing * (side - 1);
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t ix = k % side, iy = (k / side) % side, iz = k / (side * side);
    s.x.push_back(origin + kSpacing * ix + jit(g));
    s.y.push_back(origin + kSpacing * iy + jit(g));
    s.z.push_back(origin + kSpacing * iz + jit(g));
    const bool monomer = chain > 1 && ix < side / chain * chain;
    s.charge.push_back(monomer ? -1.0 : (k % 5 == 4 ? 2.0 : (k % 7 == 6 ? -1.0 : 1.0)));
    s.radius.push_back(monomer ? 0.5 : 0.35);
    if (monomer && ix % chain != 0)
      s.bonds.push_back({k - 1, k});
  }
  return s;
}

template <class T>
Engine<T> engine(Backend backend, const Potential &pot, const Cell &cell, int batch = 0) {
  EngineOptions o;
  o.potential = pot;
  o.cell = cell;
  o.backend = backend;
  o.threads = 2;
  o.batch = batch;
  return Engine<T>(o);
}

// The difference of two positions along an axis (across a periodic box: the minimum image).
double axis_diff(const Cell &cell, int axis, double a, double b) {
  double d = a - b;
  if (cell.boundary == Boundary::periodic)
    d -= cell.box[axis] * std::nearbyint(d / cell.box[axis]);
  return d;
}

constexpr Electrostatics kElectrostatics[] = {Electrostatics::coulomb,
                                              Electrostatics::debye_huckel};
constexpr ShortRange kShortRanges[] = {ShortRange::none, ShortRange::hard_sphere,
                                       ShortRange::lennard_jones, ShortRange::wca};
constexpr Boundary kBoundaries[] = {Boundary::open, Boundary::sphere, Boundary::periodic};
constexpr BondKind kBonds[] = {BondKind::none, BondKind::harmonic, BondKind::fene};

template <class T> void total_matches_reference() {
  const std::int64_t n = 300;
  const int side = side_for(n);
  for (auto e : kElectrostatics)
    for (auto sr : kShortRanges)
      for (auto bd : kBoundaries)
        for (auto bk : kBonds) {
          const Cell cell = make_cell(bd, side);
          const Potential pot = make_potential(e, sr, bk);
          const System s = lattice_system(cell, side, n, bk == BondKind::none ? 1 : 4, 11);
          auto gpu = engine<T>(Backend::cuda, pot, cell);
          gpu.set_system(s);
          const System r = rounded<T>(gpu.system());
          const Energy ref = reference_total(r, pot, cell);
          const double scale = magnitude(r, pot, cell);
          const Energy u = gpu.total(), f = gpu.total_full_recompute(gpu.system());
          const auto what = ::testing::Message()
                            << to_string(e) << " " << to_string(sr) << " boundary "
                            << static_cast<int>(bd) << " " << to_string(bk);
          ASSERT_EQ(ref.overlaps, 0) << what;
          EXPECT_EQ(u.overlaps, 0) << what;
          EXPECT_EQ(f.overlaps, 0) << what;
          EXPECT_LE(std::abs(u.value - ref.value), tol<T>() * scale)
              << what << " U " << u.value << " ref " << ref.value;
          EXPECT_LE(std::abs(f.value - ref.value), tol<T>() * scale)
              << what << " full recompute " << f.value << " ref " << ref.value;
        }
}

TEST(McEngineGpu, TotalMatchesReferenceForEveryPotentialDouble) {
  KSUM_REQUIRE_GPU();
  total_matches_reference<double>();
}
TEST(McEngineGpu, TotalMatchesReferenceForEveryPotentialFloat) {
  KSUM_REQUIRE_GPU();
  total_matches_reference<float>();
}

// Sizes around the 128-particle tiles of the all-pairs kernels, on the specialised loop (Coulomb,
// hard spheres, spherical cell) and the general one (Debye–Hückel, WCA, periodic, FENE).
TEST(McEngineGpu, TotalAtTileBoundaries) {
  KSUM_REQUIRE_GPU();
  for (std::int64_t n : {1, 2, 3, 127, 128, 129, 255, 257, 1000, 2049})
    for (int general = 0; general < 2; ++general) {
      const int side = side_for(n);
      const Cell cell = make_cell(general ? Boundary::periodic : Boundary::sphere, side);
      const Potential pot =
          general ? make_potential(Electrostatics::debye_huckel, ShortRange::wca, BondKind::fene)
                  : make_potential(Electrostatics::coulomb, ShortRange::hard_sphere,
                                   BondKind::harmonic);
      const System s = lattice_system(cell, side, n, 3, 17 + n);
      auto d = engine<double>(Backend::cuda, pot, cell);
      auto f = engine<float>(Backend::cuda, pot, cell);
      d.set_system(s);
      f.set_system(s);
      const Energy ref = reference_total(d.system(), pot, cell);
      const Energy reff = reference_total(rounded<float>(f.system()), pot, cell);
      const double scale = magnitude(d.system(), pot, cell);
      for (const Energy &u : {d.total(), d.total_full_recompute(d.system())}) {
        EXPECT_EQ(u.overlaps, ref.overlaps) << "n " << n << " general " << general;
        EXPECT_LE(std::abs(u.value - ref.value), 1e-12 * scale) << "n " << n << " " << general;
      }
      for (const Energy &u : {f.total(), f.total_full_recompute(f.system())}) {
        EXPECT_EQ(u.overlaps, reff.overlaps) << "float n " << n << " general " << general;
        EXPECT_LE(std::abs(u.value - reff.value), 1e-5 * scale) << "float n " << n;
      }
    }
}

// Overlapping hard spheres, coincident centres, a broken FENE bond and centres outside the
// spherical cell: the all-ordered-pairs recompute and total() after moves count them as the
// reference does, and ΔU counts the new configuration's as the CPU does.
TEST(McEngineGpu, OverlapsAreCountedLikeTheReference) {
  KSUM_REQUIRE_GPU();
  const int side = 6;
  const Cell cell = make_cell(Boundary::sphere, side);
  for (auto sr : {ShortRange::hard_sphere, ShortRange::none}) {
    const Potential pot = make_potential(Electrostatics::coulomb, sr, BondKind::fene);
    System s = lattice_system(cell, side, 200, 4, 3);
    auto gpu = engine<double>(Backend::cuda, pot, cell);
    auto cpu = engine<double>(Backend::cpu, pot, cell);
    gpu.set_system(s);
    cpu.set_system(s);
    System bad = s;
    bad.x[5] = bad.x[6] + 0.3; // overlaps 6 (and its bond to 4 … 7 stretches)
    bad.y[5] = bad.y[6];
    bad.z[5] = bad.z[6];
    bad.x[20] = bad.x[21]; // coincident with 21
    bad.y[20] = bad.y[21];
    bad.z[20] = bad.z[21];
    bad.y[37] += 1.9;             // breaks its bonds to 36 and 38
    bad.x[199] = cell.radius + 1; // outside the cell
    const Energy ref = reference_total(bad, pot, cell);
    ASSERT_GT(ref.overlaps, 2);
    const Energy f = gpu.total_full_recompute(bad);
    EXPECT_EQ(f.overlaps, ref.overlaps);
    EXPECT_NEAR(f.value, ref.value, 1e-12 * magnitude(bad, pot, cell)); // infinite terms add 0

    Move mv;
    mv.particles = {5, 20, 37, 199};
    for (int i : {5, 20, 37, 199})
      mv.xyz.insert(mv.xyz.end(), {bad.x[i], bad.y[i], bad.z[i]});
    const Energy dg = gpu.delta(mv), dc = cpu.delta(mv);
    EXPECT_EQ(dg.overlaps, dc.overlaps);
    EXPECT_GT(dg.overlaps, 0);
    EXPECT_NEAR(dg.value, dc.value, 1e-12 * magnitude(bad, pot, cell));
    gpu.apply(mv);
    cpu.apply(mv);
    EXPECT_EQ(gpu.total().overlaps, ref.overlaps);
    EXPECT_EQ(cpu.total().overlaps, ref.overlaps);
  }
}

// A random move: one particle, a cluster (also one of more than the kernel's 128-particle stage),
// or a rigid translation of a chain; new positions within `step` of the old ones.
Move random_move(const System &s, int kind, double step, std::mt19937_64 &g) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::uniform_int_distribution<std::int64_t> pick(0, s.size() - 1);
  Move mv;
  std::vector<std::int64_t> who;
  if (kind == 0) {
    who = {pick(g)};
  } else if (kind == 3 && !s.bonds.empty()) {
    // The chain of a random bond, as far as bonds (i − 1, i) reach.
    std::int64_t a = s.bonds[static_cast<std::size_t>(pick(g)) % s.bonds.size()][0];
    auto bonded = [&](std::int64_t i, std::int64_t j) {
      return std::find(s.bonds.begin(), s.bonds.end(), std::array<std::int64_t, 2>{i, j}) !=
             s.bonds.end();
    };
    while (a > 0 && bonded(a - 1, a))
      --a;
    for (std::int64_t i = a; i == a || bonded(i - 1, i); ++i)
      who.push_back(i);
    mv.rigid = true;
    const double dx = step * u(g), dy = step * u(g), dz = step * u(g);
    for (auto i : who) {
      mv.particles.push_back(i);
      mv.xyz.insert(mv.xyz.end(), {s.x[i] + dx, s.y[i] + dy, s.z[i] + dz});
    }
    return mv;
  } else {
    const std::int64_t m = std::min<std::int64_t>(kind == 1 ? 5 : 200, s.size());
    std::vector<std::int64_t> all(static_cast<std::size_t>(s.size()));
    for (std::int64_t i = 0; i < s.size(); ++i)
      all[i] = i;
    std::shuffle(all.begin(), all.end(), g);
    who.assign(all.begin(), all.begin() + m);
  }
  for (auto i : who) {
    mv.particles.push_back(i);
    mv.xyz.insert(mv.xyz.end(), {s.x[i] + step * u(g), s.y[i] + step * u(g), s.z[i] + step * u(g)});
  }
  return mv;
}

// The move's positions as an engine in precision T holds them (wrapped into a periodic box, then
// rounded to T), so that the fp64 CPU engine computes with the same inputs.
template <class T> Move rounded_move(Move mv, const Cell &cell) {
  for (std::size_t k = 0; k < mv.xyz.size(); ++k) {
    double v = mv.xyz[k];
    if (cell.boundary == Boundary::periodic) {
      const double L = cell.box[k % 3];
      v -= L * std::floor(v / L);
    }
    mv.xyz[k] = static_cast<double>(static_cast<T>(v));
  }
  return mv;
}

// Σ |terms| of the system after the move (with the system before it, the scale of ΔU's rounding:
// a move can bring Lennard-Jones particles close enough for terms of 1e10 kT).
double moved_magnitude(System s, const Move &mv, const Potential &pot, const Cell &cell) {
  for (std::size_t k = 0; k < mv.particles.size(); ++k) {
    const auto i = static_cast<std::size_t>(mv.particles[k]);
    s.x[i] = mv.xyz[3 * k];
    s.y[i] = mv.xyz[3 * k + 1];
    s.z[i] = mv.xyz[3 * k + 2];
  }
  return magnitude(s, pot, cell);
}

// ΔU on the GPU against the CPU's over random moves, the finite ones applied on both; the GPU's
// own U(after) − U(before) agrees too.
template <class T> void delta_matches_cpu(int moves) {
  const std::int64_t n = 400;
  const int side = side_for(n);
  std::mt19937_64 g(99);
  for (auto e : kElectrostatics)
    for (auto sr : kShortRanges)
      for (auto bd : kBoundaries)
        for (auto bk : {BondKind::none, BondKind::fene}) {
          const Cell cell = make_cell(bd, side);
          const Potential pot = make_potential(e, sr, bk);
          const System s = lattice_system(cell, side, n, bk == BondKind::none ? 1 : 5, 21);
          auto gpu = engine<T>(Backend::cuda, pot, cell);
          auto cpu = engine<double>(Backend::cpu, pot, cell);
          gpu.set_system(s);
          cpu.set_system(rounded<T>(s));
          double scale = magnitude(s, pot, cell);
          const auto what = ::testing::Message()
                            << to_string(e) << " " << to_string(sr) << " boundary "
                            << static_cast<int>(bd) << " " << to_string(bk);
          for (int k = 0; k < moves; ++k) {
            const Move mv = rounded_move<T>(random_move(cpu.system(), k % 4, 0.4, g), cell);
            const double mscale = std::max(scale, moved_magnitude(cpu.system(), mv, pot, cell));
            const Energy dg = gpu.delta(mv), dc = cpu.delta(mv);
            ASSERT_EQ(dg.overlaps, dc.overlaps) << what << " move " << k;
            ASSERT_LE(std::abs(dg.value - dc.value), tol<T>() * mscale)
                << what << " move " << k << ": " << dg.value << " vs " << dc.value;
            if (dc.overlaps == 0 && k % 2 == 0) {
              const Energy before = gpu.total();
              gpu.apply(mv);
              cpu.apply(mv);
              scale = mscale; // the terms of the state before and after the move
              const Energy after = gpu.total();
              ASSERT_EQ(after.overlaps, 0) << what;
              ASSERT_LE(std::abs((after.value - before.value) - dg.value), 2 * tol<T>() * scale)
                  << what << " move " << k;
            }
          }
          const Energy ug = gpu.total(), uc = cpu.total();
          EXPECT_LE(std::abs(ug.value - uc.value), tol<T>() * scale) << what;
          for (std::int64_t i = 0; i < n; ++i)
            ASSERT_NEAR(axis_diff(cell, 0, gpu.system().x[i], cpu.system().x[i]), 0, 1e-5) << what;
        }
}

TEST(McEngineGpu, DeltaMatchesCpuDouble) {
  KSUM_REQUIRE_GPU();
  delta_matches_cpu<double>(24);
}
TEST(McEngineGpu, DeltaMatchesCpuFloat) {
  KSUM_REQUIRE_GPU();
  delta_matches_cpu<float>(12);
}

struct ChainCase {
  Boundary boundary;
  Electrostatics electrostatics;
  ShortRange short_range;
  BondKind bond;
  double step;
  double radius = 0; // > 0: every particle's radius (the uniform ΔU loop of the fast potentials)
};

// translate() on the GPU is the CPU's chain: the same accepted and overlap-rejected counts, the
// same positions, whatever the batch size (1: one trial per launch; 7, 64; 0: chosen from N;
// 1024: the largest, far past the first repeated particle), and across split calls.
TEST(McEngineGpu, TranslateIsTheCpuChainForEveryBatchSize) {
  KSUM_REQUIRE_GPU();
  const std::int64_t n = 500, count = 20000;
  const int side = side_for(n);
  const ChainCase cases[] = {
      {Boundary::sphere, Electrostatics::coulomb, ShortRange::hard_sphere, BondKind::harmonic, 0.7},
      {Boundary::periodic, Electrostatics::debye_huckel, ShortRange::wca, BondKind::fene, 0.5},
      {Boundary::open, Electrostatics::coulomb, ShortRange::lennard_jones, BondKind::none, 0.4},
      // The fast potentials with one contact distance: hard spheres of one radius, and none.
      {Boundary::sphere, Electrostatics::coulomb, ShortRange::hard_sphere, BondKind::harmonic, 0.7,
       0.45},
      {Boundary::open, Electrostatics::coulomb, ShortRange::none, BondKind::none, 0.4}};
  for (const ChainCase &c : cases) {
    const Cell cell = make_cell(c.boundary, side);
    const Potential pot = make_potential(c.electrostatics, c.short_range, c.bond);
    System s = lattice_system(cell, side, n, c.bond == BondKind::none ? 1 : 5, 31);
    if (c.radius > 0)
      for (double &r : s.radius)
        r = c.radius;
    TranslateParams p;
    p.seed = 20240601;
    p.first = 12345;
    p.count = count;
    p.max_step = c.step;
    auto cpu = engine<double>(Backend::cpu, pot, cell);
    cpu.set_system(s);
    const TranslateResult rc = cpu.translate(p);
    const System &sc = cpu.system();
    ASSERT_GT(rc.accepted, count / 50);
    ASSERT_LT(rc.accepted, count);
    if (c.short_range == ShortRange::hard_sphere) {
      ASSERT_GT(rc.rejected_overlap, 0);
    }
    for (int batch : {1, 7, 64, 0, 1024}) {
      auto gpu = engine<double>(Backend::cuda, pot, cell, batch);
      gpu.set_system(s);
      TranslateResult rg;
      if (batch == 64) { // two calls: the chain continues at move `first`
        TranslateParams p1 = p;
        p1.count = 7001;
        const TranslateResult a = gpu.translate(p1);
        p1.first = p.first + 7001;
        p1.count = count - 7001;
        const TranslateResult b = gpu.translate(p1);
        rg = a;
        rg.attempted += b.attempted;
        rg.accepted += b.accepted;
        rg.rejected_overlap += b.rejected_overlap;
        rg.delta_u += b.delta_u;
        rg.launches += b.launches;
      } else {
        rg = gpu.translate(p);
      }
      const auto what = ::testing::Message()
                        << "boundary " << static_cast<int>(c.boundary) << " batch " << batch;
      EXPECT_EQ(rg.attempted, count) << what;
      EXPECT_EQ(rg.accepted, rc.accepted) << what;
      EXPECT_EQ(rg.rejected_overlap, rc.rejected_overlap) << what;
      EXPECT_NEAR(rg.delta_u, rc.delta_u, 1e-9 * (1 + std::abs(rc.delta_u))) << what;
      if (batch == 1)
        EXPECT_EQ(rg.launches, count) << what;
      else
        EXPECT_LT(rg.launches, count) << what;
      const System &sg = gpu.system();
      double worst = 0;
      for (std::int64_t i = 0; i < n; ++i)
        worst = std::max({worst, std::abs(axis_diff(cell, 0, sg.x[i], sc.x[i])),
                          std::abs(axis_diff(cell, 1, sg.y[i], sc.y[i])),
                          std::abs(axis_diff(cell, 2, sg.z[i], sc.z[i]))});
      EXPECT_LE(worst, 1e-12 * cell.radius + 1e-12 * cell.box[0] + 1e-12) << what;
      // The energy the chain arrived at, recomputed on both backends.
      const Energy ug = gpu.total(), uc = cpu.total();
      EXPECT_EQ(ug.overlaps, 0) << what;
      EXPECT_NEAR(ug.value, uc.value, 1e-12 * magnitude(sc, pot, cell)) << what;
    }
  }
}

// The uniform loop's lean stretches (no self test, no contact test at the old position) carry most
// of the work once a slice holds many more particles than a group has trials: at N = 6,000 with
// hard spheres of one radius packed close enough for overlaps, the chain is still the CPU's, and
// the same as the GPU's with the lean stretches turned off (KSUM_MC_LEAN=0).
TEST(McEngineGpu, TranslateLeanUniformLoopIsTheCpuChain) {
  KSUM_REQUIRE_GPU();
  const std::int64_t n = 6000, count = 12000;
  const int side = side_for(n);
  const Cell cell = make_cell(Boundary::sphere, side);
  const Potential pot =
      make_potential(Electrostatics::coulomb, ShortRange::hard_sphere, BondKind::harmonic);
  System s = lattice_system(cell, side, n, 5, 77);
  for (double &r : s.radius)
    r = 0.5; // contact 1.0 against spacings ≥ 1.1: steps of 0.6 overlap often
  TranslateParams p;
  p.seed = 99;
  p.first = 5;
  p.count = count;
  p.max_step = 0.6;
  auto cpu = engine<double>(Backend::cpu, pot, cell);
  cpu.set_system(s);
  const TranslateResult rc = cpu.translate(p);
  ASSERT_GT(rc.rejected_overlap, count / 20);
  ASSERT_GT(rc.accepted, count / 10);
  for (const char *lean : {"1", "0"}) {
    ::setenv("KSUM_MC_LEAN", lean, 1);
    for (int batch : {0, 256}) {
      auto gpu = engine<double>(Backend::cuda, pot, cell, batch);
      gpu.set_system(s);
      const TranslateResult rg = gpu.translate(p);
      const auto what = ::testing::Message() << "lean " << lean << " batch " << batch;
      EXPECT_EQ(rg.accepted, rc.accepted) << what;
      EXPECT_EQ(rg.rejected_overlap, rc.rejected_overlap) << what;
      EXPECT_NEAR(rg.delta_u, rc.delta_u, 1e-9 * (1 + std::abs(rc.delta_u))) << what;
      double worst = 0;
      for (std::int64_t i = 0; i < n; ++i)
        worst = std::max({worst, std::abs(gpu.system().x[i] - cpu.system().x[i]),
                          std::abs(gpu.system().y[i] - cpu.system().y[i]),
                          std::abs(gpu.system().z[i] - cpu.system().z[i])});
      EXPECT_LE(worst, 1e-12 * cell.radius) << what;
      EXPECT_NEAR(gpu.total().value, cpu.total().value, 1e-12 * magnitude(cpu.system(), pot, cell))
          << what;
    }
  }
  ::unsetenv("KSUM_MC_LEAN");
}

// A movable subset with per-particle steps: the chain is the CPU's, and the others stay put.
TEST(McEngineGpu, TranslateWithMovableSubsetAndPerParticleSteps) {
  KSUM_REQUIRE_GPU();
  const std::int64_t n = 300;
  const int side = side_for(n);
  const Cell cell = make_cell(Boundary::periodic, side);
  const Potential pot =
      make_potential(Electrostatics::coulomb, ShortRange::hard_sphere, BondKind::fene);
  const System s = lattice_system(cell, side, n, 4, 41);
  TranslateParams p;
  p.seed = 77;
  p.count = 6000;
  for (std::int64_t i = 0; i < n; i += 3)
    p.movable.push_back(i);
  p.step.assign(static_cast<std::size_t>(n), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    p.step[i] = 0.3 + 0.15 * static_cast<double>(i % 4);
  auto cpu = engine<double>(Backend::cpu, pot, cell);
  auto gpu = engine<double>(Backend::cuda, pot, cell, 32);
  cpu.set_system(s);
  gpu.set_system(s);
  const TranslateResult rc = cpu.translate(p), rg = gpu.translate(p);
  EXPECT_EQ(rg.accepted, rc.accepted);
  EXPECT_EQ(rg.rejected_overlap, rc.rejected_overlap);
  EXPECT_GT(rc.accepted, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR(axis_diff(cell, 0, gpu.system().x[i], cpu.system().x[i]), 0, 1e-11) << i;
    ASSERT_NEAR(axis_diff(cell, 2, gpu.system().z[i], cpu.system().z[i]), 0, 1e-11) << i;
    if (i % 3 != 0) {
      ASSERT_EQ(gpu.system().x[i], s.x[i]) << i;
    }
  }
}

// Densely packed hard spheres and long steps: most trials overlap and are rejected for it, as on
// the CPU; no accepted state has an overlap.
TEST(McEngineGpu, TranslateRejectsOverlappingTrials) {
  KSUM_REQUIRE_GPU();
  const std::int64_t n = 512;
  const int side = side_for(n);
  const Cell cell = make_cell(Boundary::sphere, side);
  Potential pot = make_potential(Electrostatics::none, ShortRange::hard_sphere, BondKind::none);
  System s = lattice_system(cell, side, n, 1, 5);
  for (double &r : s.radius)
    r = 0.54; // contact 1.08 against spacings ≥ 1.1
  TranslateParams p;
  p.seed = 5;
  p.count = 10000;
  p.max_step = 0.6;
  auto cpu = engine<double>(Backend::cpu, pot, cell);
  auto gpu = engine<double>(Backend::cuda, pot, cell, 128);
  cpu.set_system(s);
  gpu.set_system(s);
  const TranslateResult rc = cpu.translate(p), rg = gpu.translate(p);
  EXPECT_GT(rc.rejected_overlap, p.count / 4);
  EXPECT_EQ(rg.rejected_overlap, rc.rejected_overlap);
  EXPECT_EQ(rg.accepted, rc.accepted);
  EXPECT_EQ(gpu.total().overlaps, 0);
  EXPECT_EQ(reference_total(gpu.system(), pot, cell).overlaps, 0);
}

// In float the chain is the GPU's own (its positions are floats), but the accepted ΔU still add
// up to the change of U, and the state stays free of overlaps.
TEST(McEngineGpu, TranslateFloatKeepsTheEnergyConsistent) {
  KSUM_REQUIRE_GPU();
  const std::int64_t n = 1000;
  const int side = side_for(n);
  const Cell cell = make_cell(Boundary::sphere, side);
  const Potential pot =
      make_potential(Electrostatics::coulomb, ShortRange::hard_sphere, BondKind::harmonic);
  // Radii 0.5 / 0.35 (the general fast loop), then all 0.45 (the uniform one).
  for (const double radius : {0.0, 0.45}) {
    SCOPED_TRACE(radius);
    System s = lattice_system(cell, side, n, 5, 8);
    if (radius > 0)
      for (double &r : s.radius)
        r = radius;
    auto gpu = engine<float>(Backend::cuda, pot, cell);
    gpu.set_system(s);
    const Energy u0 = gpu.total();
    TranslateParams p;
    p.seed = 3;
    p.count = 30000;
    p.max_step = 0.5;
    const TranslateResult r = gpu.translate(p);
    const Energy u1 = gpu.total();
    EXPECT_GT(r.accepted, 0);
    EXPECT_EQ(u1.overlaps, 0);
    const double scale = magnitude(gpu.system(), pot, cell);
    EXPECT_LE(std::abs((u1.value - u0.value) - r.delta_u), 1e-4 * scale);
    const Energy ref = reference_total(rounded<float>(gpu.system()), pot, cell);
    EXPECT_EQ(ref.overlaps, 0);
    EXPECT_LE(std::abs(u1.value - ref.value), 1e-5 * scale);
  }
}

TEST(McEngineGpu, BadDeviceAndBatchAreRefused) {
  KSUM_REQUIRE_GPU();
  const Cell cell = make_cell(Boundary::open, 2);
  const Potential pot =
      make_potential(Electrostatics::coulomb, ShortRange::hard_sphere, BondKind::none);
  EngineOptions o;
  o.potential = pot;
  o.cell = cell;
  o.backend = Backend::cuda;
  o.device = static_cast<int>(gpus().size());
  expect_error([&] { Engine<double> e(o); }, ErrorCode::device, "no such device");
  o.device = 0;
  o.batch = 4096;
  expect_error([&] { Engine<float> e(o); }, ErrorCode::invalid_argument, "translate batch 4096");
}

} // namespace
} // namespace ksum::mc
