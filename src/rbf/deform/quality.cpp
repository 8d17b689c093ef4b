// Element quality as the scaled Jacobian (mesh.hpp): at each corner, the determinant of the edge
// vectors to its neighbouring corners over the product of their lengths.
#include <ksum/error.hpp>
#include <ksum/mesh.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <limits>

namespace ksum {
namespace {

// A corner and its neighbours, ordered so that the determinant is positive for an element in
// Gmsh's orientation: 2D shapes take the first two.
struct Corner {
  int at, n[3];
};

struct ShapeCorners {
  std::array<Corner, 8> c{};
  int count = 0, edges = 0;
  double scale = 1; // makes the ideal element score 1
};

ShapeCorners corners_of(ElementShape s) {
  const double tri = 2 / std::sqrt(3.0);
  switch (s) {
  case ElementShape::triangle:
    return {{{{0, {1, 2, 0}}, {1, {2, 0, 0}}, {2, {0, 1, 0}}}}, 3, 2, tri};
  case ElementShape::quadrangle:
    return {{{{0, {1, 3, 0}}, {1, {2, 0, 0}}, {2, {3, 1, 0}}, {3, {0, 2, 0}}}}, 4, 2, 1};
  case ElementShape::tetrahedron:
    return {
        {{{0, {1, 2, 3}}, {1, {2, 0, 3}}, {2, {0, 1, 3}}, {3, {0, 2, 1}}}}, 4, 3, std::sqrt(2.0)};
  case ElementShape::hexahedron:
    return {{{{0, {1, 3, 4}},
              {1, {2, 0, 5}},
              {2, {3, 1, 6}},
              {3, {0, 2, 7}},
              {4, {7, 5, 0}},
              {5, {4, 6, 1}},
              {6, {5, 7, 2}},
              {7, {6, 4, 3}}}},
            8,
            3,
            1};
  case ElementShape::prism:
    return {{{{0, {1, 2, 3}},
              {1, {2, 0, 4}},
              {2, {0, 1, 5}},
              {3, {5, 4, 0}},
              {4, {3, 5, 1}},
              {5, {4, 3, 2}}}},
            6,
            3,
            tri};
  case ElementShape::pyramid: // the apex is seen from the four base corners
    return {
        {{{0, {1, 3, 4}}, {1, {2, 0, 4}}, {2, {3, 1, 4}}, {3, {0, 2, 4}}}}, 4, 3, std::sqrt(2.0)};
  default:
    return {};
  }
}

// The corners' normalised determinants of element e of block b (unsigned orientation).
template <class F>
void for_each_corner(const ElementBlock &b, std::int64_t e, const Table<double> &x,
                     const ShapeCorners &sc, F &&f) {
  const std::int64_t *nodes = b.connectivity.data() + e * b.nodes_per_element;
  for (int k = 0; k < sc.count; ++k) {
    const Corner &c = sc.c[static_cast<std::size_t>(k)];
    const std::int64_t o = nodes[c.at];
    double v[3][3];
    double len = 1;
    for (int j = 0; j < sc.edges; ++j) {
      const std::int64_t m = nodes[c.n[j]];
      double l2 = 0;
      for (int a = 0; a < 3; ++a) {
        v[j][a] = x(m, a) - x(o, a);
        l2 += v[j][a] * v[j][a];
      }
      len *= std::sqrt(l2);
    }
    const double det = sc.edges == 2 ? v[0][0] * v[1][1] - v[0][1] * v[1][0]
                                     : v[0][0] * (v[1][1] * v[2][2] - v[1][2] * v[2][1]) -
                                           v[0][1] * (v[1][0] * v[2][2] - v[1][2] * v[2][0]) +
                                           v[0][2] * (v[1][0] * v[2][1] - v[1][1] * v[2][0]);
    // A collapsed corner scores 0; a non-finite one (a node sent to infinity) scores −∞, so
    // either counts as inverted instead of passing as NaN.
    const double n = len > 0 ? det / len * sc.scale : 0.0;
    f(det, std::isfinite(n) ? n : -std::numeric_limits<double>::infinity());
  }
}

} // namespace

std::vector<signed char> element_orientation(const Mesh &mesh, const Table<double> &coords) {
  std::vector<signed char> out;
  out.reserve(static_cast<std::size_t>(mesh.elements()));
  for (const auto &b : mesh.blocks) {
    const auto sc = corners_of(b.shape);
    const std::size_t base = out.size();
    out.resize(base + static_cast<std::size_t>(b.size()));
#pragma omp parallel for schedule(static)
    for (std::int64_t e = 0; e < b.size(); ++e) {
      double sum = 0;
      for_each_corner(b, e, coords, sc, [&](double det, double) { sum += det; });
      out[base + static_cast<std::size_t>(e)] = sum < 0 ? -1 : 1;
    }
  }
  return out;
}

MeshQuality mesh_quality(const Mesh &mesh, const Table<double> &coords,
                         const std::vector<signed char> &orientation,
                         std::vector<double> *per_element) {
  if (static_cast<std::int64_t>(orientation.size()) != mesh.elements())
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("mesh quality: {} orientations for {} elements", orientation.size(),
                            mesh.elements()));
  if (coords.rows() != mesh.nodes.rows() || coords.cols() != 3)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("mesh quality: coordinates {} × {} for a mesh of {} nodes",
                            coords.rows(), coords.cols(), mesh.nodes.rows()));
  MeshQuality q;
  q.elements = mesh.elements();
  if (per_element)
    per_element->assign(static_cast<std::size_t>(q.elements), 0.0);
  double min_all = std::numeric_limits<double>::infinity(), sum_all = 0;
  std::size_t base = 0;
  for (const auto &b : mesh.blocks) {
    const auto sc = corners_of(b.shape);
    double bmin = std::numeric_limits<double>::infinity(), bsum = 0;
    std::int64_t binv = 0, bworst = -1;
#pragma omp parallel
    {
      double tmin = std::numeric_limits<double>::infinity(), tsum = 0;
      std::int64_t tinv = 0, tworst = -1;
#pragma omp for schedule(static) nowait
      for (std::int64_t e = 0; e < b.size(); ++e) {
        const double s = orientation[base + static_cast<std::size_t>(e)];
        double sj = std::numeric_limits<double>::infinity();
        for_each_corner(b, e, coords, sc, [&](double, double n) { sj = std::min(sj, s * n); });
        if (per_element)
          (*per_element)[base + static_cast<std::size_t>(e)] = sj;
        tsum += sj;
        tinv += sj <= 0;
        if (sj < tmin) {
          tmin = sj;
          tworst = e;
        }
      }
#pragma omp critical
      {
        bsum += tsum;
        binv += tinv;
        if (tmin < bmin || (tmin == bmin && tworst < bworst)) {
          bmin = tmin;
          bworst = tworst;
        }
      }
    }
    sum_all += bsum;
    q.inverted += binv;
    if (bmin < min_all) {
      min_all = bmin;
      q.worst_element = b.tags.empty() ? bworst : b.tags[static_cast<std::size_t>(bworst)];
    }
    base += static_cast<std::size_t>(b.size());
  }
  q.min_scaled_jacobian = q.elements > 0 ? min_all : 0;
  q.mean_scaled_jacobian = q.elements > 0 ? sum_all / static_cast<double>(q.elements) : 0;
  return q;
}

} // namespace ksum
