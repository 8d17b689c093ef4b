// Backend::cuda of inverse() and inverse_update() (seed 004 Paper III): sm_impl.hpp's variants —
// the code the CPU runs — over GpuOps, and the LU reference (cuSOLVER getrf + getrs), on matrices
// resident on the device. The standard case takes the Y = I path (A0 = diag(A), X = A − A0, Y = I,
// neither formed) as the CPU does. Pivots come back to the host, so the breakdown test, its step,
// the error message (bsm_common.hpp, on_breakdown) and the LU fallback are those of bsm.cpp.
#include "linalg/bsm/bsm_gpu.hpp"
#include "linalg/bsm/bsm_common.hpp"
#include "linalg/bsm/gpu_ops.hpp"
#include "linalg/bsm/sm_impl.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ksum::bsm {

// bsm.cpp: the automatic block size of Paper III §4.1.
std::int64_t resolve_block(std::int64_t block, std::int64_t m);

// A0⁻¹ of the general case on the device, as sm_impl.hpp uses it: dense (uploaded once) or the
// caller's host operator applied to columns copied off and back on. (The identity and diagonal
// A0 of the standard case take the Y = I path.)
template <std::floating_point T> struct DevA0 {
  using Kind = typename A0Inverse<T>::Kind;
  Kind kind = Kind::dense;
  std::int64_t n = 0;
  typename GpuOps<T>::Buffer dense;
  const ApplyInverse<T> *fn = nullptr;

  DevA0(GpuOps<T> &ops, const A0Inverse<T> &a0) : kind(a0.kind), n(a0.n), fn(a0.fn) {
    if (kind == Kind::dense) {
      dense = ops.alloc(n, n, false);
      ops.upload(n, n, a0.dense, a0.ld, dense.data(), n);
    } else if (kind != Kind::op) {
      throw Error(ErrorCode::internal, "backend cuda: the general case takes a dense or operator "
                                       "A0⁻¹");
    }
  }

  // out = A0⁻¹ in (transpose: A0⁻ᵀ in), n × cols; in and out do not overlap.
  void apply(GpuOps<T> &ops, bool transpose, const T *in, std::int64_t ld_in, T *out,
             std::int64_t ld_out, std::int64_t cols) const {
    if (kind == Kind::dense) {
      ops.gemm(transpose, false, n, cols, n, T(1), dense.data(), n, in, ld_in, T(0), out, ld_out);
      return;
    }
    ops.flops += 2.0 * double(n) * double(n) * double(cols);
    std::vector<T> hin(static_cast<std::size_t>(n * cols)), hout(hin.size());
    ops.download(n, cols, in, ld_in, hin.data(), n);
    (*fn)(transpose, hin.data(), n, hout.data(), n, cols);
    ops.upload(n, cols, hout.data(), n, out, ld_out);
  }

  // out (n × n, leading dimension n) = A0⁻¹.
  void materialize(GpuOps<T> &ops, T *out) const {
    if (kind == Kind::dense) {
      ops.copy(n, n, dense.data(), n, out, n);
      return;
    }
    std::vector<T> eye(static_cast<std::size_t>(n * n), T(0)), h(eye.size());
    for (std::int64_t i = 0; i < n; ++i)
      eye[static_cast<std::size_t>(i * n + i)] = T(1);
    (*fn)(false, eye.data(), n, h.data(), n, n);
    ops.upload(n, n, h.data(), n, out, n);
  }
};

#define KSUM_BSM_GPU_SM_INSTANTIATE(T)                                                             \
  template OpsResult<GpuOps<T>> svsm(GpuOps<T> &, const DevA0<T> &, const T *, const T *,          \
                                     std::int64_t, double);                                        \
  template OpsResult<GpuOps<T>> block_sm(GpuOps<T> &, const DevA0<T> &, const T *, const T *,      \
                                         std::int64_t, std::int64_t, double);                      \
  template OpsResult<GpuOps<T>> reduced_memory_sm(GpuOps<T> &, const DevA0<T> &, const T *,        \
                                                  const T *, std::int64_t, std::int64_t, double);  \
  template OpsResult<GpuOps<T>> svsm_standard(GpuOps<T> &, const StandardSplit<T> &, double);      \
  template OpsResult<GpuOps<T>> block_sm_standard(GpuOps<T> &, const StandardSplit<T> &,           \
                                                  std::int64_t, double);                           \
  template OpsResult<GpuOps<T>> reduced_memory_sm_standard(GpuOps<T> &, const StandardSplit<T> &,  \
                                                           std::int64_t, double);
