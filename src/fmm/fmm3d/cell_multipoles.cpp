// The multipole weights of point ranges on the CPU (cell_multipoles.hpp).
#include "fmm/fmm3d/cell_multipoles.hpp"

#include "fmm/fmm3d/chebyshev.hpp"
#include "linalg/bsm/cpu_ops.hpp" // cblas_dgemm and BlasThreads

#include <ksum/error.hpp>

#include <algorithm>
#include <fmt/format.h>
#include <memory>
#include <omp.h>

namespace ksum::fmm {

void cell_multipoles(const double *pts, std::int64_t n, const std::vector<CellRange> &cells,
                     const double *w, std::int64_t nrhs, int threads,
                     std::vector<std::vector<double>> &out) {
  const auto sz = [](std::int64_t v) { return static_cast<std::size_t>(v); };
  const auto ncells = static_cast<std::int64_t>(cells.size());
  std::vector<std::unique_ptr<Chebyshev>> cheb(max_chebyshev_order + 1);
  for (const auto &c : cells) {
    if (c.p < 2 || c.p > max_chebyshev_order || c.begin < 0 || c.end > n || c.begin > c.end)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("cell_multipoles: a cell of order {} with points [{}, {}) of {}", c.p,
                              c.begin, c.end, n));
    if (!cheb[sz(c.p)])
      cheb[sz(c.p)] = std::make_unique<Chebyshev>(c.p);
  }
  out.resize(cells.size());
  // Room before the parallel loop (an allocation failing inside it would end the process).
  for (std::int64_t k = 0; k < ncells; ++k) {
    const std::int64_t p = cells[sz(k)].p;
    out[sz(k)].assign(sz(p * p * p * nrhs), 0.0);
  }
  constexpr std::int64_t chunk = 128;
  const std::int64_t p_max = max_chebyshev_order;
  const int nt = std::max(1, threads > 0 ? threads : omp_get_max_threads());
  std::vector<std::vector<double>> As(sz(nt)), Bs(sz(nt));
  for (int t = 0; t < nt; ++t) {
    As[sz(t)].resize(sz(p_max * p_max * chunk));
    Bs[sz(t)].resize(sz(chunk * p_max * nrhs));
  }
  bsm::BlasThreads one(1); // the cells are the parallel loop
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
  for (std::int64_t k = 0; k < ncells; ++k) {
    const CellRange &cr = cells[sz(k)];
    const Chebyshev &ch = *cheb[sz(cr.p)];
    const int p = cr.p;
    const std::int64_t p2 = std::int64_t{p} * p, pn = p * nrhs;
    double *A = As[sz(omp_get_thread_num())].data(), *B = Bs[sz(omp_get_thread_num())].data();
    double *o = out[sz(k)].data(); // column-major p² × (p · nrhs): r p³ + m0 p² + m1 p + m2
    double s[3][max_chebyshev_order];
    for (std::int64_t j0 = cr.begin; j0 < cr.end; j0 += chunk) {
      const std::int64_t kc = std::min(chunk, cr.end - j0);
      for (std::int64_t l = 0; l < kc; ++l) {
        const std::int64_t j = j0 + l;
        for (int a = 0; a < 3; ++a)
          ch.eval((pts[sz(a * n + j)] - cr.centre[a]) / cr.half, s[a]);
        double *col = A + l * p2;
        for (int m1 = 0; m1 < p; ++m1)
          for (int m2 = 0; m2 < p; ++m2)
            col[m1 * p + m2] = s[1][m1] * s[2][m2];
        for (std::int64_t r = 0; r < nrhs; ++r)
          for (int m0 = 0; m0 < p; ++m0)
            B[sz(l + kc * (r * p + m0))] = w[sz(r * n + j)] * s[0][m0];
      }
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(p2),
                  static_cast<int>(pn), static_cast<int>(kc), 1.0, A, static_cast<int>(p2), B,
                  static_cast<int>(kc), 1.0, o, static_cast<int>(p2));
    }
  }
}

} // namespace ksum::fmm
