// RBF mesh deformation on meshes built here (no Gmsh needed): element quality against the ideal
// shapes and hand-computed angles, exact reproduction of affine motions (the linear polynomial
// part), the moving nodes' exact placement, increments, and the contract on bad input.
#include "support/expect_error.hpp"

#include <ksum/deform.hpp>
#include <ksum/error.hpp>
#include <ksum/mesh.hpp>

#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <numbers>

namespace {

using ksum::ElementShape;
using ksum::Table;

ksum::Mesh one_element(ElementShape shape, const std::vector<std::array<double, 3>> &pts) {
  ksum::Mesh m;
  m.dim = ksum::shape_dimension(shape);
  m.nodes = Table<double>(static_cast<std::int64_t>(pts.size()), 3);
  ksum::ElementBlock b;
  b.shape = shape;
  b.nodes_per_element = static_cast<int>(pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i) {
    for (int a = 0; a < 3; ++a)
      m.nodes(static_cast<std::int64_t>(i), a) = pts[i][static_cast<std::size_t>(a)];
    b.connectivity.push_back(static_cast<std::int64_t>(i));
    m.node_tags.push_back(static_cast<std::int64_t>(i) + 1);
  }
  b.tags = {7};
  m.blocks.push_back(b);
  return m;
}

double quality(const ksum::Mesh &m) {
  const auto o = ksum::element_orientation(m, m.nodes);
  return ksum::mesh_quality(m, m.nodes, o).min_scaled_jacobian;
}

TEST(MeshQuality, IdealElementsScoreOne) {
  const double s3 = std::sqrt(3.0), h = std::sqrt(0.5);
  EXPECT_NEAR(
      quality(one_element(ElementShape::triangle, {{0, 0, 0}, {1, 0, 0}, {0.5, s3 / 2, 0}})), 1,
      1e-14);
  EXPECT_NEAR(
      quality(one_element(ElementShape::quadrangle, {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}})),
      1, 1e-14);
  EXPECT_NEAR(quality(one_element(ElementShape::tetrahedron,
                                  {{1, 1, 1}, {1, -1, -1}, {-1, 1, -1}, {-1, -1, 1}})),
              1, 1e-14);
  EXPECT_NEAR(quality(one_element(ElementShape::hexahedron, {{0, 0, 0},
                                                             {1, 0, 0},
                                                             {1, 1, 0},
                                                             {0, 1, 0},
                                                             {0, 0, 1},
                                                             {1, 0, 1},
                                                             {1, 1, 1},
                                                             {0, 1, 1}})),
              1, 1e-14);
  EXPECT_NEAR(
      quality(one_element(
          ElementShape::prism,
          {{0, 0, 0}, {1, 0, 0}, {0.5, s3 / 2, 0}, {0, 0, 1}, {1, 0, 1}, {0.5, s3 / 2, 1}})),
      1, 1e-14);
  EXPECT_NEAR(quality(one_element(ElementShape::pyramid,
                                  {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0.5, 0.5, h}})),
              1, 1e-14);
}

// A rhombus with a 60° angle: the scaled Jacobian is sin 60°; a triangle with angles 30/60/90:
// (2/√3) sin 30°. Mirrored elements (clockwise) score the same: orientation is relative.
TEST(MeshQuality, MatchesTheAnglesOfSkewedAndMirroredElements) {
  const double c = 0.5, s = std::sqrt(3.0) / 2;
  EXPECT_NEAR(quality(one_element(ElementShape::quadrangle,
                                  {{0, 0, 0}, {1, 0, 0}, {1 + c, s, 0}, {c, s, 0}})),
              s, 1e-14);
  EXPECT_NEAR(quality(one_element(ElementShape::quadrangle,
                                  {{0, 0, 0}, {c, s, 0}, {1 + c, s, 0}, {1, 0, 0}})),
              s, 1e-14);
  EXPECT_NEAR(
      quality(one_element(ElementShape::triangle, {{0, 0, 0}, {std::sqrt(3.0), 0, 0}, {0, 1, 0}})),
      2 / std::sqrt(3.0) * 0.5, 1e-14);
}

