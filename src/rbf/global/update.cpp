// The dense solver's update path for GlobalRbfInterpolant::move_centres: the saddle-point matrix
// K of (4) and its explicit inverse kept, and a move of m centres applied to K⁻¹ by the
// Sherman–Morrison–Woodbury formula (InverseUpdate, seed 004 Paper III eq. (2)) in O(N²m)
// instead of refactoring.
//
// The change. Moving centre k changes row k and column k of the kernel block Φ + σρI (its
// diagonal entry φ(0) + σρ does not change) and row k of Π, i.e. row k and column k of K and
// nothing else. For the moved set S = {k_1 … k_m}, D = K' − K is symmetric and zero outside the
// rows and columns S. With E = [e_k1 … e_km] (N × m) and G = D E with its rows S halved (the
// S × S block of D, which sits in both the rows and the columns S, counted once),
//
//   D = E Gᵀ + G Eᵀ = X Yᵀ,   X = [E  G],   Y = [G  E]   (N × 2m each),
//
// since E Gᵀ + G Eᵀ = E Dᵀ_S + D_S Eᵀ − E D_SS Eᵀ (D_S = D E the columns S, D_SS = Eᵀ D E), which
// is D: an entry in row k ∈ S and column j ∉ S comes from the first term, one in column k ∈ S
// and row j ∉ S from the second, one in the S × S block from all three (1 + 1 − 1). So the
// update has rank ≤ 2m, and K'⁻¹ = K⁻¹ − K⁻¹X (I + YᵀK⁻¹X)⁻¹ YᵀK⁻¹; the 2m × 2m capacitance
// matrix is singular exactly when K' is (det K' = det K · det(I + YᵀK⁻¹X)).
#include "kernels/kernel_defs.hpp"
#include "linalg/bsm/cpu_ops.hpp"
#include "rbf/global/solvers.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <lapacke.h>
#include <omp.h>

namespace ksum::rbf {

namespace {

// r = B − K x (N × c) and the largest relative residual over the columns, on the first n rows
// (the interpolation conditions); rmax: the largest |r| there.
double residual(const HeldInverse &h, const Table<double> &B, const Table<double> &x,
                Table<double> &r, double &rmax) {
  const std::int64_t n = h.n, size = h.K.rows(), nc = B.cols();
  bsm::CpuOps<double> ops;
  r = B;
  ops.gemm(false, false, size, nc, size, -1.0, h.K.data(), size, x.data(), size, 1.0, r.data(),
           size);
  double worst = 0;
  rmax = 0;
  for (std::int64_t c = 0; c < nc; ++c) {
    double r2 = 0, f2 = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      r2 += r(i, c) * r(i, c);
      f2 += B(i, c) * B(i, c);
      rmax = std::max(rmax, std::abs(r(i, c)));
    }
    worst = std::max(worst, f2 > 0 ? std::sqrt(r2 / f2) : std::sqrt(r2));
  }
  return worst;
}

// [f; 0]: the right-hand sides of (4).
Table<double> rhs(const Table<double> &f, std::int64_t size) {
  const std::int64_t n = f.rows();
  Table<double> B(size, f.cols());
  for (std::int64_t c = 0; c < f.cols(); ++c)
    std::copy(f.data() + c * n, f.data() + (c + 1) * n, B.data() + c * size);
  return B;
}

} // namespace

SolveResult solve_dense_inverse(const DenseProblem &p, HeldInverse &held) {
  const std::int64_t n = p.x->rows(), terms = p.P->cols(), size = n + terms, nc = p.f->cols();
  if (size > 46000)
    throw Error(ErrorCode::unsupported,
                fmt::format("the dense solver stores the full ({0} × {0}) matrix; {1} centres "
                            "need {2:.1f} GiB. Use --solver fgp or krylov",
                            size, n, 8.0 * size * size / (1 << 30)));
  SaddleSystem sys = assemble_saddle(p);
  HeldInverse h;
  h.n = n;
  h.terms = terms;
  h.K = Table<double>(size, size, Uninitialized{});
  std::copy(sys.K.begin(), sys.K.end(), h.K.data());
  // getrf on the assembled copy (sys.K); the solution by getrs (backward stable, as accurate as
  // dsysv: its residual is the yardstick of later updates), then getri: sys.K holds K⁻¹.
  bsm::BlasThreads threads(p.threads);
  Table<double> x(size, nc, Uninitialized{});
  std::copy(sys.B.begin(), sys.B.end(), x.data());
  {
    std::vector<lapack_int> ipiv(static_cast<std::size_t>(size));
    const lapack_int ld = bsm::blas_int(size);
    lapack_int info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, ld, ld, sys.K.data(), ld, ipiv.data());
    if (info > 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("the interpolation matrix is singular (LAPACK dgetrf: zero pivot at "
                              "row {}): repeated centres, or a kernel and ε for which the system "
                              "is not solvable",
                              info));
    if (info == 0)
      info = LAPACKE_dgetrs(LAPACK_COL_MAJOR, 'N', ld, bsm::blas_int(nc), sys.K.data(), ld,
                            ipiv.data(), x.data(), ld);
    if (info == 0)
      info = LAPACKE_dgetri(LAPACK_COL_MAJOR, ld, sys.K.data(), ld, ipiv.data());
    if (info != 0)
      throw Error(ErrorCode::internal, fmt::format("LAPACK dgetrf/dgetrs/dgetri: info {}", info));
  }
  Table<double> r;
  double rmax = 0;
  h.residual0 = residual(h, rhs(*p.f, size), x, r, rmax);
  BsmOptions o;
  o.threads = p.threads;
  o.fallback = BsmFallback::error; // a breakdown is the caller's to handle (it refits)
  h.inverse = InverseUpdate<double>(o);
  h.inverse.set_inverse(Table<double>::borrow(sys.K.data(), size, size));
  held = std::move(h);
  return split_solution(x.data(), n, terms, nc);
}

