// Builds without CUDA: the block Sherman–Morrison inverse has no GPU path.
#include "linalg/bsm/bsm_gpu.hpp"

#include <ksum/error.hpp>

namespace ksum::bsm {

namespace {
[[noreturn]] void no_gpu() {
  throw Error(ErrorCode::unsupported,
              "the GPU path of the block Sherman-Morrison inverse is not in this build (built "
              "without CUDA): use backend cpu (or auto)");
}
} // namespace

template <std::floating_point T>
Table<T> gpu_inverse(const T *, std::int64_t, std::int64_t, std::int64_t, const BsmOptions &,
                     std::chrono::steady_clock::time_point, BsmStats *) {
  no_gpu();
}

template <std::floating_point T>
Table<T> gpu_inverse_update(const A0Inverse<T> &, const T *, const T *, std::int64_t, std::int64_t,
                            const BsmOptions &, std::chrono::steady_clock::time_point, BsmStats *) {
  no_gpu();
}

template <std::floating_point T> struct GpuInverse<T>::Impl {};
template <std::floating_point T> GpuInverse<T>::GpuInverse() {
  no_gpu();
}
template <std::floating_point T> GpuInverse<T>::~GpuInverse() = default;
template <std::floating_point T>
LuFactor<T> GpuInverse<T>::set_matrix(const T *, std::int64_t, std::int64_t, double) {
  no_gpu();
}
template <std::floating_point T> void GpuInverse<T>::set_inverse(const T *, std::int64_t) {
  no_gpu();
}
template <std::floating_point T>
double GpuInverse<T>::prepare(const T *, const T *, std::int64_t, std::vector<T> &) {
  no_gpu();
}
template <std::floating_point T> void GpuInverse<T>::apply(const T *, const lapack_int *) {
  no_gpu();
}
template <std::floating_point T> LuFactor<T> GpuInverse<T>::refactor() {
  no_gpu();
}
template <std::floating_point T> void GpuInverse<T>::solve(const T *, std::int64_t, T *) {
  no_gpu();
}
template <std::floating_point T> void GpuInverse<T>::download(T *) {
  no_gpu();
}
template <std::floating_point T> double GpuInverse<T>::take_flops() {
  no_gpu();
}
template class GpuInverse<float>;
template class GpuInverse<double>;

#define KSUM_BSM_GPU_INSTANTIATE(T)                                                                \
  template Table<T> gpu_inverse(const T *, std::int64_t, std::int64_t, std::int64_t,               \
                                const BsmOptions &, std::chrono::steady_clock::time_point,         \
                                BsmStats *);                                                       \
  template Table<T> gpu_inverse_update(const A0Inverse<T> &, const T *, const T *, std::int64_t,   \
                                       std::int64_t, const BsmOptions &,                           \
                                       std::chrono::steady_clock::time_point, BsmStats *);
KSUM_BSM_GPU_INSTANTIATE(float)
KSUM_BSM_GPU_INSTANTIATE(double)
#undef KSUM_BSM_GPU_INSTANTIATE

} // namespace ksum::bsm
