#pragma once
// Walks the cells of an axis-aligned box of grid coordinates [lo_k, hi_k] (a mixed-radix counter),
// calling f(hash) with the cell hash of seed 001 eq. (11). Shared by the host index and the GPU
// PUM evaluation.
#include "kernels/hd.hpp"

#include <cstdint>

namespace ksum::spatial {

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
