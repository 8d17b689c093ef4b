// Names and parameters of the Monte Carlo potentials (include/ksum/mc.hpp), and the fp64 reference
// energy that the engine's tests compare against.
#include "mc/potential.hpp"

#include <ksum/error.hpp>

#include <fmt/format.h>

#include <cmath>
#include <numbers>

namespace ksum::mc {

Electrostatics parse_electrostatics(std::string_view name) {
  if (name == "coulomb")
    return Electrostatics::coulomb;
  if (name == "debye-huckel")
    return Electrostatics::debye_huckel;
  if (name == "none")
    return Electrostatics::none;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown electrostatics '{}'; valid: coulomb, debye-huckel, none", name));
}

ShortRange parse_short_range(std::string_view name) {
  if (name == "none")
    return ShortRange::none;
  if (name == "hard-sphere")
    return ShortRange::hard_sphere;
  if (name == "lj")
    return ShortRange::lennard_jones;
  if (name == "wca")
    return ShortRange::wca;
  throw Error(
      ErrorCode::invalid_argument,
      fmt::format("unknown short-range potential '{}'; valid: none, hard-sphere, lj, wca", name));
}

BondKind parse_bond(std::string_view name) {
  if (name == "none")
    return BondKind::none;
  if (name == "harmonic")
    return BondKind::harmonic;
  if (name == "fene")
    return BondKind::fene;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown bond potential '{}'; valid: none, harmonic, fene", name));
}

std::string_view to_string(Electrostatics e) {
  switch (e) {
  case Electrostatics::coulomb:
    return "coulomb";
  case Electrostatics::debye_huckel:
    return "debye-huckel";
  case Electrostatics::none:
    return "none";
  }
  return "?";
}

std::string_view to_string(ShortRange s) {
  switch (s) {
  case ShortRange::none:
    return "none";
  case ShortRange::hard_sphere:
    return "hard-sphere";
  case ShortRange::lennard_jones:
    return "lj";
  case ShortRange::wca:
    return "wca";
  }
  return "?";
}

std::string_view to_string(BondKind b) {
  switch (b) {
  case BondKind::none:
    return "none";
  case BondKind::harmonic:
    return "harmonic";
  case BondKind::fene:
    return "fene";
  }
  return "?";
}

double bjerrum_length(double relative_permittivity, double temperature_kelvin) {
  if (!(relative_permittivity > 0) || !std::isfinite(relative_permittivity))
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("relative permittivity must be finite and > 0, got {}", relative_permittivity));
  if (!(temperature_kelvin > 0) || !std::isfinite(temperature_kelvin))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("temperature must be finite and > 0 K, got {}", temperature_kelvin));
  // CODATA 2018: e and k_B are exact in the SI since 2019, ε0 is measured.
  constexpr double e = 1.602176634e-19;     // C
  constexpr double eps0 = 8.8541878128e-12; // F/m
  constexpr double kB = 1.380649e-23;       // J/K
  const double metres =
      e * e / (4 * std::numbers::pi * eps0 * relative_permittivity * kB * temperature_kelvin);
  return metres * 1e10;
}

namespace {

void require(bool ok, std::string_view what, double value, std::string_view domain) {
  if (!ok || !std::isfinite(value))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{} must be finite and {}, got {}", what, domain, value));
}

} // namespace

