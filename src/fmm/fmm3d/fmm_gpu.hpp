#pragma once
// The GPU engine of the interpolation FMM (bbfmm.hpp): the tree, lists and operators built on the
// host are uploaded once; apply() runs every pass on the GPU (P2M, M2M, M2L as gather → cuBLAS
// matrix product → scatter per symmetry class, P2L, L2L, L2P, M2P, P2P) in float or double.
// No CUDA types here: a build without CUDA links fmm_gpu_none.cpp, whose factory throws.
#include "fmm/fmm3d/cell_multipoles.hpp"
#include "fmm/fmm3d/fmm_tree.hpp"

#include <ksum/kernels.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace ksum::fmm {

struct GpuSetup {
  const FmmTree *tree = nullptr;
  Kernel kernel = Kernel::laplace;
  int p = 0;
  const std::vector<double> *nodes = nullptr, *tn = nullptr, *m2m = nullptr; // m2m: 2 p²
  const std::vector<std::int32_t> *perm = nullptr, *pinv = nullptr;          // 48 P each
  // Per level: its 16 P × P class operators (column-major) or null, and their scale.
  std::vector<const double *> level_ops;
  std::vector<double> level_scale;
  // Per level: its classes in low rank, K_c ≈ U_c W_c (U_c: P × rank, W_c: rank × P, column-major;
  // rank < 0: that class in full), or null: every class in full.
  struct LowRankSet {
    int rank[16] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    const double *u[16] = {}, *w[16] = {};
  };
  std::vector<const LowRankSet *> level_low;
  const std::vector<char> *has_local = nullptr;
};

struct GpuTimes {
  double upward = 0, m2l = 0, downward = 0, near = 0;
  // The weights' way in and the results' way out: host copies, uploads, the permutations to the
  // tree order and back, downloads.
  double transfer = 0;
};

class FmmGpu {
public:
  virtual ~FmmGpu() = default;
  // w: weights in the input order (n × nrhs), out: results in the input order (m × nrhs),
  // overwritten. The permutation to tree order and back runs on the GPU; an engine of the other
  // precision converts.
  virtual void apply(const double *w, std::int64_t nrhs, double *out, GpuTimes &times) = 0;
  virtual void apply(const float *w, std::int64_t nrhs, float *out, GpuTimes &times) = 0;
  // A double engine's near field (the U list's point pairs) in float in the applies that follow
  // (BbFmmOptions::mixed_precision; fmm_pairs.cu keeps close pairs in double). A float engine
  // ignores it.
  virtual void near_in_float(bool on) = 0;
};

// The multipole weights of point ranges, on the GPU (the distributed FMM's pseudo-particle
// cells): for cell c (points [begin, end) of pts, its centre, half side and order p),
// out[c][r p³ + q] = Σ_j S_p(x̄_q, y_j) w(j, r), in double, by the FMM's P2M kernel. The points
// stay on the GPU between calls; a cell is summed in chunks whose partial sums the host adds in
// order, so the results do not depend on the GPU's scheduling.
class GpuCellMultipoles {
public:
  virtual ~GpuCellMultipoles() = default;
  // w: n × nrhs, column-major (w[r n + j]).
  virtual void compute(const double *w, std::int64_t nrhs,
                       std::vector<std::vector<double>> &out) = 0;
};
// pts: n × 3, column-major. Throws as make_fmm_gpu does.
std::unique_ptr<GpuCellMultipoles> make_gpu_cell_multipoles(const double *pts, std::int64_t n,
                                                            const std::vector<CellRange> &cells,
                                                            int device);

// single: float arithmetic on the GPU. device: the CUDA device. Throws Error(unsupported) in a
// build without CUDA or when no GPU is visible, Error(device) when the GPU runs out of memory.
std::unique_ptr<FmmGpu> make_fmm_gpu(const GpuSetup &setup, bool single, int device);
// Several GPUs (an id listed twice shares that GPU): each runs the upward pass over every source
// and the rest for its own share of the targets (split_targets); one device: the engine above.
std::unique_ptr<FmmGpu> make_fmm_gpu(const GpuSetup &setup, bool single,
                                     const std::vector<int> &devices);

} // namespace ksum::fmm
