#pragma once
// The PUM's internal state (include/ksum/pum.hpp), shared by pum.cpp (one process, the replicated
// fit over ranks) and pum_partitioned.cpp (rows partitioned over ranks with halos).
#include "rbf/pum/pum_gpu.hpp"
#include "spatial/grid_index.hpp"

#include <ksum/distributed.hpp>
#include <ksum/pum.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ksum {
namespace pum_detail {

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The smallest cell width and the box diagonal (the bound on a growing patch's radius).
struct GridExtent {
  double min_width, diag;
};
inline GridExtent extent(const spatial::GridIndex &g) {
  GridExtent e{std::numeric_limits<double>::infinity(), 0};
  for (std::int64_t k = 0; k < g.dim(); ++k) {
    e.min_width = std::min(e.min_width, g.cell_width(k));
    e.diag += (g.hi(k) - g.lo(k)) * (g.hi(k) - g.lo(k));
  }
  e.diag = std::sqrt(e.diag);
  return e;
}
// A cell k steps away along an axis starts (k − ½)w from a cell centre, so it can hold points
// within r only if k < r/w + ½: the seed's 3^s neighbours for δ = √2 w.
inline std::int64_t ring_for(double r, double min_width) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(r / min_width + 0.5)));
}

struct Patch {
  double radius = 0, eps = 0, scale = 0; // scale: the kernel's coordinate scale for eps
  std::int64_t begin = 0, end = 0;       // its points: pidx[begin, end)
  std::int64_t n() const { return end - begin; }
};

// Repeated points within each cell of `cells` (rows of x; a cell's rows in increasing order): sets
// first[j] to the first row that row j repeats (−1: none) and returns how many repeat one. Unless
// merge, the first pair in cell order is an error naming them row(i) and row(j).
// Dense local systems of more points cost O(n^3) time and O(n^2) memory each: refused, with
// advice (too_large_patch).
inline constexpr std::int64_t max_patch_points = 4096;
std::string too_large_patch(std::int64_t points);

std::int64_t find_repeats(const spatial::Compressed &cells, const Table<double> &x, bool merge,
                          const std::function<std::int64_t(std::int64_t)> &row,
                          std::vector<std::int64_t> &first);

// After find_repeats: the rows kept are those with first[i] < 0, in order (returned: kept row →
// row). add(r, i) adds row i's values to kept row r (zero at first), for every row in increasing
// order; then divide(r, count) turns kept row r into the mean of its group's count rows.
template <class Add, class Divide>
std::vector<std::int64_t> merge_groups(const std::vector<std::int64_t> &first, Add &&add,
                                       Divide &&divide) {
  const auto n = static_cast<std::int64_t>(first.size());
  std::vector<std::int64_t> kept_of(first.size(), -1), rows, count;
  for (std::int64_t i = 0; i < n; ++i)
    if (first[i] < 0) {
      kept_of[i] = static_cast<std::int64_t>(rows.size());
      rows.push_back(i);
      count.push_back(0);
    }
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t r = kept_of[first[i] < 0 ? i : first[i]];
    ++count[r];
    add(r, i);
  }
  for (std::size_t r = 0; r < rows.size(); ++r)
    divide(static_cast<std::int64_t>(r), count[r]);
  return rows;
}

} // namespace pum_detail

using pum_detail::Patch;

struct PumInterpolant::Impl {
  PumOptions opt;
  PumStats stats;
  std::int64_t s = 0, ncols = 0, min_pts = 0, base_ring = 1;
  std::vector<std::int64_t> grown_list; // patches whose radius grew: visited apart from the rings
  std::unique_ptr<spatial::GridIndex> grid;
  Table<double> pts, vals;
  std::vector<Patch> patches;
  detail::uninit_vector<std::int64_t> pidx; // filled by parallel loops: no serial zero fill
  detail::uninit_vector<double> coef;
  std::vector<std::int64_t> coef_at;
  std::vector<double> centres;
  std::int64_t np = 0;       // polynomial terms per patch: 0, 1 or 1 + s
  std::vector<double> pcoef; // patch c, column q, term t: pcoef[(c ncols + q) np + t]
  // The GPU engine: made by a GPU fit, or at the first GPU evaluation of a CPU fit.
  std::unique_ptr<detail::PumGpu> gpu;
  detail::PumGpuFit *gpu_fit = nullptr;         // gpu, when the fit ran on the GPU
  bool host_ready = true;                       // the patch arrays above are on the host
  std::mutex lazy;                              // guards gpu and the host copy made on demand
  std::atomic<std::int64_t> last_eval_chunk{0}; // points per task of the last CPU evaluate()

