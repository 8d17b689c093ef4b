// The time-domain BEM solver (seed 003): surfaces (arrays, .msh, the icosphere), options, and
// TdbemSolver<float|double> with its incident field given either as the C++ plane-wave pulse or as
// a Python callable.
#include "bindings.hpp"

#include <ksum/error.hpp>
#include <ksum/mesh.hpp>
#include <ksum/tdbem.hpp>

#include <nanobind/stl/array.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ksum::py {
namespace {

// Triangles as the (m, 3) C-ordered int64 array whose memory is TriangleSurface::triangles' layout.
using TriangleArray = nb::ndarray<const std::int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

TimeBasis parse_time_basis(const std::string &name) {
  if (name == "constant")
    return TimeBasis::constant;
  if (name == "linear")
    return TimeBasis::linear;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("time_basis '{}': expected constant or linear", name));
}

// Array rows name the elements and nodes in messages (0-based, as Python indexes them).
TriangleSurface surface_from_arrays(HostMatrix<double> nodes, TriangleArray triangles) {
  if (nodes.shape(1) != 3)
    throw Error(ErrorCode::shape_mismatch, fmt::format("nodes: expected shape (n, 3), got ({}, {})",
                                                       nodes.shape(0), nodes.shape(1)));
  if (triangles.shape(1) != 3)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("triangles: expected shape (m, 3), got ({}, {})", triangles.shape(0),
                            triangles.shape(1)));
  TriangleSurface s;
  s.nodes = Table<double>(view(nodes)); // an owning copy
  const auto m = static_cast<std::int64_t>(triangles.shape(0));
  s.triangles.assign(triangles.data(), triangles.data() + 3 * m);
  s.tags.resize(static_cast<std::size_t>(m));
  for (std::int64_t e = 0; e < m; ++e)
    s.tags[static_cast<std::size_t>(e)] = e;
  s.node_tags.resize(static_cast<std::size_t>(s.nodes.rows()));
  for (std::int64_t r = 0; r < s.nodes.rows(); ++r)
    s.node_tags[static_cast<std::size_t>(r)] = r;
  return s;
}

TriangleSurface surface_from_file(const std::string &path) {
  if (!io::have_gmsh())
    throw Error(ErrorCode::unsupported,
                fmt::format("{}: this build of ksum reads no .msh files (built without the Gmsh "
                            "SDK); pass nodes and triangles arrays instead",
                            path));
  return surface_from_mesh(io::read_mesh(path, true));
}

nb::tuple surface_arrays(const TriangleSurface &s) {
  std::vector<std::int64_t> t = s.triangles;
  auto tri = to_numpy(std::move(t)); // (3m,): the Python layer reshapes it to (m, 3)
  return nb::make_tuple(to_numpy(Table<double>(s.nodes)), tri);
}

// The exact bits of a centroid: the solver evaluates the field at the very doubles centroids()
// holds (both are computed by one formula per element), so they index the per-step values.
struct Bits {
  std::uint64_t x, y, z;
  bool operator==(const Bits &) const = default;
};
struct BitsHash {
  std::size_t operator()(const Bits &b) const noexcept {
    std::uint64_t h = b.x * 0x9e3779b97f4a7c15ULL;
    h ^= b.y + 0x7f4a7c159e3779b9ULL + (h << 6) + (h >> 2);
    h ^= b.z + 0x94d049bb133111ebULL + (h << 6) + (h >> 2);
    return static_cast<std::size_t>(h);
  }
};
Bits bits(double x, double y, double z) {
  return {std::bit_cast<std::uint64_t>(x), std::bit_cast<std::uint64_t>(y),
          std::bit_cast<std::uint64_t>(z)};
}

// A Python incident field. The solver asks for u_inc(x_i, t) one centroid at a time (in its
// unknowns' order), all centroids of a step at one t: the first request at a new t calls the
// Python function once, values(t) -> (m,) float64 in surface order, with the GIL held, and the
// step's other requests are answered from that array. One Python call per time step.
struct PythonField {
  nb::object values;
  std::unordered_map<Bits, std::int64_t, BitsHash> index;
  std::vector<double> cache;
  double t = std::numeric_limits<double>::quiet_NaN();
  bool valid = false;

  PythonField(nb::object fn, const Table<double> &centroids) : values(std::move(fn)) {
    index.reserve(static_cast<std::size_t>(centroids.rows()));
    for (std::int64_t e = 0; e < centroids.rows(); ++e)
      index.emplace(bits(centroids(e, 0), centroids(e, 1), centroids(e, 2)), e);
    cache.resize(static_cast<std::size_t>(centroids.rows()));
  }
  PythonField(const PythonField &) = delete;
  PythonField &operator=(const PythonField &) = delete;
  // The last reference may go while the GIL is released (set_incident waiting for a run()).
  ~PythonField() {
    if (!Py_IsInitialized()) {
      values.release(); // the interpreter is gone: nothing left to decrement
      return;
    }
    nb::gil_scoped_acquire gil;
    values.reset();
  }

