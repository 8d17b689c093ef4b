#pragma once
// Reading and writing tables of numbers: CSV (optional header line) and NumPy .npy, chosen by
// extension.
#include <ksum/table.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace ksum::io {

enum class Format { csv, npy };

// ".csv" / ".txt" → csv, ".npy" → npy; anything else: Error(invalid_argument) naming the path.
Format format_from_path(const std::filesystem::path &path);

struct ReadOptions {
  // Column count the caller needs, or −1 for any. A mismatch is Error(shape_mismatch) naming the
  // file.
  std::int64_t expect_cols = -1;
  bool allow_empty = false; // false: a file with no data rows is Error(empty_input)
};

// CSV: comma-separated; lines starting with '#' and blank lines are skipped; the first line is a
// header when any of its fields is not a number. Every value must be finite. NPY: little-endian
// float32 or float64, 1-D (one column) or 2-D, C or Fortran order. Errors name the file and the
// line and column (CSV) or the flat array index (NPY).
Table<double> read_table(const std::filesystem::path &path, const ReadOptions &options = {});

struct WriteOptions {
  bool overwrite = false;      // false: an existing file is Error(io) and is left untouched
  int significant_digits = 17; // CSV digits: 17 round-trips a double, 9 a float
  bool npy_float32 = false;    // .npy element type
};

// Writes through a temporary file in the same folder and renames it, so a failed write never leaves
// a half-written OUT. CSV gets a header line when table.names is set.
void write_table(const std::filesystem::path &path, const Table<double> &table,
                 const WriteOptions &options = {});

// A text file (a JSON report, say), written like write_table: through a temporary file, an
// existing file only with overwrite.
void write_text(const std::filesystem::path &path, const std::string &text, bool overwrite = false);

// A heat map of values on a regular nx × ny grid (the value of cell (ix, iy) is values[ix + nx·iy],
// y upwards), colours scaled between the finite minimum and maximum, as an 8-bit RGB PNG; each cell
// is `pixel` pixels wide (0: chosen so the image is about 500 pixels across). Written like
// write_table: through a temporary file, an existing file only with overwrite.
void write_heatmap_png(const std::filesystem::path &path, const double *values, std::int64_t nx,
                       std::int64_t ny, bool overwrite = false, int pixel = 0);

// A line plot of y against x as an 8-bit RGB PNG of width × height pixels: the n points joined in
// the order given (sort by x first for a curve), inside an axes box with ten ticks per side; x
// spans the box, y runs from min(0, min y) to 5 % above max y. No text: the data are in the
// table beside it. Errors: n < 2, a non-finite value (naming its index), x without spread, a
// size outside 64 … 8192 pixels (invalid_argument or non_finite). Written like write_table.
void write_line_plot_png(const std::filesystem::path &path, const double *x, const double *y,
                         std::int64_t n, bool overwrite = false, int width = 640, int height = 400);

// Several curves on log-log axes as an 8-bit RGB PNG (720 × 450): x and y are given as log10
// values; decade ticks (long) and 2 … 9 ticks (short), no text. The axes are dark violet and
// curve k takes the k-th colour from dark violet to yellow (the order given); a dashed curve has no
// markers (a reference level). Returns one line describing the axes' ranges and the colour order
// (the legend to print beside the image), or "" when there is nothing to plot (the file is not
// written then). Written like write_table.
struct PlotCurve {
  std::string label;
  std::vector<double> x, y; // log10 values
  bool dashed = false;
};
std::string write_log_plot_png(const std::filesystem::path &path,
                               const std::vector<PlotCurve> &curves, bool overwrite = false);

} // namespace ksum::io
