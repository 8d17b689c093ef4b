#include "spatial/grid_index.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <omp.h>

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

void GridIndex::set_geometry(const double *lo, const double *hi, std::int64_t n, double cells_scale,
                             double radius_factor) {
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
  // enlarged where a cell's half-diagonal is longer (elongated cells, s >= 9), so that every patch
  // covers its cell.
  double half_diag = 0;
  for (std::int64_t k = 0; k < s_; ++k)
    half_diag += 0.25 * width_[k] * width_[k];
  delta_ = std::max(radius_factor / static_cast<double>(min_d) * min_range,
                    1.001 * std::sqrt(half_diag));
}

void GridIndex::index_points(const Table<double> &pts) {
  const std::int64_t n = pts.rows();
  // Stage 1 (seed Algorithm 2): hash every point, count per cell, prefix sum, fill. A stable
  // counting sort in parallel: each thread counts its own contiguous block of points, the
  // per-thread counts of a cell become offsets in thread order, and each thread fills its block's
  // points into them (the same order as a serial sort). One count row per thread: the threads
  // used are capped so that their rows stay within a few times the points.
  const std::int64_t nt = std::clamp<std::int64_t>(
      std::min<std::int64_t>(omp_get_max_threads(), 4 * n / std::max<std::int64_t>(ncells_, 1)), 1,
      256);
  detail::uninit_vector<std::int64_t> cell_of(n), counts(nt * ncells_);
  cells_.ptr.resize(ncells_ + 1);
  cells_.idx.resize(n);
#pragma omp parallel num_threads(static_cast <int>(nt))
  {
    const std::int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    const std::int64_t i0 = n * t / T, i1 = n * (t + 1) / T;
    std::int64_t *cnt = counts.data() + t * ncells_;
    std::fill(cnt, cnt + ncells_, 0);
    for (std::int64_t i = i0; i < i1; ++i) {
      std::array<double, grid_max_dim> x{};
      for (std::int64_t k = 0; k < s_; ++k)
        x[k] = pts(i, k);
      cell_of[i] = hash(x.data());
      ++cnt[cell_of[i]];
    }
#pragma omp barrier
#pragma omp for schedule(static)
    for (std::int64_t c = 0; c < ncells_; ++c) {
      std::int64_t sum = 0;
      for (std::int64_t u = 0; u < T; ++u)
        sum += counts[u * ncells_ + c];
      cells_.ptr[c + 1] = sum;
    }
#pragma omp single
    {
      cells_.ptr[0] = 0;
      for (std::int64_t c = 0; c < ncells_; ++c)
        cells_.ptr[c + 1] += cells_.ptr[c];
    }
#pragma omp for schedule(static)
    for (std::int64_t c = 0; c < ncells_; ++c) {
      std::int64_t at = cells_.ptr[c];
      for (std::int64_t u = 0; u < T; ++u) { // thread u's points of cell c start at `at`
        const std::int64_t count = counts[u * ncells_ + c];
        counts[u * ncells_ + c] = at;
        at += count;
      }
    }
    for (std::int64_t i = i0; i < i1; ++i)
      cells_.idx[cnt[cell_of[i]]++] = i;
  }
}

Table<double> GridIndex::gather(const Table<double> &t) const {
  const std::int64_t n = static_cast<std::int64_t>(cells_.idx.size());
  if (t.rows() != n)
    throw Error(ErrorCode::internal, "grid index: gather of a table of another size");
  Table<double> sorted(n, t.cols(), Uninitialized{});
  for (std::int64_t c = 0; c < t.cols(); ++c) {
    const double *src = t.data() + c * n;
    double *dst = sorted.data() + c * n;
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < n; ++r)
      dst[r] = src[cells_.idx[r]];
  }
  sorted.names = t.names;
  return sorted;
}

void GridIndex::use_sorted_order() {
  const std::int64_t n = static_cast<std::int64_t>(cells_.idx.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < n; ++r)
    cells_.idx[r] = r;
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
