#include "fmm/fmm2d/pyramid.hpp"

#include <ksum/error.hpp>

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace ksum::fmm2d {
namespace {

template <class T> using Pt = PyrPoint<T>;

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

// One range of a half-step at the top of the pyramid: [a, b) split along `axis` at rank
// a + (b − a)/2 (sources, or targets without sources), or at the value v (targets of a box with
// sources: those below v go first).
template <class T> struct Seg {
  std::int64_t a = 0, b = 0;
  int axis = 0;
  bool by_value = false;
  T v = 0;                     // by_value: the split value; otherwise set to the median's value
  T lo = 0, hi = 0;            // the bracket of the three-way partition
  std::int64_t n0 = 0, n1 = 0; // how many fell below and inside the bracket
  std::int64_t mid = 0;        // the split position
};

// The bracket of a rank split: two order statistics of a sample of S ≈ 8 √n coordinates, 3 standard
// deviations of the sample median's rank either side, so the middle bucket holds a few per cent of
// the range and holds the median but for about one split in 400 (which then selects in the whole
// range: slower, still exact). Short ranges take the whole line (everything in the middle: one
// copy and nth_element).
template <class T> void bracket(const Pt<T> *in, Seg<T> &g) {
  const std::int64_t n = g.b - g.a;
  constexpr T inf = std::numeric_limits<T>::infinity();
  if (g.by_value) { // below v, equal to v (middle), above: the split is after the first bucket
    g.lo = g.hi = g.v;
    return;
  }
  if (n < 512) {
    g.lo = -inf, g.hi = inf;
    return;
  }
  const int S = static_cast<int>(
      std::min<double>({16384.0, n / 4.0, 8 * std::sqrt(static_cast<double>(n))}));
  const int W = static_cast<int>(std::ceil(1.5 * std::sqrt(static_cast<double>(S))));
  std::vector<T> smp(static_cast<std::size_t>(S));
  std::uint64_t h = 0x9e3779b97f4a7c15ull ^ static_cast<std::uint64_t>(n);
  for (int i = 0; i < S; ++i) {
    h ^= h >> 33, h *= 0xff51afd7ed558ccdull, h ^= h >> 33, h += 0x9e3779b97f4a7c15ull;
    smp[i] = in[g.a + static_cast<std::int64_t>(h % static_cast<std::uint64_t>(n))].c[g.axis];
  }
  const int k = S / 2;
  std::nth_element(smp.begin(), smp.begin() + (k - W), smp.end());
  g.lo = smp[k - W];
  std::nth_element(smp.begin() + (k - W), smp.begin() + (k + W), smp.end());
  g.hi = smp[k + W];
}

// Bucket 0 below the bracket, 1 inside, 2 above (lo ≤ hi), without a branch.
template <class T> int bucket(const Seg<T> &g, T x) { return int(x >= g.lo) + int(x > g.hi); }

// After the three-way partition into out: the split position, and for a rank split the exact
// median by nth_element inside the middle bucket (or the whole range if the bracket missed).
template <class T> void finish_split(Pt<T> *out, Seg<T> &g) {
  if (g.by_value) {
    g.mid = g.a + g.n0;
    return;
  }
  const std::int64_t m = g.a + (g.b - g.a) / 2;
  g.mid = m;
  if (g.b == g.a)
    return;
  const int axis = g.axis;
  const auto less = [axis](const Pt<T> &u, const Pt<T> &v) { return u.c[axis] < v.c[axis]; };
  if (m - g.a >= g.n0 && m - g.a < g.n0 + g.n1)
    std::nth_element(out + g.a + g.n0, out + m, out + g.a + g.n0 + g.n1, less);
  else
    std::nth_element(out + g.a, out + m, out + g.b, less);
  g.v = out[m].c[axis];
}

// One range on one thread: in[a, b) split into out[a, b) in one pass without branches. Bucket 0
// fills out from the front, bucket 2 from the back (the current point is also written to both free
// ends, where a later point or the middle bucket overwrites it), the middle bucket is compacted
// into the front of `in` (already read there) and copied between the two afterwards.
template <class T> void split_one(Pt<T> *in, Pt<T> *out, Seg<T> &g) {
  if (g.b == g.a) {
    g.n0 = g.n1 = 0;
    g.mid = g.a;
    return;
  }
  bracket(in, g);
  Pt<T> *f = out + g.a, *bk = out + g.b - 1, *mid = in + g.a;
  const int axis = g.axis;
  const T lo = g.lo, hi = g.hi;
  for (std::int64_t i = g.a; i < g.b; ++i) {
    const Pt<T> e = in[i];
    const bool below = e.c[axis] < lo, above = e.c[axis] > hi;
    *f = e;
    *bk = e;
    *mid = e;
    f += below;
    bk -= above;
    mid += !(below || above);
  }
  g.n0 = f - (out + g.a);
  g.n1 = mid - (in + g.a);
  std::copy(in + g.a, mid, f);
  finish_split(out, g);
}

// Splits every segment of in[0, n) (the segments cover it in order) into out: a three-way
// partition around each segment's bracket (one parallel pass counts, one scatters; the points
// land where split_one puts them), then nth_element inside the middle bucket only. Every level
// of the pyramid's top thus costs two streaming passes per half-step instead of a serial
// selection per box; the order written depends on the input alone, never on the thread count.
template <class T>
void split_segments(const Pt<T> *in, Pt<T> *out, std::int64_t n, std::vector<Seg<T>> &segs,
                    int nt) {
  const std::int64_t ns = static_cast<std::int64_t>(segs.size());
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
  for (std::int64_t g = 0; g < ns; ++g)
    bracket(in, segs[g]);
  std::vector<std::int64_t> starts(ns);
  for (std::int64_t g = 0; g < ns; ++g)
    starts[g] = segs[g].a;
  std::vector<std::int64_t> cnt(3 * static_cast<std::size_t>(ns) * nt, 0);
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num(), p = omp_get_num_threads();
    const std::int64_t i0 = n * t / p, i1 = n * (t + 1) / p;
    std::int64_t *c = cnt.data() + 3 * ns * t;
    // The last segment starting at or before i0 holds i0 (empty ones before it are skipped).
    const std::int64_t g0 =
        i0 < n ? std::upper_bound(starts.begin(), starts.end(), i0) - starts.begin() - 1 : ns;
    for (std::int64_t g = g0, i = i0; i < i1; ++g) {
      const Seg<T> &sg = segs[g];
      std::int64_t ge = 0, gt = 0; // at or above lo, above hi
      const std::int64_t i_start = i;
      for (const std::int64_t e = std::min(i1, sg.b); i < e; ++i)
        ge += in[i].c[sg.axis] >= sg.lo, gt += in[i].c[sg.axis] > sg.hi;
      c[3 * g] += (i - i_start) - ge, c[3 * g + 1] += ge - gt, c[3 * g + 2] += gt;
    }
#pragma omp barrier
#pragma omp single
    {
      // Where each thread's part of each bucket starts: buckets 0 and 1 after the buckets below
      // and the same bucket of the threads before; bucket 2 backwards from the segment's end (the
      // order split_one writes, so both give the same pyramid).
      for (std::int64_t g = 0; g < ns; ++g) {
        std::int64_t tot[3] = {0, 0, 0};
        for (int u = 0; u < p; ++u)
          for (int q = 0; q < 3; ++q)
            tot[q] += cnt[3 * (ns * u + g) + q];
        std::int64_t run[3] = {segs[g].a, segs[g].a + tot[0], segs[g].b - 1};
        for (int u = 0; u < p; ++u)
          for (int q = 0; q < 3; ++q) {
            const std::int64_t v = cnt[3 * (ns * u + g) + q];
            cnt[3 * (ns * u + g) + q] = run[q];
            run[q] += q == 2 ? -v : v;
          }
        segs[g].n0 = tot[0], segs[g].n1 = tot[1];
      }
    }
    for (std::int64_t g = g0, i = i0; i < i1; ++g) {
      const Seg<T> &sg = segs[g];
      for (const std::int64_t e = std::min(i1, sg.b); i < e; ++i) {
        const int q = bucket(sg, in[i].c[sg.axis]);
        std::int64_t &o = c[3 * g + q];
        out[o] = in[i];
        o += q == 2 ? -1 : 1;
      }
    }
  }
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
  for (std::int64_t g = 0; g < ns; ++g)
    finish_split(out, segs[g]);
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

  // Sources in work[0] or work[1] (`cs` says which holds them now), targets in work[2] or work[3].
  for (auto &w : pyr.work)
    if (w.size() < static_cast<std::size_t>(std::max(n, m)))
      w.resize(static_cast<std::size_t>(std::max(n, m)));
  Pt<T> *sp[2] = {pyr.work[0].data(), pyr.work[1].data()};
  Pt<T> *tp[2] = {pyr.work[2].data(), pyr.work[3].data()};
  int cs = 0, ct = 0;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (std::int64_t i = 0; i < n; ++i)
    sp[0][i] = {{sources[i].real(), sources[i].imag()}, static_cast<std::int32_t>(i)};
#pragma omp parallel for num_threads(nt) schedule(static)
  for (std::int64_t i = 0; i < m; ++i)
    tp[0][i] = {{targets[i].real(), targets[i].imag()}, static_cast<std::int32_t>(i)};

  pyr.seconds_copy = lap();
  // Partition level by level; the boxes of a level are independent (seed 004 Paper IV §3.1).
  std::vector<std::int64_t> soff{0, n}, toff{0, m};
  std::vector<Seg<T>> sg, tg;
  for (int l = 0; l + 1 < levels; ++l) {
    const std::int64_t nb = level_size(l);
    std::vector<std::int64_t> so(4 * nb + 1), to(4 * nb + 1);
    so[4 * nb] = n;
    to[4 * nb] = m;
    const auto first_axis = [](const Bbox<T> &box) {
      return box.empty() || box.hi[0] - box.lo[0] >= box.hi[1] - box.lo[1] ? 0 : 1;
    };
    if (nb < nt) {
      // Few boxes: each half-step splits every box at once, on all threads.
      std::vector<int> first(nb);
      for (std::int64_t k = 0; k < nb; ++k) {
        Bbox<T> box = bbox_par(sp[cs], soff[k], soff[k + 1], nt);
        box.add(bbox_par(tp[ct], toff[k], toff[k + 1], nt));
        first[k] = first_axis(box);
      }
      // Half-step h splits the ranges bounded by `cut` (the box edges, then also their
      // midpoints) along the box's first axis, then the other.
      std::vector<std::int64_t> scut(soff), tcut(toff);
      for (int h = 0; h < 2; ++h) {
        const std::int64_t per = h == 0 ? 1 : 2, nr = nb * per;
        sg.assign(nr, {});
        tg.assign(nr, {});
        for (std::int64_t r = 0; r < nr; ++r) {
          const int axis = h == 0 ? first[r] : 1 - first[r / 2];
          sg[r].a = scut[r], sg[r].b = scut[r + 1], sg[r].axis = axis;
          tg[r].a = tcut[r], tg[r].b = tcut[r + 1], tg[r].axis = axis;
        }
        split_segments(sp[cs], sp[1 - cs], n, sg, nt);
        cs = 1 - cs;
        if (m > 0) {
          for (std::int64_t r = 0; r < nr; ++r)
            if (sg[r].b > sg[r].a)
              tg[r].by_value = true, tg[r].v = sg[r].v;
          split_segments(tp[ct], tp[1 - ct], m, tg, nt);
          ct = 1 - ct;
        }
        // Each range [a, b) becomes [a, mid) and [mid, b).
        std::vector<std::int64_t> ns, nts;
        for (std::int64_t r = 0; r < nr; ++r) {
          ns.push_back(sg[r].a), ns.push_back(sg[r].mid);
          nts.push_back(tg[r].a), nts.push_back(m > 0 ? tg[r].mid : tg[r].a);
        }
        ns.push_back(n), nts.push_back(m);
        scut.swap(ns);
        tcut.swap(nts);
      }
      so.swap(scut);
      to.swap(tcut);
    } else {
      // Many boxes: a box per thread, its two half-steps from one array into the other and back.
      Pt<T> *s0 = sp[cs], *s1 = sp[1 - cs], *t0 = tp[ct], *t1 = tp[1 - ct];
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
      for (std::int64_t k = 0; k < nb; ++k) {
        Seg<T> g;
        g.a = soff[k], g.b = soff[k + 1];
        Bbox<T> box = bbox_of(s0, g.a, g.b);
        box.add(bbox_of(t0, toff[k], toff[k + 1]));
        g.axis = first_axis(box);
        split_one(s0, s1, g);
        Seg<T> tgv;
        tgv.a = toff[k], tgv.b = toff[k + 1], tgv.axis = g.axis;
        tgv.by_value = g.b > g.a, tgv.v = g.v, tgv.mid = tgv.a;
        if (m > 0)
          split_one(t0, t1, tgv);
        Seg<T> h[2], th[2];
        h[0].a = g.a, h[0].b = g.mid, h[1].a = g.mid, h[1].b = g.b;
        th[0].a = tgv.a, th[0].b = tgv.mid, th[1].a = tgv.mid, th[1].b = tgv.b;
        for (int j = 0; j < 2; ++j) {
          h[j].axis = th[j].axis = 1 - g.axis;
          split_one(s1, s0, h[j]);
          th[j].by_value = h[j].b > h[j].a, th[j].v = h[j].v, th[j].mid = th[j].a;
          if (m > 0)
            split_one(t1, t0, th[j]);
        }
        so[4 * k] = g.a, so[4 * k + 1] = h[0].mid, so[4 * k + 2] = g.mid, so[4 * k + 3] = h[1].mid;
        to[4 * k] = tgv.a, to[4 * k + 1] = th[0].mid, to[4 * k + 2] = tgv.mid,
        to[4 * k + 3] = th[1].mid;
      }
    }
    soff.swap(so);
    toff.swap(to);
  }

  pyr.seconds_split = lap();
  const Pt<T> *s = sp[cs], *t = tp[ct];
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
    sb[leaf0 + k] = bbox_of(s, soff[k], soff[k + 1]);
    tb[leaf0 + k] = self ? sb[leaf0 + k] : bbox_of(t, toff[k], toff[k + 1]);
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
