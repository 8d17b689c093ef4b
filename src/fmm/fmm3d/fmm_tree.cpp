// The interpolation FMM's octree (fmm_tree.hpp): Morton codes in one cube around both point sets,
// radix sort, breadth-first splitting, then the U, V, W, X lists from a dual traversal.
#include "fmm/fmm3d/fmm_tree.hpp"
#include "fmm/fmm3d/octree.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace ksum::fmm {
namespace {

constexpr int max_level = morton_bits;

int digit(std::uint64_t code, int level) {
  return static_cast<int>(code >> (3 * (max_level - level)) & 7);
}

// Sorts one point set by code; returns the sorted codes and fills coordinates and order.
std::vector<std::uint64_t> sort_points(const double *pts, std::int64_t n, const double lo[3],
                                       double scale, std::vector<double> &sorted,
                                       std::vector<std::int64_t> &order) {
  const double cells = static_cast<double>((1u << max_level) - 1);
  std::vector<std::uint64_t> codes(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint64_t c = 0;
    for (int a = 0; a < 3; ++a) {
      const double q = std::clamp(std::floor((pts[a * n + i] - lo[a]) * scale), 0.0, cells);
      c |= morton_spread3(static_cast<std::uint64_t>(q)) << (2 - a);
    }
    codes[static_cast<std::size_t>(i)] = c;
  }
  radix_sort(codes, order);
  sorted.resize(static_cast<std::size_t>(3 * n));
  for (int a = 0; a < 3; ++a)
    for (std::int64_t k = 0; k < n; ++k)
      sorted[static_cast<std::size_t>(a * n + k)] = pts[a * n + order[static_cast<std::size_t>(k)]];
  return codes;
}

// The end of the sub-range of [b, e) whose digit at `level` is ≤ d.
std::int64_t split_point(const std::vector<std::uint64_t> &codes, std::int64_t b, std::int64_t e,
                         int level, int d) {
  return static_cast<std::int64_t>(
      std::partition_point(codes.begin() + b, codes.begin() + e,
                           [&](std::uint64_t c) { return digit(c, level) <= d; }) -
      codes.begin());
}

struct ListBuilder {
  const FmmTree &t;
  std::int64_t expansion_size;
  std::vector<std::vector<std::int32_t>> v, u, w, x;

  const FmmBox &box(std::int32_t i) const { return t.boxes[static_cast<std::size_t>(i)]; }

  static bool adjacent(const FmmBox &a, const FmmBox &b) { // same level
    for (int k = 0; k < 3; ++k)
      if (std::abs(a.ix[k] - b.ix[k]) > 1)
        return false;
    return true;
  }
  // Whether the smaller box s (deeper level) is at least its own side away from the larger box g.
  static bool separated(const FmmBox &g, const FmmBox &s) {
    const int k = s.level - g.level;
    for (int a = 0; a < 3; ++a) {
      const std::int64_t glo = static_cast<std::int64_t>(g.ix[a]) << k;
      const std::int64_t ghi = glo + (std::int64_t{1} << k); // exclusive, in s-sized cells
      if (s.ix[a] + 1 < glo || s.ix[a] > ghi)
        return true;
    }
    return false;
  }

