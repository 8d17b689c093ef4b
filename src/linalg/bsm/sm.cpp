// SVSM, BSM and RMBSM (seed 004 Paper III, Algorithms 1–3) in general, over CpuOps: the A0⁻¹
// operator of host memory and the instantiations of sm_impl.hpp's recursions.
#include "linalg/bsm/sm_impl.hpp"

#include <cstring>

namespace ksum::bsm {

template <std::floating_point T>
void A0Inverse<T>::apply(CpuOps<T> &ops, bool transpose, const T *in, std::int64_t ld_in, T *out,
                         std::int64_t ld_out, std::int64_t cols) const {
  switch (kind) {
  case Kind::identity:
    for (std::int64_t j = 0; j < cols; ++j)
      std::memcpy(out + j * ld_out, in + j * ld_in, sizeof(T) * static_cast<std::size_t>(n));
    return;
  case Kind::diagonal:
    ops.flops += double(n) * double(cols);
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = 0; i < n; ++i)
        out[j * ld_out + i] = diag[static_cast<std::size_t>(i)] * in[j * ld_in + i];
    return;
  case Kind::dense:
    ops.gemm(transpose, false, n, cols, n, T(1), dense, ld, in, ld_in, T(0), out, ld_out);
    return;
  case Kind::op:
    ops.flops += 2.0 * double(n) * double(n) * double(cols);
    (*fn)(transpose, in, ld_in, out, ld_out, cols);
    return;
  }
}

template <std::floating_point T> Table<T> A0Inverse<T>::materialize() const {
  Table<T> out(n, n);
  CpuOps<T> ops;
  materialize(ops, out.data());
  return out;
}

template <std::floating_point T> void A0Inverse<T>::materialize(CpuOps<T> &, T *out) const {
  switch (kind) {
  case Kind::identity:
    for (std::int64_t i = 0; i < n; ++i)
      out[i * n + i] = T(1);
    break;
  case Kind::diagonal:
    for (std::int64_t i = 0; i < n; ++i)
      out[i * n + i] = diag[static_cast<std::size_t>(i)];
    break;
  case Kind::dense:
    for (std::int64_t j = 0; j < n; ++j)
      std::memcpy(out + j * n, dense + j * ld, sizeof(T) * static_cast<std::size_t>(n));
    break;
  case Kind::op: {
    Table<T> eye(n, n);
    for (std::int64_t i = 0; i < n; ++i)
      eye(i, i) = T(1);
    (*fn)(false, eye.data(), n, out, n, n);
    break;
  }
  }
}

#define KSUM_BSM_SM_INSTANTIATE(T)                                                                 \
  template struct A0Inverse<T>;                                                                    \
  template OpsResult<CpuOps<T>> svsm(CpuOps<T> &, const A0Inverse<T> &, const T *, const T *,      \
                                     std::int64_t, double);                                        \
  template OpsResult<CpuOps<T>> block_sm(CpuOps<T> &, const A0Inverse<T> &, const T *, const T *,  \
                                         std::int64_t, std::int64_t, double);                      \
  template OpsResult<CpuOps<T>> reduced_memory_sm(CpuOps<T> &, const A0Inverse<T> &, const T *,    \
                                                  const T *, std::int64_t, std::int64_t, double);
KSUM_BSM_SM_INSTANTIATE(float)
KSUM_BSM_SM_INSTANTIATE(double)
#undef KSUM_BSM_SM_INSTANTIATE

} // namespace ksum::bsm
