#pragma once
// Input checks shared by the plans: errors name the array, row and column.
#include <ksum/error.hpp>
#include <ksum/table.hpp>

#include <cmath>
#include <fmt/format.h>

namespace ksum::detail {

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
                fmt::format("{}: non-finite value {} at row {}, column {}", what,
                            static_cast<double>(t(r, c)), r, c));
  }
}

} // namespace ksum::detail
