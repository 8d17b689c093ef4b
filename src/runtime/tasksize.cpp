// The task-size model of seed 004 Paper II (include/ksum/tasksize.hpp): the model's equations,
// the calibration of O and C(S) on the running machine with OpenMP tasks, and the cache file.
#include "runtime/json_cache.hpp"

#include <ksum/direct.hpp>
#include <ksum/error.hpp>
#include <ksum/tasksize.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <omp.h>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace ksum::tasksize {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

bool positive_finite(double v) {
  return std::isfinite(v) && v > 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

} // namespace

// --- the model ---------------------------------------------------------------------------------

WorkCost::WorkCost(double constant) {
  add(1.0, constant);
}

void WorkCost::add(double size, double seconds_per_unit) {
  if (!positive_finite(size) || !positive_finite(seconds_per_unit))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("work unit cost C({}) = {}: the size and the cost must be positive "
                            "and finite",
                            size, seconds_per_unit));
  const auto it = std::lower_bound(points_.begin(), points_.end(), size,
                                   [](const auto &p, double s) { return p.first < s; });
  if (it != points_.end() && it->first == size)
    it->second = seconds_per_unit;
  else
    points_.insert(it, {size, seconds_per_unit});
}

double WorkCost::operator()(double size) const {
  if (points_.empty())
    throw Error(ErrorCode::invalid_argument, "work unit cost C(S): no point measured or given");
  if (size <= points_.front().first)
    return points_.front().second;
  if (size >= points_.back().first)
    return points_.back().second;
  const auto hi = std::lower_bound(points_.begin(), points_.end(), size,
                                   [](const auto &p, double s) { return p.first < s; });
  const auto lo = hi - 1;
  const double t =
      (std::log(size) - std::log(lo->first)) / (std::log(hi->first) - std::log(lo->first));
  return std::exp(std::log(lo->second) + t * (std::log(hi->second) - std::log(lo->second)));
}

double effective_parallelism(const Program &p, int threads, ParallelismModel model) {
  if (threads < 1)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("threads = {}: the model needs T ≥ 1", threads));
  const double T = threads;
  double tasks = 0, concurrency = 0;
  for (const TaskKind &k : p.kinds) {
    if (!(k.count >= 0) || !(k.work >= 0) || !(k.concurrency >= 0))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("a task kind with count {}, work {}, concurrency {}: each must be "
                              "≥ 0",
                              k.count, k.work, k.concurrency));
    tasks += k.count;
    concurrency += k.concurrency;
  }
  if (tasks <= 0)
    return 1;
  if (model == ParallelismModel::basic) {
    const double P = p.parallelism > 0 ? p.parallelism : concurrency;
    return std::max(1.0, std::min(T, P));
  }
  // §4.3: per kind P_k = min(T, concurrency_k) and Ns_k = ⌈M_k / P_k⌉ serial steps; the kinds
  // run one after the other, so P = Σ_k (Ns_k / Ns) P_k.
  double ns = 0, weighted = 0;
  for (const TaskKind &k : p.kinds) {
    if (k.count <= 0)
      continue;
    const double pk = std::max(1.0, std::min(T, k.concurrency));
    const double nsk = std::ceil(k.count / pk);
    ns += nsk;
    weighted += nsk * pk;
  }
  return ns > 0 ? weighted / ns : 1.0;
}

double predict_runtime(const Model &m, const Program &p, double size) {
  if (!positive_finite(m.overhead))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("task overhead O = {}: must be positive and finite", m.overhead));
  const double P = effective_parallelism(p, m.threads, m.parallelism);
  double tasks = 0, work = 0;
  for (const TaskKind &k : p.kinds) {
    tasks += k.count;
    work += k.count * k.work;
  }
  const double c = work > 0 ? m.cost(size) : 0.0;
  double paid = m.overhead * tasks;
  if (!m.overhead_by_work.empty()) {
    paid = 0;
    for (const TaskKind &k : p.kinds)
      if (k.count > 0)
        paid += k.count * m.overhead_by_work(std::max(c * k.work, 1e-12));
  }
  double r = (paid + c * work) / P;
  if (m.tail > 0 && m.threads > 1) {
    double largest = 0;
    for (const TaskKind &k : p.kinds)
      if (k.count > 0)
        largest = std::max(largest, k.work);
    r += m.tail * c * largest;
  }
  if (!std::isfinite(r))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("the predicted runtime at size {} is not finite ({} tasks, {} work "
                            "units, parallelism {})",
                            size, tasks, work, P));
  return r;
}

