#pragma once
// The boundary between the GPU worker of seed 003 (blocking_cuda.cpp) and its kernels
// (cuda/blocking.cu): plain structs of device pointers and launch functions that return "" or the
// CUDA error text.
#include <cstddef>
#include <cstdint>
#include <limits>

namespace ksum::bem {

// The kernels are compiled for n_g ∈ {1, 2, 4, 8, 16} (registers indexed at compile time); a
// call with another n_g runs the next larger one and stores only its n_g vectors, so the device
// history is padded for that larger n_g.
inline constexpr int kGpuMaxNg = 16;
constexpr int gpu_ng_compiled(int ng) {
  return ng <= 1 ? 1 : ng <= 2 ? 2 : ng <= 4 ? 4 : ng <= 8 ? 8 : 16;
}
inline constexpr int kGpuThreads = 256; // per thread block (a "team" of the seed)
// Contiguous-Blocking rows of up to this many columns run the short-row kernel (pipelined across
// slices and rows, cuda/blocking.cu); longer ones the batched kernel.
inline constexpr int kGpuShortBc = 16;

// The device history: row j of `stride` values, P_j(t) = hist[j·stride + lead + t], zero outside
// 0 ≤ t < depth (as History<T>::row()).
template <class T> struct GpuHistory {
  const T *data = nullptr;
  std::int64_t stride = 0;
  std::int32_t lead = 0;
};

// Contiguous-Blocking (§4.2, figure 9): the slices [js_begin, js_end) (relative to blocks.j0)
// are cut into chunks of `chunk` slices; (chunk c, row i) is work item c·n + i, and thread block
// x takes items [x·per_block, (x + 1)·per_block), so every thread block has the same work (no
// tail wave). It stages the past values of each chunk it touches in shared memory (window values
// per slice, from P_j(1 − ngc)) when `staged`, else reads them from the history.
template <class T> struct ContiguousLaunch {
  const T *values = nullptr;        // ContiguousBlocks::values
  const std::int32_t *k0 = nullptr; // ContiguousBlocks::k0
  GpuHistory<T> past;
  std::int64_t n = 0, nb = 0;
  int br = 0, bc = 0;
  std::int64_t hist_j0 = 0;              // the history row of the blocks' first slice (blocks.j0)
  std::int64_t js_begin = 0, js_end = 0; // slices to sum, relative to blocks.j0
  int ng = 1;                            // vectors stored (≤ the compiled n_g)
  int chunk = 1;                         // slices per work item
  std::int64_t items = 0, per_block = 0; // chunks · n work items; per thread block
  int window = 0;                        // values staged per slice
  bool staged = true;
  T *s = nullptr; // ng·n accumulator (g-major)
};

// Full-Blocking (§4.1, figure 7): thread block x handles blocks [b_begin + x·group, … + group),
// each with its bc + ngc past values staged in shared memory.
template <class T> struct FullLaunch {
  const T *values = nullptr; // FullBlocks::values
  const std::int32_t *row0 = nullptr, *col0 = nullptr;
  const std::int32_t *slice = nullptr; // per block: its slice relative to blocks.j0
  GpuHistory<T> past;
  std::int64_t n = 0;
  int br = 0, bc = 0;
  std::int64_t hist_j0 = 0;
  std::int64_t b_begin = 0, b_end = 0;
  int ng = 1;
  int group = 1; // blocks per thread block
  T *s = nullptr;
};

// ngc: the compiled n_g (gpu_ng_compiled). smem: dynamic shared memory bytes.
template <class T>
const char *launch_contiguous(const ContiguousLaunch<T> &a, int ngc, std::int64_t grid,
                              std::size_t smem, void *stream);
template <class T>
const char *launch_full(const FullLaunch<T> &a, int ngc, std::int64_t grid, int threads,
                        std::size_t smem, void *stream);
// Whether launch_contiguous runs the short-row kernel: b_c ≤ kGpuShortBc, and the values of a
// slice addressed in 32 bits.
template <class T> bool gpu_short_rows(const ContiguousLaunch<T> &a) {
  return a.bc <= kGpuShortBc && a.nb * a.br * a.bc <= std::numeric_limits<std::int32_t>::max();
}
// Resident thread blocks per multiprocessor of the kernel that launch_contiguous runs for a
// (its b_c and shape), with smem bytes of dynamic shared memory (0 on error); raises the
// kernel's dynamic shared memory limit where needed.
template <class T>
int contiguous_blocks_per_sm(const ContiguousLaunch<T> &a, int ngc, std::size_t smem);

// dst row j = (a[j], src row j shifted by one), rows of depth values at lead within stride (the
// padding of dst stays as it is: zero).
template <class T>
const char *launch_shift(const T *src, T *dst, const T *a, std::int64_t n, std::int32_t depth,
                         std::int64_t stride, std::int32_t lead, void *stream);

} // namespace ksum::bem
