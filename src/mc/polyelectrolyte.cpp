// The polyelectrolyte model of seed 004 Paper I §2 ("a simple bead-and-stick model with N
// monomers", Fig. 1), with the counter-ions and salt of the codes it served: chains of charged hard
// spheres, neutralising counter-ions and ±1 salt in a spherical cell or a periodic box, placed
// without overlaps from the counter-based stream_init so that a seed names one configuration.
#include <ksum/error.hpp>
#include <ksum/mc_sim.hpp>

#include "mc/philox.hpp"
#include "mc/proposal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ksum::mc {

std::string_view species_name(std::int32_t species) {
  switch (species) {
  case static_cast<std::int32_t>(Species::charged_monomer):
    return "M";
  case static_cast<std::int32_t>(Species::neutral_monomer):
    return "U";
  case static_cast<std::int32_t>(Species::counterion):
    return "CI";
  case static_cast<std::int32_t>(Species::salt_cation):
    return "Na";
  case static_cast<std::int32_t>(Species::salt_anion):
    return "Cl";
  default:
    return "X";
  }
}

namespace {

[[noreturn]] void bad(const std::string &message) {
  throw Error(ErrorCode::invalid_argument, "polyelectrolyte model: " + message);
}

void require_finite(double v, const char *name) {
  if (!std::isfinite(v))
    throw Error(ErrorCode::non_finite, fmt::format("polyelectrolyte model: {} = {}", name, v));
}

// Sequential uniforms from stream_init: event t gives four 32-bit words.
class InitDraws {
public:
  explicit InitDraws(std::uint64_t seed) : seed_(seed) {}
  double uniform() {
    if (used_ == 4) {
      words_ = draw(seed_, t_++, stream_init);
      used_ = 0;
    }
    return uniform01(words_.v[used_++]);
  }

private:
  std::uint64_t seed_, t_ = 0;
  Philox4 words_{};
  int used_ = 4;
};

// A cell list over the domain for the overlap test of the insertions: cells at least as wide as the
// largest contact distance, so a candidate meets only particles of the 27 neighbouring cells.
class Grid {
public:
  Grid(const Cell &cell, double max_contact, std::int64_t capacity) : cell_(cell) {
    periodic_ = cell.boundary == Boundary::periodic;
    for (int a = 0; a < 3; ++a) {
      lo_[a] = periodic_ ? 0.0 : -cell.radius;
      extent_[a] = periodic_ ? cell.box[a] : 2 * cell.radius;
    }
    // A float engine checks contacts in float: coordinates of size L carry ~6e-8·L rounding, so
    // the placements keep a margin of 1e-6·L (≈ 16 float ulps) above the contact distance.
    margin_ = 1e-6 * std::max({extent_[0], extent_[1], extent_[2]});
    // Cells no narrower than the contact distance, and no more of them than ~2 per particle.
    double h = std::max(max_contact + margin_, 1e-300);
    const double budget = std::max<double>(64, 2.0 * double(capacity));
    while (double(count(h, 0)) * count(h, 1) * count(h, 2) > budget)
      h *= 1.25;
    for (int a = 0; a < 3; ++a) {
      n_[a] = count(h, a);
      // A periodic axis with fewer than 3 cells would visit a cell twice: one cell holds all.
      if (periodic_ && n_[a] < 3)
        n_[a] = 1;
      width_[a] = extent_[a] / double(n_[a]);
    }
    cells_.resize(std::size_t(n_[0] * n_[1] * n_[2]));
  }

  std::int64_t cell_of(const double p[3]) const {
    std::int64_t c[3];
    for (int a = 0; a < 3; ++a)
      c[a] = index(p[a], a);
    return (c[2] * n_[1] + c[1]) * n_[0] + c[0];
  }
  void insert(std::int64_t particle, const double p[3]) {
    cells_[std::size_t(cell_of(p))].push_back(particle);
  }
  void remove_last(const double p[3]) { cells_[std::size_t(cell_of(p))].pop_back(); }

