#pragma once
// The benches' name for io::write_log_plot_png (include/ksum/io.hpp): several log-log curves in one
// PNG, the colour order and the axes described in the returned line.
#include <ksum/io.hpp>

#include <string>
#include <vector>

namespace bench {

using Curve = ksum::io::PlotCurve;

inline std::string write_log_plot(const std::string &path, const std::vector<Curve> &cs) {
  return ksum::io::write_log_plot_png(path, cs, true);
}

} // namespace bench
