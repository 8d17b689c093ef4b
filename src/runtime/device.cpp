// Build and device information. Without KSUM_USE_CUDA the GPU list is empty.
#include <ksum/device.hpp>

#include <chrono>
#include <fmt/format.h>
#include <omp.h>

#ifdef KSUM_USE_CUDA
#include <cuda_runtime.h>
#endif

#ifndef KSUM_VERSION
#define KSUM_VERSION "0.0.0"
#endif

namespace ksum {

bool cuda_enabled() {
#ifdef KSUM_USE_CUDA
  return true;
#else
  return false;
#endif
}

std::vector<GpuInfo> gpus() {
  std::vector<GpuInfo> out;
#ifdef KSUM_USE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError(); // no driver or no device: report none and clear the sticky error
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess)
      continue;
    GpuInfo g;
    g.id = i;
    g.name = prop.name;
    g.total_memory = static_cast<std::int64_t>(prop.totalGlobalMem);
    g.compute_major = prop.major;
    g.compute_minor = prop.minor;
    g.multiprocessors = prop.multiProcessorCount;
    int prev = 0;
    cudaGetDevice(&prev);
    std::size_t free_b = 0, total_b = 0;
    if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
      g.free_memory = static_cast<std::int64_t>(free_b);
    cudaSetDevice(prev);
    out.push_back(g);
  }
#endif
  return out;
}

std::string gpu_name(int device) {
#ifdef KSUM_USE_CUDA
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  return prop.name;
#else
  (void)device;
  return {};
#endif
}

int gpu_count() {
#ifdef KSUM_USE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
#else
  return 0;
#endif
}

double gpu_warm_up(int device) {
#ifdef KSUM_USE_CUDA
  const auto t0 = std::chrono::steady_clock::now();
  int prev = 0;
  if (cudaGetDevice(&prev) != cudaSuccess || cudaSetDevice(device) != cudaSuccess ||
      cudaFree(nullptr) != cudaSuccess) {
    cudaGetLastError(); // the plan reports a real failure when it uses the GPU
    return 0;
  }
  cudaSetDevice(prev);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
#else
  (void)device;
  return 0;
#endif
}

std::string cuda_runtime_version() {
#ifdef KSUM_USE_CUDA
  int v = 0;
  cudaRuntimeGetVersion(&v);
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
#else
  return "";
#endif
}

int max_threads() {
  return omp_get_max_threads();
}

const char *version() {
  return KSUM_VERSION;
}

} // namespace ksum
