#pragma once
// RBF-PUM on the GPU (seed 001 names it as its future work), fp64 throughout, s = 2 or 3:
//   indexing   points hashed to their cell (eq. (11)) and sorted by it (radix sort), cells' point
//              ranges from the sorted keys; each patch counts (and, when sparse, grows) and then
//              copies its points into a packed array: patch j's points are px[off_j .. off_j+n_j);
//   fits       one thread block per patch with the matrix in shared memory: assembly, Cholesky,
//              solves, LOOCV (Rippa's formula from the inverse factor, Brent's method over log ε,
//              the same linalg::brent_minimize as the CPU), the residual test and the nugget
//              fallback of the CPU path;
//   evaluation one thread per point, the points sorted by cell so that a warp shares its patches.
// The host engine (pum_gpu.cpp) owns the device arrays; the kernels are in cuda/pum_*.cu.
// Decisions that must match the CPU path exactly (cells, patch membership) use the shared
// functions of spatial/cell_box.hpp.
#include <ksum/kernels.hpp>
#include <ksum/pum.hpp>
#include <ksum/table.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace ksum::detail {

inline constexpr std::int64_t pum_gpu_max_cols = 4;

// The acceptance tests of a local fit, shared by the CPU and the GPU (see pum.cpp).
inline constexpr double pum_max_residual = 1e-6;
inline constexpr double pum_max_noise = 1e-3;
// LOOCV refuses ε whose system has 1 / (Φ_00 · max_k (Φ⁻¹)_kk) below this (an estimate of the
// reciprocal condition number within a factor n² above it).
inline constexpr double pum_min_rcond_loocv = 1e-12;
// Brent's tolerance on log ε: the chosen ε within about 1 % of the minimiser (the LOOCV cost is
// flat there; finer steps cost factorisations without changing the interpolant noticeably).
inline constexpr double pum_loocv_log_tol = 1e-2;

// The grid of a PUM index as the GPU needs it.
struct PumGrid {
  int s = 0;
  std::int64_t d[3] = {1, 1, 1};
  std::int64_t ncells = 0, base_ring = 1;
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0}, width[3] = {1, 1, 1};
  double delta = 0, min_width = 0, diag = 0;
};

// A fitted interpolant on the device, packed: patch (cell) j holds points off[j] .. off[j]+cnt[j]
// of px (total × s, column-major); its coefficient of point a for value column q is
// coef[off[j]·ncols + q·cnt[j] + a] (the CPU's layout).
struct PumPacked {
  Kernel kernel = Kernel::matern4;
  int ncols = 0;
  std::int64_t total = 0;
  const std::int64_t *off = nullptr;
  const int *cnt = nullptr;
  const double *radius = nullptr, *scale = nullptr;
  const double *px = nullptr, *coef = nullptr;
  const int *grown = nullptr; // patches whose radius grew (visited by every point)
  std::int64_t ngrown = 0;
};

struct PumEvalArgs {
  PumGrid grid;
  PumPacked pk;
  std::int64_t m = 0;
  const double *y = nullptr;  // m × s column-major
  const int *order = nullptr; // the points in cell order
  double *out = nullptr;      // m × ncols column-major
  int *needs_cpu = nullptr;   // set when a point is outside the box or in no patch
};

struct PumFitArgs {
  Kernel kernel = Kernel::matern4;
  PumGrid grid;
  int ncols = 0;
  const int *list = nullptr; // the patches of this launch, one block each
  std::int64_t count = 0;
  const std::int64_t *off = nullptr;
  const int *cnt = nullptr;
  const double *px = nullptr, *pv = nullptr; // packed points and values (total × s, total × ncols)
  std::int64_t total = 0;
  double eps = 1;
  bool loocv = false;
  double log_eps_min = 0, log_eps_max = 0, eps_max = 1;
  int loocv_iterations = 40;
  double *coef = nullptr, *eps_out = nullptr; // per cell
  int *regularised = nullptr;                 // per cell
  // Patches too large for shared memory: block b keeps its matrix at work + b · work_stride.
  double *work = nullptr;
  std::int64_t work_stride = 0;
};

