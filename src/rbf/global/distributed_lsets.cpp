// The L-sets of a distributed fit, found without gathering the points (distributed_global.hpp).
//
// A set led by row l holds the q points nearest x_l among those σ visits at or after l. This rank
// first searches its own such points: the q-th distance r_l bounds the ball where a nearer point of
// another rank could lie. Only the ranks whose boxes meet the ball are asked; each returns its own
// q nearest of l's unvisited points within r_l (more cannot be among the set's q). The set is the q
// nearest of the union, ties in distance to the smaller row, as the one-process search breaks them.
// Every squared distance is the k-d tree's (kdtree.cpp), so the union is ordered exactly as one
// process orders it.
#include "rbf/global/distributed_global.hpp"
#include "rbf/global/polynomial.hpp"
#include "runtime/outbox.hpp"
#include "spatial/kdtree.hpp"

#include <ksum/error.hpp>

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace ksum::rbf {

using runtime::Outbox;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr int boxes_per_rank = 64;

// This rank's points indexed for the search: σ's order among them, the k-d tree (its ranks are
// the local places in σ), and the boxes every rank sees.
struct LocalIndex {
  std::int64_t n = 0, d = 0, offset = 0;
  std::vector<std::pair<std::uint64_t, std::int64_t>> sorted; // (key, global row) in σ's order
  std::vector<std::int64_t> place;                            // local row → place in `sorted`
  std::optional<spatial::KdTree> tree;
  // Every rank's boxes: rank r's are box_ptr[r] … box_ptr[r + 1] − 1, box b's corners at
  // boxes[2 d b] (lo) and boxes[2 d b + d] (hi).
  std::vector<std::int64_t> box_ptr;
  std::vector<double> boxes;
  std::vector<double>
      hull; // rank r's boxes' bounding box at hull[2 d r] (lo), hull[2 d r + d] (hi)

  // The number of this rank's points before (key, row) in σ: the tree's bound for a search among
  // the points σ visits at or after that one.
  std::int64_t before(std::uint64_t key, std::int64_t row) const {
    return std::lower_bound(sorted.begin(), sorted.end(), std::make_pair(key, row)) -
           sorted.begin();
  }
  // A lower bound of the squared distance from x to the box with corners lo and lo + d (rounded
  // down, as the tree's own bound is, so that it never exceeds a point's distance as the tree
  // computes it).
  double corner_distance2(const double *lo, const double *x) const {
    const double *hi = lo + d;
    double s = 0;
    for (std::int64_t c = 0; c < d; ++c) {
      const double e = x[c] < lo[c] ? lo[c] - x[c] : x[c] > hi[c] ? x[c] - hi[c] : 0.0;
      s += e * e;
    }
    return s * (1.0 - 0x1p-40);
  }
  double box_distance2(std::int64_t b, const double *x) const {
    return corner_distance2(&boxes[static_cast<std::size_t>(2 * d * b)], x);
  }
  double hull_distance2(int r, const double *x) const {
    return corner_distance2(&hull[static_cast<std::size_t>(2 * d * r)], x);
  }
  bool reaches(int r, const double *x, double r2) const {
    if (box_ptr[r] == box_ptr[r + 1] || hull_distance2(r, x) > r2)
      return false;
    for (std::int64_t b = box_ptr[r]; b < box_ptr[r + 1]; ++b)
      if (box_distance2(b, x) <= r2)
        return true;
    return false;
  }
  // x within box b's closed extent, as the tree's squared distances see it (0 also where the
  // differences' squares underflow, which the duplicate check counts as identical too).
  bool inside(int r, const double *x) const {
    if (box_ptr[r] == box_ptr[r + 1] || hull_distance2(r, x) > 0)
      return false;
    for (std::int64_t b = box_ptr[r]; b < box_ptr[r + 1]; ++b)
      if (box_distance2(b, x) == 0)
        return true;
    return false;
  }
};

// Runs f on this rank and agrees its failure over the ranks (every rank throws the same error).
template <class F> void phase(const Communicator &comm, F &&f) {
  comm.agree(capture(std::forward<F>(f)));
}

LocalIndex index_points(const Communicator &comm, const Table<double> &x, std::int64_t offset,
                        std::uint64_t seed, int threads) {
  const int P = comm.size();
  LocalIndex ix;
  ix.n = x.rows();
  ix.d = x.cols();
  ix.offset = offset;
  const std::int64_t n = ix.n, d = ix.d;
  std::vector<double> mine;
  phase(comm, [&] {
    ix.sorted.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      ix.sorted[i] = {lset_key(seed, offset + i), offset + i};
    std::sort(ix.sorted.begin(), ix.sorted.end());
    ix.place.resize(static_cast<std::size_t>(n));
    for (std::int64_t a = 0; a < n; ++a)
      ix.place[ix.sorted[a].second - offset] = a;
    if (n == 0)
      return;
    ix.tree.emplace(x, ix.place, 32, threads);
    // Boxes: runs of the tree's leaf order (subtrees, so compact).
    const std::vector<std::int64_t> &leaves = ix.tree->leaf_order();
    const std::int64_t nb = std::min<std::int64_t>(boxes_per_rank, n);
    mine.assign(static_cast<std::size_t>(2 * d * nb), 0.0);
    for (std::int64_t b = 0; b < nb; ++b) {
      double *lo = &mine[static_cast<std::size_t>(2 * d * b)], *hi = lo + d;
      std::fill(lo, lo + d, inf);
      std::fill(hi, hi + d, -inf);
      for (std::int64_t t = n * b / nb; t < n * (b + 1) / nb; ++t)
        for (std::int64_t c = 0; c < d; ++c) {
          lo[c] = std::min(lo[c], x(leaves[t], c));
          hi[c] = std::max(hi[c], x(leaves[t], c));
        }
    }
  });
  const std::vector<std::int64_t> sizes = comm.allgather(static_cast<std::int64_t>(mine.size()));
  ix.box_ptr.assign(sizes.size() + 1, 0);
  for (std::size_t r = 0; r < sizes.size(); ++r)
    ix.box_ptr[r + 1] = ix.box_ptr[r] + sizes[r] / (2 * d);
  ix.boxes.resize(static_cast<std::size_t>(2 * d * ix.box_ptr.back()));
  comm.allgatherv(mine.data(), static_cast<std::int64_t>(mine.size()), ix.boxes.data(), sizes);
  ix.hull.assign(static_cast<std::size_t>(2 * d * P), 0.0);
  for (int r = 0; r < P; ++r) {
    double *lo = &ix.hull[static_cast<std::size_t>(2 * d * r)], *hi = lo + d;
    std::fill(lo, lo + d, inf);
    std::fill(hi, hi + d, -inf);
    for (std::int64_t b = ix.box_ptr[r]; b < ix.box_ptr[r + 1]; ++b)
      for (std::int64_t c = 0; c < d; ++c) {
        lo[c] = std::min(lo[c], ix.boxes[static_cast<std::size_t>(2 * d * b + c)]);
        hi[c] = std::max(hi[c], ix.boxes[static_cast<std::size_t>(2 * d * b + d + c)]);
      }
  }
  return ix;
}

// check_distinct's error on every rank when any rank's row has a twin (twin[i]: the smallest twin
// of row offset + i, or −1): the smallest such row and its smallest twin.
void refuse_twins(const Communicator &comm, const std::vector<std::int64_t> &twin,
                  std::int64_t offset) {
  const auto n = static_cast<std::int64_t>(twin.size());
  double first = inf; // the smallest row of this rank with a twin
  for (std::int64_t i = 0; i < n && first == inf; ++i)
    if (twin[i] >= 0)
      first = static_cast<double>(offset + i);
  const double bad_i = -comm.allreduce_max(-first);
  if (bad_i == inf)
    return;
  const auto i = static_cast<std::int64_t>(bad_i);
  const double bad_j = comm.allreduce_max(
      i >= offset && i < offset + n ? static_cast<double>(twin[i - offset]) : -1.0);
  comm.agree(true, static_cast<int>(ErrorCode::invalid_argument),
             distinct_error_message(i, static_cast<std::int64_t>(bad_j)));
}

// check_distinct over the ranks: the smallest row that has an identical twin anywhere, and its
// smallest twin (what check_distinct names on all points together). A point is compared with
// this rank's points by the tree and sent to every rank whose boxes contain it.
void check_distinct_over_ranks(const Communicator &comm, const Table<double> &x,
                               const LSetConfig &cfg, const LocalIndex &ix,
                               DistributedLSetStats &stats) {
  const int P = comm.size(), me = comm.rank();
  const std::int64_t n = ix.n, d = ix.d, offset = ix.offset;
  std::vector<std::int64_t> twin; // smallest twin, global row
  Outbox ask(P);
  std::vector<std::vector<std::int64_t>> asked_for(static_cast<std::size_t>(P));
  phase(comm, [&] {
    twin = n > 0 ? twins_in(*ix.tree, x, 0, offset,
                            cfg.threads > 0 ? cfg.threads : omp_get_max_threads())
                 : std::vector<std::int64_t>{};
    std::vector<double> xi(static_cast<std::size_t>(d));
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t c = 0; c < d; ++c)
        xi[c] = x(i, c);
      for (int r = 0; r < P; ++r)
        if (r != me && ix.inside(r, xi.data())) {
          ask.to[r].insert(ask.to[r].end(), xi.begin(), xi.end());
          asked_for[r].push_back(i);
          ++stats.twins_asked;
        }
    }
  });
  const std::vector<std::vector<double>> asks = ask.exchange(comm, "the L-set search");
  Outbox answer(P);
  phase(comm, [&] {
    std::vector<std::pair<double, std::int64_t>> nb;
    for (int r = 0; r < P; ++r) {
      const std::int64_t cnt =
          static_cast<std::int64_t>(asks[r].size()) / std::max<std::int64_t>(d, 1);
      answer.to[r].assign(static_cast<std::size_t>(cnt), -1.0);
      if (n == 0)
        continue;
      for (std::int64_t k = 0; k < cnt; ++k) {
        ix.tree->nearest(&asks[r][static_cast<std::size_t>(k * d)], 1, 0, nb);
        if (!nb.empty() && nb[0].first == 0.0)
          answer.to[r][k] = static_cast<double>(offset + nb[0].second);
      }
    }
  });
  const std::vector<std::vector<double>> answers = answer.exchange(comm, "the L-set search");
  for (int r = 0; r < P; ++r)
    for (std::size_t k = 0; k < answers[r].size(); ++k)
      if (const double j = answers[r][k]; j >= 0) {
        std::int64_t &t = twin[asked_for[r][k]];
        t = t < 0 ? static_cast<std::int64_t>(j) : std::min(t, static_cast<std::int64_t>(j));
      }
  refuse_twins(comm, twin, offset);
}

} // namespace

