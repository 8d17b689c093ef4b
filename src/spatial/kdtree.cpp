#include "spatial/kdtree.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>

namespace ksum::spatial {

namespace {

using detail::KdLevel;
using detail::KdNode;
using Pair = std::pair<double, std::int64_t>;

// Levels below this many points are not worth their own tree.
constexpr std::int64_t min_level_points = 256;
// Subtrees of more points than this are built as separate OpenMP tasks.
constexpr std::int64_t task_grain = 16384;

// The nodes of a level over positions [begin, end), pre-order: a node of more than `leaf` points
// splits at its middle position, so the shape depends on the count alone.
std::int64_t make_nodes(std::vector<KdNode> &nodes, std::int64_t begin, std::int64_t end,
                        int leaf) {
  const std::int64_t v = static_cast<std::int64_t>(nodes.size());
  nodes.push_back({begin, end, -1, 0});
  if (end - begin > leaf) {
    const std::int64_t mid = begin + (end - begin) / 2;
    make_nodes(nodes, begin, mid, leaf);
    const std::int64_t r = make_nodes(nodes, mid, end, leaf);
    nodes[v].right = r;
  }
  return v;
}

// A point while building, D > 0 coordinates with its index and rank: the median selections move
// whole records, so every pass over a range is sequential.
template <int D> struct Record {
  double x[D];
  std::int64_t id, rank;
};

// The build's working arrays. D > 0: records; D = 0 (other dimensions): rows of d coordinates in
// `a`, indices and ranks, with scratch of the same size for a selection on (coordinate, position)
// keys. Disjoint subtrees touch disjoint ranges of every array.
template <int D> struct Builder {
  std::int64_t d;
  std::vector<KdNode> &nodes;
  std::vector<double> &box;
  std::vector<Record<(D > 0 ? D : 1)>> rec;
  std::vector<double> a, ta;
  std::vector<std::int64_t> id, tid, rk, trk;
  std::vector<Pair> keys;

  // n points; fetch(i, x, id, rank) gives the i-th one's coordinates, index and rank.
  template <class F>
  Builder(std::int64_t dim, std::vector<KdNode> &nd, std::vector<double> &bx, std::int64_t n,
          const F &fetch)
      : d(dim), nodes(nd), box(bx) {
    if constexpr (D > 0) {
      rec.resize(n);
      for (std::int64_t i = 0; i < n; ++i)
        fetch(i, rec[i].x, rec[i].id, rec[i].rank);
    } else {
      a.resize(static_cast<std::size_t>(n * d));
      ta.resize(static_cast<std::size_t>(n * d));
      id.resize(n);
      rk.resize(n);
      tid.resize(n);
      trk.resize(n);
      keys.resize(n);
      for (std::int64_t i = 0; i < n; ++i)
        fetch(i, a.data() + i * d, id[i], rk[i]);
    }
  }

  std::int64_t dim() const {
    if constexpr (D > 0)
      return D;
    else
      return d;
  }
  double coord(std::int64_t i, std::int64_t k) const {
    if constexpr (D > 0)
      return rec[i].x[k];
    else
      return a[i * d + k];
  }
  std::int64_t index(std::int64_t i) const {
    if constexpr (D > 0)
      return rec[i].id;
    else
      return id[i];
  }
  std::int64_t rank(std::int64_t i) const {
    if constexpr (D > 0)
      return rec[i].rank;
    else
      return rk[i];
  }
  void swap_points(std::int64_t i, std::int64_t j) {
    if constexpr (D > 0) {
      std::swap(rec[i], rec[j]);
    } else {
      for (std::int64_t k = 0; k < d; ++k)
        std::swap(a[i * d + k], a[j * d + k]);
      std::swap(id[i], id[j]);
      std::swap(rk[i], rk[j]);
    }
  }
  // Positions [b, e) rearranged so that the one at mid has the median coordinate along `axis`,
  // none before it larger and none after it smaller.
  void select(std::int64_t b, std::int64_t mid, std::int64_t e, std::int64_t axis) {
    if constexpr (D > 0) {
      std::nth_element(
          rec.begin() + b, rec.begin() + mid, rec.begin() + e,
          [axis](const Record<D> &p, const Record<D> &q) { return p.x[axis] < q.x[axis]; });
    } else {
      for (std::int64_t i = b; i < e; ++i)
        keys[i] = {a[i * d + axis], i};
      std::nth_element(keys.begin() + b, keys.begin() + mid, keys.begin() + e,
                       [](const Pair &p, const Pair &q) { return p.first < q.first; });
      for (std::int64_t i = b; i < e; ++i) {
        const std::int64_t s = keys[i].second;
        for (std::int64_t k = 0; k < d; ++k)
          ta[i * d + k] = a[s * d + k];
        tid[i] = id[s];
        trk[i] = rk[s];
      }
      std::copy(ta.begin() + b * d, ta.begin() + e * d, a.begin() + b * d);
      std::copy(tid.begin() + b, tid.begin() + e, id.begin() + b);
      std::copy(trk.begin() + b, trk.begin() + e, rk.begin() + b);
    }
  }

  // Node v: its bounding box and largest rank; then the median split along the widest axis of
  // the box (a leaf instead sorts its points by decreasing rank), and the children.
  void split(std::int64_t v) {
    KdNode &nd = nodes[v];
    const std::int64_t b = nd.begin, e = nd.end, dd = dim();
    // (In local arrays for the usual dimensions, which the compiler keeps in registers.)
    constexpr std::int64_t small = 8;
    double lo_s[small], hi_s[small];
    const bool local = dd <= small;
    double *lo = local ? lo_s : &box[2 * dd * v], *hi = local ? hi_s : lo + dd;
    for (std::int64_t k = 0; k < dd; ++k)
      lo[k] = hi[k] = coord(b, k);
    std::int64_t mr = rank(b);
    for (std::int64_t i = b; i < e; ++i) {
      for (std::int64_t k = 0; k < dd; ++k) {
        lo[k] = std::min(lo[k], coord(i, k));
        hi[k] = std::max(hi[k], coord(i, k));
      }
      mr = std::max(mr, rank(i));
    }
    if (local) {
      std::copy(lo, lo + dd, &box[2 * dd * v]);
      std::copy(hi, hi + dd, &box[2 * dd * v + dd]);
    }
    nd.max_rank = mr;
    if (nd.right < 0) {
      // Insertion sort by decreasing rank (a leaf holds a few points).
      for (std::int64_t i = b + 1; i < e; ++i)
        for (std::int64_t j = i; j > b && rank(j - 1) < rank(j); --j)
          swap_points(j, j - 1);
      return;
    }
    std::int64_t axis = 0;
    double widest = -1;
    for (std::int64_t k = 0; k < dd; ++k)
      if (hi[k] - lo[k] > widest) {
        widest = hi[k] - lo[k];
        axis = k;
      }
    const std::int64_t mid = b + (e - b) / 2;
    if (widest > 0) // else all points are equal and any split will do
      select(b, mid, e, axis);
    const std::int64_t l = v + 1, r = nd.right;
#pragma omp task if (mid - b > task_grain) default(shared) firstprivate(l)
    split(l);
#pragma omp task if (e - mid > task_grain) default(shared) firstprivate(r)
    split(r);
  }
};

// p (at tree position at) into the sorted candidates best[0 .. size), their positions alongside
// (p is smaller than best[size − 1] when full).
inline void insert_sorted(Pair *best, std::int64_t *pos, int &size, int k, Pair p,
                          std::int64_t at) {
  int j = size < k ? size++ : size - 1;
  while (j > 0 && p < best[j - 1]) {
    best[j] = best[j - 1];
    pos[j] = pos[j - 1];
    --j;
  }
  best[j] = p;
  pos[j] = at;
}

// a b + c, rounded once where the machine has fused multiply-adds, else twice.
inline double fma_or_add(double a, double b, double c) {
#if defined(__FMA__) || defined(__aarch64__)
  return std::fma(a, b, c);
#else
  const double p = a * b;
  return p + c;
#endif
}

// One query on one level. D > 0: the dimension known at compile time; 0: lv's, at run time.
template <int D> struct Search {
  const KdLevel &lv;
  std::int64_t d;
  const double *x;
  int k;
  std::int64_t min_rank;
  Pair *best;        // the candidates so far, sorted
  std::int64_t *pos; // their positions in the level
  int size = 0;

  std::int64_t dim() const {
    if constexpr (D > 0)
      return D;
    else
      return d;
  }
  bool full() const { return size == k; }

  // A lower bound of the squared distance from x to any point of node v. The box's faces are
  // points' coordinates, so the differences below never exceed a point's; the sum may round
  // differently from leaf()'s (a compiler may fuse its multiply-adds), which the factor
  // 1 − 2⁻⁴⁰ covers: the bound stays below every point's distance as leaf() computes it.
  double box_distance2(std::int64_t v) const {
    const std::int64_t dd = dim();
    const double *lo = &lv.box[2 * dd * v], *hi = lo + dd;
    double s = 0;
    for (std::int64_t c = 0; c < dd; ++c) {
      const double e = x[c] < lo[c] ? lo[c] - x[c] : x[c] > hi[c] ? x[c] - hi[c] : 0.0;
      s += e * e;
    }
    return s * (1.0 - 0x1p-40);
  }

  void leaf(const KdNode &nd) {
    const std::int64_t dd = dim(), n = lv.n;
    const std::int64_t *rank = lv.rank.data(), *id = lv.id.data();
    // Sorted by decreasing rank: the live points come first (counted without a branch per point).
    std::int64_t live = 0;
    for (std::int64_t i = nd.begin; i < nd.end; ++i)
      live += rank[i] >= min_rank;
    const std::int64_t end = nd.begin + live;
    constexpr std::int64_t block = 32; // at most the bits of `near` below
    double s[block], sq[block];
    for (std::int64_t b = nd.begin; b < end; b += block) {
      const std::int64_t cnt = std::min(block, end - b);
      const double *xs = lv.xs.data() + b;
      // s = (e_0² + e_1²) + …, every square rounded and added in coordinate order, except that
      // in an odd dimension the last square is fused with its addition where the machine has
      // fused multiply-adds: the rounding of the scalar loop that this replaces, as GCC compiled
      // it (pairs of coordinates vectorised, the odd one out in a scalar fused multiply-add), so
      // that ties in distance are broken as before. The squares go through memory (`sq`) in
      // loops of their own, so that no compiler fuses a multiply into the adds.
      if (dd == 0)
        std::fill(s, s + cnt, 0.0);
      else
        for (std::int64_t i = 0; i < cnt; ++i) {
          const double e = xs[i] - x[0];
          s[i] = e * e;
        }
      const std::int64_t fused = dd % 2 == 1 && dd > 1 ? dd - 1 : dd; // the fused coordinate
      for (std::int64_t c = 1; c < dd; ++c) {
        const double *xc = xs + c * n, xq = x[c];
        if (c == fused) {
          for (std::int64_t i = 0; i < cnt; ++i) {
            const double e = xc[i] - xq;
            s[i] = fma_or_add(e, e, s[i]);
          }
          continue;
        }
        for (std::int64_t i = 0; i < cnt; ++i) {
          const double e = xc[i] - xq;
          sq[i] = e * e;
        }
        for (std::int64_t i = 0; i < cnt; ++i)
          s[i] += sq[i];
      }
      std::int64_t i = 0;
      for (; i < cnt && size < k; ++i)
        insert_sorted(best, pos, size, k, {s[i], id[b + i]}, b + i);
      // The few points within the k-th candidate's distance, as bits (no branch per point).
      const double bound = best[k - 1].first;
      std::uint32_t near = 0;
      for (std::int64_t t = i; t < cnt; ++t)
        near |= static_cast<std::uint32_t>(s[t] <= bound) << t;
      while (near != 0) {
        const int t = std::countr_zero(near);
        near &= near - 1;
        const Pair p{s[t], id[b + t]};
        if (p < best[k - 1])
          insert_sorted(best, pos, size, k, p, b + t);
      }
    }
  }

  void visit(std::int64_t v) {
    const KdNode &nd = lv.nodes[v];
    if (nd.right < 0) {
      leaf(nd);
      return;
    }
    std::int64_t a = v + 1, b = nd.right;
    constexpr double inf = std::numeric_limits<double>::infinity();
    const bool la = lv.nodes[a].max_rank >= min_rank, lb = lv.nodes[b].max_rank >= min_rank;
    double da = la ? box_distance2(a) : inf, db = lb ? box_distance2(b) : inf;
    if (!la && !lb)
      return;
    if (db < da) {
      std::swap(a, b);
      std::swap(da, db);
    }
    // Nearer child first; a child is skipped when it has no live point (distance ∞) or its box
    // is farther than the k-th candidate (ties are visited: a smaller index may win).
    if (da != inf && (!full() || da <= best[k - 1].first))
      visit(a);
    if (db != inf && (!full() || db <= best[k - 1].first))
      visit(b);
  }
};

template <int D, class F>
void build_level(KdLevel &lv, std::int64_t d, int leaf, std::int64_t n, const F &fetch) {
  lv.n = n;
  lv.nodes.clear();
  lv.id.clear();
  if (n == 0)
    return;
  lv.nodes.reserve(static_cast<std::size_t>(2 * (n / leaf + 1)));
  make_nodes(lv.nodes, 0, n, leaf);
  lv.box.assign(lv.nodes.size() * 2 * d, 0.0);
  Builder<D> bd(d, lv.nodes, lv.box, n, fetch);
#pragma omp taskgroup
  bd.split(0);
  lv.xs.resize(static_cast<std::size_t>(n * d));
  lv.id.resize(n);
  lv.rank.resize(n);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t k = 0; k < d; ++k)
      lv.xs[k * n + i] = bd.coord(i, k);
    lv.id[i] = bd.index(i);
    lv.rank[i] = bd.rank(i);
  }
}

