#pragma once
// The boundary between the multiquadric treecode's GPU host engine (mq_gpu.cpp) and its CUDA
// kernels (cuda/mq_treecode.cu): plain structs of device pointers.
#include <cstddef>
#include <cstdint>

namespace ksum::detail {

// A box's expansion is in units of ρ = sqrt(r² + c²) (r: its radius; 1 where ρ = 0): the
// sources' offsets and c divided by ρ, so every |t̃|² + c̃² ≤ 1 and no power over- or underflows
// in float; G_l is homogeneous of degree 2l in (t, c, x), so the series is ρ times the same series
// in the scaled variables.
template <class T> struct MqBox {
  T centre[3];
  T rho;
  std::int64_t begin, end; // sorted points [begin, end)
  std::int32_t parent;
  std::int32_t slot; // its expansion: coef + slot · ncoef, or −1 when no pair uses it
};

template <class T> struct MqTree {
  const MqBox<T> *boxes = nullptr;
  const T *points = nullptr; // sorted, 3 columns of n
  std::int64_t n = 0;
  const T *ws = nullptr;  // sorted weights
  T *coef = nullptr;      // slots × ncoef expansion coefficients (mq_index order)
  std::int64_t ncoef = 0; // mq_offset(terms)
  int terms = 0;
  T c2 = 0;                                                           // the shift squared
  const std::int64_t *far_offsets = nullptr, *near_offsets = nullptr; // CSR per box
  const std::int32_t *far = nullptr, *near = nullptr;
  const std::uint8_t *use_series = nullptr; // per far entry: its series terms, 0: direct
};

// Setup: the expansion of each listed box (boxes[list[k]].slot == k), coef zeroed first.
// Shared memory per block: sources_per_block(terms, sizeof(T)) sources at a time.
template <class T>
void launch_mq_setup(const MqTree<T> &t, const std::int32_t *list, std::int64_t count,
                     void *stream);
// Eval: us[i] for every target of each listed leaf (series or direct per far entry, direct near).
template <class T>
void launch_mq_eval(const MqTree<T> &t, const std::int32_t *leaves, std::int64_t count, T *us,
                    void *stream);

} // namespace ksum::detail
