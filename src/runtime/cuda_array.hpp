#pragma once
// A typed device array that frees itself, with the error handling every host engine shares: CUDA
// failures become ksum::Error(device) naming the GPU and the call.
#include <ksum/error.hpp>

#include <algorithm>
#include <cstdint>
#include <cuda_runtime.h>
#include <fmt/format.h>

namespace ksum::detail {

inline void cuda_check(cudaError_t e, int dev, const char *what) {
  if (e != cudaSuccess)
    throw Error(ErrorCode::device,
                fmt::format("GPU {}: {} failed: {}", dev, what, cudaGetErrorString(e)));
}

template <class T> struct DeviceArray {
  T *ptr = nullptr;
  std::int64_t size = 0;
  int dev = 0;

  DeviceArray() = default;
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;
  ~DeviceArray() { release(); }

  // Room for at least n elements on the current device (contents not kept when it grows).
  void reserve(std::int64_t n, int device = -1) {
    if (n <= size)
      return;
    release();
    if (device < 0)
      cuda_check(cudaGetDevice(&device), 0, "cudaGetDevice");
    dev = device;
    const std::int64_t bytes = std::max<std::int64_t>(n, 1) * static_cast<std::int64_t>(sizeof(T));
    cuda_check(cudaMalloc(&ptr, static_cast<std::size_t>(bytes)), dev,
               fmt::format("cudaMalloc of {} MiB", bytes >> 20).c_str());
    size = n;
  }
  // Frees the array when it holds more than `n` elements (so a plan that streams does not keep
  // what an earlier resident plan allocated on top of its own budget).
  void shrink_to(std::int64_t n) {
    if (size > n)
      release();
  }
  void release() {
    if (ptr) {
      cudaSetDevice(dev);
      cudaFree(ptr);
    }
    ptr = nullptr;
    size = 0;
  }
  T *upload(const T *host, std::int64_t n) {
    reserve(n);
    if (n > 0)
      cuda_check(cudaMemcpy(ptr, host, static_cast<std::size_t>(n) * sizeof(T),
                            cudaMemcpyHostToDevice),
                 dev, "cudaMemcpy to the GPU");
    return ptr;
  }
  void download(T *host, std::int64_t n) const {
    if (n > 0)
      cuda_check(cudaMemcpy(host, ptr, static_cast<std::size_t>(n) * sizeof(T),
                            cudaMemcpyDeviceToHost),
                 dev, "cudaMemcpy from the GPU");
  }
};

} // namespace ksum::detail