  void same_level(std::int32_t a, std::int32_t b) {
    const FmmBox &A = box(a), &B = box(b);
    if (A.targets() == 0 || B.sources() == 0)
      return;
    if (!adjacent(A, B)) {
      v[static_cast<std::size_t>(a)].push_back(b);
    } else if (A.leaf() && B.leaf()) {
      u[static_cast<std::size_t>(a)].push_back(b);
    } else if (A.leaf()) {
      for (std::int32_t j = B.first_child; j < B.first_child + B.children; ++j)
        leaf_target(a, j);
    } else if (B.leaf()) {
      for (std::int32_t i = A.first_child; i < A.first_child + A.children; ++i)
        leaf_source(i, b);
    } else {
      for (std::int32_t i = A.first_child; i < A.first_child + A.children; ++i)
        for (std::int32_t j = B.first_child; j < B.first_child + B.children; ++j)
          same_level(i, j);
    }
  }
  // A: a target leaf; b: a smaller source box.
  void leaf_target(std::int32_t a, std::int32_t b) {
    const FmmBox &A = box(a), &B = box(b);
    if (B.sources() == 0)
      return;
    if (separated(A, B))
      (B.sources() <= expansion_size ? u : w)[static_cast<std::size_t>(a)].push_back(b);
    else if (B.leaf())
      u[static_cast<std::size_t>(a)].push_back(b);
    else
      for (std::int32_t j = B.first_child; j < B.first_child + B.children; ++j)
        leaf_target(a, j);
  }
  // a: a smaller target box; B: a source leaf.
  void leaf_source(std::int32_t a, std::int32_t b) {
    const FmmBox &A = box(a), &B = box(b);
    if (A.targets() == 0)
      return;
    if (separated(B, A))
      (A.leaf() && A.targets() <= expansion_size ? u : x)[static_cast<std::size_t>(a)].push_back(b);
    else if (A.leaf())
      u[static_cast<std::size_t>(a)].push_back(b);
    else
      for (std::int32_t i = A.first_child; i < A.first_child + A.children; ++i)
        leaf_source(i, b);
  }
};

BoxLists to_csr(std::vector<std::vector<std::int32_t>> &lists) {
  BoxLists l;
  l.offsets.assign(lists.size() + 1, 0);
  for (std::size_t b = 0; b < lists.size(); ++b)
    l.offsets[b + 1] = l.offsets[b] + static_cast<std::int64_t>(lists[b].size());
  l.boxes.reserve(static_cast<std::size_t>(l.offsets.back()));
  for (auto &v : lists) {
    l.boxes.insert(l.boxes.end(), v.begin(), v.end());
    std::vector<std::int32_t>().swap(v);
  }
  return l;
}

} // namespace

const M2lSymmetry &m2l_symmetry() {
  static const M2lSymmetry s = [] {
    M2lSymmetry r{};
    int k = 0;
    for (int c = 2; c <= 3; ++c)
      for (int b = 0; b <= c; ++b)
        for (int a = 0; a <= b; ++a) {
          r.canonical[k][0] = a;
          r.canonical[k][1] = b;
          r.canonical[k][2] = c;
          ++k;
        }
    static constexpr int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                        {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int t = 0; t < 48; ++t)
      for (int i = 0; i < 3; ++i) {
        r.perm[t][i] = perms[t / 8][i];
        r.flip[t][i] = (t >> i) & 1;
      }
    return r;
  }();
  return s;
}

void M2lSymmetry::classify(const int d[3], int &cls, int &transform) const {
  int mag[3], axes[3] = {0, 1, 2};
  int flips = 0;
  for (int i = 0; i < 3; ++i) {
    mag[i] = std::abs(d[i]);
    if (d[i] < 0)
      flips |= 1 << i;
  }
  std::stable_sort(axes, axes + 3, [&](int p, int q) { return mag[p] < mag[q]; });
  int to[3]; // axis i goes to position to[i]
  for (int k = 0; k < 3; ++k)
    to[axes[k]] = k;
  transform = -1;
  for (int t = 0; t < 48; t += 8)
    if (perm[t][0] == to[0] && perm[t][1] == to[1] && perm[t][2] == to[2])
      transform = t + flips;
  cls = -1;
  for (int k = 0; k < 16; ++k)
    if (canonical[k][0] == mag[axes[0]] && canonical[k][1] == mag[axes[1]] &&
        canonical[k][2] == mag[axes[2]])
      cls = k;
}