KSUM_BSM_GPU_SM_INSTANTIATE(float)
KSUM_BSM_GPU_SM_INSTANTIATE(double)
#undef KSUM_BSM_GPU_SM_INSTANTIATE

namespace {

template <std::floating_point T> using Buffer = typename GpuOps<T>::Buffer;

// The method lu in the standard case (and its fallback): getrf of A in place, then getrs with
// the identity (cuSOLVER has no getri). Singular to working precision is decided on the host
// after the download (gpu_inverse).
template <std::floating_point T> Buffer<T> lu_inverse(GpuOps<T> &ops, T *A, std::int64_t n) {
  detail::DeviceArray<std::int64_t> piv;
  const std::int64_t zero = ops.lu_factor(n, A, n, piv, "getrf (the matrix A)");
  ops.flops += 2.0 / 3.0 * double(n) * double(n) * double(n);
  if (zero > 0) {
    LuFactor<T> f;
    f.zero_pivot = static_cast<lapack_int>(zero);
    throw_singular("the matrix A", f);
  }
  Buffer<T> out = ops.alloc(n, n, false);
  ops.set_identity(n, out.data(), n);
  ops.lu_solve(n, n, A, n, piv.ptr, out.data(), n, "getrs (the matrix A with I)");
  ops.flops += 2.0 * double(n) * double(n) * double(n);
  return out;
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
Buffer<T> woodbury_lu(GpuOps<T> &ops, const DevA0<T> &a0, const T *X, const T *Y, std::int64_t m,
                      double *rcond) {
  const std::int64_t n = a0.n;
  detail::DeviceArray<std::int64_t> piv;
  Buffer<T> W = ops.alloc(n, m, false), C = ops.alloc(m, m, false);
  a0.apply(ops, false, X, n, W.data(), n, m);
  ops.set_identity(m, C.data(), m);
  ops.gemm(true, false, m, m, n, T(1), Y, n, W.data(), n, T(1), C.data(), m);
  std::vector<T> hc(static_cast<std::size_t>(m * m));
  ops.download(m, m, C.data(), m, hc.data(), m);
  const double anorm = norm_1(m, hc.data(), m);
  LuFactor<T> f;
  f.zero_pivot =
      static_cast<lapack_int>(ops.lu_factor(m, C.data(), m, piv, "getrf (capacitance matrix)"));
  ops.flops += 2.0 / 3.0 * double(m) * double(m) * double(m);
  if (f.zero_pivot == 0) {
    ops.download(m, m, C.data(), m, hc.data(), m);
    f.rcond = host_rcond(m, hc.data(), anorm);
  }
  if (lu_singular(f))
    throw_singular("the capacitance matrix I + Yᵀ A0⁻¹ X (so A0 + X Yᵀ)", f);
  Buffer<T> Bt = ops.alloc(n, m, false), B = ops.alloc(m, n, false);
  a0.apply(ops, true, Y, n, Bt.data(), n, m);
  ops.transpose(n, m, Bt.data(), n, B.data(), m);
  ops.lu_solve(m, n, C.data(), m, piv.ptr, B.data(), m, "getrs (capacitance matrix)");
  ops.flops += 2.0 * double(m) * double(m) * double(n);
  Buffer<T> out = ops.alloc(n, n);
  a0.materialize(ops, out.data());
  ops.gemm(false, false, n, n, m, T(-1), W.data(), n, B.data(), m, T(1), out.data(), n);
  *rcond = f.rcond;
  return out;
}

// bsm.cpp's run_sm on the device: the requested variant (variants(method, s, threshold)); on
// breakdown the shared error (on_breakdown) or the LU `lu(&rcond)`.
template <std::floating_point T, class Variants, class Lu>
Buffer<T> run(std::int64_t block, const BsmOptions &o, BsmStats &st, Variants &&variants, Lu &&lu) {
  const double threshold = resolve_threshold<T>(o.pivot_threshold);
  st.requested = o.method;
  st.method = o.method;
  if (o.method == BsmMethod::lu) {
    st.block = 0;
    return lu(&st.min_pivot);
  }
  st.block = o.method == BsmMethod::svsm ? 1 : block;
  OpsResult<GpuOps<T>> r = variants(o.method, st.block, threshold);
  st.min_pivot = r.min_pivot;
  if (!r.broke_down)
    return std::move(r.inverse);
  on_breakdown(o, r.breakdown, threshold, st);
  double rcond = 0;
  return lu(&rcond);
}

template <std::floating_point T>
void finish(BsmStats &st, const GpuOps<T> &ops, std::chrono::steady_clock::time_point t0,
            BsmStats *stats) {
  st.flops = ops.flops;
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (stats)
    *stats = st;
}

// M (device, n × n) replaced by its LU and, unless M is singular, out (device) = M⁻¹ by getrs
// with I. The LU comes to the host once for LAPACK's 1-norm condition estimate (anorm = ‖M‖₁),
// so the singularity test is the CPU's (bsm.cpp, lu_singular).
template <std::floating_point T>
LuFactor<T> invert_checked(GpuOps<T> &ops, T *M, std::int64_t n, double anorm, T *out,
                           const char *what) {
  detail::DeviceArray<std::int64_t> piv;
  LuFactor<T> f;
  f.zero_pivot = static_cast<lapack_int>(ops.lu_factor(n, M, n, piv, what));
  ops.flops += 2.0 / 3.0 * double(n) * double(n) * double(n);
  if (f.zero_pivot > 0)
    return f;
  std::vector<T> lu(static_cast<std::size_t>(n * n));
  ops.download(n, n, M, n, lu.data(), n);
  f.rcond = host_rcond(n, lu.data(), anorm);
  if (lu_singular(f))
    return f;
  ops.set_identity(n, out, n);
  ops.lu_solve(n, n, M, n, piv.ptr, out, n, what);
  ops.flops += 2.0 * double(n) * double(n) * double(n);
  ops.sync(what); // M and piv are freed by the callers
  return f;
}

} // namespace

template <std::floating_point T> struct GpuInverse<T>::Impl {
  GpuOps<T> ops;
  std::int64_t n = 0, m = 0;
  Buffer<T> inv, A;        // A: empty when set_inverse gave the state
  Buffer<T> X, Y, W, C, G; // the update in progress (prepare → apply or refactor), n × m work
  detail::DeviceArray<std::int64_t> piv; // the capacitance matrix's pivots
};

template <std::floating_point T> GpuInverse<T>::GpuInverse() : impl_(std::make_unique<Impl>()) {}
template <std::floating_point T> GpuInverse<T>::~GpuInverse() = default;

template <std::floating_point T>
LuFactor<T> GpuInverse<T>::set_matrix(const T *A, std::int64_t n, std::int64_t lda, double anorm) {
  GpuOps<T> &ops = impl_->ops;
  Buffer<T> dA = ops.alloc(n, n, false), lu = ops.alloc(n, n, false), inv = ops.alloc(n, n, false);
  ops.upload(n, n, A, lda, dA.data(), n);
  ops.copy(n, n, dA.data(), n, lu.data(), n);
  const LuFactor<T> f =
      invert_checked(ops, lu.data(), n, anorm, inv.data(), "getrf (the matrix A)");
  if (lu_singular(f))
    return f;
  impl_->n = n;
  impl_->m = 0; // the work buffers are sized for the old n
  impl_->inv = std::move(inv);
  impl_->A = std::move(dA);
  return f;
}

template <std::floating_point T> void GpuInverse<T>::set_inverse(const T *inverse, std::int64_t n) {
  GpuOps<T> &ops = impl_->ops;
  Buffer<T> inv = ops.alloc(n, n, false);
  ops.upload(n, n, inverse, n, inv.data(), n);
  impl_->n = n;
  impl_->m = 0;
  impl_->inv = std::move(inv);
  impl_->A = Buffer<T>{};
}

template <std::floating_point T>
double GpuInverse<T>::prepare(const T *X, const T *Y, std::int64_t m, std::vector<T> &C) {
  Impl &s = *impl_;
  GpuOps<T> &ops = s.ops;
  const std::int64_t n = s.n;
  if (s.m != m) {
    s.m = 0; // until every buffer has its new size
    s.X = ops.alloc(n, m, false);
    s.Y = ops.alloc(n, m, false);
    s.W = ops.alloc(n, m, false);
    s.C = ops.alloc(m, m, false);
    s.G = ops.alloc(m, n, false);
    s.m = m;
  }
  ops.upload(n, m, X, n, s.X.data(), n);
  ops.upload(n, m, Y, n, s.Y.data(), n);
  ops.gemm(false, false, n, m, n, T(1), s.inv.data(), n, s.X.data(), n, T(0), s.W.data(), n);
  ops.set_identity(m, s.C.data(), m);
  ops.gemm(true, false, m, m, n, T(1), s.Y.data(), n, s.W.data(), n, T(1), s.C.data(), m);
  C.resize(static_cast<std::size_t>(m * m));
  ops.download(m, m, s.C.data(), m, C.data(), m);
  return ops.frobenius(n, m, s.W.data(), n);
}

template <std::floating_point T> void GpuInverse<T>::apply(const T *LU, const lapack_int *ipiv) {
  Impl &s = *impl_;
  GpuOps<T> &ops = s.ops;
  const std::int64_t n = s.n, m = s.m;
  // The host's LU of C (the one the breakdown test factored), then G = C⁻¹ Yᵀ A⁻¹ (m × n) and
  // A⁻¹ −= W G.
  ops.upload(m, m, LU, m, s.C.data(), m);
  ops.upload_pivots(m, ipiv, s.piv);
  ops.gemm(true, false, m, n, n, T(1), s.Y.data(), n, s.inv.data(), n, T(0), s.G.data(), m);
  ops.lu_solve(m, n, s.C.data(), m, s.piv.ptr, s.G.data(), m, "getrs (capacitance matrix)");
  ops.flops += 2.0 * double(m) * double(m) * double(n);
  ops.gemm(false, false, n, n, m, T(-1), s.W.data(), n, s.G.data(), m, T(1), s.inv.data(), n);
  if (s.A.data())
    ops.gemm(false, true, n, n, m, T(1), s.X.data(), n, s.Y.data(), n, T(1), s.A.data(), n);
  ops.download(0, 0, nullptr, 1, nullptr, 1); // waits, and checks getrs's info
}

template <std::floating_point T> LuFactor<T> GpuInverse<T>::refactor() {
  Impl &s = *impl_;
  GpuOps<T> &ops = s.ops;
  const std::int64_t n = s.n, m = s.m;
  std::vector<T> host(static_cast<std::size_t>(n * n));
  Buffer<T> A = ops.alloc(n, n, false), lu = ops.alloc(n, n, false), inv = ops.alloc(n, n, false);
  if (s.A.data()) {
    ops.copy(n, n, s.A.data(), n, A.data(), n);
  } else { // A from the stored A⁻¹
    ops.copy(n, n, s.inv.data(), n, lu.data(), n);
    ops.download(n, n, s.inv.data(), n, host.data(), n);
    const LuFactor<T> f = invert_checked(ops, lu.data(), n, norm_1(n, host.data(), n), A.data(),
                                         "getrf (the stored A⁻¹)");
    if (lu_singular(f))
      throw_singular("the stored A⁻¹", f);
  }
  ops.gemm(false, true, n, n, m, T(1), s.X.data(), n, s.Y.data(), n, T(1), A.data(), n);
  ops.download(n, n, A.data(), n, host.data(), n);
  ops.copy(n, n, A.data(), n, lu.data(), n);
  const LuFactor<T> f = invert_checked(ops, lu.data(), n, norm_1(n, host.data(), n), inv.data(),
                                       "getrf (the updated matrix A + X Yᵀ)");
  if (lu_singular(f))
    return f;
  s.inv = std::move(inv);
  if (s.A.data())
    s.A = std::move(A);
  return f;
}

template <std::floating_point T> void GpuInverse<T>::solve(const T *b, std::int64_t nrhs, T *x) {
  GpuOps<T> &ops = impl_->ops;
  const std::int64_t n = impl_->n;
  Buffer<T> db = ops.alloc(n, nrhs, false), dx = ops.alloc(n, nrhs, false);
  ops.upload(n, nrhs, b, n, db.data(), n);
  ops.gemm(false, false, n, nrhs, n, T(1), impl_->inv.data(), n, db.data(), n, T(0), dx.data(), n);
  ops.download(n, nrhs, dx.data(), n, x, n);
}

template <std::floating_point T> void GpuInverse<T>::download(T *inverse) {
  impl_->ops.download(impl_->n, impl_->n, impl_->inv.data(), impl_->n, inverse, impl_->n);
}

template <std::floating_point T> double GpuInverse<T>::take_flops() {
  const double f = impl_->ops.flops;
  impl_->ops.flops = 0;
  return f;
}

template class GpuInverse<float>;
template class GpuInverse<double>;

template <std::floating_point T>
Table<T> gpu_inverse(const T *A, std::int64_t n, std::int64_t lda, std::int64_t block,
                     const BsmOptions &options, std::chrono::steady_clock::time_point t0,
                     BsmStats *stats) {
  // The standard splitting (Paper III §1): A0 = diag(a0), X = A − A0, Y = I, neither formed.
  std::vector<T> a0v, d;
  if (options.method != BsmMethod::lu)
    standard_diagonal(A, n, lda, options, a0v, d);
  GpuOps<T> ops;
  BsmStats st;
  Buffer<T> dA = ops.alloc(n, n, false), da0, dd;
  ops.upload(n, n, A, lda, dA.data(), n);
  if (options.method != BsmMethod::lu) {
    da0 = ops.alloc(n, 1, false);
    dd = ops.alloc(n, 1, false);
    ops.upload(n, 1, a0v.data(), n, da0.data(), n);
    ops.upload(n, 1, d.data(), n, dd.data(), n);
  }
  const StandardSplit<T> sp{dA.data(), n, n, da0.data(), dd.data()};
  bool used_lu = false;
  // The variants only read dA, so the LU (and its fallback) factors it in place.
  const Buffer<T> out = run<T>(
      block, options, st,
      [&](BsmMethod method, std::int64_t s, double threshold) {
        if (method == BsmMethod::svsm)
          return svsm_standard(ops, sp, threshold);
        if (method == BsmMethod::bsm)
          return block_sm_standard(ops, sp, s, threshold);
        return reduced_memory_sm_standard(ops, sp, s, threshold);
      },
      [&](double *) {
        used_lu = true;
        return lu_inverse(ops, dA.data(), n);
      });
  Table<T> inv(n, n, Uninitialized{});
  ops.download(n, n, out.data(), n, inv.data(), n);
  if (used_lu) {
    // 1 / (‖A‖₁ ‖A⁻¹‖₁): the exact reciprocal condition number where the CPU has LAPACK's
    // estimate of it; the same test of singularity to working precision.
    LuFactor<T> f;
    const double norms = norm_1(n, A, lda) * norm_1(n, inv.data(), n);
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
  const DevA0<T> a0(ops, a0_host);
  Buffer<T> dX = ops.alloc(n, m, false), dY = ops.alloc(n, m, false);
  ops.upload(n, m, X, n, dX.data(), n);
  ops.upload(n, m, Y, n, dY.data(), n);
  const T *x = dX.data(), *y = dY.data();
  const Buffer<T> out = run<T>(
      block, options, st,
      [&](BsmMethod method, std::int64_t s, double threshold) {
        if (method == BsmMethod::svsm)
          return svsm(ops, a0, x, y, m, threshold);
        if (method == BsmMethod::bsm)
          return block_sm(ops, a0, x, y, m, s, threshold);
        return reduced_memory_sm(ops, a0, x, y, m, s, threshold);
      },
      [&](double *rc) { return woodbury_lu(ops, a0, x, y, m, rc); });
  Table<T> inv(n, n, Uninitialized{});
  ops.download(n, n, out.data(), n, inv.data(), n);
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
