// A build without CUDA: the GPU engine cannot be made, and says why.
#include "direct/direct_problem.hpp"

#include <ksum/error.hpp>

namespace ksum::detail {

template <class T>
std::unique_ptr<CudaDirect<T>> make_cuda_direct(const std::vector<int> &, std::int64_t) {
  throw Error(ErrorCode::unsupported,
              "backend gpu: this build of ksum has no CUDA support (configure with "
              "-DKSUM_USE_CUDA=ON on a machine with nvcc)");
}

template std::unique_ptr<CudaDirect<float>> make_cuda_direct<float>(const std::vector<int> &,
                                                                    std::int64_t);
template std::unique_ptr<CudaDirect<double>> make_cuda_direct<double>(const std::vector<int> &,
                                                                      std::int64_t);

template <class T> void device_direct(const DirectProblem<T> &, T *, int) {
  throw Error(ErrorCode::unsupported,
              "arrays in GPU memory: this build of ksum has no CUDA support (configure with "
              "-DKSUM_USE_CUDA=ON on a machine with nvcc)");
}

template void device_direct<float>(const DirectProblem<float> &, float *, int);
template void device_direct<double>(const DirectProblem<double> &, double *, int);

} // namespace ksum::detail
