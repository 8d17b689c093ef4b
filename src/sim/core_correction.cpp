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

namespace {

// Points binned into a grid of square cells: cell c holds sorted entries [start[c], start[c+1]),
// order[k] the input index of entry k.
struct Bins {
  std::int64_t nx = 0, ny = 0;
  double x0 = 0, y0 = 0, cell = 1;
  std::vector<std::int64_t> start, order;

  std::int64_t cell_of(Complex z) const {
    const auto cx = static_cast<std::int64_t>(std::floor((z.real() - x0) / cell));
    const auto cy = static_cast<std::int64_t>(std::floor((z.imag() - y0) / cell));
    return std::clamp<std::int64_t>(cx, 0, nx - 1) + nx * std::clamp<std::int64_t>(cy, 0, ny - 1);
  }
  // Counting sort of the points by cell: the cells in parallel, the counts and the fill in one
  // pass each.
  void fill(std::span<const Complex> z, int threads) {
    const auto n = static_cast<std::int64_t>(z.size());
    std::vector<std::int64_t> home(static_cast<std::size_t>(n));
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t j = 0; j < n; ++j)
      home[j] = cell_of(z[j]);
    start.assign(static_cast<std::size_t>(nx * ny + 1), 0);
    for (std::int64_t j = 0; j < n; ++j)
      ++start[home[j] + 1];
    for (std::int64_t c = 0; c < nx * ny; ++c)
      start[c + 1] += start[c];
    order.resize(static_cast<std::size_t>(n));
    std::vector<std::int64_t> next(start.begin(), start.end() - 1);
    for (std::int64_t j = 0; j < n; ++j)
      order[next[home[j]]++] = j;
  }
};

} // namespace

void subtract_core(std::span<const Complex> src, std::span<const Complex> q,
                   std::span<const Complex> tgt, double core, double tolerance, int threads,
                   std::span<Complex> u) {
  const auto n = static_cast<std::int64_t>(src.size());
  const auto m = static_cast<std::int64_t>(tgt.size());
  if (n == 0 || m == 0 || !(core > 0))
    return;
  const double rc = core_cutoff(core, tolerance);
  double x0 = src[0].real(), x1 = x0, y0 = src[0].imag(), y1 = y0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(min : x0, y0)           \
    reduction(max : x1, y1)
  for (std::int64_t j = 0; j < n; ++j) {
    x0 = std::min(x0, src[j].real()), x1 = std::max(x1, src[j].real());
    y0 = std::min(y0, src[j].imag()), y1 = std::max(y1, src[j].imag());
  }
  // Cells at least r_c wide, so the pairs within r_c of a target lie in its 3 × 3 cells; at most
  // about 4n cells (wider cells stay correct, only slower).
  const double cap = 4.0 * static_cast<double>(n) + 16;
  Bins sb;
  sb.cell = std::max({rc, std::sqrt((x1 - x0) * (y1 - y0) / cap), (x1 - x0) / cap, (y1 - y0) / cap});
  sb.x0 = x0, sb.y0 = y0;
  sb.nx = static_cast<std::int64_t>((x1 - x0) / sb.cell) + 1;
  sb.ny = static_cast<std::int64_t>((y1 - y0) / sb.cell) + 1;
  sb.fill(src, threads);
  // The sources in cell order, as separate arrays: the three cells of a row of the 3 × 3 block
  // are one contiguous range.
  std::vector<double> sx(n), sy(n), qr(n), qi(n);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t j = sb.order[k];
    sx[k] = src[j].real(), sy[k] = src[j].imag(), qr[k] = q[j].real(), qi[k] = q[j].imag();
  }
  // Targets visited cell by cell, so neighbouring targets reuse the same sources from cache.
  const bool same = tgt.data() == src.data() && m == n;
  Bins tb_own;
  if (!same) {
    tb_own = sb;
    tb_own.fill(tgt, threads);
  }
  const Bins &tb = same ? sb : tb_own;
  const double rc2 = rc * rc, inv_core2 = 1 / (core * core);
  const std::int64_t nx = sb.nx, ny = sb.ny;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16)
  for (std::int64_t c = 0; c < nx * ny; ++c) {
    const std::int64_t cx = c % nx, cy = c / nx;
    const std::int64_t bx0 = std::max<std::int64_t>(cx - 1, 0), bx1 = std::min(cx + 1, nx - 1);
    for (std::int64_t t = tb.start[c]; t < tb.start[c + 1]; ++t) {
      const std::int64_t i = tb.order[t];
      const double zx = tgt[i].real(), zy = tgt[i].imag();
      double ur = 0, ui = 0;
      for (std::int64_t by = std::max<std::int64_t>(cy - 1, 0); by <= std::min(cy + 1, ny - 1);
           ++by) {
        const std::int64_t k0 = sb.start[bx0 + nx * by], k1 = sb.start[bx1 + nx * by + 1];
#pragma omp simd reduction(+ : ur, ui)
        for (std::int64_t k = k0; k < k1; ++k) {
          const double dx = zx - sx[k], dy = zy - sy[k];
          const double r2 = dx * dx + dy * dy;
          // q e^{−r²/δ²}/(z − y) = q·conj(z − y)·e^{−r²/δ²}/r², over 0 < r < r_c.
          const bool near = r2 > 0 && r2 < rc2;
          const double f = near ? exp_nonpositive(-r2 * inv_core2) / r2 : 0.0;
          ur += f * (qr[k] * dx + qi[k] * dy);
          ui += f * (qi[k] * dx - qr[k] * dy);
        }
      }
      u[i] -= Complex(ur, ui);
    }
  }
}

} // namespace ksum::sim::detail