// Kernels (cuda/pum_index.cu, cuda/pum_fit.cu, cuda/pum_eval.cu); stream is a cudaStream_t.
void launch_pum_eval(const PumEvalArgs &a, void *stream);
void launch_pum_fit(const PumFitArgs &a, int threads, std::size_t smem_bytes, void *stream);
// The matrix of a fit block (doubles) for patches of up to n points, with the LOOCV value rows.
std::int64_t pum_fit_matrix_doubles(std::int64_t n, int ncols, bool loocv);
// Shared memory of a fit block for patches of up to n points; matrix: whether the matrix is in it.
std::size_t pum_fit_smem_bytes(std::int64_t n, int s, int ncols, bool loocv, bool matrix = true);
// keys[i] = cell of point i, order[i] = i.
void launch_pum_hash(const PumGrid &g, const double *pts, std::int64_t n, unsigned *keys,
                     int *order, void *stream);
// Radix sort of (key, value) pairs on the low `bits` bits; temp == nullptr: returns the bytes
// needed.
std::size_t pum_sort_pairs(void *temp, std::size_t temp_bytes, const unsigned *keys_in,
                           unsigned *keys_out, const int *vals_in, int *vals_out, std::int64_t n,
                           int bits, void *stream);
// cell_ptr[c] = first sorted row of cell c (ncells + 1 entries).
void launch_pum_cell_ptr(const unsigned *sorted_keys, std::int64_t n, std::int64_t ncells,
                         std::int64_t *cell_ptr, void *stream);
// dst (n × cols, column-major) = src rows in `order`.
void launch_pum_gather(const double *src, std::int64_t n, int cols, const int *order, double *dst,
                       void *stream);
// Sets *flag when two points of a cell coincide.
void launch_pum_duplicates(const PumGrid &g, const double *pts, std::int64_t n,
                           const std::int64_t *cell_ptr, int *flag, void *stream);
// Counts every patch's points within its radius, growing sparse patches like the CPU path.
void launch_pum_count(const PumGrid &g, const double *pts, std::int64_t n,
                      const std::int64_t *cell_ptr, std::int64_t min_pts, int *cnt, double *radius,
                      void *stream);
// Copies every patch's points and values into the packed arrays.
void launch_pum_fill(const PumGrid &g, const double *pts, const double *vals, std::int64_t n,
                     int ncols, const std::int64_t *cell_ptr, const std::int64_t *off,
                     const double *radius, std::int64_t total, double *px, double *pv,
                     void *stream);

// Evaluates a fitted interpolant. Returns false when some point needs the CPU path (outside the
// box, or in a hole); out is then incomplete.
class PumGpu {
public:
  virtual ~PumGpu() = default;
  virtual bool evaluate(const double *y, std::int64_t m, double *out) = 0;
};

// A fit made on the CPU, in the packed layout (pum.cpp packs it), for GPU evaluation.
struct PumHostPacked {
  Kernel kernel = Kernel::matern4;
  PumGrid grid;
  int ncols = 0;
  std::vector<std::int64_t> off;
  std::vector<int> cnt, grown;
  std::vector<double> radius, scale, px, coef;
  std::vector<double> eps; // per cell (0 for empty patches)
  std::vector<int> regularised;
};
// Throws Error(unsupported) without CUDA, without a GPU, or for s outside {2, 3} or more than
// pum_gpu_max_cols value columns.
std::unique_ptr<PumGpu> make_pum_gpu(const PumHostPacked &h);

// A fit made on the GPU; download() copies it to the host (for the CPU evaluation paths).
class PumGpuFit : public PumGpu {
public:
  virtual PumHostPacked download() const = 0;
  // Per cell: points in the patch, chosen ε, 1 where the fit needed a nugget.
  virtual const std::vector<int> &counts() const = 0;
  virtual const std::vector<double> &eps() const = 0;
  virtual const std::vector<int> &regularised() const = 0;
  virtual const std::vector<double> &radius() const = 0;
  double seconds_index = 0, seconds_fit = 0;
};

// Indexes and fits on the GPU. pts: n × s, vals: n × ncols (host, column-major, finite). Returns
// null when the GPU path does not apply, and the CPU path must run: duplicate points (the CPU path
// names or merges them), a patch whose vectors alone exceed a block's shared memory (3D, one value
// column: about 4,000 points with a fixed ε, 1,200 with LOOCV, whose panel buffer is also there),
// or more than 2^30 points or 2^32 cells.
std::unique_ptr<PumGpuFit> pum_gpu_fit(const PumGrid &g, const Table<double> &pts,
                                       const Table<double> &vals, const PumOptions &opt,
                                       std::int64_t min_pts);

} // namespace ksum::detail
