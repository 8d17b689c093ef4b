// Fmm2d<T>: the adaptive 2D FMM on complex points and strengths.
#include "bindings.hpp"

#include <ksum/fmm2d.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <complex>
#include <optional>
#include <string>
#include <vector>

namespace ksum::py {
namespace {

template <class T> void bind_plan(nb::module_ &m, const char *name) {
  using Plan = Fmm2d<T>;
  using C = std::complex<T>;
  nb::class_<Plan> c(m, name);
  def_set_points<HostVector<C>>(c);
  def_execute<HostVector<C>>(c);
  c.def(
       "__init__",
       [](Plan *self, const std::string &kernel, const std::string &method, double tolerance,
          double theta, int levels, int order, const std::string &backend, bool gpu_m2l,
          int threads, const std::string &smoothing, double core_radius) {
         Fmm2dOptions o;
         o.kernel = parse_fmm2d_kernel(kernel);
         o.method = parse_method(method);
         o.tolerance = tolerance;
         o.theta = theta;
         o.levels = levels;
         o.order = order;
         o.backend = parse_backend(backend);
         o.gpu_m2l = gpu_m2l;
         o.threads = threads;
         o.smoothing = parse_fmm2d_smoothing(smoothing);
         o.core_radius = core_radius;
         new (self) Plan(o);
       },
       nb::arg("kernel"), nb::arg("method"), nb::arg("tolerance"), nb::arg("theta"),
       nb::arg("levels"), nb::arg("order"), nb::arg("backend"), nb::arg("gpu_m2l"),
       nb::arg("threads"), nb::arg("smoothing"), nb::arg("core_radius"))
      .def_prop_ro("order", &Plan::order)
      .def_prop_ro("levels", &Plan::levels)
      .def_prop_ro("theta", &Plan::theta)
      .def_prop_ro("backend", [](const Plan &p) { return std::string(to_string(p.backend())); })
      .def_prop_ro("stats", [](const Plan &p) {
        const Fmm2dStats &s = p.stats();
        nb::dict d;
        d["levels"] = s.levels;
        d["order"] = s.order;
        d["theta"] = s.theta;
        d["m2l_translations"] = s.m2l_translations;
        d["p2p_pairs"] = s.p2p_pairs;
        d["seconds_partition"] = s.seconds_partition;
        d["seconds_upward"] = s.seconds_upward;
        d["seconds_downward"] = s.seconds_downward;
        d["seconds_near"] = s.seconds_near;
        d["seconds_gpu_near"] = s.seconds_gpu_near;
        d["seconds_execute"] = s.seconds_execute;
        return d;
      });
}

} // namespace

void bind_fmm2d(nb::module_ &m) {
  bind_plan<float>(m, "Fmm2dF32");
  bind_plan<double>(m, "Fmm2dF64");
}

} // namespace ksum::py