RowSets build_lsets_over_ranks(const Communicator &comm, const Table<double> &x,
                               std::int64_t offset, std::int64_t total, const LSetConfig &cfg,
                               DistributedLSetStats *stats_out,
                               const std::function<void()> &after_distinct) {
  const int P = comm.size(), me = comm.rank();
  const std::int64_t n = x.rows(), d = x.cols();
  DistributedLSetStats stats;
  // The contract: rank r's rows follow rank r − 1's, all of them `total`; a dimension and q the
  // sets can hold.
  {
    const std::vector<std::int64_t> rows = comm.allgather(n), offsets = comm.allgather(offset);
    std::int64_t at = 0;
    bool ok = true;
    for (int r = 0; r < P; ++r) {
      ok = ok && offsets[r] == at;
      at += rows[r];
    }
    comm.agree(capture([&] {
      if (!ok || at != total)
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("build_lsets_over_ranks: the ranks' rows must follow each other "
                                "in rank order and add up to {} (they add up to {})",
                                total, at));
      if (d < 1 || d > PolyBasis::max_dim || cfg.q < 1)
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("build_lsets_over_ranks: dimension {} (1 … {}) and q = {} (≥ 1)", d,
                                PolyBasis::max_dim, cfg.q));
    }));
  }
  auto clock = std::chrono::steady_clock::now();
  auto lap = [&clock](double &into) {
    const auto now = std::chrono::steady_clock::now();
    into += std::chrono::duration<double>(now - clock).count();
    clock = now;
  };
  const int nt = cfg.threads > 0 ? cfg.threads : omp_get_max_threads();
  const LocalIndex ix = index_points(comm, x, offset, cfg.seed, nt);
  // Rows in no spatial order make every rank's boxes span the domain: the exchanges below would
  // then move about what an all-gather moves, and every rank would search for nearly every set.
  // Where the points inside other ranks' boxes exceed a quarter of an all-gather's, the ranks
  // gather the points instead and search one tree over all of them (N coordinates per rank).
  bool gather = false;
  if (P > 1) {
    double inside[2] = {0, static_cast<double>(n)};
    std::int64_t count = 0;
#pragma omp parallel for num_threads(nt) reduction(+ : count) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      double xi[PolyBasis::max_dim];
      for (std::int64_t c = 0; c < d; ++c)
        xi[c] = x(i, c);
      for (int r = 0; r < P; ++r)
        count += r != me && ix.inside(r, xi);
    }
    inside[0] = static_cast<double>(count);
    comm.allreduce_sum(inside, 2);
    gather = inside[0] > 0.25 * (P - 1) * inside[1];
    // KSUM_LSETS_GATHER=1 / 0 on rank 0 forces the all-gather / the search over the ranks (to
    // compare them).
    double force = -1; // rank 0's setting holds for all
    if (const char *env = std::getenv("KSUM_LSETS_GATHER"); env && *env) {
      const std::string v(env);
      if (v == "1" || v == "on" || v == "true" || v == "yes")
        force = 1;
      else if (v == "0" || v == "off" || v == "false" || v == "no")
        force = 0;
    }
    comm.broadcast(&force, 1);
    if (force >= 0)
      gather = force > 0;
  }
  stats.gathered = gather;
  // gather: one tree over every rank's points (global rows), its ranks their places in σ, and
  // the places of this rank's rows.
  std::optional<spatial::KdTree> gtree;
  std::vector<std::int64_t> own_place;
  if (gather) {
    const std::vector<std::int64_t> counts = comm.allgather(n);
    Table<double> all;
    phase(comm, [&] { all = Table<double>(total, d); });
    for (std::int64_t c = 0; c < d; ++c)
      comm.allgatherv(x.col(c).data(), n, all.col(c).data(), counts);
    stats.received = total - n;
    phase(comm, [&] {
      std::vector<std::pair<std::uint64_t, std::int64_t>> keyed(static_cast<std::size_t>(total));
      for (std::int64_t j = 0; j < total; ++j)
        keyed[j] = {lset_key(cfg.seed, j), j};
      std::sort(keyed.begin(), keyed.end());
      std::vector<std::int64_t> place(static_cast<std::size_t>(total));
      for (std::int64_t a = 0; a < total; ++a)
        place[keyed[a].second] = a;
      keyed = {};
      own_place.assign(place.begin() + offset, place.begin() + offset + n);
      gtree.emplace(all, std::move(place), 32, nt);
    });
  }
  lap(stats.seconds_index);
  if (gather) {
    // check_distinct's pair, each rank asking for its own rows: the smallest row with a twin and
    // its smallest twin (the tree orders equal distances by row).
    std::vector<std::int64_t> twin;
    phase(comm, [&] { twin = twins_in(*gtree, x, offset, 0, nt); });
    refuse_twins(comm, twin, offset);
  } else {
    check_distinct_over_ranks(comm, x, cfg, ix, stats);
  }
  if (after_distinct)
    phase(comm, after_distinct);
  lap(stats.seconds_twins);

  // σ's last K points over all ranks, where a set's size (min(q, points left)) and whether a
  // point leads a set at all (while more points remain than polynomial terms) are decided: every
  // other point leads a set of q.
  const std::int64_t m_terms = static_cast<std::int64_t>(PolyBasis::count(cfg.poly_degree, d));
  const std::int64_t nsets = std::max<std::int64_t>(0, total - m_terms);
  const std::int64_t K = std::min<std::int64_t>(total, std::max<std::int64_t>(cfg.q, 0) + m_terms);
  std::unordered_map<std::int64_t, std::int64_t> late; // this rank's rows among them → place in σ
  {
    const std::int64_t mine = std::min(K, n);
    std::vector<double> tail(static_cast<std::size_t>(3 * mine));
    for (std::int64_t t = 0; t < mine; ++t) { // keys in two 32-bit halves: exact in doubles
      const auto &[key, row] = ix.sorted[static_cast<std::size_t>(n - 1 - t)];
      tail[3 * t] = static_cast<double>(key >> 32);
      tail[3 * t + 1] = static_cast<double>(key & 0xffffffffULL);
      tail[3 * t + 2] = static_cast<double>(row);
    }
    std::vector<std::int64_t> counts = comm.allgather(3 * mine);
    std::vector<double> all(
        static_cast<std::size_t>(std::accumulate(counts.begin(), counts.end(), std::int64_t{0})));
    comm.allgatherv(tail.data(), 3 * mine, all.data(), counts);
    std::vector<std::pair<std::uint64_t, std::int64_t>> last;
    for (std::size_t e = 0; e + 2 < all.size(); e += 3)
      last.push_back(
          {(static_cast<std::uint64_t>(all[e]) << 32) | static_cast<std::uint64_t>(all[e + 1]),
           static_cast<std::int64_t>(all[e + 2])});
    std::sort(last.rbegin(), last.rend());
    for (std::int64_t t = 0; t < K && t < static_cast<std::int64_t>(last.size()); ++t)
      if (last[t].second >= offset && last[t].second < offset + n)
        late[last[t].second] = total - 1 - t;
  }

  // This rank's leaders in σ's order, their sets' sizes, and the own search.
  std::vector<std::int64_t> leaders, size;
  for (std::int64_t a = 0; a < n; ++a) {
    const std::int64_t i = ix.sorted[static_cast<std::size_t>(a)].second - offset;
    const auto it = late.find(offset + i);
    const std::int64_t pos = it == late.end() ? -1 : it->second; // −1: before σ's last K
    if (pos >= nsets)
      continue;
    leaders.push_back(i);
    size.push_back(pos < 0 ? cfg.q : std::min<std::int64_t>(cfg.q, total - pos));
  }
  const auto nl = static_cast<std::int64_t>(leaders.size());
  // Candidates per leader: (squared distance, global row), with their coordinates.
  struct Candidates {
    std::vector<std::pair<double, std::int64_t>> nb;
    std::vector<double> coords;
  };
  std::vector<Candidates> cand(static_cast<std::size_t>(nl));
  std::vector<double> radius2(static_cast<std::size_t>(nl), inf);
  Outbox query(P);
  std::vector<std::vector<std::int64_t>> queried(static_cast<std::size_t>(P)); // leader numbers
  phase(comm, [&] {
    if (gather) { // each set's search in the tree over all points is final
#pragma omp parallel num_threads(nt)
      {
        std::vector<double> xl(static_cast<std::size_t>(d));
#pragma omp for schedule(dynamic, 256)
        for (std::int64_t s = 0; s < nl; ++s) {
          for (std::int64_t c = 0; c < d; ++c)
            xl[c] = x(leaders[s], c);
          Candidates &cs = cand[s];
          gtree->nearest(xl.data(), static_cast<int>(size[s]), own_place[leaders[s]], cs.nb,
                         &cs.coords);
        }
      }
      gtree.reset();
      return;
    }
#pragma omp parallel num_threads(nt)
    {
      std::vector<double> xl(static_cast<std::size_t>(d));
#pragma omp for schedule(dynamic, 256)
      for (std::int64_t s = 0; s < nl; ++s) {
        const std::int64_t i = leaders[s];
        for (std::int64_t c = 0; c < d; ++c)
          xl[c] = x(i, c);
        Candidates &cs = cand[s];
        ix.tree->nearest(xl.data(), static_cast<int>(size[s]), ix.place[i], cs.nb, &cs.coords);
        for (auto &e : cs.nb)
          e.second += offset;
        if (static_cast<std::int64_t>(cs.nb.size()) == size[s])
          radius2[s] = cs.nb.back().first;
      }
    }
    // Queries: (x_l, r_l², global row of l, size) to each rank whose boxes meet the ball.
    std::vector<double> rec(static_cast<std::size_t>(d + 3));
    for (std::int64_t s = 0; s < nl; ++s) {
      const std::int64_t i = leaders[s];
      for (std::int64_t c = 0; c < d; ++c)
        rec[c] = x(i, c);
      const double *xl = rec.data();
      rec[d] = radius2[s];
      rec[d + 1] = static_cast<double>(offset + i);
      rec[d + 2] = static_cast<double>(size[s]);
      for (int r = 0; r < P; ++r)
        if (r != me && ix.reaches(r, xl, radius2[s])) {
          query.to[r].insert(query.to[r].end(), rec.begin(), rec.end());
          queried[r].push_back(s);
          ++stats.queries;
        }
    }
  });
  const std::vector<std::vector<double>> queries = query.exchange(comm, "the L-set search");
  lap(stats.seconds_own);

  // Answers: to each rank, once each, the points of this rank that are among some query's
  // nearest unvisited points within its ball, as (row, coordinates), in increasing rows.
  Outbox answer(P);
  phase(comm, [&] {
    const std::int64_t rec = d + 3;
    std::vector<char> marked(static_cast<std::size_t>(n));
    for (int r = 0; r < P; ++r) {
      const std::int64_t cnt = static_cast<std::int64_t>(queries[r].size()) / rec;
      if (cnt == 0 || n == 0)
        continue;
      std::fill(marked.begin(), marked.end(), 0);
#pragma omp parallel num_threads(nt)
      {
        std::vector<std::pair<double, std::int64_t>> nb;
#pragma omp for schedule(dynamic, 64)
        for (std::int64_t k = 0; k < cnt; ++k) {
          const double *q = &queries[r][static_cast<std::size_t>(k * rec)];
          const double r2 = q[d];
          const auto row = static_cast<std::int64_t>(q[d + 1]);
          const auto want = static_cast<int>(q[d + 2]);
          ix.tree->nearest(q, want, ix.before(lset_key(cfg.seed, row), row), nb);
          for (std::size_t e = 0; e < nb.size() && nb[e].first <= r2; ++e)
#pragma omp atomic write
            marked[static_cast<std::size_t>(nb[e].second)] = 1;
        }
      }
      for (std::int64_t i = 0; i < n; ++i)
        if (marked[static_cast<std::size_t>(i)]) {
          answer.to[r].push_back(static_cast<double>(offset + i));
          for (std::int64_t c = 0; c < d; ++c)
            answer.to[r].push_back(x(i, c));
        }
    }
  });
  const std::vector<std::vector<double>> answers = answer.exchange(comm, "the L-set search");
  lap(stats.seconds_answer);

  // The halo: every point the other ranks returned, in increasing rows (ranks in order, each in
  // increasing rows), indexed like this rank's own points: a k-d tree whose ranks are their places
  // in σ among themselves. A queried set's q nearest are the q nearest of its own candidates and
  // the halo's unvisited ones (every point that can belong to the set is in one of the two; ties
  // in distance to the smaller row in both trees, as in one process).
  RowSets sets;
  std::vector<double> coords;
  phase(comm, [&] {
    std::vector<std::int64_t> hrow;
    for (int r = 0; r < P; ++r)
      for (std::size_t e = 0; e + d < answers[r].size(); e += static_cast<std::size_t>(d + 1))
        hrow.push_back(static_cast<std::int64_t>(answers[r][e]));
    const auto h = static_cast<std::int64_t>(hrow.size());
    if (!gather)
      stats.received = h;
    Table<double> hx(h, d);
    {
      std::int64_t t = 0;
      for (int r = 0; r < P; ++r)
        for (std::size_t e = 0; e + d < answers[r].size();
             e += static_cast<std::size_t>(d + 1), ++t)
          for (std::int64_t c = 0; c < d; ++c)
            hx(t, c) = answers[r][e + 1 + static_cast<std::size_t>(c)];
    }
    std::vector<std::pair<std::uint64_t, std::int64_t>> hsorted(static_cast<std::size_t>(h));
    for (std::int64_t t = 0; t < h; ++t)
      hsorted[t] = {lset_key(cfg.seed, hrow[t]), t};
    std::sort(hsorted.begin(), hsorted.end(), [&](const auto &a, const auto &b) {
      return a.first != b.first ? a.first < b.first : hrow[a.second] < hrow[b.second];
    });
    std::vector<std::int64_t> hplace(static_cast<std::size_t>(h));
    std::vector<std::pair<std::uint64_t, std::int64_t>> hkeys(static_cast<std::size_t>(h));
    for (std::int64_t a = 0; a < h; ++a) {
      hplace[hsorted[a].second] = a;
      hkeys[a] = {hsorted[a].first, hrow[hsorted[a].second]};
    }
    std::optional<spatial::KdTree> htree;
    if (h > 0)
      htree.emplace(hx, hplace, 32, nt);
    std::vector<char> asked(static_cast<std::size_t>(nl), 0);
    for (int r = 0; r < P; ++r)
      for (const std::int64_t s : queried[r])
        asked[s] = 1;
    std::int64_t short_set = -1; // a set with too few members (none: the search is exact)
#pragma omp parallel num_threads(nt)
    {
      std::vector<std::pair<double, std::int64_t>> nb;
      std::vector<double> nbx, xl(static_cast<std::size_t>(d));
#pragma omp for schedule(dynamic, 256)
      for (std::int64_t s = 0; s < nl; ++s) {
        if (!asked[s] || !htree)
          continue;
        Candidates &cs = cand[s];
        const std::int64_t i = leaders[s], lead = offset + i;
        for (std::int64_t c = 0; c < d; ++c)
          xl[c] = x(i, c);
        const std::int64_t from = std::lower_bound(hkeys.begin(), hkeys.end(),
                                                   std::make_pair(lset_key(cfg.seed, lead), lead)) -
                                  hkeys.begin();
        htree->nearest(xl.data(), static_cast<int>(size[s]), from, nb, &nbx);
        for (std::size_t e = 0; e < nb.size(); ++e) {
          cs.nb.push_back({nb[e].first, hrow[nb[e].second]});
          cs.coords.insert(cs.coords.end(), nbx.begin() + static_cast<std::ptrdiff_t>(e * d),
                           nbx.begin() + static_cast<std::ptrdiff_t>((e + 1) * d));
        }
      }
    }
    sets.ptr.assign(static_cast<std::size_t>(nl) + 1, 0);
    for (std::int64_t s = 0; s < nl; ++s)
      sets.ptr[s + 1] = sets.ptr[s] + size[s];
    sets.idx.resize(static_cast<std::size_t>(sets.ptr[nl]));
    coords.resize(static_cast<std::size_t>(sets.ptr[nl] * d));
#pragma omp parallel num_threads(nt)
    {
      std::vector<std::int64_t> by;
#pragma omp for schedule(dynamic, 256)
      for (std::int64_t s = 0; s < nl; ++s) {
        const Candidates &cs = cand[s];
        by.resize(cs.nb.size());
        std::iota(by.begin(), by.end(), std::int64_t{0});
        const std::size_t keep = std::min(by.size(), static_cast<std::size_t>(size[s]));
        std::partial_sort(by.begin(), by.begin() + static_cast<std::ptrdiff_t>(keep), by.end(),
                          [&](std::int64_t a, std::int64_t b) { return cs.nb[a] < cs.nb[b]; });
        const std::int64_t i = leaders[s], lead = offset + i, b = sets.ptr[s];
        sets.idx[b] = lead;
        for (std::int64_t c = 0; c < d; ++c)
          coords[b * d + c] = x(i, c);
        std::int64_t m = 1;
        for (std::size_t e = 0; e < keep && m < size[s]; ++e)
          if (const auto &[d2, row] = cs.nb[by[e]]; row != lead) {
            sets.idx[b + m] = row;
            std::copy_n(cs.coords.begin() + static_cast<std::ptrdiff_t>(by[e] * d), d,
                        coords.begin() + static_cast<std::ptrdiff_t>((b + m) * d));
            ++m;
          }
        if (m != size[s])
#pragma omp critical
          short_set = s;
      }
    }
    if (short_set >= 0)
      throw Error(ErrorCode::internal,
                  fmt::format("the L-set of row {}: fewer than {} members found over the ranks",
                              offset + leaders[short_set], size[short_set]));
    cand = {};
    lap(stats.seconds_halo);
    sets.zeta.resize(sets.idx.size());
    sets.skipped = form_lsets(cfg, d, sets.ptr, coords.data(), sets.zeta.data());
    lap(stats.seconds_solve);
  });
  if (stats_out)
    *stats_out = stats;
  return sets;
}

} // namespace ksum::rbf