  double operator()(const std::array<double, 3> &x, double time) {
    if (!valid || time != t) {
      nb::gil_scoped_acquire gil;
      valid = false;
      if (!values.is_valid())
        throw Error(ErrorCode::internal, "the incident field was cleared by the garbage collector");
      nb::object r = values(time);
      auto a = nb::cast<HostVector<double>>(r, false);
      if (a.shape(0) != cache.size())
        throw Error(ErrorCode::shape_mismatch,
                    fmt::format("incident field: {} values at t = {}, expected one per element "
                                "({})",
                                a.shape(0), time, cache.size()));
      std::copy(a.data(), a.data() + cache.size(), cache.begin());
      t = time;
      valid = true;
    }
    const auto it = index.find(bits(x[0], x[1], x[2]));
    if (it == index.end())
      throw Error(ErrorCode::internal,
                  fmt::format("incident field asked at ({}, {}, {}), which is no centroid", x[0],
                              x[1], x[2]));
    return cache[static_cast<std::size_t>(it->second)];
  }
};

nb::dict stats_dict(const TdbemStats &s) {
  nb::dict d;
  d["unknowns"] = s.unknowns;
  d["kmax"] = s.kmax;
  d["dmax"] = s.dmax;
  d["dav"] = s.dav;
  d["nnz"] = s.nnz;
  d["nnz_m0"] = s.nnz_m0;
  d["blocks"] = s.blocks;
  d["fill"] = s.fill;
  d["block_rows"] = s.block_rows;
  d["block_cols"] = s.block_cols;
  d["ng"] = s.ng;
  d["ordering_quality"] = s.ordering_quality;
  d["assembly_seconds"] = s.assembly_seconds;
  d["factor_seconds"] = s.factor_seconds;
  d["blocking_seconds"] = s.blocking_seconds;
  d["summation_seconds"] = s.summation_seconds;
  d["solve_seconds"] = s.solve_seconds;
  d["exchange_seconds"] = s.exchange_seconds;
  d["steps"] = s.steps;
  d["ranks"] = s.ranks;
  d["rank"] = s.rank;
  d["slice_begin"] = s.slice_begin;
  d["slice_end"] = s.slice_end;
  nb::list workers;
  for (const auto &w : s.workers) {
    nb::dict wd;
    wd["name"] = w.name;
    wd["slices"] = w.slices;
    wd["seconds"] = w.seconds;
    wd["gflops"] = w.gflops;
    workers.append(wd);
  }
  d["workers"] = workers;
  d["balance_percent"] = s.balance_percent; // lists of lists: the Python layer makes arrays
  d["balance_slices"] = s.balance_slices;
  return d;
}

// The solver and the Python incident field it calls. The field is also kept here, where the
// garbage collector sees it (tp_traverse): a field whose closure reaches the solver's Python
// object (a global, a bound method) makes a cycle the collector can then break (tp_clear).
template <class T> struct SolverHandle {
  TdbemSolver<T> solver;
  std::shared_ptr<PythonField> field;
};

template <class T> int handle_traverse(PyObject *self, visitproc visit, void *arg) {
  if (nb::inst_ready(self)) {
    const auto *h = nb::inst_ptr<SolverHandle<T>>(self);
    if (h->field && h->field->values.is_valid())
      Py_VISIT(h->field->values.ptr());
  }
  Py_VISIT(Py_TYPE(self));
  return 0;
}

template <class T> int handle_clear(PyObject *self) {
  if (nb::inst_ready(self)) {
    auto *h = nb::inst_ptr<SolverHandle<T>>(self);
    if (h->field)
      h->field->values.reset();
  }
  return 0;
}

template <class T>
PyType_Slot handle_slots[] = {{Py_tp_traverse, reinterpret_cast<void *>(handle_traverse<T>)},
                              {Py_tp_clear, reinterpret_cast<void *>(handle_clear<T>)},
                              {0, nullptr}};

