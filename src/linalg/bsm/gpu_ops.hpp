#pragma once
// The dense operations of cpu_ops.hpp over device memory (cuBLAS, cuSOLVER), plus the few copies
// and diagonal operations the CPU code does with loops. Seed 004 Paper III §4.3 moved only the
// GEMM calls to the GPU and found the host–device copies taking up to half the time; here every
// matrix stays on the device between the upload of the input and the download of the inverse.
// One stream; the cuBLAS and cuSOLVER handles live as long as the object (one inverse() call).
// Column-major throughout; alpha/beta and dot/nrm2 results are host scalars (pointer mode host).
#include "linalg/bsm/cpu_ops.hpp"
#include "runtime/cuda_array.hpp"

#include <ksum/error.hpp>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <fmt/format.h>
#include <memory>
#include <vector>

namespace ksum::bsm {

template <std::floating_point T> class GpuOps {
public:
  using Value = T;
  // A device work array owned by the algorithm that allocated it (sm_impl.hpp); movable.
  struct Buffer {
    std::unique_ptr<detail::DeviceArray<T>> array;
    T *data() const { return array ? array->ptr : nullptr; }
  };
  double flops = 0;

  GpuOps() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
      throw Error(ErrorCode::unsupported, "backend cuda: no CUDA GPU is visible");
    detail::cuda_check(cudaGetDevice(&dev_), 0, "cudaGetDevice");
    cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    blas(cublasCreate(&blas_), "cublasCreate");
    blas(cublasSetStream(blas_, stream_), "cublasSetStream");
    blas(cublasSetPointerMode(blas_, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
    solver(cusolverDnCreate(&solver_), "cusolverDnCreate");
    solver(cusolverDnSetStream(solver_, stream_), "cusolverDnSetStream");
    solver(cusolverDnCreateParams(&params_), "cusolverDnCreateParams");
    info_.reserve(2, dev_);
    cuda(cudaMemsetAsync(info_.ptr, 0, 2 * sizeof(int), stream_), "cudaMemsetAsync (info)");
  }
  ~GpuOps() {
    if (stream_)
      cudaStreamSynchronize(stream_);
    if (params_)
      cusolverDnDestroyParams(params_);
    if (solver_)
      cusolverDnDestroy(solver_);
    if (blas_)
      cublasDestroy(blas_);
    if (stream_)
      cudaStreamDestroy(stream_);
  }
  GpuOps(const GpuOps &) = delete;
  GpuOps &operator=(const GpuOps &) = delete;

  int device() const { return dev_; }

  // A rows × cols device buffer, leading dimension rows, zero-filled unless `zeroed` is false.
  Buffer alloc(std::int64_t rows, std::int64_t cols, bool zeroed = true) {
    Buffer b{std::make_unique<detail::DeviceArray<T>>()};
    b.array->reserve(rows * cols, dev_);
    if (zeroed)
      zero(rows, cols, b.data(), rows);
    return b;
  }

  // *dst = v, dst in device memory (waits for the stream).
  void store(T *dst, T v) { upload(1, 1, &v, 1, dst, 1); }

  // A (s × s) = I.
  void set_identity(std::int64_t s, T *A, std::int64_t lda) { set_diagonal(s, nullptr, A, lda); }

  // C = alpha op(A) op(B) + beta C, op(A) m × k, op(B) k × n.
  void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T *A,
            std::int64_t lda, const T *B, std::int64_t ldb, T beta, T *C, std::int64_t ldc) {
    if (m == 0 || n == 0)
      return;
    flops += 2.0 * double(m) * double(n) * double(k);
    if constexpr (std::same_as<T, double>)
      blas(cublasDgemm(blas_, op(ta), op(tb), blas_int(m), blas_int(n), blas_int(k), &alpha, A,
                       blas_int(lda), B, blas_int(ldb), &beta, C, blas_int(ldc)),
           "cublasDgemm");
    else
      blas(cublasSgemm(blas_, op(ta), op(tb), blas_int(m), blas_int(n), blas_int(k), &alpha, A,
                       blas_int(lda), B, blas_int(ldb), &beta, C, blas_int(ldc)),
           "cublasSgemm");
  }

  // y = alpha op(A) x + beta y, A m × n.
  void gemv(bool ta, std::int64_t m, std::int64_t n, T alpha, const T *A, std::int64_t lda,
            const T *x, T beta, T *y) {
    if (m == 0 || n == 0)
      return;
    flops += 2.0 * double(m) * double(n);
    if constexpr (std::same_as<T, double>)
      blas(cublasDgemv(blas_, op(ta), blas_int(m), blas_int(n), &alpha, A, blas_int(lda), x, 1,
                       &beta, y, 1),
           "cublasDgemv");
    else
      blas(cublasSgemv(blas_, op(ta), blas_int(m), blas_int(n), &alpha, A, blas_int(lda), x, 1,
                       &beta, y, 1),
           "cublasSgemv");
  }

  // B = alpha op(A) B (left) or B = alpha B op(A) (right), A triangular, B m × n, in place: cuBLAS
  // trmm writes C = alpha op(A) B, and C = B (ldc = ldb) is its documented in-place use.
  void trmm(bool left, bool upper, bool ta, bool unit, std::int64_t m, std::int64_t n, T alpha,
            const T *A, std::int64_t lda, T *B, std::int64_t ldb) {
    if (m == 0 || n == 0)
      return;
    const double k = left ? double(m) : double(n), other = left ? double(n) : double(m);
    flops += (unit ? k * (k - 1) : k * k) * other;
    const auto side = left ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
    const auto uplo = upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
    const auto diag = unit ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT;
    if constexpr (std::same_as<T, double>)
      blas(cublasDtrmm(blas_, side, uplo, op(ta), diag, blas_int(m), blas_int(n), &alpha, A,
                       blas_int(lda), B, blas_int(ldb), B, blas_int(ldb)),
           "cublasDtrmm");
    else
      blas(cublasStrmm(blas_, side, uplo, op(ta), diag, blas_int(m), blas_int(n), &alpha, A,
                       blas_int(lda), B, blas_int(ldb), B, blas_int(ldb)),
           "cublasStrmm");
  }

  // A ← alpha A, m × n (one scal per column, or one for a contiguous block).
  void scale(std::int64_t m, std::int64_t n, T alpha, T *A, std::int64_t lda) {
    flops += double(m) * double(n);
    if (m == 0 || n == 0)
      return;
    if (lda == m || n == 1) {
      scal(m * n, alpha, A);
      return;
    }
    for (std::int64_t j = 0; j < n; ++j)
      scal(m, alpha, A + j * lda);
  }

  // out(i, j) = d[i] in(i, j), m × n (dgmm, left); out does not overlap in.
  void scale_rows(std::int64_t m, std::int64_t n, const T *d, const T *in, std::int64_t ld_in,
                  T *out, std::int64_t ld_out) {
    flops += double(m) * double(n);
    dgmm(true, m, n, in, ld_in, d, out, ld_out);
  }

  // out(i, j) = in(i, j) d[j], m × n (dgmm, right); out does not overlap in.
  void scale_cols(std::int64_t m, std::int64_t n, const T *d, const T *in, std::int64_t ld_in,
                  T *out, std::int64_t ld_out) {
    flops += double(m) * double(n);
    dgmm(false, m, n, in, ld_in, d, out, ld_out);
  }

  // out(i, j) = d[j] in(j, i), out m × n from the n × m block `in`: the rows of `in` scaled into
  // a work array (dgmm), then transposed into out (geam).
  void transpose_scaled(std::int64_t m, std::int64_t n, const T *d, const T *in, std::int64_t ld_in,
                        T *out, std::int64_t ld_out) {
    flops += double(m) * double(n);
    if (m == 0 || n == 0)
      return;
    grow(scratch_, m * n);
    dgmm(true, n, m, in, ld_in, d, scratch_.ptr, n);
    transpose(n, m, scratch_.ptr, n, out, ld_out);
  }

  // A(j, j) += alpha for j < s (axpy of ones onto the diagonal, stride lda + 1).
  void shift_diagonal(std::int64_t s, T alpha, T *A, std::int64_t lda) {
    flops += double(s);
    if (s > 0)
      axpy(s, alpha, ones(s), 1, A, lda + 1);
  }

  // A(j, j) −= v[j] for j < s.
  void subtract_diagonal(std::int64_t s, const T *v, T *A, std::int64_t lda) {
    flops += double(s);
    if (s > 0)
      axpy(s, T(-1), v, 1, A, lda + 1);
  }

  // A ← diag(d) − diag(d) A diag(d), n × n: column blocks through a work array (dgmm left, scal
  // by −1, dgmm right back into A), then d added onto the diagonal.
  void diagonal_minus_scaled(std::int64_t n, const T *d, T *A, std::int64_t lda) {
    flops += 3.0 * double(n) * double(n);
    if (n == 0)
      return;
    const std::int64_t cb = std::min<std::int64_t>(n, 256);
    grow(scratch_, n * cb);
    for (std::int64_t j0 = 0; j0 < n; j0 += cb) {
      const std::int64_t c = std::min(cb, n - j0);
      dgmm(true, n, c, A + j0 * lda, lda, d, scratch_.ptr, n);
      scal(n * c, T(-1), scratch_.ptr);
      dgmm(false, n, c, scratch_.ptr, n, d + j0, A + j0 * lda, lda);
    }
    axpy(n, T(1), d, 1, A, lda + 1);
  }

  // A ← A − Bᵀ, both n × n (geam in place: C = A, op(A) = A, ldc = lda).
  void subtract_transposed(std::int64_t n, const T *B, std::int64_t ldb, T *A, std::int64_t lda) {
    geam(false, true, n, n, T(1), A, lda, T(-1), B, ldb, A, lda);
  }

  // xᵀy, returned to the host (waits for the stream).
  T dot(std::int64_t n, const T *x, const T *y) {
    flops += 2.0 * double(n);
    T r = 0;
    if constexpr (std::same_as<T, double>)
      blas(cublasDdot(blas_, blas_int(n), x, 1, y, 1, &r), "cublasDdot");
    else
      blas(cublasSdot(blas_, blas_int(n), x, 1, y, 1, &r), "cublasSdot");
    return r;
  }

  // ‖A‖_F of an m × n block (one nrm2 when the block is contiguous, else one per column).
  double frobenius(std::int64_t m, std::int64_t n, const T *A, std::int64_t lda) {
    flops += 2.0 * double(m) * double(n);
    if (lda == m)
      return double(nrm2(m * n, A));
    double s = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double c = double(nrm2(m, A + j * lda));
      s += c * c;
    }
    return std::sqrt(s);
  }

