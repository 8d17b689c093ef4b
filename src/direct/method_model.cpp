// Method::automatic's calibrated cost model (method_model.hpp).
#include "direct/method_model.hpp"
#include "fgt/fgt_gpu.hpp"
#include "fmm/fmm3d/bbfmm.hpp"
#include "runtime/json_cache.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>
#include <ksum/fgt.hpp>
#include <ksum/kernels.hpp>
#include <ksum/tasksize.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <omp.h>
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
// execute takes 20 ms (a shorter one measures its fixed costs: threads, launches, transfers), then
// the best of three at that size.
template <class T> double direct_rate(const DirectOptions &o, Backend backend, std::int64_t d) {
  const bool gpu = backend == Backend::cuda;
  const std::int64_t ns = gpu ? 16384 : 4096, nt_max = gpu ? std::int64_t(1) << 22 : 1 << 18;
  const auto s = unit_cube(ns, d, 11).cast<T>();
  const Table<T> w(ns, 1, T(1));
  // Method direct: never back into Method::automatic.
  DirectSum<T> plan({.kernel = o.kernel,
                     .eps = o.eps,
                     .backend = backend,
                     .threads = o.threads,
                     .devices = o.devices,
                     .method = Method::direct});
  for (std::int64_t nt = gpu ? 16384 : 256;; nt *= 4) {
    plan.set_points(s, unit_cube(nt, d, 12).cast<T>());
    if (nt == (gpu ? 16384 : 256))
      plan.execute(w); // warm-up: the threads or the GPU's kernels and buffers
    const auto time_one = [&] {
      const auto t0 = std::chrono::steady_clock::now();
      plan.execute(w);
      return std::max(seconds_since(t0), 1e-9);
    };
    double t = time_one();
    if (t >= 0.02 || nt >= nt_max) { // the best of three: the rate is kept in the cache file
      t = std::min({t, time_one(), time_one()});
      return static_cast<double>(ns) * static_cast<double>(nt) / t;
    }
  }
}

// The points of the FMM timed for the method model.
std::int64_t fmm_timed_points(Backend backend) {
  return backend == Backend::cuda ? 200000 : 30000;
}

