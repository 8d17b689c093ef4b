#include "fmm/fmm2d/pyramid.hpp"

#include <ksum/error.hpp>

#include <fmt/format.h>
#include <omp.h>
#include <parallel/algorithm>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace ksum::fmm2d {
namespace {

template <class T> struct Pt {
  T c[2];
  std::int32_t i;
};

template <class T> struct Bbox {
  T lo[2] = {std::numeric_limits<T>::infinity(), std::numeric_limits<T>::infinity()};
  T hi[2] = {-std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity()};
  void add(const T *c) {
    for (int d = 0; d < 2; ++d) {
      lo[d] = std::min(lo[d], c[d]);
      hi[d] = std::max(hi[d], c[d]);
    }
  }
  void add(const Bbox &b) {
    for (int d = 0; d < 2; ++d) {
      lo[d] = std::min(lo[d], b.lo[d]);
      hi[d] = std::max(hi[d], b.hi[d]);
    }
  }
  bool empty() const { return !(lo[0] <= hi[0]); }
};

// The median of a long range on many threads: two pivots bracketing the median of a sample of
// 4096 points, one parallel three-way partition (below, between, above) through `buf`, then an exact
// selection inside the small middle bucket (about 5 % of the points). The result is the same exact
// rank split as std::nth_element; if the sample missed (the median lies outside the bracket), the
// parallel selection of libstdc++'s parallel mode finishes the job.
template <class T>
void parallel_select(Pt<T> *s, std::int64_t a, std::int64_t b, std::int64_t m, int axis, int nt,
                     std::vector<Pt<T>> &buf) {
  const auto less = [axis](const Pt<T> &u, const Pt<T> &v) { return u.c[axis] < v.c[axis]; };
  const std::int64_t n = b - a;
  constexpr int S = 4096, W = 160; // ~5 standard deviations of the sample's median rank
  std::vector<T> smp(S);
  std::uint64_t h = 0x9e3779b97f4a7c15ull ^ static_cast<std::uint64_t>(n);
  for (int i = 0; i < S; ++i) {
    h ^= h >> 33, h *= 0xff51afd7ed558ccdull, h ^= h >> 33, h += 0x9e3779b97f4a7c15ull;
    smp[i] = s[a + static_cast<std::int64_t>(h % static_cast<std::uint64_t>(n))].c[axis];
  }
  std::sort(smp.begin(), smp.end());
  const int k = static_cast<int>((static_cast<double>(m - a) / n) * S);
  const T lo = smp[std::max(0, k - W)], hi = smp[std::min(S - 1, k + W)];
  if (static_cast<std::int64_t>(buf.size()) < n)
    buf.resize(static_cast<std::size_t>(n));
  std::vector<std::int64_t> cnt(3 * static_cast<std::size_t>(nt) + 3, 0);
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num(), p = omp_get_num_threads();
    const std::int64_t i0 = a + n * t / p, i1 = a + n * (t + 1) / p;
    std::int64_t c[3] = {0, 0, 0};
    for (std::int64_t i = i0; i < i1; ++i) {
      const T x = s[i].c[axis];
      ++c[x < lo ? 0 : (x > hi ? 2 : 1)];
    }
    for (int q = 0; q < 3; ++q)
      cnt[3 * (t + 1) + q] = c[q];
#pragma omp barrier
#pragma omp single
    {
      // Exclusive offsets: bucket q of thread t starts after all of bucket < q and bucket q of
      // threads < t.
      std::int64_t tot[3] = {0, 0, 0};
      for (int u = 1; u <= p; ++u)
        for (int q = 0; q < 3; ++q)
          tot[q] += cnt[3 * u + q];
      std::int64_t run[3] = {0, tot[0], tot[0] + tot[1]};
      for (int u = 1; u <= p; ++u)
        for (int q = 0; q < 3; ++q) {
          const std::int64_t v = cnt[3 * u + q];
          cnt[3 * u + q] = run[q];
          run[q] += v;
        }
      cnt[0] = tot[0], cnt[1] = tot[1];
    }
    std::int64_t o[3] = {cnt[3 * (t + 1)], cnt[3 * (t + 1) + 1], cnt[3 * (t + 1) + 2]};
    for (std::int64_t i = i0; i < i1; ++i) {
      const T x = s[i].c[axis];
      buf[o[x < lo ? 0 : (x > hi ? 2 : 1)]++] = s[i];
    }
#pragma omp barrier
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < n; ++i)
      s[a + i] = buf[i];
  }
  const std::int64_t n0 = cnt[0], n1 = cnt[1];
  if (m - a >= n0 && m - a < n0 + n1)
    std::nth_element(s + a + n0, s + m, s + a + n0 + n1, less);
  else
    __gnu_parallel::nth_element(s + a, s + m, s + b, less);
}

