// A build without CUDA: PUM evaluates on the CPU, and asking for the GPU says why not.
#include "rbf/pum/pum_gpu.hpp"

#include <ksum/error.hpp>

namespace ksum::detail {

std::unique_ptr<PumGpu> make_pum_gpu(const PumGeometry &) {
  throw Error(ErrorCode::unsupported,
              "PUM on the GPU: this build of ksum has no CUDA support (configure with "
              "-DKSUM_USE_CUDA=ON on a machine with nvcc)");
}

} // namespace ksum::detail
