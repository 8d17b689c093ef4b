// The public entry points of bsm.hpp: input checks, the standard splitting A = diag(A) + (A −
// diag(A)) I, the choice of variant and block size, breakdown → error or LU fallback.
#include "linalg/bsm/bsm_common.hpp"
#include "linalg/bsm/bsm_gpu.hpp"

#include <ksum/bsm.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

extern "C" {
// OpenBLAS's thread control (declared weak: absent from other BLAS libraries).
void openblas_set_num_threads(int) __attribute__((weak));
int openblas_get_num_threads(void) __attribute__((weak));
}

namespace ksum {

BsmMethod parse_bsm_method(std::string_view name) {
  if (name == "svsm")
    return BsmMethod::svsm;
  if (name == "bsm")
    return BsmMethod::bsm;
  if (name == "rmbsm")
    return BsmMethod::rmbsm;
  if (name == "lu")
    return BsmMethod::lu;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown method '{}' (svsm, bsm, rmbsm or lu)", name));
}

std::string_view to_string(BsmMethod m) {
  switch (m) {
  case BsmMethod::svsm:
    return "svsm";
  case BsmMethod::bsm:
    return "bsm";
  case BsmMethod::rmbsm:
    return "rmbsm";
  case BsmMethod::lu:
    return "lu";
  }
  return "?";
}

BsmFallback parse_bsm_fallback(std::string_view name) {
  if (name == "error")
    return BsmFallback::error;
  if (name == "lu")
    return BsmFallback::lu;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown fallback '{}' (error or lu)", name));
}

std::string_view to_string(BsmFallback f) {
  return f == BsmFallback::error ? "error" : "lu";
}

BsmA0 parse_bsm_a0(std::string_view name) {
  if (name == "diagonal")
    return BsmA0::diagonal;
  if (name == "identity")
    return BsmA0::identity;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown A0 '{}' (diagonal or identity)", name));
}

std::string_view to_string(BsmA0 a) {
  return a == BsmA0::diagonal ? "diagonal" : "identity";
}

namespace bsm {

BlasThreads::BlasThreads(int threads) {
  if (threads > 0 && openblas_set_num_threads && openblas_get_num_threads) {
    saved_ = openblas_get_num_threads();
    openblas_set_num_threads(threads);
  }
}

BlasThreads::~BlasThreads() {
  if (saved_ > 0)
    openblas_set_num_threads(saved_);
}

void check_options(const BsmOptions &o) {
  if (o.block < 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("block size {} is negative (0: automatic)", o.block));
  if (o.threads < 0)
    throw Error(ErrorCode::invalid_argument, fmt::format("threads {} is negative", o.threads));
  if (!std::isfinite(o.pivot_threshold))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("pivot threshold {} is not finite", o.pivot_threshold));
}

template <std::floating_point T>
void check_finite(const T *A, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                  std::string_view what) {
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i)
      if (!std::isfinite(A[j * ld + i]))
        throw Error(ErrorCode::non_finite,
                    fmt::format("{} has a non-finite entry at row {}, column {} (0-based): {}",
                                what, i, j, double(A[j * ld + i])));
}

template <std::floating_point T> void check_matrix(const T *A, std::int64_t n, std::int64_t lda) {
  if (n <= 0)
    throw Error(ErrorCode::invalid_argument, fmt::format("matrix size n = {} must be ≥ 1", n));
  if (lda < n)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("leading dimension {} is smaller than n = {}", lda, n));
  if (A == nullptr)
    throw Error(ErrorCode::invalid_argument, "the matrix A is a null pointer");
  check_finite(A, n, n, lda, "the matrix A");
}

template <std::floating_point T> double resolve_threshold(double t) {
  return t == 0 ? 100.0 * double(std::numeric_limits<T>::epsilon()) / 2 : t;
}

std::int64_t resolve_block(std::int64_t block, std::int64_t m) {
  if (block > 0)
    return std::min(block, m);
  // Paper III §4.1: s = m is fastest for m ≤ n/2; for wide updates 0.02 m … 0.2 m.
  if (m <= 256)
    return m;
  return std::clamp<std::int64_t>(m / 20, 64, 256);
}

// The standard case's default block (bsm.hpp), from bsm_bench's sweeps s = 32 … 512 at n = 1024,
// 2048, 4096 in fp64 and fp32 on 2 cores (AMD EPYC, OpenBLAS Haswell kernels): BSM and RMBSM are
// within about 5–10 % of their best for s = 96 … 384 (best 96–192 at n = 1024, 256 at 2048,
// 192–384 at 4096); s ≤ 64 thins the gemm panels (up to +30 %), s ≥ 512 adds to the O(n² s) terms.
std::int64_t resolve_standard_block(std::int64_t block, std::int64_t n) {
  if (block > 0)
    return std::min(block, n);
  return std::min(n, std::clamp<std::int64_t>(n / 8, 128, 256));
}

