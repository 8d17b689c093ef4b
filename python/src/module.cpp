// ksum._ksum: the compiled half of the Python package. Thin bindings over the C++ plans; the
// Python-facing API (argument names, shapes, SciPy/fmm3dpy compatibility) lives in ksum/*.py.
#include "bindings.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>
#include <ksum/kernels.hpp>

#include "kernels/kernel_defs.hpp"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <exception>
#include <new>

namespace nb = nanobind;

namespace {

// The Python class (ksum/_errors.py) for each ksum::ErrorCode.
const char *error_class(ksum::ErrorCode code) {
  using ksum::ErrorCode;
  switch (code) {
  case ErrorCode::invalid_argument:
  case ErrorCode::non_finite:
  case ErrorCode::empty_input:
  case ErrorCode::shape_mismatch:
    return "InputError";
  case ErrorCode::parse:
    return "ParseError";
  case ErrorCode::io:
    return "FileError";
  case ErrorCode::unsupported:
    return "UnsupportedError";
  case ErrorCode::device:
    return "DeviceError";
  case ErrorCode::not_converged:
    return "NotConvergedError";
  case ErrorCode::internal:
    return "InternalError";
  }
  return "Error";
}

// The enumerator's name, as docs/python.md lists them ("shape_mismatch", "non_finite", ...).
const char *code_name(ksum::ErrorCode code) {
  using ksum::ErrorCode;
  switch (code) {
  case ErrorCode::invalid_argument:
    return "invalid_argument";
  case ErrorCode::io:
    return "io";
  case ErrorCode::parse:
    return "parse";
  case ErrorCode::non_finite:
    return "non_finite";
  case ErrorCode::empty_input:
    return "empty_input";
  case ErrorCode::shape_mismatch:
    return "shape_mismatch";
  case ErrorCode::unsupported:
    return "unsupported";
  case ErrorCode::device:
    return "device";
  case ErrorCode::internal:
    return "internal";
  case ErrorCode::not_converged:
    return "not_converged";
  }
  return "internal";
}

void translate(const std::exception_ptr &p, void *) {
  try {
    std::rethrow_exception(p);
  } catch (const ksum::Error &e) {
    nb::object cls = nb::module_::import_("ksum._errors").attr(error_class(e.code()));
    nb::object err = cls(nb::str(e.what()), nb::str(code_name(e.code())));
    PyErr_SetObject(cls.ptr(), err.ptr());
  }
}

nb::dict info() {
  nb::dict d;
  d["version"] = ksum::version();
  d["cuda_built"] = ksum::cuda_enabled();
  d["cuda_runtime"] = ksum::cuda_runtime_version();
  d["threads"] = ksum::max_threads();
  nb::list gl;
  for (const auto &g : ksum::gpus()) {
    nb::dict gd;
    gd["id"] = g.id;
    gd["name"] = g.name;
    gd["memory_bytes"] = g.total_memory;
    gd["free_bytes"] = g.free_memory;
    gd["compute_capability"] = nb::make_tuple(g.compute_major, g.compute_minor);
    gd["multiprocessors"] = g.multiprocessors;
    gl.append(gd);
  }
  d["gpus"] = gl;
  nb::list kl;
  for (const auto &k : ksum::all_kernels()) {
    nb::dict kd;
    kd["name"] = std::string(k.name);
    kd["formula"] = std::string(k.formula);
    kd["min_degree"] = k.min_degree;
    kd["compact"] = k.support == ksum::Support::compact;
    kd["singular"] = k.singular;
    kl.append(kd);
  }
  d["kernels"] = kl;
  return d;
}

} // namespace

NB_MODULE(_ksum, m) {
  m.doc() = "ksum's compiled core (use the package ksum, not this module)";
  nb::register_exception_translator(translate);
  m.def("info", &info, "Build options, threads, GPUs and the kernel catalogue as a dict.");
  m.def(
      "kernel_value",
      [](const std::string &kernel, double eps, double r) {
        return ksum::kernel_value(ksum::parse_kernel(kernel), eps, r);
      },
      nb::arg("kernel"), nb::arg("eps"), nb::arg("r"),
      "phi(eps r) in double precision by the reference formula.");
  m.def(
      "coord_scale",
      [](const std::string &kernel, double eps) {
        return ksum::kdef::coord_scale(ksum::parse_kernel(kernel), eps);
      },
      nb::arg("kernel"), nb::arg("eps"));
  ksum::py::bind_direct(m);
  ksum::py::bind_fmm2d(m);
  ksum::py::bind_fgt(m);
  ksum::py::bind_rbf(m);
  ksum::py::bind_apps(m);
  ksum::py::bind_tdbem(m);
  ksum::py::bind_mc(m);
  ksum::py::bind_bsm(m);
  ksum::py::bind_tasksize(m);
  ksum::py::bind_distributed(m);
}
