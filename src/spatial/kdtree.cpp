#include "spatial/kdtree.hpp"

#include <algorithm>
#include <numeric>

namespace ksum::spatial {

KdTree::KdTree(const Table<double> &points, std::vector<std::int64_t> rank, int leaf_size)
    : n_(points.rows()), d_(points.cols()), leaf_(std::max(1, leaf_size)) {
  xyz_.resize(static_cast<std::size_t>(n_ * d_));
  id_.resize(n_);
  std::iota(id_.begin(), id_.end(), std::int64_t{0});
  rank_ = rank.empty() ? std::vector<std::int64_t>(n_, 0) : std::move(rank);
  // Sort indices by the tree's median splits on a row-major copy, then permute once.
  std::vector<double> rows(static_cast<std::size_t>(n_ * d_));
  for (std::int64_t k = 0; k < d_; ++k)
    for (std::int64_t i = 0; i < n_; ++i)
      rows[i * d_ + k] = points(i, k);
  xyz_ = std::move(rows);
  nodes_.reserve(static_cast<std::size_t>(2 * (n_ / leaf_ + 1)));
  if (n_ > 0)
    build(0, n_, 0);
  // Permute coordinates and ranks into tree order.
  std::vector<double> pts(static_cast<std::size_t>(n_ * d_));
  std::vector<std::int64_t> rk(n_);
  for (std::int64_t i = 0; i < n_; ++i) {
    for (std::int64_t k = 0; k < d_; ++k)
      pts[i * d_ + k] = xyz_[id_[i] * d_ + k];
    rk[i] = rank_[id_[i]];
  }
  xyz_ = std::move(pts);
  rank_ = std::move(rk);
  // Boxes and largest ranks, children before parents (children have larger node numbers).
  lo_.assign(nodes_.size() * d_, 0.0);
  hi_.assign(nodes_.size() * d_, 0.0);
  for (std::int64_t v = static_cast<std::int64_t>(nodes_.size()) - 1; v >= 0; --v) {
    Node &nd = nodes_[v];
    double *lo = &lo_[v * d_], *hi = &hi_[v * d_];
    if (nd.left < 0) {
      for (std::int64_t k = 0; k < d_; ++k)
        lo[k] = hi[k] = xyz_[nd.begin * d_ + k];
      nd.max_rank = rank_[nd.begin];
      for (std::int64_t i = nd.begin; i < nd.end; ++i) {
        for (std::int64_t k = 0; k < d_; ++k) {
          lo[k] = std::min(lo[k], xyz_[i * d_ + k]);
          hi[k] = std::max(hi[k], xyz_[i * d_ + k]);
        }
        nd.max_rank = std::max(nd.max_rank, rank_[i]);
      }
    } else {
      const Node &a = nodes_[nd.left], &b = nodes_[nd.right];
      for (std::int64_t k = 0; k < d_; ++k) {
        lo[k] = std::min(lo_[nd.left * d_ + k], lo_[nd.right * d_ + k]);
        hi[k] = std::max(hi_[nd.left * d_ + k], hi_[nd.right * d_ + k]);
      }
      nd.max_rank = std::max(a.max_rank, b.max_rank);
    }
  }
}

// While building, xyz_ is in original order and id_ is the permutation being sorted.
std::int64_t KdTree::build(std::int64_t begin, std::int64_t end, int depth) {
  const std::int64_t v = static_cast<std::int64_t>(nodes_.size());
  nodes_.push_back({begin, end, -1, -1, 0});
  if (end - begin <= leaf_ || depth > 100)
    return v;
  // Split along the axis of widest extent.
  std::int64_t axis = 0;
  double widest = -1;
  for (std::int64_t k = 0; k < d_; ++k) {
    double lo = xyz_[id_[begin] * d_ + k], hi = lo;
    for (std::int64_t i = begin; i < end; ++i) {
      const double c = xyz_[id_[i] * d_ + k];
      lo = std::min(lo, c);
      hi = std::max(hi, c);
    }
    if (hi - lo > widest) {
      widest = hi - lo;
      axis = k;
    }
  }
  if (widest <= 0) // all points equal: a leaf whatever its size
    return v;
  const std::int64_t mid = begin + (end - begin) / 2;
  std::nth_element(
      id_.begin() + begin, id_.begin() + mid, id_.begin() + end,
      [&](std::int64_t a, std::int64_t b) { return xyz_[a * d_ + axis] < xyz_[b * d_ + axis]; });
  const std::int64_t l = build(begin, mid, depth + 1);
  const std::int64_t r = build(mid, end, depth + 1);
  nodes_[v].left = l;
  nodes_[v].right = r;
  return v;
}

double KdTree::box_distance2(std::int64_t node, const double *x) const {
  double s = 0;
  const double *lo = &lo_[node * d_], *hi = &hi_[node * d_];
  for (std::int64_t k = 0; k < d_; ++k) {
    const double e = x[k] < lo[k] ? lo[k] - x[k] : x[k] > hi[k] ? x[k] - hi[k] : 0.0;
    s += e * e;
  }
  return s;
}

void KdTree::search(std::int64_t node, const double *x, int k, std::int64_t min_rank,
                    std::vector<std::pair<double, std::int64_t>> &heap) const {
  const Node &nd = nodes_[node];
  if (nd.max_rank < min_rank)
    return;
  if (static_cast<int>(heap.size()) == k && box_distance2(node, x) > heap.front().first)
    return;
  if (nd.left < 0) {
    for (std::int64_t i = nd.begin; i < nd.end; ++i) {
      if (rank_[i] < min_rank)
        continue;
      double s = 0;
      for (std::int64_t c = 0; c < d_; ++c) {
        const double e = xyz_[i * d_ + c] - x[c];
        s += e * e;
      }
      const std::pair<double, std::int64_t> cand{s, id_[i]};
      if (static_cast<int>(heap.size()) < k) {
        heap.push_back(cand);
        std::push_heap(heap.begin(), heap.end());
      } else if (cand < heap.front()) {
        std::pop_heap(heap.begin(), heap.end());
        heap.back() = cand;
        std::push_heap(heap.begin(), heap.end());
      }
    }
    return;
  }
  // Nearer child first.
  const double dl = box_distance2(nd.left, x), dr = box_distance2(nd.right, x);
  if (dl <= dr) {
    search(nd.left, x, k, min_rank, heap);
    search(nd.right, x, k, min_rank, heap);
  } else {
    search(nd.right, x, k, min_rank, heap);
    search(nd.left, x, k, min_rank, heap);
  }
}

void KdTree::nearest(const double *x, int k, std::int64_t min_rank,
                     std::vector<std::pair<double, std::int64_t>> &out) const {
  out.clear();
  if (k <= 0 || n_ == 0)
    return;
  search(0, x, k, min_rank, out);
  std::sort_heap(out.begin(), out.end());
}

} // namespace ksum::spatial
