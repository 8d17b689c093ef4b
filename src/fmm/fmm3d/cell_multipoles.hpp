#pragma once
// The multipole weights of ranges of points in the interpolation FMM (Fong & Darve): for a cell
// with centre c, half side h and Chebyshev order p holding the points y_j, j ∈ [begin, end),
//   W[r p³ + m0 p² + m1 p + m2] = Σ_j S_p(x̄_m0, t_j0) S_p(x̄_m1, t_j1) S_p(x̄_m2, t_j2) w(j, r),
// t_j = (y_j − c) / h, the same expansion the FMM's P2M forms. The distributed FMM sends far cells
// as p³ pseudo-particles at the cell's Chebyshev nodes carrying these weights. The CPU routine
// here; fmm_gpu.hpp has the GPU one (the FMM's P2M kernel).
#include <cstdint>
#include <vector>

namespace ksum::fmm {

struct CellRange {
  double centre[3], half;
  std::int64_t begin, end;
  int p; // 2 … max_chebyshev_order
};

// pts: n × 3 column-major (pts[a n + j]); w: n × nrhs column-major. out[c] gets cell c's
// p³ · nrhs weights. Per chunk of 128 points one dgemm, W[(m1, m2), (r, m0)] += Σ_j A[(m1, m2), j]
// B[j, (r, m0)] with A = S(m1, t_j1) S(m2, t_j2) and B = w(j, r) S(m0, t_j0): the loop's 2 p³ flops
// per point and right-hand side, at the BLAS's rate. `threads` OpenMP threads over the cells (the
// BLAS runs one thread inside them).
void cell_multipoles(const double *pts, std::int64_t n, const std::vector<CellRange> &cells,
                     const double *w, std::int64_t nrhs, int threads,
                     std::vector<std::vector<double>> &out);

} // namespace ksum::fmm
