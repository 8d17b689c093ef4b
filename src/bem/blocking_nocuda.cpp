// Builds without CUDA: the TD-BEM GPU worker (blocking_cuda.hpp) cannot be constructed; the CPU
// kernels of blocking.hpp do the summation.
#include "bem/blocking_cuda.hpp"

#include <ksum/error.hpp>

namespace ksum::bem {
namespace {

[[noreturn]] void no_cuda() {
  throw Error(ErrorCode::unsupported,
              "the TD-BEM GPU worker (GpuSlices): ksum was built without CUDA; use the CPU kernels "
              "sum_full_cpu / sum_contiguous_cpu");
}

} // namespace

template <class T> struct GpuSlices<T>::Impl {};

template <class T> GpuSlices<T>::GpuSlices(int, const ContiguousBlocks<T> &, int) {
  no_cuda();
}
template <class T> GpuSlices<T>::GpuSlices(int, const FullBlocks<T> &, int) {
  no_cuda();
}
template <class T> GpuSlices<T>::~GpuSlices() = default;
template <class T> GpuSlices<T>::GpuSlices(GpuSlices &&) noexcept = default;
template <class T> GpuSlices<T> &GpuSlices<T>::operator=(GpuSlices &&) noexcept = default;
template <class T> void GpuSlices<T>::push(std::span<const T>) {
  no_cuda();
}
template <class T> void GpuSlices<T>::set_history(const History<T> &) {
  no_cuda();
}
template <class T> double GpuSlices<T>::sum(int, std::int64_t, std::int64_t, T *) {
  no_cuda();
}
template <class T> double GpuSlices<T>::time_kernel(int, std::int64_t, std::int64_t, int) {
  no_cuda();
}
template <class T> std::int64_t GpuSlices<T>::device_bytes() const {
  return 0;
}

template class GpuSlices<float>;
template class GpuSlices<double>;

} // namespace ksum::bem
