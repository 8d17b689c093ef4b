#pragma once
// The boundary between the Monte Carlo GPU host engine (engine_gpu.cpp) and its CUDA kernels
// (cuda/mc_energy.cu, cuda/mc_batch.cu): plain structs of device pointers, no CUDA types. Every
// launch function enqueues on the given cudaStream_t (passed as void*) and returns "" or the CUDA
// error text.
#include "mc/pair.hpp"

#include <cstdint>

namespace ksum::mc::detail {

// Trials of one translate() batch evaluated per thread block of the ΔU kernel (they sit in shared
// memory and every particle loaded from global memory is used for all of them), and the largest
// batch (the accept kernel keeps one correction per trial in shared memory).
inline constexpr int kTrialGroup = 16;
inline constexpr int kMaxBatch = 1024;
// Upper bound of the slices of the particle range a batch is split into (partial sums per slice
// and trial are reduced in a fixed order by the accept kernel).
inline constexpr int kMaxSlices = 64;
// Threads per block of the all-pairs, ΔU and move kernels (one particle per thread), and the
// blocks of total()'s bond and wall kernel: total() needs ⌈N / kTileThreads⌉ + kExtraBlocks
// partial sums.
inline constexpr int kTileThreads = 128;
inline constexpr int kExtraBlocks = 32;
// The uniform ΔU loop counts overlaps in 16-bit fields, one thread's share of a slice at most:
// it runs only where a slice has fewer particles than this.
inline constexpr std::int64_t kUniformMaxSlice = std::int64_t(65535) * kTileThreads;

// A particle set on the device (SoA, precision T) with its bonds.
template <class T> struct GpuParticles {
  T *x = nullptr, *y = nullptr, *z = nullptr;
  const T *q = nullptr, *r = nullptr;
  std::int32_t n = 0;
  const std::int32_t *bond_begin = nullptr, *bond_nbr = nullptr; // CSR, both directions
  const std::int32_t *bond_pairs = nullptr;                      // (i, j) per bond, for totals
  std::int64_t bonds = 0;
};

// Per-block partial sums reduced by a final kernel in a fixed order (results do not depend on the
// scheduling of blocks), and the reduced result.
struct GpuPartials {
  double *e = nullptr;
  long long *ov = nullptr;
  std::int64_t capacity = 0;
};
struct GpuResult {
  double value;
  long long overlaps;
};

// total(): all pairs i < j (half) or all ordered pairs i ≠ j halved (the paper's kernel), plus the
// bonds and the spherical cell's wall. `fast`: Coulomb or no electrostatics, hard spheres or no
// short range, no periodic box (the specialised inner loop).
template <class T> struct GpuTotalArgs {
  GpuParticles<T> sys;
  PairParams<T> pp;
  bool half = true, fast = false;
  GpuPartials part;
  GpuResult *result = nullptr;
};

// delta()/apply(): m moved particles with new positions nxyz (x of all, then y, then z).
template <class T> struct GpuMoveArgs {
  GpuParticles<T> sys;
  PairParams<T> pp;
  bool fast = false, rigid = false;
  const std::int32_t *idx = nullptr;
  const T *nxyz = nullptr;
  std::int32_t m = 0;
  std::uint32_t *mark = nullptr; // per particle: `generation` where the particle is moved
  std::int32_t *slot = nullptr;  // per particle: its index in the moved list
  std::uint32_t generation = 1;
  int blocks = 1; // of the O(N·m) kernel
  GpuPartials part;
  GpuResult *result = nullptr;
};

// The random numbers of translation move t (proposal.hpp), resolved to a particle and a
// displacement; they depend on t only and are computed for a window of moves at once.
struct GpuDraw {
  double step;       // the particle's maximum displacement
  double ux, uy, uz; // uniform in [−1, 1)
  double u, lnu;     // Metropolis uniform and −log(u)
  std::int32_t p, pad;
};

// The chain's position on the device: moves t_next … t_end − 1 remain in the current window of
// draws, which starts at move window_t0.
struct GpuChainState {
  std::uint64_t t_next, t_end, window_t0;
};
struct GpuBatchRecord {
  long long processed, accepted, rejected_overlap;
  double delta_u;
};

// What the accept kernel needs of one trial beyond its ΔU partial sums.
template <class T> struct GpuTrialOut {
  T nx, ny, nz;
  std::int32_t p;
  double bond_e;         // bond-energy change against the batch's starting state
  std::int32_t extra_ov; // broken bonds at the new position, + 1 if it left the spherical cell
  std::int32_t pad;
};

template <class T> struct GpuBatchArgs {
  GpuParticles<T> sys;
  PairParams<T> pp;
  bool fast = false;
  // `fast` with one contact distance for every pair (hard spheres of one radius, or no short
  // range): the overlap test is r² < contact2 (= max((2R)², smallest normal)) and the charges of
  // the trial particle are factored out of its sum, ΔU_t = l_B q_t Σ_j q_j (1/r_new − 1/r_old).
  bool uniform = false;
  T contact2 = 0;
  // The uniform loop skips the self test and the old position's contact test where a stretch of
  // particles holds none of the trials' own (KSUM_MC_LEAN=0 turns it off, for comparisons).
  bool lean = true;
  int batch = 1;  // B: trials per batch (≤ kMaxBatch)
  int ld = 32;    // leading dimension of the per-batch matrices (B rounded up to 32)
  int slices = 1; // particle-range slices of the ΔU kernel
  int groups = 1; // ⌈B / kTrialGroup⌉
  const GpuDraw *draws = nullptr;
  GpuChainState *state = nullptr;
  GpuTrialOut<T> *trials = nullptr; // [B]
  double *part_e = nullptr;         // [slices][ld]
  std::int32_t *part_ov = nullptr;  // [slices][ld]
  double *corr_e = nullptr;         // [ld][ld]: row a (earlier trial), column b
  std::int32_t *corr_ov = nullptr;  // [ld][ld]
  GpuBatchRecord *records = nullptr;
  int record = 0; // this batch's slot in records
};

template <class T> const char *launch_total(const GpuTotalArgs<T> &a, void *stream);
template <class T> const char *launch_delta(const GpuMoveArgs<T> &a, void *stream);
template <class T> const char *launch_apply(const GpuMoveArgs<T> &a, void *stream);
// Draws of moves t0 … t0 + n − 1 into out[0 … n − 1]. movable: null for every particle.
const char *launch_draws(std::uint64_t seed, std::uint64_t t0, std::int64_t n,
                         const std::int32_t *movable, std::int64_t n_movable, const double *step,
                         double max_step, GpuDraw *out, void *stream);
// One batch: the ΔU and pair-correction kernel, then the sequential accept kernel, which applies
// the accepted moves, advances state->t_next and writes records[record]. mid_event (a cudaEvent_t,
// or null) is recorded between the two launches (KSUM_MC_PROFILE's per-kernel times).
template <class T>
const char *launch_batch(const GpuBatchArgs<T> &a, void *stream, void *mid_event = nullptr);
// Resident blocks per multiprocessor of the batch's ΔU kernel in the variant `a` selects (its
// fast and uniform flags), for sizing its grid in whole waves.
template <class T> int batch_blocks_per_sm(const GpuBatchArgs<T> &a);

} // namespace ksum::mc::detail
