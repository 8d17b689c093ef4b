#include "spatial/grid_index.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <limits>

namespace ksum::spatial {

void bounding_box(const Table<double> &pts, std::vector<double> &lo, std::vector<double> &hi) {
  const std::int64_t n = pts.rows(), s = pts.cols();
  lo.assign(s, std::numeric_limits<double>::infinity());
  hi.assign(s, -std::numeric_limits<double>::infinity());
  for (std::int64_t k = 0; k < s; ++k) {
    double a = lo[k], b = hi[k];
    const double *x = pts.data() + k * n;
#pragma omp parallel for reduction(min : a) reduction(max : b) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      a = std::min(a, x[i]);
      b = std::max(b, x[i]);
    }
    lo[k] = a;
    hi[k] = b;
  }
}

GridIndex::GridIndex(const Table<double> &pts, double cells_scale, double radius_factor)
    : s_(pts.cols()) {
  const std::int64_t n = pts.rows();
  if (n < 1 || s_ < 1)
    throw Error(ErrorCode::empty_input, "grid index: no points");
  std::vector<double> lo, hi;
  bounding_box(pts, lo, hi);
  set_geometry(lo.data(), hi.data(), n, cells_scale, radius_factor);
  index_points(pts);
}

GridIndex::GridIndex(const double *lo, const double *hi, std::int64_t s, std::int64_t n,
                     double cells_scale, double radius_factor)
    : s_(s) {
  if (n < 1 || s_ < 1)
    throw Error(ErrorCode::empty_input, "grid index: no points");
  set_geometry(lo, hi, n, cells_scale, radius_factor);
}

void GridIndex::set_geometry(const double *lo, const double *hi, std::int64_t n,
                             double cells_scale, double radius_factor) {
  if (!(radius_factor > 0) || !std::isfinite(radius_factor))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("patch radius factor must be > 0, got {}", radius_factor));
  if (s_ > grid_max_dim)
    throw Error(
        ErrorCode::unsupported,
        fmt::format("grid index: dimension {} is above the supported {}", s_, grid_max_dim));
  if (!(cells_scale > 0) || !std::isfinite(cells_scale))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("patch density scale must be > 0, got {}", cells_scale));
  lo_.assign(lo, lo + s_);
  hi_.assign(hi, hi + s_);
  double min_range = std::numeric_limits<double>::infinity();
  for (std::int64_t k = 0; k < s_; ++k) {
    if (!(hi_[k] > lo_[k]))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("the data have zero extent along axis {} (all values {}): drop that "
                              "column or use --dim",
                              k, lo_[k]));
    min_range = std::min(min_range, hi_[k] - lo_[k]);
  }
  // Seed 001: d_PU^k = floor( ceil((1/2) (N/2)^{1/s}) (B_M^k − B_m^k) / min_l (B_M^l − B_m^l) ).
  const double base = std::ceil(
      cells_scale * 0.5 * std::pow(0.5 * static_cast<double>(n), 1.0 / static_cast<double>(s_)));
  // Bounded before any cast to an integer: far more cells than points only wastes memory.
  const double max_cells = 64.0 * static_cast<double>(n) + double(1 << 20);
  d_.resize(s_);
  width_.resize(s_);
  double total = 1;
  std::int64_t min_d = std::numeric_limits<std::int64_t>::max();
  for (std::int64_t k = 0; k < s_; ++k) {
    const double dk = std::max(1.0, std::floor(base * (hi_[k] - lo_[k]) / min_range));
    total *= dk;
    if (!(total <= max_cells))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("grid index: more than {:.3g} cells for {} points (an elongated box "
                              "or a large patch density); lower --density",
                              max_cells, n));
    d_[k] = static_cast<std::int64_t>(dk);
    width_[k] = (hi_[k] - lo_[k]) / dk;
    min_d = std::min(min_d, d_[k]);
  }
  ncells_ = static_cast<std::int64_t>(total);
  // Seed 001 eq. (10): δ_PU = sqrt(2) / min_k d_PU^k · min_k (B_M^k − B_m^k) (radius_factor = √2),
  // enlarged where a cell's half-diagonal is longer (elongated cells, s >= 9), so that every patch covers its cell.
  double half_diag = 0;
  for (std::int64_t k = 0; k < s_; ++k)
    half_diag += 0.25 * width_[k] * width_[k];
  delta_ = std::max(radius_factor / static_cast<double>(min_d) * min_range,
                    1.001 * std::sqrt(half_diag));

}

void GridIndex::index_points(const Table<double> &pts) {
  const std::int64_t n = pts.rows();
  // Stage 1 (seed Algorithm 2): hash every point, count per cell, prefix sum, fill.
  std::vector<std::int64_t> cell_of(n);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    std::array<double, grid_max_dim> x{};
    for (std::int64_t k = 0; k < s_; ++k)
      x[k] = pts(i, k);
    cell_of[i] = hash(x.data());
  }
  cells_.ptr.assign(ncells_ + 1, 0);
  for (std::int64_t i = 0; i < n; ++i)
    ++cells_.ptr[cell_of[i] + 1];
  for (std::int64_t c = 0; c < ncells_; ++c)
    cells_.ptr[c + 1] += cells_.ptr[c];
  cells_.idx.resize(n);
  std::vector<std::int64_t> fill(cells_.ptr.begin(), cells_.ptr.end() - 1);
  for (std::int64_t i = 0; i < n; ++i)
    cells_.idx[fill[cell_of[i]]++] = i;
}

std::vector<std::int64_t> GridIndex::reorder(Table<double> &t) {
  std::vector<std::int64_t> perm = cells_.idx;
  Table<double> sorted(t.rows(), t.cols());
  for (std::int64_t c = 0; c < t.cols(); ++c) {
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < t.rows(); ++r)
      sorted(r, c) = t(perm[r], c);
  }
  sorted.names = t.names;
  t = std::move(sorted);
  for (std::int64_t r = 0; r < static_cast<std::int64_t>(cells_.idx.size()); ++r)
    cells_.idx[r] = r;
  return perm;
}

std::int64_t GridIndex::axis_cell(double x, std::int64_t k) const {
  return spatial::axis_cell(x, lo_[k], hi_[k], d_[k]);
}

// Seed 001 eq. (11): j(x) = Σ_k floor((x_k − B_m^k)/(B_M^k − B_m^k) d^k) Π_{l>k} d^l.
std::int64_t GridIndex::hash(const double *x) const {
  std::int64_t j = 0;
  for (std::int64_t k = 0; k < s_; ++k)
    j = j * d_[k] + axis_cell(x[k], k);
  return j;
}

void GridIndex::cell_coords(std::int64_t cell, std::int64_t *c) const {
  for (std::int64_t k = s_ - 1; k >= 0; --k) {
    c[k] = cell % d_[k];
    cell /= d_[k];
  }
}

std::int64_t GridIndex::cell_of_coords(const std::int64_t *c) const {
  std::int64_t j = 0;
  for (std::int64_t k = 0; k < s_; ++k)
    j = j * d_[k] + c[k];
  return j;
}

void GridIndex::cell_centre(std::int64_t cell, double *x) const {
  std::array<std::int64_t, grid_max_dim> c{};
  cell_coords(cell, c.data());
  for (std::int64_t k = 0; k < s_; ++k)
    x[k] = centre_coord(c[k], lo_[k], width_[k]);
}

} // namespace ksum::spatial
