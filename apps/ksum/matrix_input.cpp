// Matrix Market reading for `ksum bsm`. Eigen 3.4's reader (unsupported/Eigen/SparseExtra,
// loadMarket) was the first choice, but as installed it reads only the coordinate format, ignores
// the symmetry field (a symmetric file loads as its lower triangle), keeps the previous line's
// value when a value does not parse, and reports bad lines on std::cerr instead of failing; the
// dense reader (loadMarketDense) is not in 3.4. The format is a banner, a size line and one
// whitespace-separated record per line, so it is read here with line numbers for the errors.
#include "matrix_input.hpp"

#include <ksum/error.hpp>
#include <ksum/io.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

namespace ksum::cli {
namespace {

std::vector<std::string> split(const std::string &line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string t; in >> t;)
    out.push_back(t);
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

struct Reader {
  std::ifstream in;
  std::string name;
  std::int64_t line_no = 0;

  // The next line that is neither a comment nor blank, split into tokens; empty at the end.
  std::vector<std::string> next() {
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      if (!line.empty() && line[0] == '%')
        continue;
      auto t = split(line);
      if (!t.empty())
        return t;
    }
    return {};
  }

  [[noreturn]] void fail(ErrorCode code, const std::string &what) const {
    throw Error(code, fmt::format("{}:{}: {}", name, line_no, what));
  }

  std::int64_t integer(const std::string &t, const char *what) const {
    errno = 0;
    char *end = nullptr;
    const long long v = std::strtoll(t.c_str(), &end, 10);
    if (*end != '\0' || errno != 0)
      fail(ErrorCode::parse, fmt::format("cannot parse {} '{}' as an integer", what, t));
    return v;
  }

  double number(const std::string &t) const {
    char *end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (*end != '\0' || t.empty())
      fail(ErrorCode::parse, fmt::format("cannot parse '{}' as a number", t));
    return v;
  }
};

} // namespace