template <class F>
void build_level(KdLevel &lv, std::int64_t d, int leaf, std::int64_t n, const F &fetch) {
  switch (d) {
  case 1:
    return build_level<1>(lv, d, leaf, n, fetch);
  case 2:
    return build_level<2>(lv, d, leaf, n, fetch);
  case 3:
    return build_level<3>(lv, d, leaf, n, fetch);
  case 4:
    return build_level<4>(lv, d, leaf, n, fetch);
  default:
    return build_level<0>(lv, d, leaf, n, fetch);
  }
}

template <int D>
void search_level(const KdLevel &lv, std::int64_t d, const double *x, int k, std::int64_t min_rank,
                  std::vector<Pair> &out, std::vector<double> *coords) {
  out.resize(k);
  std::int64_t pos_small[64];
  std::vector<std::int64_t> pos_large(k > 64 ? k : 0);
  std::int64_t *pos = k > 64 ? pos_large.data() : pos_small;
  Search<D> s{lv, d, x, k, min_rank, out.data(), pos};
  s.visit(0);
  out.resize(s.size);
  if (coords) {
    coords->resize(static_cast<std::size_t>(s.size * d));
    for (int i = 0; i < s.size; ++i)
      for (std::int64_t c = 0; c < d; ++c)
        (*coords)[i * d + c] = lv.xs[c * lv.n + pos[i]];
  }
}

} // namespace

