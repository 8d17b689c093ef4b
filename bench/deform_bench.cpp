// RBF mesh deformation benchmark (seed 000 §2.3), through the public API: the time to move a large
// mesh's volume nodes from its boundary motion, split into reading, solving and evaluating.
//   deform_bench --mesh F.msh [--moving sphere] [--fixed box] [--translate 0.3,0,0]
//                [--backend auto|cpu|gpu] [--kernel tps] [--steps K] [--export DIR] [--json FILE]
//   deform_bench --nodes DIR   (DIR from --export: nodes.npy, moving.npy, fixed.npy; no Gmsh
//                               needed, so a machine without the SDK times the same deformation)
// With a mesh it also reports the quality before and after (scaled Jacobian, inverted elements).
#include <ksum/ksum.hpp>

#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace ksum;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<double> numbers(const std::string &s) {
  std::vector<double> v;
  std::size_t b = 0;
  while (b < s.size()) {
    const std::size_t e = std::min(s.find(',', b), s.size());
    v.push_back(std::stod(s.substr(b, e - b)));
    b = e + 1;
  }
  return v;
}

std::vector<std::int64_t> rows_of(const Table<double> &t) {
  std::vector<std::int64_t> r(static_cast<std::size_t>(t.rows()));
  for (std::int64_t i = 0; i < t.rows(); ++i)
    r[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(t(i, 0));
  return r;
}

Table<double> column(const std::vector<std::int64_t> &rows) {
  Table<double> t(static_cast<std::int64_t>(rows.size()), 1);
  for (std::size_t i = 0; i < rows.size(); ++i)
    t(static_cast<std::int64_t>(i), 0) = static_cast<double>(rows[i]);
  return t;
}

} // namespace

