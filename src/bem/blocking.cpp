// Seed 003 §4: Full-Blocking and Contiguous-Blocking, and their CPU kernels; see blocking.hpp.
#include "bem/blocking.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <omp.h>

namespace ksum::bem {
namespace {

template <class T> void check_range(const Slices<T> &slices, std::int64_t j0, std::int64_t j1) {
  if (j0 < 0 || j1 > slices.n || j0 > j1)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("slices [{}, {}) outside the {} slices", j0, j1, slices.n));
  if (slices.n > std::numeric_limits<std::int32_t>::max())
    throw Error(ErrorCode::unsupported,
                fmt::format("{} unknowns: the blocked kernels index rows with 32 bits", slices.n));
}

void check_shape(int br, int bc) {
  if (br < 1 || br > 1024 || bc < 1 || bc > 4096)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("block {} x {}: rows must be 1 … 1024 and columns 1 … 4096", br, bc));
}

int resolve_threads(int threads) {
  return threads > 0 ? threads : omp_get_max_threads();
}

} // namespace

void check_blocked_call(std::int64_t n, std::int64_t bj0, std::int64_t bj1, int bc, int ng,
                        std::int64_t j0, std::int64_t j1, std::int64_t past_n,
                        std::int32_t past_depth, std::int32_t kmax, std::int32_t lead,
                        std::int32_t tail) {
  if (ng < 1 || ng > 64)
    throw Error(ErrorCode::invalid_argument, fmt::format("ng = {}: must be 1 … 64", ng));
  if (j0 < bj0 || j1 > bj1 || j0 > j1)
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("slices [{}, {}) outside the blocks' slices [{}, {})", j0, j1, bj0, bj1));
  if (past_n != n || past_depth < kmax)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("history of {} unknowns and depth {}; the blocks need {} and {}",
                            past_n, past_depth, n, kmax));
  if (lead < ng - 1 || tail < bc)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("history padded by {} + {}; ng = {} and bc = {} need ≥ {} + {}", lead,
                            tail, ng, bc, ng - 1, bc));
}

// The greedy cut of figure 6 over slices [j0, j1): open(j, row0, col0) for every new block,
// place(block index, row vector, its row inside the block) for every row vector.
template <class T, class Open, class Place>
void greedy_cut(const Slices<T> &slices, int br, int bc, std::int64_t j0, std::int64_t j1,
                Open open_block, Place place) {
  struct Open_ {
    std::int64_t index, row0;
    std::int32_t col0;
  };
  std::vector<Open_> open;
  std::int64_t blocks = 0;
  for (std::int64_t j = j0; j < j1; ++j) {
    open.clear();
    for (std::int64_t q = slices.ptr[j]; q < slices.ptr[j + 1]; ++q) {
      const SliceRow &row = slices.rows[static_cast<std::size_t>(q)];
      if (row.length > bc)
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("slice {}, row {}: a row vector of {} values does not fit blocks "
                                "{} columns wide (b_c must be ≥ d_max = {})",
                                j, row.row, row.length, bc, slices.dmax()));
      // Blocks whose rows ended can take no more row vectors (rows arrive in order).
      std::erase_if(open, [&](const Open_ &o) { return o.row0 + br <= row.row; });
      const Open_ *home = nullptr;
      for (const Open_ &o : open)
        if (row.k0 >= o.col0 && row.k0 + row.length <= o.col0 + bc) {
          home = &o;
          break;
        }
      if (!home) {
        open_block(j, row.row, row.k0);
        open.push_back({blocks++, row.row, row.k0});
        home = &open.back();
      }
      place(home->index, row, row.row - home->row0, row.k0 - home->col0);
    }
  }
}

template <class T>
std::int64_t FullBlocks<T>::count(const Slices<T> &slices, int br, int bc, std::int64_t j0,
                                  std::int64_t j1) {
  check_shape(br, bc);
  check_range(slices, j0, j1);
  std::int64_t blocks = 0;
  greedy_cut(
      slices, br, bc, j0, j1, [&](std::int64_t, std::int64_t, std::int32_t) { ++blocks; },
      [](std::int64_t, const SliceRow &, std::int64_t, std::int32_t) {});
  return blocks;
}

