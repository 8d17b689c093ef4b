// DirectSum<T> (direct sums, the 3D FMM, the FGT as a method) and the direct sum on GPU arrays.
#include "bindings.hpp"

#include <ksum/direct.hpp>
#include <ksum/error.hpp>

#include "direct/direct_problem.hpp"
#include "kernels/kernel_defs.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace ksum::py {
namespace {

nb::dict stats_dict(const SumStats &s) {
  nb::dict d;
  d["method"] = std::string(to_string(s.method));
  d["fmm_order"] = s.fmm_order;
  d["tree_depth"] = s.tree_depth;
  d["tree_boxes"] = s.tree_boxes;
  d["estimated_error"] = s.estimated_error;
  d["seconds_setup"] = s.seconds_setup;
  d["seconds_execute"] = s.seconds_execute;
  d["seconds_upward"] = s.seconds_upward;
  d["seconds_m2l"] = s.seconds_m2l;
  d["seconds_downward"] = s.seconds_downward;
  d["seconds_near"] = s.seconds_near;
  d["seconds_transfer"] = s.seconds_transfer;
  d["fmm_m2l_rank"] = s.fmm_m2l_rank;
  d["fmm_leaf_size"] = s.fmm_leaf_size;
  d["note"] = s.note;
  return d;
}

template <class T> void bind_plan(nb::module_ &m, const char *name) {
  using Plan = DirectSum<T>;
  nb::class_<Plan> c(m, name);
  def_set_points<HostMatrix<T>>(c);
  c.def(
       "__init__",
       [](Plan *self, const std::string &kernel, double eps, bool gradient,
          const std::string &backend, const std::string &method, double tolerance, int threads,
          std::vector<int> devices, int fmm_order, std::int64_t fmm_leaf_size,
          std::int64_t device_memory_limit, bool force_method) {
         DirectOptions o;
         o.kernel = parse_kernel(kernel);
         o.eps = eps;
         o.gradient = gradient;
         o.backend = parse_backend(backend);
         o.method = parse_method(method);
         o.tolerance = tolerance;
         o.threads = threads;
         o.devices = std::move(devices);
         o.fmm_order = fmm_order;
         o.fmm_leaf_size = fmm_leaf_size;
         o.device_memory_limit = device_memory_limit;
         o.force_method = force_method;
         new (self) Plan(std::move(o));
       },
       nb::arg("kernel"), nb::arg("eps"), nb::arg("gradient"), nb::arg("backend"),
       nb::arg("method"), nb::arg("tolerance"), nb::arg("threads"), nb::arg("devices"),
       nb::arg("fmm_order"), nb::arg("fmm_leaf_size"), nb::arg("device_memory_limit"),
       nb::arg("force_method") = false)
      .def(
          "execute",
          [](Plan &p, HostMatrix<T> weights, std::optional<bool> gradient) {
            const Table<T> w = view(weights);
            Table<T> out;
            {
              nb::gil_scoped_release release;
              out = gradient ? p.execute(w, *gradient) : p.execute(w);
            }
            return to_numpy(std::move(out));
          },
          nb::arg("weights").noconvert(), nb::arg("gradient").none() = nb::none())
      .def_prop_ro("backend", [](const Plan &p) { return std::string(to_string(p.backend())); })
      .def_prop_ro("dimension", &Plan::dimension)
      .def_prop_ro("num_sources", &Plan::num_sources)
      .def_prop_ro("num_targets", &Plan::num_targets)
      .def_prop_ro("stats", [](const Plan &p) { return stats_dict(p.stats()); });
}

// The direct sum on arrays in GPU memory, column-major (C-ordered transposes): sources (d, n),
// targets (d, m) or None, weights (r, n), out (r·(1+d·gradient), m), all on one GPU. Coordinates
// come already multiplied by coord_scale(kernel, eps) (the Python layer does that on the device,
// into its own arrays, so the user's are never written).
template <class T>
void device_sum(const std::string &kernel, double eps, bool gradient, DeviceMatrix<T> src,
                std::optional<DeviceMatrix<T>> tgt, DeviceMatrix<T> w, DeviceMatrix<T> out) {
  const Kernel k = parse_kernel(kernel);
  detail::DirectProblem<T> p;
  p.kernel = k;
  p.gradient = gradient;
  p.self = !tgt.has_value();
  p.grad_scale = static_cast<T>(2 * kdef::coord_scale(k, eps));
  p.d = static_cast<std::int64_t>(src.shape(0));
  p.n = static_cast<std::int64_t>(src.shape(1));
  p.m = tgt ? static_cast<std::int64_t>(tgt->shape(1)) : p.n;
  p.nrhs = static_cast<std::int64_t>(w.shape(0));
  p.src = src.data();
  p.tgt = tgt ? tgt->data() : src.data();
  p.w = w.data();
  if (!(eps > 0) || !std::isfinite(eps))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("eps = {}: the shape parameter must be positive and finite", eps));
  if (p.d < 1 || p.d > detail::gpu_max_dim)
    throw Error(ErrorCode::unsupported,
                fmt::format("GPU arrays of dimension {}: the GPU sums 1 … {} dimensions (pass "
                            "NumPy arrays for the CPU backend)",
                            p.d, detail::gpu_max_dim));
  if (k == Kernel::log && p.d != 2)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("the log kernel is the 2D one; these points have dimension {}", p.d));
  const int dev = src.device_id();
  const auto same_device = [&](int id, const char *what) {
    if (id != dev)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{} is on GPU {} but the sources are on GPU {}", what, id, dev));
  };
  if (tgt) {
    same_device(tgt->device_id(), "targets");
    if (static_cast<std::int64_t>(tgt->shape(0)) != p.d)
      throw Error(ErrorCode::shape_mismatch,
                  fmt::format("targets have {} coordinates, sources {}", tgt->shape(0), p.d));
  }
  same_device(w.device_id(), "weights");
  same_device(out.device_id(), "the output");
  if (static_cast<std::int64_t>(w.shape(1)) != p.n)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("weights have {} rows, sources {}", w.shape(1), p.n));
  if (static_cast<std::int64_t>(out.shape(0)) != p.out_cols() ||
      static_cast<std::int64_t>(out.shape(1)) != p.m)
    throw Error(ErrorCode::internal, "device_sum: output of the wrong shape");
  nb::gil_scoped_release release;
  detail::device_direct(p, out.data(), dev);
}

} // namespace

void bind_direct(nb::module_ &m) {
  bind_plan<float>(m, "DirectSumF32");
  bind_plan<double>(m, "DirectSumF64");
  m.def("device_sum_f32", &device_sum<float>, nb::arg("kernel"), nb::arg("eps"),
        nb::arg("gradient"), nb::arg("sources").noconvert(), nb::arg("targets").noconvert().none(),
        nb::arg("weights").noconvert(), nb::arg("out").noconvert());
  m.def("device_sum_f64", &device_sum<double>, nb::arg("kernel"), nb::arg("eps"),
        nb::arg("gradient"), nb::arg("sources").noconvert(), nb::arg("targets").noconvert().none(),
        nb::arg("weights").noconvert(), nb::arg("out").noconvert());
}

} // namespace ksum::py
