// The distributed operators of a global RBF fit over MPI ranks (distributed_global.hpp).
#include "rbf/global/distributed_global.hpp"

#include <ksum/error.hpp>

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

TauOperator distributed_tau(const Communicator &comm, const LSets &sets,
                            std::vector<std::int64_t> counts, int threads) {
  const std::int64_t total = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
  if (total != sets.n)
    throw Error(
        ErrorCode::internal,
        fmt::format("distributed_tau: {} rows over the ranks, L-sets of {}", total, sets.n));
  // The scratch lives with the operator (the solvers call it once per column and step).
  struct Scratch {
    std::vector<double> r, t, mu;
  };
  auto s = std::make_shared<Scratch>();
  s->r.resize(static_cast<std::size_t>(total));
  s->t.resize(static_cast<std::size_t>(total));
  const std::int64_t mine = counts.at(static_cast<std::size_t>(comm.rank()));
  return
      [&comm, &sets, counts = std::move(counts), threads, s, mine](const double *r, double *tau) {
        comm.allgatherv(r, mine, s->r.data(), counts);
        sets.apply(s->r.data(), s->t.data(), s->mu, threads);
        comm.reduce_scatter_sum(s->t.data(), tau, counts);
      };
}

} // namespace ksum::rbf
