// A log-log plot of several curves as an RGB PNG (include/ksum/io.hpp), drawn through the heat-map
// writer (one pixel per cell): the background is non-finite (white), the axes take the lowest
// value (dark violet) and curve k the value k + 1, so that the curves run through the colour scale
// (dark violet → blue → green → yellow) in the order given. No text: the caller prints the legend.
#include <ksum/io.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <string>
#include <vector>

namespace ksum::io {

std::string write_log_plot_png(const std::filesystem::path &path, const std::vector<PlotCurve> &cs,
                               bool overwrite) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const PlotCurve &c : cs)
    for (std::size_t i = 0; i < c.x.size(); ++i) {
      x0 = std::min(x0, c.x[i]);
      x1 = std::max(x1, c.x[i]);
      y0 = std::min(y0, c.y[i]);
      y1 = std::max(y1, c.y[i]);
    }
  if (!(x1 > x0))
    return "";
  y0 = std::floor(y0);
  y1 = std::max(std::ceil(y1), y0 + 1);
  const int w = 720, h = 450, left = 40, right = w - 16, bottom = 30, top = h - 12;
  std::vector<double> v(std::size_t(w) * h, std::numeric_limits<double>::quiet_NaN());
  const auto put = [&](int px, int py, double val) {
    if (px >= 0 && px < w && py >= 0 && py < h)
      v[std::size_t(py) * w + std::size_t(px)] = val;
  };
  for (int px = left; px <= right; ++px) {
    put(px, bottom, 0);
    put(px, top, 0);
  }
  for (int py = bottom; py <= top; ++py) {
    put(left, py, 0);
    put(right, py, 0);
  }
  const auto px_of = [&](double x) { return left + (x - x0) / (x1 - x0) * (right - left); };
  const auto py_of = [&](double y) { return bottom + (y - y0) / (y1 - y0) * (top - bottom); };
  // Logarithmic ticks: long at the decades, short at 2 … 9 times them.
  for (double d = std::floor(x0); d <= x1; ++d)
    for (int k = 1; k <= 9; ++k) {
      const double x = d + std::log10(k);
      if (x < x0 - 1e-9 || x > x1 + 1e-9)
        continue;
      for (int s = 1; s <= (k == 1 ? 8 : 4); ++s)
        put(static_cast<int>(std::lround(px_of(x))), bottom - s, 0);
    }
  for (double d = y0; d <= y1; ++d)
    for (int k = 1; k <= 9; ++k) {
      const double y = d + std::log10(k);
      if (y > y1 + 1e-9)
        continue;
      for (int s = 1; s <= (k == 1 ? 8 : 4); ++s)
        put(left - s, static_cast<int>(std::lround(py_of(y))), 0);
    }
  std::string legend;
  for (std::size_t c = 0; c < cs.size(); ++c) {
    const double val = static_cast<double>(c + 1);
    const PlotCurve &cu = cs[c];
    double along = 0;
    for (std::size_t i = 0; i + 1 < cu.x.size(); ++i) {
      const double ax = px_of(cu.x[i]), ay = py_of(cu.y[i]);
      const double bx = px_of(cu.x[i + 1]), by = py_of(cu.y[i + 1]);
      const double len = std::hypot(bx - ax, by - ay);
      for (double t = 0; t <= len; t += 0.25, along += 0.25) {
        if (cu.dashed && std::fmod(along, 12.0) > 7.0)
          continue;
        const double f = len > 0 ? t / len : 0;
        const int cx = static_cast<int>(std::lround(ax + f * (bx - ax)));
        const int cy = static_cast<int>(std::lround(ay + f * (by - ay)));
        for (int dy = -1; dy <= 1; ++dy)
          for (int dx = -1; dx <= 1; ++dx)
            put(cx + dx, cy + dy, val);
      }
    }
    if (!cu.dashed) // a square marker at every point
      for (std::size_t i = 0; i < cu.x.size(); ++i)
        for (int dy = -3; dy <= 3; ++dy)
          for (int dx = -3; dx <= 3; ++dx)
            put(static_cast<int>(std::lround(px_of(cu.x[i]))) + dx,
                static_cast<int>(std::lround(py_of(cu.y[i]))) + dy, val);
    legend += fmt::format("{}{}", c ? "; " : "", cu.label);
  }
  write_heatmap_png(path, v.data(), w, h, overwrite, 1);
  return fmt::format("x = log10 from {:.1f} to {:.1f}, y = log10 from {:.0f} to {:.0f} (ticks at "
                     "1 … 9 × each decade); curves from dark violet to yellow in this order: {}",
                     x0, x1, y0, y1, legend);
}

} // namespace ksum::io
