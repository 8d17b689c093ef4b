// The applications: RBF mesh deformation of node arrays, and the particle simulations on the 2D
// FMM.
#include "bindings.hpp"

#include <ksum/deform.hpp>
#include <ksum/error.hpp>
#include <ksum/simulate.hpp>

#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include <array>
#include <memory>
#include <optional>
#include <string>

namespace ksum::py {
namespace {

Motion::Kind parse_motion(const std::string &kind) {
  if (kind == "displacement")
    return Motion::Kind::displacement;
  if (kind == "translate")
    return Motion::Kind::translate;
  if (kind == "rotate")
    return Motion::Kind::rotate;
  if (kind == "scale")
    return Motion::Kind::scale;
  throw Error(ErrorCode::invalid_argument,
              "motion '" + kind + "': expected displacement, translate, rotate or scale");
}

nb::tuple deform(HostMatrix<double> nodes, int dim, HostVector<std::int64_t> moving,
                 HostVector<std::int64_t> fixed, const std::string &motion,
                 std::optional<HostMatrix<double>> displacement, std::array<double, 3> vector,
                 double angle, std::array<double, 3> axis, std::array<double, 3> about,
                 double factor, const std::string &method, const std::string &kernel, double eps,
                 std::optional<int> degree, const std::string &solver, double tolerance, int steps,
                 const std::string &backend, int threads) {
  Motion mo;
  mo.kind = parse_motion(motion);
  if (displacement)
    mo.displacement = view(*displacement); // read during the call only
  mo.vector = vector;
  mo.angle_degrees = angle;
  mo.axis = axis;
  mo.about = about;
  mo.factor = factor;
  DeformOptions o;
  o.method = parse_deform_method(method);
  o.kernel = parse_kernel(kernel);
  o.eps = eps;
  o.degree = degree ? *degree : GlobalRbfOptions::kernel_default_degree;
  o.solver = parse_global_solver(solver);
  o.tolerance = tolerance;
  o.steps = steps;
  o.backend = parse_backend(backend);
  o.threads = threads;
  const Table<double> x = view(nodes);
  DeformResult r;
  {
    nb::gil_scoped_release release;
    r = deform_nodes(x, dim, view(moving), view(fixed), mo, o);
  }
  const DeformStepStats t = r.stats.total();
  nb::dict d;
  d["moving"] = r.stats.moving;
  d["fixed"] = r.stats.fixed;
  d["interpolated"] = r.stats.interpolated;
  d["steps"] = static_cast<std::int64_t>(r.stats.steps.size());
  d["solver"] = t.solver;
  d["iterations"] = t.iterations;
  d["boundary_residual"] = t.boundary_residual;
  d["seconds"] = r.stats.seconds;
  return nb::make_tuple(to_numpy(std::move(r.coords)), d);
}

using sim::Simulation;

std::unique_ptr<Simulation> make_sim(const std::string &scenario, std::int64_t n, double dt,
                                     double core, double reynolds, int merge_every,
                                     std::uint64_t seed, const std::string &method,
                                     double tolerance, const std::string &backend, int threads,
                                     const std::string &autotune) {
  sim::SimulationOptions o;
  o.scenario = sim::parse_scenario(scenario);
  o.n = n;
  o.dt = dt;
  o.core = core;
  o.reynolds = reynolds;
  o.merge_every = merge_every;
  o.seed = seed;
  o.field.method = parse_method(method);
  o.field.tolerance = tolerance;
  o.field.backend = parse_backend(backend);
  o.field.threads = threads;
  o.field.autotune = parse_autotune_scheme(autotune);
  return sim::make_simulation(o);
}

} // namespace

void bind_apps(nb::module_ &m) {
  m.def("deform_nodes", &deform, nb::arg("nodes").noconvert(), nb::arg("dim"),
        nb::arg("moving").noconvert(), nb::arg("fixed").noconvert(), nb::arg("motion"),
        nb::arg("displacement").noconvert().none(), nb::arg("vector"), nb::arg("angle"),
        nb::arg("axis"), nb::arg("about"), nb::arg("factor"), nb::arg("method"), nb::arg("kernel"),
        nb::arg("eps"), nb::arg("degree").none(), nb::arg("solver"), nb::arg("tolerance"),
        nb::arg("steps"), nb::arg("backend"), nb::arg("threads"));

  nb::class_<Simulation>(m, "SimulationCore")
      .def(
          "step",
          [](Simulation &s, int count) {
            nb::gil_scoped_release release;
            for (int k = 0; k < count; ++k)
              s.step();
          },
          nb::arg("count") = 1)
      .def_prop_ro("time", &Simulation::time)
      .def_prop_ro("dt", &Simulation::dt)
      .def_prop_ro("size", &Simulation::size)
      .def("snapshot",
           [](Simulation &s) {
             sim::Snapshot snap;
             {
               nb::gil_scoped_release release;
               snap = s.snapshot();
             }
             nb::dict d;
             d["z"] = to_numpy(std::move(snap.z));
             d["velocity"] = to_numpy(std::move(snap.velocity));
             d["strength"] = to_numpy(std::move(snap.strength));
             return d;
           })
      .def("picture",
           [](const Simulation &s) {
             sim::Picture p = s.picture();
             return nb::make_tuple(p.nx, p.ny, to_numpy(std::move(p.values)));
           })
      .def("diagnostics", &Simulation::diagnostics)
      .def("describe", &Simulation::describe);
  m.def("make_simulation", &make_sim, nb::arg("scenario"), nb::arg("n"), nb::arg("dt"),
        nb::arg("core"), nb::arg("reynolds"), nb::arg("merge_every"), nb::arg("seed"),
        nb::arg("method"), nb::arg("tolerance"), nb::arg("backend"), nb::arg("threads"),
        nb::arg("autotune"));
}

} // namespace ksum::py