template <class T>
FullBlocks<T> FullBlocks<T>::build(const Slices<T> &slices, int br, int bc, std::int64_t j0,
                                   std::int64_t j1) {
  check_shape(br, bc);
  check_range(slices, j0, j1);
  FullBlocks b;
  static_cast<BlockCut &>(b) = {slices.n, slices.kmax, br, bc, j0, j1};
  b.slice_ptr.assign(static_cast<std::size_t>(j1 - j0) + 1, 0);
  const std::size_t block_size = static_cast<std::size_t>(br) * bc;
  greedy_cut(
      slices, br, bc, j0, j1,
      [&](std::int64_t j, std::int64_t row0, std::int32_t col0) {
        b.row0.push_back(static_cast<std::int32_t>(row0));
        b.col0.push_back(col0);
        b.values.resize(b.values.size() + block_size, T(0));
        b.slice_ptr[static_cast<std::size_t>(j - j0) + 1] = b.blocks();
      },
      [&](std::int64_t index, const SliceRow &row, std::int64_t r, std::int32_t c0) {
        T *block = b.values.data() + static_cast<std::size_t>(index) * block_size;
        for (std::int32_t t = 0; t < row.length; ++t)
          block[static_cast<std::size_t>(c0 + t) * br + static_cast<std::size_t>(r)] =
              slices.values[static_cast<std::size_t>(row.offset + t)];
      });
  // Slices without blocks end where the previous one did.
  for (std::size_t q = 1; q < b.slice_ptr.size(); ++q)
    b.slice_ptr[q] = std::max(b.slice_ptr[q], b.slice_ptr[q - 1]);
  return b;
}

template <class T>
ContiguousBlocks<T> ContiguousBlocks<T>::build(const Slices<T> &slices, int br, int bc,
                                               std::int64_t j0, std::int64_t j1) {
  const int dmax = std::max<std::int32_t>(slices.dmax(), 1);
  if (bc == 0)
    bc = dmax;
  check_shape(br, bc);
  check_range(slices, j0, j1);
  if (bc < dmax)
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("b_c = {} is shorter than the longest row vector d_max = {}", bc, dmax));
  ContiguousBlocks b;
  static_cast<BlockCut &>(b) = {slices.n, slices.kmax, br, bc, j0, j1};
  b.nb = (slices.n + br - 1) / br;
  const std::size_t rows_per_slice = static_cast<std::size_t>(b.nb) * br;
  b.k0.assign(static_cast<std::size_t>(j1 - j0) * rows_per_slice, 1);
  b.values.assign(b.k0.size() * static_cast<std::size_t>(bc), T(0));
#pragma omp parallel for schedule(dynamic, 16)
  for (std::int64_t j = j0; j < j1; ++j) {
    const std::size_t base = static_cast<std::size_t>(j - j0) * rows_per_slice;
    T *slice_values = b.values.data() + base * bc;
    for (std::int64_t q = slices.ptr[j]; q < slices.ptr[j + 1]; ++q) {
      const SliceRow &row = slices.rows[static_cast<std::size_t>(q)];
      b.k0[base + static_cast<std::size_t>(row.row)] = row.k0;
      const std::size_t blk = static_cast<std::size_t>(row.row / br);
      const std::size_t r = static_cast<std::size_t>(row.row % br);
      T *block = slice_values + blk * br * bc;
      for (std::int32_t t = 0; t < row.length; ++t)
        block[static_cast<std::size_t>(t) * br + r] =
            slices.values[static_cast<std::size_t>(row.offset + t)];
    }
  }
  return b;
}

template <class T>
std::int64_t slice_nnz(const Slices<T> &slices, std::int64_t j0, std::int64_t j1) {
  if (j0 >= j1)
    return 0;
  const auto first = slices.ptr[j0], last = slices.ptr[j1];
  if (first == last)
    return 0;
  const SliceRow &end = slices.rows[static_cast<std::size_t>(last - 1)];
  return end.offset + end.length - slices.rows[static_cast<std::size_t>(first)].offset;
}

template <class T> double fill_ratio(const Slices<T> &slices, std::int64_t stored_values) {
  return stored_values > 0 ? static_cast<double>(slice_nnz(slices, 0, slices.n)) / stored_values
                           : 1.0;
}

namespace {

// The n_g·n partial sums of one thread, added to s at the end (the slices of different threads
// write the same rows).
template <class T, class Body>
void over_slices(std::int64_t n, int ng, std::int64_t j0, std::int64_t j1, T *s, int threads,
                 Body body) {
  const int nt = static_cast<int>(
      std::min<std::int64_t>(resolve_threads(threads), std::max<std::int64_t>(j1 - j0, 1)));
  if (nt <= 1) {
    for (std::int64_t j = j0; j < j1; ++j)
      body(j, s);
    return;
  }
  const std::size_t len = static_cast<std::size_t>(ng) * n;
  std::vector<std::vector<T>> part(static_cast<std::size_t>(nt));
#pragma omp parallel num_threads(nt)
  {
    auto &mine = part[static_cast<std::size_t>(omp_get_thread_num())];
    mine.assign(len, T(0));
#pragma omp for schedule(dynamic, 4)
    for (std::int64_t j = j0; j < j1; ++j)
      body(j, mine.data());
#pragma omp for schedule(static)
    for (std::int64_t q = 0; q < static_cast<std::int64_t>(len); ++q) {
      T acc = 0;
      for (const auto &p : part)
        acc += p[static_cast<std::size_t>(q)];
      s[q] += acc;
    }
  }
}

constexpr int kMaxNg = 64;

} // namespace

