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
// Every visible GPU with its properties and free memory (querying the free memory starts a CUDA
// context on each GPU: ~0.1 s and some memory per GPU). Empty when none is visible or CUDA is not
// built in.
std::vector<GpuInfo> gpus();
// How many GPUs are visible, without starting any CUDA context (0 without CUDA or a driver).
int gpu_count();
// The name of GPU `device` (e.g. "NVIDIA H100 80GB HBM3"), without its free memory; "" where there
// is no such GPU or no CUDA.
std::string gpu_name(int device);
// Starts the CUDA context of GPU `device` (which the first GPU call would otherwise pay) and
// returns the seconds it took; 0 without CUDA. Lets a caller start it early, or time it alone.
double gpu_warm_up(int device = 0);
std::string cuda_runtime_version(); // "13.0", or "" without CUDA
int max_threads();                  // OpenMP threads available
const char *version();              // ksum version string

} // namespace ksum
