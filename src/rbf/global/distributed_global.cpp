// The distributed operators of a global RBF fit over MPI ranks (distributed_global.hpp).
#include "rbf/global/distributed_global.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <cstdint>
#include <fmt/format.h>
#include <numeric>

namespace ksum::rbf {

namespace {

class DistributedMatVec final : public KernelMatVec {
public:
  DistributedMatVec(const Communicator &comm, const Table<double> &centres, Kernel kernel,
                    double eps, double diag, Backend backend, int threads, Method method,
                    double tolerance)
      : ds_(comm, DirectOptions{.kernel = kernel,
                                .eps = eps,
                                .backend = backend,
                                .threads = threads,
                                .method = method,
                                .tolerance = tolerance}),
        diag_(diag), n_(centres.rows()), gpu_(backend == Backend::cuda),
        fmm_(method == Method::fmm), tolerance_(tolerance) {
    ds_.set_points(centres);
  }
  std::int64_t size() const override { return n_; }
  void apply(const Table<double> &x, Table<double> &y) override {
    y = ds_.execute(x);
    add_diagonal(diag_, x, y);
  }
  std::string describe() const override {
    if (fmm_)
      return fmt::format("fmm over {} ranks ({} each, tol {:.0e})", ds_.stats().ranks,
                         gpu_ ? "GPU" : "CPU", tolerance_);
    return fmt::format("direct over {} ranks ({} each)", ds_.stats().ranks, gpu_ ? "GPU" : "CPU");
  }

private:
  DistributedSum<double> ds_;
  double diag_;
  std::int64_t n_;
  bool gpu_, fmm_;
  double tolerance_;
};

} // namespace

std::unique_ptr<KernelMatVec> make_distributed_matvec(const Communicator &comm,
                                                      const Table<double> &local_centres,
                                                      Kernel kernel, double eps, double diag,
                                                      Backend backend, int threads, Method method,
                                                      double fmm_tolerance) {
  return std::make_unique<DistributedMatVec>(comm, local_centres, kernel, eps, diag, backend,
                                             threads, method, fmm_tolerance);
}

TauOperator distributed_tau(const Communicator &comm, const RowSets &sets,
                            std::vector<std::int64_t> counts, int threads,
                            DistributedTauStats *stats) {
  const int P = comm.size(), me = comm.rank();
  std::vector<std::int64_t> first(static_cast<std::size_t>(P) + 1, 0); // rank r's rows start
  for (int r = 0; r < P; ++r)
    first[r + 1] = first[r] + counts[r];
  const std::int64_t offset = first[me], mine = counts[me];
  const std::int64_t nsets = sets.count();
  for (std::int64_t s = 0; s < nsets; ++s)
    if (const std::int64_t lead = sets.idx[sets.ptr[s]]; lead < offset || lead >= offset + mine)
      throw Error(ErrorCode::internal,
                  fmt::format("distributed_tau: rank {} holds the set led by row {}, outside its "
                              "rows [{}, {})",
                              me, lead, offset, offset + mine));

  // The halo: the rows of other ranks that this rank's sets touch (their leaders are this rank's
  // rows; their members may be anyone's), sorted, so grouped by owner in rank order. Compact
  // indices: this rank's rows 0 … mine − 1, then the halo.
  std::vector<std::int64_t> halo;
  for (const std::int64_t j : sets.idx)
    if (j < offset || j >= offset + mine)
      halo.push_back(j);
  std::sort(halo.begin(), halo.end());
  halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
  const auto nh = static_cast<std::int64_t>(halo.size());
  auto compact = [&](std::int64_t j) {
    if (j >= offset && j < offset + mine)
      return j - offset;
    return mine + (std::lower_bound(halo.begin(), halo.end(), j) - halo.begin());
  };
  // recv[r]: the halo rows rank r owns (what this rank receives from r before the sets, and
  // returns to r after them); send[r]: this rank's rows that rank r's sets touch.
  std::vector<std::int64_t> recv(static_cast<std::size_t>(P), 0);
  for (std::int64_t j : halo)
    ++recv[static_cast<std::size_t>(std::upper_bound(first.begin(), first.end(), j) -
                                    first.begin() - 1)];
  const std::vector<std::int64_t> send = comm.alltoall(recv);
  const std::int64_t ns = std::accumulate(send.begin(), send.end(), std::int64_t{0});
  std::vector<double> asked(static_cast<std::size_t>(ns));
  {
    // Row indices travel as doubles: exact below 2^53.
    std::vector<double> want(halo.begin(), halo.end());
    comm.alltoallv(want.data(), recv, asked.data(), send);
  }

  // What the operator keeps: this rank's sets as an LSets of their own over the compact rows
  // (sets numbered 0 … nsets − 1 in σ's order, members and their transpose), applied by
  // LSets::apply as one process applies all of them, and the exchange's lists.
  struct State {
    LSets local;
    std::int64_t mine = 0;
    std::vector<std::int64_t> send_counts, recv_counts;
    std::vector<std::int64_t> send_rows;            // this rank's rows, in the order sent
    std::vector<double> r, t, mu, sendbuf, recvbuf; // scratch
  };
  auto st = std::make_shared<State>();
  st->mine = mine;
  st->send_counts = send;
  st->recv_counts = recv;
  st->send_rows.resize(static_cast<std::size_t>(ns));
  for (std::int64_t k = 0; k < ns; ++k) {
    const auto j = static_cast<std::int64_t>(asked[static_cast<std::size_t>(k)]);
    if (j < offset || j >= offset + mine)
      throw Error(ErrorCode::internal,
                  fmt::format("distributed_tau: rank {} was asked for row {}, which it does not "
                              "own ([{}, {}))",
                              me, j, offset, offset + mine));
    st->send_rows[static_cast<std::size_t>(k)] = j - offset;
  }
  LSets &L = st->local;
  L.n = mine + nh;
  if (L.n > std::int64_t{UINT32_MAX} || nsets > std::int64_t{UINT32_MAX})
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("distributed_tau: {} rows and halo rows on rank {} exceed 2^32", L.n, me));
  L.ptr.assign(static_cast<std::size_t>(nsets) + 1, 0);
  L.ptr = sets.ptr;
  L.formed = nsets;
  L.skipped = sets.skipped;
  const std::int64_t nnz = L.ptr[nsets];
  L.idx.resize(static_cast<std::size_t>(nnz));
  L.zeta.resize(static_cast<std::size_t>(nnz));
  L.tptr.assign(static_cast<std::size_t>(L.n) + 1, 0);
  for (std::int64_t k = 0; k < nnz; ++k) {
    const std::int64_t c = compact(sets.idx[k]);
    L.idx[k] = static_cast<std::uint32_t>(c);
    L.zeta[k] = sets.zeta[k];
    ++L.tptr[c + 1];
  }
  for (std::int64_t c = 0; c < L.n; ++c)
    L.tptr[c + 1] += L.tptr[c];
  L.tset.resize(static_cast<std::size_t>(nnz));
  L.tzeta.resize(static_cast<std::size_t>(nnz));
  std::vector<std::int64_t> next(L.tptr.begin(), L.tptr.end() - 1);
  for (std::int64_t l = 0; l < nsets; ++l) // sets in increasing order: each row's list too
    for (std::int64_t k = L.ptr[l]; k < L.ptr[l + 1]; ++k) {
      const std::int64_t e = next[L.idx[k]]++;
      L.tset[e] = static_cast<std::uint32_t>(l);
      L.tzeta[e] = L.zeta[k];
    }
  st->r.resize(static_cast<std::size_t>(L.n));
  st->t.resize(static_cast<std::size_t>(L.n));
  st->sendbuf.resize(static_cast<std::size_t>(ns));
  st->recvbuf.resize(static_cast<std::size_t>(ns));
  if (stats) {
    stats->halo_rows = nh;
    stats->sent_rows = ns;
  }

  return [&comm, threads, st](const double *r, double *tau) {
    State &s = *st;
    const auto ns = static_cast<std::int64_t>(s.send_rows.size());
    // The halo's residuals from their owners, the sets (seed 000 step 6) at every row they touch,
    // the halo rows' parts back to their owners, added to this rank's own in rank order.
    for (std::int64_t k = 0; k < ns; ++k)
      s.sendbuf[k] = r[s.send_rows[k]];
    std::copy(r, r + s.mine, s.r.begin());
    comm.alltoallv(s.sendbuf.data(), s.send_counts, s.r.data() + s.mine, s.recv_counts);
    s.local.apply(s.r.data(), s.t.data(), s.mu, threads);
    comm.alltoallv(s.t.data() + s.mine, s.recv_counts, s.recvbuf.data(), s.send_counts);
    std::copy(s.t.begin(), s.t.begin() + s.mine, tau);
    for (std::int64_t k = 0; k < ns; ++k)
      tau[s.send_rows[k]] += s.recvbuf[k];
  };
}

} // namespace ksum::rbf
