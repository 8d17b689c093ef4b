// Backend::cuda of inverse() and inverse_update() (seed 004 Paper III): the variants of sm_gpu.hpp
// and the LU reference (cuSOLVER getrf + getrs) on matrices resident on the device. Pivots come
// back to the host, so the breakdown test, its step, the error messages and the LU fallback are
// those of bsm.cpp.
#include "linalg/bsm/bsm_gpu.hpp"
#include "linalg/bsm/bsm_common.hpp"
#include "linalg/bsm/sm_gpu.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ksum::bsm {

// bsm.cpp: the automatic block size of Paper III §4.1.
std::int64_t resolve_block(std::int64_t block, std::int64_t m);

namespace {

using detail::DeviceArray;
using gpu::DevA0;

// The method lu in the standard case (and its fallback): getrf of A in place, then getrs with
// the identity (cuSOLVER has no getri). Singular to working precision is decided on the host
// after the download (gpu_inverse).
template <std::floating_point T>
void lu_inverse(GpuOps<T> &ops, T *A, std::int64_t n, DeviceArray<T> &out) {
  DeviceArray<std::int64_t> piv;
  const std::int64_t zero = ops.lu_factor(n, A, n, piv, "getrf (the matrix A)");
  ops.flops += 2.0 / 3.0 * double(n) * double(n) * double(n);
  if (zero > 0) {
    LuFactor<T> f;
    f.zero_pivot = static_cast<lapack_int>(zero);
    throw_singular("the matrix A", f);
  }
  out.reserve(n * n);
  ops.set_diagonal(n, nullptr, out.ptr, n);
  ops.lu_solve(n, n, A, n, piv.ptr, out.ptr, n, "getrs (the matrix A with I)");
  ops.flops += 2.0 * double(n) * double(n) * double(n);
}

// ‖A‖₁ (largest column sum of |a_ij|) in double on the host; +∞ when an entry is not finite.
template <std::floating_point T> double norm1(const T *A, std::int64_t n, std::int64_t lda) {
  double best = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    double s = 0;
    for (std::int64_t i = 0; i < n; ++i)
      s += std::abs(double(A[j * lda + i]));
    if (!std::isfinite(s))
      return INFINITY;
    best = std::max(best, s);
  }
  return best;
}

// LAPACK's 1-norm condition estimate of an m × m matrix from its LU, on the host.
template <std::floating_point T> double host_rcond(std::int64_t m, const T *LU, double anorm) {
  if constexpr (std::same_as<T, double>) {
    double rc = 0;
    LAPACKE_dgecon(LAPACK_COL_MAJOR, '1', blas_int(m), LU, blas_int(m), anorm, &rc);
    return rc;
  } else {
    float rc = 0;
    LAPACKE_sgecon(LAPACK_COL_MAJOR, '1', blas_int(m), LU, blas_int(m), float(anorm), &rc);
    return rc;
  }
}

