// Builds without CUDA: the FGT has no GPU engine.
#include "fgt/fgt_gpu.hpp"

#include <ksum/error.hpp>

namespace ksum::fgt {

bool gpu_available() {
  return false;
}

template <std::floating_point T> std::unique_ptr<FgtGpu<T>> make_fgt_gpu(int) {
  throw Error(ErrorCode::unsupported, "the fast Gauss transform's GPU engine is not in this build");
}

template std::unique_ptr<FgtGpu<float>> make_fgt_gpu<float>(int);
template std::unique_ptr<FgtGpu<double>> make_fgt_gpu<double>(int);

} // namespace ksum::fgt

namespace ksum::fgt {
HermiteBench hermite_bench_gpu(int, int, std::int64_t, std::int64_t, int, bool) {
  throw Error(ErrorCode::unsupported, "the Hermite benchmark's GPU kernel is not in this build");
}
} // namespace ksum::fgt