Curve predict(const Model &m, const Describe &describe, const std::vector<double> &sizes) {
  if (sizes.empty())
    throw Error(ErrorCode::empty_input, "no candidate task sizes");
  Curve c;
  for (double s : sizes) {
    if (!positive_finite(s))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("candidate task size {}: must be positive and finite", s));
    const double r = predict_runtime(m, describe(s), s);
    c.sizes.push_back(s);
    c.runtime.push_back(r);
    if (c.sizes.size() == 1 || r < c.best_runtime) {
      c.best_runtime = r;
      c.best_size = s;
    }
  }
  return c;
}

std::vector<double> powers_of_two(double lo, double hi) {
  if (!positive_finite(lo) || !positive_finite(hi) || lo > hi)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("powers of two from {} to {}: need 0 < lo ≤ hi", lo, hi));
  std::vector<double> out;
  for (double s = std::exp2(std::ceil(std::log2(lo))); s <= hi * (1 + 1e-12); s *= 2)
    out.push_back(s);
  return out;
}

// --- calibration -------------------------------------------------------------------------------

namespace {

volatile std::int64_t g_sink = 0; // the stores that keep the measured regions from being elided
std::atomic<double> g_busy{0};    // every thread stores its busy() result (relaxed)

// The overhead per item of `region(T, items)` (a parallel region running `items` empty items) on
// T threads: (fastest region − fastest empty region) · min(T, items) / items over `repeats` runs
// after a warm-up (interference from other processes only adds time, to either run), or the
// default with *why set when that is not positive.
template <class Region>
double per_item_overhead(int threads, std::int64_t items, int repeats, const char *what,
                         Region region, std::string *why) {
  const int T = threads > 0 ? threads : omp_get_max_threads();
  items = std::max<std::int64_t>(items, 100);
  repeats = std::max(repeats, 3);
  double with = INFINITY, without = INFINITY;
  for (int r = 0; r <= repeats; ++r) {
    auto t0 = Clock::now();
    region(T, items);
    const double t_items = seconds_since(t0);
    t0 = Clock::now();
#pragma omp parallel num_threads(T)
    {
#pragma omp single
      g_sink = g_sink + 1;
    }
    const double t_region = seconds_since(t0);
    if (r > 0) {
      with = std::min(with, t_items);
      without = std::min(without, t_region);
    }
  }
  const double o = (with - without) * std::min<double>(T, static_cast<double>(items)) /
                   static_cast<double>(items);
  if (!positive_finite(o)) {
    if (why)
      *why = fmt::format("{}: measured {:.3g} s each (fastest runs {:.3g} s with them, {:.3g} s "
                         "without: a busy machine?); using the default {} s",
                         what, o, with, without, kDefaultOverhead);
    return kDefaultOverhead;
  }
  return o;
}

} // namespace

// About `units` steps of dependent floating-point arithmetic (a task's stand-in work).
static void busy(std::int64_t units) {
  double x = 1.0 + 1e-9 * static_cast<double>(g_sink & 1);
  for (std::int64_t i = 0; i < units; ++i)
    x = x * 0.9999999 + 1e-7;
  g_busy.store(x, std::memory_order_relaxed);
}

// Seconds per unit of busy() on this core (the fastest of 5 probes).
static double busy_seconds_per_unit() {
  const std::int64_t probe = 1 << 16;
  double fastest = INFINITY;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = Clock::now();
    busy(probe);
    fastest = std::min(fastest, seconds_since(t0));
  }
  const double per_unit = fastest / static_cast<double>(probe);
  return positive_finite(per_unit) ? per_unit : 1e-9;
}

