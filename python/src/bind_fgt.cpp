// GaussTransform<T> and the kernel density estimate.
#include "bindings.hpp"

#include <ksum/fgt.hpp>
#include <ksum/kde.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <vector>

namespace ksum::py {
namespace {

nb::dict gauss_stats(const GaussStats &s) {
  nb::dict d;
  d["method"] = std::string(to_string(s.method));
  d["backend"] = std::string(to_string(s.backend));
  d["order"] = s.order;
  d["terms"] = s.terms;
  d["error_bound"] = s.error_bound;
  d["boxes"] = s.boxes;
  d["seconds_setup"] = s.seconds_setup;
  d["seconds_execute"] = s.seconds_execute;
  return d;
}

template <class T> void bind_plan(nb::module_ &m, const char *name) {
  using Plan = GaussTransform<T>;
  nb::class_<Plan> c(m, name);
  def_set_points<HostMatrix<T>>(c);
  def_execute<HostMatrix<T>>(c);
  c.def(
       "__init__",
       [](Plan *self, double bandwidth, double tolerance, const std::string &method,
          const std::string &backend, int threads, int device, int order) {
         GaussOptions o;
         o.bandwidth = bandwidth;
         o.tolerance = tolerance;
         o.method = parse_gauss_method(method);
         o.backend = parse_backend(backend);
         o.threads = threads;
         o.device = device;
         o.order = order;
         new (self) Plan(o);
       },
       nb::arg("bandwidth"), nb::arg("tolerance"), nb::arg("method"), nb::arg("backend"),
       nb::arg("threads"), nb::arg("device"), nb::arg("order"))
      .def_prop_ro("stats", [](const Plan &p) { return gauss_stats(p.stats()); });
}

Bandwidth make_bandwidth(const std::string &rule, double sigma) {
  Bandwidth b;
  if (rule == "fixed") {
    b.rule = BandwidthRule::fixed;
    b.sigma = sigma;
  } else {
    b = parse_bandwidth(rule);
  }
  return b;
}

template <class T>
nb::tuple kde(HostMatrix<T> data, std::optional<HostMatrix<T>> weights, HostMatrix<T> eval,
              const std::string &rule, double sigma, double tolerance, const std::string &method,
              const std::string &backend, int threads) {
  KdeOptions o;
  o.bandwidth = make_bandwidth(rule, sigma);
  o.tolerance = tolerance;
  o.method = parse_gauss_method(method);
  o.backend = parse_backend(backend);
  o.threads = threads;
  const Table<T> x = view(data), y = view(eval);
  KdeInfo info;
  Table<T> out;
  {
    nb::gil_scoped_release release;
    out = weights ? kernel_density(x, view(*weights), y, o, &info) : kernel_density(x, y, o, &info);
  }
  nb::dict d;
  d["sigma"] = info.sigma;
  d["effective_n"] = info.effective_n;
  d["peak"] = info.peak;
  d["error_bound"] = info.error_bound;
  d["seconds"] = info.seconds;
  d["gauss"] = gauss_stats(info.stats);
  return nb::make_tuple(to_numpy(std::move(out)), d);
}

} // namespace

void bind_fgt(nb::module_ &m) {
  bind_plan<float>(m, "GaussTransformF32");
  bind_plan<double>(m, "GaussTransformF64");
  const auto args = [] {
    return std::make_tuple(nb::arg("data").noconvert(), nb::arg("weights").noconvert().none(),
                           nb::arg("eval").noconvert(), nb::arg("rule"), nb::arg("sigma"),
                           nb::arg("tolerance"), nb::arg("method"), nb::arg("backend"),
                           nb::arg("threads"));
  };
  std::apply([&](auto... a) { m.def("kde_f32", &kde<float>, a...); }, args());
  std::apply([&](auto... a) { m.def("kde_f64", &kde<double>, a...); }, args());
}

} // namespace ksum::py
