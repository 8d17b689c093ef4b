// GlobalRbfInterpolant::set_data over MPI ranks (issue 25) against the single-process fit, in one
// program: run it alone (one rank) or under `mpirun -n P` (CTest: P = 2, 3, 4, --oversubscribe).
// Every rank builds the same data and passes its own rows of it, in uneven slices (rank r holds a
// share growing with r; with three ranks or more, rank 1 holds none). The distributed solvers
// (FGP for the multiquadric with a constant, GMRES for the thin-plate spline with a linear
// polynomial in 2D and for the Gaussian without one in 3D) must reach the tolerance over all rows,
// and the interpolant, evaluated collectively at each rank's own points, must equal the
// single-process one: both are solves to a relative tolerance (1e-10; 1e-6 with FMM products)
// of one system, so they may differ by that tolerance times the system's condition; the bound
// asserted is 10 × the tolerance times the data's size (measured: below 1e-13 with direct
// products). The iteration counts may differ by a few (rounding in other
// orders). Then errors on one rank (a NaN, a different dimension) and options that are not
// distributed must end every rank with the same error, and no rank may hang.
#include "rbf/global/distributed_global.hpp"
#include "rbf/global/lsets.hpp"
#include "support/mpi_checks.hpp"
#include "support/reference.hpp"

#include <ksum/datasets.hpp>
#include <ksum/distributed.hpp>
#include <ksum/error.hpp>
#include <ksum/global.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <numeric>
#include <random>
#include <string>

using namespace ksum;

