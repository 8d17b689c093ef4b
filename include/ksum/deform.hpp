#pragma once
// RBF mesh deformation (seed 000 §2.3): the displacement of the boundary nodes is interpolated
// component by component with one RBF interpolant (global, seed 000, or partition of unity, seed
// 001), and every other node moves by the interpolant's value at its position.
#include <ksum/direct.hpp>
#include <ksum/global.hpp>
#include <ksum/kernels.hpp>
#include <ksum/table.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ksum {

// The prescribed motion of the moving nodes, as a position at each fraction t ∈ [0, 1] of it.
struct Motion {
  enum class Kind { displacement, translate, rotate, scale };
  Kind kind = Kind::translate;
  Table<double> displacement;          // displacement: one row per moving node, dim columns
  std::array<double, 3> vector{};      // translate
  double angle_degrees = 0;            // rotate: counter-clockwise about `axis` (right-hand rule)
  std::array<double, 3> axis{0, 0, 1}; // rotate in 3D; 2D rotates in the x–y plane
  std::array<double, 3> about{};       // rotate, scale: the fixed point
  double factor = 1; // scale: positions about `about` multiplied by 1 + t(factor − 1)
  // Where the k-th moving node, at x0 before the motion, is at fraction t of it.
  std::array<double, 3> at(double t, const std::array<double, 3> &x0, std::int64_t k) const;
  std::string describe() const;
};

enum class DeformMethod { global, pum };
DeformMethod parse_deform_method(std::string_view name); // "global", "pum"

struct DeformOptions {
  DeformMethod method = DeformMethod::global;
  // The default kernel: the thin-plate spline r² log r with a linear polynomial. Shape-parameter
  // free, so the result does not depend on the mesh's units; of linear, tps, cubic, Wendland C2
  // and Gaussian it kept the shipped examples valid furthest (docs/mesh-deformation.md).
  Kernel kernel = Kernel::tps;
  double eps = 1; // shape parameter (ignored by r, r³, tps)
  // The polynomial part. Default: global linear (or the kernel's minimum degree where higher),
  // so that rigid and affine motions of the whole boundary are reproduced exactly; PUM the
  // kernel's minimum (a patch of boundary nodes may lie on one line or plane).
  int degree = GlobalRbfOptions::kernel_default_degree;
  GlobalSolver solver = GlobalSolver::automatic;
  double tolerance = 1e-10; // the global solver's relative residual (each step)
  int steps = 1;            // the motion applied in this many increments
  Backend backend = Backend::automatic;
  int threads = 0;
  // Called at the start of each step with the step (1-based) and the count; and, from the global
  // solver, with its iteration and relative residual.
  std::function<void(int, int)> on_step{};
  std::function<void(int, double)> on_iteration{};
};

struct DeformStepStats {
  std::string solver;           // "dense", "krylov", "fgp" or "pum"
  int iterations = 0;           // of the global solver (0 for dense and PUM)
  double boundary_residual = 0; // max over boundary nodes and components of |s(y_i) − Δ_i|
  double max_increment = 0;     // the largest boundary increment of the step (its scale)
  double seconds_solve = 0, seconds_evaluate = 0;
};

struct DeformStats {
  std::int64_t moving = 0, fixed = 0, interpolated = 0;
  std::vector<DeformStepStats> steps;
  double seconds = 0;
  // Over the steps: times and iterations summed, the largest residual and increment, the last
  // step's solver.
  DeformStepStats total() const;
};

struct DeformResult {
  Table<double> coords; // n × 3: the moved nodes (moving nodes exactly at their prescribed place)
  DeformStats stats;
};

// nodes: n × 3 (planar 2D meshes: z constant, dim = 2); moving and fixed: node rows, disjoint.
// Every other node is interpolated. Errors: no moving nodes, a row out of range or in both lists,
// a displacement table whose rows do not match the moving nodes, non-finite input.
DeformResult deform_nodes(const Table<double> &nodes, int dim, std::span<const std::int64_t> moving,
                          std::span<const std::int64_t> fixed, const Motion &motion,
                          const DeformOptions &options);

} // namespace ksum