KdTree::KdTree(const Table<double> &points, std::vector<std::int64_t> rank, int leaf_size,
               int threads)
    : n_(points.rows()), d_(points.cols()), leaf_(std::max(1, leaf_size)) {
  if (rank.empty())
    rank.assign(n_, 0);
  // Level thresholds: each level holds about half the points of the one before.
  std::vector<std::int64_t> thresholds;
  {
    std::vector<std::int64_t> r(rank);
    std::int64_t cnt = n_;
    while (true) {
      const std::int64_t target = (cnt + 1) / 2;
      if (target < min_level_points)
        break;
      std::nth_element(r.begin(), r.begin() + (target - 1), r.begin() + cnt,
                       std::greater<std::int64_t>());
      const std::int64_t t = r[target - 1];
      const std::int64_t kept =
          std::partition(r.begin(), r.begin() + cnt, [t](std::int64_t v) { return v >= t; }) -
          r.begin();
      if (kept > cnt - cnt / 4 || (!thresholds.empty() && t <= thresholds.back()))
        break; // ties in rank: no progress
      thresholds.push_back(t);
      cnt = kept;
    }
  }
  levels_.resize(1 + thresholds.size());
  levels_[0].min_rank = std::numeric_limits<std::int64_t>::min();
  for (std::size_t p = 0; p < thresholds.size(); ++p)
    levels_[p + 1].min_rank = thresholds[p];
#pragma omp parallel num_threads(std::max(1, threads)) if (threads > 1)
#pragma omp single
  {
    build_level(levels_[0], d_, leaf_, n_,
                [&](std::int64_t i, double *x, std::int64_t &id, std::int64_t &rk) {
                  for (std::int64_t k = 0; k < d_; ++k)
                    x[k] = points(i, k);
                  id = i;
                  rk = rank[i];
                });
    // The other levels from level 0's arrays, in its order (already coherent in space).
    const KdLevel &all = levels_[0];
    for (std::size_t p = 1; p < levels_.size(); ++p) {
#pragma omp task default(shared) firstprivate(p)
      {
        const std::int64_t t = levels_[p].min_rank;
        std::vector<std::int64_t> pos;
        for (std::int64_t i = 0; i < n_; ++i)
          if (all.rank[i] >= t)
            pos.push_back(i);
        build_level(levels_[p], d_, leaf_, static_cast<std::int64_t>(pos.size()),
                    [&](std::int64_t i, double *x, std::int64_t &id, std::int64_t &rk) {
                      const std::int64_t s = pos[i];
                      for (std::int64_t k = 0; k < d_; ++k)
                        x[k] = all.xs[k * n_ + s];
                      id = all.id[s];
                      rk = all.rank[s];
                    });
      }
    }
  }
}

void KdTree::nearest(const double *x, int k, std::int64_t min_rank,
                     std::vector<std::pair<double, std::int64_t>> &out,
                     std::vector<double> *coords) const {
  out.clear();
  if (coords)
    coords->clear();
  if (k <= 0 || n_ == 0)
    return;
  // The smallest level that holds every candidate.
  std::size_t p = levels_.size() - 1;
  while (levels_[p].min_rank > min_rank)
    --p;
  const KdLevel &lv = levels_[p];
  if (lv.nodes.empty() || lv.nodes[0].max_rank < min_rank)
    return;
  switch (d_) {
  case 1:
    return search_level<1>(lv, d_, x, k, min_rank, out, coords);
  case 2:
    return search_level<2>(lv, d_, x, k, min_rank, out, coords);
  case 3:
    return search_level<3>(lv, d_, x, k, min_rank, out, coords);
  default:
    return search_level<0>(lv, d_, x, k, min_rank, out, coords);
  }
}

} // namespace ksum::spatial