// The overhead per task of K tasks of `units` of busy() each on T threads: one thread creates
// them, each with an `inout` dependence as the task-parallel programs' tasks have (the N-body and
// Cholesky blocks; task k follows task k − 4T, 4T chains, so every thread has work), against the
// same work as a dynamic loop of 8 chunks per thread (a static split would wait for the slowest
// thread, which the tasks do not: on a shared host that made t_loop > t_tasks). (t_tasks − t_loop)
// · T / K from the fastest of `repeats` runs after a warm-up; *with and *without get those runs.
static double overhead_with_work(int T, std::int64_t K, std::int64_t units, int repeats,
                                 double *with_out, double *without_out) {
  const std::int64_t chains = 4 * static_cast<std::int64_t>(T);
  std::vector<char> chain_storage(static_cast<std::size_t>(chains));
  char *chain = chain_storage.data();
  (void)chain; // (used in the depend clause only, which GCC's unused check does not see)
  const std::int64_t loop_chunk = std::max<std::int64_t>(1, K / (8 * static_cast<std::int64_t>(T)));
  double with = INFINITY, without = INFINITY;
  for (int r = 0; r <= repeats; ++r) {
    auto t0 = Clock::now();
#pragma omp parallel num_threads(T)
    {
#pragma omp single
      {
        for (std::int64_t k = 0; k < K; ++k) {
#pragma omp task depend(inout : chain[k % chains])
          busy(units);
        }
#pragma omp taskwait
      }
    }
    const double t_tasks = seconds_since(t0);
    t0 = Clock::now();
#pragma omp parallel for num_threads(T) schedule(dynamic, loop_chunk)
    for (std::int64_t k = 0; k < K; ++k)
      busy(units);
    const double t_loop = seconds_since(t0);
    if (r > 0) {
      with = std::min(with, t_tasks);
      without = std::min(without, t_loop);
    }
  }
  *with_out = with;
  *without_out = without;
  return (with - without) * static_cast<double>(T) / static_cast<double>(K);
}

double measure_task_overhead(int threads, std::int64_t tasks, int repeats, std::string *why) {
  const int T = threads > 0 ? threads : omp_get_max_threads();
  const std::int64_t K = std::max<std::int64_t>(tasks, 8 * static_cast<std::int64_t>(T));
  repeats = std::max(repeats, 3);
  // The work of one task: max(10 µs, 2 µs · T) on this core, so that the creating thread stays
  // ahead of the T − 1 that run them (empty tasks measure the team's contention for the queue:
  // 73 µs per task on 16 threads of a Xeon host against 0.3 µs on 2).
  const double work = std::max(10e-6, 2e-6 * T);
  const auto units =
      static_cast<std::int64_t>(std::clamp(work / busy_seconds_per_unit(), 1e3, 1e8));
  double with = 0, without = 0;
  const double o = overhead_with_work(T, K, units, repeats, &with, &without);
  if (positive_finite(o))
    return o;
  // Where the tasks' overhead is below the noise of the runs with work (one thread: tens of ns),
  // empty tasks measure it on a small team (exact there, no contention); on more threads they
  // would measure the team's contention for the queue (73 µs on 16), so the default is used.
  std::string why_empty = "empty tasks are not measured on more than 2 threads";
  double o_empty = 0;
  if (T <= 2) {
    why_empty.clear();
    o_empty = per_item_overhead(
        T, K, repeats, "empty-task overhead",
        [](int team, std::int64_t n) {
#pragma omp parallel num_threads(team)
          {
#pragma omp single
            {
              for (std::int64_t k = 0; k < n; ++k) {
#pragma omp task firstprivate(k)
                g_sink = k; // a volatile store: a task with an empty body may be elided
              }
#pragma omp taskwait
            }
          }
        },
        &why_empty);
  }
  if (why_empty.empty())
    return o_empty;
  if (why)
    *why =
        fmt::format("task overhead: measured {:.3g} s each (fastest runs {:.3g} s as tasks, "
                    "{:.3g} s as a dynamic loop: a busy machine?), and {}; using the default {} s",
                    o, with, without, why_empty, kDefaultOverhead);
  return kDefaultOverhead;
}

WorkCost measure_task_overhead_curve(int threads, int repeats, std::vector<std::string> *fallback) {
  const int T = threads > 0 ? threads : omp_get_max_threads();
  repeats = std::max(repeats, 3);
  const double per_unit = busy_seconds_per_unit();
  WorkCost curve;
  for (const double w : {1e-6, 4e-6, 16e-6, 64e-6, 256e-6}) {
    const auto units = static_cast<std::int64_t>(std::clamp(w / per_unit, 10.0, 1e9));
    const std::int64_t K = std::max<std::int64_t>(
        8 * static_cast<std::int64_t>(T),
        std::min<std::int64_t>(static_cast<std::int64_t>(0.02 * T / w), 20000));
    double with = 0, without = 0;
    const double o = overhead_with_work(T, K, units, repeats, &with, &without);
    if (positive_finite(o))
      curve.add(w, o);
    else if (fallback)
      fallback->push_back(fmt::format("O(w) at w = {:.3g} µs of work per task: measured {:.3g} s "
                                      "(below the noise); the point is left out",
                                      w * 1e6, o));
  }
  return curve;
}

