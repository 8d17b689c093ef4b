// The distributed TD-BEM (seed 003 §5.1) against the single-process run, in the same program: run
// it under `mpirun -n P` (CTest does with P = 2 and 4, --oversubscribe) or alone (one rank). Every
// rank compares the distributed density and probe signal with its own serial run (mpi = false):
// equal to 1e-14 relative after 8 steps, 1e-12 after 25 (the ranks' partial sums are added in
// another order, and the marching amplifies rounding slowly). Then one rank
// fails on purpose and every rank must get the same error (no rank may hang).
#include "runtime/mpi_comm.hpp"

#include <ksum/error.hpp>
#include <ksum/tdbem.hpp>

#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <string>

using namespace ksum;

namespace {

struct Run {
  std::vector<double> early; // after 8 steps
  std::vector<double> density;
  std::vector<std::vector<double>> probes;
  TdbemStats stats;
};

template <class T> Run solve(bool mpi, TdbemKernel kernel, int ng) {
  TdbemOptions o;
  o.backend = Backend::cpu;
  o.kernel = kernel;
  o.ng = ng;
  o.dt = 0.15;
  o.mpi = mpi;
  o.block_rows = 32;
  TdbemSolver<T> solver(sphere_surface(1.0, 2), o);
  solver.set_incident(plane_wave_pulse({0, 0, 1}, 1.0, 2.0, 0.5));
  Table<double> probes(2, 3);
  probes(0, 0) = 1.5;
  probes(1, 2) = -2.0;
  solver.set_probes(probes);
  solver.run(8);
  const auto e = solver.density();
  solver.run(17);
  const auto d = solver.density();
  return {{e.begin(), e.end()}, {d.begin(), d.end()}, solver.probe_history(), solver.stats()};
}

int failures = 0;
void check(bool ok, const std::string &what, int rank) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: FAILED %s\n", rank, what.c_str());
    ++failures;
  }
}

double rel_diff(const std::vector<double> &a, const std::vector<double> &b) {
  double d = 0, s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::abs(a[i] - b[i]));
    s = std::max(s, std::abs(b[i]));
  }
  return s > 0 ? d / s : d;
}

} // namespace

int main() {
  const auto comm = runtime::Comm::world();
  const int rank = comm.rank();
  for (auto kernel : {TdbemKernel::contiguous, TdbemKernel::scalar})
    for (int ng : {1, 3}) {
      const auto dist = solve<double>(true, kernel, ng);
      const auto serial = solve<double>(false, kernel, ng);
      const std::string name = std::string(to_string(kernel)) + " ng " + std::to_string(ng);
      check(dist.stats.ranks == comm.size(), name + ": ranks", rank);
      // After 8 steps the two differ by rounding (≤ 1e-14); the marching then amplifies it a
      // little each step (measured 1.1e-13 after 25 steps).
      check(rel_diff(dist.early, serial.early) <= 1e-14,
            name + ": early density differs by " +
                fmt::format("{:.3g}", rel_diff(dist.early, serial.early)),
            rank);
      check(rel_diff(dist.density, serial.density) <= 1e-12,
            name + ": density differs by " +
                fmt::format("{:.3g}", rel_diff(dist.density, serial.density)),
            rank);
      if (rank == 0) {
        check(dist.probes.size() == 25 && serial.probes.size() == 25, name + ": probe rows", rank);
        for (std::size_t n = 0; n < dist.probes.size(); ++n)
          check(rel_diff(dist.probes[n], serial.probes[n]) <= 1e-12 ||
                    std::abs(dist.probes[n][0] - serial.probes[n][0]) < 1e-15,
                name + ": probe row " + std::to_string(n), rank);
      }
      const auto slices = dist.stats.slice_end - dist.stats.slice_begin;
      check(slices > 0 && slices <= 320, name + ": slice interval", rank);
    }
  // A failure on one rank only reaches every rank as the same error.
  if (comm.size() > 1) {
    std::string got;
    try {
      comm.agree(rank == comm.size() - 1, static_cast<int>(ErrorCode::io), "cannot read part 3");
    } catch (const Error &e) {
      got = e.what();
    }
    check(got == "rank " + std::to_string(comm.size() - 1) + ": cannot read part 3",
          "agreed error, got '" + got + "'", rank);
  }
  if (rank == 0)
    std::printf("tdbem mpi test: %d rank(s), %s\n", comm.size(), failures ? "FAILED" : "passed");
  return failures ? 1 : 0;
}
