#pragma once
// Seed 001 §4–4.1: a regular grid over the data's bounding box, the cell hash of eq. (11), and the
// two-stage compressed index Γ = {aptr, aidx}: cell → points (a counting sort, linear time, points
// of a cell contiguous), then patch → points (each cell centre is a patch centre; its points are
// found by visiting the neighbouring cells). Any dimension s >= 1.
#include "spatial/cell_box.hpp"

#include <ksum/table.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace ksum::spatial {

// Compressed storage: the items of bucket b are idx[ptr[b] .. ptr[b + 1]).
struct Compressed {
  detail::uninit_vector<std::int64_t> ptr, idx;
  std::int64_t size(std::int64_t b) const { return ptr[b + 1] - ptr[b]; }
};

inline constexpr std::int64_t grid_max_dim = 16;

// The smallest and largest coordinate along each axis (OpenMP).
void bounding_box(const Table<double> &pts, std::vector<double> &lo, std::vector<double> &hi);

class GridIndex {
public:
  // cells_scale multiplies the seed's cells per axis (1: the seed's d_PU^k); radius_factor is the
  // patch radius in units of the narrowest axis' cell width (seed 001 eq. (10): √2), raised where
  // needed so that a patch covers its cell.
  GridIndex(const Table<double> &points, double cells_scale = 1.0,
            double radius_factor = 1.4142135623730951);
  // The geometry alone (cells per axis, widths, δ_PU) for n points in the box [lo, hi], with no
  // cell → point index (cells() is empty): what the GPU path shares with the host.
  GridIndex(const double *lo, const double *hi, std::int64_t s, std::int64_t n,
            double cells_scale = 1.0, double radius_factor = 1.4142135623730951);

  std::int64_t dim() const { return s_; }
  std::int64_t num_cells() const { return ncells_; }
  const std::vector<std::int64_t> &cells_per_axis() const { return d_; }
  double lo(std::int64_t k) const { return lo_[k]; }
  double hi(std::int64_t k) const { return hi_[k]; }
  double cell_width(std::int64_t k) const { return width_[k]; }
  // The seed's patch radius δ_PU, eq. (10).
  double patch_radius() const { return delta_; }

  // Cell coordinate along axis k of a position (clamped to the grid), and the cell hash of eq.
  // (11).
  std::int64_t axis_cell(double x, std::int64_t k) const;
  std::int64_t hash(const double *x) const;
  void cell_coords(std::int64_t cell, std::int64_t *c) const;
  std::int64_t cell_of_coords(const std::int64_t *c) const;
  void cell_centre(std::int64_t cell, double *x) const;

  // Stage 1: cell → points (indices into the point table given to the constructor).
  const Compressed &cells() const { return cells_; }

  // The rows of `t` (the points given to the constructor, or a table aligned with them) in cell
  // order, so that the points of a cell are contiguous (seed 001 §4.1: better locality): row r of
  // the result is row cells().idx[r] of t.
  Table<double> gather(const Table<double> &t) const;
  // After gathering: cells() maps to the gathered rows (idx becomes 0, 1, …, n − 1).
  void use_sorted_order();

  // Calls f(cell) for every cell whose coordinates differ from `cell`'s by at most `ring` on each
  // axis (the 3^s − 1 neighbours and itself for ring = 1).
  template <class F> void for_neighbours(std::int64_t cell, std::int64_t ring, F &&f) const;

  // Stage 1 for `pts` in this geometry (after the geometry-only constructor: a subset of the
  // points it was made for, e.g. one rank's; points outside the box go to the nearest cell).
  void index_points(const Table<double> &pts);

private:
  void set_geometry(const double *lo, const double *hi, std::int64_t n, double cells_scale,
                    double radius_factor);

  std::int64_t s_ = 0, ncells_ = 0;
  std::vector<std::int64_t> d_;
  std::vector<double> lo_, hi_, width_;
  double delta_ = 0;
  Compressed cells_;
};

template <class F>
void GridIndex::for_neighbours(std::int64_t cell, std::int64_t ring, F &&f) const {
  std::array<std::int64_t, grid_max_dim> c{}, lo{}, hi{};
  cell_coords(cell, c.data());
  for (std::int64_t k = 0; k < s_; ++k) {
    lo[k] = std::max<std::int64_t>(0, c[k] - ring);
    hi[k] = std::min<std::int64_t>(d_[k] - 1, c[k] + ring);
  }
  for_cell_box<grid_max_dim>(lo.data(), hi.data(), d_.data(), static_cast<int>(s_), f);
}

} // namespace ksum::spatial
