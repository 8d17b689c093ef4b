#pragma once
// Table<T>: rows × cols, stored column by column (structure of arrays). A point set of dimension d
// is a Table with d columns; weights with several right-hand sides are a Table with one column per
// rhs.
#include <cstddef>
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
// Buffers of at least huge_from bytes are 2 MiB-aligned with transparent huge pages advised
// (Linux, where the system allows them on request): 10^8 doubles are then 400 page faults at first
// touch instead of 200,000, and as few to release (src/core/table_memory.cpp; the environment's
// KSUM_HUGEPAGES=0 turns the advice off).
constexpr std::size_t huge_from = std::size_t{64} << 20;
void *allocate_large(std::size_t bytes);
void deallocate_large(void *p) noexcept;
template <class T> struct DefaultInitAllocator : std::allocator<T> {
  using value_type = T;
  template <class U> struct rebind { using other = DefaultInitAllocator<U>; };
  DefaultInitAllocator() = default;
  template <class U> DefaultInitAllocator(const DefaultInitAllocator<U> &) noexcept {}
  T *allocate(std::size_t n) {
    if (n * sizeof(T) >= huge_from)
      return static_cast<T *>(allocate_large(n * sizeof(T)));
    return std::allocator<T>::allocate(n);
  }
  void deallocate(T *p, std::size_t n) noexcept {
    if (n * sizeof(T) >= huge_from)
      deallocate_large(p);
    else
      std::allocator<T>::deallocate(p, n);
  }
#if defined(__cpp_lib_allocate_at_least)
  // std::allocator's would allocate large buffers with operator new, which deallocate() above
  // would then free with free().
  std::allocation_result<T *> allocate_at_least(std::size_t n) {
    return {allocate(n), n};
  }
#endif
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
      : rows_(rows), cols_(cols), data_(static_cast<std::size_t>(rows * cols), fill),
        ptr_(data_.data()) {}
  Table(std::int64_t rows, std::int64_t cols, Uninitialized)
      : rows_(rows), cols_(cols), data_(static_cast<std::size_t>(rows * cols)), ptr_(data_.data()) {
  }

  // A read-only view of rows × cols values the caller owns, stored column by column (a
  // Fortran-ordered rows × cols array, or a C-ordered cols × rows one): no copy is made, and the
  // memory must outlive the view. Copying a view makes an owning copy, so a plan that keeps its
  // input never holds on to the caller's memory (the Python bindings pass NumPy arrays this way).
  static Table borrow(const T *data, std::int64_t rows, std::int64_t cols) {
    Table t;
    t.rows_ = rows;
    t.cols_ = cols;
    t.ptr_ = const_cast<T *>(data);
    t.borrowed_ = true;
    return t;
  }

  Table(const Table &o)
      : names(o.names), rows_(o.rows_), cols_(o.cols_), data_(o.ptr_, o.ptr_ + o.size()),
        ptr_(data_.data()) {}
  Table &operator=(const Table &o) {
    if (this != &o) {
      Table copy(o);
      *this = std::move(copy);
    }
    return *this;
  }
  // Moving keeps what the source was: a view stays a view of the same memory.
  Table(Table &&o) noexcept
      : names(std::move(o.names)), rows_(o.rows_), cols_(o.cols_), data_(std::move(o.data_)),
        ptr_(o.borrowed_ ? o.ptr_ : data_.data()), borrowed_(o.borrowed_) {
    o.reset();
  }
  Table &operator=(Table &&o) noexcept {
    if (this != &o) {
      names = std::move(o.names);
      rows_ = o.rows_;
      cols_ = o.cols_;
      data_ = std::move(o.data_);
      borrowed_ = o.borrowed_;
      ptr_ = borrowed_ ? o.ptr_ : data_.data();
      o.reset();
    }
    return *this;
  }

  std::int64_t rows() const noexcept { return rows_; }
  std::int64_t cols() const noexcept { return cols_; }
  bool empty() const noexcept { return rows_ == 0 || cols_ == 0; }
  bool borrowed() const noexcept { return borrowed_; } // a view of the caller's memory

  T &operator()(std::int64_t row, std::int64_t col) { return ptr_[col * rows_ + row]; }
  const T &operator()(std::int64_t row, std::int64_t col) const { return ptr_[col * rows_ + row]; }

  std::span<T> col(std::int64_t c) { return {ptr_ + c * rows_, static_cast<std::size_t>(rows_)}; }
  std::span<const T> col(std::int64_t c) const {
    return {ptr_ + c * rows_, static_cast<std::size_t>(rows_)};
  }
  T *data() noexcept { return ptr_; }
  const T *data() const noexcept { return ptr_; }

  // Optional column names (from a CSV header); empty when the source had none.
  std::vector<std::string> names;

  // The same values in another precision.
  template <class U> Table<U> cast() const {
    Table<U> out(rows_, cols_, Uninitialized{});
    for (std::size_t k = 0; k < size(); ++k)
      out.data()[k] = static_cast<U>(ptr_[k]);
    out.names = names;
    return out;
  }

private:
  std::size_t size() const noexcept { return static_cast<std::size_t>(rows_ * cols_); }
  void reset() noexcept {
    rows_ = cols_ = 0;
    data_.clear();
    ptr_ = nullptr;
    borrowed_ = false;
  }

  std::int64_t rows_ = 0;
  std::int64_t cols_ = 0;
  detail::uninit_vector<T> data_;
  T *ptr_ = nullptr;
  bool borrowed_ = false;
};

} // namespace ksum