// Splits sources [a, b) at their median along `axis` (rank split: a quarter of the parent's
// sources per child, even for repeated coordinates) and the targets [ta, tb) at the same value.
// Without sources the targets are split at their own median. Returns the two split positions.
// Long ranges at the top of the pyramid (fewer boxes than threads) use parallel_select.
constexpr std::int64_t kParallelSplit = 50000;

template <class T>
std::pair<std::int64_t, std::int64_t> split(Pt<T> *s, std::int64_t a, std::int64_t b, Pt<T> *t,
                                            std::int64_t ta, std::int64_t tb, int axis,
                                            int parallel, std::vector<Pt<T>> &buf) {
  const auto less = [axis](const Pt<T> &u, const Pt<T> &v) { return u.c[axis] < v.c[axis]; };
  if (b > a) {
    const std::int64_t m = a + (b - a) / 2;
    if (parallel > 1 && b - a >= kParallelSplit)
      parallel_select(s, a, b, m, axis, parallel, buf);
    else
      std::nth_element(s + a, s + m, s + b, less);
    const T v = s[m].c[axis];
    std::int64_t mt = ta;
    if (tb > ta)
      mt = std::partition(t + ta, t + tb, [axis, v](const Pt<T> &u) { return u.c[axis] < v; }) - t;
    return {m, mt};
  }
  if (tb > ta) {
    const std::int64_t mt = ta + (tb - ta) / 2;
    if (parallel > 1 && tb - ta >= kParallelSplit)
      parallel_select(t, ta, tb, mt, axis, parallel, buf);
    else
      std::nth_element(t + ta, t + mt, t + tb, less);
    return {a, mt};
  }
  return {a, ta};
}

template <class T> Bbox<T> bbox_of(const Pt<T> *p, std::int64_t a, std::int64_t b) {
  Bbox<T> box;
  for (std::int64_t i = a; i < b; ++i)
    box.add(p[i].c);
  return box;
}

template <class T> Bbox<T> bbox_par(const Pt<T> *p, std::int64_t a, std::int64_t b, int nt) {
  if (b - a < 200000)
    return bbox_of(p, a, b);
  T lo0 = std::numeric_limits<T>::infinity(), lo1 = lo0, hi0 = -lo0, hi1 = -lo0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(min : lo0, lo1)               \
    reduction(max : hi0, hi1)
  for (std::int64_t i = a; i < b; ++i) {
    lo0 = std::min(lo0, p[i].c[0]), hi0 = std::max(hi0, p[i].c[0]);
    lo1 = std::min(lo1, p[i].c[1]), hi1 = std::max(hi1, p[i].c[1]);
  }
  Bbox<T> box;
  box.lo[0] = lo0, box.lo[1] = lo1, box.hi[0] = hi0, box.hi[1] = hi1;
  return box;
}

template <class T> void to_circle(const Bbox<T> &b, std::complex<T> &centre, T &radius) {
  if (b.empty()) {
    centre = {0, 0};
    radius = 0;
    return;
  }
  centre = {(b.lo[0] + b.hi[0]) / 2, (b.lo[1] + b.hi[1]) / 2};
  radius = std::hypot((b.hi[0] - b.lo[0]) / 2, (b.hi[1] - b.lo[1]) / 2);
  // The rounded centre may sit an ulp off the true middle: widen a box of non-zero size by the
  // coordinates' rounding, so every point lies inside its circle (boxes a few ulps wide exist in
  // clusters of narrow float data).
  if (radius > 0)
    radius += 4 * std::numeric_limits<T>::epsilon() *
              std::max({std::abs(b.lo[0]), std::abs(b.hi[0]), std::abs(b.lo[1]), std::abs(b.hi[1])});
}

} // namespace

