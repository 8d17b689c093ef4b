// Mesh files: .msh through the Gmsh SDK (every element family, physical groups, round trips with
// moved nodes, errors that name the file) and the .vtu writer. Skipped where the build has no Gmsh.
#include "support/expect_error.hpp"

#include <ksum/error.hpp>
#include <ksum/mesh.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <omp.h>
#include <sstream>

namespace fs = std::filesystem;

namespace {

using ksum::ElementShape;
using ksum::ErrorCode;

// One element of each 3D family (not connected to each other) and a quad face in group
// "bottom"; MSH 2.2 text, which Gmsh reads as it reads its newer formats.
const char *mixed3d = R"($MeshFormat
2.2 0 8
$EndMeshFormat
$PhysicalNames
2
2 1 "bottom"
3 2 "solid"
$EndPhysicalNames
$Nodes
23
1 0 0 0
2 1 0 0
3 1 1 0
4 0 1 0
5 0 0 1
6 1 0 1
7 1 1 1
8 0 1 1
9 2 0 0
10 3 0 0
11 2 1 0
12 2 0 1
13 3 0 1
14 2 1 1
15 4 0 0
16 5 0 0
17 4 1 0
18 4 0 1
19 6 0 0
20 7 0 0
21 7 1 0
22 6 1 0
23 6.5 0.5 0.7071067811865476
$EndNodes
$Elements
5
1 3 2 1 1 1 4 3 2
2 5 2 2 2 1 2 3 4 5 6 7 8
3 6 2 2 2 9 10 11 12 13 14
4 4 2 2 2 15 16 17 18
5 7 2 2 2 19 20 21 22 23
$EndElements
)";

const char *mixed2d = R"($MeshFormat
2.2 0 8
$EndMeshFormat
$PhysicalNames
2
1 1 "left"
2 2 "plate"
$EndPhysicalNames
$Nodes
5
1 0 0 0
2 1 0 0
3 1 1 0
4 0 1 0
5 2 0.5 0
$EndNodes
$Elements
4
1 1 2 1 1 1 4
2 3 2 2 2 1 2 3 4
3 2 2 2 2 2 5 3
4 1 2 0 0 2 3
$EndElements
)";