  // Does a sphere of radius r at p overlap a placed particle other than `skip` (its bonded
  // predecessor)?
  bool overlaps(const System &s, const double p[3], double r, std::int64_t skip) const {
    // Per axis the neighbouring cell indices: c − 1, c, c + 1 (wrapped when periodic, dropped
    // outside the domain), or the single cell of an axis that has one.
    std::int64_t q[3][3], m[3];
    for (int a = 0; a < 3; ++a) {
      const std::int64_t c = index(p[a], a);
      m[a] = 0;
      if (n_[a] == 1) {
        q[a][m[a]++] = 0;
        continue;
      }
      for (std::int64_t d = -1; d <= 1; ++d) {
        std::int64_t v = c + d;
        if (periodic_)
          v = (v + n_[a]) % n_[a];
        else if (v < 0 || v >= n_[a])
          continue;
        q[a][m[a]++] = v;
      }
    }
    for (std::int64_t k = 0; k < m[2]; ++k)
      for (std::int64_t j = 0; j < m[1]; ++j)
        for (std::int64_t i = 0; i < m[0]; ++i) {
          const std::int64_t cell = (q[2][k] * n_[1] + q[1][j]) * n_[0] + q[0][i];
          for (std::int64_t other : cells_[std::size_t(cell)]) {
            if (other == skip)
              continue;
            double d[3] = {p[0] - s.x[other], p[1] - s.y[other], p[2] - s.z[other]};
            if (periodic_)
              for (int a = 0; a < 3; ++a)
                d[a] -= cell_.box[a] * std::nearbyint(d[a] / cell_.box[a]);
            const double sigma = r + s.radius[other] + margin_;
            const double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            // Point charges (σ = 0) may not coincide either: the engine counts r = 0 as infinite.
            if (r2 < sigma * sigma || r2 == 0)
              return true;
          }
        }
    return false;
  }

private:
  std::int64_t count(double h, int a) const {
    return std::max<std::int64_t>(1, std::int64_t(std::floor(extent_[a] / h)));
  }
  std::int64_t index(double x, int a) const {
    const auto i = std::int64_t(std::floor((x - lo_[a]) / width_[a]));
    return std::clamp<std::int64_t>(i, 0, n_[a] - 1);
  }

  Cell cell_;
  double margin_ = 0;
  bool periodic_ = false;
  double lo_[3]{}, extent_[3]{}, width_[3]{};
  std::int64_t n_[3]{};
  std::vector<std::vector<std::int64_t>> cells_;
};

// A uniform point of the domain (sphere: by rejection from the cube, 52 % accepted).
void random_point(InitDraws &rng, const Cell &cell, double p[3]) {
  if (cell.boundary == Boundary::periodic) {
    for (int a = 0; a < 3; ++a)
      p[a] = rng.uniform() * cell.box[a];
    return;
  }
  for (;;) {
    for (int a = 0; a < 3; ++a)
      p[a] = (2 * rng.uniform() - 1) * cell.radius;
    if (p[0] * p[0] + p[1] * p[1] + p[2] * p[2] <= cell.radius * cell.radius)
      return;
  }
}

// A uniform direction on the unit sphere (Archimedes: z uniform in [−1, 1]).
void random_direction(InitDraws &rng, double u[3]) {
  const double z = 2 * rng.uniform() - 1;
  const double phi = 2 * std::numbers::pi * rng.uniform();
  const double s = std::sqrt(std::max(0.0, 1 - z * z));
  u[0] = s * std::cos(phi);
  u[1] = s * std::sin(phi);
  u[2] = z;
}

bool inside(const Cell &cell, const double p[3]) {
  return cell.boundary != Boundary::sphere ||
         p[0] * p[0] + p[1] * p[1] + p[2] * p[2] <= cell.radius * cell.radius;
}

void set_position(System &s, std::int64_t i, const double p[3]) {
  s.x[i] = p[0];
  s.y[i] = p[1];
  s.z[i] = p[2];
}

} // namespace

