#pragma once
// Small helpers shared by the benchmarks' command lines (bsm_bench, mc_bench).
#include <algorithm>
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

} // namespace bench