template <class T>
void build_pyramid(Pyramid<T> &pyr, const std::complex<T> *sources, std::int64_t n,
                   const std::complex<T> *targets, std::int64_t m, int levels, double theta,
                   int threads) {
  if (levels < 1 || levels > 15)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("fmm2d: {} levels; the pyramid has 1 … 15 levels", levels));
  const bool self = targets == nullptr;
  if (self)
    m = 0;
  if (n > std::numeric_limits<std::int32_t>::max() || m > std::numeric_limits<std::int32_t>::max())
    throw Error(ErrorCode::invalid_argument,
                fmt::format("fmm2d: {} sources and {} targets; at most 2^31 − 1 of each", n, m));
  const int nt = threads > 0 ? threads : omp_get_max_threads();
  using clk = std::chrono::steady_clock;
  auto tick = clk::now();
  const auto lap = [&tick]() {
    const auto now = clk::now();
    const double s = std::chrono::duration<double>(now - tick).count();
    tick = now;
    return s;
  };
  pyr.levels = levels;
  pyr.self = self;

  std::vector<Pt<T>> s(static_cast<std::size_t>(n)), t(static_cast<std::size_t>(m));
#pragma omp parallel for num_threads(nt) schedule(static)
  for (std::int64_t i = 0; i < n; ++i)
    s[i] = {{sources[i].real(), sources[i].imag()}, static_cast<std::int32_t>(i)};
#pragma omp parallel for num_threads(nt) schedule(static)
  for (std::int64_t i = 0; i < m; ++i)
    t[i] = {{targets[i].real(), targets[i].imag()}, static_cast<std::int32_t>(i)};

  pyr.seconds_copy = lap();
  std::vector<Pt<T>> buf; // scratch of parallel_select (used by one box at a time)
  // Partition level by level; the boxes of a level are independent (seed 004 Paper IV §3.1).
  std::vector<std::int64_t> soff{0, n}, toff{0, m};
  for (int l = 0; l + 1 < levels; ++l) {
    const std::int64_t nb = level_size(l);
    std::vector<std::int64_t> so(4 * nb + 1), to(4 * nb + 1);
    so[4 * nb] = n;
    to[4 * nb] = m;
    // Few boxes: one at a time, each split in parallel; many: a box per thread.
    const bool few = nb < nt;
    const int par = few ? nt : 1;
    const auto split_box = [&](std::int64_t k) {
      const std::int64_t a = soff[k], b = soff[k + 1], ta = toff[k], tb = toff[k + 1];
      Bbox<T> box = few ? bbox_par(s.data(), a, b, nt) : bbox_of(s.data(), a, b);
      box.add(few ? bbox_par(t.data(), ta, tb, nt) : bbox_of(t.data(), ta, tb));
      const int first = box.empty() || box.hi[0] - box.lo[0] >= box.hi[1] - box.lo[1] ? 0 : 1;
      const auto [sm, tm] = split(s.data(), a, b, t.data(), ta, tb, first, par, buf);
      const auto [s0, t0] = split(s.data(), a, sm, t.data(), ta, tm, 1 - first, par, buf);
      const auto [s1, t1] = split(s.data(), sm, b, t.data(), tm, tb, 1 - first, par, buf);
      so[4 * k] = a, so[4 * k + 1] = s0, so[4 * k + 2] = sm, so[4 * k + 3] = s1;
      to[4 * k] = ta, to[4 * k + 1] = t0, to[4 * k + 2] = tm, to[4 * k + 3] = t1;
    };
    if (few) {
      for (std::int64_t k = 0; k < nb; ++k)
        split_box(k);
    } else {
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
      for (std::int64_t k = 0; k < nb; ++k)
        split_box(k);
    }
    soff.swap(so);
    toff.swap(to);
  }

  pyr.seconds_split = lap();
  pyr.src.resize(n);
  pyr.src_index.resize(n);
  pyr.tgt.resize(m);
  pyr.tgt_index.resize(m);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    pyr.src[i] = {s[i].c[0], s[i].c[1]};
    pyr.src_index[i] = s[i].i;
  }