// Seconds per point (set-up and one apply, N = M) of the 3D FMM.
double fmm_cost(const DirectOptions &o, Backend backend, bool single) {
  const std::int64_t n = fmm_timed_points(backend);
  const auto p = unit_cube(n, 3, 13);
  std::vector<double> w(static_cast<std::size_t>(n), 1.0), out(static_cast<std::size_t>(n));
  const auto t0 = std::chrono::steady_clock::now();
  fmm::BbFmm f({.kernel = o.kernel,
                .eps = o.eps,
                .tolerance = o.tolerance,
                .threads = o.threads,
                .compress_m2l = o.fmm_lowrank,
                .mixed_precision = o.fmm_mixed_precision,
                .compress_m2l_gpu = o.fmm_lowrank_gpu && n >= o.fmm_lowrank_gpu_from,
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

// The FGT's calibration problem: n_c points uniform over the problem's bounding box shrunk (on its
// non-flat axes) to the same density. `real` is the problem's extent in scaled coordinates
// (z = x / h).
fgt::Extent calibration_box(const fgt::Extent &real, bool on_gpu) {
  const int d = real.d;
  const std::int64_t n_c = std::min<std::int64_t>(real.n, on_gpu ? 200000 : 20000);
  int flat = 0;
  for (int k = 0; k < d; ++k)
    flat += real.hi[k] > real.lo[k] ? 0 : 1;
  const double shrink = flat == d ? 1.0
                                  : std::pow(static_cast<double>(n_c) / static_cast<double>(real.n),
                                             1.0 / (d - flat));
  fgt::Extent cal = real;
  cal.n = cal.m = n_c;
  for (int k = 0; k < d; ++k)
    cal.hi[k] = cal.lo[k] + (real.hi[k] - real.lo[k]) * shrink;
  return cal;
}

// Seconds per unit of the FGT's cost model: a timed set-up and execute of the calibration problem.
template <class T>
double fgt_unit_seconds(const DirectOptions &o, Backend backend, bool on_gpu,
                        const fgt::Extent &cal) {
  const int d = cal.d;
  const std::int64_t n_c = cal.n;
  std::vector<double> lo(d), side(d);
  for (int k = 0; k < d; ++k) { // back to the user's coordinates: x = z · h
    lo[k] = cal.lo[k] / o.eps;
    side[k] = (cal.hi[k] - cal.lo[k]) / o.eps;
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

// The rates' cache file beside the task-size cache (tasksize::default_cache_path); none with
// KSUM_METHOD_CACHE=off or where there is no cache folder.
std::filesystem::path rates_file() {
  if (const char *v = std::getenv("KSUM_METHOD_CACHE"); v && std::string_view(v) == "off")
    return {};
  const auto p = tasksize::default_cache_path();
  return p.has_parent_path() ? p.parent_path() / "methods.json" : std::filesystem::path();
}

// An entry of another version (or build kind, or ksum version) is timed again. 2: the CPU FMM's
// M2L in low rank (1.5–2.9× faster than the rates of version 1); 3: the CPU FMM's mixed
// precision from 1e-4 on (1.7–1.9× faster there); 4: the GPU FMM's float near field from 1e-4
// on and its leaves of up to 512 points for p ≤ 8; 5: the CPU FMM's wider root where leaves
// would be small (1.5× faster at 2·10⁶ uniform points); 6: the GPU FMM's wider root (1.35×
// faster at 4·10⁶ uniform points, 1e-6).
constexpr int kRatesVersion = 6;
#ifdef NDEBUG
constexpr const char *kBuildKind = "release";
#else
constexpr const char *kBuildKind = "debug"; // sanitizer and debug builds: rates of their own
#endif

// The cached rate of an entry of methods.json: its value (-1: no such method) where the entry is
// well formed and of this version and build kind, else NaN (then timed again).
double cached_value(const nlohmann::json &entry) {
  try {
    if (!entry.is_object() || entry.value("version", -1) != kRatesVersion ||
        entry.value("build", std::string()) != kBuildKind ||
        entry.value("ksum", std::string()) != version() || !entry.contains("value") ||
        !entry["value"].is_number())
      return std::nan("");
    const double v = entry["value"].get<double>();
    return v == -1 ? inf : (std::isfinite(v) && v > 1e-300 && v < 1e300) ? v : std::nan("");
  } catch (const nlohmann::json::exception &) { // a field of another type
    return std::nan("");
  }
}

// The rate under `key`: from this process's memo, else the cache file, else `measure` (then kept
// in both; a cache that cannot be written is left alone). `measure` returns infinity where the
// method cannot serve the case (kept, as -1) and NaN where it failed for now (e.g. out of GPU
// memory: not a candidate in this process, timed again in the next).
double remembered(const std::string &key, const std::function<double()> &measure, bool *from_file) {
  static std::mutex mutex;
  static std::map<std::string, double> memo;
  static bool loaded = false;
  static nlohmann::json disk;
  static std::filesystem::path file;
  std::lock_guard lock(mutex);
  if (auto it = memo.find(key); it != memo.end())
    return it->second;
  if (!loaded) {
    loaded = true;
    file = rates_file();
    if (file.empty() || !read_json_object(file, disk, nullptr))
      disk = nlohmann::json::object();
  }
  if (const auto it = disk.find(key); it != disk.end()) {
    if (const double v = cached_value(*it); !std::isnan(v)) {
      if (from_file)
        *from_file = true;
      return memo[key] = v;
    }
  }
  const double v = measure();
  if (std::isnan(v))
    return memo[key] = inf;
  memo[key] = v;
  if (!file.empty() && (std::isfinite(v) ? v > 0 : v == inf)) {
    try {
      write_json_key(file, key,
                     {{"value", std::isfinite(v) ? v : -1.0},
                      {"version", kRatesVersion},
                      {"build", kBuildKind},
                      {"ksum", version()}},
                     "method-rate cache");
    } catch (const Error &) { // a read-only home: timed again next time
    }
  }
  return v;
}

// A measurement's failure: infinity (kept) where the method refuses the case, NaN (not kept)
// where it may be passing (out of memory, a busy device).
double failed(const Error &e) {
  return e.code() == ErrorCode::unsupported || e.code() == ErrorCode::invalid_argument
             ? inf
             : std::nan("");
}

// The device a method runs on: the CPU (model, threads), and the GPU(s) where it uses them (the
// plans' set-ups run on the CPU's threads there too).
std::string device_key(const DirectOptions &o, Backend backend, bool all_gpus) {
  std::string key = fmt::format("cpu {} | threads {}", tasksize::machine_description(),
                                o.threads > 0 ? o.threads : omp_get_max_threads());
  if (backend == Backend::cuda) {
    const int first = o.devices.empty() ? 0 : o.devices.front();
    const auto count = all_gpus ? (o.devices.empty() ? gpu_count() : int(o.devices.size())) : 1;
    key += fmt::format(" | gpu {} (#{}) x{}", gpu_name(first), first, count);
  }
  return key;
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
  const std::string kernel(kernel_info(options.kernel).name), precision = single ? "f32" : "f64";
  bool file = false; // some rate came from the cache file
  const double rate = remembered(
      fmt::format("direct | {} | {} eps {} | {} | d {}", device_key(options, backend, true), kernel,
                  options.eps, precision, d),
      [&] {
        return single ? direct_rate<float>(options, backend, d)
                      : direct_rate<double>(options, backend, d);
      },
      &file);
  c.direct_seconds = static_cast<double>(n) * static_cast<double>(m) / rate;
  c.fmm_seconds = c.fgt_seconds = inf;
  // Timing a small FMM or FGT costs ~0.05–0.3 s: not worth it where the direct sum is that short.
  if (c.direct_seconds < kTimeFastMethodsAbove)
    return c;
  if (fmm_ok) {
    const double per_point = remembered(
        fmt::format("fmm | {} | {} eps {} | tol {} | {}{}", device_key(options, backend, false),
                    kernel, options.eps, options.tolerance, precision,
                    (backend == Backend::cuda
                         ? options.fmm_lowrank_gpu &&
                               fmm_timed_points(backend) >= options.fmm_lowrank_gpu_from
                         : options.fmm_lowrank)
                        ? ""
                        : " | full m2l") +
            (!options.fmm_mixed_precision && !(backend == Backend::cuda && single) ? " | double"
                                                                                   : ""),
        [&] {
          try {
            return fmm_cost(options, backend, single);
          } catch (const Error &e) { // e.g. the tolerance is beyond the FMM's reach
            return failed(e);
          }
        },
        &file);
    c.fmm_seconds = per_point * 0.5 * static_cast<double>(n + m);
  }
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
    const double fixed_fgt = cost / (on_gpu ? fgt::kGpuSpeedup : 1.0);
    const double fixed_direct =
        fgt::direct_cost(e) / (backend == Backend::cuda ? fgt::kGpuSpeedup : 1.0);
    if (std::isfinite(cost) && fixed_fgt < 20 * fixed_direct) {
      const auto cal = calibration_box(e, on_gpu);
      std::string sides;
      for (int k = 0; k < cal.d; ++k)
        sides += fmt::format("{}{:.2g}", k ? " x " : "", cal.hi[k] - cal.lo[k]);
      c.seconds_per_fgt_unit = remembered(
          fmt::format("fgt | {} | tol {} | {} | {} points in {} h",
                      device_key(options, on_gpu ? Backend::cuda : Backend::cpu, false),
                      options.tolerance, precision, cal.n, sides),
          [&] {
            try {
              return fgt_unit_seconds<T>(options, fgt_backend, on_gpu, cal);
            } catch (const Error &e) { // e.g. a plan the FGT refuses: not a candidate
              return failed(e);
            }
          },
          &file);
      if (std::isfinite(c.seconds_per_fgt_unit)) {
        c.seconds_per_direct_unit = c.direct_seconds / fgt::direct_cost(e);
        c.fgt_seconds = cost * c.seconds_per_fgt_unit;
      } else {
        c.seconds_per_fgt_unit = 0;
      }
    }
  }
  c.cached = file;
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
