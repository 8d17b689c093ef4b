#pragma once
// The boundary between the GPU FMM's host engine (fmm_gpu.cpp, plain C++) and its CUDA kernels
// (cuda/fmm_passes.cu, cuda/fmm_pairs.cu): plain structs of device pointers. Expansions are stored
// per box and right-hand side, exp[(box · nrhs + r) · P + q], q = (a p + b) p + c.
#include <ksum/kernels.hpp>

#include <cstdint>

namespace ksum::detail {

template <class T> struct GpuBox {
  T centre[3];
  T half; // half the side
  std::int64_t sb, se, tb, te;
  std::int32_t parent, first_child, children, octant;
  std::int32_t coincident; // a leaf of identical sources
  std::int32_t has_local;
};

// What every pass needs: the tree and the Chebyshev tables (all device pointers).
template <class T> struct GpuTree {
  const GpuBox<T> *boxes = nullptr;
  const T *src = nullptr; // sorted, 3 columns of n
  const T *tgt = nullptr; // sorted, 3 columns of m (= src when self)
  std::int64_t n = 0, m = 0;
  int p = 0, P = 0, nrhs = 1;
  const T *nodes = nullptr; // p
  const T *tn = nullptr;    // p × p: T_n(x̄_m) at [m p + n]
  const T *m2m = nullptr;   // 2 × p × p, see chebyshev.hpp
};

// Launch wrappers (stream as void*); each throws Error(device) on a launch failure.
// P2M for the listed source leaves; ws: sorted weights, n × nrhs.
template <class T>
void launch_p2m(const GpuTree<T> &t, const std::int32_t *leaves, std::int64_t count, const T *ws,
                T *mult, void *stream);
// M2M into each listed box from its children.
template <class T>
void launch_m2m(const GpuTree<T> &t, const std::int32_t *parents, std::int64_t count, T *mult,
                void *stream);
// L2L from each listed box's parent.
template <class T>
void launch_l2l(const GpuTree<T> &t, const std::int32_t *children, std::int64_t count, T *loc,
                void *stream);
// L2P: us[r m + i] += the local expansion at every target of each listed leaf.
template <class T>
void launch_l2p(const GpuTree<T> &t, const std::int32_t *leaves, std::int64_t count, const T *loc,
                T *us, void *stream);
// M2L columns: pair k of the group is (target a[k], source b[k], symmetry tr[k]); column
// c = k nrhs + r. Gather: X[:, c] = M_b permuted; scatter: L_a += scale · (Y[:, c] permuted back).
template <class T>
void launch_m2l_gather(const GpuTree<T> &t, const std::int32_t *b, const std::int32_t *tr,
                       std::int64_t pairs, const std::int32_t *pinv, const T *mult, T *X,
                       void *stream);
template <class T>
void launch_m2l_scatter(const GpuTree<T> &t, const std::int32_t *a, const std::int32_t *tr,
                        std::int64_t pairs, const std::int32_t *perm, T scale, const T *Y, T *loc,
                        void *stream);

// Row permutation of an n × nrhs array: out[r n + k] = in[r n + order[k]] (gather), or
// out[r n + order[k]] = in[r n + k] (scatter).
template <class T>
void launch_permute(const T *in, const std::int64_t *order, std::int64_t n, std::int64_t nrhs,
                    bool scatter, T *out, void *stream);

// The kernel between two sets per (target, source) box pair of a CSR list: the targets are a
// box's points (out: us) or its Chebyshev nodes (out: loc, P2L); the sources a box's points
// (weights ws, coincident leaves summed as one point) or its nodes (weights: its multipole, M2P).
template <class T> struct PairPass {
  const std::int32_t *targets = nullptr; // target boxes, one block each
  std::int64_t count = 0;
  const std::int64_t *offsets = nullptr; // CSR by box id
  const std::int32_t *list = nullptr;
  bool target_nodes = false, source_nodes = false;
  bool self = false; // skip j = i inside a box paired with itself (points only)
  // Point targets and point sources of a double tree: the kernel and the per-box sums in float
  // (fmm_pairs.cu says how close pairs keep double); ignored in float trees and for nodes.
  bool mixed = false;
  const T *ws = nullptr;         // sorted weights (point sources)
  const T *box_weight = nullptr; // nb × nrhs totals of coincident leaves
  const T *mult = nullptr;       // node sources
  T *us = nullptr;               // point targets: m × nrhs
  T *loc = nullptr;              // node targets
};
template <class T>
void launch_pairs(Kernel k, const GpuTree<T> &t, const PairPass<T> &pass, void *stream);

// The octree's radix sort (cuda/fmm_sort.cu): index_in is filled with 0 … n − 1, then the
// (key, index) pairs are sorted (stable) over bits [0, end_bit) into keys_out / index_out.
std::size_t radix_sort_temp_bytes(std::int64_t n, int end_bit);
void launch_radix_sort(void *temp, std::size_t temp_bytes, const std::uint64_t *keys_in,
                       std::uint64_t *keys_out, std::int64_t *index_in, std::int64_t *index_out,
                       std::int64_t n, int end_bit, void *stream);

} // namespace ksum::detail
