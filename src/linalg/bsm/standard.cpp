// SVSM, BSM and RMBSM (seed 004 Paper III, Algorithms 1–3) in the standard case A0 = diag(a0),
// X = A − A0, Y = I (Paper III §1), over CpuOps: the instantiations of sm_impl.hpp's standard
// recursions (GpuOps's are in bsm_gpu.cpp).
#include "linalg/bsm/sm_impl.hpp"

namespace ksum::bsm {

#define KSUM_BSM_STANDARD_INSTANTIATE(T)                                                           \
  template OpsResult<CpuOps<T>> svsm_standard(CpuOps<T> &, const StandardSplit<T> &, double);      \
  template OpsResult<CpuOps<T>> block_sm_standard(CpuOps<T> &, const StandardSplit<T> &,           \
                                                  std::int64_t, double);                           \
  template OpsResult<CpuOps<T>> reduced_memory_sm_standard(CpuOps<T> &, const StandardSplit<T> &,  \
                                                           std::int64_t, double);
KSUM_BSM_STANDARD_INSTANTIATE(float)
KSUM_BSM_STANDARD_INSTANTIATE(double)
#undef KSUM_BSM_STANDARD_INSTANTIATE

} // namespace ksum::bsm
