#pragma once
// The handful of dense operations the Sherman–Morrison algorithms are written in (seed 004 Paper
// III §3: "almost exclusively GEMM and the inverse of small blocks"), on the CPU through
// OpenBLAS (cblas) and LAPACKE. A GPU backend provides the same members over device memory
// (cuBLAS gemm/gemv, cuSOLVER getrf/getrs), so the one code of the algorithms (sm_impl.hpp) serves
// both. All matrices are column-major; the members count the floating-point operations they
// perform.
#include <ksum/error.hpp>
#include <ksum/table.hpp>

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
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
  using Value = T;
  using Buffer = Table<T>; // work buffers and results of the algorithms (sm_impl.hpp)
  double flops = 0;

  // A rows × cols work buffer, leading dimension rows, zero-filled unless `zeroed` is false.
  Buffer alloc(std::int64_t rows, std::int64_t cols, bool zeroed = true) {
    return zeroed ? Table<T>(rows, cols) : Table<T>(rows, cols, Uninitialized{});
  }

  // *dst = v (one entry of a buffer).
  void store(T *dst, T v) { *dst = v; }

  // A (s × s) = I.
  void set_identity(std::int64_t s, T *A, std::int64_t lda) {
    for (std::int64_t j = 0; j < s; ++j)
      for (std::int64_t i = 0; i < s; ++i)
        A[j * lda + i] = i == j ? T(1) : T(0);
  }

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

  // B = alpha op(A) B (left) or B = alpha B op(A) (right), A triangular (upper or lower, unit
  // diagonal or not), B m × n, in place (cuBLAS trmm: B passed as its output too).
  void trmm(bool left, bool upper, bool ta, bool unit, std::int64_t m, std::int64_t n, T alpha,
            const T *A, std::int64_t lda, T *B, std::int64_t ldb) {
    if (m == 0 || n == 0)
      return;
    const double k = left ? double(m) : double(n), other = left ? double(n) : double(m);
    flops += (unit ? k * (k - 1) : k * k) * other;
    const auto side = left ? CblasLeft : CblasRight;
    const auto uplo = upper ? CblasUpper : CblasLower;
    const auto op = ta ? CblasTrans : CblasNoTrans;
    const auto diag = unit ? CblasUnit : CblasNonUnit;
    if constexpr (std::same_as<T, double>)
      cblas_dtrmm(CblasColMajor, side, uplo, op, diag, blas_int(m), blas_int(n), alpha, A,
                  blas_int(lda), B, blas_int(ldb));
    else
      cblas_strmm(CblasColMajor, side, uplo, op, diag, blas_int(m), blas_int(n), alpha, A,
                  blas_int(lda), B, blas_int(ldb));
  }

  // out = in, both m × n.
  void copy(std::int64_t m, std::int64_t n, const T *in, std::int64_t ld_in, T *out,
            std::int64_t ld_out) {
    for (std::int64_t j = 0; j < n; ++j)
      std::copy(in + j * ld_in, in + j * ld_in + m, out + j * ld_out);
  }

  // A ← alpha A, m × n.
  void scale(std::int64_t m, std::int64_t n, T alpha, T *A, std::int64_t lda) {
    flops += double(m) * double(n);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i)
        A[j * lda + i] *= alpha;
  }

  // out(i, j) = d[i] in(i, j), m × n: a diagonal A0⁻¹ = diag(d) applied as a row scaling.
  void scale_rows(std::int64_t m, std::int64_t n, const T *d, const T *in, std::int64_t ld_in,
                  T *out, std::int64_t ld_out) {
    flops += double(m) * double(n);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i)
        out[j * ld_out + i] = d[i] * in[j * ld_in + i];
  }

  // out(i, j) = in(i, j) d[j], m × n: a column scaling.
  void scale_cols(std::int64_t m, std::int64_t n, const T *d, const T *in, std::int64_t ld_in,
                  T *out, std::int64_t ld_out) {
    flops += double(m) * double(n);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i)
        out[j * ld_out + i] = in[j * ld_in + i] * d[j];
  }

  // out = inᵀ, in m × n, out n × m.
  void transpose(std::int64_t m, std::int64_t n, const T *in, std::int64_t ld_in, T *out,
                 std::int64_t ld_out) {
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i)
        out[i * ld_out + j] = in[j * ld_in + i];
  }

  // A ← A − Bᵀ, both n × n.
  void subtract_transposed(std::int64_t n, const T *B, std::int64_t ldb, T *A, std::int64_t lda) {
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i)
        A[j * lda + i] -= B[i * ldb + j];
  }

  // out(i, j) = d[j] in(j, i), out m × n from the n × m block `in`: Zᵀ A0⁻¹ E with E a block of
  // identity columns (Y = I) is a selection of rows of Z, transposed and scaled.
  void transpose_scaled(std::int64_t m, std::int64_t n, const T *d, const T *in, std::int64_t ld_in,
                        T *out, std::int64_t ld_out) {
    flops += double(m) * double(n);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i)
        out[j * ld_out + i] = d[j] * in[i * ld_in + j];
  }

  // A(j, j) += alpha for j < s (R = I + …).
  void shift_diagonal(std::int64_t s, T alpha, T *A, std::int64_t lda) {
    flops += double(s);
    for (std::int64_t j = 0; j < s; ++j)
      A[j * lda + j] += alpha;
  }

  // A(j, j) −= v[j] for j < s (X = A − A0 on the diagonal of a block of A's columns).
  void subtract_diagonal(std::int64_t s, const T *v, T *A, std::int64_t lda) {
    flops += double(s);
    for (std::int64_t j = 0; j < s; ++j)
      A[j * lda + j] -= v[j];
  }

  // A ← diag(d) − diag(d) A diag(d), n × n: the last step A⁻¹ = A0⁻¹ − A0⁻¹ G A0⁻¹ for a diagonal
  // A0⁻¹ = diag(d).
  void diagonal_minus_scaled(std::int64_t n, const T *d, T *A, std::int64_t lda) {
    flops += 3.0 * double(n) * double(n);
    for (std::int64_t j = 0; j < n; ++j) {
      T *a = A + j * lda;
      for (std::int64_t i = 0; i < n; ++i)
        a[i] = -(d[i] * a[i]) * d[j];
      a[j] += d[j];
    }
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

// ‖A‖₁ (the largest column sum of |a_ij|) of an n × n matrix, by LAPACK's lange.
template <std::floating_point T> double norm_1(std::int64_t n, const T *A, std::int64_t lda) {
  if constexpr (std::same_as<T, double>)
    return LAPACKE_dlange(LAPACK_COL_MAJOR, '1', blas_int(n), blas_int(n), A, blas_int(lda));
  else
    return LAPACKE_slange(LAPACK_COL_MAJOR, '1', blas_int(n), blas_int(n), A, blas_int(lda));
}

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
