// RBF partition of unity with the data partitioned over MPI ranks (issue 25, item 4): the grid's
// cells are cut into contiguous ranges of about equal work; each rank owns the points of its cells,
// receives the points of the cells around them that its patches reach (the halo, widened in rounds
// where sparse patches grow), fits its own patches, and receives the other ranks' fitted patches
// that reach its cells. Evaluation sends each point to the rank owning its cell. Every patch sees
// the same points in the same order as in one process, so the values are the same bits.
#include "core/validate.hpp"
#include "rbf/pum/pum_impl.hpp"
#include "runtime/outbox.hpp"

#include <ksum/distributed.hpp>
#include <ksum/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ksum {
namespace {

using pum_detail::Clock;
using pum_detail::extent;
using pum_detail::ring_for;
using pum_detail::since;
using runtime::Outbox;

// Runs f on this rank and agrees its failure over the ranks (every rank throws the same error).
template <class F> void phase(const Communicator &comm, F &&f) {
  comm.agree(capture(std::forward<F>(f)));
}

// The rank whose cell range [cut[r], cut[r + 1]) holds `cell`.
int owner(const std::vector<std::int64_t> &cut, std::int64_t cell) {
  return static_cast<int>(std::upper_bound(cut.begin(), cut.end(), cell) - cut.begin()) - 1;
}

// Calls f(a, b) for the runs of cells [a, b] (inclusive, contiguous in the cell numbering: along
// the last axis) that make up the box of the cells within `ring` cells of `cell` on every axis.
template <class F>
void for_runs(const spatial::GridIndex &g, std::int64_t cell, std::int64_t ring, F &&f) {
  const std::int64_t s = g.dim();
  const auto &d = g.cells_per_axis();
  std::array<std::int64_t, spatial::grid_max_dim> c{}, lo{}, hi{}, at{};
  g.cell_coords(cell, c.data());
  for (std::int64_t k = 0; k < s; ++k) {
    lo[k] = std::max<std::int64_t>(0, c[k] - ring);
    hi[k] = std::min<std::int64_t>(d[k] - 1, c[k] + ring);
    at[k] = lo[k];
  }
  while (true) {
    at[s - 1] = lo[s - 1];
    const std::int64_t a = g.cell_of_coords(at.data());
    at[s - 1] = hi[s - 1];
    f(a, g.cell_of_coords(at.data()));
    std::int64_t k = s - 2; // the next run: an odometer over the other axes
    for (; k >= 0 && at[k] == hi[k]; --k)
      at[k] = lo[k];
    if (k < 0)
      break;
    ++at[k];
  }
}

// The ranks other than `self` that own a cell within `ring` cells of `cell` on every axis, in
// increasing order (each run meets the ranges of the ranks between its two ends' owners).
std::vector<int> ranks_near(const spatial::GridIndex &g, const std::vector<std::int64_t> &cut,
                            std::int64_t cell, std::int64_t ring, int self) {
  std::vector<int> out;
  for_runs(g, cell, ring, [&](std::int64_t a, std::int64_t b) {
    for (int r = owner(cut, a), last = owner(cut, b); r <= last; ++r)
      if (r != self && cut[r] < cut[r + 1])
        out.push_back(r);
  });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The first non-finite value of the ranks' tables (each rank its rows; `offset` rows before this
// rank's, `total` in all) as one process finds it in their concatenation: column by column, the
// tables in order. Every rank throws the same error, with the row in the concatenation.
void check_finite_over_ranks(const Communicator &comm,
                             const std::vector<std::pair<const Table<double> *, const char *>> &ts,
                             std::int64_t offset, std::int64_t total) {
  double key = -std::numeric_limits<double>::infinity(), base = 0; // −(the first bad position)
  std::string message;
  for (const auto &[t, what] : ts) {
    const std::int64_t n = t->rows();
    for (std::int64_t c = 0; c < t->cols() && message.empty(); ++c)
      for (std::int64_t i = 0; i < n; ++i)
        if (!std::isfinite((*t)(i, c))) {
          key = -(base + static_cast<double>(c * total + offset + i));
          message = detail::non_finite_message(what, (*t)(i, c), offset + i, c);
          break;
        }
    if (!message.empty())
      break;
    base += static_cast<double>(t->cols() * total);
  }
  const double first = comm.allreduce_max(key);
  if (first == -std::numeric_limits<double>::infinity())
    return;
  comm.agree(key == first, static_cast<int>(ErrorCode::non_finite), message);
}

// Data rows with their global row numbers (the rows of the ranks' tables in rank order).
struct Rows {
  std::int64_t s = 0, c = 0;
  std::vector<std::int64_t> gid;
  std::vector<double> x, f; // row-major: n × s and n × c
  std::int64_t n() const { return static_cast<std::int64_t>(gid.size()); }
  void append(std::int64_t id, const double *xi, const double *fi) {
    gid.push_back(id);
    x.insert(x.end(), xi, xi + s);
    f.insert(f.end(), fi, fi + c);
  }
  // Adds row i as a record [row, x, f] to `out`.
  void pack(std::int64_t i, std::vector<double> &out) const {
    out.push_back(static_cast<double>(gid[i]));
    out.insert(out.end(), x.begin() + i * s, x.begin() + (i + 1) * s);
    out.insert(out.end(), f.begin() + i * c, f.begin() + (i + 1) * c);
  }
  void unpack(const std::vector<std::vector<double>> &from) {
    for (const auto &v : from)
      for (std::size_t at = 0; at < v.size(); at += static_cast<std::size_t>(1 + s + c))
        append(static_cast<std::int64_t>(v[at]), v.data() + at + 1, v.data() + at + 1 + s);
  }
  // In increasing global row (one process's order of the points within a cell).
  void sort() {
    std::vector<std::int64_t> order(gid.size());
    std::iota(order.begin(), order.end(), std::int64_t{0});
    std::sort(order.begin(), order.end(),
              [&](std::int64_t a, std::int64_t b) { return gid[a] < gid[b]; });
    Rows sorted{s, c, {}, {}, {}};
    for (const std::int64_t i : order)
      sorted.append(gid[i], x.data() + i * s, f.data() + i * c);
    *this = std::move(sorted);
  }
  Table<double> points() const { return table(x, s); }
  Table<double> values() const { return table(f, c); }
  // The row-major n × w array v as a table.
  Table<double> table(const std::vector<double> &v, std::int64_t w) const {
    Table<double> t(n(), w, Uninitialized{});
    for (std::int64_t i = 0; i < n(); ++i)
      for (std::int64_t k = 0; k < w; ++k)
        t(i, k) = v[i * w + k];
    return t;
  }
};

// Sends every row to the rank owning its cell; the rows received, in global row order.
Rows route(const Communicator &comm, const Rows &in, const spatial::GridIndex &g,
           const std::vector<std::int64_t> &cut) {
  Outbox box(comm.size());
  phase(comm, [&] { // (a rank out of memory fails with the others, not alone)
    for (std::int64_t i = 0; i < in.n(); ++i)
      in.pack(i, box.to[owner(cut, g.hash(in.x.data() + i * in.s))]);
  });
  const auto got = box.exchange(comm, "the PUM's partition");
  Rows out{in.s, in.c, {}, {}, {}};
  phase(comm, [&] {
    out.unpack(got);
    out.sort();
  });
  return out;
}

// Contiguous cell ranges of about equal work, one per rank: a patch's fit costs ~n³, n estimated
// by the points of the cells within `ring` of its own (counted over the ranks).
std::vector<std::int64_t> cut_cells(const Communicator &comm, const spatial::GridIndex &g,
                                    const Rows &rows, std::int64_t ring) {
  const std::int64_t ncells = g.num_cells();
  const int P = comm.size();
  std::vector<double> count(static_cast<std::size_t>(ncells), 0.0);
  for (std::int64_t i = 0; i < rows.n(); ++i)
    count[g.hash(rows.x.data() + i * rows.s)] += 1;
  comm.allreduce_sum(count.data(), ncells);
  std::vector<double> work(static_cast<std::size_t>(ncells) + 1, 0.0);
  for (std::int64_t c = 0; c < ncells; ++c) {
    double n = 0;
    g.for_neighbours(c, ring, [&](std::int64_t cell) { n += count[cell]; });
    work[c + 1] = work[c] + n * n * n + 1;
  }
  std::vector<std::int64_t> cut(static_cast<std::size_t>(P) + 1, ncells);
  cut[0] = 0;
  for (int r = 1; r < P; ++r)
    cut[r] = std::lower_bound(work.begin(), work.end(), work[ncells] * r / P) - work.begin();
  return cut;
}

// Repeated points of the rows (all in this rank's cells, in global row order; `index`: their cell
// index) are an error naming the first pair in one process's order, or (merge) become one point
// with their mean value, kept at the first's global row. Returns the number merged away.
std::int64_t merge_or_reject(Rows &rows, const spatial::GridIndex &index, const Table<double> &x,
                             bool merge) {
  const std::int64_t c = rows.c;
  std::vector<std::int64_t> first;
  const std::int64_t dups = pum_detail::find_repeats(
      index.cells(), x, merge, [&](std::int64_t i) { return rows.gid[i]; }, first);
  if (dups == 0)
    return 0;
  // The first of each group keeps its row; its value is the group's mean, summed in row order.
  std::vector<double> f(static_cast<std::size_t>((rows.n() - dups) * c), 0.0);
  const std::vector<std::int64_t> kept = pum_detail::merge_groups(
      first,
      [&](std::int64_t r, std::int64_t i) {
        for (std::int64_t q = 0; q < c; ++q)
          f[r * c + q] += rows.f[i * c + q];
      },
      [&](std::int64_t r, std::int64_t count) {
        for (std::int64_t q = 0; q < c; ++q)
          f[r * c + q] /= static_cast<double>(count);
      });
  Rows out{rows.s, c, {}, {}, {}};
  for (std::size_t r = 0; r < kept.size(); ++r)
    out.append(rows.gid[kept[r]], rows.x.data() + kept[r] * rows.s, f.data() + r * c);
  rows = std::move(out);
  return dups;
}

// What an exchange brought (from[r]: rank r's records of `head` numbers, then s coordinates): each
// record's source rank, its head numbers (head per record), and the points as a table.
struct PointRecords {
  std::vector<int> rank;
  std::vector<std::int64_t> head;
  Table<double> points;
};
PointRecords point_records(const std::vector<std::vector<double>> &from, std::int64_t head,
                           std::int64_t s) {
  PointRecords out;
  std::vector<double> flat;
  for (std::size_t r = 0; r < from.size(); ++r)
    for (std::size_t at = 0; at < from[r].size(); at += static_cast<std::size_t>(head + s)) {
      out.rank.push_back(static_cast<int>(r));
      for (std::int64_t h = 0; h < head; ++h)
        out.head.push_back(static_cast<std::int64_t>(from[r][at + h]));
      flat.insert(flat.end(), from[r].begin() + at + head, from[r].begin() + at + head + s);
    }
  const auto n = static_cast<std::int64_t>(out.rank.size());
  out.points = Table<double>(n, s, Uninitialized{});
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < s; ++k)
      out.points(i, k) = flat[i * s + k];
  return out;
}

// Sends row k of `values` with its id ids[k] to rank to[k]; calls put(id, row) for every row this
// rank receives.
template <class Put>
void send_rows(const Communicator &comm, const std::vector<int> &to,
               const std::vector<std::int64_t> &ids, const Table<double> &values, Put &&put) {
  Outbox box(comm.size());
  const std::int64_t c = values.cols();
  for (std::size_t k = 0; k < ids.size(); ++k) {
    auto &v = box.to[to[k]];
    v.push_back(static_cast<double>(ids[k]));
    for (std::int64_t q = 0; q < c; ++q)
      v.push_back(values(static_cast<std::int64_t>(k), q));
  }
  for (const auto &got : box.exchange(comm, "the PUM's evaluation"))
    for (std::size_t at = 0; at < got.size(); at += static_cast<std::size_t>(1 + c))
      put(static_cast<std::int64_t>(got[at]), got.data() + at + 1);
}

} // namespace

