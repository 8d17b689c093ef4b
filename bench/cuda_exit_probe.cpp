// Where a CUDA process's fixed time goes: the driver's start (cudaGetDeviceCount runs cuInit), the
// primary context (cudaFree(nullptr)), a first allocation, and the teardown at exit. Each mode is
// one process; bench/cuda_exit_probe.sh times them from outside (best of several).
//   probe none          returns at once (the process start and exit alone)
//   probe init          cuInit only, then returns
//   probe ctx           cuInit, the context, 256 MB allocated and set, returns (the runtime's
//                       teardown runs at exit)
//   probe ctx-reset     the same, then cudaDeviceReset() timed inside the process
//   probe ctx-exit      the same, then std::_Exit(0) (no teardown by the runtime: the driver's
//                       file is closed by the kernel)
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
} // namespace

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "none";
  if (std::strcmp(mode, "none") == 0)
    return 0;
  const double t0 = now();
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "no GPU\n");
    return 1;
  }
  const double t_init = now() - t0;
  if (std::strcmp(mode, "init") == 0) {
    std::fprintf(stderr, "init %.4f\n", t_init);
    return 0;
  }
  cudaFree(nullptr);
  const double t_ctx = now() - t0 - t_init;
  void *p = nullptr;
  const std::size_t bytes = std::size_t(256) << 20;
  if (cudaMalloc(&p, bytes) != cudaSuccess || cudaMemset(p, 0, bytes) != cudaSuccess ||
      cudaDeviceSynchronize() != cudaSuccess) {
    std::fprintf(stderr, "allocation failed\n");
    return 1;
  }
  const double t_alloc = now() - t0 - t_init - t_ctx;
  double t_reset = 0;
  if (std::strcmp(mode, "ctx-reset") == 0) {
    const double t1 = now();
    cudaFree(p);
    cudaDeviceReset();
    t_reset = now() - t1;
  }
  std::fprintf(stderr, "init %.4f ctx %.4f alloc %.4f reset %.4f\n", t_init, t_ctx, t_alloc,
               t_reset);
  if (std::strcmp(mode, "ctx-exit") == 0) {
    std::fflush(nullptr);
    std::_Exit(0);
  }
  return 0;
}
