#pragma once
// Table<T>: rows × cols, stored column by column (structure of arrays). A point set of dimension d
// is a Table with d columns; weights with several right-hand sides are a Table with one column per
// rhs.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ksum {

namespace detail {
// An allocator whose value-initialisation (vector(n), resize(n)) leaves trivial types
// uninitialised: large buffers that a parallel loop fills completely are then first touched by
// the threads that fill them, not zeroed serially beforehand.
template <class T> struct DefaultInitAllocator : std::allocator<T> {
  using value_type = T;
  template <class U> struct rebind { using other = DefaultInitAllocator<U>; };
  DefaultInitAllocator() = default;
  template <class U> DefaultInitAllocator(const DefaultInitAllocator<U> &) noexcept {}
  template <class U> void construct(U *p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void *>(p)) U;
  }
  template <class U, class... A> void construct(U *p, A &&...a) {
    ::new (static_cast<void *>(p)) U(std::forward<A>(a)...);
  }
};
template <class T> using uninit_vector = std::vector<T, DefaultInitAllocator<T>>;
} // namespace detail

// Tag for a Table whose values are left uninitialised (the caller writes every entry).
struct Uninitialized {};

template <class T> class Table {
public:
  Table() = default;
  Table(std::int64_t rows, std::int64_t cols, T fill = T(0))
      : rows_(rows), cols_(cols), data_(static_cast<std::size_t>(rows * cols), fill) {}
  Table(std::int64_t rows, std::int64_t cols, Uninitialized)
      : rows_(rows), cols_(cols), data_(static_cast<std::size_t>(rows * cols)) {}

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
  detail::uninit_vector<T> data_;
};

} // namespace ksum
