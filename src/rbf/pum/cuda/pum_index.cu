// The GPU PUM index (seed 001 §4.1 by sorting): hash, radix sort by cell, cell ranges, duplicate
// test, patch counts (with the CPU path's growth of sparse patches) and the packed patch arrays.
#include "rbf/pum/pum_gpu.hpp"
#include "spatial/cell_box.hpp"

#include <ksum/error.hpp>

#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>
#include <string>

namespace ksum::detail {
namespace {

void check_launch(const char *what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(ErrorCode::device,
                std::string("PUM GPU index: ") + what + ": " + cudaGetErrorString(e));
}

unsigned blocks_for(std::int64_t n, int threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

// The cell hash (eq. (11)) of point i of n (column-major).
__device__ std::int64_t cell_of(const PumGrid &g, const double *pts, std::int64_t n,
                                std::int64_t i) {
  std::int64_t j = 0;
  for (int k = 0; k < g.s; ++k)
    j = j * g.d[k] + spatial::axis_cell(pts[k * n + i], g.lo[k], g.hi[k], g.d[k]);
  return j;
}

__global__ void hash_kernel(PumGrid g, const double *pts, std::int64_t n, unsigned *keys,
                            int *order) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  keys[i] = static_cast<unsigned>(cell_of(g, pts, n, i));
  order[i] = static_cast<int>(i);
}

__global__ void cell_ptr_kernel(const unsigned *keys, std::int64_t n, std::int64_t ncells,
                                std::int64_t *ptr) {
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r > n)
    return;
  // Cells (prev, here] start at row r.
  const std::int64_t prev = r == 0 ? -1 : static_cast<std::int64_t>(keys[r - 1]);
  const std::int64_t here = r == n ? ncells : static_cast<std::int64_t>(keys[r]);
  for (std::int64_t c = prev + 1; c <= here; ++c)
    ptr[c] = r;
}

__global__ void gather_kernel(const double *src, std::int64_t n, int cols, const int *order,
                              double *dst) {
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= n)
    return;
  const std::int64_t i = order[r];
  for (int c = 0; c < cols; ++c)
    dst[c * n + r] = src[c * n + i];
}

__global__ void duplicates_kernel(PumGrid g, const double *pts, std::int64_t n,
                                  const std::int64_t *ptr, int *flag) {
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= n)
    return;
  const std::int64_t j = cell_of(g, pts, n, r);
  for (std::int64_t q = r + 1; q < ptr[j + 1]; ++q) {
    bool same = true;
    for (int k = 0; k < g.s; ++k)
      same = same && pts[k * n + q] == pts[k * n + r];
    if (same)
      *flag = 1;
  }
}

// Calls f(i) for every sorted point within r of the centre x of cell `cell` (the CPU path's
// for_points_within: same ring, same cell order, same distance rounding).
template <class F>
__device__ void for_points_within(const PumGrid &g, const double *pts, std::int64_t n,
                                  const std::int64_t *ptr, std::int64_t cell, const double *x,
                                  double r, F &&f) {
  std::int64_t c[3], lo[3], hi[3], rest = cell;
  for (int k = g.s - 1; k >= 0; --k) {
    c[k] = rest % g.d[k];
    rest /= g.d[k];
  }
  const double rr = floor(r / g.min_width + 0.5);
  const std::int64_t ring = rr > 1 ? static_cast<std::int64_t>(rr) : 1;
  for (int k = 0; k < g.s; ++k) {
    lo[k] = c[k] - ring > 0 ? c[k] - ring : 0;
    hi[k] = c[k] + ring < g.d[k] - 1 ? c[k] + ring : g.d[k] - 1;
  }
  const double r2 = r * r;
  spatial::for_cell_box<3>(lo, hi, g.d, g.s, [&](std::int64_t q) {
    for (std::int64_t a = ptr[q]; a < ptr[q + 1]; ++a) {
      double d2 = 0;
      for (int k = 0; k < g.s; ++k)
        d2 = spatial::dist2_step(d2, pts[k * n + a], x[k]);
      if (d2 < r2)
        f(a);
    }
  });
}

__device__ void cell_centre(const PumGrid &g, std::int64_t cell, double *x) {
  for (int k = g.s - 1; k >= 0; --k) {
    x[k] = spatial::centre_coord(cell % g.d[k], g.lo[k], g.width[k]);
    cell /= g.d[k];
  }
}