namespace {

// Rank r's first row and count of `total` rows: shares r + 1 (rank 1 none when P ≥ 3).
std::pair<std::int64_t, std::int64_t> slice(const Communicator &comm, std::int64_t total) {
  const int P = comm.size();
  std::vector<std::int64_t> w(P);
  std::int64_t sum = 0;
  for (int r = 0; r < P; ++r)
    sum += w[r] = (P >= 3 && r == 1) ? 0 : r + 1;
  std::int64_t begin = 0, acc = 0;
  for (int r = 0; r < comm.rank(); ++r)
    acc += w[r];
  begin = total * acc / sum;
  const std::int64_t end = total * (acc + w[comm.rank()]) / sum;
  return {begin, end - begin};
}

Table<double> rows(const Table<double> &t, std::int64_t begin, std::int64_t count) {
  Table<double> out(count, t.cols());
  for (std::int64_t c = 0; c < t.cols(); ++c)
    for (std::int64_t i = 0; i < count; ++i)
      out(i, c) = t(begin + i, c);
  return out;
}

void compare(const Communicator &comm, const char *name, const GlobalRbfOptions &o,
             const Table<double> &x, const Table<double> &f, GlobalSolver expected) {
  const int rank = comm.rank();
  const auto [begin, count] = slice(comm, x.rows());
  GlobalRbfInterpolant alone(o), shared(o);
  alone.set_data(x, f);
  shared.set_data(rows(x, begin, count), rows(f, begin, count), comm);
  const auto &a = alone.stats(), &b = shared.stats();
  test::mpi_check(b.solver == expected && b.ranks == comm.size(),
                  fmt::format("{}: solver {} ranks {}", name, to_string(b.solver), b.ranks), rank);
  test::mpi_check(b.residual_rel <= 2 * o.tolerance || b.solver == GlobalSolver::fgp,
                  fmt::format("{}: relative residual {:.3g}", name, b.residual_rel), rank);
  test::mpi_check(std::abs(a.iterations - b.iterations) <= 3 && a.lsets == b.lsets &&
                      a.lsets_skipped == b.lsets_skipped,
                  fmt::format("{}: iterations {}/{}, L-sets {}/{}, skipped {}/{}", name,
                              a.iterations, b.iterations, a.lsets, b.lsets, a.lsets_skipped,
                              b.lsets_skipped),
                  rank);
  // This rank's coefficients are its rows of λ.
  double scale = 0, worst_lambda = 0, lscale = 0;
  for (std::int64_t c = 0; c < f.cols(); ++c)
    for (std::int64_t i = 0; i < count; ++i) {
      worst_lambda = std::max(
          worst_lambda, std::abs(shared.coefficients()(i, c) - alone.coefficients()(begin + i, c)));
      lscale = std::max(lscale, std::abs(alone.coefficients()(begin + i, c)));
    }
  lscale = comm.allreduce_max(lscale);
  worst_lambda = comm.allreduce_max(worst_lambda);
  // Evaluation: each rank its own points (rank r: 50 + 40 r of them), collectively.
  const auto y = test::random_points(50 + 40 * rank, x.cols(), 100 + rank, 0.05, 0.95);
  const auto want = alone.evaluate(y), got = shared.evaluate(y);
  double worst = 0;
  for (std::int64_t k = 0; k < want.rows() * want.cols(); ++k) {
    const double e = std::abs(got.data()[k] - want.data()[k]);
    worst = std::isfinite(e) ? std::max(worst, e) : std::numeric_limits<double>::infinity();
  }
  for (std::int64_t k = 0; k < f.rows() * f.cols(); ++k)
    scale = std::max(scale, std::abs(f.data()[k]));
  test::mpi_check(
      worst <= 10 * o.tolerance * scale,
      fmt::format("{}: max |s − s_alone| = {:.3g} (data size {:.3g})", name, worst, scale), rank);
  worst = comm.allreduce_max(worst);
  if (rank == 0)
    std::printf("%s: %d rank(s), %s, %d/%d iterations, residual %.3g, max |s − s_alone| %.3g, "
                "max |λ − λ_alone| / max |λ| %.3g\n",
                name, comm.size(), std::string(to_string(b.solver)).c_str(), b.iterations,
                a.iterations, b.residual_rel, worst, lscale > 0 ? worst_lambda / lscale : 0.0);
}

// Every set of `all` (one process) led by one of the rows begin … begin + count − 1 must appear
// in `own` unchanged: the same members in the same order, ζ bit for bit. Returns (that many sets,
// how many members or sets differ).
std::pair<std::int64_t, std::int64_t> compare_sets(const rbf::LSets &all, const rbf::RowSets &own,
                                                   std::int64_t begin, std::int64_t count) {
  std::vector<std::int64_t> set_of(static_cast<std::size_t>(all.n), -1);
  for (std::int64_t m = 0; m < all.count(); ++m)
    set_of[all.idx[all.ptr[m]]] = m;
  std::int64_t mine = 0, differ = 0;
  for (std::int64_t i = begin; i < begin + count; ++i)
    mine += set_of[static_cast<std::size_t>(i)] >= 0;
  for (std::int64_t s = 0; s < own.count(); ++s) {
    const std::int64_t lead = own.idx[own.ptr[s]], m = set_of[static_cast<std::size_t>(lead)];
    if (m < 0 || own.ptr[s + 1] - own.ptr[s] != all.ptr[m + 1] - all.ptr[m]) {
      ++differ;
      continue;
    }
    for (std::int64_t k = 0; k < own.ptr[s + 1] - own.ptr[s]; ++k)
      differ += own.idx[own.ptr[s] + k] != all.idx[all.ptr[m] + k] ||
                own.zeta[own.ptr[s] + k] != all.zeta[all.ptr[m] + k];
  }
  return {mine, differ + std::abs(mine - own.count())};
}

// The same sets where the search is delicate: a 2D integer lattice (exact ties in distance
// everywhere, so ties at the q-th distance and across the ranks' trees decide members; slabs cut
// through the tie shells), 1D points, 4D points with a linear polynomial on two threads, and all
// points on the last rank; each forced through the search over the ranks and through the gather.
void sets_match_on_ties_and_dimensions(const Communicator &comm) {
  const int rank = comm.rank(), P = comm.size();
  struct Case {
    std::string name;
    Table<double> x;
    int degree, threads, q;
    double eps;
    bool all_on_last;
  };
  std::vector<Case> cases;
  {
    Table<double> grid(50 * 50, 2);
    for (std::int64_t i = 0; i < 50 * 50; ++i) {
      grid(i, 0) = static_cast<double>(i % 50);
      grid(i, 1) = static_cast<double>(i / 50); // row-major: the slices are slabs in y
    }
    cases.push_back({"2D lattice", grid, 1, 1, 21, 0.3, false});
    cases.push_back({"2D lattice, all on the last rank", grid, 0, 1, 13, 0.3, true});
  }
  {
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<double> v(700);
    for (auto &e : v)
      e = u(rng);
    std::sort(v.begin(), v.end());
    Table<double> line(700, 1);
    for (std::int64_t i = 0; i < 700; ++i)
      line(i, 0) = v[static_cast<std::size_t>(i)];
    cases.push_back({"1D", line, 1, 1, 10, 30.0, false});
  }
  {
    const auto h = datasets::halton(900, 4);
    std::vector<std::int64_t> order(900);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](std::int64_t a, std::int64_t b) { return h(a, 0) < h(b, 0); });
    Table<double> x(900, 4);
    for (std::int64_t i = 0; i < 900; ++i)
      for (int c = 0; c < 4; ++c)
        x(i, c) = h(order[static_cast<std::size_t>(i)], c);
    cases.push_back({"4D", x, 1, 2, 30, 3.0, false});
  }
  for (const Case &c : cases) {
    const std::int64_t n = c.x.rows();
    auto [begin, count] = slice(comm, n);
    if (c.all_on_last) {
      begin = rank == P - 1 ? 0 : 0;
      count = rank == P - 1 ? n : 0;
    }
    const rbf::LSetConfig cfg{.kernel = Kernel::multiquadric,
                              .eps = c.eps,
                              .q = c.q,
                              .poly_degree = c.degree,
                              .seed = 3,
                              .threads = c.threads};
    const rbf::LSets all = rbf::build_lsets(c.x, cfg);
    for (const char *force : {"0", "1"}) {
      setenv("KSUM_LSETS_GATHER", force, 1);
      rbf::DistributedLSetStats ls;
      const rbf::RowSets own =
          rbf::build_lsets_over_ranks(comm, rows(c.x, begin, count), begin, n, cfg, &ls);
      const auto [mine, differ] = compare_sets(all, own, begin, count);
      test::mpi_check(differ == 0 && ls.gathered == (P > 1 && force[0] == '1'),
                      fmt::format("L-sets over the ranks ({}, KSUM_LSETS_GATHER={}): {} of {} "
                                  "sets or members differ from one process's",
                                  c.name, force, differ, mine),
                      rank);
    }
    unsetenv("KSUM_LSETS_GATHER");
  }
}

