// DistributedSum (issue 25) against the single-process DirectSum, in one program: run it alone (one
// rank) or under `mpirun -n P` (CTest: P = 2 and 4, --oversubscribe). Every rank builds the same
// global points and weights from fixed seeds, takes an uneven slice of them (with P ≥ 3 one rank
// holds no sources and another no targets), and compares its targets' sums with its own
// single-process DirectSum<double> over all the data: equal to 1e-12 of the largest |u| in double
// (the ranks' partial sums are added block by block), 2e-5 in float; the distributed FMM against
// the direct sum to its tolerance (compare_fmm; self-sums and separate targets). Then bad input on
// one rank must give every rank the same error, and no rank may hang.
#include "support/mpi_checks.hpp"
#include "support/reference.hpp"

#include <ksum/device.hpp>
#include <ksum/distributed.hpp>
#include <ksum/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace ksum;

namespace {

// Uneven cuts of `total` rows over P ranks: shares ∝ 1, 2, …, P, with rank `empty` (if ≥ 0) given
// none. Returns P + 1 offsets.
std::vector<std::int64_t> cuts(std::int64_t total, int P, int empty) {
  std::vector<double> share(static_cast<std::size_t>(P));
  double sum = 0;
  for (int r = 0; r < P; ++r)
    sum += share[static_cast<std::size_t>(r)] = r == empty ? 0.0 : r + 1.0;
  std::vector<std::int64_t> at(static_cast<std::size_t>(P) + 1, 0);
  double acc = 0;
  for (int r = 0; r < P; ++r) {
    acc += share[static_cast<std::size_t>(r)];
    at[static_cast<std::size_t>(r) + 1] = r + 1 == P ? total : std::llround(total * acc / sum);
  }
  return at;
}

template <class T> Table<T> rows_of(const Table<double> &t, std::int64_t r0, std::int64_t r1) {
  Table<T> out(r1 - r0, t.cols());
  for (std::int64_t c = 0; c < t.cols(); ++c)
    for (std::int64_t i = r0; i < r1; ++i)
      out(i - r0, c) = static_cast<T>(t(i, c));
  return out;
}

// The distributed FMM (Method::fmm, self-sum) against the single-process direct sum over all the
// points: N = 8,000 uniform in the unit cube, or clustered (three Gaussian blobs of different
// widths, so that the Morton ranges and the essential trees are uneven), uneven slices with one
// rank empty (P ≥ 3), two right-hand sides. The bound: relative 2-norm error ≤ the tolerance (the
// local FMMs at the whole tolerance, whose order holds their interpolation to half of it, plus
// the essential tree's pseudo-particles at a quarter: src/direct/distributed_fmm.hpp), and the
// single-process FMM at the same tolerance measured beside it. In the clustered case at 1e-4
// (order 4: cells of more than 64 points go as pseudo-particles) the ranks must have sent
// pseudo-particle cells, so that the far field really went through them; at 1e-6 and N = 8,000 the
// essential trees are points only (a cell pays as p³ = 343–512 pseudo-particles only when it
// holds more points than that).
// With M > 0 targets of their own (set_points(sources, targets)): M points, a third uniform in a
// box wider than the sources' ([-0.3, 1.3]³, some far from every source), a third on top of
// sources (a singular kernel's coincident pair adds nothing, as in DirectSum), a third uniform in
// the unit cube; cut unevenly with the last rank holding none (P ≥ 3; the first rank holds no
// sources then), so one rank has sources only and another targets only. With Layout::halves the
// sources fill x < 0.5 and every target x > 0.5: ranks then hold targets where no source lies
// (a rank's domain is where its targets are). With Layout::corners the sources fill [0, 0.2]³ and
// M ≫ N targets [0.8, 1]³: after the partition over both, ranks own targets and no sources. The
// reference is DirectSum's direct sum with those targets.
// With `rebalance`: rebalance() before any execute does nothing (0); after the executes it
// repartitions by the measured cost (an imbalance ≥ 1, the points all still owned by some rank)
// and the next execute meets the same bound. `backend` runs the FMMs (one process's and the
// distributed one, whose pseudo-particle weights are then formed on the GPU too); the reference
// is the CPU's direct sum.
enum class Layout { mixed, halves, corners };

void compare_fmm(const Communicator &comm, const char *name, Kernel kernel, double eps, double tol,
                 bool clustered, bool expect_pseudo, bool rebalance = false,
                 Backend backend = Backend::cpu, std::int64_t M = 0,
                 Layout layout = Layout::mixed) {
  const bool halves = layout == Layout::halves, corners = layout == Layout::corners;
  const int P = comm.size(), rank = comm.rank();
  const std::int64_t N = 8000;
  const bool separate = M > 0;
  Table<double> x(N, 3), w(N, 2);
  std::mt19937_64 rng(77);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> g(0, 1);
  const double centre[3][3] = {{0.2, 0.3, 0.4}, {0.7, 0.6, 0.5}, {0.5, 0.8, 0.2}};
  const double width[3] = {0.02, 0.1, 0.2};
  for (std::int64_t i = 0; i < N; ++i) {
    const int b = static_cast<int>(i % 3);
    for (int a = 0; a < 3; ++a)
      x(i, a) = clustered ? centre[b][a] + width[b] * g(rng) : u(rng);
    w(i, 0) = u(rng) - 0.5;
    w(i, 1) = u(rng);
  }
  Table<double> y(M, 3);
  for (std::int64_t i = 0; i < M; ++i)
    for (int a = 0; a < 3; ++a)
      y(i, a) = halves    ? (a == 0 ? 0.5 + 0.5 * u(rng) : u(rng))
                : corners ? 0.8 + 0.2 * u(rng)
                : i % 3 == 0 ? -0.3 + 1.6 * u(rng)
                : i % 3 == 1 ? x((i * 7) % N, a)
                             : u(rng);
  if (halves)
    for (std::int64_t i = 0; i < N; ++i)
      x(i, 0) *= 0.5;
  if (corners)
    for (std::int64_t i = 0; i < N; ++i)
      for (int a = 0; a < 3; ++a)
        x(i, a) *= 0.2;
  DirectOptions o;
  o.kernel = kernel;
  o.eps = eps;
  o.backend = Backend::cpu;
  DirectSum<double> ref(o);
  const auto set = [&](auto &plan) {
    if (separate)
      plan.set_points(x, y);
    else
      plan.set_points(x);
  };
  set(ref);
  const Table<double> want = ref.execute(w);
  o.method = Method::fmm;
  o.tolerance = tol;
  o.backend = backend;
  DirectSum<double> one(o);
  set(one);
  const Table<double> alone = one.execute(w);
  const auto at = cuts(N, P, P >= 3 ? (separate ? 0 : 1) : -1);
  const auto at_t = separate ? cuts(M, P, P >= 3 ? P - 1 : -1) : at;
  const std::int64_t r0 = at[static_cast<std::size_t>(rank)],
                     r1 = at[static_cast<std::size_t>(rank) + 1];
  const std::int64_t t0 = at_t[static_cast<std::size_t>(rank)],
                     t1 = at_t[static_cast<std::size_t>(rank) + 1];
  const std::int64_t Mt = separate ? M : N; // the targets' count
  DistributedSum<double> d(comm, o);
  if (separate)
    d.set_points(rows_of<double>(x, r0, r1), rows_of<double>(y, t0, t1));
  else
    d.set_points(rows_of<double>(x, r0, r1));
  if (rebalance)
    test::mpi_check(d.rebalance() == 0.0, fmt::format("{}: rebalance before an execute", name),
                    rank);
  Table<double> got = d.execute(rows_of<double>(w, r0, r1));
  got = d.execute(rows_of<double>(w, r0, r1)); // a second execute reuses the plan
  if (rebalance) {
    const double owned_before = double(d.stats().fmm_owned);
    // Above any measured imbalance: nothing moves.
    const double kept = d.rebalance(1e300);
    test::mpi_check(kept >= 1 - 1e-12 && d.stats().fmm_owned == owned_before,
                    fmt::format("{}: rebalance(1e300) measured {} and moved points", name, kept),
                    rank);
    test::expect_agreed_error(comm, "rebalance with a NaN threshold on the last rank",
                              ErrorCode::invalid_argument, "threshold nan is not finite",
                              [&] { (void)d.rebalance(rank == comm.size() - 1 ? NAN : 1.0); });
    const double imbalance = d.rebalance(comm.size() > 1 ? 0.0 : 1.0);
    test::mpi_check(imbalance >= 1 - 1e-12 && d.stats().fmm_imbalance == imbalance &&
                        (comm.size() > 1 || d.stats().fmm_owned == owned_before),
                    fmt::format("{}: rebalance measured an imbalance of {}", name, imbalance),
                    rank);
    test::mpi_check(comm.allreduce_sum(double(d.stats().fmm_owned)) == double(N),
                    fmt::format("{}: after rebalance the ranks own {} points", name,
                                comm.allreduce_sum(double(d.stats().fmm_owned))),
                    rank);
    got = d.execute(rows_of<double>(w, r0, r1));
    if (rank == 0)
      std::printf("%s: rebalanced at a measured imbalance of %.3g (rank 0 owned %g points, now "
                  "%g)\n",
                  name, imbalance, owned_before, double(d.stats().fmm_owned));
  }
  double e2 = 0, e2_alone = 0, n2 = 0;
  bool finite = got.rows() == t1 - t0 && got.cols() == 2;
  for (std::int64_t c = 0; c < 2 && finite; ++c)
    for (std::int64_t i = t0; i < t1; ++i) {
      const double e = got(i - t0, c) - want(i, c);
      finite = finite && std::isfinite(e);
      e2 += e * e;
      n2 += want(i, c) * want(i, c);
    }
  for (std::int64_t c = 0; c < 2; ++c)
    for (std::int64_t i = 0; i < Mt; ++i)
      e2_alone += (alone(i, c) - want(i, c)) * (alone(i, c) - want(i, c));
  double sums[2] = {e2, n2};
  comm.allreduce_sum(sums, 2);
  double n2_all = 0;
  for (std::int64_t c = 0; c < 2; ++c)
    for (std::int64_t i = 0; i < Mt; ++i)
      n2_all += want(i, c) * want(i, c);
  const double rel = std::sqrt(sums[0] / sums[1]), rel_alone = std::sqrt(e2_alone / n2_all);
  test::mpi_check(comm.allreduce_max(finite ? 0.0 : 1.0) == 0.0,
                  fmt::format("{}: a wrong shape or a non-finite value", name), rank);
  test::mpi_check(rel <= tol, fmt::format("{}: relative error {:.3g} > {:.3g}", name, rel, tol),
                  rank);
  const auto &st = d.stats();
  double cells = static_cast<double>(st.fmm_pseudo_cells_sent), recv = double(st.fmm_received);
  cells = comm.allreduce_sum(cells);
  recv = comm.allreduce_sum(recv);
  const double fewest_sources = -comm.allreduce_max(-double(st.fmm_owned));
  test::mpi_check(P == 1 || !corners || fewest_sources == 0,
                  fmt::format("{}: every rank owns sources (at least {}), none targets only", name,
                              fewest_sources),
                  rank);
  test::mpi_check(
      P == 1 || !expect_pseudo || cells > 0,
      fmt::format("{}: no rank sent pseudo-particles ({} sources received)", name, recv), rank);
  if (rank == 0)
    std::printf("%s: %d rank(s), relative error %.3g (one process's FMM %.3g, tolerance %.0e), "
                "%g pseudo-particle cells sent, %g sources received in all\n",
                name, P, rel, rel_alone, tol, cells, recv);
}

template <class T>
void compare(const Communicator &comm, const char *name, Kernel kernel, double eps, bool gradient,
             bool separate, std::int64_t n, std::int64_t m, std::int64_t nrhs, double tol) {
  const int P = comm.size(), rank = comm.rank();
  const auto src = test::random_points(n, 3, 11, 0, 1),
             tgt = test::random_points(m, 3, 12, -0.5, 1.5);
  const auto w = test::random_points(n, nrhs, 13, -1, 1);
  const auto sc = cuts(n, P, P >= 3 ? P - 1 : -1);
  const auto tc = separate ? cuts(m, P, P >= 3 ? 0 : -1) : sc;
  const auto r = static_cast<std::size_t>(rank);
  DirectOptions o;
  o.kernel = kernel;
  o.eps = eps;
  o.gradient = gradient;
  o.backend = Backend::cpu;
  DistributedSum<T> dist(comm, o);
  const auto my_src = rows_of<T>(src, sc[r], sc[r + 1]);
  if (separate)
    dist.set_points(my_src, rows_of<T>(tgt, tc[r], tc[r + 1]));
  else
    dist.set_points(my_src);
  const auto got = dist.execute(rows_of<T>(w, sc[r], sc[r + 1]));
  // The reference: one process, all the data, in double.
  DirectSum<double> ref(o);
  if (separate)
    ref.set_points(src, tgt);
  else
    ref.set_points(src);
  const auto want = ref.execute(w);
  test::mpi_check(got.rows() == tc[r + 1] - tc[r] && got.cols() == want.cols(),
                  fmt::format("{}: shape {} × {}, want {} × {}", name, got.rows(), got.cols(),
                              tc[r + 1] - tc[r], want.cols()),
                  rank);
  if (test::mpi_failures())
    return;
  double worst = 0;
  for (std::int64_t c = 0; c < want.cols(); ++c) {
    double scale = 0, diff = 0;
    for (std::int64_t i = 0; i < want.rows(); ++i)
      scale = std::max(scale, std::abs(want(i, c)));
    for (std::int64_t i = 0; i < got.rows(); ++i) {
      const double e = std::abs(double(got(i, c)) - want(tc[r] + i, c));
      diff = std::isfinite(e) ? std::max(diff, e) : std::numeric_limits<double>::infinity();
    }
    worst = std::max(worst, diff / scale);
  }
  test::mpi_check(
      worst <= tol && std::isfinite(worst),
      fmt::format("{}: max |u − u_ref| / max |u_ref| = {:.3g} > {:.1g}", name, worst, tol), rank);
  const auto &st = dist.stats();
  test::mpi_check(st.ranks == P && st.total_sources == n && st.total_targets == (separate ? m : n),
                  fmt::format("{}: stats ranks {} sources {} targets {}", name, st.ranks,
                              st.total_sources, st.total_targets),
                  rank);
  if (rank == 0)
    std::printf("%s: %d rank(s), max relative difference %.3g (tolerance %.1g)\n", name, P, worst,
                tol);
}

} // namespace

