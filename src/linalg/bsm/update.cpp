// InverseUpdate: A⁻¹ kept under rank-m changes A ← A + X Yᵀ by the Woodbury formula (seed 004
// Paper III eq. (2)), (A + XYᵀ)⁻¹ = A⁻¹ − A⁻¹X (I + YᵀA⁻¹X)⁻¹ YᵀA⁻¹, in O(n²m) instead of the
// O(n³) of refactoring; the m × m capacitance matrix is LU-factored with partial pivoting.
#include "linalg/bsm/bsm_common.hpp"
#include "linalg/bsm/bsm_gpu.hpp"

#include <ksum/bsm.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>

namespace ksum {

using namespace bsm;

template <std::floating_point T> struct InverseUpdate<T>::Impl {
  BsmOptions options;
  std::int64_t n = 0;
  // The CPU's A⁻¹; with Backend::cuda a copy of the device's, brought over by inverse() when
  // `stale` (an update or a new matrix since).
  mutable Table<T> inv;
  mutable bool stale = false;
  Table<T> A; // kept when set_matrix gave it (empty otherwise): the lu fallback refactors it
  std::unique_ptr<GpuInverse<T>> gpu; // Backend::cuda: the state on the device
  // Backend::cuda: the const members (solve, inverse) use the device's one stream and the cache.
  mutable std::mutex gpu_mutex;
  BsmStats stats;

  void require_set(std::string_view what) const {
    if (n == 0)
      throw Error(
          ErrorCode::invalid_argument,
          fmt::format("InverseUpdate::{}: no matrix yet (call set_matrix or set_inverse)", what));
  }

  // A⁻¹ of an n × n matrix by getrf + getri; throws when it is singular.
  static Table<T> lu_invert(const Table<T> &M, std::string_view what, BsmStats &st) {
    const std::int64_t n = M.rows();
    Table<T> inv = M;
    const LuFactor<T> f = lu_factor(n, inv.data(), n);
    st.flops += 2.0 * double(n) * double(n) * double(n);
    if (lu_singular(f))
      throw_singular(what, f);
    lu_inverse(n, inv.data(), n, f);
    st.min_pivot = f.rcond;
    return inv;
  }
};

template <std::floating_point T>
InverseUpdate<T>::InverseUpdate(BsmOptions options) : impl_(std::make_unique<Impl>()) {
  check_options(options);
  impl_->options = options;
  if (options.backend == Backend::cuda)
    impl_->gpu = std::make_unique<GpuInverse<T>>();
}
template <std::floating_point T> InverseUpdate<T>::~InverseUpdate() = default;
template <std::floating_point T>
InverseUpdate<T>::InverseUpdate(InverseUpdate &&) noexcept = default;
template <std::floating_point T>
InverseUpdate<T> &InverseUpdate<T>::operator=(InverseUpdate &&) noexcept = default;

template <std::floating_point T>
void InverseUpdate<T>::set_matrix(const T *A, std::int64_t n, std::int64_t lda) {
  const auto t0 = std::chrono::steady_clock::now();
  check_matrix(A, n, lda);
  BlasThreads threads(impl_->options.threads);
  Table<T> copy(n, n, Uninitialized{});
  for (std::int64_t j = 0; j < n; ++j)
    std::memcpy(copy.data() + j * n, A + j * lda, sizeof(T) * static_cast<std::size_t>(n));
  BsmStats st;
  st.method = st.requested = BsmMethod::lu;
  if (impl_->gpu) {
    (void)impl_->gpu->take_flops(); // the counts of solves since
    const LuFactor<T> f = impl_->gpu->set_matrix(copy.data(), n, n, norm_1(n, copy.data(), n));
    st.flops = impl_->gpu->take_flops();
    if (lu_singular(f))
      throw_singular("the matrix A", f);
    st.min_pivot = f.rcond;
    impl_->n = n;
    impl_->inv = Table<T>();
    impl_->stale = true;
    impl_->A = Table<T>();
    st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    impl_->stats = st;
    return;
  }
  Table<T> inv = Impl::lu_invert(copy, "the matrix A", st);
  impl_->n = n;
  impl_->inv = std::move(inv);
  impl_->A = std::move(copy);
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  impl_->stats = st;
}

template <std::floating_point T> void InverseUpdate<T>::set_matrix(const Table<T> &A) {
  if (A.rows() != A.cols())
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("A is {} × {}: a square matrix is needed", A.rows(), A.cols()));
  set_matrix(A.data(), A.rows(), A.rows());
}