TEST(MeshQuality, CountsAnElementTurnedInsideOut) {
  auto m = one_element(ElementShape::tetrahedron, {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}});
  const auto o = ksum::element_orientation(m, m.nodes);
  auto moved = m.nodes;
  moved(3, 2) = -0.5; // the apex pushed through the opposite face
  const auto q = ksum::mesh_quality(m, moved, o);
  EXPECT_EQ(q.inverted, 1);
  EXPECT_LT(q.min_scaled_jacobian, 0);
  EXPECT_EQ(q.worst_element, 7);
  EXPECT_EQ(ksum::mesh_quality(m, m.nodes, o).inverted, 0);
}

// One corner of a hexahedron or a prism pushed through the opposite face is seen from its
// neighbours: the element counts as inverted.
TEST(MeshQuality, CountsInvertedHexahedraAndPrisms) {
  const double s3 = std::sqrt(3.0);
  auto hex = one_element(
      ElementShape::hexahedron,
      {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}});
  auto prism =
      one_element(ElementShape::prism,
                  {{0, 0, 0}, {1, 0, 0}, {0.5, s3 / 2, 0}, {0, 0, 1}, {1, 0, 1}, {0.5, s3 / 2, 1}});
  for (auto *m : {&hex, &prism}) {
    const auto o = ksum::element_orientation(*m, m->nodes);
    auto moved = m->nodes;
    moved(m->nodes.rows() - 1, 2) = -0.5; // the last top corner below the bottom face
    const auto q = ksum::mesh_quality(*m, moved, o);
    EXPECT_EQ(q.inverted, 1) << ksum::to_string(m->blocks[0].shape);
    EXPECT_LT(q.min_scaled_jacobian, 0);
    moved(m->nodes.rows() - 1, 2) = std::numeric_limits<double>::infinity();
    EXPECT_EQ(ksum::mesh_quality(*m, moved, o).inverted, 1); // never a NaN that passes
  }
}

// A structured n × n grid of quads on [0, 1]² with a square hole [0.4, 0.6]²: moving = the
// hole's edge, fixed = the outer edge.
struct Grid {
  ksum::Mesh mesh;
  std::vector<std::int64_t> inner, outer, interior;
};

Grid holed_grid(int n) {
  Grid g;
  auto &m = g.mesh;
  m.dim = 2;
  const double h = 1.0 / n;
  auto in_hole = [&](int i, int j) {
    const double x = i * h, y = j * h;
    return x > 0.4 + 1e-12 && x < 0.6 - 1e-12 && y > 0.4 + 1e-12 && y < 0.6 - 1e-12;
  };
  std::vector<std::int64_t> row((n + 1) * (n + 1), -1);
  std::vector<std::array<double, 2>> xy;
  for (int j = 0; j <= n; ++j)
    for (int i = 0; i <= n; ++i)
      if (!in_hole(i, j)) {
        row[j * (n + 1) + i] = static_cast<std::int64_t>(xy.size());
        xy.push_back({i * h, j * h});
      }
  m.nodes = Table<double>(static_cast<std::int64_t>(xy.size()), 3);
  for (std::size_t k = 0; k < xy.size(); ++k) {
    const auto r = static_cast<std::int64_t>(k);
    m.nodes(r, 0) = xy[k][0];
    m.nodes(r, 1) = xy[k][1];
    m.node_tags.push_back(r + 1);
    const double x = xy[k][0], y = xy[k][1];
    const bool outer = x < 1e-12 || y < 1e-12 || x > 1 - 1e-12 || y > 1 - 1e-12;
    const bool inner = x > 0.4 - 1e-12 && x < 0.6 + 1e-12 && y > 0.4 - 1e-12 && y < 0.6 + 1e-12;
    (outer ? g.outer : inner ? g.inner : g.interior).push_back(r);
  }
  ksum::ElementBlock b;
  b.shape = ElementShape::quadrangle;
  b.nodes_per_element = 4;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      const double cx = (i + 0.5) * h, cy = (j + 0.5) * h;
      if (cx > 0.4 && cx < 0.6 && cy > 0.4 && cy < 0.6)
        continue;
      for (const auto &[di, dj] : {std::pair{0, 0}, {1, 0}, {1, 1}, {0, 1}})
        b.connectivity.push_back(row[(j + dj) * (n + 1) + i + di]);
      b.tags.push_back(static_cast<std::int64_t>(b.tags.size()) + 1);
    }
  m.blocks.push_back(b);
  return g;
}