double measure_loop_overhead(int threads, std::int64_t chunks, int repeats, std::string *why) {
  return per_item_overhead(
      threads, chunks, repeats, "loop chunk overhead",
      [](int T, std::int64_t n) {
#pragma omp parallel num_threads(T)
        {
#pragma omp for schedule(dynamic, 1)
          for (std::int64_t k = 0; k < n; ++k)
            g_sink = k; // a volatile store, so that the loop is not elided
        }
      },
      why);
}

WorkCost measure_work_cost(const std::function<void(double)> &kernel,
                           const std::function<double(double)> &work,
                           const std::vector<double> &sizes, int repeats, double min_seconds,
                           std::vector<std::string> *fallback, const std::string &name) {
  WorkCost cost;
  std::vector<double> failed, good;
  for (double s : sizes) {
    const double units = work(s);
    if (!positive_finite(units) || !positive_finite(s)) {
      failed.push_back(s);
      continue;
    }
    kernel(s); // warm the caches and the code
    std::vector<double> per_unit;
    for (int r = 0; r < std::max(repeats, 1); ++r) {
      std::int64_t calls = 0;
      const auto t0 = Clock::now();
      double t = 0;
      do {
        kernel(s);
        ++calls;
        t = seconds_since(t0);
      } while (t < min_seconds);
      per_unit.push_back(t / (static_cast<double>(calls) * units));
    }
    const double c = median(per_unit);
    if (positive_finite(c)) {
      cost.add(s, c);
      good.push_back(c);
    } else {
      failed.push_back(s);
    }
  }
  if (!failed.empty()) {
    const double c = good.empty() ? kDefaultWorkCost : median(good);
    for (double s : failed)
      if (positive_finite(s))
        cost.add(s, c);
    if (fallback)
      fallback->push_back(fmt::format("{}: C(S) not measurable at {} size(s) (first {}); used {} "
                                      "s per unit there",
                                      name, failed.size(), failed.front(), c));
  }
  if (cost.empty()) {
    cost.add(1.0, kDefaultWorkCost);
    if (fallback)
      fallback->push_back(
          fmt::format("{}: no size given; C = {} s per unit", name, kDefaultWorkCost));
  }
  return cost;
}

std::string machine_description() {
  std::string model;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        model = line.substr(colon + 1);
        model.erase(0, model.find_first_not_of(" \t"));
      }
      break;
    }
  if (model.empty())
    model = "unknown CPU";
  return fmt::format("{} ({} hardware threads)", model, std::thread::hardware_concurrency());
}