Table<double> read_matrix_market(const std::filesystem::path &path) {
  Reader r;
  r.name = path.string();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(ErrorCode::io, fmt::format("{}: cannot open for reading: is a directory", r.name));
  errno = 0;
  r.in.open(path);
  if (!r.in)
    throw Error(ErrorCode::io, fmt::format("{}: cannot open for reading: {}", r.name,
                                           std::strerror(errno ? errno : ENOENT)));
  std::string banner;
  std::getline(r.in, banner);
  r.line_no = 1;
  const auto h = split(lower(banner));
  if (h.size() != 5 || h[0] != "%%matrixmarket" || h[1] != "matrix")
    r.fail(ErrorCode::parse,
           "not a Matrix Market matrix: the first line must be '%%MatrixMarket matrix "
           "coordinate|array real|integer general|symmetric|skew-symmetric'");
  const bool coordinate = h[2] == "coordinate";
  if (!coordinate && h[2] != "array")
    r.fail(ErrorCode::parse, fmt::format("format '{}': expected coordinate or array", h[2]));
  if (h[3] == "complex" || h[3] == "pattern")
    r.fail(ErrorCode::unsupported,
           fmt::format("field '{}': only real (or integer) matrices can be inverted here", h[3]));
  if (h[3] != "real" && h[3] != "double" && h[3] != "integer")
    r.fail(ErrorCode::parse, fmt::format("field '{}': expected real or integer", h[3]));
  if (h[4] == "hermitian")
    r.fail(ErrorCode::unsupported, "symmetry 'hermitian' belongs to complex matrices");
  const bool general = h[4] == "general", skew = h[4] == "skew-symmetric";
  if (!general && !skew && h[4] != "symmetric")
    r.fail(ErrorCode::parse,
           fmt::format("symmetry '{}': expected general, symmetric or skew-symmetric", h[4]));

  const auto size = r.next();
  if (size.size() != (coordinate ? 3u : 2u))
    r.fail(ErrorCode::parse,
           size.empty()
               ? std::string("no size line")
               : fmt::format("size line: expected {}, found {} fields",
                             coordinate ? "'rows cols entries'" : "'rows cols'", size.size()));
  const std::int64_t rows = r.integer(size[0], "rows"), cols = r.integer(size[1], "columns");
  if (rows < 1 || cols < 1)
    r.fail(ErrorCode::empty_input, fmt::format("a {} × {} matrix", rows, cols));
  if (!general && rows != cols)
    r.fail(ErrorCode::parse,
           fmt::format("a {} matrix must be square, not {} × {}", h[4], rows, cols));
  if (double(rows) * double(cols) > 4e9)
    r.fail(ErrorCode::invalid_argument,
           fmt::format("a {} × {} matrix is too large to hold densely", rows, cols));
  Table<double> A(rows, cols);
  const double mirror = skew ? -1.0 : 1.0;
  auto finite = [&](double v, std::int64_t i, std::int64_t j) {
    if (!std::isfinite(v))
      r.fail(ErrorCode::non_finite,
             fmt::format("non-finite value {} at row {}, column {} (1-based)", v, i + 1, j + 1));
  };

  if (coordinate) {
    const std::int64_t entries = r.integer(size[2], "entries");
    if (entries < 0)
      r.fail(ErrorCode::parse, fmt::format("{} entries", entries));
    for (std::int64_t e = 0; e < entries; ++e) {
      const auto t = r.next();
      if (t.empty())
        throw Error(ErrorCode::parse, fmt::format("{}: the file ends after {} of its {} entries",
                                                  r.name, e, entries));
      if (t.size() != 3)
        r.fail(ErrorCode::parse,
               fmt::format("expected 'row column value', found {} fields", t.size()));
      const std::int64_t i = r.integer(t[0], "row") - 1, j = r.integer(t[1], "column") - 1;
      if (i < 0 || i >= rows || j < 0 || j >= cols)
        r.fail(ErrorCode::parse, fmt::format("entry ({}, {}) lies outside the {} × {} matrix",
                                             i + 1, j + 1, rows, cols));
      const double v = r.number(t[2]);
      finite(v, i, j);
      A(i, j) += v; // repeated entries add up, as in Eigen's and SciPy's readers
      if (!general && i != j)
        A(j, i) += mirror * v;
    }
  } else {
    // Column by column; a symmetric matrix stores its lower triangle with the diagonal, a
    // skew-symmetric one its strict lower triangle.
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = general ? 0 : skew ? j + 1 : j; i < rows; ++i) {
        const auto t = r.next();
        if (t.empty())
          throw Error(ErrorCode::parse,
                      fmt::format("{}: the file ends before the value of row {}, column {}", r.name,
                                  i + 1, j + 1));
        if (t.size() != 1)
          r.fail(ErrorCode::parse,
                 fmt::format("expected one value per line, found {} fields", t.size()));
        const double v = r.number(t[0]);
        finite(v, i, j);
        A(i, j) = v;
        if (!general)
          A(j, i) = mirror * v;
      }
  }
  if (!r.next().empty())
    r.fail(ErrorCode::parse, "data after the last entry");
  return A;
}

Table<double> read_matrix(const std::filesystem::path &path) {
  if (lower(path.extension().string()) == ".mtx")
    return read_matrix_market(path);
  return io::read_table(path);
}

Table<double> test_matrix(const std::string &kind, std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Table<double> A(n, n);
  if (kind == "random") {
    std::normal_distribution<double> normal;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i)
        A(i, j) = (i == j ? 1.0 : 0.0) + normal(rng) / (2 * std::sqrt(double(n)));
    return A;
  }
  std::uniform_real_distribution<double> uni(-1, 1);
  for (std::int64_t i = 0; i < n; ++i) {
    double row = 0;
    for (std::int64_t j = 0; j < n; ++j)
      if (j != i) {
        A(i, j) = uni(rng);
        row += std::abs(A(i, j));
      }
    A(i, i) = (uni(rng) < 0 ? -1 : 1) * (1 + row);
  }
  if (kind == "graded" && n > 1)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i)
        A(i, j) *= std::pow(10.0, -3.0 * double(i + j) / double(n - 1));
  return A;
}

} // namespace ksum::cli
