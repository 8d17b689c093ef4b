// Option checks and particle pictures shared by the simulations.
#include "sim/sim_detail.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numbers>

namespace ksum::sim::detail {

void require(bool ok, std::string_view scenario, std::string_view name, double value,
             std::string_view why) {
  if (!ok)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("simulate {}: {} = {} {}", scenario, name, value, why));
}

Picture splat(std::span<const Complex> z, std::span<const double> w, Complex lo, double cell,
              std::int64_t nx, std::int64_t ny, double width) {
  Picture p;
  p.nx = nx;
  p.ny = ny;
  p.values.assign(static_cast<std::size_t>(nx * ny), 0.0);
  // Narrower than a cell, a Gaussian would miss the cell centres: widen it to ¾ of a cell.
  const double rho = std::max(width, 0.75 * cell);
  const double norm = 1 / (std::numbers::pi * rho * rho), inv_rho2 = 1 / (rho * rho);
  const auto reach = static_cast<std::int64_t>(std::ceil(3 * rho / cell));
  for (std::size_t j = 0; j < z.size(); ++j) {
    const double gx = (z[j].real() - lo.real()) / cell - 0.5;
    const double gy = (z[j].imag() - lo.imag()) / cell - 0.5;
    if (!(gx > -static_cast<double>(reach) && gy > -static_cast<double>(reach) &&
          gx < static_cast<double>(nx + reach) && gy < static_cast<double>(ny + reach)))
      continue;
    const auto ix = static_cast<std::int64_t>(std::lround(gx));
    const auto iy = static_cast<std::int64_t>(std::lround(gy));
    for (std::int64_t cy = std::max<std::int64_t>(iy - reach, 0);
         cy <= std::min(iy + reach, ny - 1); ++cy)
      for (std::int64_t cx = std::max<std::int64_t>(ix - reach, 0);
           cx <= std::min(ix + reach, nx - 1); ++cx) {
        const double dx = (static_cast<double>(cx) - gx) * cell;
        const double dy = (static_cast<double>(cy) - gy) * cell;
        p.values[static_cast<std::size_t>(cx + nx * cy)] +=
            w[j] * norm * std::exp(-(dx * dx + dy * dy) * inv_rho2);
      }
  }
  return p;
}

double grid_for(double width, double height, double cell, std::int64_t max_cells, std::int64_t &nx,
                std::int64_t &ny) {
  cell = std::max(
      {cell, width / static_cast<double>(max_cells), height / static_cast<double>(max_cells)});
  nx = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(width / cell)));
  ny = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(height / cell)));
  return cell;
}

void normalise_signed(Picture &p) {
  std::vector<double> mag;
  mag.reserve(p.values.size());
  for (const double v : p.values)
    if (std::isfinite(v) && v != 0)
      mag.push_back(std::abs(v));
  if (mag.empty())
    return;
  const auto k = static_cast<std::ptrdiff_t>(0.99 * static_cast<double>(mag.size() - 1));
  std::nth_element(mag.begin(), mag.begin() + k, mag.end());
  const double top = mag[static_cast<std::size_t>(k)];
  if (!(top > 0))
    return;
  for (double &v : p.values)
    if (std::isfinite(v))
      v = std::clamp(v / top, -1.0, 1.0);
}

} // namespace ksum::sim::detail