template <class T> void bind_solver(nb::module_ &m, const char *name) {
  using Handle = SolverHandle<T>;
  nb::class_<Handle>(m, name, nb::type_slots(handle_slots<T>), nb::is_weak_referenceable())
      .def(
          "__init__",
          [](Handle *self, const TriangleSurface &surface, const TdbemOptions &options) {
            nb::gil_scoped_release release; // assembly, factorisation, blocking
            new (self) Handle{TdbemSolver<T>(surface, options), nullptr};
          },
          nb::arg("surface"), nb::arg("options"))
      .def(
          "set_plane_wave",
          [](Handle &h, std::array<double, 3> direction, double c, double t0, double width,
             double amplitude) {
            IncidentField f = plane_wave_pulse(direction, c, t0, width, amplitude);
            {
              nb::gil_scoped_release release; // waits for a run() in flight on another thread
              h.solver.set_incident(std::move(f));
            }
            h.field.reset();
          },
          nb::arg("direction"), nb::arg("c"), nb::arg("t0"), nb::arg("width"), nb::arg("amplitude"))
      .def(
          "set_incident_values",
          [](Handle &h, nb::callable values) {
            auto field = std::make_shared<PythonField>(std::move(values), h.solver.centroids());
            IncidentField f = [field](const std::array<double, 3> &x, double t) {
              return (*field)(x, t);
            };
            {
              nb::gil_scoped_release release; // waits for a run() in flight on another thread
              h.solver.set_incident(std::move(f));
            }
            h.field = std::move(field);
          },
          nb::arg("values"),
          "values(t) -> (m,) float64 array: u_inc at every centroid (surface order).")
      .def(
          "set_probes",
          [](Handle &h, HostMatrix<double> points) {
            const Table<double> p = view(points);
            nb::gil_scoped_release release;
            h.solver.set_probes(p);
          },
          nb::arg("points").noconvert())
      .def(
          "run",
          [](Handle &h, std::int64_t steps, nb::object progress) {
            // Between steps: Ctrl-C (the pending signal raises) and the caller's progress.
            const std::function<void(std::int64_t, std::int64_t)> each =
                [&progress](std::int64_t done, std::int64_t total) {
                  nb::gil_scoped_acquire gil;
                  if (PyErr_CheckSignals() != 0)
                    throw nb::python_error();
                  if (!progress.is_none())
                    progress(done, total);
                };
            nb::gil_scoped_release release;
            h.solver.run(steps, each);
          },
          nb::arg("steps"), nb::arg("progress").none())
      .def("density", [](const Handle &h) { return to_numpy(h.solver.density()); })
      .def("probe_history",
           [](const Handle &h) {
             const auto &hist = h.solver.probe_history();
             const auto rows = static_cast<std::int64_t>(hist.size());
             const auto cols = rows > 0 ? static_cast<std::int64_t>(hist.front().size()) : 0;
             Table<double> out(rows, cols);
             for (std::int64_t i = 0; i < rows; ++i)
               for (std::int64_t p = 0; p < cols; ++p)
                 out(i, p) = hist[static_cast<std::size_t>(i)][static_cast<std::size_t>(p)];
             return to_numpy(std::move(out));
           })
      .def("centroids",
           [](const Handle &h) { return to_numpy(Table<double>(h.solver.centroids())); })
      .def("stats", [](const Handle &h) { return stats_dict(h.solver.stats()); })
      .def_prop_ro("dt", [](const Handle &h) { return h.solver.dt(); })
      .def_prop_ro("step", [](const Handle &h) { return h.solver.step(); })
      .def_prop_ro("unknowns", [](const Handle &h) { return h.solver.unknowns(); });
}

} // namespace

void bind_tdbem(nb::module_ &m) {
  nb::class_<TriangleSurface>(m, "TdbemSurface")
      .def_prop_ro("elements", &TriangleSurface::elements)
      .def("arrays", &surface_arrays, "(nodes (n, 3) float64, triangles (3 m,) int64)");
  m.def("tdbem_surface", &surface_from_arrays, nb::arg("nodes").noconvert(),
        nb::arg("triangles").noconvert());
  m.def("tdbem_read_surface", &surface_from_file, nb::arg("path"));
  m.def("tdbem_sphere", &sphere_surface, nb::arg("radius"), nb::arg("refinements"));

  nb::class_<TdbemOptions>(m, "TdbemOptions")
      .def(
          "__init__",
          [](TdbemOptions *self, double c, double dt, const std::string &time_basis,
             const std::string &kernel, const std::string &ordering, int block_rows, int block_cols,
             int ng, const std::string &backend, std::vector<int> devices, int threads,
             bool balance, int balance_iterations, bool mpi) {
            TdbemOptions o;
            o.c = c;
            o.dt = dt;
            o.time_basis = parse_time_basis(time_basis);
            o.kernel = parse_tdbem_kernel(kernel);
            o.ordering = parse_tdbem_ordering(ordering);
            o.block_rows = block_rows;
            o.block_cols = block_cols;
            o.ng = ng;
            o.backend = parse_backend(backend);
            o.devices = std::move(devices);
            o.threads = threads;
            o.balance = balance;
            o.balance_iterations = balance_iterations;
            o.mpi = mpi;
            new (self) TdbemOptions(std::move(o));
          },
          nb::arg("c"), nb::arg("dt"), nb::arg("time_basis"), nb::arg("kernel"),
          nb::arg("ordering"), nb::arg("block_rows"), nb::arg("block_cols"), nb::arg("ng"),
          nb::arg("backend"), nb::arg("devices"), nb::arg("threads"), nb::arg("balance"),
          nb::arg("balance_iterations"), nb::arg("mpi"))
      .def_ro("c", &TdbemOptions::c);

  bind_solver<float>(m, "TdbemSolverF32");
  bind_solver<double>(m, "TdbemSolverF64");
}

} // namespace ksum::py
