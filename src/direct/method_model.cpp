// Method::automatic's calibrated cost model (method_model.hpp).
#include "direct/method_model.hpp"
#include "fgt/fgt_gpu.hpp"
#include "fmm/fmm3d/bbfmm.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>
#include <ksum/fgt.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <tuple>

namespace ksum::detail {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// n points uniform in the box lo + [0, side_k] (a fixed seed: the same points on every call).
Table<double> uniform_box(std::int64_t n, const std::vector<double> &lo,
                          const std::vector<double> &side, std::uint64_t seed) {
  const auto d = static_cast<std::int64_t>(lo.size());
  Table<double> t(n, d);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < d; ++k)
      t(i, k) = lo[k] + side[k] * u(rng);
  return t;
}

Table<double> unit_cube(std::int64_t n, std::int64_t d, std::uint64_t seed) {
  return uniform_box(n, std::vector<double>(d, 0.0), std::vector<double>(d, 1.0), seed);
}

// Pairs per second of the plain direct sum in dimension d: targets quadrupled until one timed
// execute takes 20 ms (a shorter one measures its fixed costs: threads, launches, transfers).
template <class T> double direct_rate(const DirectOptions &o, Backend backend, std::int64_t d) {
  const bool gpu = backend == Backend::cuda;
  const std::int64_t ns = gpu ? 16384 : 4096, nt_max = gpu ? std::int64_t(1) << 22 : 1 << 18;
  const auto s = unit_cube(ns, d, 11).cast<T>();
  const Table<T> w(ns, 1, T(1));
  DirectOptions dopt;
  dopt.kernel = o.kernel;
  dopt.eps = o.eps;
  dopt.backend = backend;
  dopt.threads = o.threads;
  dopt.devices = o.devices;
  DirectSum<T> plan(dopt);
  double rate = 0;
  for (std::int64_t nt = gpu ? 16384 : 256;; nt *= 4) {
    plan.set_points(s, unit_cube(nt, d, 12).cast<T>());
    if (rate == 0)
      plan.execute(w); // warm-up: the threads or the GPU's kernels and buffers
    const auto t0 = std::chrono::steady_clock::now();
    plan.execute(w);
    const double t = std::max(seconds_since(t0), 1e-9);
    rate = static_cast<double>(ns) * static_cast<double>(nt) / t;
    if (t >= 0.02 || nt >= nt_max)
      return rate;
  }
}

// Seconds per point (set-up and one apply, N = M) of the 3D FMM.
double fmm_cost(const DirectOptions &o, Backend backend, bool single) {
  const std::int64_t n = backend == Backend::cuda ? 200000 : 30000;
  const auto p = unit_cube(n, 3, 13);
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

GaussOptions gauss_for(const DirectOptions &o, Backend backend) {
  GaussOptions g;
  g.bandwidth = 1 / o.eps;
  g.tolerance = o.tolerance;
  g.method = GaussMethod::fgt;
  g.backend = backend;
  g.threads = o.threads;
  g.device = o.devices.empty() ? 0 : o.devices.front();
  return g;
}

// Seconds per unit of the FGT's cost model: a timed set-up and execute on n_c points spread
// uniformly over the problem's bounding box shrunk (on its non-flat axes) to the same density.
// `real` is the problem's extent in scaled coordinates (z = x / h).
template <class T>
double fgt_unit_seconds(const DirectOptions &o, Backend backend, bool on_gpu,
                        const fgt::Extent &real) {
  const int d = real.d;
  const std::int64_t n_c = std::min<std::int64_t>(real.n, on_gpu ? 200000 : 20000);
  int flat = 0;
  for (int k = 0; k < d; ++k)
    flat += real.hi[k] > real.lo[k] ? 0 : 1;
  const double shrink =
      flat == d ? 1.0
                : std::pow(static_cast<double>(n_c) / static_cast<double>(real.n), 1.0 / (d - flat));
  fgt::Extent cal = real;
  cal.n = cal.m = n_c;
  std::vector<double> lo(d), side(d);
  for (int k = 0; k < d; ++k) {
    side[k] = (real.hi[k] - real.lo[k]) * shrink;
    cal.hi[k] = cal.lo[k] + side[k];
    lo[k] = real.lo[k] / o.eps; // back to the user's coordinates: x = z · h
    side[k] /= o.eps;
  }
  const double cost = fgt::choose_fgt_for(cal, o.tolerance, 0, on_gpu).cost;
  if (!std::isfinite(cost) || cost <= 0)
    return inf;
  const auto pts = uniform_box(n_c, lo, side, 14).cast<T>();
  const Table<T> w(n_c, 1, T(1));
  { // warm-up on a few points: the GPU's kernels loaded, its buffers' first allocation
    GaussTransform<T> warm(gauss_for(o, backend));
    const auto few = uniform_box(std::min<std::int64_t>(n_c, 2000), lo, side, 15).cast<T>();
    warm.set_points(few);
    warm.execute(Table<T>(few.rows(), 1, T(1)));
  }
  const auto t0 = std::chrono::steady_clock::now();
  GaussTransform<T> g(gauss_for(o, backend));
  g.set_points(pts);
  g.execute(w);
  return seconds_since(t0) / cost;
}

// Direct-sum pairs per second and FMM seconds per point, timed once per process and key.
double cached_direct_rate(const DirectOptions &o, Backend backend, bool single, std::int64_t d) {
  static std::mutex mutex;
  static std::map<std::tuple<int, double, int, bool, std::int64_t>, double> cache;
  const auto key =
      std::make_tuple(static_cast<int>(o.kernel), o.eps, static_cast<int>(backend), single, d);
  std::lock_guard lock(mutex);
  if (auto it = cache.find(key); it != cache.end())
    return it->second;
  const double r = single ? direct_rate<float>(o, backend, d) : direct_rate<double>(o, backend, d);
  return cache.emplace(key, r).first->second;
}

double cached_fmm_cost(const DirectOptions &o, Backend backend, bool single) {
  static std::mutex mutex;
  static std::map<std::tuple<int, double, double, int, bool>, double> cache;
  const auto key = std::make_tuple(static_cast<int>(o.kernel), o.eps, o.tolerance,
                                   static_cast<int>(backend), single);
  std::lock_guard lock(mutex);
  if (auto it = cache.find(key); it != cache.end())
    return it->second;
  double c = inf;
  try {
    c = fmm_cost(o, backend, single);
  } catch (const Error &) { // e.g. the tolerance is beyond the FMM's reach: not a candidate
  }
  return cache.emplace(key, c).first->second;
}

} // namespace

