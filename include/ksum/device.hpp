#pragma once
// What this build of ksum can use: CUDA support, GPUs, threads.
#include <cstdint>
#include <string>
#include <vector>

namespace ksum {

struct GpuInfo {
  int id = 0;
  std::string name;
  std::int64_t total_memory = 0; // bytes
  std::int64_t free_memory = 0;  // bytes
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
};

bool cuda_enabled();                // built with KSUM_USE_CUDA
std::vector<GpuInfo> gpus();        // empty when none is visible or CUDA is not built in
std::string cuda_runtime_version(); // "13.0", or "" without CUDA
int max_threads();                  // OpenMP threads available
const char *version();              // ksum version string

} // namespace ksum
