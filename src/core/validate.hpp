#pragma once
// Input checks shared by the plans: errors name the array, row and column.
#include <ksum/error.hpp>
#include <ksum/table.hpp>

#include <cmath>
#include <fmt/format.h>

namespace ksum::detail {

template <class T> void check_finite(const Table<T> &t, const char *what) {
  for (std::int64_t c = 0; c < t.cols(); ++c)
    for (std::int64_t r = 0; r < t.rows(); ++r)
      if (!std::isfinite(t(r, c)))
        throw Error(ErrorCode::non_finite,
                    fmt::format("{}: non-finite value {} at row {}, column {}", what,
                                static_cast<double>(t(r, c)), r, c));
}

} // namespace ksum::detail
