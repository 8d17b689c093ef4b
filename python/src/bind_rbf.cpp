// Global RBF interpolation (dense / FGP / GMRES) and RBF partition of unity (double precision).
#include "bindings.hpp"

#include <ksum/global.hpp>
#include <ksum/pum.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <ksum/error.hpp>

#include <optional>
#include <string>

namespace ksum::py {
namespace {

// `name`(points, values, comm, handle): (p.*set)(points, values, communicator) (by default
// Plan::set_data), collective, so the GIL is released while other ranks may be waiting.
template <class Plan>
void def_set_data_over(nb::class_<Plan> &c, const char *name,
                       void (Plan::*set)(const Table<double> &, const Table<double> &,
                                         const Communicator &) = &Plan::set_data) {
  c.def(
      name,
      [set](Plan &p, HostMatrix<double> points, HostMatrix<double> values, const std::string &which,
            int handle) {
        const Table<double> x = view(points), f = view(values);
        const Communicator comm = make_comm(which, handle);
        nb::gil_scoped_release release;
        (p.*set)(x, f, comm);
      },
      nb::arg("points").noconvert(), nb::arg("values").noconvert(), nb::arg("comm"),
      nb::arg("handle"));
}

// plan.fail(message): this rank's argument error before a collective evaluate, agreed with the
// other ranks' evaluate on the plan's communicator (raised here alone for a fit in one process).
template <class Plan> void def_fail(nb::class_<Plan> &c) {
  c.def(
      "fail",
      [](const Plan &p, const std::string &message) {
        if (const Communicator *comm = p.communicator())
          comm->agree(true, static_cast<int>(ErrorCode::invalid_argument), message);
        throw Error(ErrorCode::invalid_argument, message);
      },
      nb::arg("message"));
}

void bind_global(nb::module_ &m) {
  using Plan = GlobalRbfInterpolant;
  nb::class_<Plan> c(m, "GlobalRbf");
  def_interpolant(c);
  def_set_data_over(c, "set_data_distributed");
  def_fail(c);
  c.def(
       "__init__",
       [](Plan *self, const std::string &kernel, double eps, std::optional<int> degree,
          double smoothing, const std::string &solver, double tolerance, int max_iterations,
          std::int64_t dense_max_n, const std::string &backend, int threads,
          const std::string &matvec_method, double matvec_tolerance, int lset_size,
          int gmres_restart, const std::string &centre_update) {
         GlobalRbfOptions o;
         o.kernel = parse_kernel(kernel);
         o.eps = eps;
         o.degree = degree ? *degree : GlobalRbfOptions::kernel_default_degree;
         o.smoothing = smoothing;
         o.solver = parse_global_solver(solver);
         o.tolerance = tolerance;
         o.max_iterations = max_iterations;
         o.dense_max_n = dense_max_n;
         o.backend = parse_backend(backend);
         o.threads = threads;
         o.matvec_method = parse_method(matvec_method);
         o.matvec_tolerance = matvec_tolerance;
         o.lset_size = lset_size;
         o.gmres_restart = gmres_restart;
         o.centre_update = parse_centre_update(centre_update);
         new (self) Plan(std::move(o));
       },
       nb::arg("kernel"), nb::arg("eps"), nb::arg("degree").none(), nb::arg("smoothing"),
       nb::arg("solver"), nb::arg("tolerance"), nb::arg("max_iterations"), nb::arg("dense_max_n"),
       nb::arg("backend"), nb::arg("threads"), nb::arg("matvec_method"),
       nb::arg("matvec_tolerance"), nb::arg("lset_size"), nb::arg("gmres_restart"),
       nb::arg("centre_update") = "auto")
      .def(
          "move_centres",
          [](Plan &p, HostVector<std::int64_t> index, HostMatrix<double> points,
             std::optional<HostMatrix<double>> values) {
            const std::span<const std::int64_t> k = view(index);
            const Table<double> x = view(points);
            const std::optional<Table<double>> f =
                values ? std::optional<Table<double>>(view(*values)) : std::nullopt;
            nb::gil_scoped_release release;
            p.move_centres(k, x, f ? &*f : nullptr);
          },
          nb::arg("index").noconvert(), nb::arg("points").noconvert(),
          nb::arg("values").noconvert().none() = nb::none())
      .def_prop_ro("coefficients",
                   [](const Plan &p) { return to_numpy(Table<double>(p.coefficients())); })
      .def_prop_ro("stats", [](const Plan &p) {
        const GlobalRbfStats &s = p.stats();
        nb::dict d;
        d["solver"] = std::string(to_string(s.solver));
        d["backend"] = std::string(to_string(s.backend));
        d["matvec"] = s.matvec;
        d["degree"] = s.degree;
        d["poly_terms"] = s.poly_terms;
        d["iterations"] = s.iterations;
        d["matvecs"] = s.matvecs;
        d["residual_max"] = s.residual_max;
        d["residual_rel"] = s.residual_rel;
        d["history"] = s.history;
        d["seconds_setup"] = s.seconds_setup;
        d["seconds_solve"] = s.seconds_solve;
        d["lsets"] = s.lsets;
        d["lsets_skipped"] = s.lsets_skipped;
        d["ranks"] = s.ranks;
        d["lset_halo_rows"] = s.lset_halo_rows;
        d["lset_search_received"] = s.lset_search_received;
        d["moves"] = s.moves;
        d["updates"] = s.updates;
        d["update_fallbacks"] = s.update_fallbacks;
        d["inverse_held"] = s.inverse_held;
        d["seconds_move"] = s.seconds_move;
        d["move_rank"] = s.move_rank;
        return d;
      });
}

void bind_pum(nb::module_ &m) {
  using Plan = PumInterpolant;
  nb::class_<Plan> c(m, "Pum");
  def_interpolant(c);
  def_set_data_over(c, "set_data_shared");
  def_set_data_over(c, "set_data_partitioned", &Plan::set_data_partitioned);
  def_fail(c);
  c.def(
       "__init__",
       [](Plan *self, const std::string &kernel, int degree, double eps, bool loocv, double eps_min,
          double eps_max, double patch_density, std::int64_t min_patch_points,
          bool merge_duplicates, bool extrapolate, int threads, const std::string &backend) {
         PumOptions o;
         o.kernel = parse_kernel(kernel);
         o.degree = degree;
         o.eps = eps;
         o.loocv = loocv;
         o.eps_min = eps_min;
         o.eps_max = eps_max;
         o.patch_density = patch_density;
         o.min_patch_points = min_patch_points;
         o.merge_duplicates = merge_duplicates;
         o.extrapolate = extrapolate;
         o.threads = threads;
         o.backend = parse_backend(backend);
         new (self) Plan(std::move(o));
       },
       nb::arg("kernel"), nb::arg("degree"), nb::arg("eps"), nb::arg("loocv"), nb::arg("eps_min"),
       nb::arg("eps_max"), nb::arg("patch_density"), nb::arg("min_patch_points"),
       nb::arg("merge_duplicates"), nb::arg("extrapolate"), nb::arg("threads"), nb::arg("backend"))
      .def_prop_ro("stats", [](const Plan &p) {
        const PumStats &s = p.stats();
        nb::dict d;
        d["patches"] = s.patches;
        d["empty_patches"] = s.empty_patches;
        d["grown_patches"] = s.grown_patches;
        d["merged_duplicates"] = s.merged_duplicates;
        d["min_points"] = s.min_points;
        d["median_points"] = s.median_points;
        d["max_points"] = s.max_points;
        d["eps_min"] = s.eps_min;
        d["eps_median"] = s.eps_median;
        d["eps_max"] = s.eps_max;
        d["radius"] = s.radius;
        d["seconds_index"] = s.seconds_index;
        d["seconds_fit"] = s.seconds_fit;
        d["owned_points"] = s.owned_points;
        d["halo_points"] = s.halo_points;
        d["halo_patches"] = s.halo_patches;
        d["halo_rounds"] = s.halo_rounds;
        d["backend"] = std::string(to_string(s.fit_backend));
        return d;
      });
}

void bind_local(nb::module_ &m) {
  using Plan = LocalRbfInterpolant;
  nb::class_<Plan> c(m, "LocalRbf");
  def_interpolant(c);
  c.def(
      "__init__",
      [](Plan *self, const std::string &kernel, double eps, std::optional<int> degree,
         double smoothing, std::int64_t neighbors, int threads) {
        LocalRbfOptions o;
        o.kernel = parse_kernel(kernel);
        o.eps = eps;
        o.degree = degree ? *degree : GlobalRbfOptions::kernel_default_degree;
        o.smoothing = smoothing;
        o.neighbors = neighbors;
        o.threads = threads;
        new (self) Plan(o);
      },
      nb::arg("kernel"), nb::arg("eps"), nb::arg("degree").none(), nb::arg("smoothing"),
      nb::arg("neighbors"), nb::arg("threads"));
}

} // namespace

void bind_rbf(nb::module_ &m) {
  bind_global(m);
  bind_pum(m);
  bind_local(m);
}

} // namespace ksum::py
