#pragma once
// Input checks shared by the plans: errors name the array, row and column.
#include <ksum/error.hpp>
#include <ksum/table.hpp>

#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <string>

namespace ksum::detail {

// check_finite's message, also for checks over MPI ranks (rbf/pum/pum_partitioned.cpp).
inline std::string non_finite_message(const char *what, double value, std::int64_t row,
                                      std::int64_t col) {
  return fmt::format("{}: non-finite value {} at row {}, column {}", what, value, row, col);
}

// A parallel scan for the first non-finite entry (column-major order), then an error naming it.
template <class T> void check_finite(const Table<T> &t, const char *what) {
  const std::int64_t size = t.rows() * t.cols();
  const T *v = t.data();
  std::int64_t bad = size;
#pragma omp parallel for reduction(min : bad) schedule(static) if (size > 100000)
  for (std::int64_t k = 0; k < size; ++k)
    if (!std::isfinite(v[k]) && k < bad)
      bad = k;
  if (bad < size) {
    const std::int64_t r = bad % t.rows(), c = bad / t.rows();
    throw Error(ErrorCode::non_finite,
                non_finite_message(what, static_cast<double>(t(r, c)), r, c));
  }
}

} // namespace ksum::detail
