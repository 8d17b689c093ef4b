// DistributedSum (include/ksum/distributed.hpp): the direct sum over ranks, source blocks passed
// around a ring. Step s of P: rank r sums its targets against the block of rank (r − s) mod P while
// that block travels on to r + 1 and the next arrives from r − 1; after P steps every rank has
// its targets' sums over all sources. A block travels as one array of doubles, its coordinates then
// its weights (column-major, n × (d + nrhs)); float values survive the trip exactly.
#include "core/validate.hpp"
#include "direct/distributed_fmm.hpp"

#include <ksum/device.hpp>
#include <ksum/distributed.hpp>
#include <ksum/error.hpp>

#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numeric>
#include <utility>

namespace ksum {

namespace {

// The FMM's partition and essential-tree counts into the plan's stats.
void copy_fmm_counts(const detail::DistributedFmmStats &fs, DistributedStats &st) {
  st.fmm_owned = fs.owned;
  st.fmm_received = fs.received;
  st.fmm_pseudo_cells_sent = fs.sent_cells;
  st.fmm_seconds_partition = fs.seconds_partition;
  st.fmm_seconds_let = fs.seconds_walk + fs.seconds_let;
  st.fmm_seconds_local_setup = fs.seconds_local_setup;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

template <std::floating_point T> struct DistributedSum<T>::Impl {
  Communicator comm;
  DirectOptions opt;
  Table<T> src, tgt; // tgt empty when self
  bool self = false, ready = false;
  std::int64_t d = 0, total_targets = 0;
  std::vector<std::int64_t> counts; // sources per rank
  DistributedStats stats;
  std::unique_ptr<detail::DistributedFmm<T>> fmm; // Method::fmm
};

template <std::floating_point T>
DistributedSum<T>::DistributedSum(Communicator comm, DirectOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->comm = std::move(comm);
  // Agreed: a rank whose options fail (no GPU on its host, a bad device id) fails every rank.
  impl_->comm.agree(capture([&] {
    if (options.method != Method::direct && options.method != Method::fmm)
      throw Error(
          ErrorCode::unsupported,
          fmt::format("DistributedSum: method {} is not distributed; use method direct (every "
                      "pair, over the ranks), fmm (3D potentials) or run the {} in one process",
                      to_string(options.method), to_string(options.method)));
    if (options.method == Method::fmm && options.gradient)
      throw Error(ErrorCode::unsupported,
                  "DistributedSum: the distributed FMM sums potentials; for gradients use method "
                  "direct");
    // One GPU per rank by default: the rank's index on its host modulo the host's GPUs.
    if (options.devices.empty() && options.backend != Backend::cpu && impl_->comm.distributed()) {
      const auto g = gpus();
      if (!g.empty())
        options.devices = {g[static_cast<std::size_t>(impl_->comm.local_rank()) % g.size()].id};
    }
    DirectSum<T> check(options); // validates the options
  }));
  impl_->opt = std::move(options);
  impl_->stats.ranks = impl_->comm.size();
  impl_->stats.rank = impl_->comm.rank();
}

template <std::floating_point T> DistributedSum<T>::~DistributedSum() = default;
template <std::floating_point T>
DistributedSum<T>::DistributedSum(DistributedSum &&) noexcept = default;
template <std::floating_point T>
DistributedSum<T> &DistributedSum<T>::operator=(DistributedSum &&) noexcept = default;

template <std::floating_point T> void DistributedSum<T>::set_points(const Table<T> &local_sources) {
  set(local_sources, nullptr);
}

template <std::floating_point T>
void DistributedSum<T>::set_points(const Table<T> &local_sources, const Table<T> &local_targets) {
  set(local_sources, &local_targets);
}

template <std::floating_point T>
void DistributedSum<T>::set(const Table<T> &local_sources, const Table<T> *local_targets) {
  Impl &im = *impl_;
  im.ready = false;
  const Communicator &comm = im.comm;
  const int rank = comm.rank();
  comm.agree(capture([&] {
    detail::check_finite(local_sources, fmt::format("sources of rank {}", rank).c_str());
    if (local_targets) {
      if (local_targets->cols() != local_sources.cols())
        throw Error(ErrorCode::shape_mismatch,
                    fmt::format("targets of rank {} have {} columns but its sources have {}", rank,
                                local_targets->cols(), local_sources.cols()));
      detail::check_finite(*local_targets, fmt::format("targets of rank {}", rank).c_str());
    }
  }));
  // Every rank the same dimension and the same kind of call (with or without targets).
  const auto dims = comm.allgather(local_sources.cols());
  const auto separate = comm.allgather(local_targets ? 1 : 0);
  for (std::size_t r = 0; r < dims.size(); ++r) {
    if (dims[r] != dims[0] || dims[r] < 1)
      throw AgreedError(
          ErrorCode::shape_mismatch,
          fmt::format("sources: rank 0 has {} columns and rank {} has {}: every rank's "
                      "slice needs the same dimension ≥ 1 (0 rows are fine)",
                      dims[0], r, dims[r]));
    if (separate[r] != separate[0])
      throw AgreedError(ErrorCode::invalid_argument,
                        fmt::format("set_points: rank 0 gave {} and rank {} {}: every rank passes "
                                    "targets (an empty table for none of its own) or none does",
                                    separate[0] ? "targets" : "no targets", r,
                                    separate[r] ? "targets" : "none"));
  }
  im.counts = comm.allgather(local_sources.rows());
  const auto m = local_targets ? comm.allgather(local_targets->rows()) : im.counts;
  im.d = dims[0];
  im.self = local_targets == nullptr;
  im.total_targets = 0;
  for (auto c : m)
    im.total_targets += c;
  // Each block travels as one MPI message of n · (d + rhs) doubles (checked again with the
  // number of right-hand sides in execute).
  for (std::size_t r = 0; r < im.counts.size(); ++r)
    if (im.counts[r] * (im.d + 1) > std::numeric_limits<int>::max())
      throw AgreedError(
          ErrorCode::unsupported,
          fmt::format("rank {} holds {} sources of dimension {}: a block travels as one MPI "
                      "message of at most {} values; use more ranks",
                      r, im.counts[r], im.d, std::numeric_limits<int>::max()));
  if (im.opt.method == Method::fmm && im.d != 3)
    throw AgreedError(ErrorCode::unsupported,
                      fmt::format("DistributedSum: the distributed FMM sums over points in 3D; "
                                  "dimension {}: use method direct",
                                  im.d));
  // The tables are copied after the collectives: a rank that runs out of memory here fails
  // alone, so the copies are agreed too.
  comm.agree(capture([&] {
    im.src = local_sources;
    im.tgt = local_targets ? *local_targets : Table<T>();
  }));
  im.fmm.reset();
  if (im.opt.method == Method::fmm)
    im.fmm = std::make_unique<detail::DistributedFmm<T>>(comm, im.opt, im.src,
                                                         im.self ? nullptr : &im.tgt); // agreed
  if (im.fmm)
    copy_fmm_counts(im.fmm->stats(), im.stats);
  im.ready = true;
}

template <std::floating_point T>
Table<T> DistributedSum<T>::execute(const Table<T> &local_weights) {
  Impl &im = *impl_;
  if (!im.ready)
    throw Error(ErrorCode::invalid_argument,
                "DistributedSum::execute before set_points (or after a failed rebalance: call "
                "set_points again)");
  const auto t0 = std::chrono::steady_clock::now();
  const Communicator &comm = im.comm;
  const int P = comm.size(), rank = comm.rank();
  const std::int64_t d = im.d;
  comm.agree(capture([&] {
    if (local_weights.rows() != im.src.rows())
      throw Error(ErrorCode::shape_mismatch,
                  fmt::format("weights of rank {} have {} rows but its slice has {} sources", rank,
                              local_weights.rows(), im.src.rows()));
    detail::check_finite(local_weights, fmt::format("weights of rank {}", rank).c_str());
  }));
  const auto rhs = comm.allgather(local_weights.cols());
  for (std::size_t r = 0; r < rhs.size(); ++r)
    if (rhs[r] != rhs[0] || rhs[r] < 1)
      throw AgreedError(
          ErrorCode::shape_mismatch,
          fmt::format("weights: rank 0 has {} columns and rank {} has {}: every rank needs "
                      "the same number of right-hand sides ≥ 1",
                      rhs[0], r, rhs[r]));
  const std::int64_t nrhs = rhs[0], width = d + nrhs;
  if (im.fmm) {
    DistributedStats st = im.stats;
    st.local_sources = im.src.rows();
    st.local_targets = im.self ? im.src.rows() : im.tgt.rows();
    st.total_sources = std::accumulate(im.counts.begin(), im.counts.end(), std::int64_t{0});
    st.total_targets = im.total_targets;
    Table<T> u = im.fmm->execute(local_weights);
    const auto &fs = im.fmm->stats();
    // For the FMM: compute = the pseudo-particles' weights and the local FMM, wait = the exchanges
    // with their packing.
    st.seconds_compute = fs.seconds_multipoles + fs.seconds_local;
    st.seconds_wait = fs.seconds_exchange;
    st.fmm_seconds_multipoles = fs.seconds_multipoles;
    st.fmm_seconds_local = fs.seconds_local;
    st.fmm_local = fs.local;
    st.seconds_execute = since(t0);
    st.bytes_sent = 0;
    copy_fmm_counts(fs, st);
    im.stats = st;
    return u;
  }
  const Table<T> &targets = im.self ? im.src : im.tgt;
  const std::int64_t m = targets.rows();
  const std::int64_t out_cols = im.opt.gradient ? nrhs * (1 + d) : nrhs;
  std::int64_t biggest = 0;
  for (auto c : im.counts)
    biggest = std::max(biggest, c);
  if (biggest * width > std::numeric_limits<int>::max()) // every rank knows the counts
    throw AgreedError(
        ErrorCode::unsupported,
        fmt::format("a rank holds {} sources with {} coordinates and {} right-hand sides: "
                    "a block travels as one MPI message of at most {} values; use more "
                    "ranks or fewer right-hand sides per call",
                    biggest, d, nrhs, std::numeric_limits<int>::max()));
  // The result and the travelling block and the one arriving, as doubles (agreed: a rank may
  // run out of memory alone).
  Table<T> out;
  std::vector<double> cur, next;
  comm.agree(capture([&] {
    out = Table<T>(m, out_cols);
    cur.resize(static_cast<std::size_t>(biggest * width));
    next.resize(static_cast<std::size_t>(biggest * width));
  }));
  const std::int64_t n0 = im.src.rows();
  for (std::int64_t c = 0; c < d; ++c)
    for (std::int64_t i = 0; i < n0; ++i)
      cur[static_cast<std::size_t>(c * n0 + i)] = double(im.src(i, c));
  for (std::int64_t c = 0; c < nrhs; ++c)
    for (std::int64_t i = 0; i < n0; ++i)
      cur[static_cast<std::size_t>((d + c) * n0 + i)] = double(local_weights(i, c));

  DistributedStats st = im.stats;
  st.local_sources = n0;
  st.local_targets = m;
  st.total_sources = 0;
  for (auto c : im.counts)
    st.total_sources += c;
  st.total_targets = im.total_targets;
  st.seconds_compute = st.seconds_wait = st.bytes_sent = 0;

  DirectOptions o = im.opt;
  o.progress = nullptr;
  for (int s = 0; s < P; ++s) {
    const int owner = (rank - s + P) % P;
    const std::int64_t n = im.counts[static_cast<std::size_t>(owner)];
    Communicator::Exchange ex;
    if (s + 1 < P) {
      const int from = (rank - s - 1 + 2 * P) % P;
      const std::int64_t n_next = im.counts[static_cast<std::size_t>(from)];
      // One tag for all steps: MPI keeps the order of messages between two ranks.
      ex = comm.start_exchange(cur.data(), n * width, (rank + 1) % P, next.data(), n_next * width,
                               (rank - 1 + P) % P);
      st.bytes_sent += 8.0 * static_cast<double>(n * width);
    }
    const auto tc = std::chrono::steady_clock::now();
    const Failure failure = capture([&] {
      if (m > 0 && n > 0) {
        DirectSum<T> plan(o);
        Table<T> w(n, nrhs, Uninitialized{});
        for (std::int64_t c = 0; c < nrhs; ++c)
          for (std::int64_t i = 0; i < n; ++i)
            w(i, c) = static_cast<T>(cur[static_cast<std::size_t>((d + c) * n + i)]);
        Table<T> part;
        if (im.self && s == 0) { // this rank's own sources: the self term j = i is left out
          plan.set_points(im.src);
          part = plan.execute(w);
        } else {
          Table<T> y(n, d, Uninitialized{});
          for (std::int64_t c = 0; c < d; ++c)
            for (std::int64_t i = 0; i < n; ++i)
              y(i, c) = static_cast<T>(cur[static_cast<std::size_t>(c * n + i)]);
          plan.set_points(y, targets);
          part = plan.execute(w);
        }
        T *o_data = out.data();
        const T *p_data = part.data();
        for (std::int64_t k = 0; k < m * out_cols; ++k)
          o_data[k] += p_data[k];
      }
    });
    st.seconds_compute += since(tc);
    const auto tw = std::chrono::steady_clock::now();
    ex.wait();
    st.seconds_wait += since(tw);
    // A failure on one rank (e.g. out of GPU memory) reaches every rank before the next step.
    comm.agree(failure);
    std::swap(cur, next);
    if (im.opt.progress) // a callback that throws on one rank throws on all
      comm.agree(capture([&] { im.opt.progress(double(s + 1) / P); }));
  }
  st.seconds_execute = since(t0);
  im.stats = st;
  return out;
}

template <std::floating_point T> double DistributedSum<T>::rebalance(double threshold) {
  Impl &im = *impl_;
  if (!im.ready)
    throw Error(ErrorCode::invalid_argument, "DistributedSum::rebalance before set_points");
  if (!im.fmm)
    return 0;
  im.comm.agree(capture([&] {
    if (!std::isfinite(threshold))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("DistributedSum::rebalance: threshold {} is not finite", threshold));
  }));
  threshold = im.comm.allreduce_max(threshold); // one decision for all ranks
  double imbalance = 0;
  try {
    imbalance = im.fmm->rebalance(im.src, im.self ? nullptr : &im.tgt, threshold); // agreed inside
  } catch (...) { // agreed on every rank; the plan is half rebuilt
    im.fmm.reset();
    im.ready = false;
    throw;
  }
  if (imbalance > 0) {
    copy_fmm_counts(im.fmm->stats(), im.stats);
    im.stats.fmm_imbalance = imbalance;
  }
  return imbalance;
}

template <std::floating_point T> const DistributedStats &DistributedSum<T>::stats() const {
  return impl_->stats;
}
template <std::floating_point T> const Communicator &DistributedSum<T>::communicator() const {
  return impl_->comm;
}

template class DistributedSum<float>;
template class DistributedSum<double>;

} // namespace ksum
