// Mesh bookkeeping shared by every build, the .vtu writer (VTK XML, appended raw binary) and the
// extension dispatch of write_mesh; .msh is read and written in msh_gmsh.cpp (Gmsh SDK).
#include "io/io_detail.hpp"
#include "io/mesh_detail.hpp"

#include <ksum/mesh.hpp>

#include <algorithm>
#include <cstring>
#include <fmt/format.h>

namespace ksum {

int shape_dimension(ElementShape s) noexcept {
  switch (s) {
  case ElementShape::point:
    return 0;
  case ElementShape::line:
    return 1;
  case ElementShape::triangle:
  case ElementShape::quadrangle:
    return 2;
  default:
    return 3;
  }
}

int shape_corners(ElementShape s) noexcept {
  switch (s) {
  case ElementShape::point:
    return 1;
  case ElementShape::line:
    return 2;
  case ElementShape::triangle:
    return 3;
  case ElementShape::quadrangle:
  case ElementShape::tetrahedron:
    return 4;
  case ElementShape::hexahedron:
    return 8;
  case ElementShape::prism:
    return 6;
  case ElementShape::pyramid:
    return 5;
  }
  return 0;
}

const char *to_string(ElementShape s) noexcept {
  switch (s) {
  case ElementShape::point:
    return "point";
  case ElementShape::line:
    return "line";
  case ElementShape::triangle:
    return "triangle";
  case ElementShape::quadrangle:
    return "quadrangle";
  case ElementShape::tetrahedron:
    return "tetrahedron";
  case ElementShape::hexahedron:
    return "hexahedron";
  case ElementShape::prism:
    return "prism";
  case ElementShape::pyramid:
    return "pyramid";
  }
  return "?";
}

std::string PhysicalGroup::label() const {
  return name.empty() ? fmt::format("{}:{}", dim, tag) : name;
}

std::int64_t Mesh::elements() const {
  std::int64_t n = 0;
  for (const auto &b : blocks)
    n += b.size();
  return n;
}

const PhysicalGroup &Mesh::group(const std::string &name) const {
  for (const auto &g : groups)
    if (g.name == name || fmt::format("{}:{}", g.dim, g.tag) == name)
      return g;
  std::string known;
  for (const auto &g : groups)
    known += fmt::format("{}{} ({}D, {} nodes)", known.empty() ? "" : ", ", g.label(), g.dim,
                         g.nodes.size());
  throw Error(ErrorCode::invalid_argument,
              fmt::format("{}: no physical group '{}'; the mesh has {}",
                          io::detail::display(source), name,
                          known.empty() ? "no physical groups" : known));
}

namespace io {
namespace {

int vtk_type(ElementShape s) {
  switch (s) {
  case ElementShape::point:
    return 1;
  case ElementShape::line:
    return 3;
  case ElementShape::triangle:
    return 5;
  case ElementShape::quadrangle:
    return 9;
  case ElementShape::tetrahedron:
    return 10;
  case ElementShape::hexahedron:
    return 12;
  case ElementShape::prism:
    return 13;
  case ElementShape::pyramid:
    return 14;
  }
  return 0;
}

// VTK's wedge has its first triangle facing away from the second; Gmsh's faces towards it.
constexpr int wedge_from_gmsh[6] = {0, 2, 1, 3, 5, 4};

template <class T> void append(std::string &blob, const std::vector<T> &v) {
  const std::uint64_t bytes = v.size() * sizeof(T);
  blob.append(reinterpret_cast<const char *>(&bytes), sizeof bytes);
  blob.append(reinterpret_cast<const char *>(v.data()), bytes);
}

void check_field(const MeshField &f, std::int64_t rows, const char *kind,
                 const std::filesystem::path &path) {
  if (f.values.rows() != rows || (f.values.cols() != 1 && f.values.cols() != 3))
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("{}: {} field '{}' is {} × {} (expected {} rows of 1 or 3 values)",
                            detail::display(path), kind, f.name, f.values.rows(), f.values.cols(),
                            rows));
}

void write_vtu(const std::filesystem::path &path, const Mesh &mesh, const Table<double> &coords,
               const std::vector<MeshField> &point_fields,
               const std::vector<MeshField> &cell_fields, bool overwrite) {
  const std::int64_t n = coords.rows(), m = mesh.elements();
  for (const auto &f : point_fields)
    check_field(f, n, "point", path);
  for (const auto &f : cell_fields)
    check_field(f, m, "cell", path);
  std::string xml =
      fmt::format("<?xml version=\"1.0\"?>\n<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" "
                  "byte_order=\"LittleEndian\" header_type=\"UInt64\">\n<UnstructuredGrid>\n<Piece "
                  "NumberOfPoints=\"{}\" NumberOfCells=\"{}\">\n",
                  n, m);
  std::string blob;
  auto array = [&](const char *type, const std::string &name, std::int64_t comps,
                   const auto &values) {
    xml += fmt::format("<DataArray type=\"{}\"{} NumberOfComponents=\"{}\" format=\"appended\" "
                       "offset=\"{}\"/>\n",
                       type, name.empty() ? "" : fmt::format(" Name=\"{}\"", name), comps,
                       blob.size());
    append(blob, values);
  };
  auto fields = [&](const std::vector<MeshField> &fs) {
    for (const auto &f : fs) {
      std::vector<double> v(static_cast<std::size_t>(f.values.rows() * f.values.cols()));
      for (std::int64_t i = 0; i < f.values.rows(); ++i)
        for (std::int64_t c = 0; c < f.values.cols(); ++c)
          v[static_cast<std::size_t>(i * f.values.cols() + c)] = f.values(i, c);
      array("Float64", f.name, f.values.cols(), v);
    }
  };
  xml += "<PointData>\n";
  fields(point_fields);
  xml += "</PointData>\n<CellData>\n";
  fields(cell_fields);
  xml += "</CellData>\n<Points>\n";
  std::vector<double> pts(static_cast<std::size_t>(3 * n));
  for (std::int64_t i = 0; i < n; ++i)
    for (int a = 0; a < 3; ++a)
      pts[static_cast<std::size_t>(3 * i + a)] = coords(i, a);
  array("Float64", "", 3, pts);
  xml += "</Points>\n<Cells>\n";
  std::vector<std::int64_t> conn, offsets;
  std::vector<std::uint8_t> types;
  offsets.reserve(static_cast<std::size_t>(m));
  types.reserve(static_cast<std::size_t>(m));
  for (const auto &b : mesh.blocks) {
    const int corners = shape_corners(b.shape);
    for (std::int64_t e = 0; e < b.size(); ++e) {
      const std::int64_t *nodes = b.connectivity.data() + e * b.nodes_per_element;
      for (int k = 0; k < corners; ++k)
        conn.push_back(nodes[b.shape == ElementShape::prism ? wedge_from_gmsh[k] : k]);
      offsets.push_back(static_cast<std::int64_t>(conn.size()));
      types.push_back(static_cast<std::uint8_t>(vtk_type(b.shape)));
    }
  }
  array("Int64", "connectivity", 1, conn);
  array("Int64", "offsets", 1, offsets);
  array("UInt8", "types", 1, types);
  xml += "</Cells>\n</Piece>\n</UnstructuredGrid>\n<AppendedData encoding=\"raw\">\n_";
  detail::write_atomically(path, overwrite, [&](std::FILE *out) {
    detail::write_bytes(out, xml, path);
    detail::write_bytes(out, blob, path);
    detail::write_bytes(out, "\n</AppendedData>\n</VTKFile>\n", path);
  });
}

} // namespace

void write_mesh(const std::filesystem::path &path, const Mesh &mesh, const Table<double> &coords,
                const std::vector<MeshField> &point_fields,
                const std::vector<MeshField> &cell_fields, const MeshWriteOptions &options) {
  if (coords.rows() != mesh.nodes.rows() || coords.cols() != 3)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("{}: coordinates {} × {} for a mesh of {} nodes", detail::display(path),
                            coords.rows(), coords.cols(), mesh.nodes.rows()));
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (ext == ".vtu")
    return write_vtu(path, mesh, coords, point_fields, cell_fields, options.overwrite);
  if (ext == ".msh")
    return detail::write_msh(path, mesh, coords, options);
  throw Error(ErrorCode::invalid_argument,
              fmt::format("{}: unknown mesh format '{}' (expected .msh or .vtu)",
                          detail::display(path), ext));
}

} // namespace io
} // namespace ksum
