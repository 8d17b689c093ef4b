#pragma once
// The interaction matrices of the TD-BEM (seed 003 §2.2, figure 1), in the unknowns' order:
//
//   M^k(i, j) = 1/(4π) ∫_{Δ_j} T(k − |x_i − y| / h) / |x_i − y| dS_y,   h = cΔt,
//
// T the temporal basis (TimeBasis: the box or the hat),
// computed exactly in R and by Gauss quadrature in angle: in polar coordinates about the foot p of
// x_i on the plane of Δ_j (height z), dS / R = dR dθ, so the R integral of the hat T is the
// closed-form G, and the triangle is the signed sum of its three edge triangles (p, A, B),
// each an integral over the angle whose breakpoints (where R crosses a multiple of h, the hat's
// kinks) are found in closed form: smooth pieces, Gauss–Legendre converges fast, and the 1/R
// singularity of the self term is gone.
#include "bem/slices.hpp"

#include <ksum/table.hpp>
#include <ksum/tdbem.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

namespace ksum::bem {

// The elements in the unknowns' order (unknown u is element order[u]).
struct Geometry {
  std::int64_t n = 0;
  std::vector<std::array<double, 3>> centroid, normal;
  std::vector<std::array<std::array<double, 3>, 3>> corner;
  std::vector<double> area, radius; // radius: the farthest corner from the centroid
  double diameter = 0;              // an upper bound of max |x − y| over the surface
  double mean_edge = 0;
};
// order empty: the surface's own (natural) order.
Geometry make_geometry(const TriangleSurface &surface, const std::vector<std::int64_t> &order = {});
// The centroids as a table (n × 3), in the geometry's order.
Table<double> centroid_table(const Geometry &g);

// The unknowns' numbering (table 4): natural, Morton or Hilbert order of the centroids.
std::vector<std::int64_t> order_unknowns(const Table<double> &centroids, TdbemOrdering ordering);

// M^k(x, Δ) for k = first … first + out.size() − 1 (non-zero only there): out is resized.
void shell_integrals(const std::array<double, 3> &x, const Geometry &g, std::int64_t j, double h,
                     TimeBasis basis, std::int32_t &first, std::vector<double> &out);

struct Assembled {
  std::int32_t kmax = 0;
  // M^0 as (row, column, value), every rank the whole of it (it is near-diagonal and cheap).
  std::vector<std::int64_t> m0_rows, m0_cols;
  std::vector<double> m0_values;
};

// M^0 and the slices [j0, j1) of M^1 … M^Kmax (the other slices left empty). progress(columns
// done, n), called from one thread only.
template <class T>
Slices<T> assemble(const Geometry &g, double h, TimeBasis basis, std::int64_t j0, std::int64_t j1,
                   Assembled &m0,
                   const std::function<void(std::int64_t, std::int64_t)> &progress = nullptr);

// §6.4.1's ordering score: over the slices, the mean over consecutive rows of (values on the
// same columns)².
template <class T> double ordering_quality(const Slices<T> &slices);

} // namespace ksum::bem
