// Closed triangulated surfaces for the TD-BEM (seed 003): checks, the icosphere, and the orderings
// of the unknowns compared in §6.4.1 / table 4 (natural, Morton, Hilbert).
#include "bem/assembly.hpp"
#include "bem/vec3.hpp"
#include "fmm/fmm3d/octree.hpp"

#include <ksum/error.hpp>
#include <ksum/tdbem.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <unordered_map>

namespace ksum {
namespace {

using bem::cross;
using bem::norm;
using bem::sub;
using bem::V3;

V3 node(const TriangleSurface &s, std::int64_t r) {
  return {s.nodes(r, 0), s.nodes(r, 1), s.nodes(r, 2)};
}

} // namespace

void check_surface(const TriangleSurface &s, const std::string &what) {
  const std::int64_t n = s.nodes.rows(), m = s.elements();
  if (m == 0)
    throw Error(ErrorCode::empty_input, fmt::format("{}: no triangles", what));
  if (static_cast<std::int64_t>(s.triangles.size()) != 3 * m || s.nodes.cols() != 3)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("{}: {} corner indices for {} triangles, nodes {} × {}", what,
                            s.triangles.size(), m, n, s.nodes.cols()));
  auto node_tag = [&](std::int64_t r) {
    return s.node_tags.empty() ? r + 1 : s.node_tags[static_cast<std::size_t>(r)];
  };
  double extent = 0;
  for (std::int64_t r = 0; r < n; ++r)
    for (int a = 0; a < 3; ++a) {
      const double x = s.nodes(r, a);
      if (!std::isfinite(x))
        throw Error(ErrorCode::non_finite, fmt::format("{}: node {} has coordinate {} = {}", what,
                                                       node_tag(r), "xyz"[a], x));
      extent = std::max(extent, std::abs(x));
    }
  for (std::int64_t e = 0; e < m; ++e)
    for (int a = 0; a < 3; ++a) {
      const auto r = s.triangles[static_cast<std::size_t>(3 * e + a)];
      if (r < 0 || r >= n)
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("{}: element {} refers to node row {} of {}", what,
                                s.tags[static_cast<std::size_t>(e)], r, n));
    }
  // Two nodes at one place (a mesh whose pieces were not merged): exact duplicates after
  // quantising at 1e-10 of the extent, found by sorting.
  {
    const double q = 1e-10 * std::max(extent, 1e-300);
    std::vector<std::array<std::int64_t, 3>> key(static_cast<std::size_t>(n));
    for (std::int64_t r = 0; r < n; ++r)
      for (int a = 0; a < 3; ++a)
        key[static_cast<std::size_t>(r)][a] = std::llround(s.nodes(r, a) / q);
    std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return key[a] < key[b]; });
    for (std::size_t p = 1; p < idx.size(); ++p)
      if (key[idx[p]] == key[idx[p - 1]])
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("{}: nodes {} and {} are at the same place ({}, {}, {}): merge "
                                "duplicate nodes (Gmsh: Coherence)",
                                what, node_tag(idx[p - 1]), node_tag(idx[p]), s.nodes(idx[p], 0),
                                s.nodes(idx[p], 1), s.nodes(idx[p], 2)));
  }
  // Degenerate triangles, and every edge shared by exactly two triangles (closed surface).
  std::unordered_map<std::uint64_t, std::pair<int, std::int64_t>> edges;
  edges.reserve(static_cast<std::size_t>(3 * m));
  for (std::int64_t e = 0; e < m; ++e) {
    const auto *t = s.triangles.data() + 3 * e;
    const V3 a = node(s, t[0]), b = node(s, t[1]), c = node(s, t[2]);
    const double longest = std::max({norm(sub(b, a)), norm(sub(c, b)), norm(sub(a, c))});
    const double twice_area = norm(cross(sub(b, a), sub(c, a)));
    if (!(twice_area > 1e-10 * longest * longest))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{}: element {} is degenerate (area {:.3g}, longest edge {:.3g})",
                              what, s.tags[static_cast<std::size_t>(e)], twice_area / 2, longest));
    for (int a2 = 0; a2 < 3; ++a2) {
      auto u = static_cast<std::uint64_t>(t[a2]), v = static_cast<std::uint64_t>(t[(a2 + 1) % 3]);
      if (u > v)
        std::swap(u, v);
      auto &[count, first] = edges[(u << 32) | v];
      if (count++ == 0)
        first = e;
    }
  }
  for (const auto &[key, use] : edges)
    if (use.first != 2) {
      const auto u = static_cast<std::int64_t>(key >> 32),
                 v = static_cast<std::int64_t>(key & 0xffffffffu);
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{}: the surface is not closed: edge ({}, {}) of element {} belongs "
                              "to {} triangle(s), not 2 (the TD-BEM needs a closed surface)",
                              what, node_tag(u), node_tag(v),
                              s.tags[static_cast<std::size_t>(use.second)], use.first));
    }
}

