#pragma once
// The handful of dense operations the Sherman–Morrison algorithms are written in (seed 004 Paper
// III §3: "almost exclusively GEMM and the inverse of small blocks"), on the CPU through
// OpenBLAS (cblas) and LAPACKE. A GPU backend provides the same members over device memory
// (cuBLAS gemm/gemv, cuSOLVER getrf/getrs), so the algorithms in sm.hpp stay as they are.
// All matrices are column-major; the members count the floating-point operations they perform.
#include <ksum/error.hpp>

#include <cblas.h>
#include <lapacke.h>

#include <climits>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <fmt/format.h>
#include <string>
#include <vector>

namespace ksum::bsm {

inline int blas_int(std::int64_t v) {
  if (v < 0 || v > INT_MAX)
    throw Error(ErrorCode::unsupported,
                fmt::format("dimension {} exceeds the 32-bit BLAS/LAPACK index range", v));
  return static_cast<int>(v);
}

// The result of factoring a small block: its inverse in place, the smallest |pivot| of its LU
// and whether LAPACK found an exactly zero pivot (then `inverse` is not valid).
struct BlockFactor {
  double min_pivot = 0;
  bool singular = false;
};

template <std::floating_point T> struct CpuOps {
  double flops = 0;

  // C = alpha op(A) op(B) + beta C, op(A) m × k, op(B) k × n.
  void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T *A,
            std::int64_t lda, const T *B, std::int64_t ldb, T beta, T *C, std::int64_t ldc) {
    if (m == 0 || n == 0)
      return;
    flops += 2.0 * double(m) * double(n) * double(k);
    const auto opa = ta ? CblasTrans : CblasNoTrans, opb = tb ? CblasTrans : CblasNoTrans;
    if constexpr (std::same_as<T, double>)
      cblas_dgemm(CblasColMajor, opa, opb, blas_int(m), blas_int(n), blas_int(k), alpha, A,
                  blas_int(lda), B, blas_int(ldb), beta, C, blas_int(ldc));
    else
      cblas_sgemm(CblasColMajor, opa, opb, blas_int(m), blas_int(n), blas_int(k), alpha, A,
                  blas_int(lda), B, blas_int(ldb), beta, C, blas_int(ldc));
  }

  // y = alpha op(A) x + beta y, A m × n.
  void gemv(bool ta, std::int64_t m, std::int64_t n, T alpha, const T *A, std::int64_t lda,
            const T *x, T beta, T *y) {
    if (m == 0 || n == 0)
      return;
    flops += 2.0 * double(m) * double(n);
    const auto op = ta ? CblasTrans : CblasNoTrans;
    if constexpr (std::same_as<T, double>)
      cblas_dgemv(CblasColMajor, op, blas_int(m), blas_int(n), alpha, A, blas_int(lda), x, 1, beta,
                  y, 1);
    else
      cblas_sgemv(CblasColMajor, op, blas_int(m), blas_int(n), alpha, A, blas_int(lda), x, 1, beta,
                  y, 1);
  }

  T dot(std::int64_t n, const T *x, const T *y) {
    flops += 2.0 * double(n);
    if constexpr (std::same_as<T, double>)
      return cblas_ddot(blas_int(n), x, 1, y, 1);
    else
      return cblas_sdot(blas_int(n), x, 1, y, 1);
  }

  // ‖A‖_F of an m × n block.
  double frobenius(std::int64_t m, std::int64_t n, const T *A, std::int64_t lda) {
    flops += 2.0 * double(m) * double(n);
    double s = 0;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i)
        s += double(A[j * lda + i]) * double(A[j * lda + i]);
    return std::sqrt(s);
  }

  // Replaces the s × s block R by R⁻¹ (getrf + getri: the paper's "direct method" for R0⁻¹,
  // Paper III §2.2).
  BlockFactor invert_block(std::int64_t s, T *R, std::int64_t ldr) {
    std::vector<lapack_int> ipiv(static_cast<std::size_t>(s));
    flops += 2.0 * double(s) * double(s) * double(s); // getrf 2/3 s³ + getri 4/3 s³
    lapack_int info;
    if constexpr (std::same_as<T, double>)
      info =
          LAPACKE_dgetrf(LAPACK_COL_MAJOR, blas_int(s), blas_int(s), R, blas_int(ldr), ipiv.data());
    else
      info =
          LAPACKE_sgetrf(LAPACK_COL_MAJOR, blas_int(s), blas_int(s), R, blas_int(ldr), ipiv.data());
    if (info < 0)
      throw Error(ErrorCode::internal, fmt::format("LAPACK getrf: argument {} invalid", -info));
    BlockFactor f;
    f.min_pivot = INFINITY;
    for (std::int64_t i = 0; i < s; ++i)
      f.min_pivot = std::min(f.min_pivot, std::abs(double(R[i * ldr + i])));
    if (info > 0) {
      f.singular = true;
      f.min_pivot = 0;
      return f;
    }
    if constexpr (std::same_as<T, double>)
      info = LAPACKE_dgetri(LAPACK_COL_MAJOR, blas_int(s), R, blas_int(ldr), ipiv.data());
    else
      info = LAPACKE_sgetri(LAPACK_COL_MAJOR, blas_int(s), R, blas_int(ldr), ipiv.data());
    if (info != 0)
      throw Error(ErrorCode::internal, fmt::format("LAPACK getri: info {}", info));
    return f;
  }
};

