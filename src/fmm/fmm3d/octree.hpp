#pragma once
// Adaptive octree for the 3D fast multipole method: Morton codes (21 bits per axis) sorted by an
// LSD radix sort, points reordered once, boxes split while they hold more than leaf_size points
// (empty children dropped), each box shrunk to the bounding box of its points; interaction lists
// from a dual-tree traversal with the multipole acceptance criterion
//   |c_A − c_B| · θ ≥ r_A + r_B   (r: half the diagonal of the box's points' bounding box)
// so a source box B is "far" for a target box A when the expansions converge with ratio ≤ θ.
#include <ksum/table.hpp>

#include <cstdint>
#include <vector>

namespace ksum::fmm {

struct OctreeBox {
  std::int64_t begin = 0, end = 0; // the box's points: sorted rows [begin, end)
  std::int32_t parent = -1;
  std::int32_t first_child = -1; // children are contiguous: [first_child, first_child + children)
  std::int32_t children = 0;
  std::int32_t level = 0;
  double centre[3] = {0, 0, 0}; // of the points' bounding box
  double radius = 0;            // half its diagonal: every point lies within it of the centre
  bool leaf() const { return children == 0; }
  std::int64_t size() const { return end - begin; }
};

struct Octree {
  Table<double> points;             // n × 3, in Morton order
  std::vector<std::int64_t> order;  // order[k]: the input row of sorted point k
  std::vector<std::uint64_t> codes; // the sorted Morton codes
  std::vector<OctreeBox> boxes;     // box 0 is the root; parents before children
  std::int32_t depth = 0;           // the deepest level
  // Interaction lists in CSR form, per target box: far[far_offsets[a] .. far_offsets[a+1]) are
  // the source boxes whose expansions box a receives (M2L); near lists (P2P) for leaves only.
  std::vector<std::int64_t> far_offsets, near_offsets;
  std::vector<std::int32_t> far, near;
  std::vector<std::int32_t> leaves; // leaf boxes in Morton order
};

struct OctreeOptions {
  std::int64_t leaf_size = 64; // a box with more points is split (unless at the deepest level)
  double theta = 0.5;          // acceptance ratio (0, 1): smaller is more accurate, more near work
};

// Points: n × 3, finite. Identical points end in one leaf at the deepest level (21), whatever its
// size.
Octree build_octree(const Table<double> &points, const OctreeOptions &options = {});

// The 21 low bits of v spread to every third bit (bit i to bit 3i): one axis of a Morton code.
inline std::uint64_t morton_spread3(std::uint64_t v) {
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffULL;
  v = (v | v << 16) & 0x1f0000ff0000ffULL;
  v = (v | v << 8) & 0x100f00f00f00f00fULL;
  v = (v | v << 4) & 0x10c30c30c30c30c3ULL;
  v = (v | v << 2) & 0x1249249249249249ULL;
  return v;
}
inline constexpr int morton_bits = 21; // per axis

// Radix sort of 64-bit keys, carrying a permutation: after it keys are ascending and
// order[k] is the original position of key k (stable).
// OpenMP threads over chunks above 200,000 keys.
void radix_sort(std::vector<std::uint64_t> &keys, std::vector<std::int64_t> &order);
// The same on a GPU (CUB's radix sort over the bits that vary), transfers included. Throws
// Error(unsupported) in a build without CUDA, Error(device) when the GPU fails.
void gpu_radix_sort(std::vector<std::uint64_t> &keys, std::vector<std::int64_t> &order, int device);

} // namespace ksum::fmm
