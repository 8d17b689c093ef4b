#pragma once
// A k-d tree for k-nearest-neighbour queries restricted to points of rank ≥ r: seed 000 §3.1 step 4
// asks, for the m-th point of a random order, for its q nearest among the points not yet visited.
// Every node keeps the largest rank below it, so subtrees without candidates are skipped; the
// queries are then independent of each other and run in parallel. Build O(N log N) (median
// splits along the widest axis); ties in distance are broken by the smaller index, so the result
// does not depend on the traversal.
#include <ksum/table.hpp>

#include <cstdint>
#include <utility>
#include <vector>

namespace ksum::spatial {

class KdTree {
public:
  // rank: one entry per point (its position in the visiting order); empty: every point has rank 0.
  KdTree(const Table<double> &points, std::vector<std::int64_t> rank = {}, int leaf_size = 16);

  // The k nearest points to x among those with rank ≥ min_rank, as (squared distance, index)
  // sorted by distance then index. Fewer when fewer candidates exist. `out` is reused.
  void nearest(const double *x, int k, std::int64_t min_rank,
               std::vector<std::pair<double, std::int64_t>> &out) const;

  std::int64_t size() const { return n_; }
  std::int64_t dim() const { return d_; }

private:
  struct Node {
    std::int64_t begin, end;  // range in the permuted arrays
    std::int64_t left, right; // children, −1 for a leaf
    std::int64_t max_rank;
  };
  std::int64_t build(std::int64_t begin, std::int64_t end, int depth);
  void search(std::int64_t node, const double *x, int k, std::int64_t min_rank,
              std::vector<std::pair<double, std::int64_t>> &heap) const;
  double box_distance2(std::int64_t node, const double *x) const;

  std::int64_t n_ = 0, d_ = 0;
  int leaf_ = 16;
  std::vector<double> xyz_;        // permuted points, d coordinates per point
  std::vector<std::int64_t> id_;   // original index of permuted point
  std::vector<std::int64_t> rank_; // rank of permuted point
  std::vector<Node> nodes_;
  std::vector<double> lo_, hi_; // per node bounding box (d values each)
};

} // namespace ksum::spatial
