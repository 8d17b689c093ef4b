// The task-size model of seed 004 Paper II (include/ksum/tasksize.hpp): its prediction R(S) for a
// program described per size, the chunk and subtree-level choices ksum's methods make, the
// calibration on this machine and the cached one. The Python layer (ksum/tasksize.py) describes
// the program with a callable and picks the best size.
#include "bindings.hpp"

#include <ksum/error.hpp>
#include <ksum/tasksize.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <omp.h>

#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace ksum::py {
namespace {

namespace ts = ksum::tasksize;
using Points = std::vector<std::pair<double, double>>;
using Kinds = std::vector<std::tuple<double, double, double>>; // count, work, concurrency

ts::WorkCost work_cost(const Points &points, const char *what) {
  ts::WorkCost w;
  for (const auto &[x, y] : points)
    w.add(x, y); // Error invalid_argument names a bad point
  if (w.empty() && what)
    throw Error(ErrorCode::invalid_argument, std::string(what) + ": no point given");
  return w;
}

std::vector<double> predict(double overhead, int threads, const Points &cost,
                            const std::vector<Kinds> &programs, const std::vector<double> &sizes,
                            const std::string &parallelism, double tail,
                            const Points &overhead_by_work) {
  if (programs.size() != sizes.size())
    throw Error(ErrorCode::shape_mismatch, "one program per size is needed");
  if (parallelism != "basic" && parallelism != "by_kind")
    throw Error(ErrorCode::invalid_argument,
                "parallelism '" + parallelism + "': valid are 'basic' and 'by_kind'");
  if (!(tail >= 0))
    throw Error(ErrorCode::invalid_argument, "tail must be ≥ 0");
  ts::Model m;
  m.overhead = overhead;
  m.threads = threads;
  m.cost = work_cost(cost, "the work unit cost C(S)");
  m.parallelism =
      parallelism == "basic" ? ts::ParallelismModel::basic : ts::ParallelismModel::by_kind;
  m.tail = tail;
  m.overhead_by_work = work_cost(overhead_by_work, nullptr);
  std::vector<double> r;
  r.reserve(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    ts::Program p;
    for (const auto &[count, work, concurrency] : programs[i])
      p.kinds.push_back(ts::TaskKind{count, work, concurrency});
    r.push_back(ts::predict_runtime(m, p, sizes[i]));
  }
  return r;
}

nb::dict calibration_dict(const ts::Calibration &c) {
  nb::dict d;
  d["machine"] = c.machine;
  d["threads"] = c.threads;
  d["overhead"] = c.overhead;
  d["loop_overhead"] = c.loop_overhead;
  d["overhead_by_work"] = c.overhead_by_work.points();
  nb::dict costs;
  for (const auto &[name, w] : c.costs)
    costs[nb::str(name.c_str())] = w.points();
  d["costs"] = costs;
  d["fallback"] = c.fallback;
  return d;
}

nb::dict measure(int threads) {
  const int T = threads > 0 ? threads : omp_get_max_threads();
  ts::Calibration c;
  c.machine = ts::machine_description();
  c.threads = T;
  std::string why;
  c.overhead = ts::measure_task_overhead(T, 4000, 7, &why);
  if (!why.empty())
    c.fallback.push_back(why);
  c.overhead_by_work = ts::measure_task_overhead_curve(T, 5, &c.fallback);
  why.clear();
  c.loop_overhead = ts::measure_loop_overhead(T, 20000, 7, &why);
  if (!why.empty())
    c.fallback.push_back(why);
  return calibration_dict(c);
}

std::optional<nb::dict> cached(int threads) {
  const int T = threads > 0 ? threads : omp_get_max_threads();
  ts::Calibration c;
  if (!ts::load_calibration(ts::default_cache_path(), ts::machine_description(), T, c))
    return std::nullopt;
  return calibration_dict(c);
}

} // namespace

void bind_tasksize(nb::module_ &m) {
  m.def("tasksize_predict", &predict, nb::arg("overhead"), nb::arg("threads"), nb::arg("cost"),
        nb::arg("programs"), nb::arg("sizes"), nb::arg("parallelism"), nb::arg("tail"),
        nb::arg("overhead_by_work"));
  m.def(
      "tasksize_dynamic_chunk",
      [](std::int64_t items, double seconds_per_item, int threads, double loop_overhead) {
        if (items < 0 || threads < 1 || !(seconds_per_item > 0) || !(loop_overhead > 0))
          throw Error(ErrorCode::invalid_argument,
                      "dynamic_chunk: need items ≥ 0, threads ≥ 1 and positive costs");
        return ts::dynamic_chunk_with_overhead(items, seconds_per_item, threads, loop_overhead);
      },
      nb::arg("items"), nb::arg("seconds_per_item"), nb::arg("threads"), nb::arg("loop_overhead"));
  m.def(
      "tasksize_subtree_level",
      [](int levels, int branching, double seconds_per_box, int threads, double loop_overhead) {
        if (threads < 1 || !(seconds_per_box > 0) || !(loop_overhead > 0))
          throw Error(ErrorCode::invalid_argument,
                      "subtree_level: need threads ≥ 1 and positive costs");
        return ts::subtree_task_level_with_overhead(levels, branching, seconds_per_box, threads,
                                                    loop_overhead);
      },
      nb::arg("levels"), nb::arg("branching"), nb::arg("seconds_per_box"), nb::arg("threads"),
      nb::arg("loop_overhead"));
  m.def("tasksize_measure", &measure, nb::arg("threads"));
  m.def("tasksize_cached", &cached, nb::arg("threads"));
  m.def("tasksize_cache_path", [] { return ts::default_cache_path().string(); });
}

} // namespace ksum::py
