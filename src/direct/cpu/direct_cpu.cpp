// CPU direct sum: OpenMP over blocks of targets; for each block, sources in chunks that stay in L1,
// the inner loop over sources vectorised (#pragma omp simd reductions, branch-free kernel math from
// kernels/kmath.hpp). The self term is left out by splitting the source range around j = i, so the
// vector loop carries no index test (seed 000 §4: "CPU no cond.").
#include "core/parallel_errors.hpp"
#include "direct/direct_problem.hpp"
#include "kernels/kernel_defs.hpp"

#include <algorithm>
#include <atomic>
#include <omp.h>
#include <vector>

namespace ksum::detail {
namespace {

constexpr std::int64_t source_chunk = 1024;

// Σ_j w_j K(q_ij) over [j0, j1) for one target: the hot loop (one right-hand side, no gradient).
template <int D, class K, class T>
T sum_values(const K &kf, const T *xi, const T *const *y, const T *__restrict w, std::int64_t d,
             std::int64_t j0, std::int64_t j1) {
  T acc = 0;
  constexpr double p0 = kdef::p_offset<K>();
  if constexpr (D > 0) {
    const T *__restrict y0 = y[0];
    const T *__restrict y1 = y[D > 1 ? 1 : 0];
    const T *__restrict y2 = y[D > 2 ? 2 : 0];
    const T x0 = xi[0], x1 = D > 1 ? xi[1] : T(0), x2 = D > 2 ? xi[2] : T(0);
#pragma omp simd reduction(+ : acc)
    for (std::int64_t j = j0; j < j1; ++j) {
      const T a = x0 - y0[j];
      T q = a * a;
      if constexpr (p0 != 0)
        q = T(p0) + a * a; // one FMA, like the plain square
      if constexpr (D > 1) {
        const T b = x1 - y1[j];
        q += b * b;
      }
      if constexpr (D > 2) {
        const T c = x2 - y2[j];
        q += c * c;
      }
      acc += w[j] * kf.value(q);
    }
  } else {
#pragma omp simd reduction(+ : acc)
    for (std::int64_t j = j0; j < j1; ++j) {
      T q = T(p0);
      for (std::int64_t k = 0; k < d; ++k) {
        const T a = xi[k] - y[k][j];
        q += a * a;
      }
      acc += w[j] * kf.value(q);
    }
  }
  return acc;
}

// The squared distances of the chunk: unrolled for D = 1, 2, 3 (a runtime loop over the
// coordinates inside the vector loop runs several times slower), generic for D = 0.
template <int D, class K, class T>
void chunk_q(const T *xi, const T *const *y, std::int64_t d, std::int64_t j0, std::int64_t len,
             T *__restrict q) {
  constexpr double p0 = kdef::p_offset<K>();
  if constexpr (D > 0) {
    const T *__restrict y0 = y[0] + j0;
    const T *__restrict y1 = y[D > 1 ? 1 : 0] + j0;
    const T *__restrict y2 = y[D > 2 ? 2 : 0] + j0;
    const T x0 = xi[0], x1 = D > 1 ? xi[1] : T(0), x2 = D > 2 ? xi[2] : T(0);
#pragma omp simd
    for (std::int64_t j = 0; j < len; ++j) {
      const T a = x0 - y0[j];
      T r = T(p0) + a * a;
      if constexpr (D > 1) {
        const T b = x1 - y1[j];
        r += b * b;
      }
      if constexpr (D > 2) {
        const T c = x2 - y2[j];
        r += c * c;
      }
      q[j] = r;
    }
  } else {
    for (std::int64_t j = 0; j < len; ++j)
      q[j] = T(p0);
    for (std::int64_t k = 0; k < d; ++k) {
      const T *__restrict yk = y[k] + j0;
      const T x = xi[k];
#pragma omp simd
      for (std::int64_t j = 0; j < len; ++j) {
        const T a = x - yk[j];
        q[j] += a * a;
      }
    }
  }
}

// General case (several right-hand sides and/or the gradient): kernel values and dK/dq for the
// chunk go to small buffers in one vector pass, then one vector reduction per output column.
template <int D, class K, class T>
void sum_general(const K &kf, const DirectProblem<T> &p, const T *xi, const T *const *y,
                 std::int64_t j0, std::int64_t j1, T *kv, T *dk, T *acc) {
  const std::int64_t len = j1 - j0, d = p.d;
  if (len <= 0)
    return;
  chunk_q<D, K>(xi, y, d, j0, len, kv); // q first, overwritten in place by K(q)
#pragma omp simd
  for (std::int64_t j = 0; j < len; ++j) {
    const T q = kv[j];
    if (p.gradient) {
      T g;
      kv[j] = kf.value(q, g);
      dk[j] = g;
    } else {
      kv[j] = kf.value(q);
    }
  }
  const std::int64_t cpr = p.cols_per_rhs();
  for (std::int64_t r = 0; r < p.nrhs; ++r) {
    const T *__restrict w = p.w + r * p.n + j0;
    T s = 0;
#pragma omp simd reduction(+ : s)
    for (std::int64_t j = 0; j < len; ++j)
      s += w[j] * kv[j];
    acc[r * cpr] += s;
    if (!p.gradient)
      continue;
    for (std::int64_t k = 0; k < d; ++k) {
      const T *__restrict yk = y[k] + j0;
      const T x = xi[k];
      T g = 0;
#pragma omp simd reduction(+ : g)
      for (std::int64_t j = 0; j < len; ++j)
        g += w[j] * dk[j] * (x - yk[j]);
      acc[r * cpr + 1 + k] += p.grad_scale * g;
    }
  }
}

template <int D, class K, class T>
void run(const K &kf, const DirectProblem<T> &p, T *out, int threads, const Progress &progress,
         std::int64_t target_block) {
  const std::int64_t n = p.n, m = p.m, d = p.d, ncols = p.out_cols();
  std::vector<const T *> ycols(static_cast<std::size_t>(d));
  for (std::int64_t k = 0; k < d; ++k)
    ycols[k] = p.src + k * n;
  const bool fused = p.nrhs == 1 && !p.gradient;
  const std::int64_t nblocks = (m + target_block - 1) / target_block;
  std::atomic<std::int64_t> done{0};
  const int nthreads = threads > 0 ? threads : omp_get_max_threads();
  detail::ParallelErrors errors; // the other threads skip their blocks once one has failed

#pragma omp parallel num_threads(nthreads)
  {
    std::vector<T> xi(static_cast<std::size_t>(d));
    std::vector<T> kv(source_chunk), dk(source_chunk);
    std::vector<T> block_acc(static_cast<std::size_t>(target_block * ncols));
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t b = 0; b < nblocks; ++b) {
      if (errors.failed())
        continue;
      try {
        const std::int64_t i0 = b * target_block, i1 = std::min(m, i0 + target_block);
        std::fill(block_acc.begin(), block_acc.end(), T(0));
        for (std::int64_t j0 = 0; j0 < n; j0 += source_chunk) {
          const std::int64_t j1 = std::min(n, j0 + source_chunk);
          // Thread 0 reports the finished blocks plus its own block's share, so that large
          // blocks (one per thread) still show progress.
          if (progress && omp_get_thread_num() == 0 && (j0 / source_chunk) % 16 == 0)
            progress((static_cast<double>(done.load()) +
                      static_cast<double>(j0) / static_cast<double>(n)) /
                     static_cast<double>(nblocks));
          for (std::int64_t i = i0; i < i1; ++i) {
            for (std::int64_t k = 0; k < d; ++k)
              xi[k] = p.tgt[k * m + i];
            // With targets = sources, skip j = i by summing the two ranges around it.
            const bool split = p.self && i >= j0 && i < j1;
            const std::int64_t a1 = split ? i : j1, a2 = split ? i + 1 : j1;
            T *accb = block_acc.data() + (i - i0) * ncols;
            if (fused) {
              accb[0] += sum_values<D>(kf, xi.data(), ycols.data(), p.w, d, j0, a1) +
                         sum_values<D>(kf, xi.data(), ycols.data(), p.w, d, a2, j1);
            } else {
              sum_general<D>(kf, p, xi.data(), ycols.data(), j0, a1, kv.data(), dk.data(), accb);
              sum_general<D>(kf, p, xi.data(), ycols.data(), a2, j1, kv.data(), dk.data(), accb);
            }
          }
        }
        for (std::int64_t i = i0; i < i1; ++i)
          for (std::int64_t c = 0; c < ncols; ++c)
            out[c * m + i] = block_acc[(i - i0) * ncols + c];
        ++done;
      } catch (...) {
        errors.capture();
      }
    }
  }
  errors.rethrow();
  if (progress)
    progress(1.0);
}

} // namespace

template <class T>
void cpu_direct(const DirectProblem<T> &p, T *out, int threads, const Progress &progress,
                std::int64_t block) {
  if (p.m == 0)
    return;
  block = std::max<std::int64_t>(1, std::min(block, p.m));
  kdef::visit<T>(p.kernel, [&](auto kf) {
    if (p.d == 2)
      run<2>(kf, p, out, threads, progress, block);
    else if (p.d == 3)
      run<3>(kf, p, out, threads, progress, block);
    else if (p.d == 1)
      run<1>(kf, p, out, threads, progress, block);
    else
      run<0>(kf, p, out, threads, progress, block);
  });
}

template void cpu_direct<float>(const DirectProblem<float> &, float *, int, const Progress &,
                                std::int64_t);
template void cpu_direct<double>(const DirectProblem<double> &, double *, int, const Progress &,
                                 std::int64_t);

} // namespace ksum::detail