FmmTree build_fmm_tree(const double *sources, std::int64_t n, const double *targets, std::int64_t m,
                       const FmmTreeOptions &options) {
  FmmTree t;
  t.self = targets == nullptr;
  t.n = n;
  t.m = t.self ? n : m;
  double hi[3];
  for (int a = 0; a < 3; ++a) {
    t.lo[a] = std::numeric_limits<double>::infinity();
    hi[a] = -t.lo[a];
    for (std::int64_t i = 0; i < n; ++i) {
      t.lo[a] = std::min(t.lo[a], sources[a * n + i]);
      hi[a] = std::max(hi[a], sources[a * n + i]);
    }
    if (!t.self)
      for (std::int64_t i = 0; i < m; ++i) {
        t.lo[a] = std::min(t.lo[a], targets[a * m + i]);
        hi[a] = std::max(hi[a], targets[a * m + i]);
      }
    if (!(t.lo[a] <= hi[a]))
      t.lo[a] = hi[a] = 0;
  }
  double side = 0;
  for (int a = 0; a < 3; ++a)
    side = std::max(side, hi[a] - t.lo[a]);
  // Cells of width side / (2^21 − 1) so the largest coordinate falls in the last cell; a zero
  // extent (one point, or all identical) gets unit cells.
  const double cells = static_cast<double>((1u << max_level) - 1);
  const double cell = side > 0 ? side / cells : 1.0;
  t.width = cell * static_cast<double>(1u << max_level);
  const double scale = 1 / cell;

  const auto scodes = sort_points(sources, n, t.lo, scale, t.src, t.src_order);
  std::vector<std::uint64_t> tcodes;
  if (!t.self)
    tcodes = sort_points(targets, t.m, t.lo, scale, t.tgt, t.tgt_order);
  const auto &tc = t.self ? scodes : tcodes;

  t.boxes.push_back(FmmBox{.sb = 0, .se = n, .tb = 0, .te = t.m});
  for (std::size_t b = 0; b < t.boxes.size(); ++b) {
    const FmmBox box = t.boxes[b];
    if ((box.sources() <= options.leaf_size && box.targets() <= options.leaf_size) ||
        box.level >= max_level)
      continue;
    const int level = box.level + 1;
    const auto first = static_cast<std::int32_t>(t.boxes.size());
    std::int64_t s0 = box.sb, t0 = box.tb;
    for (int d = 0; d < 8; ++d) {
      const std::int64_t s1 = split_point(scodes, s0, box.se, level, d);
      const std::int64_t t1 = t.self ? s1 : split_point(tc, t0, box.te, level, d);
      if (s1 > s0 || t1 > t0) {
        FmmBox c{.sb = s0,
                 .se = s1,
                 .tb = t0,
                 .te = t1,
                 .parent = static_cast<std::int32_t>(b),
                 .level = level,
                 .octant = d};
        for (int a = 0; a < 3; ++a)
          c.ix[a] = 2 * box.ix[a] + ((d >> (2 - a)) & 1);
        t.boxes.push_back(c);
      }
      s0 = s1;
      t0 = t1;
    }
    t.boxes[b].first_child = first;
    t.boxes[b].children = static_cast<std::int32_t>(t.boxes.size()) - first;
    t.depth = std::max(t.depth, level);
  }
  // Leaves of identical sources (only possible at the deepest level, or with one source) are
  // summed as one point carrying their total weight, so N identical points cost O(N).
  for (auto &b : t.boxes) {
    if (!b.leaf() || b.sources() < 2)
      continue;
    b.coincident = true;
    for (int a = 0; a < 3 && b.coincident; ++a) {
      const double *x = t.src.data() + a * n;
      b.coincident = std::all_of(x + b.sb, x + b.se, [&](double v) { return v == x[b.sb]; });
    }
  }
  // Levels are contiguous (breadth first): find where each starts.
  t.level_begin.assign(static_cast<std::size_t>(t.depth) + 2, 0);
  for (std::size_t b = t.boxes.size(); b-- > 0;)
    t.level_begin[static_cast<std::size_t>(t.boxes[b].level)] = static_cast<std::int32_t>(b);
  t.level_begin[static_cast<std::size_t>(t.depth) + 1] = static_cast<std::int32_t>(t.boxes.size());

  ListBuilder lb{t, options.expansion_size, {}, {}, {}, {}};
  const std::size_t nb = t.boxes.size();
  lb.v.resize(nb);
  lb.u.resize(nb);
  lb.w.resize(nb);
  lb.x.resize(nb);
  if (n > 0 && t.m > 0)
    lb.same_level(0, 0);
  // V entries grouped by class within each target box, for the blocked M2L.
  const auto &sym = m2l_symmetry();
  std::vector<std::uint8_t> cls, tr;
  for (std::size_t a = 0; a < nb; ++a) {
    auto &list = lb.v[a];
    std::vector<std::array<int, 3>> key(list.size());
    for (std::size_t k = 0; k < list.size(); ++k) {
      const FmmBox &A = t.boxes[a], &B = t.boxes[static_cast<std::size_t>(list[k])];
      const int d[3] = {A.ix[0] - B.ix[0], A.ix[1] - B.ix[1], A.ix[2] - B.ix[2]};
      int c = 0, x = 0;
      sym.classify(d, c, x);
      key[k] = {c, x, list[k]};
    }
    std::sort(key.begin(), key.end());
    for (std::size_t k = 0; k < list.size(); ++k) {
      list[k] = key[k][2];
      cls.push_back(static_cast<std::uint8_t>(key[k][0]));
      tr.push_back(static_cast<std::uint8_t>(key[k][1]));
    }
  }
  t.v = to_csr(lb.v);
  t.u = to_csr(lb.u);
  t.w = to_csr(lb.w);
  t.x = to_csr(lb.x);
  t.v_class = std::move(cls);
  t.v_transform = std::move(tr);
  return t;
}

} // namespace ksum::fmm