void PumInterpolant::set_data_partitioned(const Table<double> &points, const Table<double> &values,
                                          const Communicator &comm) {
  if (!comm.distributed()) {
    set_data(points, values);
    impl_->stats.owned_points = points.rows() - impl_->stats.merged_duplicates;
    return;
  }
  auto fresh = std::make_unique<Impl>();
  fresh->opt = impl_->opt;
  Impl &im = *fresh;
  const int P = comm.size(), rank = comm.rank();
  phase(comm, [&] {
    im.validate(points, values, /*partitioned=*/true);
    if (im.opt.backend == Backend::cuda)
      throw Error(ErrorCode::unsupported, "PUM over MPI ranks fits on the CPU cores of each "
                                          "rank; use the cpu or auto backend");
  });
  const auto rows = comm.allgather(points.rows()), dims = comm.allgather(points.cols()),
             cols = comm.allgather(values.cols());
  for (int r = 1; r < P; ++r)
    if (dims[r] != dims[0] || cols[r] != cols[0])
      throw AgreedError(ErrorCode::shape_mismatch,
                        fmt::format("PUM over {} ranks: rank {}'s data have dimension {} and {} "
                                    "value columns, rank 0's {} and {}",
                                    P, r, dims[r], cols[r], dims[0], cols[0]));
  std::int64_t total = 0, offset = 0;
  for (int r = 0; r < P; ++r) {
    offset += r < rank ? rows[r] : 0;
    total += rows[r];
  }
  if (total == 0)
    throw AgreedError(ErrorCode::empty_input, "PUM: no data points on any rank");
  check_finite_over_ranks(comm, {{&points, "data points"}, {&values, "data values"}}, offset,
                          total);
  const auto t0 = Clock::now();
  const std::int64_t s = dims[0];
  im.s = s;
  im.ncols = cols[0];
  im.min_pts = im.opt.min_patch_points > 0 ? im.opt.min_patch_points : 3 * (im.s + 1);
  im.comm = comm;

  // The data's box over the ranks, and the grid one process makes for it.
  std::vector<double> lo, hi, box(static_cast<std::size_t>(2 * s));
  spatial::bounding_box(points, lo, hi); // ±inf on a rank without rows
  for (std::int64_t k = 0; k < s; ++k) {
    box[k] = -lo[k];
    box[s + k] = hi[k];
  }
  comm.allreduce_max(box.data(), 2 * s);
  for (std::int64_t k = 0; k < s; ++k) {
    lo[k] = -box[k];
    hi[k] = box[s + k];
  }
  std::unique_ptr<spatial::GridIndex> g;
  const auto geometry = [&](std::int64_t n) {
    phase(comm, [&] {
      g = std::make_unique<spatial::GridIndex>(lo.data(), hi.data(), s, n, im.opt.patch_density,
                                               im.opt.patch_radius);
    });
  };
  geometry(total);
  std::int64_t base_ring = ring_for(g->patch_radius(), extent(*g).min_width);

  Rows mine{s, im.ncols, {}, {}, {}};
  phase(comm, [&] {
    std::vector<double> xi(static_cast<std::size_t>(s)), fi(static_cast<std::size_t>(im.ncols));
    for (std::int64_t i = 0; i < points.rows(); ++i) {
      for (std::int64_t k = 0; k < s; ++k)
        xi[k] = points(i, k);
      for (std::int64_t q = 0; q < im.ncols; ++q)
        fi[q] = values(i, q);
      mine.append(offset + i, xi.data(), fi.data());
    }
  });
  std::vector<std::int64_t> cut = cut_cells(comm, *g, mine, base_ring);
  Rows own = route(comm, mine, *g, cut);
  mine = Rows{};
  // The cell index of this rank's points (each cell's in global row order), used by the
  // duplicate check and the halo.
  std::unique_ptr<spatial::GridIndex> own_index;
  Table<double> own_x;
  const auto index_own = [&] {
    phase(comm, [&] {
      own_x = own.points();
      own_index = std::make_unique<spatial::GridIndex>(*g);
      own_index->index_points(own_x);
    });
  };
  index_own();
  // Repeated points share a cell, so each rank finds those of its own cells.
  std::int64_t merged = 0;
  phase(comm, [&] { merged = merge_or_reject(own, *own_index, own_x, im.opt.merge_duplicates); });
  merged = static_cast<std::int64_t>(comm.allreduce_sum(static_cast<double>(merged)));
  im.n_total = total - merged;
  if (merged > 0) { // one process makes its grid for the points kept
    geometry(im.n_total);
    base_ring = ring_for(g->patch_radius(), extent(*g).min_width);
    cut = cut_cells(comm, *g, own, base_ring);
    own = route(comm, own, *g, cut);
    index_own();
  }
  own_x = Table<double>();
  im.stats.merged_duplicates = merged;
  const std::int64_t cell_lo = cut[rank], cell_hi = std::max(cell_lo, cut[rank + 1]);
  std::int64_t max_d = 1;
  for (const std::int64_t dk : g->cells_per_axis())
    max_d = std::max(max_d, dk);

  // The halo. First the points of the cells within the patches' ring of this rank's cells. A
  // patch that grows beyond the cells a rank holds asks for a wider ring around its own cell (at
  // least twice as wide); the owners of those cells send the ones not sent before. Only the ranks
  // with such patches receive more.
  std::vector<std::unordered_set<std::int64_t>> sent(static_cast<std::size_t>(P));
  // Adds the points of own cell c to the records for rank r, unless sent to r before.
  const auto send_cell = [&](Outbox &out, int r, std::int64_t c) {
    const auto &cl = own_index->cells();
    if (cl.size(c) == 0 || !sent[r].insert(c).second)
      return;
    for (std::int64_t a = cl.ptr[c]; a < cl.ptr[c + 1]; ++a)
      own.pack(cl.idx[a], out.to[r]);
  };
  Rows halo{s, im.ncols, {}, {}, {}};
  {
    Outbox first(P);
    phase(comm, [&] {
      for (std::int64_t c = cell_lo; c < cell_hi; ++c)
        if (own_index->cells().size(c) > 0)
          for (const int r : ranks_near(*g, cut, c, base_ring, rank))
            send_cell(first, r, c);
    });
    const auto got = first.exchange(comm, "the PUM's halo exchange");
    phase(comm, [&] { halo.unpack(got); });
  }
  // ring[c − cell_lo]: the rings of cells around own cell c whose points this rank holds (at
  // least the whole grid's width: no limit).
  std::vector<std::int64_t> ring(static_cast<std::size_t>(cell_hi - cell_lo), base_ring);
  const auto limits = [&] {
    std::vector<std::int64_t> l(ring);
    for (auto &v : l)
      v = v >= max_d ? std::numeric_limits<std::int64_t>::max() : v;
    return l;
  };
  for (int round = 1;; ++round) {
    std::int64_t short_of = 0;
    std::vector<double> asks; // (cell, ring) pairs of this rank's patches short of points
    phase(comm, [&] {
      Rows local = own;
      for (std::int64_t i = 0; i < halo.n(); ++i)
        local.append(halo.gid[i], halo.x.data() + i * s, halo.f.data() + i * im.ncols);
      local.sort();
      im.grid = std::make_unique<spatial::GridIndex>(*g);
      const Table<double> x = local.points();
      im.grid->index_points(x);
      im.pts = im.grid->gather(x);
      im.vals = im.grid->gather(local.values());
      im.grid->use_sorted_order();
      const std::vector<std::int64_t> l = limits();
      short_of = im.build_patches(cell_lo, cell_hi, &l);
      for (std::int64_t c = cell_lo; c < cell_hi && short_of > 0; ++c)
        if (const std::int64_t need = im.needs[c - cell_lo]; need > 0) {
          std::int64_t &r = ring[c - cell_lo];
          r = std::min(std::max(need, 2 * r), max_d);
          asks.insert(asks.end(), {static_cast<double>(c), static_cast<double>(r)});
        }
    });
    im.stats.halo_rounds = round;
    const auto counts = comm.allgather(static_cast<std::int64_t>(asks.size()));
    const std::int64_t all = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
    if (all == 0)
      break;
    std::vector<double> every(static_cast<std::size_t>(all));
    comm.allgatherv(asks.data(), static_cast<std::int64_t>(asks.size()), every.data(), counts);
    Outbox more(P);
    phase(comm, [&] {
      std::int64_t at = 0;
      for (int r = 0; r < P; ++r)
        for (std::int64_t k = 0; k < counts[r]; k += 2, at += 2) {
          if (r == rank)
            continue;
          const auto c = static_cast<std::int64_t>(every[at]);
          const auto wide = static_cast<std::int64_t>(every[at + 1]);
          for_runs(*g, c, wide, [&](std::int64_t a, std::int64_t b) {
            for (std::int64_t cell = std::max(a, cell_lo); cell <= std::min(b, cell_hi - 1); ++cell)
              send_cell(more, r, cell);
          });
        }
    });
    const auto got = more.exchange(comm, "the PUM's halo exchange");
    phase(comm, [&] { halo.unpack(got); });
  }
  sent.clear();
  im.stats.owned_points = own.n();
  im.stats.halo_points = halo.n();
  {
    double sums[4] = {
        static_cast<double>(im.stats.patches), static_cast<double>(im.stats.empty_patches),
        static_cast<double>(im.stats.grown_patches), static_cast<double>(im.pidx.size())};
    comm.allreduce_sum(sums, 4);
    if (sums[3] == 0)
      throw AgreedError(ErrorCode::internal, "PUM: no patch holds a data point");
    const double largest = comm.allreduce_max(static_cast<double>(im.largest_patch));
    if (largest > static_cast<double>(pum_detail::max_patch_points))
      throw AgreedError(ErrorCode::invalid_argument,
                        pum_detail::too_large_patch(static_cast<std::int64_t>(largest)));
    im.stats.patches = static_cast<std::int64_t>(sums[0]);
    im.stats.empty_patches = static_cast<std::int64_t>(sums[1]);
    im.stats.grown_patches = static_cast<std::int64_t>(sums[2]);
  }
  im.stats.seconds_index = since(t0);

  const auto t1 = Clock::now();
  phase(comm, [&] { im.fit(cell_lo, cell_hi); });
  im.stats.regularised_patches = static_cast<std::int64_t>(
      comm.allreduce_sum(static_cast<double>(im.stats.regularised_patches)));
  im.finish_stats(); // over the ranks

  // Every patch's size, and the patches that grew (visited by every evaluation), on every rank.
  const std::int64_t ncells = g->num_cells();
  {
    std::vector<double> count(static_cast<std::size_t>(ncells), 0.0);
    std::vector<double> grown;
    for (std::int64_t c = cell_lo; c < cell_hi; ++c)
      count[c] = static_cast<double>(im.patches[c].n());
    comm.allreduce_sum(count.data(), ncells);
    im.gcount.assign(count.begin(), count.end());
    for (const std::int64_t c : im.grown_list) {
      grown.push_back(static_cast<double>(c));
      grown.push_back(im.patches[c].radius);
    }
    std::vector<std::int64_t> sizes = comm.allgather(static_cast<std::int64_t>(grown.size()));
    std::vector<double> all(
        static_cast<std::size_t>(std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0})));
    comm.allgatherv(grown.data(), static_cast<std::int64_t>(grown.size()), all.data(), sizes);
    im.grown_list.clear(); // in cell order: the ranks' ranges are
    for (std::size_t k = 0; k < all.size(); k += 2) {
      const auto c = static_cast<std::int64_t>(all[k]);
      im.grown_list.push_back(c);
      im.patches[c].radius = all[k + 1];
    }
  }
  // The fitted patches to the ranks whose cells they reach: a patch of the seed's radius those
  // within the evaluation's ring of cells, one that grew those its radius reaches (one cell more,
  // against rounding in the cell of a point).
  const double delta = g->patch_radius(), min_width = extent(*g).min_width;
  const std::int64_t per = im.ncols * im.np;
  Outbox send(P);
  phase(comm, [&] {
    for (std::int64_t c = cell_lo; c < cell_hi; ++c) {
      const Patch &Pc = im.patches[c];
      if (Pc.n() == 0)
        continue;
      const std::int64_t reach = Pc.radius > delta ? ring_for(Pc.radius, min_width) + 1 : base_ring;
      for (const int r : ranks_near(*g, cut, c, reach, rank)) {
        auto &v = send.to[r];
        v.insert(v.end(), {static_cast<double>(c), Pc.radius, Pc.eps, Pc.scale,
                           static_cast<double>(Pc.n())});
        v.insert(v.end(), im.pcoef.begin() + c * per, im.pcoef.begin() + (c + 1) * per);
        for (std::int64_t a = Pc.begin; a < Pc.end; ++a)
          for (std::int64_t k = 0; k < s; ++k)
            v.push_back(im.pts(im.pidx[a], k));
        v.insert(v.end(), im.coef.begin() + im.coef_at[c],
                 im.coef.begin() + im.coef_at[c] + Pc.n() * im.ncols);
      }
    }
  });
  const auto got = send.exchange(comm, "the PUM's patch exchange");
  std::int64_t received = 0;
  phase(comm, [&] {
    std::vector<double> extra; // the received patches' points, row-major
    const std::int64_t base_rows = im.pts.rows();
    for (const auto &v : got)
      for (std::size_t at = 0; at < v.size();) {
        const auto c = static_cast<std::int64_t>(v[at]);
        const auto n = static_cast<std::int64_t>(v[at + 4]);
        Patch &Pc = im.patches[c];
        Pc.radius = v[at + 1];
        Pc.eps = v[at + 2];
        Pc.scale = v[at + 3];
        at += 5;
        std::copy(v.begin() + at, v.begin() + at + per, im.pcoef.begin() + c * per);
        at += static_cast<std::size_t>(per);
        Pc.begin = static_cast<std::int64_t>(im.pidx.size());
        Pc.end = Pc.begin + n;
        for (std::int64_t a = 0; a < n; ++a)
          im.pidx.push_back(base_rows + static_cast<std::int64_t>(extra.size()) / s + a);
        extra.insert(extra.end(), v.begin() + at, v.begin() + at + n * s);
        at += static_cast<std::size_t>(n * s);
        im.coef_at[c] = static_cast<std::int64_t>(im.coef.size());
        im.coef.insert(im.coef.end(), v.begin() + at, v.begin() + at + n * im.ncols);
        at += static_cast<std::size_t>(n * im.ncols);
        ++received;
      }
    if (!extra.empty()) {
      const std::int64_t add = static_cast<std::int64_t>(extra.size()) / s;
      Table<double> pts(base_rows + add, s, Uninitialized{});
      for (std::int64_t k = 0; k < s; ++k) {
        std::copy(im.pts.data() + k * base_rows, im.pts.data() + (k + 1) * base_rows,
                  pts.data() + k * (base_rows + add));
        for (std::int64_t a = 0; a < add; ++a)
          pts(base_rows + a, k) = extra[a * s + k];
      }
      im.pts = std::move(pts);
    }
  });
  im.vals = Table<double>(); // the fits are done
  im.stats.halo_patches = received;
  im.cut = cut;
  im.base_ring = base_ring;
  im.stats.fit_backend = Backend::cpu;
  im.stats.seconds_fit = since(t1);
  impl_ = std::move(fresh);
}