std::vector<std::int64_t> join(std::vector<std::int64_t> a, const std::vector<std::int64_t> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// With every boundary node moving by one affine map, the interpolant with a linear polynomial
// is that map: every interior node must follow it (to the solver's accuracy).
TEST(Deform, AffineBoundaryMotionIsReproducedEverywhere) {
  const auto g = holed_grid(30);
  ksum::Motion rot;
  rot.kind = ksum::Motion::Kind::rotate;
  rot.angle_degrees = 40;
  rot.about = {0.3, 0.2, 0};
  for (const auto kernel : {ksum::Kernel::linear, ksum::Kernel::tps}) {
    for (const int steps : {1, 4}) {
      ksum::DeformOptions o;
      o.kernel = kernel;
      o.steps = steps;
      o.backend = ksum::Backend::cpu;
      const auto r = ksum::deform_nodes(g.mesh.nodes, 2, join(g.inner, g.outer), {}, rot, o);
      double err = 0;
      for (std::int64_t i = 0; i < g.mesh.nodes.rows(); ++i) {
        const auto want = rot.at(1, {g.mesh.nodes(i, 0), g.mesh.nodes(i, 1), 0}, 0);
        err = std::max({err, std::abs(r.coords(i, 0) - want[0]), std::abs(r.coords(i, 1) - want[1]),
                        std::abs(r.coords(i, 2))});
      }
      EXPECT_LT(err, 1e-9) << ksum::kernel_info(kernel).name << " steps " << steps;
      EXPECT_EQ(static_cast<int>(r.stats.steps.size()), steps);
      const auto total = r.stats.total();
      double solve = 0, worst = 0;
      for (const auto &st : r.stats.steps) {
        solve += st.seconds_solve;
        worst = std::max(worst, st.boundary_residual);
      }
      EXPECT_EQ(total.seconds_solve, solve);
      EXPECT_EQ(total.boundary_residual, worst);
      EXPECT_EQ(total.solver, "dense");
    }
  }
}

TEST(Deform, MovingNodesLandExactlyFixedStayAndNothingInverts) {
  const auto g = holed_grid(40);
  ksum::Motion m;
  m.kind = ksum::Motion::Kind::translate;
  m.vector = {0.05, -0.03, 0};
  for (const auto method : {ksum::DeformMethod::global, ksum::DeformMethod::pum}) {
    ksum::DeformOptions o;
    o.method = method;
    o.backend = ksum::Backend::cpu;
    if (method == ksum::DeformMethod::pum) {
      o.kernel = ksum::Kernel::wendland2;
      o.eps = 2;
    }
    const auto r = ksum::deform_nodes(g.mesh.nodes, 2, g.inner, g.outer, m, o);
    double moved = 0, fixed = 0;
    for (const auto i : g.inner)
      moved = std::max({moved, std::abs(r.coords(i, 0) - g.mesh.nodes(i, 0) - 0.05),
                        std::abs(r.coords(i, 1) - g.mesh.nodes(i, 1) + 0.03)});
    for (const auto i : g.outer)
      fixed = std::max({fixed, std::abs(r.coords(i, 0) - g.mesh.nodes(i, 0)),
                        std::abs(r.coords(i, 1) - g.mesh.nodes(i, 1))});
    EXPECT_LE(moved, 1e-14);
    EXPECT_EQ(fixed, 0);
    // The interpolant itself meets the boundary data: no jump between a boundary node and its
    // interpolated neighbours.
    EXPECT_LE(r.stats.steps[0].boundary_residual, 1e-10);
    double interior = 0;
    for (const auto i : g.interior)
      interior = std::max(interior, std::abs(r.coords(i, 0) - g.mesh.nodes(i, 0)));
    EXPECT_GT(interior, 0.01); // the volume moved
    const auto o0 = ksum::element_orientation(g.mesh, g.mesh.nodes);
    const auto q = ksum::mesh_quality(g.mesh, r.coords, o0);
    EXPECT_EQ(q.inverted, 0);
    EXPECT_GT(q.min_scaled_jacobian, 0.5);
    EXPECT_EQ(r.stats.moving, static_cast<std::int64_t>(g.inner.size()));
    EXPECT_EQ(r.stats.interpolated, static_cast<std::int64_t>(g.interior.size()));
  }
}

TEST(Deform, DisplacementTableAndScaleFollowTheirDefinitions) {
  ksum::Motion d;
  d.kind = ksum::Motion::Kind::displacement;
  d.displacement = Table<double>(2, 2);
  d.displacement(1, 0) = 0.5;
  d.displacement(1, 1) = -1;
  const auto p = d.at(0.5, {1, 2, 3}, 1);
  EXPECT_DOUBLE_EQ(p[0], 1.25);
  EXPECT_DOUBLE_EQ(p[1], 1.5);
  EXPECT_DOUBLE_EQ(p[2], 3);
  ksum::Motion s;
  s.kind = ksum::Motion::Kind::scale;
  s.factor = 3;
  s.about = {1, 1, 1};
  const auto q = s.at(1, {2, 1, 0}, 0);
  EXPECT_DOUBLE_EQ(q[0], 4);
  EXPECT_DOUBLE_EQ(q[1], 1);
  EXPECT_DOUBLE_EQ(q[2], -2);
  ksum::Motion r; // 90° about the x axis: y → z
  r.kind = ksum::Motion::Kind::rotate;
  r.angle_degrees = 90;
  r.axis = {2, 0, 0};
  const auto v = r.at(1, {0, 1, 0}, 0);
  EXPECT_NEAR(v[1], 0, 1e-15);
  EXPECT_NEAR(v[2], 1, 1e-15);
}

TEST(Deform, BadInputIsRefusedWithAClearError) {
  const auto g = holed_grid(10);
  ksum::Motion m;
  m.kind = ksum::Motion::Kind::translate;
  m.vector = {0.01, 0, 0};
  const ksum::DeformOptions o;
  const std::vector<std::int64_t> none;
  using ksum::ErrorCode;
  ksum::test::expect_error([&] { (void)ksum::deform_nodes(g.mesh.nodes, 2, none, g.outer, m, o); },
                           ErrorCode::empty_input, "no moving nodes");
  ksum::test::expect_error(
      [&] {
        (void)ksum::deform_nodes(g.mesh.nodes, 2, std::vector<std::int64_t>{0, 100000}, none, m, o);
      },
      ErrorCode::invalid_argument, "moving node 100000");
  ksum::test::expect_error(
      [&] {
        (void)ksum::deform_nodes(g.mesh.nodes, 2, g.inner, join(g.outer, {g.inner[1]}), m, o);
      },
      ErrorCode::invalid_argument, "both moving and fixed");
  ksum::test::expect_error(
      [&] { (void)ksum::deform_nodes(g.mesh.nodes, 2, join(g.inner, {g.inner[0]}), none, m, o); },
      ErrorCode::invalid_argument, "listed twice");
  ksum::Motion d;
  d.kind = ksum::Motion::Kind::displacement;
  d.displacement = Table<double>(static_cast<std::int64_t>(g.inner.size()) - 1, 2);
  ksum::test::expect_error(
      [&] { (void)ksum::deform_nodes(g.mesh.nodes, 2, g.inner, g.outer, d, o); },
      ErrorCode::shape_mismatch, "moving nodes");
  auto steps0 = o;
  steps0.steps = 0;
  ksum::test::expect_error(
      [&] { (void)ksum::deform_nodes(g.mesh.nodes, 2, g.inner, g.outer, m, steps0); },
      ErrorCode::invalid_argument, "steps 0");
  auto bad = g.mesh.nodes;
  bad(3, 1) = std::nan("");
  ksum::test::expect_error([&] { (void)ksum::deform_nodes(bad, 2, g.inner, g.outer, m, o); },
                           ErrorCode::non_finite, "node 3");
  ksum::Motion nan_rotation;
  nan_rotation.kind = ksum::Motion::Kind::rotate;
  nan_rotation.angle_degrees = std::nan("");
  ksum::test::expect_error(
      [&] { (void)ksum::deform_nodes(g.mesh.nodes, 2, g.inner, g.outer, nan_rotation, o); },
      ErrorCode::non_finite, "non-finite");
  ksum::Motion tilt;
  tilt.kind = ksum::Motion::Kind::rotate;
  tilt.angle_degrees = 5;
  tilt.axis = {1, 0, 0};
  ksum::test::expect_error(
      [&] { (void)ksum::deform_nodes(g.mesh.nodes, 2, g.inner, g.outer, tilt, o); },
      ErrorCode::invalid_argument, "z axis");
}

} // namespace
