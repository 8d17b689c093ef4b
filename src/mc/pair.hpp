#pragma once
// The pair and bond energies of include/ksum/mc.hpp, written once for the CPU and the GPU
// (KSUM_HD). T is the precision of the arithmetic; the callers accumulate in double.
#include "kernels/hd.hpp"

#include <cmath>
#include <cstdint>

namespace ksum::mc {

template <class T> struct PairParams {
  T lb = 0;        // Bjerrum length (0: no electrostatics)
  T kappa = 0;     // inverse Debye length (0: bare Coulomb)
  int short_range = 0; // 0 none, 1 hard sphere, 2 Lennard-Jones, 3 WCA
  T lj_eps = 1;
  int bond = 0;    // 0 none, 1 harmonic, 2 FENE
  T bond_k = 0, bond_r0 = 0, bond_rmax = 0;
  int periodic = 0;
  T box[3] = {0, 0, 0};
  T cell_radius = 0; // > 0: spherical cell
};

// Minimum image of a difference along one axis of a periodic box of length L.
template <class T> KSUM_HD T min_image(T d, T L) {
  return d - L * std::nearbyint(d / L);
}

template <class T>
KSUM_HD T distance2(const PairParams<T> &p, T dx, T dy, T dz) {
  if (p.periodic) {
    dx = min_image(dx, p.box[0]);
    dy = min_image(dy, p.box[1]);
    dz = min_image(dz, p.box[2]);
  }
  return dx * dx + dy * dy + dz * dz;
}

// u_ij at squared distance r2 with charges qi qj and contact distance sigma = R_i + R_j; an
// infinite term adds 1 to `overlaps` and 0 to the energy.
template <class T>
KSUM_HD T pair_energy(const PairParams<T> &p, T r2, T qiqj, T sigma, int &overlaps) {
  if (r2 <= T(0)) {
    ++overlaps;
    return T(0);
  }
  T e = T(0);
  const T s2 = sigma * sigma;
  if (p.short_range == 1) {
    if (r2 < s2) {
      ++overlaps;
      return T(0);
    }
  } else if (p.short_range >= 2 && sigma > T(0)) {
    // WCA: cut at r_c² = 2^{1/3} σ² and shifted by +ε.
    if (p.short_range == 2 || r2 < T(1.2599210498948732) * s2) {
      const T x = s2 / r2, x3 = x * x * x;
      e += T(4) * p.lj_eps * (x3 * x3 - x3) + (p.short_range == 3 ? p.lj_eps : T(0));
    }
  }
  if (p.lb != T(0) && qiqj != T(0)) {
    const T r = std::sqrt(r2);
    T c = p.lb * qiqj / r;
    if (p.kappa != T(0))
      c *= std::exp(-p.kappa * r);
    e += c;
  }
  return e;
}

// The bond energy at squared length r2.
template <class T> KSUM_HD T bond_energy(const PairParams<T> &p, T r2, int &overlaps) {
  if (p.bond == 1) {
    const T d = std::sqrt(r2) - p.bond_r0;
    return T(0.5) * p.bond_k * d * d;
  }
  if (p.bond == 2) {
    const T x = r2 / (p.bond_rmax * p.bond_rmax);
    if (x >= T(1)) {
      ++overlaps;
      return T(0);
    }
    return T(-0.5) * p.bond_k * p.bond_rmax * p.bond_rmax * std::log1p(-x);
  }
  return T(0);
}

// A centre outside the spherical cell is an infinite (wall) term.
template <class T> KSUM_HD bool outside_cell(const PairParams<T> &p, T x, T y, T z) {
  return p.cell_radius > T(0) && x * x + y * y + z * z > p.cell_radius * p.cell_radius;
}

} // namespace ksum::mc