Model build_polyelectrolyte(const ModelOptions &o) {
  require_finite(o.monomer_radius, "monomer_radius");
  require_finite(o.monomer_charge, "monomer_charge");
  require_finite(o.bond_length, "bond_length");
  require_finite(o.counterion_valence, "counterion_valence");
  require_finite(o.counterion_radius, "counterion_radius");
  require_finite(o.salt_radius, "salt_radius");
  require_finite(o.cell_radius, "cell_radius");
  require_finite(o.box, "box");
  require_finite(o.monomer_density, "monomer_density");
  require_finite(o.max_volume_fraction, "max_volume_fraction");
  if (o.chains < 0)
    bad(fmt::format("chains = {} (must be ≥ 0)", o.chains));
  if (o.chains > 0 && o.monomers < 1)
    bad(fmt::format("monomers = {} (must be ≥ 1)", o.monomers));
  if (o.salt_pairs < 0)
    bad(fmt::format("salt_pairs = {} (must be ≥ 0)", o.salt_pairs));
  if (o.charge_every < 1)
    bad(fmt::format("charge_every = {} (must be ≥ 1)", o.charge_every));
  if (o.monomer_radius < 0 || o.counterion_radius < 0 || o.salt_radius < 0)
    bad(fmt::format("radii must be ≥ 0 (monomer {}, counter-ion {}, salt {})", o.monomer_radius,
                    o.counterion_radius, o.salt_radius));
  if (o.monomers > 1 && o.chains > 0 && !(o.bond_length > 0))
    bad(fmt::format("bond_length = {} (must be > 0)", o.bond_length));
  if (!(o.counterion_valence > 0))
    bad(fmt::format("counterion_valence = {} (must be > 0)", o.counterion_valence));
  if (o.max_tries < 1)
    bad(fmt::format("max_tries = {} (must be ≥ 1)", o.max_tries));
  if (!(o.max_volume_fraction > 0))
    bad(fmt::format("max_volume_fraction = {} (must be > 0)", o.max_volume_fraction));

  const std::int64_t n_monomers = o.chains * (o.chains > 0 ? o.monomers : 0);
  std::int64_t n_charged = 0;
  if (o.chains > 0)
    n_charged = o.chains * ((o.monomers - 1) / o.charge_every + 1);
  if (o.monomer_charge == 0)
    n_charged = 0;
  // Neutrality: the chains' charge n·|z_m| in counter-ions of valence z_c.
  const double chain_charge = double(n_charged) * std::abs(o.monomer_charge);
  const double ratio = chain_charge / o.counterion_valence;
  const auto n_counter = std::int64_t(std::llround(ratio));
  if (std::abs(ratio - double(n_counter)) > 1e-9 * std::max(1.0, ratio))
    bad(fmt::format("the chains' charge {} is not a multiple of the counter-ion valence {}: no "
                    "neutralising number of counter-ions",
                    chain_charge, o.counterion_valence));
  const std::int64_t n = n_monomers + n_counter + 2 * o.salt_pairs;
  if (n == 0)
    bad("no particles (chains, monomers and salt_pairs are all 0)");

  Model model;
  model.chains = o.chains;
  model.monomers = o.chains > 0 ? o.monomers : 0;
  Cell &cell = model.cell;
  cell.boundary = o.boundary;
  double volume = 0;
  if (o.boundary == Boundary::sphere) {
    double radius = o.cell_radius;
    if (radius == 0 && o.monomer_density > 0 && n_monomers > 0)
      radius = std::cbrt(3 * double(n_monomers) / (4 * std::numbers::pi * o.monomer_density));
    if (!(radius > 0))
      bad(fmt::format("spherical cell radius = {} (give cell_radius > 0, or monomer_density > 0 "
                      "with monomers; monomer_density = {})",
                      o.cell_radius, o.monomer_density));
    cell.radius = radius;
    volume = 4.0 / 3.0 * std::numbers::pi * radius * radius * radius;
  } else if (o.boundary == Boundary::periodic) {
    double edge = o.box;
    if (edge == 0 && o.monomer_density > 0 && n_monomers > 0)
      edge = std::cbrt(double(n_monomers) / o.monomer_density);
    if (!(edge > 0))
      bad(fmt::format("periodic box edge = {} (give box > 0, or monomer_density > 0 with "
                      "monomers; monomer_density = {})",
                      o.box, o.monomer_density));
    cell.box = {edge, edge, edge};
    volume = edge * edge * edge;
    if (o.monomers > 1 && o.chains > 0 && o.bond_length >= edge / 2)
      bad(fmt::format("bond_length {} must be below half the box edge {} (minimum image)",
                      o.bond_length, edge));
  } else {
    bad("the model needs a spherical cell or a periodic box (boundary open has no volume)");
  }

  const double r3m = o.monomer_radius * o.monomer_radius * o.monomer_radius;
  const double r3c = o.counterion_radius * o.counterion_radius * o.counterion_radius;
  const double r3s = o.salt_radius * o.salt_radius * o.salt_radius;
  const double occupied =
      4.0 / 3.0 * std::numbers::pi *
      (double(n_monomers) * r3m + double(n_counter) * r3c + 2.0 * double(o.salt_pairs) * r3s);
  const double fraction = occupied / volume;
  if (fraction > o.max_volume_fraction)
    bad(fmt::format("{} particles ({} monomers, {} counter-ions, {} salt ions) fill a volume "
                    "fraction {:.4g} of the cell (volume {:.6g}), above max_volume_fraction {}",
                    n, n_monomers, n_counter, 2 * o.salt_pairs, fraction, volume,
                    o.max_volume_fraction));

  System &s = model.system;
  s.x.assign(std::size_t(n), 0);
  s.y.assign(std::size_t(n), 0);
  s.z.assign(std::size_t(n), 0);
  s.charge.assign(std::size_t(n), 0);
  s.radius.assign(std::size_t(n), 0);
  s.species.assign(std::size_t(n), 0);
  const double counter_sign = o.monomer_charge > 0 ? -1.0 : 1.0;
  for (std::int64_t c = 0; c < o.chains; ++c)
    for (std::int64_t m = 0; m < model.monomers; ++m) {
      const std::int64_t i = model.chain_particle(c, m);
      const bool charged = o.monomer_charge != 0 && m % o.charge_every == 0;
      s.charge[i] = charged ? o.monomer_charge : 0.0;
      s.radius[i] = o.monomer_radius;
      s.species[i] = std::int32_t(charged ? Species::charged_monomer : Species::neutral_monomer);
      if (m > 0)
        s.bonds.push_back({i - 1, i});
    }
  for (std::int64_t k = 0; k < n_counter; ++k) {
    const std::int64_t i = n_monomers + k;
    s.charge[i] = counter_sign * o.counterion_valence;
    s.radius[i] = o.counterion_radius;
    s.species[i] = std::int32_t(Species::counterion);
  }
  for (std::int64_t k = 0; k < 2 * o.salt_pairs; ++k) {
    const std::int64_t i = n_monomers + n_counter + k;
    const bool cation = k < o.salt_pairs;
    s.charge[i] = cation ? 1.0 : -1.0;
    s.radius[i] = o.salt_radius;
    s.species[i] = std::int32_t(cation ? Species::salt_cation : Species::salt_anion);
  }

  const double max_radius = std::max({o.monomer_radius, o.counterion_radius, o.salt_radius});
  Grid grid(cell, 2 * max_radius, n);
  InitDraws rng(o.seed);

  // Chains: self-avoiding random walks of step b, grown bead by bead; a bead that finds no free
  // position in max_tries directions restarts its chain, at most max_tries times.
  for (std::int64_t c = 0; c < o.chains; ++c) {
    bool placed = false;
    std::int64_t stuck = 0;
    for (std::int64_t attempt = 0; attempt < o.max_tries && !placed; ++attempt) {
      std::int64_t m = 0;
      for (; m < model.monomers; ++m) {
        const std::int64_t i = model.chain_particle(c, m);
        bool ok = false;
        double p[3];
        for (std::int64_t k = 0; k < o.max_tries && !ok; ++k) {
          if (m == 0) {
            random_point(rng, cell, p);
          } else {
            double u[3];
            random_direction(rng, u);
            p[0] = s.x[i - 1] + o.bond_length * u[0];
            p[1] = s.y[i - 1] + o.bond_length * u[1];
            p[2] = s.z[i - 1] + o.bond_length * u[2];
            if (!inside(cell, p))
              continue;
            if (cell.boundary == Boundary::periodic)
              for (int a = 0; a < 3; ++a)
                p[a] = wrap(p[a], cell.box[a]);
          }
          ok = !grid.overlaps(s, p, s.radius[i], m > 0 ? i - 1 : -1);
        }
        if (!ok)
          break;
        set_position(s, i, p);
        grid.insert(i, p);
      }
      if (m == model.monomers) {
        placed = true;
      } else {
        stuck = m;
        for (std::int64_t back = m - 1; back >= 0; --back) {
          const std::int64_t i = model.chain_particle(c, back);
          const double p[3] = {s.x[i], s.y[i], s.z[i]};
          grid.remove_last(p);
        }
      }
    }
    if (!placed)
      bad(fmt::format("cannot place chain {}: monomer {} (particle {}, species {}) found no free "
                      "position in {} tries, {} restarts of the chain (volume fraction {:.4g}; "
                      "give a larger cell, fewer particles or more max_tries)",
                      c, stuck, model.chain_particle(c, stuck),
                      species_name(s.species[model.chain_particle(c, stuck)]), o.max_tries,
                      o.max_tries, fraction));
  }

  // Ions: random insertion with retry.
  for (std::int64_t i = n_monomers; i < n; ++i) {
    bool ok = false;
    double p[3];
    for (std::int64_t k = 0; k < o.max_tries && !ok; ++k) {
      random_point(rng, cell, p);
      ok = !grid.overlaps(s, p, s.radius[i], -1);
    }
    if (!ok)
      bad(fmt::format("cannot insert particle {} (species {}): no free position in {} tries "
                      "(volume fraction {:.4g}; give a larger cell, fewer particles or more "
                      "max_tries)",
                      i, species_name(s.species[i]), o.max_tries, fraction));
    set_position(s, i, p);
    grid.insert(i, p);
  }
  return model;
}

} // namespace ksum::mc