class MeshIo : public ::testing::Test {
protected:
  void SetUp() override {
    if (!ksum::io::have_gmsh())
      GTEST_SKIP() << "built without the Gmsh SDK";
    dir = fs::temp_directory_path() /
          ("ksum_mesh_" +
           std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path write(const std::string &name, const std::string &text) const {
    std::ofstream(dir / name) << text;
    return dir / name;
  }
  fs::path dir;
};

TEST_F(MeshIo, ReadsEvery3DFamilyAndThePhysicalGroups) {
  const auto m = ksum::io::read_mesh(write("mixed.msh", mixed3d));
  EXPECT_EQ(m.dim, 3);
  EXPECT_EQ(m.nodes.rows(), 23);
  ASSERT_EQ(m.blocks.size(), 4u);
  std::vector<ElementShape> shapes;
  for (const auto &b : m.blocks) {
    shapes.push_back(b.shape);
    EXPECT_EQ(b.size(), 1);
  }
  for (const auto s : {ElementShape::hexahedron, ElementShape::prism, ElementShape::tetrahedron,
                       ElementShape::pyramid})
    EXPECT_NE(std::find(shapes.begin(), shapes.end(), s), shapes.end()) << ksum::to_string(s);
  const auto &bottom = m.group("bottom");
  EXPECT_EQ(bottom.dim, 2);
  ASSERT_EQ(bottom.nodes.size(), 4u);
  for (const auto r : bottom.nodes)
    EXPECT_EQ(m.nodes(r, 2), 0.0);
  EXPECT_EQ(m.group("3:2").name, "solid");
  const auto o = ksum::element_orientation(m, m.nodes);
  const auto q = ksum::mesh_quality(m, m.nodes, o);
  EXPECT_EQ(q.inverted, 0);
  EXPECT_EQ(q.elements, 4);
  // The corner tetrahedron's corner (1, 0, 0): det 1 over edge lengths √2 · 1 · √2, times √2.
  EXPECT_NEAR(q.min_scaled_jacobian, std::sqrt(0.5), 1e-12);
}

// Gmsh sets OpenMP's thread count to its own (1); reading and writing must not leave it so.
TEST_F(MeshIo, LeavesOpenMpThreadCountAsItWas) {
  omp_set_num_threads(3);
  const auto m = ksum::io::read_mesh(write("mixed.msh", mixed3d));
  EXPECT_EQ(omp_get_max_threads(), 3);
  ksum::io::write_mesh(dir / "w.msh", m, m.nodes);
  EXPECT_EQ(omp_get_max_threads(), 3);
}

TEST_F(MeshIo, Reads2DTrianglesAndQuadsInOnePlane) {
  const auto m = ksum::io::read_mesh(write("plate.msh", mixed2d));
  EXPECT_EQ(m.dim, 2);
  EXPECT_EQ(m.elements(), 2);
  EXPECT_EQ(m.group("left").nodes.size(), 2u);
}

// Second-order triangles: the family and the node count are kept, quality uses the corners.
TEST_F(MeshIo, ReadsSecondOrderElementsByTheirCorners) {
  const auto m = ksum::io::read_mesh(write("tri6.msh", R"($MeshFormat
2.2 0 8
$EndMeshFormat
$Nodes
6
1 0 0 0
2 1 0 0
3 0.5 0.8660254037844386 0
4 0.5 0 0
5 0.75 0.4330127018922193 0
6 0.25 0.4330127018922193 0
$EndNodes
$Elements
1
1 9 2 0 1 1 2 3 4 5 6
$EndElements
)"));
  ASSERT_EQ(m.blocks.size(), 1u);
  EXPECT_EQ(m.blocks[0].shape, ElementShape::triangle);
  EXPECT_EQ(m.blocks[0].nodes_per_element, 6);
  const auto q = ksum::mesh_quality(m, m.nodes, ksum::element_orientation(m, m.nodes));
  EXPECT_NEAR(q.min_scaled_jacobian, 1, 1e-12);
}

TEST_F(MeshIo, RoundTripKeepsTagsGroupsAndMovedNodes) {
  const auto m = ksum::io::read_mesh(write("mixed.msh", mixed3d));
  auto moved = m.nodes;
  for (std::int64_t i = 0; i < moved.rows(); ++i)
    moved(i, 0) += 0.1 * moved(i, 2) + 1.0 / 3.0;
  for (const bool binary : {false, true}) {
    const auto out = dir / (binary ? "b.msh" : "t.msh");
    ksum::io::write_mesh(out, m, moved, {}, {}, {.binary = binary});
    const auto back = ksum::io::read_mesh(out);
    ASSERT_EQ(back.nodes.rows(), m.nodes.rows());
    EXPECT_EQ(back.node_tags, m.node_tags);
    EXPECT_EQ(back.elements(), m.elements());
    EXPECT_EQ(back.group("bottom").nodes, m.group("bottom").nodes);
    double err = 0;
    for (std::int64_t i = 0; i < moved.rows(); ++i)
      for (int a = 0; a < 3; ++a)
        err = std::max(err, std::abs(back.nodes(i, a) - moved(i, a)));
    EXPECT_LE(err, binary ? 0.0 : 1e-15);
  }
  ksum::test::expect_error([&] { ksum::io::write_mesh(dir / "t.msh", m, moved); }, ErrorCode::io,
                           "exists");
}

TEST_F(MeshIo, VtuHoldsEveryArrayItAnnounces) {
  const auto m = ksum::io::read_mesh(write("mixed.msh", mixed3d));
  ksum::Table<double> disp(m.nodes.rows(), 3, 0.5), q(m.elements(), 1, 1.0);
  const auto out = dir / "m.vtu";
  ksum::io::write_mesh(out, m, m.nodes, {{"displacement", disp}}, {{"quality", q}});
  std::ifstream f(out, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("NumberOfPoints=\"23\" NumberOfCells=\"4\""), std::string::npos);
  EXPECT_NE(text.find("Name=\"displacement\" NumberOfComponents=\"3\""), std::string::npos);
  // Appended arrays: each a UInt64 byte count and the bytes. displacement 23·3, quality 4, points
  // 23·3 doubles; connectivity 8+6+4+5 and offsets 4 Int64; types 4 bytes.
  const std::size_t payload = (69 + 4 + 69) * 8 + (23 + 4) * 8 + 4 + 6 * 8;
  const auto start = text.find("encoding=\"raw\">\n_");
  ASSERT_NE(start, std::string::npos);
  const auto end = text.find("\n</AppendedData>");
  EXPECT_EQ(end - (start + 17), payload);
  // The wedge is written in VTK's order: each triangle reversed (Gmsh's faces the other way).
  // Connectivity follows displacement, quality and points (each with its 8-byte size).
  std::size_t at = start + 17 + (69 + 4 + 69) * 8 + 3 * 8 + 8, corners = 0;
  for (const auto &b : m.blocks) {
    if (b.shape == ElementShape::prism) {
      std::int64_t conn[6];
      std::memcpy(conn, text.data() + at + corners * 8, sizeof conn);
      const std::int64_t want[6] = {8, 10, 9, 11, 13, 12}; // rows of nodes 9, 11, 10, 12, 14, 13
      for (int k = 0; k < 6; ++k)
        EXPECT_EQ(conn[k], want[k]) << k;
    }
    corners += static_cast<std::size_t>(ksum::shape_corners(b.shape) * b.size());
  }
  ksum::test::expect_error(
      [&] {
        ksum::io::write_mesh(dir / "bad.vtu", m, m.nodes, {{"short", q}});
      },
      ErrorCode::shape_mismatch, "point field 'short'");
  ksum::test::expect_error([&] { ksum::io::write_mesh(dir / "m.obj", m, m.nodes); },
                           ErrorCode::invalid_argument, "unknown mesh format");
}

TEST_F(MeshIo, ShippedExamplesAreValidMeshesWithTheirGroups) {
  const fs::path ex = KSUM_EXAMPLES_DIR;
  const auto naca = ksum::io::read_mesh(ex / "naca0012.msh");
  EXPECT_EQ(naca.dim, 2);
  EXPECT_GT(naca.group("airfoil").nodes.size(), 100u);
  EXPECT_GT(naca.group("farfield").nodes.size(), 40u);
  const auto sphere = ksum::io::read_mesh(ex / "sphere_box.msh");
  EXPECT_EQ(sphere.dim, 3);
  ASSERT_EQ(sphere.blocks.size(), 1u);
  EXPECT_EQ(sphere.blocks[0].shape, ElementShape::tetrahedron);
  for (const auto *m : {&naca, &sphere}) {
    const auto q = ksum::mesh_quality(*m, m->nodes, ksum::element_orientation(*m, m->nodes));
    EXPECT_EQ(q.inverted, 0);
    EXPECT_GT(q.min_scaled_jacobian, 0.1);
  }
  // Every sphere node lies on the sphere of radius 0.5.
  double err = 0;
  for (const auto r : sphere.group("sphere").nodes)
    err = std::max(
        err,
        std::abs(std::hypot(sphere.nodes(r, 0), sphere.nodes(r, 1), sphere.nodes(r, 2)) - 0.5));
  EXPECT_LT(err, 1e-6);
}

TEST_F(MeshIo, BadFilesAndNamesAreClearErrors) {
  ksum::test::expect_error([&] { (void)ksum::io::read_mesh(dir / "missing.msh"); }, ErrorCode::io,
                           "missing.msh");
  const auto garbage = write("garbage.msh", "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 2 "
                                            "1 2\nnot numbers\n");
  ksum::test::expect_error([&] { (void)ksum::io::read_mesh(garbage); }, ErrorCode::parse,
                           "garbage.msh");
  const auto lines = write("lines.msh", "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n2\n1 0 0 "
                                        "0\n2 1 0 0\n$EndNodes\n$Elements\n1\n1 1 2 0 1 1 "
                                        "2\n$EndElements\n");
  ksum::test::expect_error([&] { (void)ksum::io::read_mesh(lines); }, ErrorCode::empty_input,
                           "no 2D or 3D elements");
  std::string tilted = mixed2d;
  tilted.replace(tilted.find("5 2 0.5 0"), 9, "5 2 0.5 1");
  ksum::test::expect_error([&] { (void)ksum::io::read_mesh(write("tilted.msh", tilted)); },
                           ErrorCode::unsupported, "plane z = const");
  const auto m = ksum::io::read_mesh(write("plate.msh", mixed2d));
  ksum::test::expect_error([&] { (void)m.group("wing"); }, ErrorCode::invalid_argument,
                           "no physical group 'wing'; the mesh has left (1D, 2 nodes), plate");
}

} // namespace