TriangleSurface surface_from_mesh(const Mesh &mesh) {
  TriangleSurface s;
  s.nodes = mesh.nodes;
  s.node_tags = mesh.node_tags;
  const std::string what = mesh.source.empty() ? "mesh" : mesh.source.string();
  for (const auto &b : mesh.blocks) {
    if (b.shape != ElementShape::triangle)
      throw Error(ErrorCode::unsupported,
                  fmt::format("{}: {} elements; the TD-BEM takes a surface of triangles", what,
                              to_string(b.shape)));
    for (std::int64_t e = 0; e < b.size(); ++e) {
      for (int a = 0; a < 3; ++a) // corners first: higher-order triangles are taken as flat
        s.triangles.push_back(
            b.connectivity[static_cast<std::size_t>(e * b.nodes_per_element + a)]);
      s.tags.push_back(b.tags[static_cast<std::size_t>(e)]);
    }
  }
  check_surface(s, what);
  return s;
}

TriangleSurface sphere_surface(double radius, int refinements) {
  if (!(radius > 0) || refinements < 0 || refinements > 9)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("sphere of radius {} refined {} times (radius > 0, 0 … 9 times)",
                            radius, refinements));
  const double p = (1 + std::sqrt(5.0)) / 2;
  std::vector<V3> x = {{-1, p, 0},  {1, p, 0},  {-1, -p, 0}, {1, -p, 0}, {0, -1, p},  {0, 1, p},
                       {0, -1, -p}, {0, 1, -p}, {p, 0, -1},  {p, 0, 1},  {-p, 0, -1}, {-p, 0, 1}};
  std::vector<std::array<std::int64_t, 3>> t = {
      {0, 11, 5},  {0, 5, 1},  {0, 1, 7},  {0, 7, 10}, {0, 10, 11}, {1, 5, 9}, {5, 11, 4},
      {11, 10, 2}, {10, 7, 6}, {7, 1, 8},  {3, 9, 4},  {3, 4, 2},   {3, 2, 6}, {3, 6, 8},
      {3, 8, 9},   {4, 9, 5},  {2, 4, 11}, {6, 2, 10}, {8, 6, 7},   {9, 8, 1}};
  auto unit = [](V3 v) {
    const double l = norm(v);
    return V3{v[0] / l, v[1] / l, v[2] / l};
  };
  for (auto &v : x)
    v = unit(v);
  for (int level = 0; level < refinements; ++level) {
    std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> mid;
    auto midpoint = [&](std::int64_t a, std::int64_t b) {
      const auto key = std::minmax(a, b);
      if (auto it = mid.find(key); it != mid.end())
        return it->second;
      x.push_back(
          unit({(x[a][0] + x[b][0]) / 2, (x[a][1] + x[b][1]) / 2, (x[a][2] + x[b][2]) / 2}));
      return mid[key] = static_cast<std::int64_t>(x.size()) - 1;
    };
    std::vector<std::array<std::int64_t, 3>> next;
    for (const auto &f : t) {
      const auto a = midpoint(f[0], f[1]), b = midpoint(f[1], f[2]), c = midpoint(f[2], f[0]);
      next.push_back({f[0], a, c});
      next.push_back({f[1], b, a});
      next.push_back({f[2], c, b});
      next.push_back({a, b, c});
    }
    t = std::move(next);
  }
  TriangleSurface s;
  s.nodes = Table<double>(static_cast<std::int64_t>(x.size()), 3);
  for (std::size_t r = 0; r < x.size(); ++r)
    for (int a = 0; a < 3; ++a)
      s.nodes(static_cast<std::int64_t>(r), a) = radius * x[r][a];
  for (std::size_t e = 0; e < t.size(); ++e) {
    s.triangles.insert(s.triangles.end(), t[e].begin(), t[e].end());
    s.tags.push_back(static_cast<std::int64_t>(e) + 1);
  }
  return s;
}

