// Seed 003 §3: slices and the scalar (reference) summation; see slices.hpp.
#include "bem/slices.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace ksum::bem {

template <class T> std::int32_t Slices<T>::dmax() const {
  std::int32_t d = 0;
  for (const auto &r : rows)
    d = std::max(d, r.length);
  return d;
}

template <class T>
Slices<T> Slices<T>::from_triplets(std::int64_t n, std::span<const Triplet<T>> entries) {
  if (n < 0)
    throw Error(ErrorCode::invalid_argument, fmt::format("n = {}: must be >= 0", n));
  std::vector<Triplet<T>> e(entries.begin(), entries.end());
  for (std::size_t q = 0; q < e.size(); ++q) {
    const auto &t = e[q];
    if (t.i < 0 || t.i >= n || t.j < 0 || t.j >= n)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("entry {}: (i, j) = ({}, {}) outside 0 … {}", q, t.i, t.j, n - 1));
    if (t.k < 1)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("entry {}: k = {} (the slices hold M^1 … M^Kmax; M^0 is the "
                              "solver's)",
                              q, t.k));
    if (!std::isfinite(static_cast<double>(t.value)))
      throw Error(ErrorCode::non_finite, fmt::format("entry {}: M^{}({}, {}) = {}", q, t.k, t.i,
                                                     t.j, static_cast<double>(t.value)));
  }
  std::sort(e.begin(), e.end(), [](const Triplet<T> &a, const Triplet<T> &b) {
    return a.j != b.j ? a.j < b.j : a.i != b.i ? a.i < b.i : a.k < b.k;
  });
  Slices s;
  s.n = n;
  s.ptr.assign(static_cast<std::size_t>(n) + 1, 0);
  for (std::size_t q = 0; q < e.size();) {
    std::size_t end = q;
    while (end < e.size() && e[end].j == e[q].j && e[end].i == e[q].i)
      ++end;
    for (std::size_t p = q + 1; p < end; ++p)
      if (e[p].k == e[p - 1].k)
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("M^{}({}, {}) given twice", e[p].k, e[p].i, e[p].j));
    SliceRow r;
    r.row = e[q].i;
    r.k0 = e[q].k;
    r.length = e[end - 1].k - e[q].k + 1;
    r.offset = static_cast<std::int64_t>(s.values.size());
    s.values.resize(s.values.size() + static_cast<std::size_t>(r.length), T(0));
    for (std::size_t p = q; p < end; ++p)
      s.values[static_cast<std::size_t>(r.offset + (e[p].k - r.k0))] = e[p].value;
    s.kmax = std::max(s.kmax, e[end - 1].k);
    s.rows.push_back(r);
    ++s.ptr[static_cast<std::size_t>(e[q].j) + 1];
    q = end;
  }
  for (std::int64_t j = 0; j < n; ++j)
    s.ptr[j + 1] += s.ptr[j];
  return s;
}

template <class T>
History<T>::History(std::int64_t n, std::int32_t depth, std::int32_t lead, std::int32_t tail)
    : n_(n), depth_(depth), lead_(lead), tail_(tail) {
  if (n < 0 || depth < 0 || lead < 0 || tail < 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("history of {} unknowns, depth {}, padding {} + {}", n, depth, lead,
                            tail));
  data_.assign(static_cast<std::size_t>(n * stride()), T(0));
}

template <class T> void History<T>::push(std::span<const T> a) {
  if (static_cast<std::int64_t>(a.size()) != n_)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("a^n has {} values for {} unknowns", a.size(), n_));
  if (depth_ == 0)
    return;
  for (std::int64_t j = 0; j < n_; ++j) {
    T *h = data_.data() + j * stride() + lead_;
    std::copy_backward(h, h + depth_ - 1, h + depth_);
    h[0] = a[static_cast<std::size_t>(j)];
  }
}

template <class T>
void sum_slices_scalar(const Slices<T> &slices, const History<T> &past, int ng, std::int64_t j0,
                       std::int64_t j1, T *s) {
  if (past.unknowns() != slices.n || past.depth() < slices.kmax)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("history of {} unknowns, depth {}; the slices need {} and {}",
                            past.unknowns(), past.depth(), slices.n, slices.kmax));
  if (ng < 1 || j0 < 0 || j1 > slices.n || j0 > j1)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("ng = {}, slices [{}, {}) of {}", ng, j0, j1, slices.n));
  const std::int64_t n = slices.n;
  for (std::int64_t j = j0; j < j1; ++j) {
    const auto a = past.at(j); // a[t] = a^{n−1−t}(j)
    for (std::int64_t r = slices.ptr[j]; r < slices.ptr[j + 1]; ++r) {
      const SliceRow &row = slices.rows[static_cast<std::size_t>(r)];
      const T *v = slices.values.data() + row.offset;
      for (int g = 0; g < ng; ++g) {
        T acc = 0;
        for (std::int32_t t = 0; t < row.length; ++t) {
          const std::int64_t idx = row.k0 + t - 1 - g; // a^{n+g−k} = a[k − 1 − g]
          if (idx >= 0)
            acc += v[t] * a[static_cast<std::size_t>(idx)];
        }
        s[g * n + row.row] += acc;
      }
    }
  }
}

template <class T>
void add_shell(const Slices<T> &slices, std::int32_t k, std::span<const T> a, T *s) {
  if (static_cast<std::int64_t>(a.size()) != slices.n)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("{} values for {} unknowns", a.size(), slices.n));
  for (std::int64_t j = 0; j < slices.n; ++j)
    for (std::int64_t r = slices.ptr[j]; r < slices.ptr[j + 1]; ++r) {
      const SliceRow &row = slices.rows[static_cast<std::size_t>(r)];
      if (k >= row.k0 && k < row.k0 + row.length)
        s[row.row] += slices.values[static_cast<std::size_t>(row.offset + (k - row.k0))] *
                      a[static_cast<std::size_t>(j)];
    }
}

template struct Slices<float>;
template struct Slices<double>;
template class History<float>;
template class History<double>;
template void sum_slices_scalar(const Slices<float> &, const History<float> &, int, std::int64_t,
                                std::int64_t, float *);
template void sum_slices_scalar(const Slices<double> &, const History<double> &, int, std::int64_t,
                                std::int64_t, double *);
template void add_shell(const Slices<float> &, std::int32_t, std::span<const float>, float *);
template void add_shell(const Slices<double> &, std::int32_t, std::span<const double>, double *);

} // namespace ksum::bem
