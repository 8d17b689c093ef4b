#pragma once
// The two blockings of seed 003 §4 and their summation kernels (CPU here, CUDA in
// blocking_cuda.hpp). Both cut the slices of an interval [j0, j1) into dense b_r × b_c blocks so
// that one team of b_r threads (GPU) or one SIMD loop over rows (CPU) computes n_g summation
// vectors at once (the multi-vectors/matrix product of §4.1):
//
//   s[g·n + i] += Σ_c V(r, c) · P_j(k0 + c − 1 − g),  g = 0 … n_g − 1,
//
// with P_j(t) = a^{n−1−t}(j) for 0 ≤ t < kmax and 0 otherwise (History::row() with lead ≥ n_g − 1
// and tail ≥ b_c), i = the block row's unknown, k0 = the k of the block row's first column.
//
// Full-Blocking (§4.1, figure 6): blocks copied out of a slice as they stand, so all rows of a
// block share one column origin col0 (one past-values window per block); a greedy cut, more
// blocks and more padding where row vectors are scattered.
// Contiguous-Blocking (§4.2, figure 8): row i of slice j is copied to row i mod b_r of block
// ⌊i / b_r⌋ with its own start k0; always ⌈n / b_r⌉ blocks per slice; b_c ≥ d_max.
#include "bem/slices.hpp"

#include <cstdint>
#include <vector>

namespace ksum::bem {

// What both blockings share: the slices [j0, j1) of n unknowns cut into br × bc blocks.
struct BlockCut {
  std::int64_t n = 0; // unknowns (rows of a slice)
  std::int32_t kmax = 0;
  int br = 0, bc = 0;          // block rows × columns
  std::int64_t j0 = 0, j1 = 0; // the slices held
};

template <class T> struct FullBlocks : BlockCut {
  // Slice j's blocks: [slice_ptr[j − j0], slice_ptr[j − j0 + 1]).
  std::vector<std::int64_t> slice_ptr;
  std::vector<std::int32_t> row0; // per block: its first row (unknown i)
  std::vector<std::int32_t> col0; // per block: the k of its first column (≥ 1)
  // Block b, row r, column c at values[(b·bc + c)·br + r] (columns contiguous: a GPU team's
  // threads read one column together, coalesced). Rows past n and columns outside a row vector
  // hold zeros.
  std::vector<T> values;

  std::int64_t blocks() const { return static_cast<std::int64_t>(row0.size()); }

  // Greedy cut (figure 6): row vectors in row order; each joins the first open block of its slice
  // whose rows [row0, row0 + br) and columns [col0, col0 + bc) contain it, else opens a block at
  // (its row, its k0). Needs bc ≥ d_max (an error names the longer row vector otherwise).
  static FullBlocks build(const Slices<T> &slices, int br, int bc, std::int64_t j0,
                          std::int64_t j1);
  // The number of blocks build() would make, without storing them (table 4's NBB).
  static std::int64_t count(const Slices<T> &slices, int br, int bc, std::int64_t j0,
                            std::int64_t j1);
};

template <class T> struct ContiguousBlocks : BlockCut {
  std::int64_t nb = 0; // blocks per slice, ⌈n / br⌉
  // Slice j, row i (0 ≤ i < nb·br): k0[(j − j0)·nb·br + i], the k of the row's first column;
  // 1 for empty and padding rows (whose values are zero).
  std::vector<std::int32_t> k0;
  // Slice j, block b, column c, row r at values[(((j − j0)·nb + b)·bc + c)·br + r].
  std::vector<T> values;

  std::int64_t blocks() const { return (j1 - j0) * nb; }

  // bc = 0 chooses d_max (§4.2: no gain beyond it); bc < d_max is an error.
  static ContiguousBlocks build(const Slices<T> &slices, int br, int bc, std::int64_t j0,
                                std::int64_t j1);
};

// Stored values per block kind, and the fill (non-zeros of the slices / values stored).
template <class T> double fill_ratio(const Slices<T> &slices, std::int64_t stored_values);
// The non-zeros of slices [j0, j1) (to weigh the fill of a slice interval).
template <class T>
std::int64_t slice_nnz(const Slices<T> &slices, std::int64_t j0, std::int64_t j1);

// CPU kernels (OpenMP over slices, each thread its own n_g·n accumulator; the inner loops over
// block rows vectorise). They add to s (n_g·n values, g-major) the terms of slices [j0, j1),
// which must lie inside the blocks' range. past: lead ≥ n_g − 1, tail ≥ bc. threads ≤ 0: all.
template <class T>
void sum_full_cpu(const FullBlocks<T> &blocks, const History<T> &past, int ng, std::int64_t j0,
                  std::int64_t j1, T *s, int threads = 0);
template <class T>
void sum_contiguous_cpu(const ContiguousBlocks<T> &blocks, const History<T> &past, int ng,
                        std::int64_t j0, std::int64_t j1, T *s, int threads = 0);

// Checks shared by the CPU and CUDA kernels (shape of s is the caller's): the slice interval
// inside the blocks, n_g ≥ 1, the history's unknowns and padding.
void check_blocked_call(std::int64_t n, std::int64_t bj0, std::int64_t bj1, int bc, int ng,
                        std::int64_t j0, std::int64_t j1, std::int64_t past_n,
                        std::int32_t past_depth, std::int32_t kmax, std::int32_t lead,
                        std::int32_t tail);

} // namespace ksum::bem