  // Replaces the s × s block R by R⁻¹: getrf of a copy, then getrs with R set to the identity
  // (cuSOLVER has no getri). The LU's diagonal and getrf's info come back to the host; an exactly
  // zero pivot leaves R unchanged and reports `singular`, as CpuOps does.
  BlockFactor invert_block(std::int64_t s, T *R, std::int64_t ldr) {
    flops += (2.0 / 3.0 + 2.0) * double(s) * double(s) * double(s); // getrf + getrs with I
    grow(block_lu_, s * s);
    grow(block_piv_, s);
    copy(s, s, R, ldr, block_lu_.ptr, s);
    getrf(s, block_lu_.ptr, s, block_piv_.ptr, info_.ptr, "getrf (block R_k)");
    std::vector<T> diag(static_cast<std::size_t>(s));
    cuda(cudaMemcpy2DAsync(diag.data(), sizeof(T), block_lu_.ptr, (s + 1) * sizeof(T), sizeof(T),
                           static_cast<std::size_t>(s), cudaMemcpyDeviceToHost, stream_),
         "cudaMemcpy2DAsync (LU diagonal)");
    const int info = read_info();
    if (info < 0)
      throw Error(ErrorCode::internal, fmt::format("cuSOLVER getrf: argument {} invalid", -info));
    BlockFactor f;
    f.min_pivot = INFINITY;
    for (const T d : diag)
      f.min_pivot = std::min(f.min_pivot, std::abs(double(d)));
    if (info > 0) {
      f.singular = true;
      f.min_pivot = 0;
      return f;
    }
    set_diagonal(s, nullptr, R, ldr);
    getrs(s, s, block_lu_.ptr, s, block_piv_.ptr, R, ldr, "getrs (block R_k with I)");
    return f;
  }