// The L-sets found over the ranks (each rank its own rows' sets, searching only near the other
// ranks' boxes) against build_lsets on all rows: the same sets, members in the same order, ζ bit
// for bit; and the operator τ over the ranks (each rank's sets over its rows and its halo, two
// exchanges per call) against the one-process operator: equal to rounding (1e-13 of max |τ|; the
// parts of a row are added in another order). Rows sorted along x, so that the slices are slabs
// as a spatial partition makes them; then the halo (the other ranks' rows a rank's sets touch)
// and the points the search received must stay below what an all-gather would move: summed over
// the ranks that hold rows, at most half of it (measured: printed). Rows in Halton order (no
// spatial partition) must give the same sets too, only with more traffic.
void sets_and_tau_match_one_process(const Communicator &comm) {
  const int rank = comm.rank();
  const auto halton = datasets::halton(3000, 3);
  Table<double> slabs(halton.rows(), 3);
  {
    std::vector<std::int64_t> order(static_cast<std::size_t>(halton.rows()));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](std::int64_t a, std::int64_t b) { return halton(a, 0) < halton(b, 0); });
    for (std::int64_t i = 0; i < halton.rows(); ++i)
      for (int c = 0; c < 3; ++c)
        slabs(i, c) = halton(order[static_cast<std::size_t>(i)], c);
  }
  for (const bool spatial : {true, false}) {
    const Table<double> &x = spatial ? slabs : halton;
    const std::int64_t n = x.rows();
    const auto [begin, count] = slice(comm, n);
    for (const int degree : {0, 1}) {
      const rbf::LSetConfig cfg{.kernel = Kernel::multiquadric,
                                .eps = 4,
                                .q = 20,
                                .poly_degree = degree,
                                .seed = 7,
                                .threads = 1};
      const std::string what =
          fmt::format("{} rows, degree {}", spatial ? "slab" : "Halton", degree);
      const rbf::LSets all = rbf::build_lsets(x, cfg);
      rbf::DistributedLSetStats ls;
      const rbf::RowSets own =
          rbf::build_lsets_over_ranks(comm, rows(x, begin, count), begin, n, cfg, &ls);
      const auto [mine, differ] = compare_sets(all, own, begin, count);
      test::mpi_check(ls.gathered == (comm.size() > 1 && !spatial),
                      fmt::format("L-sets over the ranks ({}): the search {} the points", what,
                                  ls.gathered ? "all-gathered" : "did not gather"),
                      rank);
      test::mpi_check(own.count() == mine && differ == 0,
                      fmt::format("L-sets over the ranks ({}): {} sets against {} of this rank's "
                                  "rows in one process; {} members or ζ differ",
                                  what, own.count(), mine, differ),
                      rank);
      rbf::DistributedTauStats ts;
      const rbf::TauOperator tau = rbf::distributed_tau(comm, own, comm.allgather(count), 1, &ts);
      std::mt19937_64 rng(11);
      std::uniform_real_distribution<double> u(-1, 1);
      std::vector<double> r(static_cast<std::size_t>(n)), want(static_cast<std::size_t>(n)), mu;
      for (auto &v : r)
        v = u(rng);
      all.apply(r.data(), want.data(), mu, 1);
      std::vector<double> got(static_cast<std::size_t>(count));
      for (int call = 0; call < 2; ++call) { // the operator's scratch is reused
        tau(r.data() + begin, got.data());
        double err = 0, scale = 0;
        for (std::int64_t i = 0; i < n; ++i)
          scale = std::max(scale, std::abs(want[static_cast<std::size_t>(i)]));
        for (std::int64_t i = 0; i < count; ++i)
          err = std::max(err, std::abs(got[static_cast<std::size_t>(i)] -
                                       want[static_cast<std::size_t>(begin + i)]));
        test::mpi_check(err <= 1e-13 * scale,
                        fmt::format("tau ({}, call {}): max error {:.3g} of max |tau| {:.3g}", what,
                                    call, err, scale),
                        rank);
      }
      double moved[3] = {static_cast<double>(ts.halo_rows), static_cast<double>(ls.received),
                         count > 0 ? static_cast<double>(n - count) : 0.0};
      comm.allreduce_sum(moved, 3);
      if (spatial)
        test::mpi_check(moved[0] <= 0.5 * moved[2] && moved[1] <= 0.5 * moved[2],
                        fmt::format("tau ({}): {} halo rows and {} points received by the search "
                                    "over the ranks, against {} for an all-gather",
                                    what, moved[0], moved[1], moved[2]),
                        rank);
      if (rank == 0)
        std::printf("L-sets, %s, %d rank(s): halo rows %.0f, search received %.0f points (an "
                    "all-gather: %.0f)\n",
                    what.c_str(), comm.size(), moved[0], moved[1], moved[2]);
    }
  }
}

