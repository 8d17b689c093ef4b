// ksum deform: RBF mesh deformation (seed 000 §2.3). The boundary groups' motion is interpolated
// to every other node; the mesh's quality is reported before and after.
#include "common.hpp"

#include <ksum/deform.hpp>
#include <ksum/error.hpp>
#include <ksum/io.hpp>
#include <ksum/mesh.hpp>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace ksum::cli {
namespace {

struct DeformArgs {
  std::string mesh, output, vtu, report, displacement, method = "global", kernel;
  std::string backend = "auto", solver = "auto";
  std::vector<std::string> moving, fixed;
  std::vector<double> translate, about, axis;
  double rotate = 0, scale = 1, eps = 1, tol = 1e-10;
  int steps = 1, threads = 0, degree = GlobalRbfOptions::kernel_default_degree;
  bool allow_inverted = false, force = false, binary = false;
  bool rotate_given = false, scale_given = false, eps_given = false;
  std::string msh_version = "4.1";
};

// "name" or "name1,name2": the union of the groups' node rows, with the group of each.
std::vector<std::int64_t> group_nodes(const Mesh &mesh, const std::vector<std::string> &names,
                                      std::map<std::int64_t, std::string> &owner) {
  std::vector<std::int64_t> rows;
  for (const auto &name : names) {
    const auto &g = mesh.group(name);
    for (const auto r : g.nodes)
      if (owner.emplace(r, g.label()).second)
        rows.push_back(r);
  }
  return rows;
}

std::array<double, 3> vec3(const std::vector<double> &v, int dim, const char *option) {
  if (static_cast<int>(v.size()) != dim && !(dim == 2 && v.size() == 3 && v[2] == 0))
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("{} needs {} numbers for this {}D mesh (got {})", option, dim, dim, v.size()));
  return {v[0], v[1], v.size() > 2 ? v[2] : 0.0};
}

// The displacement file: dim columns (rows in increasing node tag order of the moving nodes), or a
// CSV whose header names a first column "tag" or "node" (node tag, then the displacement; any
// order). The header decides, so a 2D mesh's (dx, dy, dz) file is never read as tags.
Table<double> read_displacement(const std::string &path, const Mesh &mesh,
                                const std::vector<std::int64_t> &moving) {
  const auto t = io::read_table(path);
  const auto nm = static_cast<std::int64_t>(moving.size());
  const int dim = mesh.dim;
  Table<double> d(nm, dim);
  std::string first = t.names.empty() ? "" : t.names[0];
  std::transform(first.begin(), first.end(), first.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool tagged = first == "tag" || first == "node" || first == "node_tag";
  if (!tagged && t.cols() == dim) {
    if (t.rows() != nm)
      throw Error(ErrorCode::shape_mismatch,
                  fmt::format("{}: {} rows, but the moving groups have {} nodes (one row per "
                              "moving node, in increasing node tag order; or a first column of "
                              "node tags)",
                              path, t.rows(), nm));
    for (std::int64_t k = 0; k < nm; ++k)
      for (int a = 0; a < dim; ++a)
        d(k, a) = t(k, a);
    return d;
  }
  if (!tagged || t.cols() != dim + 1)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("{}: {} columns; a {}D mesh needs {} (dx, dy{}), or {} with a header "
                            "naming the first 'tag'",
                            path, t.cols(), dim, dim, dim == 3 ? ", dz" : "", dim + 1));
  std::map<std::int64_t, std::int64_t> index; // node tag → position among the moving nodes
  for (std::int64_t k = 0; k < nm; ++k)
    index.emplace(mesh.node_tags[static_cast<std::size_t>(moving[static_cast<std::size_t>(k)])], k);
  std::vector<char> seen(static_cast<std::size_t>(nm), 0);
  for (std::int64_t i = 0; i < t.rows(); ++i) {
    const double tag = t(i, 0);
    const bool integral = tag == std::floor(tag) && std::abs(tag) < 9e15;
    const auto it = integral ? index.find(static_cast<std::int64_t>(tag)) : index.end();
    if (it == index.end())
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{}: data row {}: node tag {} is not a node of the moving groups",
                              path, i + 1, tag));
    if (seen[static_cast<std::size_t>(it->second)]++)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{}: data row {}: node tag {} given twice", path, i + 1, tag));
    for (int a = 0; a < dim; ++a)
      d(it->second, a) = t(i, a + 1);
  }
  if (t.rows() != nm)
    throw Error(
        ErrorCode::shape_mismatch,
        fmt::format("{}: {} rows, but the moving groups have {} nodes", path, t.rows(), nm));
  return d;
}