namespace detail {

template <class T> PairParams<T> make_pair_params(const Potential &pot, const Cell &cell) {
  PairParams<T> p;
  if (pot.electrostatics != Electrostatics::none) {
    require(pot.bjerrum > 0, "the Bjerrum length", pot.bjerrum, "> 0");
    p.lb = static_cast<T>(pot.bjerrum);
  }
  if (pot.electrostatics == Electrostatics::debye_huckel) {
    require(pot.debye_length > 0, "the Debye length (debye-huckel)", pot.debye_length, "> 0");
    p.kappa = static_cast<T>(1 / pot.debye_length);
  }
  switch (pot.short_range) {
  case ShortRange::none:
    p.short_range = 0;
    break;
  case ShortRange::hard_sphere:
    p.short_range = 1;
    break;
  case ShortRange::lennard_jones:
  case ShortRange::wca:
    p.short_range = pot.short_range == ShortRange::lennard_jones ? 2 : 3;
    require(pot.lj_epsilon >= 0, "the Lennard-Jones epsilon", pot.lj_epsilon, ">= 0");
    p.lj_eps = static_cast<T>(pot.lj_epsilon);
    break;
  }
  if (pot.bond == BondKind::harmonic) {
    p.bond = 1;
    require(pot.bond_k > 0, "the harmonic bond constant k", pot.bond_k, "> 0");
    require(pot.bond_r0 >= 0, "the harmonic bond rest length r0", pot.bond_r0, ">= 0");
  } else if (pot.bond == BondKind::fene) {
    p.bond = 2;
    require(pot.bond_k > 0, "the FENE bond constant k", pot.bond_k, "> 0");
    require(pot.bond_rmax > 0, "the FENE maximum extension r_max", pot.bond_rmax, "> 0");
  }
  p.bond_k = static_cast<T>(pot.bond_k);
  p.bond_r0 = static_cast<T>(pot.bond_r0);
  p.bond_rmax = static_cast<T>(pot.bond_rmax);
  if (cell.boundary == Boundary::sphere) {
    require(cell.radius > 0, "the spherical cell's radius", cell.radius, "> 0");
    p.cell_radius = static_cast<T>(cell.radius);
  } else if (cell.boundary == Boundary::periodic) {
    static constexpr const char *axis[3] = {"x", "y", "z"};
    for (int a = 0; a < 3; ++a) {
      require(cell.box[a] > 0, fmt::format("the periodic box's {} edge", axis[a]), cell.box[a],
              "> 0");
      p.box[a] = static_cast<T>(cell.box[a]);
    }
    p.periodic = 1;
  }
  return p;
}

template PairParams<float> make_pair_params(const Potential &, const Cell &);
template PairParams<double> make_pair_params(const Potential &, const Cell &);

} // namespace detail

// Deliberately the plainest loop: the formulas of mc/pair.hpp in double, every pair i < j once in
// order, then the bonds and the cell wall. The engines are tested against it.
Energy reference_total(const System &s, const Potential &potential, const Cell &cell) {
  const PairParams<double> p = detail::make_pair_params<double>(potential, cell);
  const std::int64_t n = s.size();
  if (static_cast<std::int64_t>(s.y.size()) != n || static_cast<std::int64_t>(s.z.size()) != n ||
      static_cast<std::int64_t>(s.charge.size()) != n ||
      static_cast<std::int64_t>(s.radius.size()) != n)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("system arrays differ in size: x {}, y {}, z {}, charge {}, radius {}",
                            s.x.size(), s.y.size(), s.z.size(), s.charge.size(), s.radius.size()));
  double u = 0;
  int overlaps = 0;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = i + 1; j < n; ++j) {
      const double r2 = distance2(p, s.x[i] - s.x[j], s.y[i] - s.y[j], s.z[i] - s.z[j]);
      u += pair_energy(p, r2, s.charge[i] * s.charge[j], s.radius[i] + s.radius[j], overlaps);
    }
  for (const auto &b : s.bonds) {
    if (b[0] < 0 || b[0] >= n || b[1] < 0 || b[1] >= n)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("bond ({}, {}) names a particle outside [0, {})", b[0], b[1], n));
    const auto i = b[0], j = b[1];
    u += bond_energy(p, distance2(p, s.x[i] - s.x[j], s.y[i] - s.y[j], s.z[i] - s.z[j]), overlaps);
  }
  for (std::int64_t i = 0; i < n; ++i)
    overlaps += outside_cell(p, s.x[i], s.y[i], s.z[i]) ? 1 : 0;
  return Energy{u, overlaps};
}

} // namespace ksum::mc