  // LU with partial pivoting of the n × n A in place (getrf). Returns the 1-based row of an
  // exactly zero pivot, 0 when there is none.
  std::int64_t lu_factor(std::int64_t n, T *A, std::int64_t lda,
                         detail::DeviceArray<std::int64_t> &piv, const char *what) {
    grow(piv, n);
    getrf(n, A, lda, piv.ptr, info_.ptr, what);
    const int info = read_info();
    if (info < 0)
      throw Error(ErrorCode::internal,
                  fmt::format("cuSOLVER {}: argument {} invalid", what, -info));
    return info;
  }
  // B ← A⁻¹ B from lu_factor's result (getrs), B n × nrhs.
  void lu_solve(std::int64_t n, std::int64_t nrhs, const T *LU, std::int64_t lda,
                const std::int64_t *piv, T *B, std::int64_t ldb, const char *what) {
    getrs(n, nrhs, LU, lda, piv, B, ldb, what);
  }

  // A host LU's pivots (LAPACK's, 1-based: row i was swapped with row ipiv[i]) to the device, in
  // the form getrs takes (cuSOLVER's getrf writes the same 1-based swaps).
  void upload_pivots(std::int64_t n, const lapack_int *ipiv,
                     detail::DeviceArray<std::int64_t> &piv) {
    grow(piv, n);
    const std::vector<std::int64_t> h(ipiv, ipiv + n);
    cuda(cudaMemcpyAsync(piv.ptr, h.data(), static_cast<std::size_t>(n) * sizeof(std::int64_t),
                         cudaMemcpyHostToDevice, stream_),
         "cudaMemcpyAsync (pivots to the GPU)");
    sync("pivots");
  }