template <std::floating_point T> void InverseUpdate<T>::set_inverse(const Table<T> &A_inverse) {
  if (A_inverse.rows() != A_inverse.cols())
    throw Error(ErrorCode::shape_mismatch, fmt::format("A⁻¹ is {} × {}: a square matrix is needed",
                                                       A_inverse.rows(), A_inverse.cols()));
  if (A_inverse.rows() <= 0)
    throw Error(ErrorCode::invalid_argument, "A⁻¹ is empty (n = 0)");
  check_finite(A_inverse.data(), A_inverse.rows(), A_inverse.cols(), A_inverse.rows(), "A⁻¹");
  if (impl_->gpu)
    impl_->gpu->set_inverse(A_inverse.data(), A_inverse.rows());
  impl_->n = A_inverse.rows();
  impl_->inv = A_inverse;
  impl_->stale = false;
  impl_->A = Table<T>();
  impl_->stats = BsmStats{};
  impl_->stats.method = impl_->stats.requested = BsmMethod::lu;
}

template <std::floating_point T>
void InverseUpdate<T>::update(const Table<T> &X, const Table<T> &Y) {
  const auto t0 = std::chrono::steady_clock::now();
  Impl &s = *impl_;
  s.require_set("update");
  const std::int64_t n = s.n, m = X.cols();
  if (X.rows() != n || Y.rows() != n || Y.cols() != m)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("X is {} × {} and Y is {} × {}: both must be n × m with n = {}",
                            X.rows(), X.cols(), Y.rows(), Y.cols(), n));
  if (m < 1)
    throw Error(ErrorCode::empty_input, "X and Y have no columns (m = 0)");
  check_finite(X.data(), n, m, n, "X");
  check_finite(Y.data(), n, m, n, "Y");
  BlasThreads threads(s.options.threads);
  CpuOps<T> ops;
  BsmStats st;
  st.method = BsmMethod::lu;
  st.requested = s.options.method;
  st.block = m;
  // W = A⁻¹X (n × m), C = I + YᵀW (m × m), G = YᵀA⁻¹ (m × n); on the GPU W stays there and C
  // comes to the host, so what follows decides as the CPU does.
  std::vector<T> W, C(static_cast<std::size_t>(m * m), T(0)), G;
  double w_norm = 0;
  if (s.gpu) {
    (void)s.gpu->take_flops(); // the counts of solves (or a refused update) since
    w_norm = s.gpu->prepare(X.data(), Y.data(), m, C);
  } else {
    W.resize(static_cast<std::size_t>(n * m));
    ops.gemm(false, false, n, m, n, T(1), s.inv.data(), n, X.data(), n, T(0), W.data(), n);
    for (std::int64_t i = 0; i < m; ++i)
      C[static_cast<std::size_t>(i * m + i)] = T(1);
    ops.gemm(true, false, m, m, n, T(1), Y.data(), n, W.data(), n, T(1), C.data(), m);
    w_norm = ops.frobenius(n, m, W.data(), n);
  }
  // Two measures of trouble: the condition of C, and the cancellation that produced its pivots
  // (the pivot measure of bsm.hpp with F = Y, G = A⁻¹X; an ill-conditioned 1 × 1 C has rcond 1).
  const double scale = 1 + ops.frobenius(n, m, Y.data(), n) * w_norm;
  const LuFactor<T> f = lu_factor(m, C.data(), m);
  ops.flops += 2.0 / 3.0 * double(m) * double(m) * double(m);
  double min_pivot = INFINITY;
  for (std::int64_t i = 0; i < m; ++i)
    min_pivot = std::min(min_pivot, std::abs(double(C[static_cast<std::size_t>(i * m + i)])));
  st.min_pivot = f.zero_pivot > 0 ? 0.0 : std::min(f.rcond, min_pivot / scale);
  const double threshold = resolve_threshold<T>(s.options.pivot_threshold);
  if (f.zero_pivot > 0 || !(st.min_pivot > threshold)) {
    if (s.options.fallback == BsmFallback::error)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("rank-{} update: the capacitance matrix I + Yᵀ A⁻¹ X is {} "
                              "(pivot measure {:.3g}, reciprocal condition estimate {:.3g}, "
                              "threshold {:.3g}): A + X Yᵀ is singular or nearly so; the inverse "
                              "is unchanged",
                              m, f.zero_pivot > 0 ? "singular" : "nearly singular", st.min_pivot,
                              f.rcond, threshold));
    if (s.gpu) { // A + XYᵀ refactored on the device
      const LuFactor<T> g = s.gpu->refactor();
      st.flops += ops.flops + s.gpu->take_flops();
      if (lu_singular(g))
        throw_singular("the updated matrix A + X Yᵀ", g);
      st.min_pivot = g.rcond; // as the CPU's refactoring reports it
      s.stale = true;
      st.fallback = true;
      st.fallback_step = 1;
      st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      s.stats = st;
      return;
    }
    // Refactor A + XYᵀ; A itself comes from inverting A⁻¹ when only the inverse was given.
    Table<T> A = s.A.rows() == n ? s.A : Impl::lu_invert(s.inv, "the stored A⁻¹", st);
    ops.gemm(false, true, n, n, m, T(1), X.data(), n, Y.data(), n, T(1), A.data(), n);
    Table<T> inv = Impl::lu_invert(A, "the updated matrix A + X Yᵀ", st);
    s.inv = std::move(inv);
    if (s.A.rows() == n)
      s.A = std::move(A);
    st.fallback = true;
    st.fallback_step = 1;
    st.flops += ops.flops;
    st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    s.stats = st;
    return;
  }
  if (s.gpu) {
    s.gpu->apply(C.data(), f.ipiv.data()); // C holds its LU (lu_factor above)
    s.stale = true;
    st.flops = ops.flops + s.gpu->take_flops();
    st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    s.stats = st;
    return;
  }
  G.resize(static_cast<std::size_t>(m * n));
  ops.gemm(true, false, m, n, n, T(1), Y.data(), n, s.inv.data(), n, T(0), G.data(), m);
  lu_solve(m, n, C.data(), m, f, G.data(), m); // G ← C⁻¹ Yᵀ A⁻¹
  ops.flops += 2.0 * double(m) * double(m) * double(n);
  ops.gemm(false, false, n, n, m, T(-1), W.data(), n, G.data(), m, T(1), s.inv.data(), n);
  if (s.A.rows() == n)
    ops.gemm(false, true, n, n, m, T(1), X.data(), n, Y.data(), n, T(1), s.A.data(), n);
  st.flops = ops.flops;
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.stats = st;
}