std::filesystem::path default_cache_path() {
  namespace fs = std::filesystem;
  if (const char *d = std::getenv("KSUM_CACHE_DIR"); d && *d)
    return fs::path(d) / "tasksize.json";
  if (const char *d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return fs::path(d) / "ksum" / "tasksize.json";
  if (const char *h = std::getenv("HOME"); h && *h)
    return fs::path(h) / ".cache" / "ksum" / "tasksize.json";
  return fs::path("tasksize.json");
}

namespace {

// The cache entries' format; an entry of another version is rebuilt.
// 2: O measured with work (session 32; 1 measured empty tasks), O(w) added.
constexpr std::int64_t kCacheVersion = 2;

std::string cache_key(const std::string &machine, int threads) {
  return fmt::format("{} | threads {}", machine, threads);
}

nlohmann::json to_json(const Calibration &c) {
  nlohmann::json costs = nlohmann::json::object();
  for (const auto &[name, w] : c.costs) {
    nlohmann::json pts = nlohmann::json::array();
    for (const auto &[s, v] : w.points())
      pts.push_back({s, v});
    costs[name] = pts;
  }
  nlohmann::json by_work = nlohmann::json::array();
  for (const auto &[w, o] : c.overhead_by_work.points())
    by_work.push_back({w, o});
  return {{"version", kCacheVersion},
          {"machine", c.machine},
          {"threads", c.threads},
          {"overhead", c.overhead},
          {"loop_overhead", c.loop_overhead},
          {"overhead_by_work", by_work},
          {"costs", costs},
          {"fallback", c.fallback},
          {"seconds", c.seconds}};
}

// The calibration in j, or false with *why: every field checked (a hand-edited or truncated file
// must not reach the model).
bool from_json_checked(const nlohmann::json &j, Calibration &c, std::string *why);

// Any JSON exception a malformed entry raises is a corrupt entry, never an error of the caller.
bool from_json(const nlohmann::json &j, Calibration &c, std::string *why) {
  try {
    return from_json_checked(j, c, why);
  } catch (const nlohmann::json::exception &e) {
    if (why)
      *why = fmt::format("a malformed field ({})", e.what());
    return false;
  }
}

bool from_json_checked(const nlohmann::json &j, Calibration &c, std::string *why) {
  auto fail = [&](const std::string &w) {
    if (why)
      *why = w;
    return false;
  };
  if (!j.is_object())
    return fail("the entry is not an object");
  if (!j.contains("version") || !j["version"].is_number_integer() ||
      j["version"].get<std::int64_t>() != kCacheVersion)
    return fail(fmt::format("it is not of this version's format ({})", kCacheVersion));
  if (!j.contains("overhead") || !j["overhead"].is_number() ||
      !positive_finite(j["overhead"].get<double>()))
    return fail("its task overhead is missing or not a positive number");
  if (!j.contains("threads") || !j["threads"].is_number_integer() ||
      j["threads"].get<std::int64_t>() < 1 || j["threads"].get<std::int64_t>() > 1 << 20)
    return fail("its thread count is missing or outside 1 … 2^20");
  if (!j.contains("costs") || !j["costs"].is_object())
    return fail("its work unit costs are missing");
  if (j.contains("machine") && !j["machine"].is_string())
    return fail("its machine is not a string");
  if (j.contains("seconds") && !j["seconds"].is_number())
    return fail("its calibration time is not a number");
  Calibration out;
  out.machine = j.contains("machine") ? j["machine"].get<std::string>() : std::string();
  out.threads = static_cast<int>(j["threads"].get<std::int64_t>());
  out.overhead = j["overhead"].get<double>();
  out.seconds = j.contains("seconds") ? j["seconds"].get<double>() : 0.0;
  if (j.contains("loop_overhead")) {
    if (!j["loop_overhead"].is_number() || !(j["loop_overhead"].get<double>() >= 0) ||
        !std::isfinite(j["loop_overhead"].get<double>()))
      return fail("its loop overhead is not a number ≥ 0");
    out.loop_overhead = j["loop_overhead"].get<double>();
  }
  if (j.contains("overhead_by_work")) {
    if (!j["overhead_by_work"].is_array())
      return fail("its overhead by work is not a list of points");
    for (const auto &p : j["overhead_by_work"]) {
      if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number() ||
          !positive_finite(p[0].get<double>()) || !positive_finite(p[1].get<double>()))
        return fail(fmt::format("its overhead by work has a bad point {}", p.dump()));
      out.overhead_by_work.add(p[0].get<double>(), p[1].get<double>());
    }
  }
  if (j.contains("fallback") && j["fallback"].is_array())
    for (const auto &f : j["fallback"])
      if (f.is_string())
        out.fallback.push_back(f.get<std::string>());
  for (const auto &[name, pts] : j["costs"].items()) {
    if (!pts.is_array() || pts.empty())
      return fail(fmt::format("the work unit cost of '{}' has no points", name));
    WorkCost w;
    for (const auto &p : pts) {
      if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number() ||
          !positive_finite(p[0].get<double>()) || !positive_finite(p[1].get<double>()))
        return fail(fmt::format("the work unit cost of '{}' has a bad point {}", name, p.dump()));
      w.add(p[0].get<double>(), p[1].get<double>());
    }
    out.costs[name] = std::move(w);
  }
  c = std::move(out);
  return true;
}


} // namespace

bool load_calibration(const std::filesystem::path &path, const std::string &machine, int threads,
                      Calibration &out, std::string *why) {
  nlohmann::json j;
  if (!detail::read_json_object(path, j, why))
    return false;
  const std::string key = cache_key(machine, threads);
  if (!j.contains(key)) {
    if (why)
      *why = fmt::format("{}: no calibration for '{}'", path.string(), key);
    return false;
  }
  std::string w;
  if (!from_json(j[key], out, &w)) {
    if (why)
      *why = fmt::format("{}: the calibration for '{}' is corrupt: {}", path.string(), key, w);
    return false;
  }
  return true;
}