  // dst = src for a rows × cols block (device to device, on the stream).
  void copy(std::int64_t rows, std::int64_t cols, const T *src, std::int64_t lds, T *dst,
            std::int64_t ldd) {
    if (rows == 0 || cols == 0)
      return;
    cuda(cudaMemcpy2DAsync(dst, ldd * sizeof(T), src, lds * sizeof(T), rows * sizeof(T),
                           static_cast<std::size_t>(cols), cudaMemcpyDeviceToDevice, stream_),
         "cudaMemcpy2DAsync (device to device)");
  }
  void upload(std::int64_t rows, std::int64_t cols, const T *host, std::int64_t ldh, T *dst,
              std::int64_t ldd) {
    if (rows == 0 || cols == 0)
      return;
    cuda(cudaMemcpy2DAsync(dst, ldd * sizeof(T), host, ldh * sizeof(T), rows * sizeof(T),
                           static_cast<std::size_t>(cols), cudaMemcpyHostToDevice, stream_),
         "cudaMemcpy2DAsync (to the GPU)");
    sync("upload");
  }
  // Waits for the stream, then checks the info of every getrs issued so far.
  void download(std::int64_t rows, std::int64_t cols, const T *src, std::int64_t lds, T *host,
                std::int64_t ldh) {
    if (rows > 0 && cols > 0)
      cuda(cudaMemcpy2DAsync(host, ldh * sizeof(T), src, lds * sizeof(T), rows * sizeof(T),
                             static_cast<std::size_t>(cols), cudaMemcpyDeviceToHost, stream_),
           "cudaMemcpy2DAsync (from the GPU)");
    read_info();
  }