template <std::floating_point T> Table<T> InverseUpdate<T>::solve(const Table<T> &b) const {
  const Impl &s = *impl_;
  s.require_set("solve");
  if (b.rows() != s.n)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("b has {} rows; the matrix has n = {}", b.rows(), s.n));
  check_finite(b.data(), b.rows(), b.cols(), b.rows(), "b");
  Table<T> x(s.n, b.cols());
  if (s.gpu) {
    const std::lock_guard lock(s.gpu_mutex);
    s.gpu->solve(b.data(), b.cols(), x.data());
    return x;
  }
  BlasThreads threads(s.options.threads);
  CpuOps<T> ops;
  ops.gemm(false, false, s.n, b.cols(), s.n, T(1), s.inv.data(), s.n, b.data(), s.n, T(0), x.data(),
           s.n);
  return x;
}

template <std::floating_point T> const Table<T> &InverseUpdate<T>::inverse() const {
  const Impl &s = *impl_;
  s.require_set("inverse");
  const std::lock_guard lock(s.gpu_mutex);
  if (s.stale) {
    s.inv = Table<T>(s.n, s.n, Uninitialized{});
    s.gpu->download(s.inv.data());
    s.stale = false;
  }
  return s.inv;
}
template <std::floating_point T> std::int64_t InverseUpdate<T>::size() const {
  return impl_->n;
}
template <std::floating_point T> const BsmOptions &InverseUpdate<T>::options() const {
  return impl_->options;
}
template <std::floating_point T> const BsmStats &InverseUpdate<T>::stats() const {
  return impl_->stats;
}

template class InverseUpdate<float>;
template class InverseUpdate<double>;

} // namespace ksum