// LU of an n × n matrix in place with its reciprocal 1-norm condition estimate (getrf + gecon).
template <std::floating_point T> struct LuFactor {
  std::vector<lapack_int> ipiv;
  lapack_int zero_pivot = 0; // 1-based row of an exactly zero pivot, 0: none
  double rcond = 0;
};

template <std::floating_point T> LuFactor<T> lu_factor(std::int64_t n, T *A, std::int64_t lda) {
  LuFactor<T> f;
  f.ipiv.resize(static_cast<std::size_t>(n));
  lapack_int info;
  if constexpr (std::same_as<T, double>) {
    const double anorm =
        LAPACKE_dlange(LAPACK_COL_MAJOR, '1', blas_int(n), blas_int(n), A, blas_int(lda));
    info =
        LAPACKE_dgetrf(LAPACK_COL_MAJOR, blas_int(n), blas_int(n), A, blas_int(lda), f.ipiv.data());
    if (info == 0) {
      double rc = 0;
      LAPACKE_dgecon(LAPACK_COL_MAJOR, '1', blas_int(n), A, blas_int(lda), anorm, &rc);
      f.rcond = rc;
    }
  } else {
    const float anorm =
        LAPACKE_slange(LAPACK_COL_MAJOR, '1', blas_int(n), blas_int(n), A, blas_int(lda));
    info =
        LAPACKE_sgetrf(LAPACK_COL_MAJOR, blas_int(n), blas_int(n), A, blas_int(lda), f.ipiv.data());
    if (info == 0) {
      float rc = 0;
      LAPACKE_sgecon(LAPACK_COL_MAJOR, '1', blas_int(n), A, blas_int(lda), anorm, &rc);
      f.rcond = rc;
    }
  }
  if (info < 0)
    throw Error(ErrorCode::internal, fmt::format("LAPACK getrf: argument {} invalid", -info));
  f.zero_pivot = info;
  return f;
}

// A⁻¹ in place from its LU (getri).
template <std::floating_point T>
void lu_inverse(std::int64_t n, T *A, std::int64_t lda, const LuFactor<T> &f) {
  lapack_int info;
  if constexpr (std::same_as<T, double>)
    info = LAPACKE_dgetri(LAPACK_COL_MAJOR, blas_int(n), A, blas_int(lda), f.ipiv.data());
  else
    info = LAPACKE_sgetri(LAPACK_COL_MAJOR, blas_int(n), A, blas_int(lda), f.ipiv.data());
  if (info != 0)
    throw Error(ErrorCode::internal, fmt::format("LAPACK getri: info {}", info));
}

// B ← A⁻¹ B from A's LU (getrs), B n × nrhs.
template <std::floating_point T>
void lu_solve(std::int64_t n, std::int64_t nrhs, const T *A, std::int64_t lda, const LuFactor<T> &f,
              T *B, std::int64_t ldb) {
  lapack_int info;
  if constexpr (std::same_as<T, double>)
    info = LAPACKE_dgetrs(LAPACK_COL_MAJOR, 'N', blas_int(n), blas_int(nrhs), A, blas_int(lda),
                          f.ipiv.data(), B, blas_int(ldb));
  else
    info = LAPACKE_sgetrs(LAPACK_COL_MAJOR, 'N', blas_int(n), blas_int(nrhs), A, blas_int(lda),
                          f.ipiv.data(), B, blas_int(ldb));
  if (info != 0)
    throw Error(ErrorCode::internal, fmt::format("LAPACK getrs: info {}", info));
}

// Sets the OpenBLAS thread count for one call and restores it (weak: another BLAS has no such
// functions and keeps its own setting).
class BlasThreads {
public:
  explicit BlasThreads(int threads);
  ~BlasThreads();
  BlasThreads(const BlasThreads &) = delete;
  BlasThreads &operator=(const BlasThreads &) = delete;

private:
  int saved_ = 0;
};

} // namespace ksum::bsm
