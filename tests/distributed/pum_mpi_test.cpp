// PumInterpolant::set_data over MPI ranks (issue 25) against the single-process fit, in one
// program: run it alone (one rank) or under `mpirun -n P` (CTest: P = 2, 3, 4, --oversubscribe).
// Every rank passes all the data; the ranks fit contiguous cell ranges and exchange the fits, so
// every rank must then hold the interpolant one process makes: the same values at 600 points (to
// 1e-15 of their size; measured: identical bits) and the same statistics, for LOOCV shapes with
// two value columns and for a fixed shape with a linear polynomial. Then errors on one rank (data
// that differ, a NaN) must reach every rank, and no rank may hang. The partitioned fit (each rank
// its own uneven slice of the rows, halos) must give the same bits as one process in 2D and 3D,
// with local polynomials, growing patches, extrapolation and merged duplicates, and hold far fewer
// than all the points on a rank.
#include "support/mpi_checks.hpp"
#include "support/reference.hpp"

#include <ksum/datasets.hpp>
#include <ksum/distributed.hpp>
#include <ksum/error.hpp>
#include <ksum/pum.hpp>

#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <limits>
#include <string>
#include <utility>
#include <vector>

using namespace ksum;

namespace {

void compare(const Communicator &comm, const char *name, const PumOptions &o) {
  const int rank = comm.rank();
  const auto x = datasets::halton(3000, 2);
  Table<double> f(x.rows(), 2);
  for (std::int64_t i = 0; i < x.rows(); ++i) {
    f(i, 0) = datasets::franke(x(i, 0), x(i, 1));
    f(i, 1) = std::sin(3 * x(i, 0)) * x(i, 1);
  }
  const auto y = test::random_points(600, 2, 7, 0.02, 0.98); // inside the data's box
  PumInterpolant alone(o), shared(o);
  alone.set_data(x, f);
  shared.set_data(x, f, comm);
  const auto want = alone.evaluate(y), got = shared.evaluate(y);
  double worst = 0, scale = 0;
  for (std::int64_t k = 0; k < want.rows() * want.cols(); ++k) {
    const double e = std::abs(got.data()[k] - want.data()[k]);
    worst = std::isfinite(e) ? std::max(worst, e) : std::numeric_limits<double>::infinity();
    scale = std::max(scale, std::abs(want.data()[k]));
  }
  test::mpi_check(worst <= 1e-15 * scale,
                  fmt::format("{}: max |s − s_alone| = {:.3g} (scale {:.3g})", name, worst, scale),
                  rank);
  const auto &a = alone.stats(), &b = shared.stats();
  test::mpi_check(a.patches == b.patches && a.eps_median == b.eps_median &&
                      a.eps_min == b.eps_min && a.eps_max == b.eps_max &&
                      a.regularised_patches == b.regularised_patches &&
                      a.max_points == b.max_points,
                  fmt::format("{}: stats patches {}/{} eps median {}/{} regularised {}/{}", name,
                              a.patches, b.patches, a.eps_median, b.eps_median,
                              a.regularised_patches, b.regularised_patches),
                  rank);
  if (rank == 0)
    std::printf("%s: %d rank(s), max |difference| %.3g, %lld patches, eps median %.4g\n", name,
                comm.size(), worst, static_cast<long long>(b.patches), b.eps_median);
}

// Rows [b_r, b_{r+1}) of n for rank r: uneven (rank r's share grows with r), and rank 1 has none
// where there are 3 ranks or more.
std::pair<std::int64_t, std::int64_t> uneven(const Communicator &comm, std::int64_t n) {
  const int P = comm.size();
  std::vector<double> w(static_cast<std::size_t>(P));
  for (int r = 0; r < P; ++r)
    w[r] = (P >= 3 && r == 1) ? 0.0 : (r + 1.0) * (r + 1.0);
  double total = 0, before = 0;
  for (int r = 0; r < P; ++r) {
    total += w[r];
    before += r < comm.rank() ? w[r] : 0.0;
  }
  const auto b0 = static_cast<std::int64_t>(std::floor(n * before / total));
  const auto b1 =
      comm.rank() == P - 1
          ? n
          : static_cast<std::int64_t>(std::floor(n * (before + w[comm.rank()]) / total));
  return {b0, b1};
}

Table<double> slice(const Table<double> &t, std::int64_t b0, std::int64_t b1) {
  Table<double> out(b1 - b0, t.cols());
  for (std::int64_t c = 0; c < t.cols(); ++c)
    for (std::int64_t i = b0; i < b1; ++i)
      out(i - b0, c) = t(i, c);
  return out;
}

// The first row of the last rank's uneven slice.
std::int64_t d1_of_last(const Communicator &comm, std::int64_t n) {
  const auto firsts = comm.allgather(uneven(comm, n).first);
  return firsts.back();
}

// set_data_partitioned (each rank its uneven slice of the rows, the halo path) against one
// process's fit of all the rows: the same bits at every evaluation point (each rank evaluates its
// own uneven slice of them) and the same statistics. Returns the partitioned stats.
PumStats compare_partitioned(const Communicator &comm, const char *name, const PumOptions &o,
                             const Table<double> &x, const Table<double> &f,
                             const Table<double> &y) {
  const int rank = comm.rank();
  PumInterpolant alone(o), parts(o);
  alone.set_data(x, f);
  const auto [d0, d1] = uneven(comm, x.rows());
  parts.set_data_partitioned(slice(x, d0, d1), slice(f, d0, d1), comm);
  const auto [e0, e1] = uneven(comm, y.rows());
  const auto want = alone.evaluate(y), got = parts.evaluate(slice(y, e0, e1));
  std::int64_t differ = 0;
  for (std::int64_t i = e0; i < e1; ++i)
    for (std::int64_t q = 0; q < want.cols(); ++q)
      differ += !(got(i - e0, q) == want(i, q));
  test::mpi_check(differ == 0 && got.rows() == e1 - e0,
                  fmt::format("{}: {} of {} values differ from one process's", name, differ,
                              (e1 - e0) * want.cols()),
                  rank);
  const auto &a = alone.stats(), &b = parts.stats();
  test::mpi_check(a.patches == b.patches && a.empty_patches == b.empty_patches &&
                      a.grown_patches == b.grown_patches && a.eps_median == b.eps_median &&
                      a.eps_min == b.eps_min && a.eps_max == b.eps_max &&
                      a.regularised_patches == b.regularised_patches &&
                      a.min_points == b.min_points && a.median_points == b.median_points &&
                      a.max_points == b.max_points && a.merged_duplicates == b.merged_duplicates,
                  fmt::format("{}: stats patches {}/{} grown {}/{} eps median {}/{} regularised "
                              "{}/{} points {}-{}/{}-{} merged {}/{}",
                              name, a.patches, b.patches, a.grown_patches, b.grown_patches,
                              a.eps_median, b.eps_median, a.regularised_patches,
                              b.regularised_patches, a.min_points, a.max_points, b.min_points,
                              b.max_points, a.merged_duplicates, b.merged_duplicates),
                  rank);
  const auto held = comm.allgather(b.owned_points + b.halo_points);
  const auto rounds = comm.allgather(b.halo_rounds);
  if (rank == 0) {
    std::int64_t most = 0;
    for (auto h : held)
      most = std::max(most, h);
    std::printf("%s (partitioned): %d rank(s), identical values, %lld patches, points held by a "
                "rank at most %lld of %lld, %lld halo round(s)\n",
                name, comm.size(), static_cast<long long>(b.patches), static_cast<long long>(most),
                static_cast<long long>(x.rows()), static_cast<long long>(rounds[0]));
  }
  return b;
}

Table<double> franke_values(const Table<double> &x, int columns) {
  Table<double> f(x.rows(), columns);
  for (std::int64_t i = 0; i < x.rows(); ++i) {
    f(i, 0) = datasets::franke(x(i, 0), x(i, 1));
    if (columns > 1)
      f(i, 1) = std::sin(3 * x(i, 0)) * x(i, 1);
  }
  return f;
}

void partitioned_cases(const Communicator &comm) {
  const int P = comm.size(), rank = comm.rank();
  const auto x = datasets::halton(3000, 2);
  const auto y = test::random_points(600, 2, 7, 0.02, 0.98);
  {
    PumOptions o;
    o.loocv = true;
    o.backend = Backend::cpu;
    const PumStats st = compare_partitioned(comm, "matern4, LOOCV shapes, 2 value columns", o, x,
                                            franke_values(x, 2), y);
    // The halo: with the 20 × 20 cells cut into P ranges of rows, a rank holds its cells' points
    // and one row of cells on each side, far fewer than all of them.
    const auto held = comm.allgather(st.owned_points + st.halo_points);
    for (int r = 0; r < P && P > 1; ++r)
      test::mpi_check(held[r] <= (P == 2 ? 0.65 : 0.5) * 3000,
                      fmt::format("rank {} holds {} of 3000 points", r, held[r]), rank);
    const auto owned = comm.allgather(st.owned_points);
    std::int64_t sum = 0;
    for (auto v : owned)
      sum += v;
    test::mpi_check(sum == 3000, fmt::format("the ranks own {} of 3000 points", sum), rank);
  }
  {
    PumOptions o;
    o.kernel = Kernel::multiquadric;
    o.eps = 3;
    o.degree = 1;
    o.backend = Backend::cpu;
    compare_partitioned(comm, "multiquadric, eps 3, linear polynomial", o, x, franke_values(x, 1),
                        y);
  }
  {
    // Sparse patches that grow beyond the first halo: 1,500 points in the lower-left quarter,
    // 40 over the rest; at least 60 points per patch. Evaluation points outside the box and in
    // the sparse part extrapolate from the nearest patch, which may be another rank's.
    const auto dense = datasets::halton(1500, 2);
    const auto sparse = test::random_points(40, 2, 11, 0.0, 1.0);
    Table<double> xs(1540, 2);
    for (std::int64_t i = 0; i < 1540; ++i)
      for (int k = 0; k < 2; ++k)
        xs(i, k) = i < 1500 ? 0.5 * dense(i, k) : sparse(i - 1500, k);
    PumOptions o;
    o.min_patch_points = 60;
    o.extrapolate = true;
    o.backend = Backend::cpu;
    const auto ys = test::random_points(500, 2, 13, -0.2, 1.2);
    const PumStats st = compare_partitioned(comm, "sparse patches that grow, extrapolation", o, xs,
                                            franke_values(xs, 1), ys);
    test::mpi_check(P == 1 || (st.halo_rounds > 1 && st.grown_patches > 0),
                    fmt::format("the growing patches took {} halo round(s), {} grew",
                                st.halo_rounds, st.grown_patches),
                    rank);
    // Without extrapolation the first point outside (in the ranks' points in rank order) is named
    // as one process names it.
    o.extrapolate = false;
    PumInterpolant alone(o), parts(o);
    alone.set_data(xs, franke_values(xs, 1));
    const auto [d0, d1] = uneven(comm, xs.rows());
    parts.set_data_partitioned(slice(xs, d0, d1), slice(franke_values(xs, 1), d0, d1), comm);
    std::string want;
    try {
      alone.evaluate(ys);
    } catch (const Error &e) {
      want = e.what();
    }
    const auto [e0, e1] = uneven(comm, ys.rows());
    test::mpi_check(!want.empty(), "one process names a point outside", rank);
    if (P > 1)
      test::expect_agreed_error(comm, "a point outside the box", ErrorCode::invalid_argument, want,
                                [&] { parts.evaluate(slice(ys, e0, e1)); });
  }
  {
    // One far point: its patch grows across the empty part of the box to reach the others. Only
    // the rank owning it takes a wider halo; the others keep theirs.
    Table<double> xo(3001, 2);
    for (std::int64_t i = 0; i < 3000; ++i)
      for (int k = 0; k < 2; ++k)
        xo(i, k) = x(i, k);
    xo(3000, 0) = 1.5;
    xo(3000, 1) = 0.5;
    PumOptions o;
    o.backend = Backend::cpu;
    const PumStats st = compare_partitioned(comm, "one far point", o, xo, franke_values(xo, 1),
                                            test::random_points(300, 2, 23, 0.02, 0.98));
    const auto held = comm.allgather(st.owned_points + st.halo_points);
    int wide = 0;
    for (int r = 0; r < P; ++r)
      wide += held[r] > (P == 2 ? 0.65 : 0.5) * 3001;
    test::mpi_check(P == 1 || wide <= 1,
                    fmt::format("{} ranks hold more than their share and halo", wide), rank);
    // A patch above the size limit (4,096 points) is named with one process's count (the largest
    // patch over the ranks), before any fit.
    PumOptions big;
    big.backend = Backend::cpu;
    big.patch_radius = 30; // every patch holds all the points
    const auto xb = datasets::halton(4500, 2);
    std::string want;
    try {
      PumInterpolant(big).set_data(xb, franke_values(xb, 1));
    } catch (const Error &e) {
      want = e.what();
    }
    test::mpi_check(want.find("a patch holds") != std::string::npos,
                    fmt::format("one process: {}", want), rank);
    const auto [d0, d1] = uneven(comm, xb.rows());
    PumInterpolant parts(big);
    if (P > 1)
      test::expect_agreed_error(comm, "a patch too large", ErrorCode::invalid_argument, want, [&] {
        parts.set_data_partitioned(slice(xb, d0, d1), slice(franke_values(xb, 1), d0, d1), comm);
      });
  }
  {
    const auto x3 = datasets::halton(4000, 3);
    Table<double> f3(4000, 1);
    for (std::int64_t i = 0; i < 4000; ++i)
      f3(i, 0) = std::exp(x3(i, 0)) * std::cos(2 * x3(i, 1)) + x3(i, 2);
    PumOptions o;
    o.kernel = Kernel::wendland2;
    o.eps = 0.5;
    o.backend = Backend::cpu;
    compare_partitioned(comm, "3D, wendland2", o, x3, f3,
                        test::random_points(400, 3, 17, 0.05, 0.95));
  }
  {
    // Repeated points, in rows that land on different ranks: merged (the mean, as one process)
    // or named by their rows.
    auto xd = datasets::halton(1200, 2);
    for (int k = 0; k < 2; ++k) {
      xd(1100, k) = xd(3, k);
      xd(700, k) = xd(3, k);
      xd(1199, k) = xd(500, k);
    }
    const Table<double> fd = franke_values(xd, 1);
    PumOptions o;
    o.merge_duplicates = true;
    o.backend = Backend::cpu;
    compare_partitioned(comm, "merged duplicates", o, xd, fd,
                        test::random_points(300, 2, 19, 0.05, 0.95));
    o.merge_duplicates = false;
    PumInterpolant parts(o);
    const auto [d0, d1] = uneven(comm, xd.rows());
    if (P > 1) // (one rank: set_data's own error, tested in pum_test)
      test::expect_agreed_error(
          comm, "repeated points", ErrorCode::invalid_argument,
          "data rows 3 and 700 are the same point",
          [&] { parts.set_data_partitioned(slice(xd, d0, d1), slice(fd, d0, d1), comm); });
  }
  if (P > 1) {
    PumOptions o;
    o.backend = Backend::cpu;
    PumInterpolant parts(o);
    const auto [d0, d1] = uneven(comm, x.rows());
    Table<double> mine = slice(x, d0, d1), f = slice(franke_values(x, 1), d0, d1);
    // Non-finite values are named by their rows in all the data, the first as one process finds
    // it (column by column, points before values): the last rank's point, not rank 0's value.
    const double nan = std::numeric_limits<double>::quiet_NaN(),
                 inf = std::numeric_limits<double>::infinity();
    if (rank == P - 1)
      mine(0, 0) = nan;
    if (rank == 0 && d1 > d0)
      f(d1 - d0 - 1, 0) = inf;
    {
      Table<double> xall = x, fall = franke_values(x, 1);
      xall(d1_of_last(comm, x.rows()), 0) = nan;
      fall(comm.allgather(d1).front() - 1, 0) = inf; // rank 0's last row
      std::string want;
      try {
        PumInterpolant(o).set_data(xall, fall);
      } catch (const Error &e) {
        want = e.what();
      }
      test::expect_agreed_error(comm, "NaN on the last rank", ErrorCode::non_finite, want,
                                [&] { parts.set_data_partitioned(mine, f, comm); });
    }
    const Table<double> wrong(rank == 0 ? 5 : 0, 3);
    test::expect_agreed_error(
        comm, "a rank with another dimension", ErrorCode::shape_mismatch, "dimension", [&] {
          parts.set_data_partitioned(rank == 0 ? wrong : mine,
                                     Table<double>(rank == 0 ? 5 : mine.rows(), 1), comm);
        });
  }
}

} // namespace