  // A = 0, rows × cols (all bits zero is +0.0 in IEEE 754).
  void zero(std::int64_t rows, std::int64_t cols, T *A, std::int64_t lda) {
    if (rows == 0 || cols == 0)
      return;
    cuda(cudaMemset2DAsync(A, lda * sizeof(T), 0, rows * sizeof(T), static_cast<std::size_t>(cols),
                           stream_),
         "cudaMemset2DAsync");
  }
  // A (n × n) = diag(d), d a device vector of n entries; d = nullptr: the identity.
  void set_diagonal(std::int64_t n, const T *d, T *A, std::int64_t lda) {
    zero(n, n, A, lda);
    copy_vector(n, d ? d : ones(n), 1, A, lda + 1);
  }
  // y = x with strides (cublas<t>copy), e.g. onto a diagonal with incy = ld + 1.
  void copy_vector(std::int64_t n, const T *x, std::int64_t incx, T *y, std::int64_t incy) {
    if constexpr (std::same_as<T, double>)
      blas(cublasDcopy(blas_, blas_int(n), x, blas_int(incx), y, blas_int(incy)), "cublasDcopy");
    else
      blas(cublasScopy(blas_, blas_int(n), x, blas_int(incx), y, blas_int(incy)), "cublasScopy");
  }
  // y += alpha x with strides. Like dgmm, geam and the copies it counts no flops: the callers
  // count as the CPU code does.
  void axpy(std::int64_t n, T alpha, const T *x, std::int64_t incx, T *y, std::int64_t incy) {
    if constexpr (std::same_as<T, double>)
      blas(cublasDaxpy(blas_, blas_int(n), &alpha, x, blas_int(incx), y, blas_int(incy)),
           "cublasDaxpy");
    else
      blas(cublasSaxpy(blas_, blas_int(n), &alpha, x, blas_int(incx), y, blas_int(incy)),
           "cublasSaxpy");
  }
  // C = diag(x) A (left) or A diag(x) (right), A and C m × n; always called out of place.
  void dgmm(bool left, std::int64_t m, std::int64_t n, const T *A, std::int64_t lda, const T *x,
            T *C, std::int64_t ldc) {
    if (m == 0 || n == 0)
      return;
    const auto side = left ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
    if constexpr (std::same_as<T, double>)
      blas(cublasDdgmm(blas_, side, blas_int(m), blas_int(n), A, blas_int(lda), x, 1, C,
                       blas_int(ldc)),
           "cublasDdgmm");
    else
      blas(cublasSdgmm(blas_, side, blas_int(m), blas_int(n), A, blas_int(lda), x, 1, C,
                       blas_int(ldc)),
           "cublasSdgmm");
  }
  // C = alpha op(A) + beta op(B), C m × n (geam). In place only as cuBLAS allows it: C = A with
  // ta = false and ldc = lda.
  void geam(bool ta, bool tb, std::int64_t m, std::int64_t n, T alpha, const T *A, std::int64_t lda,
            T beta, const T *B, std::int64_t ldb, T *C, std::int64_t ldc) {
    if (m == 0 || n == 0)
      return;
    if constexpr (std::same_as<T, double>)
      blas(cublasDgeam(blas_, op(ta), op(tb), blas_int(m), blas_int(n), &alpha, A, blas_int(lda),
                       &beta, B, blas_int(ldb), C, blas_int(ldc)),
           "cublasDgeam");
    else
      blas(cublasSgeam(blas_, op(ta), op(tb), blas_int(m), blas_int(n), &alpha, A, blas_int(lda),
                       &beta, B, blas_int(ldb), C, blas_int(ldc)),
           "cublasSgeam");
  }
  // B = Aᵀ, A m × n, B n × m (out of place).
  void transpose(std::int64_t m, std::int64_t n, const T *A, std::int64_t lda, T *B,
                 std::int64_t ldb) {
    geam(true, true, n, m, T(1), A, lda, T(0), A, lda, B, ldb);
  }

  // A device vector of n ones (kept, grown on demand).
  const T *ones(std::int64_t n) {
    if (ones_.size < n) {
      grow(ones_, n);
      const std::vector<T> h(static_cast<std::size_t>(n), T(1));
      upload(n, 1, h.data(), n, ones_.ptr, n);
    }
    return ones_.ptr;
  }

