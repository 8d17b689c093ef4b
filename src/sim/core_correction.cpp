// The Gaussian core as a local correction of the plain sum: the Lamb–Oseen kernel
// q/(z − y)·(1 − exp(−r²/δ²)) differs from the plain q/(z − y) only by q·exp(−r²/δ²)/(z − y),
// below tol/10 of the pair term beyond r_c = δ·sqrt(log(10/tol)). So the plain FMM sum (any tree)
// minus that term over the pairs closer than r_c is the smoothed sum to the tolerance (seed 004
// Paper IV §5.3: "a Gaussian smoother is applied when the distance to a vortex is too small").
#include "sim/sim_detail.hpp"

#include <algorithm>
#include <cmath>
#include <omp.h>

namespace ksum::sim::detail {

double core_cutoff(double core, double tolerance) {
  return core * std::sqrt(std::log(10.0 / tolerance));
}

void subtract_core(std::span<const Complex> src, std::span<const Complex> q,
                   std::span<const Complex> tgt, double core, double tolerance, int threads,
                   std::span<Complex> u) {
  const auto n = static_cast<std::int64_t>(src.size());
  const auto m = static_cast<std::int64_t>(tgt.size());
  if (n == 0 || m == 0 || !(core > 0))
    return;
  const double rc = core_cutoff(core, tolerance);
  double x0 = src[0].real(), x1 = x0, y0 = src[0].imag(), y1 = y0;
  for (const auto &z : src) {
    x0 = std::min(x0, z.real());
    x1 = std::max(x1, z.real());
    y0 = std::min(y0, z.imag());
    y1 = std::max(y1, z.imag());
  }
  // Cells at least r_c wide, so the pairs within r_c of a target lie in its 3 × 3 cells; at most
  // about 4n cells (wider cells stay correct, only slower).
  const double cap = 4.0 * static_cast<double>(n) + 16;
  const double cell =
      std::max({rc, std::sqrt((x1 - x0) * (y1 - y0) / cap), (x1 - x0) / cap, (y1 - y0) / cap});
  const auto nx = static_cast<std::int64_t>((x1 - x0) / cell) + 1;
  const auto ny = static_cast<std::int64_t>((y1 - y0) / cell) + 1;
  const auto cell_of = [&](Complex z, std::int64_t &cx, std::int64_t &cy) {
    cx = static_cast<std::int64_t>(std::floor((z.real() - x0) / cell));
    cy = static_cast<std::int64_t>(std::floor((z.imag() - y0) / cell));
  };
  // Counting sort of the sources by cell.
  std::vector<std::int64_t> start(static_cast<std::size_t>(nx * ny + 1), 0), order(n);
  std::vector<std::int64_t> home(n);
  for (std::int64_t j = 0; j < n; ++j) {
    std::int64_t cx, cy;
    cell_of(src[j], cx, cy);
    home[j] =
        std::clamp<std::int64_t>(cx, 0, nx - 1) + nx * std::clamp<std::int64_t>(cy, 0, ny - 1);
    ++start[home[j] + 1];
  }
  for (std::int64_t c = 0; c < nx * ny; ++c)
    start[c + 1] += start[c];
  {
    std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
    for (std::int64_t j = 0; j < n; ++j)
      order[fill[home[j]]++] = j;
  }
  const double rc2 = rc * rc, inv_core2 = 1 / (core * core);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256)
  for (std::int64_t i = 0; i < m; ++i) {
    const Complex z = tgt[i];
    std::int64_t cx, cy;
    cell_of(z, cx, cy);
    double ur = 0, ui = 0;
    for (std::int64_t by = std::max<std::int64_t>(cy - 1, 0); by <= std::min(cy + 1, ny - 1); ++by)
      for (std::int64_t bx = std::max<std::int64_t>(cx - 1, 0); bx <= std::min(cx + 1, nx - 1);
           ++bx) {
        const std::int64_t c = bx + nx * by;
        for (std::int64_t k = start[c]; k < start[c + 1]; ++k) {
          const std::int64_t j = order[k];
          const double dx = z.real() - src[j].real(), dy = z.imag() - src[j].imag();
          const double r2 = dx * dx + dy * dy;
          if (!(r2 > 0) || r2 >= rc2)
            continue;
          // q e^{−r²/δ²}/(z − y) = q·conj(z − y)·e^{−r²/δ²}/r².
          const double f = std::exp(-r2 * inv_core2) / r2;
          ur += f * (q[j].real() * dx + q[j].imag() * dy);
          ui += f * (q[j].imag() * dx - q[j].real() * dy);
        }
      }
    u[i] -= Complex(ur, ui);
  }
}

} // namespace ksum::sim::detail
