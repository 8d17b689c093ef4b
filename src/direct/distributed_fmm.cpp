// The 3D FMM over MPI ranks: a Morton partition, a locally essential tree of points and
// pseudo-particles, and the single-process FMM on each rank (distributed_fmm.hpp).
#include "direct/distributed_fmm.hpp"

#include "fmm/fmm3d/bbfmm.hpp"
#include "fmm/fmm3d/cell_multipoles.hpp"
#include "fmm/fmm3d/chebyshev.hpp"
#include "fmm/fmm3d/fmm_gpu.hpp"
#include "fmm/fmm3d/octree.hpp"
#include "kernels/kernel_defs.hpp"

#include <ksum/error.hpp>
#include <ksum/kernels.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <numeric>
#include <omp.h>

namespace ksum::detail {

namespace {

constexpr int key_bits = fmm::morton_bits; // per axis: keys of 63 bits
constexpr int hist_level = 6;              // the partition's histogram: 64³ cells
constexpr int domain_level = 4;            // a rank's domain as seen by the others: its 16³ cells
constexpr std::int64_t leaf_points = 64;   // a cell this small that is not separated goes as points

std::uint64_t compact(std::uint64_t v) { // the inverse of fmm::morton_spread3
  v &= 0x1249249249249249ULL;
  v = (v ^ (v >> 2)) & 0x10c30c30c30c30c3ULL;
  v = (v ^ (v >> 4)) & 0x100f00f00f00f00fULL;
  v = (v ^ (v >> 8)) & 0x1f0000ff0000ffULL;
  v = (v ^ (v >> 16)) & 0x1f00000000ffffULL;
  v = (v ^ (v >> 32)) & 0x1fffffULL;
  return v;
}

// Per-rank counts of items, as counts of the k values each item travels as.
std::vector<std::int64_t> scaled(std::vector<std::int64_t> counts, std::int64_t k) {
  for (auto &c : counts)
    c *= k;
  return counts;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

// One set of points as partitioned (the sources; the targets where they are separate): the
// caller's row of each point sent (grouped by destination rank), the counts both ways, and this
// rank's points sorted by key with their slot in the received order.
struct Parted {
  std::int64_t n_in = 0, n_own = 0;
  std::vector<std::int64_t> send_order, send_counts, recv_counts, sorted_to_recv;
  std::vector<std::uint64_t> keys; // sorted
  std::vector<double> pts;         // n_own × 3, column-major, in key order
};

template <class T> struct DistributedFmm<T>::Impl {
  Communicator comm;
  DirectOptions opt;
  DistributedFmmStats stats;
  double lo[3] = {0, 0, 0}, side = 1; // the bounding cube of every rank's points
  bool separate = false;              // targets of their own (else the sources are the targets)
  Parted S, Tg;                       // the sources; the separate targets
  std::vector<std::uint64_t> split;   // rank r owns the keys in [split[r − 1], split[r])
  const Parted &targets() const { return separate ? Tg : S; }
  // The essential trees this rank sends: per receiver, items (a range of points or a pseudo cell:
  // its points, centre, half side and order, as the multipole routines take them).
  struct Item {
    std::int64_t begin, end; // points [begin, end), or …
    std::int64_t cell;       // … pseudo cell (≥ 0)
    std::int64_t offset = 0; // its first source in this rank's send buffer (set by build_let)
  };
  std::vector<fmm::CellRange> cells;
  std::vector<std::vector<Item>> items;
  std::vector<std::int64_t> let_send, let_recv; // sources per rank
  std::int64_t n_let = 0;
  std::vector<std::unique_ptr<fmm::Chebyshev>> cheb; // by order
  std::unique_ptr<DirectSum<T>> local;
  // One rank: the single-process FMM's self-sum at the whole tolerance, no partition, no exchange
  // (the same sums as the essential-tree path with nothing to receive, without its permutations
  // and separate-target mode: 3.7 s against 5.0 s at 10⁸ points on one H200).
  std::unique_ptr<DirectSum<T>> alone;
  // execute's buffers, kept between executes (a solver's many products reuse them; at 10⁸ points
  // allocating and first touching them cost more than the exchanges).
  detail::uninit_vector<double> sbuf, rbuf, lbuf, lrecv, back;
  Table<double> ws;
  Table<T> lw;
  std::vector<std::vector<double>> W;
  // The pseudo cells' weights on the GPU when the local FMM runs there (null: on the CPU).
  std::unique_ptr<fmm::GpuCellMultipoles> gpu_cells;
  bool executed = false; // an execute since the last partition (its times are the costs)
  double self_term = 0;  // K(0) of a non-singular kernel, taken off each point's own term

  const fmm::Chebyshev &chebyshev(int p) {
    if (cheb.size() <= static_cast<std::size_t>(p))
      cheb.resize(static_cast<std::size_t>(p) + 1);
    auto &c = cheb[static_cast<std::size_t>(p)];
    if (!c)
      c = std::make_unique<fmm::Chebyshev>(p);
    return *c;
  }

  std::uint64_t key_of(const double *x) const {
    std::uint64_t k = 0;
    for (int a = 0; a < 3; ++a) {
      const double q = std::floor((x[a] - lo[a]) / side * double(1 << key_bits));
      const auto v = static_cast<std::uint64_t>(std::clamp(q, 0.0, double((1 << key_bits) - 1)));
      k |= fmm::morton_spread3(v) << a;
    }
    return k;
  }

  int owner_of(std::uint64_t key) const {
    return static_cast<int>(std::upper_bound(split.begin(), split.end(), key) - split.begin());
  }
  // x: the sources; y: the separate targets (null: none); each point's cost (empty: 1 each).
  void partition(const Table<T> &x, const Table<T> *y, const std::vector<double> &cost_x,
                 const std::vector<double> &cost_y);
  // Sends each of x's points (keys: mine) to its range's rank, and sorts what arrives.
  void distribute(const Table<T> &x, const std::vector<std::uint64_t> &mine, Parted &out);
  void build_let();
  // partition and build_let, every failure agreed.
  void setup(const Table<T> &x, const Table<T> *y, const std::vector<double> &cost_x,
             const std::vector<double> &cost_y) {
    auto t0 = std::chrono::steady_clock::now();
    comm.agree(capture([&] { partition(x, y, cost_x, cost_y); }));
    stats.seconds_partition = since(t0) - stats.seconds_walk;
    t0 = std::chrono::steady_clock::now();
    comm.agree(capture([&] { build_let(); }));
    stats.seconds_let = since(t0) - stats.seconds_local_setup;
  }
};

template <class T>
void DistributedFmm<T>::Impl::partition(const Table<T> &x, const Table<T> *y,
                                        const std::vector<double> &cost_x,
                                        const std::vector<double> &cost_y) {
  const int P = comm.size();
  const int nt = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  S.n_in = x.rows();
  Tg.n_in = y ? y->rows() : 0;
  // The bounding cube of all ranks' points (sources and targets): (−min, max) per axis.
  double b[6];
  for (int a = 0; a < 3; ++a) {
    double nlo = -std::numeric_limits<double>::infinity(), hi = nlo;
    for (const Table<T> *t : {&x, y}) {
      if (!t)
        continue;
      const std::int64_t n = t->rows();
#pragma omp parallel for schedule(static) num_threads(nt) reduction(max : nlo, hi)
      for (std::int64_t i = 0; i < n; ++i) {
        nlo = std::max(nlo, -double((*t)(i, a)));
        hi = std::max(hi, double((*t)(i, a)));
      }
    }
    b[a] = nlo;
    b[3 + a] = hi;
  }
  comm.allreduce_max(b, 6);
  side = 0;
  for (int a = 0; a < 3; ++a) {
    lo[a] = std::isfinite(b[a]) ? -b[a] : 0.0;
    side = std::max(side, std::isfinite(b[3 + a]) ? b[3 + a] - lo[a] : 0.0);
  }
  side = side > 0 ? side * (1 + 1e-12) : 1.0;
  const auto keys_of = [&](const Table<T> &t) {
    std::vector<std::uint64_t> k(static_cast<std::size_t>(t.rows()));
#pragma omp parallel for schedule(static) num_threads(nt)
    for (std::int64_t i = 0; i < t.rows(); ++i) {
      const double p[3] = {double(t(i, 0)), double(t(i, 1)), double(t(i, 2))};
      k[static_cast<std::size_t>(i)] = key_of(p);
    }
    return k;
  };
  const std::vector<std::uint64_t> mine = keys_of(x);
  const std::vector<std::uint64_t> mine_y = y ? keys_of(*y) : std::vector<std::uint64_t>{};
  // The histogram of every rank's target keys at hist_level: the occupied cells, from which every
  // rank learns every other's domain (where its targets lie: what it must receive).
  const std::int64_t bins = std::int64_t{1} << (3 * hist_level);
  const int shift = 3 * (key_bits - hist_level);
  std::vector<double> hist(static_cast<std::size_t>(bins), 0.0);
  for (std::uint64_t k : y ? mine_y : mine)
    hist[k >> shift] += 1;
  comm.allreduce_sum(hist.data(), bins);
  // The splitters: rank r owns the keys in [split[r − 1], split[r]), ranges of equal count (or
  // cost) of sources and targets together, found by bisection of every splitter at once over the
  // key space, one allreduce of the P − 1 weights below the probes per step: a cut falls between
  // any two distinct keys, so a dense cell is split where a histogram could not split it.
  // (A stable LSD radix sort on the threads, as the octree's: at 10⁸ points a comparison sort
  // of indices took most of the set-up.)
  std::vector<std::uint64_t> sorted_keys = mine;
  sorted_keys.insert(sorted_keys.end(), mine_y.begin(), mine_y.end());
  std::vector<std::int64_t> by_key;
  fmm::radix_sort(sorted_keys, by_key);
  const auto cost_of = [&](std::int64_t k) { // k: an index into mine, then mine_y
    if (k < S.n_in)
      return cost_x.empty() ? 1.0 : cost_x[static_cast<std::size_t>(k)];
    return cost_y.empty() ? 1.0 : cost_y[static_cast<std::size_t>(k - S.n_in)];
  };
  std::vector<double> below(sorted_keys.size() + 1, 0.0); // weight of the first k
  for (std::size_t k = 0; k < by_key.size(); ++k)
    below[k + 1] = below[k] + cost_of(by_key[k]);
  const auto weight_below = [&](std::uint64_t key) {
    return below[static_cast<std::size_t>(
        std::lower_bound(sorted_keys.begin(), sorted_keys.end(), key) - sorted_keys.begin())];
  };
  const double total = comm.allreduce_sum(below.back());
  const std::size_t cuts = static_cast<std::size_t>(P - 1);
  std::vector<std::uint64_t> split_lo(cuts, 0), split_hi(cuts, std::uint64_t{1} << (3 * key_bits));
  std::vector<double> probe(cuts);
  for (int step = 0; step <= 3 * key_bits; ++step) {
    bool open = false;
    for (std::size_t k = 0; k < cuts; ++k) {
      const std::uint64_t mid = split_lo[k] + (split_hi[k] - split_lo[k]) / 2;
      open = open || split_hi[k] - split_lo[k] > 1;
      probe[k] = weight_below(mid);
    }
    if (!open) // the same answer on every rank: the intervals are the same everywhere
      break;
    comm.allreduce_sum(probe.data(), static_cast<std::int64_t>(cuts));
    for (std::size_t k = 0; k < cuts; ++k) {
      const std::uint64_t mid = split_lo[k] + (split_hi[k] - split_lo[k]) / 2;
      // The first key whose weight below reaches the k-th share: in (lo, hi].
      if (probe[k] < total * double(k + 1) / P)
        split_lo[k] = mid;
      else
        split_hi[k] = mid;
    }
  }
  split.assign(split_hi.begin(), split_hi.end());
  sorted_keys = {};
  below = {};
  separate = y != nullptr;
  distribute(x, mine, S);
  if (separate)
    distribute(*y, mine_y, Tg);
  stats.owned = S.n_own;
  const std::int64_t n_own = S.n_own;
  const std::vector<std::uint64_t> &keys = S.keys;

  // Every rank's domain as its occupied cells at domain_level, each with its occupied cells at
  // hist_level (from the histogram every rank has): a cell is tested against the coarse cells,
  // and against the fine ones inside a coarse cell that is too near.
  const int me = comm.rank();
  struct Coarse {
    std::array<std::int64_t, 3> ijk;
    std::vector<std::array<std::int64_t, 3>> fine;
  };
  std::vector<std::vector<Coarse>> domain(static_cast<std::size_t>(P));
  const int dshift = 3 * (hist_level - domain_level);
  const auto coords = [](std::uint64_t c) {
    return std::array<std::int64_t, 3>{static_cast<std::int64_t>(compact(c)),
                                       static_cast<std::int64_t>(compact(c >> 1)),
                                       static_cast<std::int64_t>(compact(c >> 2))};
  };
  // An occupied cell belongs to the domain of every rank whose key range meets its keys (a cell
  // cut by a splitter to both sides: a domain may be larger than the rank's points, never smaller).
  for (std::int64_t k = 0; k < bins; ++k) {
    if (hist[static_cast<std::size_t>(k)] == 0)
      continue;
    const auto first = static_cast<std::uint64_t>(k) << shift;
    const auto ijk = coords(static_cast<std::uint64_t>(k) >> dshift);
    for (int r = owner_of(first); r <= owner_of(first + ((std::uint64_t{1} << shift) - 1)); ++r) {
      const std::uint64_t from = r == 0 ? 0 : split[static_cast<std::size_t>(r - 1)],
                          to = r == P - 1 ? ~std::uint64_t{0} : split[static_cast<std::size_t>(r)];
      if (from == to)
        continue; // an empty key range: no points there
      auto &dom = domain[static_cast<std::size_t>(r)];
      if (dom.empty() || dom.back().ijk != ijk)
        dom.push_back({ijk, {}});
      dom.back().fine.push_back(coords(static_cast<std::uint64_t>(k)));
    }
  }
  // The essential tree for every other rank.
  const auto t_walk = std::chrono::steady_clock::now();
  const double coord = kdef::coord_scale(opt.kernel, opt.eps);
  std::vector<int> order(key_bits + 1, -1); // per level: the pseudo-particles' order (0: none)
  const auto order_at = [&](int level) {
    int &p = order[static_cast<std::size_t>(level)];
    if (p < 0) {
      p = 0;
      const double half = side / double(std::int64_t{1} << level) / 2 * coord;
      // The single-process FMM's calibrated estimate (its order choice), held to a quarter.
      for (int q = 2; q <= fmm::max_chebyshev_order; ++q)
        if (fmm::BbFmm::calibrated_ratio(opt.kernel, q) *
                fmm::BbFmm::interpolation_error(opt.kernel, q, half) <=
            opt.tolerance / 4) {
          p = q;
          break;
        }
    }
    return p;
  };
  std::map<std::pair<int, std::uint64_t>, std::int64_t> cell_index;
  // Compact kernels vanish for ε r ≥ 1: the support's radius in units of the cube's side.
  const bool compact_support = kernel_info(opt.kernel).support == Support::compact;
  const double support = compact_support ? 1 / (opt.eps * side) : 0.0;
  items.assign(static_cast<std::size_t>(P), {});
  for (int r = 0; r < P; ++r) {
    if (r == me || n_own == 0 || domain[static_cast<std::size_t>(r)].empty())
      continue;
    const auto &dom = domain[static_cast<std::size_t>(r)];
    auto &out = items[static_cast<std::size_t>(r)];
    const double dside = double(std::int64_t{1} << domain_level);
    // Cell (level, prefix) with points [b, e): visit.
    const auto visit = [&](auto &&self, int level, std::uint64_t prefix, std::int64_t b,
                           std::int64_t e) -> void {
      if (b == e)
        return;
      const double cl = double(std::int64_t{1} << level); // cells per axis at this level
      const std::int64_t c[3] = {static_cast<std::int64_t>(compact(prefix)),
                                 static_cast<std::int64_t>(compact(prefix >> 1)),
                                 static_cast<std::int64_t>(compact(prefix >> 2))};
      // Separated: a gap of at least the cell's side (in units of the cube) to every cell of
      // the receiver's domain along some axis.
      const auto far_from = [&](const std::array<std::int64_t, 3> &r, double rside) {
        double gap = 0;
        for (int a = 0; a < 3; ++a) {
          const double c0 = c[a] / cl, c1 = (c[a] + 1) / cl;
          const double r0 = r[a] / rside, r1 = (r[a] + 1) / rside;
          gap = std::max(gap, std::max(c0 - r1, r0 - c1));
        }
        return gap >= (1 - 1e-9) / cl;
      };
      const double fside = double(std::int64_t{1} << hist_level);
      bool separated = level > 0;
      for (std::size_t k = 0; separated && k < dom.size(); ++k)
        if (!far_from(dom[k].ijk, dside))
          for (std::size_t f = 0; separated && f < dom[k].fine.size(); ++f)
            separated = far_from(dom[k].fine[f], fside);
      const std::int64_t count = e - b;
      if (compact_support) {
        // A compactly supported kernel: a cell beyond the support from every cell of the domain
        // adds nothing there; a nearer one goes as points (its kernel is not smooth at the edge
        // of the support, which the order's estimate does not sample at every distance).
        double d2min = std::numeric_limits<double>::infinity();
        for (std::size_t k = 0; k < dom.size(); ++k) {
          double d2 = 0;
          for (int a = 0; a < 3; ++a) {
            const double g = std::max({0.0, c[a] / cl - (dom[k].ijk[a] + 1) / dside,
                                       dom[k].ijk[a] / dside - (c[a] + 1) / cl});
            d2 += g * g;
          }
          d2min = std::min(d2min, d2);
        }
        if (d2min >= support * support)
          return;
        if (separated) {
          out.push_back({b, e, -1});
          return;
        }
      }
      // A level where no order reaches the tolerance (p = 0) opens the cell: finer ones may.
      const int p = separated && !compact_support ? order_at(level) : 0;
      if (p > 0) {
        if (count > std::int64_t{p} * p * p) {
          const auto [it, fresh] =
              cell_index.try_emplace({level, prefix}, static_cast<std::int64_t>(cells.size()));
          if (fresh) {
            fmm::CellRange pc{{}, side / cl / 2, b, e, p};
            for (int a = 0; a < 3; ++a)
              pc.centre[a] = lo[a] + (c[a] + 0.5) * side / cl;
            cells.push_back(pc);
          }
          out.push_back({0, 0, it->second});
        } else
          out.push_back({b, e, -1});
        return;
      }
      if (count <= leaf_points || level == key_bits) {
        out.push_back({b, e, -1});
        return;
      }
      const int cshift = 3 * (key_bits - level - 1);
      std::int64_t cb = b;
      for (std::uint64_t o = 0; o < 8; ++o) {
        const std::uint64_t child = prefix << 3 | o, end_key = (child + 1) << cshift;
        const auto ce =
            std::lower_bound(keys.begin() + cb, keys.begin() + e, end_key) - keys.begin();
        self(self, level + 1, child, cb, ce);
        cb = ce;
      }
    };
    visit(visit, 0, 0, 0, n_own);
  }
  stats.seconds_walk = since(t_walk);
}

template <class T>
void DistributedFmm<T>::Impl::distribute(const Table<T> &x, const std::vector<std::uint64_t> &mine,
                                         Parted &out) {
  const int P = comm.size();
  const int nt = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  const std::int64_t n_in = x.rows();
  out.n_in = n_in;
  // Each point to its range's rank.
  out.send_counts.assign(static_cast<std::size_t>(P), 0);
  std::vector<int> dest(static_cast<std::size_t>(n_in));
#pragma omp parallel for schedule(static) num_threads(nt)
  for (std::int64_t i = 0; i < n_in; ++i)
    dest[static_cast<std::size_t>(i)] = owner_of(mine[static_cast<std::size_t>(i)]);
  for (std::int64_t i = 0; i < n_in; ++i)
    ++out.send_counts[static_cast<std::size_t>(dest[static_cast<std::size_t>(i)])];
  std::vector<std::int64_t> at(static_cast<std::size_t>(P), 0);
  for (int r = 1; r < P; ++r)
    at[static_cast<std::size_t>(r)] =
        at[static_cast<std::size_t>(r - 1)] + out.send_counts[static_cast<std::size_t>(r - 1)];
  out.send_order.resize(static_cast<std::size_t>(n_in));
  for (std::int64_t i = 0; i < n_in; ++i)
    out.send_order[static_cast<std::size_t>(
        at[static_cast<std::size_t>(dest[static_cast<std::size_t>(i)])]++)] = i;
  std::vector<double> sbuf(static_cast<std::size_t>(3 * n_in));
#pragma omp parallel for schedule(static) num_threads(nt)
  for (std::int64_t k = 0; k < n_in; ++k)
    for (int a = 0; a < 3; ++a)
      sbuf[static_cast<std::size_t>(3 * k + a)] =
          double(x(out.send_order[static_cast<std::size_t>(k)], a));
  out.recv_counts = comm.alltoall(out.send_counts);
  const std::int64_t n_own =
      std::accumulate(out.recv_counts.begin(), out.recv_counts.end(), std::int64_t{0});
  out.n_own = n_own;
  std::vector<double> rbuf(static_cast<std::size_t>(3 * n_own));
  comm.alltoallv(sbuf.data(), scaled(out.send_counts, 3), rbuf.data(),
                 scaled(out.recv_counts, 3));
  // This rank's points in key order.
  out.keys.resize(static_cast<std::size_t>(n_own));
#pragma omp parallel for schedule(static) num_threads(nt)
  for (std::int64_t i = 0; i < n_own; ++i)
    out.keys[static_cast<std::size_t>(i)] = key_of(&rbuf[static_cast<std::size_t>(3 * i)]);
  fmm::radix_sort(out.keys, out.sorted_to_recv); // stable: equal keys keep their received order
  out.pts.resize(static_cast<std::size_t>(3 * n_own));
#pragma omp parallel for schedule(static) num_threads(nt)
  for (std::int64_t i = 0; i < n_own; ++i) {
    const auto s = static_cast<std::size_t>(out.sorted_to_recv[static_cast<std::size_t>(i)]);
    for (int a = 0; a < 3; ++a)
      out.pts[static_cast<std::size_t>(a * n_own + i)] = rbuf[3 * s + static_cast<std::size_t>(a)];
  }
}

template <class T> void DistributedFmm<T>::Impl::build_let() {
  const int P = comm.size();
  gpu_cells.reset();
  let_send.assign(static_cast<std::size_t>(P), 0);
  std::int64_t offset = 0;
  for (int r = 0; r < P; ++r)
    for (Item &it : items[static_cast<std::size_t>(r)]) {
      it.offset = offset;
      offset += it.cell >= 0 ? std::int64_t{cells[static_cast<std::size_t>(it.cell)].p} *
                                   cells[static_cast<std::size_t>(it.cell)].p *
                                   cells[static_cast<std::size_t>(it.cell)].p
                             : it.end - it.begin;
      if (it.cell >= 0) {
        const int p = cells[static_cast<std::size_t>(it.cell)].p;
        let_send[static_cast<std::size_t>(r)] += std::int64_t{p} * p * p;
        ++stats.sent_cells;
        stats.sent_pseudo += std::int64_t{p} * p * p;
        stats.order_min = stats.order_min ? std::min(stats.order_min, p) : p;
        stats.order_max = std::max(stats.order_max, p);
      } else {
        let_send[static_cast<std::size_t>(r)] += it.end - it.begin;
        stats.sent_points += it.end - it.begin;
      }
    }
  // The sources' coordinates: points as they are, a pseudo cell's p³ Chebyshev nodes.
  std::vector<double> sbuf;
  sbuf.reserve(static_cast<std::size_t>(
      3 * std::accumulate(let_send.begin(), let_send.end(), std::int64_t{0})));
  for (int r = 0; r < P; ++r)
    for (const Item &it : items[static_cast<std::size_t>(r)]) {
      if (it.cell < 0) {
        for (std::int64_t j = it.begin; j < it.end; ++j)
          for (int a = 0; a < 3; ++a)
            sbuf.push_back(S.pts[static_cast<std::size_t>(a * S.n_own + j)]);
        continue;
      }
      const fmm::CellRange &pc = cells[static_cast<std::size_t>(it.cell)];
      const auto &nodes = chebyshev(pc.p).nodes;
      for (int m0 = 0; m0 < pc.p; ++m0)
        for (int m1 = 0; m1 < pc.p; ++m1)
          for (int m2 = 0; m2 < pc.p; ++m2) {
            sbuf.push_back(pc.centre[0] + pc.half * nodes[static_cast<std::size_t>(m0)]);
            sbuf.push_back(pc.centre[1] + pc.half * nodes[static_cast<std::size_t>(m1)]);
            sbuf.push_back(pc.centre[2] + pc.half * nodes[static_cast<std::size_t>(m2)]);
          }
    }
  let_recv = comm.alltoall(let_send);
  n_let = std::accumulate(let_recv.begin(), let_recv.end(), std::int64_t{0});
  stats.received = n_let;
  std::vector<double> rbuf(static_cast<std::size_t>(3 * n_let));
  comm.alltoallv(sbuf.data(), scaled(let_send, 3), rbuf.data(), scaled(let_recv, 3));
  // The local FMM: sources = this rank's sources, then the received ones; targets = its targets
  // (its points for a self-sum). None where it has no targets, or no sources reach them.
  const Parted &Q = targets();
  const std::int64_t n_own = S.n_own, m_own = Q.n_own;
  if (m_own == 0 || n_own + n_let == 0)
    return;
  const int nt = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  Table<T> src(n_own + n_let, 3, Uninitialized{}), tgt(m_own, 3, Uninitialized{});
  for (int a = 0; a < 3; ++a) {
#pragma omp parallel for schedule(static) num_threads(nt)
    for (std::int64_t i = 0; i < n_own; ++i)
      src(i, a) = static_cast<T>(S.pts[static_cast<std::size_t>(a * n_own + i)]);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (std::int64_t i = 0; i < m_own; ++i)
      tgt(i, a) = static_cast<T>(Q.pts[static_cast<std::size_t>(a * m_own + i)]);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (std::int64_t i = 0; i < n_let; ++i)
      src(n_own + i, a) = static_cast<T>(rbuf[static_cast<std::size_t>(3 * i + a)]);
  }
  DirectOptions o = opt;
  o.method = Method::fmm;
  o.tolerance = opt.tolerance; // the error budget: distributed_fmm.hpp, step 3
  o.progress = nullptr; // a callback that throws on one rank would leave the others waiting
  const auto t_local = std::chrono::steady_clock::now();
  local = std::make_unique<DirectSum<T>>(o);
  local->set_points(src, tgt);
  stats.seconds_local_setup = since(t_local);
  // With the local FMM on a GPU, the pseudo cells' weights are formed there too (the FMM's P2M
  // kernel): on the CPU they cost as much as the local FMM at 10⁸ points over 2 GPUs.
  if (local->backend() == Backend::cuda && !cells.empty()) {
    try {
      gpu_cells = fmm::make_gpu_cell_multipoles(S.pts.data(), n_own, cells,
                                                opt.devices.empty() ? 0 : opt.devices.front());
    } catch (const Error &e) {
      if (e.code() != ErrorCode::device)
        throw;
      gpu_cells.reset(); // no room for the points on the GPU: the CPU forms the weights
    }
  }
}

template <class T>
DistributedFmm<T>::DistributedFmm(const Communicator &comm, const DirectOptions &opt,
                                  const Table<T> &local_points, const Table<T> *local_targets)
    : impl_(std::make_unique<Impl>()) {
  Impl &im = *impl_;
  im.comm = comm;
  im.opt = opt;
  if (!kernel_info(opt.kernel).singular)
    im.self_term = kernel_value(opt.kernel, opt.eps, 0.0);
  if (comm.size() == 1) {
    const auto t0 = std::chrono::steady_clock::now();
    // agree(): the same AgreedError as the ranks' path gives (a no-op exchange on one rank).
    comm.agree(capture([&] {
      DirectOptions o = opt;
      o.method = Method::fmm;
      o.progress = nullptr;
      im.alone = std::make_unique<DirectSum<T>>(o);
      if (local_targets)
        im.alone->set_points(local_points, *local_targets);
      else
        im.alone->set_points(local_points);
    }));
    im.separate = local_targets != nullptr;
    im.S.n_in = im.S.n_own = im.stats.owned = local_points.rows();
    if (local_targets)
      im.Tg.n_in = im.Tg.n_own = local_targets->rows();
    im.stats.seconds_local_setup = since(t0);
    return;
  }
  im.setup(local_points, local_targets, {}, {});
}

template <class T>
double DistributedFmm<T>::rebalance(const Table<T> &local_points, const Table<T> *local_targets,
                                    double threshold) {
  Impl &im = *impl_;
  const int P = im.comm.size();
  // Owned points: sources and (separate) targets, each costing the same in a rank.
  const std::int64_t n_own = im.S.n_own + (im.separate ? im.Tg.n_own : 0);
  if (im.alone) { // one rank: nothing to move; its imbalance is 1 once an execute was measured
    im.stats.imbalance = im.executed && n_own > 0 ? 1.0 : 0.0;
    return im.stats.imbalance;
  }
  // This rank's cost per owned point in the last execute; every rank's.
  const double mine = n_own > 0 && im.executed
                          ? (im.stats.seconds_multipoles + im.stats.seconds_local) / double(n_own)
                          : 0.0;
  std::vector<double> per_point(static_cast<std::size_t>(P));
  im.comm.allgatherv(&mine, 1, per_point.data(), std::vector<std::int64_t>(P, 1));
  const std::vector<std::int64_t> owned = im.comm.allgather(n_own);
  double total = 0, biggest = 0;
  std::int64_t points = 0;
  for (int r = 0; r < P; ++r) {
    const double c =
        per_point[static_cast<std::size_t>(r)] * double(owned[static_cast<std::size_t>(r)]);
    total += c;
    biggest = std::max(biggest, c);
    points += owned[static_cast<std::size_t>(r)];
  }
  if (!(total > 0) || !std::isfinite(total))
    return 0; // no execute measured yet (or nothing to measure)
  const double mean_per_point = total / double(points);
  // Each of the caller's points costs what its owner measured per point, in whole thousandths of
  // the mean (at least one), so that the splitters' sums are exact integers and every rank takes
  // the same decisions whatever order MPI adds them in.
  const auto costs = [&](const Parted &X) {
    std::vector<double> cost(static_cast<std::size_t>(X.n_in));
    std::int64_t k = 0;
    for (int r = 0; r < P; ++r) {
      const double c = std::max(
          1.0, std::round(1e3 * per_point[static_cast<std::size_t>(r)] / mean_per_point));
      for (std::int64_t e = k + X.send_counts[static_cast<std::size_t>(r)]; k < e; ++k)
        cost[static_cast<std::size_t>(X.send_order[static_cast<std::size_t>(k)])] = c;
    }
    return cost;
  };
  const double imbalance = biggest / (total / P);
  if (im.alone || P == 1 ||
      !(imbalance > threshold)) { // nothing to move, or not worth a new partition
    im.stats.imbalance = imbalance;
    return imbalance;
  }
  im.cells.clear();
  im.items.clear();
  im.local.reset();
  im.executed = false;
  const std::vector<double> cost_x = costs(im.S),
                            cost_y = im.separate ? costs(im.Tg) : std::vector<double>{};
  im.stats = DistributedFmmStats{};
  im.setup(local_points, im.separate ? local_targets : nullptr, cost_x, cost_y);
  im.stats.imbalance = imbalance;
  return imbalance;
}

template <class T> DistributedFmm<T>::~DistributedFmm() = default;

template <class T> const DistributedFmmStats &DistributedFmm<T>::stats() const {
  return impl_->stats;
}

template <class T> Table<T> DistributedFmm<T>::execute(const Table<T> &w) {
  Impl &im = *impl_;
  if (im.alone) {
    const auto t0 = std::chrono::steady_clock::now();
    Table<T> u;
    im.comm.agree(capture([&] { u = im.alone->execute(w); }));
    im.stats.local = im.alone->stats();
    im.stats.seconds_exchange = im.stats.seconds_multipoles = 0;
    im.stats.seconds_local = since(t0);
    im.executed = true;
    return u;
  }
  const Communicator &comm = im.comm;
  const int P = comm.size();
  const Parted &S = im.S, &Q = im.targets();
  const std::int64_t nrhs = w.cols(), n_own = S.n_own, m_own = Q.n_own;
  auto t0 = std::chrono::steady_clock::now();
  const int nt = im.opt.threads > 0 ? im.opt.threads : omp_get_max_threads();
  const auto sz = [](std::int64_t v) { return static_cast<std::size_t>(v); };
  // Each rank's local work runs inside capture() and is agreed before the next exchange, so a
  // failure on one rank (memory, the local FMM) reaches every rank instead of leaving the others
  // waiting in the exchange. Every copy loop is parallel, into buffers kept between executes.
  // The weights follow the points.
  Table<T> u, result;
  comm.agree(capture([&] {
    im.sbuf.resize(sz(std::max(S.n_in, Q.n_in) * nrhs));
#pragma omp parallel for schedule(static) num_threads(nt)
    for (std::int64_t k = 0; k < S.n_in; ++k)
      for (std::int64_t c = 0; c < nrhs; ++c)
        im.sbuf[sz(k * nrhs + c)] = double(w(S.send_order[sz(k)], c));
    im.rbuf.resize(sz(n_own * nrhs));
  }));
  comm.alltoallv(im.sbuf.data(), scaled(S.send_counts, nrhs), im.rbuf.data(),
                 scaled(S.recv_counts, nrhs));
  comm.agree(capture([&] {
    if (im.ws.rows() != n_own || im.ws.cols() != nrhs)
      im.ws = Table<double>(n_own, nrhs, Uninitialized{}); // in key order
    Table<double> &ws = im.ws;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (std::int64_t i = 0; i < n_own; ++i)
      for (std::int64_t c = 0; c < nrhs; ++c)
        ws(i, c) = im.rbuf[sz(S.sorted_to_recv[sz(i)] * nrhs + c)];
    im.stats.seconds_exchange = since(t0);
    // The pseudo cells' weights: W_m = Σ_j S_p(x̄_m, y_j) w_j (fmm/fmm3d/cell_multipoles.hpp), on
    // the GPU when the local FMM runs there.
    t0 = std::chrono::steady_clock::now();
    if (im.gpu_cells)
      im.gpu_cells->compute(ws.data(), nrhs, im.W);
    else
      fmm::cell_multipoles(S.pts.data(), n_own, im.cells, ws.data(), nrhs, nt, im.W);
    im.stats.seconds_multipoles = since(t0);
    // The essential trees' weights, each item at its offset (set by build_let).
    t0 = std::chrono::steady_clock::now();
    im.lbuf.resize(
        sz(nrhs * std::accumulate(im.let_send.begin(), im.let_send.end(), std::int64_t{0})));
    for (int r = 0; r < P; ++r) {
      const auto &its = im.items[sz(r)];
      const auto nits = static_cast<std::int64_t>(its.size());
#pragma omp parallel for schedule(dynamic, 64) num_threads(nt)
      for (std::int64_t k = 0; k < nits; ++k) {
        const auto &it = its[sz(k)];
        double *dst = im.lbuf.data() + it.offset * nrhs;
        if (it.cell < 0) {
          for (std::int64_t j = it.begin; j < it.end; ++j)
            for (std::int64_t c = 0; c < nrhs; ++c)
              *dst++ = ws(j, c);
          continue;
        }
        const auto &out = im.W[sz(it.cell)];
        const int p = im.cells[sz(it.cell)].p;
        const std::int64_t p3 = std::int64_t{p} * p * p;
        for (std::int64_t m = 0; m < p3; ++m)
          for (std::int64_t c = 0; c < nrhs; ++c)
            *dst++ = out[sz(c * p3 + m)];
      }
    }
    im.lrecv.resize(sz(im.n_let * nrhs));
  }));
  comm.alltoallv(im.lbuf.data(), scaled(im.let_send, nrhs), im.lrecv.data(),
                 scaled(im.let_recv, nrhs));
  im.stats.seconds_exchange += since(t0);
  // The local FMM.
  t0 = std::chrono::steady_clock::now();
  comm.agree(capture([&] {
    if (im.local) {
      const std::int64_t ns = n_own + im.n_let;
      if (im.lw.rows() != ns || im.lw.cols() != nrhs)
        im.lw = Table<T>(ns, nrhs, Uninitialized{});
      Table<T> &lw = im.lw;
      const Table<double> &ws = im.ws;
      for (std::int64_t c = 0; c < nrhs; ++c) {
#pragma omp parallel for schedule(static) num_threads(nt)
        for (std::int64_t i = 0; i < n_own; ++i)
          lw(i, c) = static_cast<T>(ws(i, c));
#pragma omp parallel for schedule(static) num_threads(nt)
        for (std::int64_t i = 0; i < im.n_let; ++i)
          lw(n_own + i, c) = static_cast<T>(im.lrecv[sz(i * nrhs + c)]);
      }
      u = im.local->execute(lw);
      im.stats.local = im.local->stats();
    }
    im.stats.seconds_local = since(t0);
    // The sums back to the caller's ranks and rows (a self-sum without the self term; targets
    // that no source reaches get zeros).
    t0 = std::chrono::steady_clock::now();
    im.back.resize(sz(m_own * nrhs));
    // With separate targets the weights' rows (sources) are not the targets' rows: the self term
    // is taken off a self-sum only, where they are the same points.
    const bool have = static_cast<bool>(im.local);
    if (im.separate || !have) {
#pragma omp parallel for schedule(static) num_threads(nt)
      for (std::int64_t i = 0; i < m_own; ++i)
        for (std::int64_t c = 0; c < nrhs; ++c)
          im.back[sz(Q.sorted_to_recv[sz(i)] * nrhs + c)] = have ? double(u(i, c)) : 0.0;
    } else {
      const double self_term = im.self_term;
#pragma omp parallel for schedule(static) num_threads(nt)
      for (std::int64_t i = 0; i < m_own; ++i)
        for (std::int64_t c = 0; c < nrhs; ++c)
          im.back[sz(Q.sorted_to_recv[sz(i)] * nrhs + c)] =
              double(u(i, c)) - self_term * im.ws(i, c);
    }
    result = Table<T>(Q.n_in, nrhs, Uninitialized{}); // every row is written below
  }));
  comm.alltoallv(im.back.data(), scaled(Q.recv_counts, nrhs), im.sbuf.data(),
                 scaled(Q.send_counts, nrhs));
#pragma omp parallel for schedule(static) num_threads(nt)
  for (std::int64_t k = 0; k < Q.n_in; ++k)
    for (std::int64_t c = 0; c < nrhs; ++c)
      result(Q.send_order[sz(k)], c) = static_cast<T>(im.sbuf[sz(k * nrhs + c)]);
  im.stats.seconds_exchange += since(t0);
  im.executed = true;
  return result;
}

template class DistributedFmm<float>;
template class DistributedFmm<double>;

} // namespace ksum::detail