// Identical points anywhere over the ranks: the distributed fit names the rows check_distinct
// names on all points (the smallest row with a twin, and its smallest twin), and no rank hangs.
// Pairs on one rank, on two ranks, and a triple spread over three; rows sorted along x (the
// search over the ranks checks them through the boxes) and in Halton order (the ranks gather the
// points and check them as one process does).
void duplicates_are_named_as_one_process(const Communicator &comm) {
  const int P = comm.size(), rank = comm.rank();
  const std::int64_t n = 600;
  const auto [begin, count] = slice(comm, n);
  GlobalRbfOptions o;
  o.kernel = Kernel::multiquadric;
  o.eps = 5;
  o.backend = Backend::cpu;
  const std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> cases = {
      {{590, 595}},           // the last rank's rows
      {{598, 3}, {200, 450}}, // across ranks; the smallest row with a twin is 3
      {{590, 5}, {301, 5}},   // a triple: 5, 301, 590
  };
  for (std::size_t c = 0; c < 2 * cases.size(); ++c) {
    Table<double> x = datasets::halton(n, 3);
    if (c >= cases.size()) { // sorted along x: slabs
      const Table<double> h = x;
      std::vector<std::int64_t> order(static_cast<std::size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(),
                [&](std::int64_t a, std::int64_t b) { return h(a, 0) < h(b, 0); });
      for (std::int64_t i = 0; i < n; ++i)
        for (int k = 0; k < 3; ++k)
          x(i, k) = h(order[static_cast<std::size_t>(i)], k);
    }
    for (const auto &[to, from] : cases[c % cases.size()])
      for (int k = 0; k < 3; ++k)
        x(to, k) = x(from, k);
    std::string want;
    try {
      rbf::check_distinct(x);
    } catch (const Error &e) {
      want = e.what();
    }
    test::mpi_check(!want.empty(), fmt::format("duplicates case {}: check_distinct refuses", c),
                    rank);
    GlobalRbfInterpolant g(o);
    const Table<double> f(count, 1, 1.0);
    test::expect_agreed_error(comm, fmt::format("duplicates case {} over {} ranks", c, P).c_str(),
                              ErrorCode::invalid_argument, want,
                              [&] { g.set_data(rows(x, begin, count), f, comm); });
  }
  // Points on a plane cannot determine a linear polynomial in 3D (the R factors stacked over
  // the ranks decide it as the whole matrix would).
  Table<double> flat = datasets::halton(n, 3);
  for (std::int64_t i = 0; i < n; ++i)
    flat(i, 2) = 0.25 + 0.5 * flat(i, 0) - 0.25 * flat(i, 1);
  GlobalRbfOptions tps;
  tps.kernel = Kernel::tps;
  tps.backend = Backend::cpu;
  GlobalRbfInterpolant t(tps);
  test::expect_agreed_error(
      comm, "points on a plane, linear polynomial", ErrorCode::invalid_argument, "not unisolvent",
      [&] { t.set_data(rows(flat, begin, count), Table<double>(count, 1, 1.0), comm); });
}

} // namespace