template <class T>
void sum_full_cpu(const FullBlocks<T> &blocks, const History<T> &past, int ng, std::int64_t j0,
                  std::int64_t j1, T *s, int threads) {
  check_blocked_call(blocks.n, blocks.j0, blocks.j1, blocks.bc, ng, j0, j1, past.unknowns(),
                     past.depth(), blocks.kmax, past.lead(), past.tail());
  const int br = blocks.br, bc = blocks.bc;
  const std::int64_t n = blocks.n;
  over_slices<T>(n, ng, j0, j1, s, threads, [&](std::int64_t j, T *out) {
    const T *p = past.row(j);
    std::vector<T> acc(static_cast<std::size_t>(ng) * br);
    for (std::int64_t b = blocks.slice_ptr[j - blocks.j0]; b < blocks.slice_ptr[j - blocks.j0 + 1];
         ++b) {
      std::fill(acc.begin(), acc.end(), T(0));
      const T *v = blocks.values.data() + static_cast<std::size_t>(b) * br * bc;
      // One past-values window per block (all its rows share col0): a rank-1 update per column
      // and vector, vectorised over the block's rows.
      const T *w = p + blocks.col0[static_cast<std::size_t>(b)] - 1;
      for (int c = 0; c < bc; ++c) {
        const T *col = v + static_cast<std::size_t>(c) * br;
        for (int g = 0; g < ng; ++g) {
          const T x = w[c - g];
          T *a = acc.data() + static_cast<std::size_t>(g) * br;
#pragma omp simd
          for (int r = 0; r < br; ++r)
            a[r] += col[r] * x;
        }
      }
      const std::int64_t row0 = blocks.row0[static_cast<std::size_t>(b)];
      const int rows = static_cast<int>(std::min<std::int64_t>(br, n - row0));
      for (int g = 0; g < ng; ++g)
        for (int r = 0; r < rows; ++r)
          out[g * n + row0 + r] += acc[static_cast<std::size_t>(g) * br + r];
    }
  });
}

template <class T>
void sum_contiguous_cpu(const ContiguousBlocks<T> &blocks, const History<T> &past, int ng,
                        std::int64_t j0, std::int64_t j1, T *s, int threads) {
  check_blocked_call(blocks.n, blocks.j0, blocks.j1, blocks.bc, ng, j0, j1, past.unknowns(),
                     past.depth(), blocks.kmax, past.lead(), past.tail());
  const int br = blocks.br, bc = blocks.bc;
  const std::int64_t n = blocks.n, nb = blocks.nb;
  over_slices<T>(n, ng, j0, j1, s, threads, [&](std::int64_t j, T *out) {
    const T *p = past.row(j);
    const std::size_t base = static_cast<std::size_t>(j - blocks.j0) * nb * br;
    const std::int32_t *k0 = blocks.k0.data() + base;
    const T *vals = blocks.values.data() + base * bc;
    T acc[kMaxNg];
    for (std::int64_t b = 0; b < nb; ++b) {
      const T *v = vals + static_cast<std::size_t>(b) * br * bc;
      const int rows = static_cast<int>(std::min<std::int64_t>(br, n - b * br));
      for (int r = 0; r < rows; ++r) {
        // Each row its own window (§4.2): a short matrix-vector product over the row's b_c
        // values and its n_g shifted past vectors.
        const T *w = p + k0[b * br + r] - 1;
        for (int g = 0; g < ng; ++g)
          acc[g] = 0;
        for (int c = 0; c < bc; ++c) {
          const T x = v[static_cast<std::size_t>(c) * br + r];
#pragma omp simd
          for (int g = 0; g < ng; ++g)
            acc[g] += x * w[c - g];
        }
        const std::int64_t i = b * br + r;
        for (int g = 0; g < ng; ++g)
          out[g * n + i] += acc[g];
      }
    }
  });
}

#define KSUM_BLOCKING(T)                                                                           \
  template struct FullBlocks<T>;                                                                   \
  template struct ContiguousBlocks<T>;                                                             \
  template double fill_ratio(const Slices<T> &, std::int64_t);                                     \
  template std::int64_t slice_nnz(const Slices<T> &, std::int64_t, std::int64_t);                  \
  template void sum_full_cpu(const FullBlocks<T> &, const History<T> &, int, std::int64_t,         \
                             std::int64_t, T *, int);                                              \
  template void sum_contiguous_cpu(const ContiguousBlocks<T> &, const History<T> &, int,           \
                                   std::int64_t, std::int64_t, T *, int);
KSUM_BLOCKING(float)
KSUM_BLOCKING(double)
#undef KSUM_BLOCKING

} // namespace ksum::bem
