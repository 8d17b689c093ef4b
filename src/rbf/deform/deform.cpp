// RBF mesh deformation (seed 000 §2.3): per step, the boundary increments are interpolated from
// the boundary nodes' current positions and every other node moves by the interpolant's value.
#include <ksum/deform.hpp>
#include <ksum/error.hpp>
#include <ksum/pum.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <numbers>

namespace ksum {
namespace {

using Vec3 = std::array<double, 3>;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Rodrigues' formula: x rotated by angle a (radians) about the unit axis k.
Vec3 rotate(const Vec3 &x, const Vec3 &k, double a) {
  const double c = std::cos(a), s = std::sin(a);
  const double kx = k[1] * x[2] - k[2] * x[1], ky = k[2] * x[0] - k[0] * x[2],
               kz = k[0] * x[1] - k[1] * x[0];
  const double kd = k[0] * x[0] + k[1] * x[1] + k[2] * x[2];
  return {x[0] * c + kx * s + k[0] * kd * (1 - c), x[1] * c + ky * s + k[1] * kd * (1 - c),
          x[2] * c + kz * s + k[2] * kd * (1 - c)};
}

Vec3 row3(const Table<double> &t, std::int64_t i) {
  return {t(i, 0), t(i, 1), t(i, 2)};
}

void check_rows(std::span<const std::int64_t> rows, std::int64_t n, const char *what,
                std::vector<signed char> &role, signed char mark) {
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const std::int64_t i = rows[k];
    if (i < 0 || i >= n)
      throw Error(
          ErrorCode::invalid_argument,
          fmt::format("deform: {} node {} (entry {}) is not a row of the {} nodes", what, i, k, n));
    if (role[static_cast<std::size_t>(i)] == mark)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("deform: {} node {} is listed twice", what, i));
    if (role[static_cast<std::size_t>(i)] != 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("deform: node {} is both moving and fixed", i));
    role[static_cast<std::size_t>(i)] = mark;
  }
}

// One step's interpolant of the boundary increments, global or PUM, evaluated at `at`.
struct StepFit {
  Table<double> at_free; // the increments at the free nodes
  double residual = 0;   // max |s(y_i) − Δ_i| over the boundary
  std::string solver;
  int iterations = 0;
  double seconds_solve = 0;
};

StepFit fit_step(const Table<double> &centres, const Table<double> &incr, const Table<double> &free,
                 const DeformOptions &o) {
  StepFit out;
  const std::int64_t nb = centres.rows(), c = incr.cols();
  // Global: linear by default, so rigid and affine motions are reproduced exactly. PUM: the
  // kernel's minimum, since a patch of boundary nodes often lies on one line or plane, where a
  // local linear polynomial is undetermined.
  const bool by_default = o.degree == GlobalRbfOptions::kernel_default_degree;
  const int min_degree = kernel_info(o.kernel).min_degree;
  const int degree = !by_default                        ? o.degree
                     : o.method == DeformMethod::global ? std::max(1, min_degree)
                                                        : min_degree;
  if (o.method == DeformMethod::global) {
    GlobalRbfOptions g;
    g.kernel = o.kernel;
    g.eps = o.eps;
    g.degree = degree;
    g.solver = o.solver;
    g.tolerance = o.tolerance;
    g.backend = o.backend;
    g.threads = o.threads;
    g.max_iterations = 500;
    g.progress = o.on_iteration;
    GlobalRbfInterpolant rbf(g);
    const auto t0 = std::chrono::steady_clock::now();
    rbf.set_data(centres, incr);
    out.seconds_solve = seconds_since(t0);
    out.at_free = rbf.evaluate(free);
    out.residual = rbf.stats().residual_max;
    out.solver = std::string(to_string(rbf.stats().solver));
    out.iterations = rbf.stats().iterations;
    return out;
  }
  PumOptions p;
  p.kernel = o.kernel;
  p.eps = o.eps;
  p.degree = degree;
  p.extrapolate = true; // volume nodes far from the boundary lie in patches without data
  p.backend = o.backend;
  p.threads = o.threads;
  PumInterpolant pum(p);
  const auto t0 = std::chrono::steady_clock::now();
  pum.set_data(centres, incr);
  out.seconds_solve = seconds_since(t0);
  out.at_free = pum.evaluate(free);
  const auto back = pum.evaluate(centres);
  for (std::int64_t q = 0; q < c; ++q)
    for (std::int64_t i = 0; i < nb; ++i)
      out.residual = std::max(out.residual, std::abs(back(i, q) - incr(i, q)));
  out.solver = "pum";
  return out;
}

} // namespace

