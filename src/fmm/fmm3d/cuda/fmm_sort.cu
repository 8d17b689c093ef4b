// The octree's radix sort on the GPU (octree.hpp's gpu_radix_sort, host side in fmm_gpu.cpp):
// (Morton code, index) pairs sorted by CUB over the bits that vary.
#include "fmm/fmm3d/fmm_launch.hpp"

#include <ksum/error.hpp>

#include <cub/device/device_radix_sort.cuh>
#include <string>

namespace ksum::detail {
namespace {

__global__ void iota_kernel(std::int64_t *v, std::int64_t n) {
  const std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
  if (i < n)
    v[i] = i;
}

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw Error(ErrorCode::device,
                std::string("GPU radix sort: ") + what + " failed: " + cudaGetErrorString(e));
}

} // namespace

std::size_t radix_sort_temp_bytes(std::int64_t n, int end_bit) {
  std::size_t bytes = 0;
  check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const std::uint64_t *>(nullptr),
                                        static_cast<std::uint64_t *>(nullptr),
                                        static_cast<const std::int64_t *>(nullptr),
                                        static_cast<std::int64_t *>(nullptr), n, 0, end_bit),
        "the size query");
  return bytes;
}

void launch_radix_sort(void *temp, std::size_t temp_bytes, const std::uint64_t *keys_in,
                       std::uint64_t *keys_out, std::int64_t *index_in, std::int64_t *index_out,
                       std::int64_t n, int end_bit, void *stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  iota_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(index_in, n);
  check(cudaGetLastError(), "the index kernel");
  check(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, index_in, index_out, n,
                                        0, end_bit, s),
        "cub::DeviceRadixSort");
}

} // namespace ksum::detail
