// PumInterpolant::set_data over MPI ranks (issue 25) against the single-process fit, in one
// program: run it alone (one rank) or under `mpirun -n P` (CTest: P = 2, 3, 4, --oversubscribe).
// Every rank passes all the data; the ranks fit contiguous cell ranges and exchange the fits, so
// every rank must then hold the interpolant one process makes: the same values at 600 points (to
// 1e-15 of their size; measured: identical bits) and the same statistics, for LOOCV shapes with
// two value columns and for a fixed shape with a linear polynomial. Then errors on one rank (data
// that differ, a NaN) must reach every rank, and no rank may hang.
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