int main() {
  const Communicator comm = Communicator::world();
  const int P = comm.size(), rank = comm.rank();
  try {
    sets_and_tau_match_one_process(comm);
    sets_match_on_ties_and_dimensions(comm);
    if (P > 1) // (one process throws check_distinct's own error, not an agreed one)
      duplicates_are_named_as_one_process(comm);
    {
      const auto x = datasets::halton(1500, 2);
      Table<double> f(x.rows(), 2);
      for (std::int64_t i = 0; i < x.rows(); ++i) {
        f(i, 0) = datasets::franke(x(i, 0), x(i, 1));
        f(i, 1) = std::sin(3 * x(i, 0)) * x(i, 1);
      }
      GlobalRbfOptions mq;
      mq.kernel = Kernel::multiquadric;
      mq.eps = 20;
      mq.tolerance = 1e-10;
      mq.max_iterations = 1000;
      mq.backend = Backend::cpu;
      mq.solver = GlobalSolver::fgp;
      compare(comm, "multiquadric FGP, 2 value columns", mq, x, f, GlobalSolver::fgp);
      GlobalRbfOptions tps;
      tps.kernel = Kernel::tps;
      tps.eps = 1;
      tps.tolerance = 1e-10;
      tps.backend = Backend::cpu;
      tps.solver = GlobalSolver::krylov;
      compare(comm, "thin-plate spline GMRES, linear polynomial", tps, x, f, GlobalSolver::krylov);
    }
    {
      const auto x = datasets::halton(1200, 3);
      Table<double> f(x.rows(), 1);
      for (std::int64_t i = 0; i < x.rows(); ++i)
        f(i, 0) = datasets::franke3(x(i, 0), x(i, 1), x(i, 2));
      GlobalRbfOptions g;
      g.kernel = Kernel::gaussian;
      g.eps = 6;
      g.tolerance = 1e-10;
      g.backend = Backend::cpu;
      g.solver = GlobalSolver::krylov;
      compare(comm, "gaussian GMRES 3D, no polynomial", g, x, f, GlobalSolver::krylov);
      // The products by the distributed FMM (the one-process fit with the FMM's products too):
      // the thin-plate spline with a linear polynomial, to 1e-6 (FMM 1e-7: a cheap order, for
      // CI's four ranks on two cores).
      GlobalRbfOptions tf;
      tf.kernel = Kernel::tps;
      tf.tolerance = 1e-6;
      tf.backend = Backend::cpu;
      tf.solver = GlobalSolver::krylov;
      tf.matvec_method = Method::fmm;
      compare(comm, "thin-plate spline GMRES 3D, FMM products", tf, x, f, GlobalSolver::krylov);
    }
    if (P > 1) {
      GlobalRbfOptions o;
      o.kernel = Kernel::multiquadric;
      o.eps = 5;
      o.backend = Backend::cpu;
      const auto x = datasets::halton(400, 2);
      Table<double> f(400, 1, 1.0);
      const auto [begin, count] = slice(comm, 400);
      auto xr = rows(x, begin, count), fr = rows(f, begin, count);
      GlobalRbfInterpolant rbf(o);
      if (rank == P - 1)
        fr(0, 0) = std::numeric_limits<double>::quiet_NaN();
      test::expect_agreed_error(comm, "NaN on the last rank", std::nullopt,
                                fmt::format("rank {}'s rows): non-finite", P - 1),
                                [&] { rbf.set_data(xr, fr, comm); });
      fr = rows(f, begin, count);
      const Table<double> x3 = rank == P - 1 ? Table<double>(count, 3, 0.5) : xr;
      test::expect_agreed_error(comm, "3 coordinates on the last rank", ErrorCode::shape_mismatch,
                                "same shape", [&] { rbf.set_data(x3, fr, comm); });
      GlobalRbfOptions dense = o;
      dense.solver = GlobalSolver::dense;
      GlobalRbfInterpolant d(dense);
      test::expect_agreed_error(comm, "dense solver", ErrorCode::unsupported, "not distributed",
                                [&] { d.set_data(xr, fr, comm); });
      GlobalRbfOptions fmm = o;
      fmm.matvec_method = Method::fmm;
      GlobalRbfInterpolant m(fmm);
      test::expect_agreed_error(comm, "FMM products in 2D", ErrorCode::unsupported, "is 3D",
                                [&] { m.set_data(xr, fr, comm); });
      // After a good fit: move_centres is refused, evaluate with the FMM too.
      rbf.set_data(xr, fr, comm);
      const std::int64_t idx[1] = {0};
      bool refused = false;
      try {
        rbf.move_centres(idx, Table<double>(1, 2, 0.5));
      } catch (const Error &e) {
        refused = e.code() == ErrorCode::unsupported;
      }
      test::mpi_check(refused, "move_centres on a distributed fit is refused", rank);
      // evaluate by the FMM sums directly over the ranks: the same values.
      const Table<double> q(3 + rank, 2, 0.5);
      const auto a = rbf.evaluate(q, Method::fmm), b = rbf.evaluate(q, Method::direct);
      bool same = a.rows() == b.rows();
      for (std::int64_t k = 0; same && k < a.rows() * a.cols(); ++k)
        same = a.data()[k] == b.data()[k];
      test::mpi_check(same, "evaluate with method fmm equals direct over the ranks", rank);
    }
  } catch (const std::exception &e) {
    test::mpi_check(false, fmt::format("unexpected exception: {}", e.what()), rank);
  }
  if (test::mpi_failures() == 0 && rank == 0)
    std::printf("global_rbf_mpi_test: all checks passed on %d rank(s)\n", P);
  return test::mpi_failures() == 0 ? 0 : 1;
}