std::string shapes(const Mesh &m) {
  std::map<std::string, std::int64_t> count;
  for (const auto &b : m.blocks)
    count[to_string(b.shape)] += b.size();
  std::string s;
  for (const auto &[name, c] : count)
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", c,
                     c == 1                     ? name
                     : name.ends_with("hedron") ? name.substr(0, name.size() - 2) + "a"
                                                : name + "s");
  return s;
}

// Polyharmonic splines: ε only rescales them (and the polynomial part absorbs the difference).
bool scale_free(Kernel k) {
  return k == Kernel::tps || k == Kernel::cubic || k == Kernel::linear || k == Kernel::quintic;
}

std::string quality_line(const MeshQuality &q) {
  return fmt::format("scaled Jacobian min {:.4f} mean {:.4f}, inverted {} of {} (worst: element "
                     "{})",
                     q.min_scaled_jacobian, q.mean_scaled_jacobian, q.inverted, q.elements,
                     q.worst_element);
}

nlohmann::json quality_json(const MeshQuality &q) {
  return {{"elements", q.elements},
          {"inverted", q.inverted},
          {"min_scaled_jacobian", q.min_scaled_jacobian},
          {"mean_scaled_jacobian", q.mean_scaled_jacobian},
          {"worst_element", q.worst_element}};
}

