#pragma once
// Shared by the MC engine's CPU and GPU tests: the potential set-ups, the scale of a summation's
// rounding error, and the input an engine in precision T sees.
#include "mc/pair.hpp"
#include "mc/potential.hpp"

#include <ksum/mc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ksum::mc::test_support {

inline Potential make_potential(Electrostatics e, ShortRange sr, BondKind b) {
  Potential p;
  p.electrostatics = e;
  p.bjerrum = 7.14;
  p.debye_length = 3;
  p.short_range = sr;
  p.lj_epsilon = 0.8;
  p.bond = b;
  p.bond_k = b == BondKind::fene ? 3 : 5;
  p.bond_r0 = 1.1;
  p.bond_rmax = 2;
  return p;
}

// Σ |terms| of U (at least 1): the scale a summation's rounding error is proportional to (terms of
// both signs cancel in U itself).
inline double magnitude(const System &s, const Potential &pot, const Cell &cell) {
  const PairParams<double> p = detail::make_pair_params<double>(pot, cell);
  double m = 0;
  int ov = 0;
  for (std::int64_t i = 0; i < s.size(); ++i)
    for (std::int64_t j = i + 1; j < s.size(); ++j)
      m += std::abs(pair_energy(p, distance2(p, s.x[i] - s.x[j], s.y[i] - s.y[j], s.z[i] - s.z[j]),
                                s.charge[i] * s.charge[j], s.radius[i] + s.radius[j], ov));
  for (const auto &b : s.bonds)
    m += std::abs(bond_energy(
        p, distance2(p, s.x[b[0]] - s.x[b[1]], s.y[b[0]] - s.y[b[1]], s.z[b[0]] - s.z[b[1]]), ov));
  return std::max(m, 1.0);
}

// The values an engine in precision T computes with: rounding its input is not its error.
template <class T> System rounded(System s) {
  for (auto *v : {&s.x, &s.y, &s.z, &s.charge, &s.radius})
    for (double &a : *v)
      a = static_cast<double>(static_cast<T>(a));
  return s;
}

} // namespace ksum::mc::test_support
