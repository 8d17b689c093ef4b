// The interpolation FMM's octree (fmm_tree.hpp): Morton codes in one cube around both point sets,
// radix sort, breadth-first splitting, then the U, V, W, X lists from a dual traversal.
#include "fmm/fmm3d/fmm_tree.hpp"
#include "fmm/fmm3d/octree.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

namespace ksum::fmm {
namespace {

constexpr int max_level = morton_bits;

int digit(std::uint64_t code, int level) {
  return static_cast<int>(code >> (3 * (max_level - level)) & 7);
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<std::uint64_t> morton_codes(const double *pts, std::int64_t n, const double lo[3],
                                        double scale) {
  const double cells = static_cast<double>((1u << max_level) - 1);
  std::vector<std::uint64_t> codes(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static) if (n > 100000)
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint64_t c = 0;
    for (int a = 0; a < 3; ++a) {
      const double q = std::clamp(std::floor((pts[a * n + i] - lo[a]) * scale), 0.0, cells);
      c |= morton_spread3(static_cast<std::uint64_t>(q)) << (2 - a);
    }
    codes[static_cast<std::size_t>(i)] = c;
  }
  return codes;
}

void sort_codes(std::vector<std::uint64_t> &codes, std::vector<std::int64_t> &order, int device) {
  if (device >= 0)
    gpu_radix_sort(codes, order, device);
  else
    radix_sort(codes, order);
}

void gather(const double *pts, std::int64_t n, const std::vector<std::int64_t> &order,
            std::vector<double> &sorted) {
  sorted.resize(static_cast<std::size_t>(3 * n));
  for (int a = 0; a < 3; ++a) {
#pragma omp parallel for schedule(static) if (n > 100000)
    for (std::int64_t k = 0; k < n; ++k)
      sorted[static_cast<std::size_t>(a * n + k)] = pts[a * n + order[static_cast<std::size_t>(k)]];
  }
}

// The end of the sub-range of [b, e) whose digit at `level` is ≤ d.
std::int64_t split_point(const std::vector<std::uint64_t> &codes, std::int64_t b, std::int64_t e,
                         int level, int d) {
  return static_cast<std::int64_t>(
      std::partition_point(codes.begin() + b, codes.begin() + e,
                           [&](std::uint64_t c) { return digit(c, level) <= d; }) -
      codes.begin());
}

// The dual traversal. Every entry it adds goes to the list of the first box of the pair or of a
// box below it, so pairs whose first boxes differ at one level can be traversed in parallel: with
// defer_level ≥ 0, same-level pairs at that level are collected in `deferred` instead.
struct ListBuilder {
  const FmmTree &t;
  std::int64_t expansion_size;
  std::vector<std::vector<std::int32_t>> v, u, w, x;
  int defer_level = -1;
  std::vector<std::pair<std::int32_t, std::int32_t>> deferred;

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
    if (A.level == defer_level) {
      deferred.emplace_back(a, b);
      return;
    }
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
  const auto nb = static_cast<std::int64_t>(lists.size());
  l.offsets.assign(lists.size() + 1, 0);
  for (std::size_t b = 0; b < lists.size(); ++b)
    l.offsets[b + 1] = l.offsets[b] + static_cast<std::int64_t>(lists[b].size());
  l.boxes.resize(static_cast<std::size_t>(l.offsets.back()));
#pragma omp parallel for schedule(static) if (nb > 1000)
  for (std::int64_t b = 0; b < nb; ++b) {
    auto &v = lists[static_cast<std::size_t>(b)];
    std::copy(v.begin(), v.end(), l.boxes.begin() + l.offsets[static_cast<std::size_t>(b)]);
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
  auto clock = std::chrono::steady_clock::now();
  double hi[3];
  for (int a = 0; a < 3; ++a) {
    double l = std::numeric_limits<double>::infinity(), h = -l;
#pragma omp parallel for schedule(static) reduction(min : l) reduction(max : h) if (n > 100000)
    for (std::int64_t i = 0; i < n; ++i) {
      l = std::min(l, sources[a * n + i]);
      h = std::max(h, sources[a * n + i]);
    }
    if (!t.self) {
#pragma omp parallel for schedule(static) reduction(min : l) reduction(max : h) if (m > 100000)
      for (std::int64_t i = 0; i < m; ++i) {
        l = std::min(l, targets[a * m + i]);
        h = std::max(h, targets[a * m + i]);
      }
    }
    t.lo[a] = l;
    hi[a] = h;
    if (!(t.lo[a] <= hi[a]))
      t.lo[a] = hi[a] = 0;
  }
  double side = 0;
  for (int a = 0; a < 3; ++a)
    side = std::max(side, hi[a] - t.lo[a]);
  if (std::isfinite(options.root_scale) && options.root_scale > 1 &&
      std::isfinite(side * options.root_scale))
    side *= options.root_scale;
  // Cells of width side / (2^21 − 1) so the largest coordinate falls in the last cell; a zero
  // extent (one point, or all identical) gets unit cells.
  const double cells = static_cast<double>((1u << max_level) - 1);
  const double cell = side > 0 ? side / cells : 1.0;
  t.width = cell * static_cast<double>(1u << max_level);
  const double scale = 1 / cell;

  auto scodes = morton_codes(sources, n, t.lo, scale);
  std::vector<std::uint64_t> tcodes;
  if (!t.self)
    tcodes = morton_codes(targets, t.m, t.lo, scale);
  t.seconds.codes = since(clock);
  clock = std::chrono::steady_clock::now();
  sort_codes(scodes, t.src_order, options.sort_device);
  if (!t.self)
    sort_codes(tcodes, t.tgt_order, options.sort_device);
  t.seconds.sort = since(clock);
  clock = std::chrono::steady_clock::now();
  gather(sources, n, t.src_order, t.src);
  if (!t.self)
    gather(targets, t.m, t.tgt_order, t.tgt);
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
  const auto nb = static_cast<std::int64_t>(t.boxes.size());
  // Leaves of identical sources (only possible at the deepest level, or with one source) are
  // summed as one point carrying their total weight, so N identical points cost O(N).
#pragma omp parallel for schedule(dynamic, 64) if (nb > 1000)
  for (std::int64_t i = 0; i < nb; ++i) {
    auto &b = t.boxes[static_cast<std::size_t>(i)];
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
  t.seconds.split = since(clock);
  clock = std::chrono::steady_clock::now();

  ListBuilder lb{t, options.expansion_size, {}, {}, {}, {}, -1, {}};
  lb.v.resize(static_cast<std::size_t>(nb));
  lb.u.resize(static_cast<std::size_t>(nb));
  lb.w.resize(static_cast<std::size_t>(nb));
  lb.x.resize(static_cast<std::size_t>(nb));
  if (n > 0 && t.m > 0) {
    // The levels above 3 serially, then the pairs of level 3 (up to 512 first boxes) in parallel,
    // grouped by their first box: the lists come out the same for any thread count.
    lb.defer_level = t.depth > 3 ? 3 : -1;
    lb.same_level(0, 0);
    auto pairs = std::move(lb.deferred);
    lb.defer_level = -1;
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const auto &p, const auto &q) { return p.first < q.first; });
    std::vector<std::size_t> groups;
    for (std::size_t k = 0; k < pairs.size(); ++k)
      if (k == 0 || pairs[k].first != pairs[k - 1].first)
        groups.push_back(k);
    groups.push_back(pairs.size());
    const auto ng = static_cast<std::int64_t>(groups.size()) - 1;
#pragma omp parallel for schedule(dynamic, 1)
    for (std::int64_t g = 0; g < ng; ++g) {
      // The group's entries go to the lists of its first box and the boxes below it only: no
      // other group touches them.
      for (auto k = groups[static_cast<std::size_t>(g)];
           k < groups[static_cast<std::size_t>(g) + 1]; ++k)
        lb.same_level(pairs[k].first, pairs[k].second);
    }
  }
  // V entries grouped by class within each target box, for the blocked M2L.
  const auto &sym = m2l_symmetry();
  std::vector<std::int64_t> voff(static_cast<std::size_t>(nb) + 1, 0);
  for (std::int64_t a = 0; a < nb; ++a)
    voff[static_cast<std::size_t>(a) + 1] =
        voff[static_cast<std::size_t>(a)] +
        static_cast<std::int64_t>(lb.v[static_cast<std::size_t>(a)].size());
  t.v_class.resize(static_cast<std::size_t>(voff.back()));
  t.v_transform.resize(static_cast<std::size_t>(voff.back()));
  // (class, symmetry) of every offset −3 … 3 per axis (a V pair's offset is within that), and per
  // box its list sorted by (class, symmetry, box) as one packed key.
  std::array<std::uint16_t, 343> offset_key{};
  for (int i = 0; i < 343; ++i) {
    const int d[3] = {i / 49 - 3, i / 7 % 7 - 3, i % 7 - 3};
    int c = 0, x = 0;
    if (std::max({std::abs(d[0]), std::abs(d[1]), std::abs(d[2])}) >= 2)
      sym.classify(d, c, x);
    offset_key[static_cast<std::size_t>(i)] = static_cast<std::uint16_t>(48 * c + x);
  }
#pragma omp parallel if (nb > 1000)
  {
    std::vector<std::uint64_t> key;
#pragma omp for schedule(dynamic, 64)
    for (std::int64_t a = 0; a < nb; ++a) {
      auto &list = lb.v[static_cast<std::size_t>(a)];
      key.resize(list.size());
      const FmmBox &A = t.boxes[static_cast<std::size_t>(a)];
      for (std::size_t k = 0; k < list.size(); ++k) {
        const FmmBox &B = t.boxes[static_cast<std::size_t>(list[k])];
        const int i =
            (A.ix[0] - B.ix[0] + 3) * 49 + (A.ix[1] - B.ix[1] + 3) * 7 + (A.ix[2] - B.ix[2] + 3);
        key[k] = (std::uint64_t{offset_key[static_cast<std::size_t>(i)]} << 32) |
                 static_cast<std::uint32_t>(list[k]);
      }
      std::sort(key.begin(), key.end());
      const auto o = static_cast<std::size_t>(voff[static_cast<std::size_t>(a)]);
      for (std::size_t k = 0; k < list.size(); ++k) {
        const auto ct = static_cast<unsigned>(key[k] >> 32);
        list[k] = static_cast<std::int32_t>(key[k] & 0xffffffffu);
        t.v_class[o + k] = static_cast<std::uint8_t>(ct / 48);
        t.v_transform[o + k] = static_cast<std::uint8_t>(ct % 48);
      }
    }
  }
  t.v = to_csr(lb.v);
  t.u = to_csr(lb.u);
  t.w = to_csr(lb.w);
  t.x = to_csr(lb.x);
  t.seconds.lists = since(clock);
  return t;
}

std::vector<std::int64_t> split_targets(const FmmTree &t, std::int64_t P, int parts) {
  parts = std::max(parts, 1);
  const auto nb = static_cast<std::int32_t>(t.boxes.size());
  const double p2 = static_cast<double>(P) * static_cast<double>(P) / 25.0;
  // Work per target, inherited down the tree (boxes are breadth first: a parent comes first).
  std::vector<double> density(static_cast<std::size_t>(nb), 0.0);
  struct Leaf {
    std::int64_t tb, te;
    double work;
  };
  std::vector<Leaf> leaves;
  for (std::int32_t b = 0; b < nb; ++b) {
    const FmmBox &B = t.boxes[static_cast<std::size_t>(b)];
    const double tg = static_cast<double>(B.targets());
    if (tg <= 0)
      continue;
    double work = static_cast<double>(t.v.size(b)) * p2;
    for (auto e = t.x.offsets[static_cast<std::size_t>(b)];
         e < t.x.offsets[static_cast<std::size_t>(b) + 1]; ++e)
      work +=
          static_cast<double>(
              t.boxes[static_cast<std::size_t>(t.x.boxes[static_cast<std::size_t>(e)])].sources()) *
          static_cast<double>(P);
    if (B.leaf()) {
      double near = 0;
      for (auto e = t.u.offsets[static_cast<std::size_t>(b)];
           e < t.u.offsets[static_cast<std::size_t>(b) + 1]; ++e)
        near += static_cast<double>(
            t.boxes[static_cast<std::size_t>(t.u.boxes[static_cast<std::size_t>(e)])].sources());
      work += tg * (near + static_cast<double>(t.w.size(b)) * static_cast<double>(P) +
                    static_cast<double>(P) / 8.0);
    }
    double &d = density[static_cast<std::size_t>(b)];
    d = (B.parent >= 0 ? density[static_cast<std::size_t>(B.parent)] : 0.0) + work / tg;
    if (B.leaf())
      leaves.push_back(Leaf{B.tb, B.te, d * tg});
  }
  std::sort(leaves.begin(), leaves.end(), [](const Leaf &a, const Leaf &b) { return a.tb < b.tb; });
  double total = 0;
  for (const Leaf &l : leaves)
    total += l.work;
  std::vector<std::int64_t> bounds(static_cast<std::size_t>(parts) + 1, t.m);
  bounds[0] = 0;
  double done = 0;
  int k = 1;
  for (const Leaf &l : leaves) {
    // A part ends before the leaf that would take it past its share.
    while (k < parts && done + 0.5 * l.work > total * k / parts) {
      bounds[static_cast<std::size_t>(k)] = l.tb;
      ++k;
    }
    done += l.work;
  }
  for (int j = 1; j <= parts; ++j) // monotone, whatever the rounding above
    bounds[static_cast<std::size_t>(j)] =
        std::max(bounds[static_cast<std::size_t>(j)], bounds[static_cast<std::size_t>(j) - 1]);
  return bounds;
}

} // namespace ksum::fmm
