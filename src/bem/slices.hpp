#pragma once
// The slice structure of seed 003 §3.2: the interaction matrices M^1 … M^Kmax stored by column j
// ("Slice^j": Slice^j(i, k) = M^k(i, j)). In a slice, the non-zeros of row i occupy one interval
// of k (the time shell in which the wave from j passes over i, §2.2), so a slice is a list of row
// vectors (i, k0, length) with their values.
//
// The summation stage (eq. 3) s^n(i) = Σ_k Σ_j M^k(i, j) a^{n−k}(j) then runs slice by slice; with
// n_g summation vectors at once (§3.3, figure 4c) the slice also gives s^{n+1} … s^{n+n_g−1},
// their terms with a^m, m ≥ n (not known yet), left out: add_shell() adds them once a^m is known.
#include <cstdint>
#include <span>
#include <vector>

namespace ksum::bem {

struct SliceRow {
  std::int64_t row = 0;    // i
  std::int32_t k0 = 1;     // first k of the row vector (k ≥ 1)
  std::int32_t length = 0; // its values are M^{k0} … M^{k0+length−1} at (i, j)
  std::int64_t offset = 0; // into Slices::values
};

// One non-zero M^k(i, j).
template <class T> struct Triplet {
  std::int64_t i, j;
  std::int32_t k;
  T value;
};

template <class T> struct Slices {
  std::int64_t n = 0;            // unknowns: rows and slices
  std::int32_t kmax = 0;         // the largest k with a non-zero (M^k = 0 beyond)
  std::vector<std::int64_t> ptr; // slice j's rows: rows[ptr[j] .. ptr[j + 1]), by row
  std::vector<SliceRow> rows;
  std::vector<T> values;

  std::int64_t nnz() const { return static_cast<std::int64_t>(values.size()); }
  std::int32_t dmax() const; // the longest row vector (the seed's d_max)

  // From the non-zeros of M^1 … M^Kmax (any order; k ≥ 1, 0 ≤ i, j < n). Gaps inside a row
  // vector's k interval are stored as zeros; a repeated (i, j, k) is an error, as are indices out
  // of range and non-finite values (the message names the entry).
  static Slices from_triplets(std::int64_t n, std::span<const Triplet<T>> entries);
};

// The past values a^{n−1} … a^{n−kmax} of every unknown, slice by slice: at(j)[t] = a^{n−1−t}(j),
// so that one slice reads one contiguous vector (§3.3). push() shifts in a^n.
// The blocked kernels read a row with padding: row(j)[t] for −lead ≤ t < depth + tail, zero outside
// 0 ≤ t < depth (the values a^{≥ n} not known yet, and the zero columns that pad a block).
template <class T> class History {
public:
  History(std::int64_t n, std::int32_t depth, std::int32_t lead = 0, std::int32_t tail = 0);
  std::int64_t unknowns() const { return n_; }
  std::int32_t depth() const { return depth_; }
  std::int32_t lead() const { return lead_; }
  std::int32_t tail() const { return tail_; }
  std::int64_t stride() const { return lead_ + depth_ + tail_; }
  std::span<const T> at(std::int64_t j) const {
    return {data_.data() + j * stride() + lead_, static_cast<std::size_t>(depth_)};
  }
  const T *row(std::int64_t j) const { return data_.data() + j * stride() + lead_; }
  const T *data() const { return data_.data(); } // unknowns() rows of stride() values
  void push(std::span<const T> a); // a^n (n values): becomes at(j)[0]

private:
  std::int64_t n_;
  std::int32_t depth_, lead_, tail_;
  std::vector<T> data_;
};

// The scalar reference summation over the slices [j0, j1): for g = 0 … ng−1,
//   s[g·n + i] += Σ_j Σ_{k ≥ g+1} Slice^j(i, k) a^{n+g−k}(j)
// (terms with k ≤ g need a^{≥ n}, not known yet, and are left out).
template <class T>
void sum_slices_scalar(const Slices<T> &slices, const History<T> &past, int ng, std::int64_t j0,
                       std::int64_t j1, T *s);

// s[i] += Σ_j M^k(i, j) a(j): the shell k alone, to complete a summation vector once a^m is known
// (s^{m+k} gets M^k a^m).
template <class T>
void add_shell(const Slices<T> &slices, std::int32_t k, std::span<const T> a, T *s);

} // namespace ksum::bem