  // The GPU engine for this fit (a CPU fit uploads its patch arrays once).
  detail::PumGpu &gpu_engine();
  // After a GPU fit: copies the fit to the host arrays (for the CPU evaluation paths).
  void ensure_host();
  detail::PumGrid gpu_grid() const;
  // Indexes and fits on the GPU; false when the GPU path declines (the CPU path then runs).
  bool try_gpu_fit(const Table<double> &points, const Table<double> &values);
  // partitioned: this rank's rows of a partitioned fit (none allowed; their values are checked
  // over the ranks by the caller).
  void validate(const Table<double> &points, const Table<double> &values,
                bool partitioned = false) const;
  // Sets pts, vals and grid (the index of pts).
  void merge_or_reject_duplicates(const Table<double> &points, const Table<double> &values);
  // The patches of cells [lo, hi) (all: hi < 0), from the points in pts. With ring_limit (a
  // partitioned fit: (*ring_limit)[c − lo] rings of cells around cell c hold all their points
  // here) a patch that grows beyond its limit sets needs[c − lo] to the ring it needs; then
  // nothing is built and the number of such patches is returned (else 0).
  std::int64_t build_patches(std::int64_t lo = 0, std::int64_t hi = -1,
                             const std::vector<std::int64_t> *ring_limit = nullptr);
  std::vector<std::int64_t> needs;
  std::int64_t largest_patch = 0; // the most points of a patch of the last build_patches
  // Fits the patches of cells [lo, hi) (all: hi < 0); finish_stats() sets the ε and size
  // distributions of the fitted patches.
  void fit(std::int64_t lo = 0, std::int64_t hi = -1);
  void finish_stats();

  // The number of data points of the whole fit (after merging duplicates): a sparse patch grows
  // until it holds min(min_pts, n_total) of them.
  std::int64_t n_total = 0;
  // Rows partitioned over ranks (PumInterpolant::set_data_partitioned): the communicator (then
  // evaluate() is collective), the first cell of every rank's range (cut[r], cut[P] = cells) and
  // every patch's size, held on its owner (for the nearest non-empty patch when extrapolating).
  std::optional<Communicator> comm;
  std::vector<std::int64_t> cut, gcount;
  // Whether patch j holds data points (here, or partitioned on the rank that owns it).
  bool nonempty(std::int64_t j) const {
    return gcount.empty() ? patches[j].n() > 0 : gcount[j] > 0;
  }
  // eval_cpu's status of a point: evaluated, outside the box, in a hole (neither extrapolated), or
  // (>= 0, partitioned and extrapolating) the index of the nearest patch, held by another rank.
  static constexpr std::int64_t eval_ok = -1, eval_outside = -2, eval_hole = -3;
  void eval_cpu(const Table<double> &y, Table<double> &out, std::vector<std::int64_t> &status);
  // out row i = patch[i]'s local interpolant at row i of y (extrapolation from one patch).
  void eval_single_patches(const Table<double> &y, const std::vector<std::int64_t> &patch,
                           Table<double> &out) const;
  Table<double> evaluate_partitioned(const Table<double> &y);
  // Adds w · (patch j's local interpolant at y), every value column, to acc (S: the dimension
  // when known at compile time, 0 otherwise; phi: scratch).
  template <int S, class K>
  void add_local(const K &kf, std::int64_t j, const double *y, double w, double *acc,
                 std::vector<double> &phi) const;
};

} // namespace ksum