int main() {
  const Communicator comm = Communicator::world();
  const int P = comm.size(), rank = comm.rank();
  try {
    compare<double>(comm, "laplace self-sum f64", Kernel::laplace, 1, false, false, 1500, 0, 1,
                    1e-12);
    compare<double>(comm, "gaussian targets 2 rhs gradient f64", Kernel::gaussian, 3, true, true,
                    1200, 700, 2, 1e-12);
    compare<float>(comm, "multiquadric self-sum f32", Kernel::multiquadric, 2, false, false, 900, 0,
                   1, 2e-5);
    // Every rank with no points at all: an empty result, no hang.
    {
      DistributedSum<double> empty(comm, DirectOptions{});
      empty.set_points(Table<double>(0, 2));
      const auto u = empty.execute(Table<double>(0, 1));
      test::mpi_check(u.rows() == 0, "no points: empty result", rank);
    }
    // Bad input on the last rank only: every rank gets its error.
    {
      DistributedSum<double> bad(comm, DirectOptions{});
      Table<double> pts = test::random_points(10, 3, 20 + rank, 0, 1);
      if (rank == P - 1)
        pts(3, 1) = std::numeric_limits<double>::quiet_NaN();
      test::expect_agreed_error(comm, "NaN on the last rank", ErrorCode::non_finite,
                                fmt::format("sources of rank {}: non-finite value nan at row 3, "
                                            "column 1",
                                            P - 1),
                                [&] { bad.set_points(pts); });
      pts(3, 1) = 0.5;
      bad.set_points(pts);
      const Table<double> w(rank == 0 ? 9 : 10, 1, 1.0);
      test::expect_agreed_error(comm, "weights rows on rank 0", ErrorCode::shape_mismatch,
                                "weights of rank 0 have 9 rows but its slice has 10 sources",
                                [&] { (void)bad.execute(w); });
      // A different dimension on one rank (with one rank: no columns at all).
      if (P > 1)
        test::expect_agreed_error(comm, "dimension", ErrorCode::shape_mismatch,
                                  "every rank's slice needs the same dimension",
                                  [&] { bad.set_points(Table<double>(4, rank == P - 1 ? 2 : 3)); });
      else
        test::expect_agreed_error(comm, "zero columns", ErrorCode::shape_mismatch, "dimension ≥ 1",
                                  [&] { bad.set_points(Table<double>(4, 0)); });
    }
    // Ranks that disagree: targets on one rank, none on the others.
    if (P > 1) {
      DistributedSum<double> mixed(comm, DirectOptions{});
      const auto pts = test::random_points(6, 3, 30 + rank, 0, 1);
      test::expect_agreed_error(comm, "targets on one rank only", ErrorCode::invalid_argument,
                                "every rank passes targets", [&] {
                                  if (rank == P - 1)
                                    mixed.set_points(pts, pts);
                                  else
                                    mixed.set_points(pts);
                                });
    }
    // Options that fail on one rank only (a bad thread count there), and a progress callback that
    // throws on one rank in the middle of the ring.
    {
      DirectOptions o;
      o.threads = rank == P - 1 ? -5 : 0;
      test::expect_agreed_error(
          comm, "options failing on the last rank", ErrorCode::invalid_argument,
          P > 1 ? fmt::format("rank {}: threads must be", P - 1) : std::string("threads must be"),
          [&] { DistributedSum<double> d(comm, o); });
      DirectOptions p;
      p.progress = [&](double f) {
        if (rank == 0 && f >= 0.5)
          throw Error(ErrorCode::invalid_argument, "the progress callback gave up");
      };
      DistributedSum<double> d(comm, p);
      d.set_points(test::random_points(20, 3, 40 + rank, 0, 1));
      test::expect_agreed_error(comm, "progress callback throwing on rank 0",
                                ErrorCode::invalid_argument, "the progress callback gave up",
                                [&] { (void)d.execute(Table<double>(20, 1, 1.0)); });
    }
    compare_fmm(comm, "fmm laplace, uniform, 1e-6", Kernel::laplace, 1, 1e-6, false, false);
    compare_fmm(comm, "fmm laplace, clustered, 1e-4", Kernel::laplace, 1, 1e-4, true, true, true);
    // A kernel whose calibrated ratio is above 1 (the pseudo-particles' order is charged for it).
    compare_fmm(comm, "fmm multiquadric, clustered, 1e-4", Kernel::multiquadric, 1, 1e-4, true,
                true);
    // Where a GPU is visible (the device check): the local FMMs and the pseudo-particle weights
    // on it (ranks sharing one GPU, or one each), with a rebalance that rebuilds them.
    if (comm.allreduce_max(gpus().empty() ? 1.0 : 0.0) == 0.0) // every rank sees a GPU
    {
      compare_fmm(comm, "fmm laplace, clustered, 1e-4, GPU", Kernel::laplace, 1, 1e-4, true, true,
                  true, Backend::cuda);
      compare_fmm(comm, "fmm laplace, separate targets, clustered, 1e-4, GPU", Kernel::laplace, 1,
                  1e-4, true, false, true, Backend::cuda, 3000);
    }
    else if (rank == 0)
      std::printf("fmm on the GPU: skipped (no GPU visible)\n");
    compare_fmm(comm, "fmm gaussian eps 3, uniform, 1e-6", Kernel::gaussian, 3, 1e-6, false, false);
    // Separate targets (3,000: some far outside the sources, some on top of them; one rank with
    // sources only, another with targets only), with a rebalance in the clustered case.
    compare_fmm(comm, "fmm laplace, separate targets, uniform, 1e-6", Kernel::laplace, 1, 1e-6,
                false, false, false, Backend::cpu, 3000);
    compare_fmm(comm, "fmm laplace, separate targets, clustered, 1e-4", Kernel::laplace, 1, 1e-4,
                true, false, true, Backend::cpu, 3000);
    compare_fmm(comm, "fmm gaussian eps 3, separate targets, 1e-6", Kernel::gaussian, 3, 1e-6,
                false, false, false, Backend::cpu, 3000);
    // Compact support: a rank receives only the sources within the support of its domain, which
    // must be where its targets are (cells with targets and no sources included).
    compare_fmm(comm, "fmm wendland4 eps 3, separate targets in the other half, 1e-6",
                Kernel::wendland4, 3, 1e-6, false, false, false, Backend::cpu, 3000,
                Layout::halves);
    compare_fmm(comm, "fmm laplace, separate targets in the other half, 1e-4", Kernel::laplace, 1,
                1e-4, false, true, false, Backend::cpu, 3000, Layout::halves);
    // Sources in one corner and 30,000 targets in the opposite one: with P ≥ 2 some ranks own
    // targets only (their sums come from the essential trees alone).
    compare_fmm(comm, "fmm laplace, 30,000 targets in the opposite corner, 1e-6", Kernel::laplace,
                1, 1e-6, false, false, false, Backend::cpu, 30000, Layout::corners);
    compare_fmm(comm, "fmm multiquadric, 30,000 targets in the opposite corner, 1e-6",
                Kernel::multiquadric, 1, 1e-6, false, false, false, Backend::cpu, 30000,
                Layout::corners);
    // A compactly supported kernel (support 1/3): cells beyond it from a rank's domain stay home.
    compare_fmm(comm, "fmm wendland4 eps 3, uniform, 1e-6", Kernel::wendland4, 3, 1e-6, false,
                false);
    DirectOptions fmm;
    fmm.method = Method::fmm;
    fmm.kernel = Kernel::laplace;
    {
      DistributedSum<double> d(comm, fmm);
      test::expect_agreed_error(comm, "fmm in 2D", ErrorCode::unsupported, "dimension 2",
                                [&] { d.set_points(test::random_points(30, 2, 50 + rank, 0, 1)); });
    }
    fmm.gradient = true;
    test::expect_agreed_error(comm, "fmm with the gradient", ErrorCode::unsupported, "gradients",
                              [&] { DistributedSum<double> d(comm, fmm); });
    fmm.method = Method::fgt;
    fmm.gradient = false;
    test::expect_agreed_error(comm, "method fgt", ErrorCode::unsupported, "is not distributed",
                              [&] { DistributedSum<double> d(comm, fmm); });
  } catch (const std::exception &e) {
    test::mpi_check(false, fmt::format("unexpected exception: {}", e.what()), rank);
  }
  if (test::mpi_failures() == 0 && rank == 0)
    std::printf("distributed_sum_mpi_test: all checks passed on %d rank(s)\n", P);
  return test::mpi_failures() == 0 ? 0 : 1;
}
