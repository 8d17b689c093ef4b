#pragma once
// Small helpers shared by the benchmarks' command lines.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

namespace bench {

// The non-empty items of a comma-separated list ("1e3,3e3" → {"1e3", "3e3"}).
inline std::vector<std::string> split(const std::string &list) {
  std::vector<std::string> out;
  for (std::size_t b = 0; b <= list.size();) {
    const std::size_t e = std::min(list.find(',', b), list.size());
    if (e > b)
      out.push_back(list.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

// The plot file of one precision for --png FILE: FILE_f32.png, FILE_f64.png (a trailing .png of
// FILE is dropped first).
inline std::string png_path(std::string stem, int precision) {
  if (stem.size() > 4 && stem.ends_with(".png"))
    stem.resize(stem.size() - 4);
  return stem + "_f" + std::to_string(precision) + ".png";
}

// --help: the leading comment block of the benchmark's source file (its usage), read from `file`
// (pass __FILE__); returns the exit code 0.
inline int print_header_help(const char *file) {
  std::ifstream self(file);
  std::string line;
  while (std::getline(self, line) && line.rfind("//", 0) == 0)
    fmt::print("{}\n", line.substr(std::min<std::size_t>(3, line.size())));
  return 0;
}

} // namespace bench