DeformStepStats DeformStats::total() const {
  DeformStepStats t;
  for (const auto &s : steps) {
    t.solver = s.solver;
    t.iterations += s.iterations;
    t.boundary_residual = std::max(t.boundary_residual, s.boundary_residual);
    t.max_increment = std::max(t.max_increment, s.max_increment);
    t.seconds_solve += s.seconds_solve;
    t.seconds_evaluate += s.seconds_evaluate;
  }
  return t;
}

DeformMethod parse_deform_method(std::string_view name) {
  if (name == "global")
    return DeformMethod::global;
  if (name == "pum")
    return DeformMethod::pum;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown deformation method '{}' (expected global or pum)", name));
}

std::array<double, 3> Motion::at(double t, const std::array<double, 3> &x0, std::int64_t k) const {
  switch (kind) {
  case Kind::displacement: {
    Vec3 x = x0;
    for (std::int64_t a = 0; a < displacement.cols(); ++a)
      x[static_cast<std::size_t>(a)] += t * displacement(k, a);
    return x;
  }
  case Kind::translate:
    return {x0[0] + t * vector[0], x0[1] + t * vector[1], x0[2] + t * vector[2]};
  case Kind::rotate: {
    const double n = std::hypot(axis[0], axis[1], axis[2]);
    const Vec3 unit{axis[0] / n, axis[1] / n, axis[2] / n};
    const Vec3 r = rotate({x0[0] - about[0], x0[1] - about[1], x0[2] - about[2]}, unit,
                          t * angle_degrees * std::numbers::pi / 180);
    return {about[0] + r[0], about[1] + r[1], about[2] + r[2]};
  }
  case Kind::scale: {
    const double f = 1 + t * (factor - 1);
    return {about[0] + f * (x0[0] - about[0]), about[1] + f * (x0[1] - about[1]),
            about[2] + f * (x0[2] - about[2])};
  }
  }
  return x0;
}

std::string Motion::describe() const {
  switch (kind) {
  case Kind::displacement:
    return fmt::format("displacement of {} nodes", displacement.rows());
  case Kind::translate:
    return fmt::format("translation by ({}, {}, {})", vector[0], vector[1], vector[2]);
  case Kind::rotate:
    return fmt::format("rotation by {}° about ({}, {}, {}), axis ({}, {}, {})", angle_degrees,
                       about[0], about[1], about[2], axis[0], axis[1], axis[2]);
  case Kind::scale:
    return fmt::format("scaling by {} about ({}, {}, {})", factor, about[0], about[1], about[2]);
  }
  return {};
}