void save_calibration(const std::filesystem::path &path, const Calibration &c) {
  detail::write_json_key(path, cache_key(c.machine, c.threads), to_json(c), "task-size cache");
}

bool overhead_fell_back(const Calibration &c) {
  for (const std::string &f : c.fallback)
    if (f.find("overhead") != std::string::npos)
      return true;
  return false;
}

Calibration load_or_calibrate(const std::filesystem::path &path, int threads,
                              const std::function<Calibration(int)> &calibrate, bool *rebuilt,
                              std::string *why) {
  const int T = threads > 0 ? threads : omp_get_max_threads();
  Calibration c;
  if (load_calibration(path, machine_description(), T, c, why)) {
    if (rebuilt)
      *rebuilt = false;
    return c;
  }
  c = calibrate(T);
  c.machine = machine_description();
  c.threads = T;
  if (overhead_fell_back(c)) { // a default is not a measurement: used now, not cached
    if (rebuilt)
      *rebuilt = true;
    return c;
  }
  c.threads = T;
  save_calibration(path, c);
  if (rebuilt)
    *rebuilt = true;
  return c;
}

WorkCost measure_direct_cpu_cost(std::vector<std::string> *fallback) {
  constexpr std::int64_t n = 2048;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  Table<double> src(n, 3), w(n, 1);
  for (std::int64_t k = 0; k < 3 * n; ++k)
    src.data()[k] = u(rng);
  for (std::int64_t k = 0; k < n; ++k)
    w.data()[k] = u(rng);
  std::map<std::int64_t, std::unique_ptr<DirectSum<double>>> plans;
  auto plan = [&](std::int64_t s) -> DirectSum<double> & {
    auto &p = plans[s];
    if (!p) {
      Table<double> tgt(s, 3);
      for (std::int64_t k = 0; k < 3 * s; ++k)
        tgt.data()[k] = u(rng);
      DirectOptions o;
      o.backend = Backend::cpu;
      o.threads = 1;
      o.cpu_block = s;
      p = std::make_unique<DirectSum<double>>(o);
      p->set_points(src, tgt);
    }
    return *p;
  };
  return measure_work_cost([&](double s) { (void)plan(static_cast<std::int64_t>(s)).execute(w); },
                           [&](double s) { return s * static_cast<double>(n); },
                           powers_of_two(8, 4096), 3, 2e-3, fallback, "direct_cpu");
}

std::int64_t direct_cpu_block(std::int64_t m, std::int64_t n, const Calibration &c) {
  const auto cost = c.costs.find("direct_cpu");
  if (m <= 0 || n <= 0 || cost == c.costs.end() || cost->second.empty() ||
      !positive_finite(c.loop_overhead))
    return kDirectCpuBlock;
  Model model;
  model.overhead = c.loop_overhead;
  model.threads = std::max(1, c.threads);
  model.cost = cost->second;
  model.parallelism = ParallelismModel::by_kind;
  model.tail = 0.5;
  // Up to the largest calibrated size: past it C(S) is only extrapolated (and a block of S targets
  // holds S result rows per thread).
  const auto &pts = cost->second.points();
  const double largest =
      std::min(static_cast<double>(m), pts.size() > 1 ? std::max(8.0, pts.back().first) : INFINITY);
  std::vector<double> sizes = powers_of_two(8, std::max(8.0, largest));
  for (std::int64_t k = 1; k <= 64; k *= 2)
    sizes.push_back(std::max<double>(
        1, std::ceil(static_cast<double>(m) / static_cast<double>(k * model.threads))));
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  sizes.erase(std::remove_if(sizes.begin(), sizes.end(), [&](double v) { return v > largest; }),
              sizes.end());
  if (sizes.empty())
    sizes.push_back(largest);
  const double nd = static_cast<double>(n), md = static_cast<double>(m);
  const Curve curve = predict(
      model,
      [&](double s) {
        const double blocks = std::ceil(md / s);
        return Program{{TaskKind{blocks, s * nd, blocks}}, blocks};
      },
      sizes);
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(curve.best_size));
}

