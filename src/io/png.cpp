// Heat maps as PNG through libpng (the --plot of `ksum interpolate`).
#include "io/io_detail.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <csetjmp>
#include <fmt/format.h>
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
    const double span = hi > lo ? hi - lo : 1.0;
    for (std::int64_t py = 0; py < h; ++py) {
      const std::int64_t iy = ny - 1 - py / pixel; // image rows run downwards, y upwards
      for (std::int64_t px = 0; px < w; ++px) {
        const double v = values[px / pixel + nx * iy];
        const auto c = std::isfinite(v) ? colour((v - lo) / span)
                                        : std::array<unsigned char, 3>{255, 255, 255};
        std::copy(c.begin(), c.end(), row.begin() + 3 * px);
      }
      png_write_row(png, row.data());
    }
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
  });
}

} // namespace ksum::io
