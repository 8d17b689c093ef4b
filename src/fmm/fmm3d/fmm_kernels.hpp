#pragma once
// The kernel-dependent passes of the interpolation FMM (bbfmm.hpp): everything that evaluates the
// kernel between points, or between points and Chebyshev nodes. Instantiated per kernel functor of
// kernels/kernel_defs.hpp (scaled coordinates, q = p0 + |x − y|²).
#include "fmm/fmm3d/chebyshev.hpp"
#include "fmm/fmm3d/fmm_tree.hpp"

#include <ksum/kernels.hpp>

#include <cstdint>
#include <vector>

namespace ksum::fmm {

struct NearContext {
  const FmmTree &tree;
  const Chebyshev &cheb;
  const double *ws; // weights in tree order, n × nrhs
  std::int64_t n, nrhs;
  // The near field's sums over a leaf's plain neighbours in float (each difference taken in
  // double, each target's sum added in double), with one right-hand side: for loose tolerances.
  bool single = false;
};

// X list (P2L): loc[a] += the kernel between a's nodes and the sources of each box in X(a).
// `chunk`: boxes per task (OpenMP schedule(dynamic, chunk)).
void x_list(Kernel kernel, const NearContext &c, double *loc, int threads, std::int64_t chunk);

// Per target leaf: L2P of its local expansion (where has_local), M2P of the multipoles of its W
// list, P2P of its U list (the self pair left out when targets are the sources). us: m × nrhs in
// tree order, overwritten for every target.
// `chunk`: target leaves per task (OpenMP schedule(dynamic, chunk)). Returns the target leaves.
std::int64_t leaf_pass(Kernel kernel, const NearContext &c, const double *mult, const double *loc,
                       const std::vector<char> &has_local, double *us, int threads,
                       std::int64_t chunk);

} // namespace ksum::fmm
