#pragma once
// A GPU worker of seed 003 §5.2: the blocks of one slice interval resident on one device, the past
// values of all n unknowns mirrored there, and the Full-/Contiguous-Blocking kernels of §4.1–4.2.
// Builds without CUDA get a class whose constructor throws ErrorCode::unsupported.
#include "bem/blocking.hpp"

#include <cstdint>
#include <memory>
#include <span>

namespace ksum::bem {

template <class T> class GpuSlices {
public:
  // Copies the blocks to the device (an error names the bytes when they do not fit) and creates a
  // zero history of depth kmax with lead ≥ ng_max − 1 and tail ≥ bc, as the CPU kernels read it.
  GpuSlices(int device, const ContiguousBlocks<T> &blocks, int ng_max);
  GpuSlices(int device, const FullBlocks<T> &blocks, int ng_max);
  ~GpuSlices();
  GpuSlices(GpuSlices &&) noexcept;
  GpuSlices &operator=(GpuSlices &&) noexcept;

  // a^n of all n unknowns (host): shifts the device history by one step, as History::push.
  void push(std::span<const T> a);
  // The whole history at once (after a restart, or to test): depth and n must match.
  void set_history(const History<T> &past);

  // s[g·n + i] += the terms of slices [j0, j1) (inside the blocks' range), g < ng ≤ ng_max; s is
  // host memory of ng·n values. Returns the seconds the kernel took (CUDA events).
  double sum(int ng, std::int64_t j0, std::int64_t j1, T *s);

  // For benchmarks: the kernel alone on device-resident output, repeated reps times; returns the
  // median seconds of one run.
  double time_kernel(int ng, std::int64_t j0, std::int64_t j1, int reps);

  std::int64_t device_bytes() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace ksum::bem
