#pragma once
// Table<T>: rows × cols, stored column by column (structure of arrays). A point set of dimension d
// is a Table with d columns; weights with several right-hand sides are a Table with one column per
// rhs.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ksum {

template <class T> class Table {
public:
  Table() = default;
  Table(std::int64_t rows, std::int64_t cols, T fill = T(0))
      : rows_(rows), cols_(cols), data_(static_cast<std::size_t>(rows * cols), fill) {}

  std::int64_t rows() const noexcept { return rows_; }
  std::int64_t cols() const noexcept { return cols_; }
  bool empty() const noexcept { return rows_ == 0 || cols_ == 0; }

  T &operator()(std::int64_t row, std::int64_t col) { return data_[col * rows_ + row]; }
  const T &operator()(std::int64_t row, std::int64_t col) const { return data_[col * rows_ + row]; }

  std::span<T> col(std::int64_t c) {
    return {data_.data() + c * rows_, static_cast<std::size_t>(rows_)};
  }
  std::span<const T> col(std::int64_t c) const {
    return {data_.data() + c * rows_, static_cast<std::size_t>(rows_)};
  }
  T *data() noexcept { return data_.data(); }
  const T *data() const noexcept { return data_.data(); }

  // Optional column names (from a CSV header); empty when the source had none.
  std::vector<std::string> names;

  // The same values in another precision.
  template <class U> Table<U> cast() const {
    Table<U> out(rows_, cols_);
    for (std::size_t k = 0; k < data_.size(); ++k)
      out.data()[k] = static_cast<U>(data_[k]);
    out.names = names;
    return out;
  }

private:
  std::int64_t rows_ = 0;
  std::int64_t cols_ = 0;
  std::vector<T> data_;
};

} // namespace ksum
