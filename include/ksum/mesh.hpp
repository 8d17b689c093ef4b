#pragma once
// Unstructured meshes for RBF mesh deformation: nodes, elements, physical groups; element quality;
// Gmsh .msh read and written through the Gmsh SDK (when this build has it); .vtu for ParaView.
#include <ksum/table.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ksum {

// Element families; higher-order elements keep their family and are measured by their corners.
enum class ElementShape {
  point,
  line,
  triangle,
  quadrangle,
  tetrahedron,
  hexahedron,
  prism,
  pyramid
};
int shape_dimension(ElementShape shape) noexcept;
int shape_corners(ElementShape shape) noexcept;
const char *to_string(ElementShape shape) noexcept;

// Elements of one type. Connectivity holds row indices into Mesh::nodes (not Gmsh node tags),
// nodes_per_element per element, corners first (Gmsh's and VTK's order for the linear shapes).
struct ElementBlock {
  ElementShape shape = ElementShape::triangle;
  int gmsh_type = 2; // Gmsh's element type (2: 3-node triangle, 4: 4-node tetrahedron, ...)
  int nodes_per_element = 3;
  std::vector<std::int64_t> connectivity;
  std::vector<std::int64_t> tags; // Gmsh element tags, for messages
  std::int64_t size() const { return static_cast<std::int64_t>(tags.size()); }
};

// A named physical group and the rows of its nodes (sorted, unique).
struct PhysicalGroup {
  int dim = 0, tag = 0;
  std::string name; // empty when the file gives none
  std::vector<std::int64_t> nodes;
  std::string label() const; // the name, or "dim:tag" without one
};

struct Mesh {
  int dim = 0;                         // the highest element dimension (2 or 3)
  Table<double> nodes;                 // n × 3 (z = 0 for planar 2D meshes)
  std::vector<std::int64_t> node_tags; // Gmsh node tags, row by row
  std::vector<ElementBlock> blocks;    // the elements of dimension dim
  std::vector<PhysicalGroup> groups;
  std::filesystem::path source;
  std::int64_t elements() const;
  // The group called `name` (or given as "dim:tag"); Error(invalid_argument) listing the mesh's
  // groups when there is none.
  const PhysicalGroup &group(const std::string &name) const;
};

// Element quality: the scaled Jacobian of an element is the minimum over its corners of the
// Jacobian determinant of the corner's edge vectors divided by the product of their lengths,
// scaled so that the ideal element (equilateral triangle, square, regular tetrahedron, cube, right
// prism on equilateral triangles, pyramid with unit edges) scores 1. Its sign is taken relative to
// the element's orientation in a reference configuration, so an element that turns inside out
// scores ≤ 0 and counts as inverted.
struct MeshQuality {
  std::int64_t elements = 0, inverted = 0;
  double min_scaled_jacobian = 0, mean_scaled_jacobian = 0;
  std::int64_t worst_element = -1; // Gmsh tag of the element with the minimum
};
// Per-element orientation (+1 or −1) of a mesh's elements at `coords` (n × 3), block after block:
// the sign of the sum of its corners' determinants (+1 for a degenerate element, which then
// scores ≤ 0 and counts as inverted in the reference configuration too). The pyramid's apex is
// seen from the four base corners only; higher-order elements are judged by their corners.
std::vector<signed char> element_orientation(const Mesh &mesh, const Table<double> &coords);
// The quality at `coords` relative to `orientation`; per_element (optional) receives the scaled
// Jacobian of every element, block after block.
MeshQuality mesh_quality(const Mesh &mesh, const Table<double> &coords,
                         const std::vector<signed char> &orientation,
                         std::vector<double> *per_element = nullptr);

namespace io {

// True when this build reads and writes .msh (it was built with the Gmsh SDK). Gmsh keeps one
// global model per process: read_mesh and write_mesh initialize and finalize it around each call,
// so a program that drives the Gmsh API itself must not hold a model across them.
bool have_gmsh() noexcept;

// Reads a Gmsh mesh (any format Gmsh reads; 2D: triangles and quadrangles, 3D: tetrahedra,
// hexahedra, prisms and pyramids, any order). Errors name the file: missing, unreadable, no
// elements, mixed 2D/3D in one plane, a 2D mesh not in a plane z = const.
// surface_3d: read only the 2D elements, a surface anywhere in space (a boundary element mesh,
// `ksum tdbem`): no plane required, 3D elements ignored.
Mesh read_mesh(const std::filesystem::path &path, bool surface_3d = false);

struct MeshWriteOptions {
  bool overwrite = false; // false: an existing file is Error(io) and is left untouched
  bool binary = false;    // .msh: binary instead of text
  // .msh: 4.1, or 2.2 for older readers such as OpenFOAM's gmshToFoam (2.2 keeps only the
  // elements of the physical groups, when the mesh has any: Gmsh's rule for that format).
  double msh_version = 4.1;
};
// Writes `mesh` with its nodes moved to `coords` (n × 3). ".msh": the source file re-read by Gmsh
// with every node moved (entities, groups and tags kept); ".vtu": VTK XML unstructured grid with
// the elements of dimension mesh.dim, the point fields (n rows each) and the cell fields (one
// value per element, block after block). Written through a temporary file and renamed.
struct MeshField {
  std::string name;
  Table<double> values; // rows: nodes (point field) or elements (cell field); 1 or 3 columns
};
void write_mesh(const std::filesystem::path &path, const Mesh &mesh, const Table<double> &coords,
                const std::vector<MeshField> &point_fields = {},
                const std::vector<MeshField> &cell_fields = {},
                const MeshWriteOptions &options = {});

} // namespace io
} // namespace ksum