int main(int argc, char **argv) {
  std::string mesh_path, nodes_dir, export_dir, json_path, moving_name = "sphere",
                                                           fixed_name = "box";
  std::string backend = "auto", kernel = "tps", translate = "0.3,0,0";
  std::string save_displacement, quality_of;
  int steps = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "deform_bench: {} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--mesh")
      mesh_path = next();
    else if (a == "--nodes")
      nodes_dir = next();
    else if (a == "--export")
      export_dir = next();
    else if (a == "--json")
      json_path = next();
    else if (a == "--moving")
      moving_name = next();
    else if (a == "--fixed")
      fixed_name = next();
    else if (a == "--backend")
      backend = next();
    else if (a == "--kernel")
      kernel = next();
    else if (a == "--translate")
      translate = next();
    else if (a == "--save-displacement")
      save_displacement = next();
    else if (a == "--quality-of")
      quality_of = next();
    else if (a == "--steps")
      steps = std::stoi(next());
    else {
      fmt::print(
          stderr,
          "usage: deform_bench (--mesh F.msh | --nodes DIR) [--moving G] "
          "[--fixed G] [--translate dx,dy,dz] [--backend auto|cpu|gpu] "
          "[--kernel K] [--steps K] [--export DIR] [--json FILE] [--save-displacement F.npy] "
          "[--quality-of F.npy]\n");
      return 2;
    }
  }
  try {
    const auto t_read = Clock::now();
    Mesh mesh;
    std::vector<std::int64_t> moving, fixed;
    if (!mesh_path.empty()) {
      mesh = io::read_mesh(mesh_path);
      moving = mesh.group(moving_name).nodes;
      fixed = mesh.group(fixed_name).nodes;
    } else if (!nodes_dir.empty()) {
      const std::filesystem::path d = nodes_dir;
      mesh.nodes = io::read_table(d / "nodes.npy", {.expect_cols = 3});
      mesh.dim = 3;
      moving = rows_of(io::read_table(d / "moving.npy", {.expect_cols = 1}));
      fixed = rows_of(io::read_table(d / "fixed.npy", {.expect_cols = 1}));
    } else {
      fmt::print(stderr, "deform_bench: give --mesh or --nodes\n");
      return 2;
    }
    const double secs_read = seconds(t_read);
    if (!export_dir.empty()) {
      std::filesystem::create_directories(export_dir);
      const std::filesystem::path d = export_dir;
      io::write_table(d / "nodes.npy", mesh.nodes, {.overwrite = true});
      io::write_table(d / "moving.npy", column(moving), {.overwrite = true});
      io::write_table(d / "fixed.npy", column(fixed), {.overwrite = true});
    }
    if (!quality_of.empty()) { // the quality of a displacement computed elsewhere (the GPU machine)
      const auto d = io::read_table(quality_of, {.expect_cols = 3});
      if (d.rows() != mesh.nodes.rows() || mesh.elements() == 0)
        throw Error(ErrorCode::shape_mismatch,
                    fmt::format("{}: {} rows for a mesh of {} nodes and {} elements", quality_of,
                                d.rows(), mesh.nodes.rows(), mesh.elements()));
      Table<double> moved = mesh.nodes;
      for (std::int64_t i = 0; i < d.rows(); ++i)
        for (int k = 0; k < 3; ++k)
          moved(i, k) += d(i, k);
      const auto orient = element_orientation(mesh, mesh.nodes);
      const auto before = mesh_quality(mesh, mesh.nodes, orient);
      const auto after = mesh_quality(mesh, moved, orient);
      fmt::print("quality of {} on {} ({} nodes, {} elements): before min {:.4f} mean {:.4f} "
                 "inverted {}; after min {:.4f} mean {:.4f} inverted {}\n",
                 quality_of, mesh_path, mesh.nodes.rows(), mesh.elements(),
                 before.min_scaled_jacobian, before.mean_scaled_jacobian, before.inverted,
                 after.min_scaled_jacobian, after.mean_scaled_jacobian, after.inverted);
      return 0;
    }
    Motion motion;
    motion.kind = Motion::Kind::translate;
    const auto v = numbers(translate);
    motion.vector = {v.at(0), v.at(1), v.size() > 2 ? v[2] : 0.0};
    DeformOptions o;
    o.kernel = parse_kernel(kernel);
    o.backend = parse_backend(backend);
    o.steps = steps;
    o.on_iteration = [](int k, double rel) {
      if (k % 10 == 0)
        fmt::print(stderr, "  iteration {}: {:.2e}\n", k, rel);
    };
    const auto r = deform_nodes(mesh.nodes, mesh.dim, moving, fixed, motion, o);
    const auto total = r.stats.total();
    const double solve = total.seconds_solve, eval = total.seconds_evaluate,
                 resid = total.boundary_residual;
    const int iters = total.iterations;
    // Kernel evaluations of the final evaluation at the interpolated nodes, per second.
    const double pairs = static_cast<double>(r.stats.interpolated) *
                         static_cast<double>(r.stats.moving + r.stats.fixed) *
                         static_cast<double>(r.stats.steps.size());
    nlohmann::json j{{"source", mesh_path.empty() ? nodes_dir : mesh_path},
                     {"nodes", mesh.nodes.rows()},
                     {"elements", mesh.elements()},
                     {"moving", r.stats.moving},
                     {"fixed", r.stats.fixed},
                     {"interpolated", r.stats.interpolated},
                     {"kernel", kernel},
                     {"backend", backend},
                     {"solver", total.solver},
                     {"iterations", iters},
                     {"boundary_residual", resid},
                     {"seconds_read", secs_read},
                     {"seconds_solve", solve},
                     {"seconds_evaluate", eval},
                     {"seconds_deform", r.stats.seconds},
                     {"evaluate_pairs_per_second", pairs / eval}};
    fmt::print("| nodes | elements | moving | fixed | kernel | backend | solver (iterations) | "
               "boundary residual | read [s] | solve [s] | evaluate [s] (pairs/s) | deform [s] |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    fmt::print("| {} | {} | {} | {} | {} | {} | {} ({}) | {:.1e} | {:.2f} | {:.2f} | {:.2f} "
               "({:.2g}) | {:.2f} |\n",
               mesh.nodes.rows(), mesh.elements(), r.stats.moving, r.stats.fixed, kernel, backend,
               total.solver, iters, resid, secs_read, solve, eval, pairs / eval, r.stats.seconds);
    if (!save_displacement.empty()) { // float32: 12 MB for 10^6 nodes (exact to ~1e-8 here)
      Table<double> d(mesh.nodes.rows(), 3);
      for (std::int64_t i = 0; i < d.rows(); ++i)
        for (int k = 0; k < 3; ++k)
          d(i, k) = r.coords(i, k) - mesh.nodes(i, k);
      io::write_table(save_displacement, d, {.overwrite = true, .npy_float32 = true});
    }
    if (mesh.elements() > 0) {
      const auto t_q = Clock::now();
      const auto orient = element_orientation(mesh, mesh.nodes);
      const auto before = mesh_quality(mesh, mesh.nodes, orient);
      const auto after = mesh_quality(mesh, r.coords, orient);
      const double secs_q = seconds(t_q);
      fmt::print("\nquality (scaled Jacobian): before min {:.4f} mean {:.4f} inverted {}; after "
                 "min {:.4f} mean {:.4f} inverted {} ({:.2f} s for both)\n",
                 before.min_scaled_jacobian, before.mean_scaled_jacobian, before.inverted,
                 after.min_scaled_jacobian, after.mean_scaled_jacobian, after.inverted, secs_q);
      j["quality_before"] = {{"min", before.min_scaled_jacobian},
                             {"mean", before.mean_scaled_jacobian},
                             {"inverted", before.inverted}};
      j["quality_after"] = {{"min", after.min_scaled_jacobian},
                            {"mean", after.mean_scaled_jacobian},
                            {"inverted", after.inverted}};
    }
    if (!json_path.empty())
      std::ofstream(json_path) << j.dump(2) << '\n';
  } catch (const Error &e) {
    fmt::print(stderr, "deform_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
