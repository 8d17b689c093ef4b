// Heat maps as PNG through libpng (the --plot of `ksum interpolate`).
#include "io/io_detail.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <csetjmp>
#include <fmt/format.h>
#include <functional>
#include <png.h>
#include <vector>

namespace ksum::io {
namespace {

// A perceptually ordered colour map (dark violet → blue → green → yellow), piecewise linear between
// five anchors taken from the viridis scale.
std::array<unsigned char, 3> colour(double t) {
  static constexpr double anchors[5][3] = {{0.267, 0.005, 0.329},
                                           {0.229, 0.322, 0.546},
                                           {0.128, 0.567, 0.551},
                                           {0.369, 0.789, 0.383},
                                           {0.993, 0.906, 0.144}};
  t = std::clamp(t, 0.0, 1.0) * 4;
  const int k = std::min(3, static_cast<int>(t));
  const double f = t - k;
  std::array<unsigned char, 3> rgb{};
  for (int c = 0; c < 3; ++c)
    rgb[c] = static_cast<unsigned char>(
        std::lround(255 * ((1 - f) * anchors[k][c] + f * anchors[k + 1][c])));
  return rgb;
}

// Writes a w × h RGB image through libpng, row by row from the top: fill(py, row) writes the 3w
// bytes of image row py (so a large image never sits in memory whole).
void write_rgb_png(const std::filesystem::path &path, bool overwrite, std::int64_t w,
                   std::int64_t h, const std::function<void(std::int64_t, png_byte *)> &fill) {
  const std::string name = detail::display(path);
  std::vector<png_byte> row(static_cast<std::size_t>(3 * w));
  detail::write_atomically(path, overwrite, [&](std::FILE *out) {
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    png_infop info = png ? png_create_info_struct(png) : nullptr;
    if (!info) {
      png_destroy_write_struct(&png, nullptr);
      throw Error(ErrorCode::io, fmt::format("{}: cannot initialise libpng", name));
    }
    // libpng reports errors by longjmp: only plain data lives between here and the writes.
    if (setjmp(png_jmpbuf(png))) {
      png_destroy_write_struct(&png, &info);
      throw Error(ErrorCode::io, fmt::format("{}: libpng failed while writing", name));
    }
    png_init_io(png, out);
    png_set_IHDR(png, info, static_cast<png_uint_32>(w), static_cast<png_uint_32>(h), 8,
                 PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (std::int64_t py = 0; py < h; ++py) {
      fill(py, row.data());
      png_write_row(png, row.data());
    }
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
  });
}

} // namespace

void write_heatmap_png(const std::filesystem::path &path, const double *values, std::int64_t nx,
                       std::int64_t ny, bool overwrite, int pixel) {
  const std::string name = detail::display(path);
  if (nx < 1 || ny < 1 || nx * ny > (std::int64_t(1) << 26))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: a heat map needs 1 to 2^26 cells, got {} x {}", name, nx, ny));
  double lo = INFINITY, hi = -INFINITY;
  for (std::int64_t i = 0; i < nx * ny; ++i)
    if (std::isfinite(values[i])) {
      lo = std::min(lo, values[i]);
      hi = std::max(hi, values[i]);
    }
  if (!(hi >= lo))
    throw Error(ErrorCode::non_finite, fmt::format("{}: no finite value to plot", name));
  if (pixel <= 0)
    pixel = static_cast<int>(std::max<std::int64_t>(1, 500 / std::max(nx, ny)));
  const std::int64_t w = nx * pixel, h = ny * pixel;
  if (w > 20000 || h > 20000)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: image of {} x {} pixels is too large", name, w, h));
  const double span = hi > lo ? hi - lo : 1.0;
  write_rgb_png(path, overwrite, w, h, [&](std::int64_t py, png_byte *row) {
    const std::int64_t iy = ny - 1 - py / pixel; // image rows run downwards, y upwards
    for (std::int64_t px = 0; px < w; ++px) {
      const double v = values[px / pixel + nx * iy];
      const auto c =
          std::isfinite(v) ? colour((v - lo) / span) : std::array<unsigned char, 3>{255, 255, 255};
      std::copy(c.begin(), c.end(), row + 3 * px);
    }
  });
}

} // namespace ksum::io

// Line plots (the 1D --plot of `ksum kde`): a small rasteriser into an RGB buffer, then libpng.
namespace ksum::io {
namespace {

// Coverage of an anti-aliased polyline of width `thick` pixels. Each pixel keeps the largest
// coverage of any segment, so joints where two segments overlap are not drawn darker.
class Coverage {
public:
  Coverage(int w, int h) : w_(w), h_(h), a_(static_cast<std::size_t>(w) * h, 0.0f) {}
  void segment(double ax, double ay, double bx, double by, double thick) {
    const double r = thick / 2 + 1;
    const int x0 = std::max(0, static_cast<int>(std::floor(std::min(ax, bx) - r)));
    const int x1 = std::min(w_ - 1, static_cast<int>(std::ceil(std::max(ax, bx) + r)));
    const int y0 = std::max(0, static_cast<int>(std::floor(std::min(ay, by) - r)));
    const int y1 = std::min(h_ - 1, static_cast<int>(std::ceil(std::max(ay, by) + r)));
    const double dx = bx - ax, dy = by - ay, len2 = dx * dx + dy * dy;
    for (int py = y0; py <= y1; ++py)
      for (int px = x0; px <= x1; ++px) {
        // Distance from the pixel centre to the segment; coverage falls off over one pixel.
        const double t =
            len2 > 0 ? std::clamp(((px - ax) * dx + (py - ay) * dy) / len2, 0.0, 1.0) : 0.0;
        const double ex = px - (ax + t * dx), ey = py - (ay + t * dy);
        const double c = std::clamp(thick / 2 + 0.5 - std::sqrt(ex * ex + ey * ey), 0.0, 1.0);
        float &a = a_[static_cast<std::size_t>(py) * w_ + px];
        a = std::max(a, static_cast<float>(c));
      }
  }
  float at(int px, int py) const { return a_[static_cast<std::size_t>(py) * w_ + px]; }

private:
  int w_, h_;
  std::vector<float> a_;
};

} // namespace

void write_line_plot_png(const std::filesystem::path &path, const double *x, const double *y,
                         std::int64_t n, bool overwrite, int width, int height) {
  const std::string name = detail::display(path);
  if (n < 2)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: a line plot needs at least 2 points, got {}", name, n));
  if (width < 64 || height < 64 || width > 8192 || height > 8192)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: plot size {} x {} pixels; each side must be 64 .. 8192", name,
                            width, height));
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i]))
      throw Error(ErrorCode::non_finite,
                  fmt::format("{}: non-finite point ({}, {}) at index {}", name, x[i], y[i], i));
    xmin = std::min(xmin, x[i]);
    xmax = std::max(xmax, x[i]);
    ymin = std::min(ymin, y[i]);
    ymax = std::max(ymax, y[i]);
  }
  if (!(xmax > xmin))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: every x is {}; a line plot needs an x range", name, xmin));
  const double ylo = std::min(0.0, ymin);
  const double yhi = ymax > ylo ? ymax + 0.05 * (ymax - ylo) : ylo + 1;

  // The axes box, with margins that leave room for the ticks outside it.
  const int left = std::max(12, width / 12), right = width - 1 - std::max(8, width / 40);
  const int top = std::max(8, height / 30), bottom = height - 1 - std::max(12, height / 12);
  std::vector<png_byte> rgb(std::size_t(3) * width * height, 255);
  const auto ink = [&](int px, int py) {
    if (px >= 0 && px < width && py >= 0 && py < height)
      for (int c = 0; c < 3; ++c)
        rgb[std::size_t(3) * (std::size_t(py) * width + px) + c] = 0;
  };
  for (int px = left; px <= right; ++px) {
    ink(px, top);
    ink(px, bottom);
  }
  for (int py = top; py <= bottom; ++py) {
    ink(left, py);
    ink(right, py);
  }
  const int tick = std::max(3, std::min(width, height) / 80);
  for (int t = 0; t <= 10; ++t) {
    const int tx = left + (right - left) * t / 10, ty = bottom - (bottom - top) * t / 10;
    for (int s = 1; s <= tick; ++s) {
      ink(tx, bottom + s);
      ink(left - s, ty);
    }
  }

  Coverage cover(width, height);
  const double thick = std::max(1.5, std::min(width, height) / 250.0);
  const auto px_of = [&](double v) { return left + (v - xmin) / (xmax - xmin) * (right - left); };
  const auto py_of = [&](double v) { return bottom - (v - ylo) / (yhi - ylo) * (bottom - top); };
  for (std::int64_t i = 1; i < n; ++i)
    cover.segment(px_of(x[i - 1]), py_of(y[i - 1]), px_of(x[i]), py_of(y[i]), thick);
  // The curve in a strong blue over the white page; the box stays black where they cross.
  static constexpr double blue[3] = {31, 119, 180};
  for (int py = 0; py < height; ++py)
    for (int px = 0; px < width; ++px) {
      const float a = cover.at(px, py);
      if (a <= 0)
        continue;
      png_byte *p = rgb.data() + std::size_t(3) * (std::size_t(py) * width + px);
      for (int c = 0; c < 3; ++c)
        p[c] =
            static_cast<png_byte>(std::lround(std::min<double>(p[c], (1 - a) * 255 + a * blue[c])));
    }
  write_rgb_png(path, overwrite, width, height, [&](std::int64_t py, png_byte *row) {
    std::copy_n(rgb.data() + std::size_t(3) * width * py, std::size_t(3) * width, row);
  });
}

} // namespace ksum::io