DeformResult deform_nodes(const Table<double> &nodes, int dim, std::span<const std::int64_t> moving,
                          std::span<const std::int64_t> fixed, const Motion &motion,
                          const DeformOptions &options) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t n = nodes.rows();
  if (dim != 2 && dim != 3)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("deform: dimension {} (expected 2 or 3)", dim));
  if (nodes.cols() != 3)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("deform: nodes have {} columns (expected x, y, z)", nodes.cols()));
  if (moving.empty())
    throw Error(ErrorCode::empty_input, "deform: no moving nodes (the moving groups are empty)");
  if (options.steps < 1)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("deform: steps {} (expected at least 1)", options.steps));
  for (std::int64_t i = 0; i < n; ++i)
    for (int a = 0; a < 3; ++a)
      if (!std::isfinite(nodes(i, a)))
        throw Error(ErrorCode::non_finite,
                    fmt::format("deform: node {} has a non-finite coordinate", i));
  std::vector<signed char> role(static_cast<std::size_t>(n), 0);
  check_rows(moving, n, "moving", role, 1);
  check_rows(fixed, n, "fixed", role, 2);
  const auto nm = static_cast<std::int64_t>(moving.size());
  if (motion.kind == Motion::Kind::displacement &&
      (motion.displacement.rows() != nm || motion.displacement.cols() != dim))
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("deform: the displacement has {} rows × {} columns but there are {} "
                            "moving nodes in {}D",
                            motion.displacement.rows(), motion.displacement.cols(), nm, dim));
  {
    bool finite = std::isfinite(motion.angle_degrees) && std::isfinite(motion.factor);
    for (int a = 0; a < 3; ++a)
      finite = finite && std::isfinite(motion.vector[a]) && std::isfinite(motion.axis[a]) &&
               std::isfinite(motion.about[a]);
    if (!finite)
      throw Error(
          ErrorCode::non_finite,
          fmt::format("deform: the motion has a non-finite number ({})", motion.describe()));
    for (std::int64_t k = 0; k < motion.displacement.rows() * motion.displacement.cols(); ++k)
      if (!std::isfinite(motion.displacement.data()[k]))
        throw Error(ErrorCode::non_finite,
                    fmt::format("deform: the displacement of moving node {} is not finite",
                                k % std::max<std::int64_t>(1, motion.displacement.rows())));
  }
  if (motion.kind == Motion::Kind::rotate &&
      std::hypot(motion.axis[0], motion.axis[1], motion.axis[2]) == 0)
    throw Error(ErrorCode::invalid_argument, "deform: the rotation axis is the zero vector");
  if (dim == 2 && motion.kind == Motion::Kind::rotate &&
      (motion.axis[0] != 0 || motion.axis[1] != 0))
    throw Error(ErrorCode::invalid_argument,
                "deform: a 2D mesh rotates about the z axis only (--axis 0,0,1)");

  std::vector<std::int64_t> boundary(moving.begin(), moving.end());
  boundary.insert(boundary.end(), fixed.begin(), fixed.end());
  std::vector<std::int64_t> free_rows;
  for (std::int64_t i = 0; i < n; ++i)
    if (role[static_cast<std::size_t>(i)] == 0)
      free_rows.push_back(i);
  const auto nb = static_cast<std::int64_t>(boundary.size());
  const auto nf = static_cast<std::int64_t>(free_rows.size());

  DeformResult res;
  res.coords = nodes;
  res.stats.moving = nm;
  res.stats.fixed = nb - nm;
  res.stats.interpolated = nf;
  for (int step = 1; step <= options.steps; ++step) {
    if (options.on_step)
      options.on_step(step, options.steps);
    const double t = static_cast<double>(step) / options.steps;
    Table<double> centres(nb, dim), incr(nb, dim), free(nf, dim), target(nm, dim);
    DeformStepStats st;
    for (std::int64_t k = 0; k < nb; ++k) {
      const std::int64_t i = boundary[static_cast<std::size_t>(k)];
      for (int a = 0; a < dim; ++a)
        centres(k, a) = res.coords(i, a);
      if (k < nm) { // the prescribed place at t, from the original position
        const Vec3 at = motion.at(t, row3(nodes, i), k);
        for (int a = 0; a < dim; ++a) {
          target(k, a) = at[static_cast<std::size_t>(a)];
          incr(k, a) = target(k, a) - res.coords(i, a);
          st.max_increment = std::max(st.max_increment, std::abs(incr(k, a)));
        }
      }
    }
    for (std::int64_t k = 0; k < nf; ++k)
      for (int a = 0; a < dim; ++a)
        free(k, a) = res.coords(free_rows[static_cast<std::size_t>(k)], a);
    const auto ts = std::chrono::steady_clock::now();
    if (st.max_increment > 0 && nf > 0) {
      auto fit = fit_step(centres, incr, free, options);
      st.solver = fit.solver;
      st.iterations = fit.iterations;
      st.boundary_residual = fit.residual;
      st.seconds_solve = fit.seconds_solve;
      for (std::int64_t q = 0; q < nf * dim; ++q)
        if (!std::isfinite(fit.at_free.data()[q]))
          throw Error(ErrorCode::non_finite,
                      fmt::format("deform: step {}: the interpolant is not finite at node {}", step,
                                  free_rows[static_cast<std::size_t>(q % nf)]));
      for (std::int64_t k = 0; k < nf; ++k)
        for (int a = 0; a < dim; ++a)
          res.coords(free_rows[static_cast<std::size_t>(k)], a) += fit.at_free(k, a);
    } else {
      st.solver = "none";
    }
    // The moving nodes go exactly where the motion puts them (the interpolant's own error there
    // is reported as boundary_residual); fixed nodes stay.
    for (std::int64_t k = 0; k < nm; ++k)
      for (int a = 0; a < dim; ++a)
        res.coords(boundary[static_cast<std::size_t>(k)], a) = target(k, a);
    st.seconds_evaluate = seconds_since(ts) - st.seconds_solve; // and the boundary check
    res.stats.steps.push_back(st);
  }
  res.stats.seconds = seconds_since(t0);
  return res;
}

} // namespace ksum
