// A build without CUDA: PUM runs on the CPU, and asking for the GPU says why not.
#include "rbf/pum/pum_gpu.hpp"

#include <ksum/error.hpp>

namespace ksum::detail {
namespace {
[[noreturn]] void no_cuda() {
  throw Error(ErrorCode::unsupported,
              "PUM on the GPU: this build of ksum has no CUDA support (configure with "
              "-DKSUM_USE_CUDA=ON on a machine with nvcc)");
}
} // namespace

std::unique_ptr<PumGpu> make_pum_gpu(const PumHostPacked &) {
  no_cuda();
}

std::unique_ptr<PumGpuFit> pum_gpu_fit(const PumGrid &, const Table<double> &,
                                       const Table<double> &, const PumOptions &, std::int64_t) {
  no_cuda();
}

} // namespace ksum::detail
