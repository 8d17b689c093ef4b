#pragma once
// The Sherman–Morrison recursions of seed 004 Paper III (SVSM Algorithm 1, BSM Algorithm 2,
// RMBSM Algorithm 3) on A = A0 + X Yᵀ, written over CpuOps (cpu_ops.hpp) and an A0⁻¹ operator.
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
};

// The recursion stopped at the 1-based step k (block of X, Y columns [col, col + cols)): its
// pivot measure rho was at or below the threshold, or R_k was exactly singular (rho = 0).
struct Breakdown {
  std::int64_t step = 0, col = 0, cols = 0;
  double rho = 0;
};

template <std::floating_point T> struct SmResult {
  Table<T> inverse;
  double min_pivot = INFINITY;
  bool broke_down = false;
  Breakdown breakdown;
};

// Factors R_k = I + Fᵀ G (in place → R_k⁻¹) and returns its pivot measure: the smallest LU pivot
// over scale = 1 + ‖F‖_F ‖G‖_F, the size of what was added to I (bsm.hpp). 0 for an exactly
// singular R_k.
template <std::floating_point T>
double factor_pivot(CpuOps<T> &ops, std::int64_t s, T *R, std::int64_t ldr, double scale) {
  const BlockFactor f = ops.invert_block(s, R, ldr);
  if (f.singular || !std::isfinite(f.min_pivot))
    return 0;
  return f.min_pivot / scale;
}

inline bool breaks(double rho, double threshold) {
  return rho == 0 || rho <= threshold;
}

// X, Y: n × m, column-major with leading dimension n. threshold: the breakdown threshold on ρ_k
// (negative: only an exactly singular R_k breaks down).
template <std::floating_point T>
SmResult<T> svsm(CpuOps<T> &ops, const A0Inverse<T> &a0, const T *X, const T *Y, std::int64_t m,
                 double threshold);
template <std::floating_point T>
SmResult<T> block_sm(CpuOps<T> &ops, const A0Inverse<T> &a0, const T *X, const T *Y, std::int64_t m,
                     std::int64_t s, double threshold);
template <std::floating_point T>
SmResult<T> reduced_memory_sm(CpuOps<T> &ops, const A0Inverse<T> &a0, const T *X, const T *Y,
                              std::int64_t m, std::int64_t s, double threshold);

// The standard case of Paper III §1, A = A0 + X Yᵀ with A0 = diag(a0), X = A − A0 and Y = I, with
// neither X nor Y formed: X's columns are read from A, Yᵀ Z is a selection of rows of Z and A0⁻¹
// a row scaling. Y = I also makes V unit upper triangular (V_k = A0 A_{k−1}⁻ᵀ e_k with A_{k−1}
// block lower triangular: V_k has A's identity block at rows c0 … c0 + s_k and nothing below), so
// the products with V are triangular. Counted flops (n³ terms, standard_flops in the docs):
// SVSM and BSM 8/3 n³ (U_k 1, the two V products 1/3 each, the last product 1), RMBSM 2 n³
// (H A0⁻¹ X_k and the update of H, each on H's c0 nonzero columns), LAPACK getrf + getri 2 n³.
template <std::floating_point T> struct StandardSplit {
  const T *A = nullptr;
  std::int64_t n = 0, lda = 0;
  std::vector<T> a0, d; // the diagonal of A0 and of A0⁻¹ (d_i = 1 / a0_i)
};

template <std::floating_point T>
SmResult<T> svsm_standard(CpuOps<T> &ops, const StandardSplit<T> &sp, double threshold);
template <std::floating_point T>
SmResult<T> block_sm_standard(CpuOps<T> &ops, const StandardSplit<T> &sp, std::int64_t s,
                              double threshold);
template <std::floating_point T>
SmResult<T> reduced_memory_sm_standard(CpuOps<T> &ops, const StandardSplit<T> &sp, std::int64_t s,
                                       double threshold);

} // namespace ksum::bsm