void run_deform(const DeformArgs &a) {
  const auto t0 = std::chrono::steady_clock::now();
  refuse_overwrite(a.output, {&a.mesh, &a.displacement}, a.force);
  refuse_overwrite(a.vtu, {&a.mesh, &a.displacement, &a.output}, a.force);
  refuse_overwrite(a.report, {&a.mesh, &a.displacement, &a.output, &a.vtu}, a.force);
  { // two outputs that do not exist yet are not caught by the check above
    namespace fs = std::filesystem;
    std::vector<std::pair<fs::path, std::string>> outs;
    for (const auto *o : {&a.output, &a.vtu, &a.report})
      if (!o->empty()) {
        const auto canon = fs::weakly_canonical(*o);
        for (const auto &[p, name] : outs)
          if (p == canon)
            throw Error(ErrorCode::invalid_argument,
                        fmt::format("{} and {} name the same file", name, *o));
        outs.emplace_back(canon, *o);
      }
  }
  const int motions =
      !a.displacement.empty() + !a.translate.empty() + a.rotate_given + a.scale_given;
  if (motions != 1)
    throw Error(ErrorCode::invalid_argument,
                motions == 0 ? "no motion: give one of --displacement, --translate, --rotate, "
                               "--scale"
                             : "give only one of --displacement, --translate, --rotate, --scale");

  const Mesh mesh = io::read_mesh(a.mesh);
  const int dim = mesh.dim;
  std::map<std::int64_t, std::string> owner;
  auto moving = group_nodes(mesh, a.moving, owner);
  std::map<std::int64_t, std::string> fixed_owner;
  const auto fixed = group_nodes(mesh, a.fixed, fixed_owner);
  for (const auto r : fixed)
    if (owner.count(r))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{}: node {} is in moving group '{}' and in fixed group '{}'", a.mesh,
                              mesh.node_tags[static_cast<std::size_t>(r)], owner[r],
                              fixed_owner[r]));
  if (moving.empty())
    throw Error(ErrorCode::empty_input, fmt::format("{}: the moving group(s) {} have no nodes",
                                                    a.mesh, fmt::join(a.moving, ", ")));
  { // boundary groups left out of both lists are interpolated: say so (a symmetry plane, say)
    std::vector<std::string> loose;
    for (const auto &g : mesh.groups) {
      const auto listed = [&](const std::vector<std::string> &names) {
        return std::any_of(names.begin(), names.end(), [&](const std::string &n) {
          return n == g.name || n == fmt::format("{}:{}", g.dim, g.tag);
        });
      };
      if (g.dim < mesh.dim && !listed(a.moving) && !listed(a.fixed))
        loose.push_back(g.label());
    }
    if (!loose.empty())
      note(fmt::format("  note: boundary group{} {} in neither --moving nor --fixed: interpolated "
                       "like the volume",
                       loose.size() == 1 ? "" : "s", fmt::join(loose, ", ")));
  }
  std::sort(moving.begin(), moving.end(), [&](std::int64_t i, std::int64_t j) {
    return mesh.node_tags[static_cast<std::size_t>(i)] <
           mesh.node_tags[static_cast<std::size_t>(j)];
  });

  Motion motion;
  if (!a.about.empty() && !a.rotate_given && !a.scale_given)
    throw Error(ErrorCode::invalid_argument, "--about is the fixed point of --rotate or --scale");
  if (!a.axis.empty() && !a.rotate_given)
    throw Error(ErrorCode::invalid_argument, "--axis is the axis of --rotate");
  if (!a.displacement.empty()) {
    motion.kind = Motion::Kind::displacement;
    motion.displacement = read_displacement(a.displacement, mesh, moving);
  } else if (!a.translate.empty()) {
    motion.kind = Motion::Kind::translate;
    motion.vector = vec3(a.translate, dim, "--translate");
  } else {
    if (a.about.empty())
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{} needs --about (the fixed point)",
                              a.rotate_given ? "--rotate" : "--scale"));
    motion.about = vec3(a.about, dim, "--about");
    if (a.rotate_given) {
      motion.kind = Motion::Kind::rotate;
      motion.angle_degrees = a.rotate;
      if (!a.axis.empty())
        motion.axis = vec3(a.axis, 3, "--axis");
    } else {
      if (!(a.scale > 0))
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("--scale {}: the factor must be positive", a.scale));
      motion.kind = Motion::Kind::scale;
      motion.factor = a.scale;
    }
  }

  DeformOptions o;
  o.method = parse_deform_method(a.method);
  // tps for the global interpolant; the PUM's patches of boundary nodes need a positive definite
  // kernel (no local polynomial), wendland2.
  o.kernel = parse_kernel(!a.kernel.empty()                  ? a.kernel
                          : o.method == DeformMethod::global ? "tps"
                                                             : "wendland2");
  o.eps = a.eps;
  if (o.method == DeformMethod::pum && !a.eps_given) {
    // A support radius of a quarter of the mesh's diagonal (the best of 1/10, 1/5, 1/4 on the
    // shipped examples), so the default is the same in any units.
    double diag2 = 0;
    for (int k = 0; k < 3; ++k) {
      const auto c = mesh.nodes.col(k);
      const auto [lo, hi] = std::minmax_element(c.begin(), c.end());
      diag2 += (*hi - *lo) * (*hi - *lo);
    }
    o.eps = 4 / std::sqrt(diag2);
  }
  o.degree = a.degree;
  o.solver = parse_global_solver(a.solver);
  o.tolerance = a.tol;
  o.steps = a.steps;
  o.backend = parse_backend(a.backend);
  o.threads = a.threads;
  o.on_step = [](int k, int n) {
    if (n > 1)
      note(fmt::format("  step {}/{}", k, n));
  };
  auto last = std::chrono::steady_clock::now();
  o.on_iteration = [&last](int k, double rel) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last > std::chrono::seconds(1)) {
      note(fmt::format("    iteration {}: relative residual {:.3e}", k, rel));
      last = now;
    }
  };

  fmt::print("mesh {}: {}D, {} nodes, {} ({:.2f} s to read)\n", a.mesh, dim, mesh.nodes.rows(),
             shapes(mesh), seconds_since(t0));
  fmt::print("motion: {} of groups {}; fixed: {}; method {} ({}{}), {} step{}\n", motion.describe(),
             fmt::join(a.moving, ", "),
             a.fixed.empty() ? "none" : fmt::format("{}", fmt::join(a.fixed, ", ")), a.method,
             kernel_info(o.kernel).name,
             scale_free(o.kernel) ? std::string() : fmt::format(", eps {:.4g}", o.eps), a.steps,
             a.steps == 1 ? "" : "s");
  const auto orientation = element_orientation(mesh, mesh.nodes);
  std::vector<double> q_before, q_after;
  const auto before = mesh_quality(mesh, mesh.nodes, orientation, &q_before);
  fmt::print("quality before: {}\n", quality_line(before));

  const auto res = deform_nodes(mesh.nodes, dim, moving, fixed, motion, o);
  const auto after = mesh_quality(mesh, res.coords, orientation, &q_after);
  fmt::print("quality after:  {}\n", quality_line(after));
  const auto total = res.stats.total();
  const double solve = total.seconds_solve, eval = total.seconds_evaluate,
               residual = total.boundary_residual;
  const int iterations = total.iterations;
  fmt::print("nodes: {} moving, {} fixed, {} interpolated; solver {} ({} iterations), boundary "
             "residual {:.2e}; solve {:.2f} s, evaluate {:.2f} s\n",
             res.stats.moving, res.stats.fixed, res.stats.interpolated, total.solver, iterations,
             residual, solve, eval);

  // Elements already degenerate in the input do not count against the motion.
  std::int64_t newly = 0;
  for (std::size_t e = 0; e < q_after.size(); ++e)
    newly += q_after[e] <= 0 && q_before[e] > 0;
  if (before.inverted > 0)
    note(fmt::format("  {} element{} already degenerate or inverted in the input; {} inverted by "
                     "the motion",
                     before.inverted, before.inverted == 1 ? " was" : "s were", newly));
  if (newly > 0 && !a.allow_inverted)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("the deformed mesh has {} inverted element{} (worst: element {}, "
                            "scaled Jacobian {:.3g}); {} not written. Try --steps {}, a smaller "
                            "motion, or --allow-inverted to write it anyway",
                            newly, newly == 1 ? "" : "s", after.worst_element,
                            after.min_scaled_jacobian, a.output, std::max(4, 2 * a.steps)));

  Table<double> disp(mesh.nodes.rows(), 3), qb(mesh.elements(), 1), qa(mesh.elements(), 1);
  for (std::int64_t i = 0; i < disp.rows(); ++i)
    for (int k = 0; k < 3; ++k)
      disp(i, k) = res.coords(i, k) - mesh.nodes(i, k);
  for (std::int64_t e = 0; e < qb.rows(); ++e) {
    qb(e, 0) = q_before[static_cast<std::size_t>(e)];
    qa(e, 0) = q_after[static_cast<std::size_t>(e)];
  }
  const std::vector<io::MeshField> pf{{"displacement", disp}};
  const std::vector<io::MeshField> cf{{"scaled_jacobian_before", qb},
                                      {"scaled_jacobian_after", qa}};
  const io::MeshWriteOptions wo{
      .overwrite = a.force, .binary = a.binary, .msh_version = std::stod(a.msh_version)};
  const auto tw = std::chrono::steady_clock::now();
  io::write_mesh(a.output, mesh, res.coords, pf, cf, wo);
  if (!a.vtu.empty())
    io::write_mesh(a.vtu, mesh, res.coords, pf, cf, wo);
  const double secs_write = seconds_since(tw);
  if (!a.report.empty()) {
    nlohmann::json j{{"mesh", a.mesh},
                     {"dim", dim},
                     {"nodes", mesh.nodes.rows()},
                     {"elements", mesh.elements()},
                     {"motion", motion.describe()},
                     {"moving", res.stats.moving},
                     {"fixed", res.stats.fixed},
                     {"interpolated", res.stats.interpolated},
                     {"method", a.method},
                     {"kernel", kernel_info(o.kernel).name},
                     {"quality_before", quality_json(before)},
                     {"quality_after", quality_json(after)},
                     {"seconds_total", seconds_since(t0)},
                     {"seconds_write", secs_write}};
    for (const auto &s : res.stats.steps)
      j["steps"].push_back({{"solver", s.solver},
                            {"iterations", s.iterations},
                            {"boundary_residual", s.boundary_residual},
                            {"max_increment", s.max_increment},
                            {"seconds_solve", s.seconds_solve},
                            {"seconds_evaluate", s.seconds_evaluate}});
    std::ostringstream text;
    text << j.dump(2) << '\n';
    io::write_text(a.report, text.str(), a.force);
  }
  fmt::print("wrote {}{}{} in {:.2f} s; total {:.2f} s\n", a.output,
             a.vtu.empty() ? "" : ", " + a.vtu, a.report.empty() ? "" : ", " + a.report, secs_write,
             seconds_since(t0));
}

} // namespace

