#pragma once
// The Sherman–Morrison recursions of seed 004 Paper III (SVSM Algorithm 1, BSM Algorithm 2,
// RMBSM Algorithm 3) on A = A0 + X Yᵀ, written once (sm_impl.hpp) over an ops type: CpuOps
// (cpu_ops.hpp, instantiated in sm.cpp and standard.cpp) or GpuOps (gpu_ops.hpp, instantiated in
// bsm_gpu.cpp for CUDA builds). An ops type gives Value (the scalar), Buffer (an owning work array
// with data(), leading dimension its rows) and alloc(rows, cols, zeroed), plus the dense operations
// the algorithms call; every pointer the algorithms handle lives in the ops' memory.
#include "linalg/bsm/cpu_ops.hpp"

#include <ksum/bsm.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

namespace ksum::bsm {

// A0⁻¹ as the algorithms use it: applied to blocks of columns (A0⁻¹ B or A0⁻ᵀ B), and as a dense
// matrix for the first term of A⁻¹ = A0⁻¹ − … .
template <std::floating_point T> struct A0Inverse {
  enum class Kind { identity, diagonal, dense, op };
  Kind kind = Kind::identity;
  std::int64_t n = 0;
  std::vector<T> diag;      // diagonal: the entries 1 / a_ii
  const T *dense = nullptr; // dense: A0⁻¹, leading dimension ld
  std::int64_t ld = 0;
  const ApplyInverse<T> *fn = nullptr; // op

  void apply(CpuOps<T> &ops, bool transpose, const T *in, std::int64_t ld_in, T *out,
             std::int64_t ld_out, std::int64_t cols) const;
  Table<T> materialize() const; // A0⁻¹ as an n × n matrix
  // out (n × n, leading dimension n, zero-filled) = A0⁻¹.
  void materialize(CpuOps<T> &ops, T *out) const;
};

// The recursion stopped at the 1-based step k (block of X, Y columns [col, col + cols)): its
// pivot measure rho was at or below the threshold, or R_k was exactly singular (rho = 0).
struct Breakdown {
  std::int64_t step = 0, col = 0, cols = 0;
  double rho = 0;
};

// The result of a variant: the inverse (in the ops' memory) unless the recursion broke down.
template <std::floating_point T, class Buffer = Table<T>> struct SmResult {
  Buffer inverse;
  double min_pivot = INFINITY;
  bool broke_down = false;
  Breakdown breakdown;
};

template <class Ops> using OpsResult = SmResult<typename Ops::Value, typename Ops::Buffer>;
template <class Ops> using OpsValue = typename Ops::Value;

// Factors R_k = I + Fᵀ G (in place → R_k⁻¹) and returns its pivot measure: the smallest LU pivot
// over scale = 1 + ‖F‖_F ‖G‖_F, the size of what was added to I (bsm.hpp). 0 for an exactly
// singular R_k.
template <class Ops>
double factor_pivot(Ops &ops, std::int64_t s, OpsValue<Ops> *R, std::int64_t ldr, double scale) {
  const BlockFactor f = ops.invert_block(s, R, ldr);
  if (f.singular || !std::isfinite(f.min_pivot))
    return 0;
  return f.min_pivot / scale;
}

inline bool breaks(double rho, double threshold) {
  return rho == 0 || rho <= threshold;
}

// X, Y: n × m, column-major with leading dimension n. threshold: the breakdown threshold on ρ_k
// (negative: only an exactly singular R_k breaks down). A0: the A0⁻¹ operator of the ops' memory
// (A0Inverse for CpuOps): n, apply(ops, transpose, in, ld_in, out, ld_out, cols) and
// materialize(ops, out).
template <class Ops, class A0>
OpsResult<Ops> svsm(Ops &ops, const A0 &a0, const OpsValue<Ops> *X, const OpsValue<Ops> *Y,
                    std::int64_t m, double threshold);
template <class Ops, class A0>
OpsResult<Ops> block_sm(Ops &ops, const A0 &a0, const OpsValue<Ops> *X, const OpsValue<Ops> *Y,
                        std::int64_t m, std::int64_t s, double threshold);
template <class Ops, class A0>
OpsResult<Ops> reduced_memory_sm(Ops &ops, const A0 &a0, const OpsValue<Ops> *X,
                                 const OpsValue<Ops> *Y, std::int64_t m, std::int64_t s,
                                 double threshold);

// The standard case of Paper III §1, A = A0 + X Yᵀ with A0 = diag(a0), X = A − A0 and Y = I, with
// neither X nor Y formed: X's columns are read from A, Yᵀ Z is a selection of rows of Z and A0⁻¹
// a row scaling. Y = I also makes V unit upper triangular (V_k = A0 A_{k−1}⁻ᵀ e_k with A_{k−1}
// block lower triangular: V_k has A's identity block at rows c0 … c0 + s_k and nothing below), so
// the products with V are triangular. Counted flops (n³ terms, standard_flops in the docs):
// SVSM and BSM 8/3 n³ (U_k 1, the two V products 1/3 each, the last product 1), RMBSM 2 n³
// (H A0⁻¹ X_k and the update of H, each on H's c0 nonzero columns), LAPACK getrf + getri 2 n³.
// A, a0 and d are in the ops' memory.
template <std::floating_point T> struct StandardSplit {
  const T *A = nullptr;
  std::int64_t n = 0, lda = 0;
  const T *a0 = nullptr, *d = nullptr; // the diagonal of A0 and of A0⁻¹ (d_i = 1 / a0_i)
};

template <class Ops>
OpsResult<Ops> svsm_standard(Ops &ops, const StandardSplit<OpsValue<Ops>> &sp, double threshold);
template <class Ops>
OpsResult<Ops> block_sm_standard(Ops &ops, const StandardSplit<OpsValue<Ops>> &sp, std::int64_t s,
                                 double threshold);
template <class Ops>
OpsResult<Ops> reduced_memory_sm_standard(Ops &ops, const StandardSplit<OpsValue<Ops>> &sp,
                                          std::int64_t s, double threshold);

} // namespace ksum::bsm