void move_held(HeldInverse &held, std::span<const std::int64_t> index, const Table<double> &points,
               const Table<double> &P, Kernel kernel, double eps, int threads) {
  const std::int64_t n = held.n, size = held.K.rows(), terms = held.terms, d = points.cols();
  const std::int64_t m = static_cast<std::int64_t>(index.size());
  // The new columns k ∈ S of K' (column a for centre index[a]).
  Table<double> cols(size, m, Uninitialized{});
  const int nt = threads > 0 ? threads : omp_get_max_threads();
  const double cs = kdef::coord_scale(kernel, eps), c2 = cs * cs;
  kdef::visit<double>(kernel, [&](auto kf) {
    constexpr double p0 = kdef::p_offset<decltype(kf)>();
#pragma omp parallel for num_threads(nt) schedule(static) if (n * m > 20000)
    for (std::int64_t a = 0; a < m; ++a) {
      const std::int64_t k = index[static_cast<std::size_t>(a)];
      double *col = cols.data() + a * size;
      for (std::int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::int64_t q = 0; q < d; ++q) {
          const double e = points(j, q) - points(k, q);
          s += e * e;
        }
        col[j] = kf.value(p0 + c2 * s);
      }
      col[k] = held.K(k, k); // φ(0) + σρ: the diagonal does not move
      for (std::int64_t t = 0; t < terms; ++t)
        col[n + t] = P(k, t);
    }
  });
  // X = [E G], Y = [G E] with G = (K' − K) E, rows S halved (see the top of this file).
  Table<double> X(size, 2 * m), Y(size, 2 * m);
  for (std::int64_t a = 0; a < m; ++a) {
    const std::int64_t k = index[static_cast<std::size_t>(a)];
    double *g = X.data() + (m + a) * size;
    const double *col = cols.data() + a * size, *old = held.K.data() + k * size;
    for (std::int64_t j = 0; j < size; ++j)
      g[j] = col[j] - old[j];
    for (std::int64_t b = 0; b < m; ++b)
      g[index[static_cast<std::size_t>(b)]] *= 0.5;
    X(k, a) = 1.0;
    Y(k, m + a) = 1.0;
    std::copy(g, g + size, Y.data() + a * size);
  }
  held.inverse.update(X, Y); // throws on a breakdown, K⁻¹ unchanged
  for (std::int64_t a = 0; a < m; ++a) {
    const std::int64_t k = index[static_cast<std::size_t>(a)];
    const double *col = cols.data() + a * size;
    std::copy(col, col + size, held.K.data() + k * size);
    for (std::int64_t j = 0; j < size; ++j)
      held.K(k, j) = col[j];
  }
}

SolveResult solve_held(const HeldInverse &held, const Table<double> &f, const Table<double> *start,
                       int threads, double target, double &residual_max, double &residual_rel) {
  const std::int64_t n = held.n, size = held.K.rows(), nc = f.cols();
  const Table<double> B = rhs(f, size);
  bsm::BlasThreads bt(threads);
  bsm::CpuOps<double> ops;
  const Table<double> &inv = held.inverse.inverse();
  Table<double> x(size, nc), r;
  if (start) {
    // From the previous solution: x = x0 + K⁻¹(B − K x0), whose error is u κ times the change
    // of the solution rather than times the solution.
    x = *start;
    residual(held, B, x, r, residual_max);
    ops.gemm(false, false, size, nc, size, 1.0, inv.data(), size, r.data(), size, 1.0, x.data(),
             size);
  } else
    ops.gemm(false, false, size, nc, size, 1.0, inv.data(), size, B.data(), size, 0.0, x.data(),
             size);
  residual_rel = residual(held, B, x, r, residual_max);
  // Iterative refinement with the explicit inverse: each step multiplies the residual by about
  // ‖I − K X‖ (X the inverse held: u κ(K) fresh, more after updates) until it reaches the floor
  // of computing it, about u ‖K‖ ‖x‖ / ‖f‖, which for RBF systems (‖λ‖ ≫ ‖f‖) lies well above u.
  // It stops at the target, after 6 steps, or when a step no longer halves the residual.
  for (int step = 0; step < 6 && residual_rel > target; ++step) {
    Table<double> x_next = x, r_next;
    double rmax_next = 0;
    ops.gemm(false, false, size, nc, size, 1.0, inv.data(), size, r.data(), size, 1.0,
             x_next.data(), size);
    const double next = residual(held, B, x_next, r_next, rmax_next);
    if (!(next < residual_rel))
      break;
    const bool halved = next <= 0.5 * residual_rel;
    x = std::move(x_next);
    r = std::move(r_next);
    residual_rel = next;
    residual_max = rmax_next;
    if (!halved)
      break;
  }
  return split_solution(x.data(), n, held.terms, nc);
}

} // namespace ksum::rbf
