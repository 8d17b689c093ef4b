#pragma once
// Checks and helpers shared by the inverse (bsm.cpp) and the update (update.cpp).
#include "linalg/bsm/sm.hpp"

#include <string_view>
#include <vector>

namespace ksum::bsm {

// Block size, threads and pivot threshold in range.
void check_options(const BsmOptions &o);
// Error non_finite naming the first NaN/Inf (0-based row, column, value) of a rows × cols block.
template <std::floating_point T>
void check_finite(const T *A, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                  std::string_view what);
// Checks an n × n matrix argument A with leading dimension lda: n ≥ 1, lda ≥ n, A not null, its
// entries finite.
template <std::floating_point T> void check_matrix(const T *A, std::int64_t n, std::int64_t lda);
// The breakdown threshold in use: options' pivot_threshold, or 100 u when it is 0.
template <std::floating_point T> double resolve_threshold(double t);
// An LU with an exactly zero pivot or a reciprocal condition estimate below the unit roundoff.
template <std::floating_point T> bool lu_singular(const LuFactor<T> &f);
template <std::floating_point T>
[[noreturn]] void throw_singular(std::string_view what, const LuFactor<T> &f);
// The variant `o.method` broke down (b) at the breakdown threshold in use: throws the breakdown
// error (fallback error) or records the LU fallback in st (the caller then runs LU). Shared by
// the CPU (bsm.cpp) and GPU (bsm_gpu.cpp) paths, so the message is the same on both.
void on_breakdown(const BsmOptions &o, const Breakdown &b, double threshold, BsmStats &st);
// The standard splitting (Paper III §1): a0 = diag(A) (o.a0 diagonal; an exactly zero entry is an
// error) or ones, d = 1 / a0.
template <std::floating_point T>
void standard_diagonal(const T *A, std::int64_t n, std::int64_t lda, const BsmOptions &o,
                       std::vector<T> &a0, std::vector<T> &d);

} // namespace ksum::bsm