#pragma omp parallel for num_threads(nt) schedule(static)
  for (std::int64_t i = 0; i < m; ++i) {
    pyr.tgt[i] = {t[i].c[0], t[i].c[1]};
    pyr.tgt_index[i] = t[i].i;
  }
  pyr.src_off = soff;
  pyr.tgt_off = self ? soff : toff;

  // Boxes shrunk to their points: leaves from the points, parents as unions of their children.
  const std::int64_t nbox = level_first(levels), nleaf = level_size(levels - 1);
  std::vector<Bbox<T>> sb(nbox), tb(nbox);
  const std::int64_t leaf0 = level_first(levels - 1);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (std::int64_t k = 0; k < nleaf; ++k) {
    sb[leaf0 + k] = bbox_of(s.data(), soff[k], soff[k + 1]);
    tb[leaf0 + k] = self ? sb[leaf0 + k] : bbox_of(t.data(), toff[k], toff[k + 1]);
  }
  pyr.src_count.assign(nbox, 0);
  pyr.tgt_count.assign(nbox, 0);
  for (std::int64_t k = 0; k < nleaf; ++k) {
    pyr.src_count[leaf0 + k] = soff[k + 1] - soff[k];
    pyr.tgt_count[leaf0 + k] = pyr.tgt_off[k + 1] - pyr.tgt_off[k];
  }
  for (int l = levels - 2; l >= 0; --l) {
    const std::int64_t f = level_first(l), fc = level_first(l + 1);
    for (std::int64_t k = 0; k < level_size(l); ++k)
      for (int c = 0; c < 4; ++c) {
        sb[f + k].add(sb[fc + 4 * k + c]);
        tb[f + k].add(tb[fc + 4 * k + c]);
        pyr.src_count[f + k] += pyr.src_count[fc + 4 * k + c];
        pyr.tgt_count[f + k] += pyr.tgt_count[fc + 4 * k + c];
      }
  }
  pyr.src_centre.resize(nbox);
  pyr.tgt_centre.resize(nbox);
  pyr.src_radius.resize(nbox);
  pyr.tgt_radius.resize(nbox);
  for (std::int64_t b = 0; b < nbox; ++b) {
    to_circle(sb[b], pyr.src_centre[b], pyr.src_radius[b]);
    to_circle(tb[b], pyr.tgt_centre[b], pyr.tgt_radius[b]);
  }
  pyr.src_scale.resize(nbox);
  pyr.tgt_scale.resize(nbox);
  // A zero-size box (identical points) takes 2^-10 of its parent's radius, or its parent's scale
  // when the parent has zero size too: every scale ratio that appears in M2M, L2L (child over
  // parent) and M2L (scale over distance, which the θ-criterion bounds by the parent's size) stays
  // at most about 1, and a chain of zero-size boxes does not shrink its scale to an underflow.
  const auto scale_of = [](T radius, T parent_radius, T parent_scale) {
    if (radius > 0)
      return radius;
    if (parent_scale <= 0)
      return T(1);
    return parent_radius > 0 ? parent_radius * T(1.0 / 1024) : parent_scale;
  };
  for (int l = 0; l < levels; ++l) {
    const std::int64_t f = level_first(l);
    for (std::int64_t k = 0; k < level_size(l); ++k) {
      const std::int64_t b = f + k, parent = l > 0 ? level_first(l - 1) + k / 4 : -1;
      pyr.src_scale[b] = scale_of(pyr.src_radius[b], parent >= 0 ? pyr.src_radius[parent] : T(0),
                                  parent >= 0 ? pyr.src_scale[parent] : T(0));
      pyr.tgt_scale[b] = scale_of(pyr.tgt_radius[b], parent >= 0 ? pyr.tgt_radius[parent] : T(0),
                                  parent >= 0 ? pyr.tgt_scale[parent] : T(0));
    }
  }

  // Connectivity, level by level; each target box builds its own lists.
  pyr.weak_off.assign(levels, {});
  pyr.strong_off.assign(levels, {});
  pyr.weak.assign(levels, {});
  pyr.strong.assign(levels, {});
  pyr.weak_off[0] = {0, 0};
  const bool root = pyr.src_count[0] > 0 && pyr.tgt_count[0] > 0 &&
                    !(pyr.src_radius[0] == 0 && pyr.tgt_radius[0] == 0 &&
                      pyr.src_centre[0] == pyr.tgt_centre[0]);
  pyr.strong_off[0] = {0, root ? 1 : 0};
  if (root)
    pyr.strong[0] = {0};
  pyr.m2l_count = 0;
  double gap = std::numeric_limits<double>::infinity();
  for (int l = 1; l < levels; ++l) {
    const std::int64_t nb = level_size(l), f = level_first(l);
    std::vector<std::vector<std::int32_t>> wk(nb), st(nb);
    const auto &poff = pyr.strong_off[l - 1];
    const auto &plist = pyr.strong[l - 1];
    double lgap = std::numeric_limits<double>::infinity();
#pragma omp parallel for num_threads(nt) schedule(dynamic, 64) reduction(min : lgap)
    for (std::int64_t b = 0; b < nb; ++b) {
      if (pyr.tgt_count[f + b] == 0)
        continue;
      const std::complex<T> ct = pyr.tgt_centre[f + b];
      const double rt = pyr.tgt_radius[f + b];
      const std::int64_t parent = b / 4;
      for (std::int64_t e = poff[parent]; e < poff[parent + 1]; ++e)
        for (std::int64_t c = 4 * std::int64_t(plist[e]); c < 4 * std::int64_t(plist[e]) + 4; ++c) {
          if (pyr.src_count[f + c] == 0)
            continue;
          const double rs = pyr.src_radius[f + c];
          const std::complex<double> dz(pyr.src_centre[f + c] - ct);
          const double d = std::sqrt(dz.real() * dz.real() + dz.imag() * dz.imag());
          const double big = std::max(rt, rs), small = std::min(rt, rs);
          if (d > 0 && big + theta * small <= theta * d) {
            wk[b].push_back(static_cast<std::int32_t>(c));
            lgap = std::min(lgap, d - big - small);
          } else if (!(d == 0 && rt == 0 && rs == 0)) {
            // Coincident zero-size boxes are dropped: every pair between them is at distance 0
            // and contributes 0, at this level and below.
            st[b].push_back(static_cast<std::int32_t>(c));
          }
        }
    }
    gap = std::min(gap, lgap);
    auto &wo = pyr.weak_off[l];
    auto &so = pyr.strong_off[l];
    wo.assign(nb + 1, 0);
    so.assign(nb + 1, 0);
    for (std::int64_t b = 0; b < nb; ++b) {
      wo[b + 1] = wo[b] + static_cast<std::int64_t>(wk[b].size());
      so[b + 1] = so[b] + static_cast<std::int64_t>(st[b].size());
    }
    pyr.weak[l].resize(wo[nb]);
    pyr.strong[l].resize(so[nb]);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (std::int64_t b = 0; b < nb; ++b) {
      std::copy(wk[b].begin(), wk[b].end(), pyr.weak[l].begin() + wo[b]);
      std::copy(st[b].begin(), st[b].end(), pyr.strong[l].begin() + so[b]);
    }
    pyr.m2l_count += wo[nb];
  }
  pyr.min_weak_gap = gap;

  const int lf = levels - 1;
  const std::int64_t fl = level_first(lf);
  std::int64_t pairs = 0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : pairs)
  for (std::int64_t b = 0; b < nleaf; ++b)
    for (std::int64_t e = pyr.strong_off[lf][b]; e < pyr.strong_off[lf][b + 1]; ++e)
      pairs += pyr.tgt_count[fl + b] * pyr.src_count[fl + pyr.strong[lf][e]];
  pyr.p2p_pairs = pairs;
  pyr.seconds_connect = lap();
}

template void build_pyramid(Pyramid<float> &, const std::complex<float> *, std::int64_t,
                            const std::complex<float> *, std::int64_t, int, double, int);
template void build_pyramid(Pyramid<double> &, const std::complex<double> *, std::int64_t,
                            const std::complex<double> *, std::int64_t, int, double, int);

} // namespace ksum::fmm2d
