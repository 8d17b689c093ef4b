// Method::automatic's calibrated cost model (method_model.hpp).
#include "direct/method_model.hpp"
#include "fmm/fmm3d/bbfmm.hpp"

#include <ksum/datasets.hpp>

#include <ksum/error.hpp>

#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

namespace ksum::detail {
namespace {

struct Rates {
  double direct_pairs_per_second = 0;
  double fmm_seconds_per_point = 0;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class T> double direct_rate(const DirectOptions &o, Backend backend) {
  // Enough pairs to fill a GPU; a few million on the CPU.
  const std::int64_t nt = backend == Backend::cuda ? 65536 : 2048;
  const std::int64_t ns = backend == Backend::cuda ? 16384 : 2048;
  const auto s = datasets::uniform_cube(ns, 11).cast<T>();
  const auto t = datasets::uniform_cube(nt, 12).cast<T>();
  const Table<T> w(ns, 1, T(1));
  DirectOptions d;
  d.kernel = o.kernel;
  d.eps = o.eps;
  d.backend = backend;
  d.threads = o.threads;
  d.devices = o.devices;
  DirectSum<T> plan(d);
  plan.set_points(s, t);
  plan.execute(w); // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  plan.execute(w);
  return static_cast<double>(ns) * static_cast<double>(nt) / std::max(seconds_since(t0), 1e-9);
}

double fmm_cost(const DirectOptions &o, Backend backend, bool single) {
  const std::int64_t n = backend == Backend::cuda ? 200000 : 30000;
  const auto p = datasets::uniform_cube(n, 13);
  std::vector<double> w(static_cast<std::size_t>(n), 1.0), out(static_cast<std::size_t>(n));
  const auto t0 = std::chrono::steady_clock::now();
  fmm::BbFmm f({.kernel = o.kernel,
                .eps = o.eps,
                .tolerance = o.tolerance,
                .threads = o.threads,
                .gpu = backend == Backend::cuda,
                .gpu_single = single,
                .device = o.devices.empty() ? 0 : o.devices.front()});
  f.set_points(p.data(), n, nullptr, 0);
  f.apply(w.data(), 1, out.data());
  return seconds_since(t0) / static_cast<double>(n);
}

} // namespace

bool fmm_predicted_faster(const DirectOptions &options, Backend backend, bool single_precision,
                          std::int64_t n, std::int64_t m) {
  // Below a few million pairs the direct sum takes milliseconds: not worth calibrating.
  if (static_cast<double>(n) * static_cast<double>(m) < 4e6)
    return false;
  static std::mutex mutex;
  static std::map<std::tuple<int, double, double, int, bool>, Rates> cache;
  const auto key = std::make_tuple(static_cast<int>(options.kernel), options.eps, options.tolerance,
                                   static_cast<int>(backend), single_precision);
  Rates r;
  {
    std::lock_guard lock(mutex);
    auto it = cache.find(key);
    if (it == cache.end()) {
      r.direct_pairs_per_second = single_precision ? direct_rate<float>(options, backend)
                                                   : direct_rate<double>(options, backend);
      try {
        r.fmm_seconds_per_point = fmm_cost(options, backend, single_precision);
      } catch (const Error &) { // e.g. the tolerance is beyond the FMM's reach: stay direct
        r.fmm_seconds_per_point = std::numeric_limits<double>::infinity();
      }
      it = cache.emplace(key, r).first;
    }
    r = it->second;
  }
  const double direct = static_cast<double>(n) * static_cast<double>(m) / r.direct_pairs_per_second;
  const double fmm = r.fmm_seconds_per_point * 0.5 * static_cast<double>(n + m);
  return fmm < direct;
}

} // namespace ksum::detail
