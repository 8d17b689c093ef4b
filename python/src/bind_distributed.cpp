// DistributedSum<T> over a Communicator (include/ksum/distributed.hpp): MPI_COMM_WORLD, this
// process alone, or a caller's communicator by its Fortran handle (mpi4py: comm.py2f()).
#include "bindings.hpp"

#include <ksum/distributed.hpp>
#include <ksum/error.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <vector>

namespace ksum::py {

// "world", "self", or "handle" with a Fortran handle (ksum/distributed.py's _comm_args).
Communicator make_comm(const std::string &which, int handle) {
  if (which == "world")
    return Communicator::world();
  if (which == "self")
    return Communicator::self();
  if (which == "handle")
    return Communicator::from_fortran_handle(handle);
  throw Error(ErrorCode::invalid_argument, "comm: 'world', 'self' or an mpi4py communicator");
}

namespace {

nb::dict stats_dict(const DistributedStats &s) {
  nb::dict d;
  d["ranks"] = s.ranks;
  d["rank"] = s.rank;
  d["local_sources"] = s.local_sources;
  d["local_targets"] = s.local_targets;
  d["total_sources"] = s.total_sources;
  d["total_targets"] = s.total_targets;
  d["seconds_compute"] = s.seconds_compute;
  d["seconds_wait"] = s.seconds_wait;
  d["seconds_execute"] = s.seconds_execute;
  d["bytes_sent"] = s.bytes_sent;
  d["fmm_owned"] = s.fmm_owned;
  d["fmm_received"] = s.fmm_received;
  d["fmm_pseudo_cells_sent"] = s.fmm_pseudo_cells_sent;
  d["fmm_imbalance"] = s.fmm_imbalance;
  d["fmm_seconds_multipoles"] = s.fmm_seconds_multipoles;
  d["fmm_seconds_local"] = s.fmm_seconds_local;
  return d;
}

template <class T> void bind_plan(nb::module_ &m, const char *name) {
  using Plan = DistributedSum<T>;
  nb::class_<Plan> c(m, name);
  c.def(
       "__init__",
       [](Plan *self, const std::string &which, int handle, const std::string &kernel, double eps,
          bool gradient, const std::string &backend, int threads, std::vector<int> devices,
          const std::string &method, double tolerance) {
         DirectOptions o;
         o.method = parse_method(method);
         o.tolerance = tolerance;
         o.kernel = parse_kernel(kernel);
         o.eps = eps;
         o.gradient = gradient;
         o.backend = parse_backend(backend);
         o.threads = threads;
         o.devices = std::move(devices);
         new (self) Plan(make_comm(which, handle), std::move(o));
       },
       nb::arg("comm"), nb::arg("handle"), nb::arg("kernel"), nb::arg("eps"), nb::arg("gradient"),
       nb::arg("backend"), nb::arg("threads"), nb::arg("devices"), nb::arg("method") = "direct",
       nb::arg("tolerance") = 1e-6)
      .def(
          "set_points",
          [](Plan &p, HostMatrix<T> sources, std::optional<HostMatrix<T>> targets) {
            const Table<T> s = view(sources);
            const Table<T> t = targets ? view(*targets) : Table<T>();
            nb::gil_scoped_release release; // collective: other ranks may be waiting
            if (targets)
              p.set_points(s, t);
            else
              p.set_points(s);
          },
          nb::arg("sources").noconvert(), nb::arg("targets").noconvert().none())
      .def(
          "execute",
          [](Plan &p, HostMatrix<T> weights) {
            const Table<T> w = view(weights);
            Table<T> out;
            {
              nb::gil_scoped_release release;
              out = p.execute(w);
            }
            return to_numpy(std::move(out));
          },
          nb::arg("weights").noconvert())
      .def(
          "rebalance",
          [](Plan &p, double threshold) {
            nb::gil_scoped_release release; // collective
            return p.rebalance(threshold);
          },
          nb::arg("threshold") = 1.1)
      .def(
          "fail",
          [](const Plan &p, const std::string &message) {
            // This rank's argument error, agreed with the other ranks' next collective call.
            p.communicator().agree(true, static_cast<int>(ErrorCode::invalid_argument), message);
          },
          nb::arg("message"))
      .def_prop_ro("rank", [](const Plan &p) { return p.communicator().rank(); })
      .def_prop_ro("size", [](const Plan &p) { return p.communicator().size(); })
      .def_prop_ro("stats", [](const Plan &p) { return stats_dict(p.stats()); });
}

} // namespace

void bind_distributed(nb::module_ &m) {
  bind_plan<float>(m, "DistributedSumF32");
  bind_plan<double>(m, "DistributedSumF64");
  m.def("mpi_built", &mpi_enabled, "Whether this build runs over MPI ranks.");
  m.def(
      "mpi_abort", [](int code) { Communicator::abort_all(code); }, nb::arg("code"),
      "Ends every process of the launch (MPI_Abort).");
  m.def(
      "mpi_fail",
      [](const std::string &which, int handle, const std::string &message) {
        // This rank's argument error, agreed with the other ranks' collective call (which makes
        // its communicator, then agrees first).
        make_comm(which, handle)
            .agree(true, static_cast<int>(ErrorCode::invalid_argument), message);
      },
      nb::arg("comm"), nb::arg("handle"), nb::arg("message"));
}

} // namespace ksum::py
