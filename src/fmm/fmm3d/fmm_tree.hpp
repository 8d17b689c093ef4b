#pragma once
// The octree of the interpolation FMM (bbfmm.hpp): one cube around sources and targets, cut into
// 2^21 cells per axis; both point sets sorted by Morton code (radix sort); a box is split while it
// holds more than leaf_size sources or targets. Unlike octree.hpp's boxes these are not shrunk:
// every box is the cube of its Morton prefix, so same-level translations come from a small set of
// integer offsets and their M2L operators can be precomputed.
//
// Interaction lists of the adaptive FMM, from a dual traversal that keeps pairs at one level while
// both boxes have children:
//   V (M2L)  same level, not adjacent (offsets in [−3, 3]³ with max |Δ| ≥ 2, 316 of them);
//   U (P2P)  adjacent leaves, and the cheap cases below;
//   W (M2P)  target leaf A, smaller source box b separated from A by at least b's side: b's
//            multipole evaluated at A's targets (or P2P when b has at most `expansion_size`
//            sources);
//   X (P2L)  source leaf B, smaller target box a separated from B by at least a's side: B's sources
//            into a's local expansion (or P2P when a is a leaf with at most `expansion_size`
//            targets).
// Each far pair is at least one box side apart relative to the smaller box, so one interpolation
// order serves all of them with the accuracy of the V list's closest offset.
#include <cstdint>
#include <vector>

namespace ksum::fmm {

struct FmmBox {
  std::int64_t sb = 0, se = 0; // sources: sorted rows [sb, se)
  std::int64_t tb = 0, te = 0; // targets: sorted rows [tb, te)
  std::int32_t parent = -1;
  std::int32_t first_child = -1, children = 0; // children are contiguous
  std::int32_t level = 0;
  std::int32_t octant = 0; // the Morton digit among its siblings: bit 2 x, bit 1 y, bit 0 z
  std::int32_t ix[3] = {0, 0, 0};
  bool coincident = false; // a leaf whose sources all have the same coordinates
  bool leaf() const { return children == 0; }
  std::int64_t sources() const { return se - sb; }
  std::int64_t targets() const { return te - tb; }
};

// A CSR list per target box.
struct BoxLists {
  std::vector<std::int64_t> offsets; // boxes + 1
  std::vector<std::int32_t> boxes;
  std::int64_t size(std::int32_t b) const { return offsets[b + 1] - offsets[b]; }
};

// Where build_fmm_tree spent its time (seconds).
struct FmmTreeTimes {
  double codes = 0; // the bounding cube and the Morton codes
  double sort = 0;  // the radix sorts (CPU threads or GPU, transfers included)
  double split = 0; // the sorted coordinates and the boxes
  double lists = 0; // the U, V, W, X lists
};

struct FmmTree {
  bool self = false; // targets are the sources (the t arrays alias the s arrays)
  double lo[3]{};    // the root cube's corner
  double width = 1;  // its side
  std::int32_t depth = 0;
  // Sorted coordinates (3 columns, column-major) and order[k] = the input row of sorted point k.
  std::vector<double> src, tgt;
  std::vector<std::int64_t> src_order, tgt_order;
  std::int64_t n = 0, m = 0;
  std::vector<FmmBox> boxes;             // breadth first: levels are contiguous, root is box 0
  std::vector<std::int32_t> level_begin; // boxes of level l: [level_begin[l], level_begin[l + 1])
  BoxLists v, u, w, x;                   // see above; u and w for leaves only
  std::vector<std::uint8_t> v_transform; // per V entry: the symmetry taking it to its class
  std::vector<std::uint8_t> v_class;     // per V entry: its canonical offset (0 … 15)
  FmmTreeTimes seconds;

  const double *tgt_data() const { return self ? src.data() : tgt.data(); }
  double half_side(std::int32_t level) const { return width / double(1u << level) / 2; }
  void centre(const FmmBox &b, double c[3]) const {
    const double s = width / double(1u << b.level);
    for (int a = 0; a < 3; ++a)
      c[a] = lo[a] + (b.ix[a] + 0.5) * s;
  }
};

struct FmmTreeOptions {
  std::int64_t leaf_size = 64;
  std::int64_t expansion_size = 0; // p³: the size at which an expansion beats direct evaluation
  int sort_device = -1; // ≥ 0: the Morton codes are sorted on this GPU (CUB radix sort)
  // The root cube's side over the points' bounding cube (≥ 1; corner kept): 2^{1/3} or 2^{2/3}
  // put 2 or 4 times the points of a uniform region into a box of each level, so that leaves
  // can land nearer the leaf size than the factor 8 between levels allows (BbFmm::set_points).
  double root_scale = 1;
};

// sources: n × 3 column-major (x column, y column, z column); targets likewise, or nullptr for
// targets = sources. Coordinates finite (checked by the caller).
FmmTree build_fmm_tree(const double *sources, std::int64_t n, const double *targets, std::int64_t m,
                       const FmmTreeOptions &options);

// Cuts the sorted targets into `parts` contiguous ranges at leaf boundaries, of about equal
// estimated work (several GPUs, each computing the far and near fields of its own targets):
// bounds[k] … bounds[k + 1] is part k (parts + 1 entries, bounds[0] = 0, bounds[parts] = m; a part
// may be empty). A box's work is its V pairs (P² / 25 point pairs each: a GEMM column against
// point pairs evaluated one by one), its X sources (P each), its W boxes (P per target), its U
// sources per target and its L2P (P / 8 per target); a box's work is shared by the leaves below it
// in proportion to their targets. P = p³.
std::vector<std::int64_t> split_targets(const FmmTree &tree, std::int64_t P, int parts);

// The 16 canonical V-list offsets (0 ≤ a ≤ b ≤ c ≤ 3, c ≥ 2) and the 48 signed axis permutations.
struct M2lSymmetry {
  int canonical[16][3];
  // transform t: axis i of the offset goes to axis perm[t][i] with sign flip[t][i] (0 or 1)
  int perm[48][3];
  int flip[48][3];
  // The class and transform of offset Δ (entries in [−3, 3], max |Δ| ≥ 2).
  void classify(const int d[3], int &cls, int &transform) const;
};
const M2lSymmetry &m2l_symmetry();

} // namespace ksum::fmm
