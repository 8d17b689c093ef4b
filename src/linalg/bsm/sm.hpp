#pragma once
// The Sherman–Morrison recursions of seed 004 Paper III (SVSM Algorithm 1, BSM Algorithm 2,
// RMBSM Algorithm 3) on A = A0 + X Yᵀ, written over CpuOps (cpu_ops.hpp) and an A0⁻¹ operator.
#include "linalg/bsm/cpu_ops.hpp"

#include <ksum/bsm.hpp>

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

} // namespace ksum::bsm
