// Builds without CUDA: the Monte Carlo engine runs on the CPU only.
#include "mc/engine_gpu.hpp"

#include <ksum/error.hpp>

namespace ksum::mc::detail {

bool gpu_available() {
  return false;
}

template <class T>
std::unique_ptr<GpuEngine<T>> make_gpu_engine(const PairParams<T> &, int, int) {
  throw Error(ErrorCode::unsupported,
              "the Monte Carlo engine's GPU backend needs a build with CUDA (KSUM_USE_CUDA=ON)");
}

template std::unique_ptr<GpuEngine<float>> make_gpu_engine(const PairParams<float> &, int, int);
template std::unique_ptr<GpuEngine<double>> make_gpu_engine(const PairParams<double> &, int, int);

} // namespace ksum::mc::detail