  void sync(const char *what) {
    cuda(cudaStreamSynchronize(stream_), fmt::format("cudaStreamSynchronize ({})", what).c_str());
  }

private:
  int dev_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  cusolverDnHandle_t solver_ = nullptr;
  cusolverDnParams_t params_ = nullptr;
  // info_[0]: getrf's (read after each factorisation); info_[1]: the last getrs's (0 or a
  // negative argument index; checked at every read_info).
  detail::DeviceArray<int> info_;
  detail::DeviceArray<T> block_lu_, ones_, scratch_;
  detail::DeviceArray<std::int64_t> block_piv_;
  detail::DeviceArray<char> work_;
  std::vector<char> host_work_;

  static cublasOperation_t op(bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; }
  static constexpr cudaDataType_t type() {
    return std::same_as<T, double> ? CUDA_R_64F : CUDA_R_32F;
  }

  void cuda(cudaError_t e, const char *what) const { detail::cuda_check(e, dev_, what); }
  void blas(cublasStatus_t s, const char *what) const {
    if (s != CUBLAS_STATUS_SUCCESS)
      throw Error(ErrorCode::device, fmt::format("GPU {}: cuBLAS {} failed: {}", dev_, what,
                                                 cublasGetStatusString(s)));
  }
  void solver(cusolverStatus_t s, const char *what) const {
    if (s != CUSOLVER_STATUS_SUCCESS)
      throw Error(ErrorCode::device, fmt::format("GPU {}: cuSOLVER {} failed (status {})", dev_,
                                                 what, static_cast<int>(s)));
  }

  // Grows a work array; waits for the stream first, since work queued on it may still read the
  // memory being freed.
  template <class U> void grow(detail::DeviceArray<U> &a, std::int64_t n) {
    if (n > a.size) {
      sync("before a reallocation");
      a.reserve(n, dev_);
    }
  }

  void scal(std::int64_t n, T alpha, T *x) {
    if constexpr (std::same_as<T, double>)
      blas(cublasDscal(blas_, blas_int(n), &alpha, x, 1), "cublasDscal");
    else
      blas(cublasSscal(blas_, blas_int(n), &alpha, x, 1), "cublasSscal");
  }

  T nrm2(std::int64_t n, const T *x) {
    T r = 0;
    if constexpr (std::same_as<T, double>)
      blas(cublasDnrm2(blas_, blas_int(n), x, 1, &r), "cublasDnrm2");
    else
      blas(cublasSnrm2(blas_, blas_int(n), x, 1, &r), "cublasSnrm2");
    return r;
  }

  void getrf(std::int64_t n, T *A, std::int64_t lda, std::int64_t *piv, int *info,
             const char *what) {
    std::size_t dev_bytes = 0, host_bytes = 0;
    solver(cusolverDnXgetrf_bufferSize(solver_, params_, n, n, type(), A, lda, type(), &dev_bytes,
                                       &host_bytes),
           "getrf_bufferSize");
    grow(work_, static_cast<std::int64_t>(dev_bytes));
    if (host_work_.size() < host_bytes)
      host_work_.resize(host_bytes);
    solver(cusolverDnXgetrf(solver_, params_, n, n, type(), A, lda, piv, type(), work_.ptr,
                            dev_bytes, host_work_.data(), host_bytes, info),
           what);
  }
  void getrs(std::int64_t n, std::int64_t nrhs, const T *LU, std::int64_t lda,
             const std::int64_t *piv, T *B, std::int64_t ldb, const char *what) {
    solver(cusolverDnXgetrs(solver_, params_, CUBLAS_OP_N, n, nrhs, type(), LU, lda, piv, type(), B,
                            ldb, info_.ptr + 1),
           what);
  }

  // Waits for the stream; returns getrf's info and throws on a getrs argument error.
  int read_info() {
    int h[2] = {0, 0};
    cuda(cudaMemcpyAsync(h, info_.ptr, sizeof h, cudaMemcpyDeviceToHost, stream_),
         "cudaMemcpyAsync (cuSOLVER info)");
    sync("cuSOLVER info");
    if (h[1] != 0)
      throw Error(ErrorCode::internal, fmt::format("cuSOLVER getrs: argument {} invalid", -h[1]));
    return h[0];
  }
};

} // namespace ksum::bsm