void register_deform(CLI::App &app) {
  static DeformArgs a;
  auto *cmd = app.add_subcommand(
      "deform", "RBF mesh deformation: move boundary groups of a Gmsh mesh and interpolate the "
                "motion to every other node (seed 000 §2.3)");
  cmd->footer(
      "Groups are the mesh's physical groups (by name, or dim:tag). Nodes of --fixed groups stay;\n"
      "nodes of --moving groups follow the motion exactly; all others are interpolated.\n"
      "Quality: the scaled Jacobian of each element (1 ideal, <= 0 inverted), before and after.\n"
      "Examples (examples/deform):\n"
      "  ksum deform --mesh naca0012.msh --moving airfoil --fixed farfield --rotate 10 "
      "--about 0.25,0 -o rotated.msh --vtu rotated.vtu\n"
      "  ksum deform --mesh sphere_box.msh --moving sphere --fixed box --translate 0.3,0,0 "
      "-o moved.msh");
  cmd->add_option("--mesh", a.mesh, "Input mesh (Gmsh .msh, 2D or 3D)")->required();
  cmd->add_option("--moving", a.moving, "Physical group(s) that move, comma separated")
      ->delimiter(',')
      ->required();
  cmd->add_option("--fixed", a.fixed, "Physical group(s) held in place, comma separated")
      ->delimiter(',');
  auto *disp = cmd->add_option(
      "--displacement", a.displacement,
      "Per-moving-node displacement (.csv/.npy): d columns in increasing node tag order, or a "
      "node tag column first");
  cmd->add_option("--translate", a.translate, "Translate the moving groups by dx,dy[,dz]")
      ->delimiter(',')
      ->excludes(disp);
  cmd->add_option("--msh-version", a.msh_version,
                  "MSH format of a .msh output: 4.1, or 2.2 (e.g. for OpenFOAM's gmshToFoam)")
      ->check(CLI::IsMember({"4.1", "2.2"}))
      ->capture_default_str();
  auto *rotate = cmd->add_option("--rotate", a.rotate,
                                 "Rotate the moving groups by DEG degrees "
                                 "(counter-clockwise; needs --about)");
  cmd->add_option("--axis", a.axis, "3D rotation axis ax,ay,az (default 0,0,1)")->delimiter(',');
  auto *scale = cmd->add_option("--scale", a.scale, "Scale the moving groups by S about --about");
  cmd->add_option("--about", a.about, "Fixed point x,y[,z] of --rotate and --scale")
      ->delimiter(',');
  cmd->add_option("--method", a.method,
                  "Interpolant: global (one RBF over the boundary, seed 000) or pum (partition "
                  "of unity, seed 001)")
      ->check(CLI::IsMember({"global", "pum"}))
      ->capture_default_str();
  cmd->add_option("--kernel", a.kernel,
                  "RBF (default: tps r^2 log r for global, wendland2 for pum): linear, cubic, "
                  "multiquadric, wendland2 (--eps = 1/support radius), gaussian, matern4, ...");
  auto *eps = cmd->add_option("--eps", a.eps,
                              "Shape parameter (kernels with one; wendland: 1/support radius). "
                              "Default: 1 (global); pum: 4 / the mesh's diagonal");
  cmd->add_option(
      "--degree", a.degree,
      "Polynomial degree (default: global 1, so rigid motions are exact, or the kernel's minimum "
      "where higher; pum the kernel's minimum)");
  cmd->add_option("--solver", a.solver, "global: auto, dense, fgp or krylov")
      ->check(CLI::IsMember({"auto", "dense", "fgp", "krylov"}))
      ->capture_default_str();
  cmd->add_option("--tol", a.tol, "global, iterative: relative residual per step")
      ->capture_default_str();
  cmd->add_option("--steps", a.steps, "Apply the motion in K increments (large rotations)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--backend", a.backend, "auto, cpu or gpu (the solver's matvecs and evaluation)")
      ->check(CLI::IsMember({"auto", "cpu", "gpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--threads", a.threads, "CPU threads (0: all)")->check(CLI::NonNegativeNumber);
  cmd->add_option("-o,--output", a.output, "Deformed mesh: .msh (Gmsh) or .vtu (ParaView)")
      ->required();
  cmd->add_option("--vtu", a.vtu,
                  "Also write a .vtu with the displacement and the per-element quality");
  cmd->add_option("--report", a.report, "Write the quality report and timings as JSON");
  cmd->add_flag("--binary", a.binary, "Write .msh in binary (MSH 4.1)");
  cmd->add_flag("--allow-inverted", a.allow_inverted,
                "Write the result even if elements inverted (exit code 0)");
  cmd->add_flag("-f,--force", a.force, "Overwrite the output files if they exist");
  cmd->callback([rotate, scale, eps] {
    a.eps_given = eps->count() > 0;
    a.rotate_given = rotate->count() > 0;
    a.scale_given = scale->count() > 0;
    run_deform(a);
  });
}

} // namespace ksum::cli
