// The dense solver: the saddle-point system (4) of seed 000, assembled in full and solved by
// LAPACK's symmetric indefinite factorisation (Bunch–Kaufman, dsysv).
#include "kernels/kernel_defs.hpp"
#include "rbf/global/solvers.hpp"

#include <ksum/error.hpp>

#include <fmt/format.h>
#include <lapacke.h>
#include <omp.h>

namespace ksum::rbf {

SolveResult split_solution(const double *B, std::int64_t n, std::int64_t m, std::int64_t nc) {
  const std::int64_t size = n + m;
  SolveResult r;
  r.lambda = Table<double>(n, nc, Uninitialized{});
  r.poly = Table<double>(m, nc, Uninitialized{});
  for (std::int64_t c = 0; c < nc; ++c) {
    for (std::int64_t i = 0; i < n; ++i)
      r.lambda(i, c) = B[c * size + i];
    for (std::int64_t t = 0; t < m; ++t)
      r.poly(t, c) = B[c * size + n + t];
  }
  return r;
}

SaddleSystem assemble_saddle(const DenseProblem &p) {
  const Table<double> &x = *p.x, &P = *p.P;
  const std::int64_t n = x.rows(), d = x.cols(), m = P.cols(), size = n + m, nc = p.f->cols();
  SaddleSystem sys;
  sys.K.resize(static_cast<std::size_t>(size * size));
  sys.B.assign(static_cast<std::size_t>(size * nc), 0.0);
  for (std::int64_t c = 0; c < nc; ++c)
    for (std::int64_t i = 0; i < n; ++i)
      sys.B[c * size + i] = (*p.f)(i, c);
  double *K = sys.K.data();
  const int nt = p.threads > 0 ? p.threads : omp_get_max_threads();
  const double cs = kdef::coord_scale(p.kernel, p.eps), c2 = cs * cs;
  kdef::visit<double>(p.kernel, [&](auto kf) {
    constexpr double p0 = kdef::p_offset<decltype(kf)>();
#pragma omp parallel for num_threads(nt) schedule(dynamic, 16)
    for (std::int64_t j = 0; j < n; ++j) {
      double *col = K + j * size;
      for (std::int64_t i = 0; i < n; ++i) {
        double s = 0;
        for (std::int64_t k = 0; k < d; ++k) {
          const double e = x(i, k) - x(j, k);
          s += e * e;
        }
        col[i] = kf.value(p0 + c2 * s);
      }
      col[j] += p.smoothing;
      for (std::int64_t t = 0; t < m; ++t)
        col[n + t] = P(j, t);
    }
  });
  for (std::int64_t t = 0; t < m; ++t) {
    double *col = K + (n + t) * size;
    for (std::int64_t i = 0; i < n; ++i)
      col[i] = P(i, t);
    for (std::int64_t i = n; i < size; ++i)
      col[i] = 0.0;
  }
  return sys;
}

SolveResult solve_dense_cpu(const DenseProblem &p) {
  const std::int64_t n = p.x->rows(), m = p.P->cols(), size = n + m, nc = p.f->cols();
  if (size > 46000)
    throw Error(ErrorCode::unsupported,
                fmt::format("the dense solver stores the full ({0} × {0}) matrix; {1} centres "
                            "need {2:.1f} GiB. Use --solver fgp or krylov",
                            size, n, 8.0 * size * size / (1 << 30)));
  auto [K, B] = assemble_saddle(p);
  std::vector<lapack_int> ipiv(size);
  const lapack_int info = LAPACKE_dsysv(
      LAPACK_COL_MAJOR, 'L', static_cast<lapack_int>(size), static_cast<lapack_int>(nc), K.data(),
      static_cast<lapack_int>(size), ipiv.data(), B.data(), static_cast<lapack_int>(size));
  if (info > 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("the interpolation matrix is singular (LAPACK dsysv: zero pivot at "
                            "row {}): repeated centres, or a kernel and ε for which the system "
                            "is not solvable",
                            info));
  if (info < 0)
    throw Error(ErrorCode::internal, fmt::format("LAPACK dsysv: argument {} invalid", -info));
  return split_solution(B.data(), n, m, nc);
}

} // namespace ksum::rbf