// bsm.cpp's woodbury_lu: A⁻¹ = A0⁻¹ − W C⁻¹ Yᵀ A0⁻¹, W = A0⁻¹ X, C = I + Yᵀ W (Paper III eq. (2))
// with C factored by cuSOLVER; C and its LU (m × m) come to the host for LAPACK's condition
// estimate, so the singularity test is the CPU's.
template <std::floating_point T>
void woodbury_lu(GpuOps<T> &ops, const DevA0<T> &a0, const T *X, const T *Y, std::int64_t m,
                 DeviceArray<T> &out, double *rcond) {
  const std::int64_t n = a0.n;
  DeviceArray<T> W, C, Bt, B;
  DeviceArray<std::int64_t> piv;
  W.reserve(n * m);
  C.reserve(m * m);
  a0.apply(ops, false, X, n, W.ptr, n, m);
  ops.set_diagonal(m, nullptr, C.ptr, m);
  ops.gemm(true, false, m, m, n, T(1), Y, n, W.ptr, n, T(1), C.ptr, m);
  std::vector<T> hc(static_cast<std::size_t>(m * m));
  ops.download(m, m, C.ptr, m, hc.data(), m);
  const double anorm = norm1(hc.data(), m, m);
  LuFactor<T> f;
  f.zero_pivot =
      static_cast<lapack_int>(ops.lu_factor(m, C.ptr, m, piv, "getrf (capacitance matrix)"));
  ops.flops += 2.0 / 3.0 * double(m) * double(m) * double(m);
  if (f.zero_pivot == 0) {
    ops.download(m, m, C.ptr, m, hc.data(), m);
    f.rcond = host_rcond(m, hc.data(), anorm);
  }
  if (lu_singular(f))
    throw_singular("the capacitance matrix I + Yᵀ A0⁻¹ X (so A0 + X Yᵀ)", f);
  Bt.reserve(n * m);
  B.reserve(m * n);
  a0.apply(ops, true, Y, n, Bt.ptr, n, m);
  ops.transpose(n, m, Bt.ptr, n, B.ptr, m);
  ops.lu_solve(m, n, C.ptr, m, piv.ptr, B.ptr, m, "getrs (capacitance matrix)");
  ops.flops += 2.0 * double(m) * double(m) * double(n);
  out.reserve(n * n);
  a0.materialize(ops, out.ptr);
  ops.gemm(false, false, n, n, m, T(-1), W.ptr, n, B.ptr, m, T(1), out.ptr, n);
  *rcond = f.rcond;
}

// bsm.cpp's run_sm on the device: the requested variant; on breakdown the same error (message
// included) or `lu(&rcond)`.
template <std::floating_point T, class Lu>
void run(GpuOps<T> &ops, const DevA0<T> &a0, T *X, bool x_scratch, const T *Y, std::int64_t m,
         std::int64_t block, const BsmOptions &o, BsmStats &st, DeviceArray<T> &out, Lu &&lu) {
  const double threshold = resolve_threshold<T>(o.pivot_threshold);
  st.requested = o.method;
  st.method = o.method;
  SmResult<T> r;
  switch (o.method) {
  case BsmMethod::svsm:
    st.block = 1;
    r = gpu::svsm(ops, a0, X, x_scratch, Y, m, threshold, out);
    break;
  case BsmMethod::bsm:
    st.block = block;
    r = gpu::block_sm(ops, a0, X, x_scratch, Y, m, block, threshold, out);
    break;
  case BsmMethod::rmbsm:
    st.block = block;
    r = gpu::reduced_memory_sm(ops, a0, X, Y, m, block, threshold, out);
    break;
  case BsmMethod::lu:
    st.block = 0;
    lu(&st.min_pivot);
    return;
  }
  st.min_pivot = r.min_pivot;
  if (!r.broke_down)
    return;
  const Breakdown &b = r.breakdown;
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
  double rcond = 0;
  lu(&rcond);
}

template <std::floating_point T>
void finish(BsmStats &st, const GpuOps<T> &ops, std::chrono::steady_clock::time_point t0,
            BsmStats *stats) {
  st.flops = ops.flops;
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (stats)
    *stats = st;
}

} // namespace

