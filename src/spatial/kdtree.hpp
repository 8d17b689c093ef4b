#pragma once
// A k-d tree for k-nearest-neighbour queries restricted to points of rank ≥ r: seed 000 §3.1 step 4
// asks, for the m-th point of a random order, for its q nearest among the points not yet visited.
// Every node keeps the largest rank below it, so subtrees without candidates are skipped; the
// queries are then independent of each other and run in parallel. Build O(N log N) (median
// splits along the widest axis); ties in distance are broken by the smaller index, so the result
// does not depend on the traversal (nor on the tree's shape).
//
// Points of rank below the query's bound still sit in the leaves, and once most of them are dead a
// query would scan mostly dead points. The tree is therefore built in levels: level 0 holds every
// point, level p ≥ 1 only the points of rank ≥ t_p, where t_p is chosen so that each level holds
// about half of the points of the one before. A query with bound r searches the level with the
// largest t_p ≤ r, of which at least about half the points are alive; the levels together hold
// about 2N points. Within a leaf the points are sorted by decreasing rank, so a scan stops at the
// first dead one. (How a squared distance is rounded, which decides exact ties: kdtree.cpp.)
#include <ksum/table.hpp>

#include <cstdint>
#include <utility>
#include <vector>

namespace ksum::spatial {

namespace detail {
struct KdNode {
  std::int64_t begin, end; // range in the level's permuted arrays
  std::int64_t right;      // right child (the left one is the next node), −1 for a leaf
  std::int64_t max_rank;
};
struct KdLevel {
  std::int64_t min_rank = 0;      // the level holds every point of rank ≥ min_rank
  std::int64_t n = 0;             // its points
  std::vector<double> xs;         // coordinate c of the point at tree position i: xs[c n + i]
  std::vector<std::int64_t> id;   // original index of the point at each tree position
  std::vector<std::int64_t> rank; // its rank
  std::vector<KdNode> nodes;      // pre-order: node v's left child is v + 1
  std::vector<double> box;        // node v's bounding box: lo at box[2 d v], hi at box[2 d v + d]
};
} // namespace detail

class KdTree {
public:
  // rank: one entry per point (its position in the visiting order); empty: every point has rank 0.
  // threads: OpenMP threads for the build (1: serial).
  KdTree(const Table<double> &points, std::vector<std::int64_t> rank = {}, int leaf_size = 16,
         int threads = 1);

  // The k nearest points to x among those with rank ≥ min_rank, as (squared distance, index)
  // sorted by distance then index. Fewer when fewer candidates exist. `out` is reused. coords
  // (optional): their coordinates, d per point in the order of `out` (from the tree's copy, which
  // the search has just read).
  void nearest(const double *x, int k, std::int64_t min_rank,
               std::vector<std::pair<double, std::int64_t>> &out,
               std::vector<double> *coords = nullptr) const;

  std::int64_t size() const { return n_; }
  std::int64_t dim() const { return d_; }
  // Every point once, in the order of the full tree's leaves: consecutive entries are close in
  // space, so queries issued in this order find the tree (and the points) in cache. Point
  // leaf_order()[t] has rank leaf_rank(t) and coordinates leaf_coord(t, 0 … d − 1), read from the
  // tree in the same order.
  const std::vector<std::int64_t> &leaf_order() const { return levels_.front().id; }
  std::int64_t leaf_rank(std::int64_t t) const { return levels_.front().rank[t]; }
  double leaf_coord(std::int64_t t, std::int64_t k) const { return levels_.front().xs[k * n_ + t]; }

private:
  std::int64_t n_ = 0, d_ = 0;
  int leaf_ = 16;
  std::vector<detail::KdLevel> levels_; // by increasing min_rank; level 0 holds every point
};

} // namespace ksum::spatial