int main() {
  const Communicator comm = Communicator::world();
  const int P = comm.size(), rank = comm.rank();
  try {
    PumOptions loocv;
    loocv.loocv = true;
    loocv.backend = Backend::cpu;
    compare(comm, "matern4, LOOCV shapes, 2 value columns", loocv);
    PumOptions poly;
    poly.kernel = Kernel::multiquadric;
    poly.eps = 3;
    poly.degree = 1;
    poly.backend = Backend::cpu;
    compare(comm, "multiquadric, eps 3, linear polynomial", poly);
    partitioned_cases(comm);
    if (P > 1) {
      PumOptions o;
      o.backend = Backend::cpu;
      auto x = datasets::halton(400, 2);
      Table<double> f(400, 1, 1.0);
      if (rank == P - 1)
        x(10, 0) += 1e-3;
      PumInterpolant pum(o);
      test::expect_agreed_error(comm, "different data on the last rank",
                                ErrorCode::invalid_argument, fmt::format("rank {}'s data", P - 1),
                                [&] { pum.set_data(x, f, comm); });
      x = datasets::halton(400, 2);
      if (rank == 0)
        f(7, 0) = std::numeric_limits<double>::quiet_NaN();
      test::expect_agreed_error(comm, "NaN on rank 0", std::nullopt,
                                "rank 0:", [&] { pum.set_data(x, f, comm); });
      o.backend = Backend::cuda;
      PumInterpolant gpu(o);
      test::expect_agreed_error(comm, "GPU backend", ErrorCode::unsupported, "CPU cores",
                                [&] { gpu.set_data(x, Table<double>(400, 1, 1.0), comm); });
    }
  } catch (const std::exception &e) {
    test::mpi_check(false, fmt::format("unexpected exception: {}", e.what()), rank);
  }
  if (test::mpi_failures() == 0 && rank == 0)
    std::printf("pum_mpi_test: all checks passed on %d rank(s)\n", P);
  return test::mpi_failures() == 0 ? 0 : 1;
}
