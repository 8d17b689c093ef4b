#pragma once
// The boundary between the host engine (direct_cuda.cpp, plain C++) and the CUDA kernels
// (cuda/*.cu): a tile launch over device arrays. No CUDA types leak into the host side.
#include <ksum/kernels.hpp>

#include <cstdint>

namespace ksum::detail {

template <class T> struct TileArgs {
  const T *src = nullptr; // coordinate k of source j at src[k * src_ld + j]
  std::int64_t n = 0, src_ld = 0;
  const T *w = nullptr; // weight r of source j at w[r * w_ld + j]
  std::int64_t w_ld = 0;
  const T *tgt = nullptr; // coordinate k of target i at tgt[k * tgt_ld + i]
  std::int64_t m = 0, tgt_ld = 0;
  T *out = nullptr; // output column c of target i at out[c * out_ld + i]
  std::int64_t out_ld = 0;
  int d = 0, nrhs = 0; // nrhs <= tile_max_rhs per launch
  bool gradient = false;
  bool accumulate = false; // add to out instead of overwriting it
  bool self = false;       // leave out pairs with i + self_offset == j
  std::int64_t self_offset = 0;
  T grad_scale = 1;
};

inline constexpr int tile_max_rhs = 4;

// Launches on the given cudaStream_t (passed as void*); throws Error(device) on a launch failure.
template <class T> void launch_direct_tiles(Kernel k, const TileArgs<T> &a, void *stream);

} // namespace ksum::detail
