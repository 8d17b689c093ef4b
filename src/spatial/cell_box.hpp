#pragma once
// Walks the cells of an axis-aligned box of grid coordinates [lo_k, hi_k] (a mixed-radix counter),
// calling f(hash) with the cell hash of seed 001 eq. (11). Shared by the host index and the GPU
// PUM evaluation.
#include "kernels/hd.hpp"

#include <cmath>
#include <cstdint>

namespace ksum::spatial {

// The cell of coordinate x along an axis of [lo, hi] cut into d cells, clamped to the grid (seed 001
// eq. (11)); also far outside, without an out-of-range cast.
KSUM_HD std::int64_t axis_cell(double x, double lo, double hi, std::int64_t d) {
  const double t = (x - lo) / (hi - lo) * static_cast<double>(d);
  if (!(t > 0))
    return 0;
  if (!(t < static_cast<double>(d)))
    return d - 1;
  return static_cast<std::int64_t>(t);
}

// The centre of cell c along an axis, and the squared distance of two points, with the roundings
// spelled out (fma) so that the host and the GPU decide patch membership identically.
KSUM_HD double centre_coord(std::int64_t c, double lo, double width) {
  return fma(static_cast<double>(c) + 0.5, width, lo);
}
KSUM_HD double dist2_step(double acc, double a, double b) {
  const double d = a - b;
  return fma(d, d, acc);
}

template <int MaxS, class F>
KSUM_HD void for_cell_box(const std::int64_t *lo, const std::int64_t *hi, const std::int64_t *d,
                          int s, F &&f) {
  std::int64_t cur[MaxS];
  for (int k = 0; k < s; ++k)
    cur[k] = lo[k];
  while (true) {
    std::int64_t j = 0;
    for (int k = 0; k < s; ++k)
      j = j * d[k] + cur[k];
    f(j);
    int k = 0;
    while (k < s && cur[k] == hi[k]) {
      cur[k] = lo[k];
      ++k;
    }
    if (k == s)
      return;
    ++cur[k];
  }
}

} // namespace ksum::spatial