__global__ void count_kernel(PumGrid g, const double *pts, std::int64_t n, const std::int64_t *ptr,
                             std::int64_t min_pts, int *cnt, double *radius) {
  const std::int64_t cell = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (cell >= g.ncells)
    return;
  double x[3];
  cell_centre(g, cell, x);
  double r = g.delta;
  std::int64_t count = 0;
  const std::int64_t want = min_pts < n ? min_pts : n;
  while (true) {
    count = 0;
    for_points_within(g, pts, n, ptr, cell, x, r, [&](std::int64_t) { ++count; });
    if (count == 0 || count >= want || r > 2 * g.diag)
      break;
    r *= 1.25;
  }
  cnt[cell] = static_cast<int>(count);
  radius[cell] = r;
}

__global__ void fill_kernel(PumGrid g, const double *pts, const double *vals, std::int64_t n,
                            int ncols, const std::int64_t *ptr, const std::int64_t *off,
                            const double *radius, std::int64_t total, double *px, double *pv) {
  const std::int64_t cell = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (cell >= g.ncells)
    return;
  double x[3];
  cell_centre(g, cell, x);
  std::int64_t at = off[cell];
  for_points_within(g, pts, n, ptr, cell, x, radius[cell], [&](std::int64_t a) {
    for (int k = 0; k < g.s; ++k)
      px[k * total + at] = pts[k * n + a];
    for (int c = 0; c < ncols; ++c)
      pv[c * total + at] = vals[c * n + a];
    ++at;
  });
}

} // namespace

void launch_pum_hash(const PumGrid &g, const double *pts, std::int64_t n, unsigned *keys,
                     int *order, void *stream) {
  if (n == 0)
    return;
  hash_kernel<<<blocks_for(n, 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(g, pts, n, keys,
                                                                                 order);
  check_launch("hash");
}

std::size_t pum_sort_pairs(void *temp, std::size_t temp_bytes, const unsigned *keys_in,
                           unsigned *keys_out, const int *vals_in, int *vals_out, std::int64_t n,
                           int bits, void *stream) {
  std::size_t bytes = temp_bytes;
  const cudaError_t e = cub::DeviceRadixSort::SortPairs(temp, bytes, keys_in, keys_out, vals_in,
                                                        vals_out, n, 0, bits,
                                                        static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess)
    throw Error(ErrorCode::device, std::string("PUM GPU index: radix sort: ") +
                                       cudaGetErrorString(e));
  return bytes;
}

void launch_pum_cell_ptr(const unsigned *sorted_keys, std::int64_t n, std::int64_t ncells,
                         std::int64_t *cell_ptr, void *stream) {
  cell_ptr_kernel<<<blocks_for(n + 1, 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      sorted_keys, n, ncells, cell_ptr);
  check_launch("cell ranges");
}

void launch_pum_gather(const double *src, std::int64_t n, int cols, const int *order, double *dst,
                       void *stream) {
  if (n == 0)
    return;
  gather_kernel<<<blocks_for(n, 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(src, n, cols,
                                                                                   order, dst);
  check_launch("gather");
}

void launch_pum_duplicates(const PumGrid &g, const double *pts, std::int64_t n,
                           const std::int64_t *cell_ptr, int *flag, void *stream) {
  if (n == 0)
    return;
  duplicates_kernel<<<blocks_for(n, 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      g, pts, n, cell_ptr, flag);
  check_launch("duplicate test");
}

void launch_pum_count(const PumGrid &g, const double *pts, std::int64_t n,
                      const std::int64_t *cell_ptr, std::int64_t min_pts, int *cnt,
                      double *radius, void *stream) {
  count_kernel<<<blocks_for(g.ncells, 128), 128, 0, static_cast<cudaStream_t>(stream)>>>(
      g, pts, n, cell_ptr, min_pts, cnt, radius);
  check_launch("patch counts");
}

void launch_pum_fill(const PumGrid &g, const double *pts, const double *vals, std::int64_t n,
                     int ncols, const std::int64_t *cell_ptr, const std::int64_t *off,
                     const double *radius, std::int64_t total, double *px, double *pv,
                     void *stream) {
  fill_kernel<<<blocks_for(g.ncells, 128), 128, 0, static_cast<cudaStream_t>(stream)>>>(
      g, pts, vals, n, ncols, cell_ptr, off, radius, total, px, pv);
  check_launch("patch arrays");
}

} // namespace ksum::detail