void on_breakdown(const BsmOptions &o, const Breakdown &b, double threshold, BsmStats &st) {
  if (o.fallback == BsmFallback::error)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{} broke down at step {} (columns {}…{} of X and Y, 0-based): pivot "
                            "measure of R_{} = I + Y_kᵀ A_(k-1)⁻¹ X_k is {:.3g} ≤ threshold "
                            "{:.3g}; reorder the columns of X and Y, or use fallback lu",
                            to_string(o.method), b.step, b.col, b.col + b.cols - 1, b.step, b.rho,
                            threshold));
  st.fallback = true;
  st.fallback_step = b.step;
  st.method = BsmMethod::lu;
}

template <std::floating_point T>
[[noreturn]] void throw_singular(std::string_view what, const LuFactor<T> &f) {
  if (f.zero_pivot > 0)
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("{} is singular: LU pivot {} (1-based) is exactly zero", what, f.zero_pivot));
  throw Error(ErrorCode::invalid_argument,
              fmt::format("{} is singular to working precision: reciprocal condition estimate "
                          "{:.3g}",
                          what, f.rcond));
}

template <std::floating_point T>
void standard_diagonal(const T *A, std::int64_t n, std::int64_t lda, const BsmOptions &o,
                       std::vector<T> &a0, std::vector<T> &d) {
  a0.assign(static_cast<std::size_t>(n), T(1));
  if (o.a0 == BsmA0::diagonal)
    for (std::int64_t i = 0; i < n; ++i) {
      if (A[i * lda + i] == T(0))
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("A0 = diag(A) is singular: A({0}, {0}) = 0 (0-based); use a0 = "
                                "identity or method lu",
                                i));
      a0[static_cast<std::size_t>(i)] = A[i * lda + i];
    }
  d.resize(a0.size());
  for (std::size_t i = 0; i < d.size(); ++i)
    d[i] = T(1) / a0[i];
}

template <std::floating_point T> bool lu_singular(const LuFactor<T> &f) {
  return f.zero_pivot > 0 || !(f.rcond >= double(std::numeric_limits<T>::epsilon()));
}

template <std::floating_point T>
Table<T> lu_inverse_of(CpuOps<T> &ops, const T *A, std::int64_t n, std::int64_t lda,
                       double *rcond) {
  Table<T> inv(n, n, Uninitialized{});
  for (std::int64_t j = 0; j < n; ++j)
    std::memcpy(inv.data() + j * n, A + j * lda, sizeof(T) * static_cast<std::size_t>(n));
  const LuFactor<T> f = lu_factor(n, inv.data(), n);
  ops.flops += 2.0 * double(n) * double(n) * double(n); // getrf 2/3 n³ + getri 4/3 n³
  if (lu_singular(f))
    throw_singular("the matrix A", f);
  lu_inverse(n, inv.data(), n, f);
  *rcond = f.rcond;
  return inv;
}

template <std::floating_point T>
Table<T> woodbury_lu(CpuOps<T> &ops, const A0Inverse<T> &a0, const T *X, const T *Y, std::int64_t m,
                     double *rcond) {
  const std::int64_t n = a0.n;
  // W = A0⁻¹ X, C = I + Yᵀ W (the capacitance matrix of eq. (2)), B = Yᵀ A0⁻¹ = (A0⁻ᵀ Y)ᵀ.
  std::vector<T> W(static_cast<std::size_t>(n * m)), Bt(static_cast<std::size_t>(n * m)),
      B(static_cast<std::size_t>(m * n)), C(static_cast<std::size_t>(m * m), T(0));
  a0.apply(ops, false, X, n, W.data(), n, m);
  for (std::int64_t i = 0; i < m; ++i)
    C[static_cast<std::size_t>(i * m + i)] = T(1);
  ops.gemm(true, false, m, m, n, T(1), Y, n, W.data(), n, T(1), C.data(), m);
  const LuFactor<T> f = lu_factor(m, C.data(), m);
  ops.flops += 2.0 / 3.0 * double(m) * double(m) * double(m);
  if (lu_singular(f))
    throw_singular("the capacitance matrix I + Yᵀ A0⁻¹ X (so A0 + X Yᵀ)", f);
  a0.apply(ops, true, Y, n, Bt.data(), n, m);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i)
      B[static_cast<std::size_t>(j * m + i)] = Bt[static_cast<std::size_t>(i * n + j)];
  lu_solve(m, n, C.data(), m, f, B.data(), m);
  ops.flops += 2.0 * double(m) * double(m) * double(n);
  Table<T> out = a0.materialize();
  ops.gemm(false, false, n, n, m, T(-1), W.data(), n, B.data(), m, T(1), out.data(), n);
  *rcond = f.rcond;
  return out;
}

