#pragma once
// The boundary between the FGT's GPU host engine (fgt_gpu.cpp) and its CUDA kernels
// (cuda/fgt.cu): plain structs of device pointers.
#include <cstdint>

namespace ksum::fgt {

// What the GPU kernels handle: d ≤ 4, p ≤ 16, p^d ≤ 4096 (larger plans run on the CPU).
inline constexpr int kGpuMaxDim = 4, kGpuMaxOrder = 16;
inline constexpr std::int64_t kGpuMaxTerms = 4096;

template <class T> struct GpuFgtArgs {
  int d = 0, p = 0;
  std::int64_t terms = 0;
  // Points are stored relative to the centre of their own box, so that float keeps its digits
  // far from the origin; box centres stay in double and only their differences (a few h at
  // most) are rounded to T.
  const T *src = nullptr, *q = nullptr; // sorted sources
  const double *src_center = nullptr;
  const std::int64_t *src_begin = nullptr;
  const T *tgt = nullptr; // sorted targets
  const double *tgt_center = nullptr;
  const std::int64_t *tgt_begin = nullptr;
  const std::int64_t *pair_begin = nullptr, *pair_src = nullptr; // per target box
  const std::uint8_t *route = nullptr;                           // fgt::Route per pair
  const std::int32_t *hermite_slot = nullptr;                    // per source box, −1: none
  const std::int32_t *taylor_slot = nullptr;                     // per target box, −1: none
  const std::int32_t *hermite_boxes = nullptr, *taylor_boxes = nullptr; // slot → box
  std::int32_t hermite_count = 0, taylor_count = 0;
  T *A = nullptr, *B = nullptr;        // terms per slot
  const std::int64_t *tiles = nullptr; // (box, first target, count ≤ 128) per tile
  std::int64_t tile_count = 0;
  T *out = nullptr; // per sorted target
};

// Hermite coefficients, then Taylor coefficients (from sources and by translation), then the
// evaluation at the targets. Returns "" or the CUDA error text.
template <class T> const char *launch_fgt(const GpuFgtArgs<T> &a, void *stream);

// Seed 002 §4.2's Hermite evaluation in 2D: every target against every cluster, p^2 coefficients
// per cluster (row-major, p ≤ 16 of {5, 9, 12, …}); out[i] = Σ_c Σ_α A_cα h_α(y_i − s_c).
// Returns "" or the CUDA error text.
template <class T>
const char *launch_hermite_table(int p, const T *tgt, std::int64_t n, const T *centers,
                                 const T *coef, std::int64_t clusters, T *out, void *stream);

} // namespace ksum::fgt