const Communicator *PumInterpolant::communicator() const {
  return impl_->comm ? &*impl_->comm : nullptr;
}

Table<double> PumInterpolant::Impl::evaluate_partitioned(const Table<double> &y) {
  const Communicator &cm = *comm;
  const int P = cm.size();
  phase(cm, [&] {
    if (y.cols() != s)
      throw Error(ErrorCode::shape_mismatch,
                  fmt::format("evaluation points have {} columns but the data have dimension {}",
                              y.cols(), s));
  });
  const auto counts = cm.allgather(y.rows());
  std::vector<std::int64_t> first_row(static_cast<std::size_t>(P) + 1, 0);
  for (int r = 0; r < P; ++r)
    first_row[r + 1] = first_row[r] + counts[r];
  check_finite_over_ranks(cm, {{&y, "evaluation points"}}, first_row[cm.rank()], first_row[P]);
  // Each point to the rank owning its cell (outside the box: the nearest cell's).
  Outbox ask(P);
  phase(cm, [&] {
    for (std::int64_t i = 0; i < y.rows(); ++i) {
      std::array<double, spatial::grid_max_dim> x{};
      for (std::int64_t k = 0; k < s; ++k)
        x[k] = y(i, k);
      auto &v = ask.to[owner(cut, grid->hash(x.data()))];
      v.push_back(static_cast<double>(i));
      v.insert(v.end(), x.begin(), x.begin() + s);
    }
  });
  // (the asking rank, the point's index there, the point)
  const auto [src, idx, Y] = point_records(ask.exchange(cm, "the PUM's evaluation"), 1, s);
  const auto nq = static_cast<std::int64_t>(idx.size());
  Table<double> out(nq, ncols);
  std::vector<std::int64_t> status;
  phase(cm, [&] { eval_cpu(Y, out, status); });

  // Extrapolated points whose nearest patch another rank holds: evaluated there.
  Outbox far(P);
  for (std::int64_t q = 0; q < nq; ++q)
    if (status[q] >= 0) {
      auto &v = far.to[owner(cut, status[q])];
      v.insert(v.end(), {static_cast<double>(q), static_cast<double>(status[q])});
      for (std::int64_t k = 0; k < s; ++k)
        v.push_back(Y(q, k));
    }
  {
    // (the evaluating rank, its point's index and the patch, the point)
    const auto [from, head, Z] = point_records(far.exchange(cm, "the PUM's evaluation"), 2, s);
    const auto nz = static_cast<std::int64_t>(from.size());
    std::vector<std::int64_t> qid(static_cast<std::size_t>(nz)), patch(qid.size());
    for (std::int64_t z = 0; z < nz; ++z) {
      qid[z] = head[2 * z];
      patch[z] = head[2 * z + 1];
    }
    Table<double> zout(nz, ncols);
    phase(cm, [&] {
      for (const std::int64_t j : patch)
        if (patches[j].n() == 0)
          throw Error(ErrorCode::internal,
                      fmt::format("PUM over ranks: patch {} asked of rank {}, which lacks it", j,
                                  cm.rank()));
      eval_single_patches(Z, patch, zout);
    });
    send_rows(cm, from, qid, zout, [&](std::int64_t q, const double *row) {
      for (std::int64_t c = 0; c < ncols; ++c)
        out(q, c) = row[c];
      status[q] = eval_ok;
    });
  }

  // Points outside the box or in holes: the first (in the ranks' points in rank order) of the
  // outside ones, else of the holes, as one process reports.
  double worst[2] = {-std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()};
  for (std::int64_t q = 0; q < nq; ++q)
    if (status[q] == eval_outside || status[q] == eval_hole)
      worst[status[q] == eval_outside ? 0 : 1] =
          std::max(worst[status[q] == eval_outside ? 0 : 1],
                   -static_cast<double>(first_row[src[q]] + idx[q]));
  cm.allreduce_max(worst, 2);
  const bool outside = worst[0] > -std::numeric_limits<double>::infinity();
  if (outside || worst[1] > -std::numeric_limits<double>::infinity()) {
    const auto bad = static_cast<std::int64_t>(-(outside ? worst[0] : worst[1]));
    std::string message;
    for (std::int64_t q = 0; q < nq; ++q)
      if (first_row[src[q]] + idx[q] == bad) {
        std::string where;
        for (std::int64_t k = 0; k < s; ++k)
          where += fmt::format("{}{}", k ? ", " : "", Y(q, k));
        message = outside ? fmt::format("evaluation point {} ({}) lies outside the data's bounding "
                                        "box; use --extrapolate to evaluate it from the nearest "
                                        "patches",
                                        bad, where)
                          : fmt::format("evaluation point {} ({}) is not covered by any patch (a "
                                        "hole in the data); use --extrapolate",
                                        bad, where);
      }
    cm.agree(!message.empty(), static_cast<int>(ErrorCode::invalid_argument), message);
  }

  // The values back to the ranks that asked.
  Table<double> result(y.rows(), ncols);
  send_rows(cm, src, idx, out, [&](std::int64_t i, const double *row) {
    for (std::int64_t c = 0; c < ncols; ++c)
      result(i, c) = row[c];
  });
  return result;
}

} // namespace ksum