// The variants on A0 + X Yᵀ (m columns) in general: sm.cpp.
template <std::floating_point T> struct GeneralVariants {
  const A0Inverse<T> &a0;
  const T *X, *Y;
  std::int64_t m;
  SmResult<T> operator()(CpuOps<T> &ops, BsmMethod method, std::int64_t s, double threshold) const {
    if (method == BsmMethod::svsm)
      return svsm(ops, a0, X, Y, m, threshold);
    if (method == BsmMethod::bsm)
      return block_sm(ops, a0, X, Y, m, s, threshold);
    return reduced_memory_sm(ops, a0, X, Y, m, s, threshold);
  }
};

// The variants in the standard case (A0 diagonal, Y = I): standard.cpp.
template <std::floating_point T> struct StandardVariants {
  const StandardSplit<T> &sp;
  SmResult<T> operator()(CpuOps<T> &ops, BsmMethod method, std::int64_t s, double threshold) const {
    if (method == BsmMethod::svsm)
      return svsm_standard(ops, sp, threshold);
    if (method == BsmMethod::bsm)
      return block_sm_standard(ops, sp, s, threshold);
    return reduced_memory_sm_standard(ops, sp, s, threshold);
  }
};

// Runs the requested variant with block size `block`; on breakdown throws or calls `fallback`.
template <std::floating_point T, class Variants, class Fallback>
Table<T> run_sm(std::int64_t block, const BsmOptions &o, BsmStats &st, Variants &&variants,
                Fallback &&fallback) {
  CpuOps<T> ops;
  const double threshold = resolve_threshold<T>(o.pivot_threshold);
  SmResult<T> r;
  st.requested = o.method;
  st.method = o.method;
  if (o.method == BsmMethod::lu) {
    st.block = 0;
    Table<T> out = fallback(ops, &st.min_pivot);
    st.flops = ops.flops;
    return out;
  }
  st.block = o.method == BsmMethod::svsm ? 1 : block;
  r = variants(ops, o.method, st.block, threshold);
  st.min_pivot = r.min_pivot;
  if (!r.broke_down) {
    st.flops = ops.flops;
    return std::move(r.inverse);
  }
  on_breakdown(o, r.breakdown, threshold, st);
  double rcond = 0;
  Table<T> out = fallback(ops, &rcond);
  st.flops = ops.flops;
  return out;
}

} // namespace bsm

using namespace bsm;

template <std::floating_point T>
Table<T> inverse(const T *A, std::int64_t n, std::int64_t lda, const BsmOptions &options,
                 BsmStats *stats) {
  const auto t0 = std::chrono::steady_clock::now();
  check_options(options);
  check_matrix(A, n, lda);
  if (options.backend == Backend::cuda) // bsm_gpu.cpp: the same variants on the device
    return gpu_inverse(A, n, lda, resolve_standard_block(options.block, n), options, t0, stats);
  BlasThreads threads(options.threads);
  BsmStats st;
  // The standard splitting (Paper III §1): X = A − A0, Y = I, neither formed (standard.cpp).
  std::vector<T> a0, d;
  if (options.method != BsmMethod::lu)
    standard_diagonal(A, n, lda, options, a0, d);
  const StandardSplit<T> sp{A, n, lda, a0.data(), d.data()};
  Table<T> out =
      run_sm<T>(resolve_standard_block(options.block, n), options, st, StandardVariants<T>{sp},
                [&](CpuOps<T> &ops, double *rc) { return lu_inverse_of(ops, A, n, lda, rc); });
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (stats)
    *stats = st;
  return out;
}

template <std::floating_point T>
Table<T> inverse(const Table<T> &A, const BsmOptions &options, BsmStats *stats) {
  if (A.rows() != A.cols())
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("A is {} × {}: a square matrix is needed", A.rows(), A.cols()));
  return inverse(A.data(), A.rows(), A.rows(), options, stats);
}