template <std::floating_point T>
AutoChoice choose_method(const DirectOptions &options, Backend backend, const Table<T> &sources,
                         const Table<T> *targets) {
  AutoChoice c;
  const std::int64_t n = sources.rows(), m = targets ? targets->rows() : n, d = sources.cols();
  const bool fmm_ok = d == 3 && !options.gradient;
  const bool fgt_ok = options.kernel == Kernel::gaussian && !options.gradient;
  // Below a few million pairs the direct sum takes milliseconds: not worth calibrating.
  if (static_cast<double>(n) * static_cast<double>(m) < 4e6 || (!fmm_ok && !fgt_ok))
    return c;
  c.timed = true;
  const bool single = sizeof(T) == 4;
  c.direct_seconds = static_cast<double>(n) * static_cast<double>(m) /
                     cached_direct_rate(options, backend, single, d);
  c.fmm_seconds = c.fgt_seconds = inf;
  // Timing a small FMM or FGT costs ~0.05–0.3 s: not worth it where the direct sum is that short.
  if (c.direct_seconds < kTimeFastMethodsAbove)
    return c;
  if (fmm_ok)
    c.fmm_seconds = cached_fmm_cost(options, backend, single) * 0.5 * static_cast<double>(n + m);
  if (fgt_ok) {
    // The Gauss transform's extent in its scaled coordinates z = x / h = ε x.
    fgt::Extent e;
    e.d = static_cast<int>(d);
    e.n = n;
    e.m = m;
    e.lo.assign(d, inf);
    e.hi.assign(d, -inf);
    for (const Table<T> *t : {&sources, targets})
      if (t)
        for (std::int64_t i = 0; i < t->rows(); ++i)
          for (std::int64_t k = 0; k < d; ++k) {
            const double z = static_cast<double>((*t)(i, k)) * options.eps;
            e.lo[k] = std::min(e.lo[k], z);
            e.hi[k] = std::max(e.hi[k], z);
          }
    const Backend fgt_backend = options.backend == Backend::automatic
                                    ? (gpu_count() > 0 ? Backend::cuda : Backend::cpu)
                                    : options.backend;
    const bool on_gpu = fgt::runs_on_gpu(fgt_backend, static_cast<int>(d), 0);
    const double cost = fgt::choose_fgt_for(e, options.tolerance, 0, on_gpu).cost;
    // The Gauss transform's fixed model (the GPU 50 times the CPU) is not off by 20: where it
    // predicts the FGT 20 times slower than the direct sum, it is not timed.
    const double fixed_fgt = cost / (on_gpu ? 50.0 : 1.0);
    const double fixed_direct = fgt::direct_cost(e) / (backend == Backend::cuda ? 50.0 : 1.0);
    if (std::isfinite(cost) && fixed_fgt < 20 * fixed_direct) {
      try {
        c.seconds_per_fgt_unit = fgt_unit_seconds<T>(options, fgt_backend, on_gpu, e);
      } catch (const Error &) { // a plan the FGT refuses: not a candidate
        c.seconds_per_fgt_unit = inf;
      }
      if (std::isfinite(c.seconds_per_fgt_unit)) {
        c.seconds_per_direct_unit = c.direct_seconds / fgt::direct_cost(e);
        c.fgt_seconds = cost * c.seconds_per_fgt_unit;
      } else {
        c.seconds_per_fgt_unit = 0;
      }
    }
  }
  if (c.fmm_seconds < c.direct_seconds && c.fmm_seconds <= c.fgt_seconds)
    c.method = Method::fmm;
  else if (c.fgt_seconds < c.direct_seconds)
    c.method = Method::fgt;
  return c;
}

template AutoChoice choose_method<float>(const DirectOptions &, Backend, const Table<float> &,
                                         const Table<float> *);
template AutoChoice choose_method<double>(const DirectOptions &, Backend, const Table<double> &,
                                          const Table<double> *);

} // namespace ksum::detail
