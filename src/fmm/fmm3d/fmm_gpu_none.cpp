// A build without CUDA: the GPU FMM is not there, and says so.
#include "fmm/fmm3d/fmm_gpu.hpp"
#include "fmm/fmm3d/mq_gpu.hpp"
#include "fmm/fmm3d/octree.hpp"

#include <ksum/error.hpp>

namespace ksum::fmm {

std::unique_ptr<FmmGpu> make_fmm_gpu(const GpuSetup &, bool, int) {
  throw Error(ErrorCode::unsupported,
              "this ksum was built without CUDA: the FMM runs on the CPU (backend cpu)");
}

std::unique_ptr<FmmGpu> make_fmm_gpu(const GpuSetup &, bool, const std::vector<int> &) {
  throw Error(ErrorCode::unsupported,
              "this ksum was built without CUDA: the FMM runs on the CPU (backend cpu)");
}

std::unique_ptr<GpuCellMultipoles> make_gpu_cell_multipoles(const double *, std::int64_t,
                                                            const std::vector<CellRange> &, int) {
  throw Error(ErrorCode::unsupported,
              "this ksum was built without CUDA: the multipole weights are formed on the CPU");
}

void gpu_radix_sort(std::vector<std::uint64_t> &, std::vector<std::int64_t> &, int) {
  throw Error(ErrorCode::unsupported,
              "this ksum was built without CUDA: the octree is sorted on the CPU");
}

std::unique_ptr<MqGpu> make_mq_gpu(const Octree &, const std::vector<char> &, int, double, bool,
                                   int) {
  throw Error(ErrorCode::unsupported,
              "this ksum was built without CUDA: the multiquadric treecode runs on the CPU");
}

} // namespace ksum::fmm