namespace {

template <std::floating_point T>
void check_factors(std::int64_t n, const Table<T> &X, const Table<T> &Y) {
  if (n <= 0)
    throw Error(ErrorCode::invalid_argument, fmt::format("matrix size n = {} must be ≥ 1", n));
  if (X.rows() != n || Y.rows() != n || X.cols() != Y.cols())
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("X is {} × {} and Y is {} × {}: both must be n × m with n = {}",
                            X.rows(), X.cols(), Y.rows(), Y.cols(), n));
  if (X.cols() < 1)
    throw Error(ErrorCode::empty_input, "X and Y have no columns (m = 0)");
  check_finite(X.data(), X.rows(), X.cols(), X.rows(), "X");
  check_finite(Y.data(), Y.rows(), Y.cols(), Y.rows(), "Y");
}

template <std::floating_point T>
Table<T> general(const A0Inverse<T> &a0, const Table<T> &X, const Table<T> &Y,
                 const BsmOptions &options, BsmStats *stats) {
  const auto t0 = std::chrono::steady_clock::now();
  if (options.backend == Backend::cuda)
    return gpu_inverse_update(a0, X.data(), Y.data(), X.cols(),
                              resolve_block(options.block, X.cols()), options, t0, stats);
  BlasThreads threads(options.threads);
  BsmStats st;
  const std::int64_t m = X.cols();
  Table<T> out = run_sm<T>(
      resolve_block(options.block, m), options, st, GeneralVariants<T>{a0, X.data(), Y.data(), m},
      [&](CpuOps<T> &ops, double *rc) { return woodbury_lu(ops, a0, X.data(), Y.data(), m, rc); });
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (stats)
    *stats = st;
  return out;
}

} // namespace

template <std::floating_point T>
Table<T> inverse_update(const Table<T> &a0_inverse, const Table<T> &X, const Table<T> &Y,
                        const BsmOptions &options, BsmStats *stats) {
  check_options(options);
  if (a0_inverse.rows() != a0_inverse.cols())
    throw Error(ErrorCode::shape_mismatch, fmt::format("A0⁻¹ is {} × {}: a square matrix is needed",
                                                       a0_inverse.rows(), a0_inverse.cols()));
  check_factors(a0_inverse.rows(), X, Y);
  check_finite(a0_inverse.data(), a0_inverse.rows(), a0_inverse.cols(), a0_inverse.rows(), "A0⁻¹");
  A0Inverse<T> a0;
  a0.kind = A0Inverse<T>::Kind::dense;
  a0.n = a0_inverse.rows();
  a0.dense = a0_inverse.data();
  a0.ld = a0.n;
  return general(a0, X, Y, options, stats);
}

template <std::floating_point T>
Table<T> inverse_update(const ApplyInverse<T> &a0_inverse, std::int64_t n, const Table<T> &X,
                        const Table<T> &Y, const BsmOptions &options, BsmStats *stats) {
  check_options(options);
  if (!a0_inverse)
    throw Error(ErrorCode::invalid_argument, "the A0⁻¹ operator is empty");
  check_factors(n, X, Y);
  A0Inverse<T> a0;
  a0.kind = A0Inverse<T>::Kind::op;
  a0.n = n;
  a0.fn = &a0_inverse;
  return general(a0, X, Y, options, stats);
}

#define KSUM_BSM_INSTANTIATE(T)                                                                    \
  template Table<T> inverse(const T *, std::int64_t, std::int64_t, const BsmOptions &,             \
                            BsmStats *);                                                           \
  template Table<T> inverse(const Table<T> &, const BsmOptions &, BsmStats *);                     \
  template Table<T> inverse_update(const Table<T> &, const Table<T> &, const Table<T> &,           \
                                   const BsmOptions &, BsmStats *);                                \
  template Table<T> inverse_update(const ApplyInverse<T> &, std::int64_t, const Table<T> &,        \
                                   const Table<T> &, const BsmOptions &, BsmStats *);              \
  template void bsm::check_finite(const T *, std::int64_t, std::int64_t, std::int64_t,             \
                                  std::string_view);                                               \
  template void bsm::check_matrix(const T *, std::int64_t, std::int64_t);                          \
  template double bsm::resolve_threshold<T>(double);                                               \
  template bool bsm::lu_singular(const LuFactor<T> &);                                             \
  template void bsm::throw_singular(std::string_view, const LuFactor<T> &);                        \
  template void bsm::standard_diagonal(const T *, std::int64_t, std::int64_t, const BsmOptions &,  \
                                       std::vector<T> &, std::vector<T> &);
KSUM_BSM_INSTANTIATE(float)
KSUM_BSM_INSTANTIATE(double)
#undef KSUM_BSM_INSTANTIATE

} // namespace ksum