namespace {

bool tasksize_off() {
  const char *off = std::getenv("KSUM_TASKSIZE");
  return off && std::string(off) == "off";
}

// The calibration cached for this machine and T threads, or null. A cache that was read is kept
// per (file, thread count) for the process (a sum must not pay a file read); a missing or unusable
// one is looked for again on the next call, so that a `ksum tune` run meanwhile takes effect.
std::shared_ptr<const Calibration> cached_calibration(int T) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, int>, std::shared_ptr<const Calibration>> memo;
  const std::filesystem::path path = default_cache_path();
  const auto key = std::make_pair(path.string(), T);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = memo.find(key); it != memo.end())
      return it->second;
  }
  Calibration loaded;
  if (!load_calibration(path, machine_description(), T, loaded))
    return nullptr;
  auto c = std::make_shared<const Calibration>(std::move(loaded));
  const std::lock_guard<std::mutex> lock(mutex);
  memo.emplace(key, c);
  return c;
}

} // namespace

std::int64_t direct_cpu_block(std::int64_t m, std::int64_t n, int threads) {
  if (tasksize_off())
    return kDirectCpuBlock;
  const auto c = cached_calibration(threads > 0 ? threads : omp_get_max_threads());
  return c ? direct_cpu_block(m, n, *c) : kDirectCpuBlock;
}

std::int64_t dynamic_chunk_with_cost(std::int64_t items, const WorkCost &cost, int threads,
                                     double loop_overhead) {
  if (items <= 1)
    return 1;
  Model model{loop_overhead, std::max(1, threads), cost};
  model.parallelism = ParallelismModel::by_kind;
  model.tail = 0.5;
  const double nd = static_cast<double>(items);
  std::vector<double> sizes = powers_of_two(1, nd);
  for (std::int64_t k = 1; k <= 64; k *= 2)
    sizes.push_back(std::max(1.0, std::ceil(nd / static_cast<double>(k * model.threads))));
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  const Curve curve = predict(
      model,
      [&](double s) {
        const double chunks = std::ceil(nd / s);
        return Program{{TaskKind{chunks, s, chunks}}, chunks};
      },
      sizes);
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(curve.best_size), 1, items);
}

std::int64_t dynamic_chunk_with_overhead(std::int64_t items, double seconds_per_item, int threads,
                                         double loop_overhead) {
  return dynamic_chunk_with_cost(items, WorkCost(seconds_per_item), threads, loop_overhead);
}

std::int64_t dynamic_chunk(std::int64_t items, double seconds_per_item, int threads,
                           std::int64_t fallback) {
  if (tasksize_off() || !positive_finite(seconds_per_item))
    return fallback;
  const int T = threads > 0 ? threads : omp_get_max_threads();
  const auto c = cached_calibration(T);
  const double o = c && positive_finite(c->loop_overhead) ? c->loop_overhead : kDefaultOverhead;
  return dynamic_chunk_with_overhead(items, seconds_per_item, T, o);
}

std::int64_t LearnedChunk::choose(int threads, std::int64_t forced) const {
  if (forced > 0)
    return forced;
  if (cost_.empty() || items_ <= 0 || threads <= 1 || tasksize_off())
    return fallback_;
  if (settled_ > 0 && settled_threads_ == threads)
    return settled_;
  return model_choice(threads);
}

std::int64_t LearnedChunk::model_choice(int threads) const {
  const auto c = cached_calibration(threads);
  const double o = c && positive_finite(c->loop_overhead) ? c->loop_overhead : kDefaultOverhead;
  if (cost_.size() == 1) {
    const auto [s0, c0] = *cost_.begin();
    const std::int64_t s = dynamic_chunk_with_overhead(items_, c0, threads, o);
    const std::int64_t probe = 4 * s0;
    if (s == s0 && probe * 2 * threads <= items_)
      return probe; // C(S) at a second size
    return s;
  }
  WorkCost w;
  for (const auto &[size, cost] : cost_)
    w.add(static_cast<double>(size), cost);
  return dynamic_chunk_with_cost(items_, w, threads, o);
}