double mean_edge_length(const TriangleSurface &surface) {
  return bem::make_geometry(surface).mean_edge;
}

namespace bem {
namespace {

// Morton key: the bits of the three quantised coordinates interleaved (the octree's spread).
std::uint64_t morton(std::uint32_t x, std::uint32_t y, std::uint32_t z) {
  return fmm::morton_spread3(x) << 2 | fmm::morton_spread3(y) << 1 | fmm::morton_spread3(z);
}

// Hilbert key by Skilling's transform ("Programming the Hilbert curve", 2004): the axes'
// coordinates are turned into the transposed Hilbert index, whose bits read out level by level
// (x, y, z) give the index.
std::uint64_t hilbert(std::array<std::uint32_t, 3> x, int bits) {
  const std::uint32_t top = 1u << (bits - 1);
  for (std::uint32_t q = top; q > 1; q >>= 1) { // inverse undo
    const std::uint32_t p = q - 1;
    for (int i = 0; i < 3; ++i) {
      if (x[i] & q) {
        x[0] ^= p;
      } else {
        const std::uint32_t t = (x[0] ^ x[i]) & p;
        x[0] ^= t;
        x[i] ^= t;
      }
    }
  }
  for (int i = 1; i < 3; ++i) // Gray encode
    x[i] ^= x[i - 1];
  std::uint32_t t = 0;
  for (std::uint32_t q = top; q > 1; q >>= 1)
    if (x[2] & q)
      t ^= q - 1;
  for (auto &v : x)
    v ^= t;
  std::uint64_t key = 0;
  for (int b = bits - 1; b >= 0; --b)
    for (int i = 0; i < 3; ++i)
      key = key << 1 | ((x[i] >> b) & 1u);
  return key;
}

} // namespace

std::vector<std::int64_t> order_unknowns(const Table<double> &centroids, TdbemOrdering ordering) {
  const std::int64_t n = centroids.rows();
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (ordering == TdbemOrdering::natural || n < 2)
    return order;
  V3 lo{1e300, 1e300, 1e300}, hi{-1e300, -1e300, -1e300};
  for (std::int64_t i = 0; i < n; ++i)
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::min(lo[a], centroids(i, a));
      hi[a] = std::max(hi[a], centroids(i, a));
    }
  const double span = std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 1e-300});
  const int bits = fmm::morton_bits;
  const double scale = ((1u << bits) - 1) / span;
  std::vector<std::uint64_t> key(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    std::array<std::uint32_t, 3> q;
    for (int a = 0; a < 3; ++a)
      q[a] = static_cast<std::uint32_t>((centroids(i, a) - lo[a]) * scale);
    key[static_cast<std::size_t>(i)] =
        ordering == TdbemOrdering::morton ? morton(q[0], q[1], q[2]) : hilbert(q, bits);
  }
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return key[a] < key[b]; });
  return order;
}

} // namespace bem
} // namespace ksum