template <std::floating_point T>
Table<T> gpu_inverse(const T *A, std::int64_t n, std::int64_t lda, std::int64_t block,
                     const BsmOptions &options, std::chrono::steady_clock::time_point t0,
                     BsmStats *stats) {
  // The standard splitting (Paper III §1): A0 = diag(a0), X = A − A0, Y = I.
  std::vector<T> a0v, d;
  const bool split = options.method != BsmMethod::lu;
  if (split) {
    a0v.assign(static_cast<std::size_t>(n), T(1));
    if (options.a0 == BsmA0::diagonal)
      for (std::int64_t i = 0; i < n; ++i) {
        if (A[i * lda + i] == T(0))
          throw Error(ErrorCode::invalid_argument,
                      fmt::format("A0 = diag(A) is singular: A({0}, {0}) = 0 (0-based); use a0 = "
                                  "identity or method lu",
                                  i));
        a0v[static_cast<std::size_t>(i)] = A[i * lda + i];
      }
    d.resize(a0v.size());
    for (std::size_t i = 0; i < d.size(); ++i)
      d[i] = T(1) / a0v[i];
  }
  GpuOps<T> ops;
  BsmStats st;
  DeviceArray<T> dA, out;
  dA.reserve(n * n);
  ops.upload(n, n, A, lda, dA.ptr, n);
  bool used_lu = false;
  auto lu = [&](double *) {
    lu_inverse(ops, dA.ptr, n, out);
    used_lu = true;
  };
  if (split) {
    A0Inverse<T> host;
    host.kind =
        options.a0 == BsmA0::diagonal ? A0Inverse<T>::Kind::diagonal : A0Inverse<T>::Kind::identity;
    host.n = n;
    const DevA0<T> a0(ops, host, d);
    DeviceArray<T> X, Y, a0d;
    a0d.reserve(n);
    ops.upload(n, 1, a0v.data(), n, a0d.ptr, n);
    X.reserve(n * n);
    ops.copy(n, n, dA.ptr, n, X.ptr, n);
    ops.axpy(n, T(-1), a0d.ptr, 1, X.ptr, n + 1);
    Y.reserve(n * n);
    ops.set_diagonal(n, nullptr, Y.ptr, n);
    // X is scratch: the LU fallback works on dA.
    run(ops, a0, X.ptr, true, Y.ptr, n, block, options, st, out, lu);
  } else {
    st.requested = st.method = BsmMethod::lu;
    st.block = 0;
    lu(nullptr);
  }
  Table<T> inv(n, n, Uninitialized{});
  ops.download(n, n, out.ptr, n, inv.data(), n);
  if (used_lu) {
    // 1 / (‖A‖₁ ‖A⁻¹‖₁): the exact reciprocal condition number where the CPU has LAPACK's
    // estimate of it; the same test of singularity to working precision.
    LuFactor<T> f;
    const double norms = norm1(A, n, lda) * norm1(inv.data(), n, n);
    f.rcond = std::isfinite(norms) && norms > 0 ? 1 / norms : 0.0;
    if (lu_singular(f))
      throw_singular("the matrix A", f);
    if (!st.fallback)
      st.min_pivot = f.rcond;
  }
  finish(st, ops, t0, stats);
  return inv;
}

template <std::floating_point T>
Table<T> gpu_inverse_update(const A0Inverse<T> &a0_host, const T *X, const T *Y, std::int64_t m,
                            std::int64_t block, const BsmOptions &options,
                            std::chrono::steady_clock::time_point t0, BsmStats *stats) {
  const std::int64_t n = a0_host.n;
  GpuOps<T> ops;
  BsmStats st;
  const DevA0<T> a0(ops, a0_host, {});
  DeviceArray<T> dX, dY, out;
  dX.reserve(n * m);
  dY.reserve(n * m);
  ops.upload(n, m, X, n, dX.ptr, n);
  ops.upload(n, m, Y, n, dY.ptr, n);
  // X may hold U unless the LU fallback needs it after a breakdown.
  const bool x_scratch = options.fallback == BsmFallback::error;
  run(ops, a0, dX.ptr, x_scratch, dY.ptr, m, block, options, st, out,
      [&](double *rc) { woodbury_lu(ops, a0, dX.ptr, dY.ptr, m, out, rc); });
  Table<T> inv(n, n, Uninitialized{});
  ops.download(n, n, out.ptr, n, inv.data(), n);
  finish(st, ops, t0, stats);
  return inv;
}

#define KSUM_BSM_GPU_INSTANTIATE(T)                                                                \
  template Table<T> gpu_inverse(const T *, std::int64_t, std::int64_t, std::int64_t,               \
                                const BsmOptions &, std::chrono::steady_clock::time_point,         \
                                BsmStats *);                                                       \
  template Table<T> gpu_inverse_update(const A0Inverse<T> &, const T *, const T *, std::int64_t,   \
                                       std::int64_t, const BsmOptions &,                           \
                                       std::chrono::steady_clock::time_point, BsmStats *);
KSUM_BSM_GPU_INSTANTIATE(float)
KSUM_BSM_GPU_INSTANTIATE(double)
#undef KSUM_BSM_GPU_INSTANTIATE

} // namespace ksum::bsm