void LearnedChunk::record(std::int64_t items, int threads, double seconds, std::int64_t chunk) {
  if (items <= 0 || chunk <= 0 || !positive_finite(seconds))
    return;
  if (items != items_) { // another loop: its costs start again
    cost_.clear();
    settled_ = 0;
  }
  items_ = items;
  const double c = seconds * std::max(1, threads) / static_cast<double>(items);
  const auto it = cost_.find(chunk);
  if (it == cost_.end() || c < it->second)
    cost_[chunk] = c;
  // Two sizes measured: the model's size from them is kept (a size that moved with every run's
  // noise would keep measuring new sizes, some of them poor).
  if (settled_ == 0 && cost_.size() >= 2 && threads > 1 && !tasksize_off()) {
    settled_ = model_choice(threads);
    settled_threads_ = threads;
  }
}

} // namespace ksum::tasksize

namespace ksum::tasksize {

namespace {

// Boxes of levels [from, to) of a complete tree of the given branching.
double boxes_between(int branching, int from, int to) {
  double total = 0, level = std::pow(static_cast<double>(branching), from);
  for (int l = from; l < to; ++l, level *= branching)
    total += level;
  return total;
}

void check_tree(int levels, int branching) {
  if (levels < 1 || levels > 30 || branching < 2 || branching > 64)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("a tree of {} levels and branching {}: need 1 ≤ levels ≤ 30 and "
                            "2 ≤ branching ≤ 64",
                            levels, branching));
}

} // namespace

double subtree_pass_runtime(int levels, int branching, int level, double seconds_per_box,
                            int threads, double loop_overhead) {
  check_tree(levels, branching);
  if (level < 0 || level >= levels)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("task level {} of a tree of {} levels", level, levels));
  Model model{loop_overhead, std::max(1, threads), WorkCost(seconds_per_box)};
  model.parallelism = ParallelismModel::by_kind;
  model.tail = 0.5;
  const double tasks = std::pow(static_cast<double>(branching), level);
  const double above = boxes_between(branching, 0, level);
  const double below = boxes_between(branching, level, levels);
  const Program parallel{{TaskKind{tasks, below / tasks, tasks}}, tasks};
  return seconds_per_box * above + predict_runtime(model, parallel, 1.0);
}

int subtree_task_level_with_overhead(int levels, int branching, double seconds_per_box, int threads,
                                     double loop_overhead) {
  check_tree(levels, branching);
  int best = 0;
  double best_r = INFINITY;
  for (int t = 0; t < levels; ++t) {
    const double r =
        subtree_pass_runtime(levels, branching, t, seconds_per_box, threads, loop_overhead);
    if (r < best_r) {
      best_r = r;
      best = t;
    }
  }
  return best;
}

int LearnedLevel::choose(int levels, int branching, int threads, int forced, int fallback) const {
  check_tree(levels, branching);
  if (forced >= 0)
    return std::min(forced, levels - 1);
  fallback = std::clamp(fallback, 0, levels - 1);
  const int T = threads > 0 ? threads : omp_get_max_threads();
  if (tasksize_off())
    return fallback;
  if (T <= 1)
    return 0; // one thread: one task, nothing to balance
  if (!positive_finite(cost_))
    return fallback;
  if (records_ >= 2 && settled_for_ == std::array<int, 3>{levels, branching, T})
    return settled_;
  const auto c = cached_calibration(T);
  const double o = c && positive_finite(c->loop_overhead) ? c->loop_overhead : kDefaultOverhead;
  return subtree_task_level_with_overhead(levels, branching, cost_, T, o);
}

void LearnedLevel::record(int levels, int branching, int level, int threads, double seconds) {
  check_tree(levels, branching);
  level = std::clamp(level, 0, levels - 1);
  // C from the span the run had (the boxes above, then those below on min(T, b^t) threads); the
  // model's task overhead and tail are left out of this inversion (they are small beside the
  // boxes at the levels the model picks), so C is slightly high.
  const double tasks = std::pow(static_cast<double>(branching), level);
  const double P = std::min(static_cast<double>(std::max(1, threads)), tasks);
  const double span =
      boxes_between(branching, 0, level) + boxes_between(branching, level, levels) / P;
  if (!positive_finite(seconds))
    return;
  const double c = seconds / span;
  cost_ = cost_ > 0 ? std::min(cost_, c) : c;
  // From the second run on the level is kept (a level that moved with each run's noise would
  // measure new, sometimes poor ones), for this tree and thread count.
  if (++records_ == 2) {
    settled_for_ = {};
    settled_ = choose(levels, branching, threads, -1, level);
    settled_for_ = {levels, branching, threads > 0 ? threads : omp_get_max_threads()};
  }
}

} // namespace ksum::tasksize
