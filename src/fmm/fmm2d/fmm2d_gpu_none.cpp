// A build without CUDA: the GPU parts of the 2D FMM are not there, and say so.
#include "fmm/fmm2d/fmm2d_gpu.hpp"

#include <ksum/error.hpp>

namespace ksum::fmm2d {

template <class T> std::unique_ptr<Fmm2dGpu<T>> make_fmm2d_gpu(int) {
  throw Error(ErrorCode::unsupported,
              "this ksum was built without CUDA: the 2D FMM runs on the CPU (backend cpu)");
}

template <class T> M2lBenchResult m2l_gpu_benchmark(int, std::int64_t, int, int, int) {
  throw Error(ErrorCode::unsupported,
              "this ksum was built without CUDA: no GPU M2L benchmark (build with CUDA)");
}

template std::unique_ptr<Fmm2dGpu<float>> make_fmm2d_gpu(int);
template std::unique_ptr<Fmm2dGpu<double>> make_fmm2d_gpu(int);
template M2lBenchResult m2l_gpu_benchmark<float>(int, std::int64_t, int, int, int);
template M2lBenchResult m2l_gpu_benchmark<double>(int, std::int64_t, int, int, int);

} // namespace ksum::fmm2d
