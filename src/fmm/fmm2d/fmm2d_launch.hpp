#pragma once
// The boundary between the 2D FMM's GPU host engine (fmm2d_gpu.cpp) and its CUDA kernels
// (cuda/fmm2d.cu): plain structs of device pointers.
#include "fmm/fmm2d/expansions2d.hpp"

#include <cstdint>

namespace ksum::fmm2d {

template <class T> struct NearArgs {
  const cx<T> *src = nullptr, *tgt = nullptr, *q = nullptr; // sorted
  const std::int64_t *src_off = nullptr, *tgt_off = nullptr; // per leaf
  const std::int64_t *list_off = nullptr;                     // strong lists of the leaves
  const std::int32_t *list = nullptr;
  std::int64_t leaves = 0;
  bool self = true, harmonic = true;
  T inv_core2 = 0; // 1/δ² of the Gaussian core, 0: none
  cx<T> *out = nullptr; // per sorted target, overwritten
};

template <class T> struct M2lArgs {
  const cx<T> *mult = nullptr; // p per box
  cx<T> *local = nullptr;      // p per box; target boxes' entries overwritten
  const cx<T> *src_centre = nullptr, *tgt_centre = nullptr;
  const T *src_scale = nullptr, *tgt_scale = nullptr;
  const std::int32_t *boxes = nullptr;  // target boxes (global index) with a weak list
  const std::int64_t *off = nullptr;    // their lists in `list`
  const std::int32_t *list = nullptr;   // source boxes (global index)
  std::int64_t count = 0;               // target boxes
  int p = 0;
  const T *binom = nullptr; // C(n, k) at n * 64 + k, n < 64
};

inline constexpr int kGpuMaxTerms = 32;

// Returns "" or the CUDA error text.
template <class T> const char *launch_near(const NearArgs<T> &a, void *stream);
// Row traversal (seed 002 §4.1): p ≤ 32.
template <class T> const char *launch_m2l(const M2lArgs<T> &a, void *stream);

} // namespace ksum::fmm2d
