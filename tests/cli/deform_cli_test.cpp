// ksum deform end to end on the shipped examples (examples/deform): boundary nodes land exactly,
// fixed nodes stay, the volume follows without inverting; bad input gets a clear error.
#include "support/cli_run.hpp"

#include <ksum/io.hpp>
#include <ksum/mesh.hpp>

#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>

namespace {

class DeformCli : public Cli {
protected:
  void SetUp() override {
    if (!ksum::io::have_gmsh())
      GTEST_SKIP() << "built without the Gmsh SDK";
    Cli::SetUp();
  }
  std::string example(const std::string &name) const {
    return std::string(KSUM_EXAMPLES_DIR) + "/" + name;
  }
};

// The largest distance between where the group's nodes are and where `want` puts them.
template <class F>
double group_error(const ksum::Mesh &before, const ksum::Mesh &after, const std::string &group,
                   F &&want) {
  double err = 0;
  for (const auto r : before.group(group).nodes) {
    const auto w = want(before.nodes(r, 0), before.nodes(r, 1), before.nodes(r, 2));
    for (int a = 0; a < 3; ++a)
      err = std::max(err, std::abs(after.nodes(r, a) - w[static_cast<std::size_t>(a)]));
  }
  return err;
}

std::int64_t inverted(const ksum::Mesh &before, const ksum::Mesh &after) {
  return ksum::mesh_quality(after, after.nodes, ksum::element_orientation(before, before.nodes))
      .inverted;
}

TEST_F(DeformCli, AirfoilRotatedTenDegreesInItsBox) {
  const auto in = example("naca0012.msh");
  const auto r =
      ksum("deform --mesh " + in +
           " --moving airfoil --fixed farfield --rotate 10 "
           "--about 0.25,0 -o " +
           path("rot.msh") + " --vtu " + path("rot.vtu") + " --report " + path("rot.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("quality before"), std::string::npos) << r.output;
  const auto m0 = ksum::io::read_mesh(in), m1 = ksum::io::read_mesh(path("rot.msh"));
  ASSERT_EQ(m1.node_tags, m0.node_tags);
  const double c = std::cos(std::numbers::pi / 18), s = std::sin(std::numbers::pi / 18);
  EXPECT_LE(
      group_error(m0, m1, "airfoil",
                  [&](double x, double y, double z) {
                    return std::array{0.25 + c * (x - 0.25) - s * y, s * (x - 0.25) + c * y, z};
                  }),
      1e-10);
  EXPECT_EQ(group_error(m0, m1, "farfield",
                        [](double x, double y, double z) {
                          return std::array{x, y, z};
                        }),
            0.0);
  EXPECT_EQ(inverted(m0, m1), 0);
  // The moving nodes are placed by the motion; the interpolant itself must meet them too, or the
  // volume next to the airfoil would jump. boundary_residual is max |s(y_i) − Δ_i|.
  std::ifstream report(path("rot.json"));
  const auto j = nlohmann::json::parse(report);
  EXPECT_LE(j["steps"][0]["boundary_residual"].get<double>(), 1e-10);
  EXPECT_EQ(j["quality_after"]["inverted"].get<int>(), 0);
  EXPECT_EQ(j["moving"].get<int>(), 204);
  EXPECT_TRUE(std::filesystem::file_size(path("rot.vtu")) > 100000);
}

TEST_F(DeformCli, SphereTranslatedInItsBoxInTwoSteps) {
  const auto in = example("sphere_box.msh");
  const auto r = ksum("deform --mesh " + in +
                      " --moving sphere --fixed box --translate "
                      "0.3,0.1,0 --steps 2 --binary -o " +
                      path("moved.msh") + " --report " + path("moved.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto m0 = ksum::io::read_mesh(in), m1 = ksum::io::read_mesh(path("moved.msh"));
  EXPECT_LE(group_error(m0, m1, "sphere",
                        [](double x, double y, double z) {
                          return std::array{x + 0.3, y + 0.1, z};
                        }),
            1e-10);
  EXPECT_EQ(group_error(m0, m1, "box",
                        [](double x, double y, double z) {
                          return std::array{x, y, z};
                        }),
            0.0);
  EXPECT_EQ(inverted(m0, m1), 0);
  double volume_moved = 0; // the nodes near the sphere follow it
  for (std::int64_t i = 0; i < m0.nodes.rows(); ++i)
    if (std::hypot(m0.nodes(i, 0), m0.nodes(i, 1), m0.nodes(i, 2)) > 0.55)
      volume_moved = std::max(volume_moved, m1.nodes(i, 0) - m0.nodes(i, 0));
  EXPECT_GT(volume_moved, 0.2);
  std::ifstream report(path("moved.json"));
  const auto j = nlohmann::json::parse(report);
  ASSERT_EQ(j["steps"].size(), 2u);
  for (const auto &step : j["steps"])
    EXPECT_LE(step["boundary_residual"].get<double>(), 1e-10);
}

// MSH 2.2 for older readers: the result reads back with the same nodes.
TEST_F(DeformCli, WritesMsh22OnRequest) {
  const auto in = example("naca0012.msh");
  ASSERT_EQ(ksum("deform --mesh " + in +
                 " --moving airfoil --fixed farfield --translate 0.01,0 "
                 "--msh-version 2.2 -o " +
                 path("v22.msh"))
                .code,
            0);
  std::ifstream f(path("v22.msh"));
  std::string line;
  std::getline(f, line);
  std::getline(f, line);
  EXPECT_EQ(line.substr(0, 3), "2.2");
  const auto m = ksum::io::read_mesh(path("v22.msh"));
  EXPECT_EQ(m.nodes.rows(), 3654);
  EXPECT_EQ(m.group("airfoil").nodes.size(), 204u);
}

TEST_F(DeformCli, PartitionOfUnityMethodKeepsTheAirfoilMeshValid) {
  const auto in = example("naca0012.msh");
  const auto r = ksum("deform --mesh " + in +
                      " --moving airfoil --fixed farfield --rotate 10 "
                      "--about 0.25,0 --method pum -o " +
                      path("pum.msh"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("method pum (wendland2, eps 0.3123)"), std::string::npos) << r.output;
  const auto m0 = ksum::io::read_mesh(in), m1 = ksum::io::read_mesh(path("pum.msh"));
  EXPECT_EQ(inverted(m0, m1), 0);
}

// A displacement file with a node tag column, in any row order, is the same motion as
// --translate.
TEST_F(DeformCli, DisplacementFileWithNodeTagsMatchesTranslate) {
  const auto in = example("naca0012.msh");
  const auto m0 = ksum::io::read_mesh(in);
  const auto &airfoil = m0.group("airfoil").nodes;
  ksum::Table<double> d(static_cast<std::int64_t>(airfoil.size()), 3);
  d.names = {"tag", "dx", "dy"}; // the header marks the first column as node tags
  for (std::size_t k = 0; k < airfoil.size(); ++k) {
    const auto row = static_cast<std::int64_t>(airfoil.size() - 1 - k);
    d(row, 0) = static_cast<double>(m0.node_tags[static_cast<std::size_t>(airfoil[k])]);
    d(row, 1) = 0.02;
    d(row, 2) = -0.05;
  }
  ksum::io::write_table(path("d.csv"), d);
  const std::string common = "deform --mesh " + in + " --moving airfoil --fixed farfield ";
  ASSERT_EQ(ksum(common + "--displacement " + path("d.csv") + " -o " + path("a.msh")).code, 0);
  ASSERT_EQ(ksum(common + "--translate 0.02,-0.05 -o " + path("b.msh")).code, 0);
  const auto a = ksum::io::read_mesh(path("a.msh")), b = ksum::io::read_mesh(path("b.msh"));
  double diff = 0;
  for (std::int64_t i = 0; i < a.nodes.rows(); ++i)
    for (int k = 0; k < 3; ++k)
      diff = std::max(diff, std::abs(a.nodes(i, k) - b.nodes(i, k)));
  EXPECT_LE(diff, 1e-12);
}

// A mesh whose physical group "ghost" is a curve without elements (MSH 4.1).
const char *ghost_group = R"($MeshFormat
4.1 0 8
$EndMeshFormat
$PhysicalNames
2
1 5 "ghost"
2 1 "plate"
$EndPhysicalNames
$Entities
0 1 1 0
1 0 0 0 1 1 0 1 5 0
1 0 0 0 1 1 0 1 1 1 1
$EndEntities
$Nodes
1 4 1 4
2 1 0 4
1
2
3
4
0 0 0
1 0 0
1 1 0
0 1 0
$EndNodes
$Elements
1 2 1 2
2 1 2 2
1 1 2 3
2 1 3 4
$EndElements
)";

TEST_F(DeformCli, BadInputIsAClearErrorAndWritesNothing) {
  const auto in = example("naca0012.msh");
  const std::string base = "deform --mesh " + in + " --fixed farfield ";
  expect_failure(base + "--moving wing --translate 0.1,0 -o " + path("o.msh"), 1,
                 "no physical group 'wing'; the mesh has airfoil");
  write("ghost.msh", ghost_group);
  expect_failure("deform --mesh " + path("ghost.msh") + " --moving ghost --translate 0.1,0 -o " +
                     path("o.msh"),
                 1, "the moving group(s) ghost have no nodes");
  write("short.csv", "0.1,0\n0.1,0\n0.1,0\n");
  expect_failure(base + "--moving airfoil --displacement " + path("short.csv") + " -o " +
                     path("o.msh"),
                 1, "3 rows, but the moving groups have 204 nodes");
  // The airfoil pushed into the top wall: elements invert; nothing is written.
  expect_failure(base + "--moving airfoil --translate 0,3.98 -o " + path("o.msh"), 1,
                 "inverted element");
  EXPECT_FALSE(std::filesystem::exists(path("o.msh")));
  expect_failure(base + "--moving airfoil -o " + path("o.msh"), 1, "no motion");
  expect_failure(base + "--moving airfoil --rotate 5 -o " + path("o.msh"), 1, "needs --about");
  expect_failure(base + "--moving airfoil,farfield --translate 0.1,0 -o " + path("o.msh"), 1,
                 "is in moving group 'farfield' and in fixed group 'farfield'");
  expect_failure(base + "--moving airfoil --translate 0.1,0,0.5 -o " + path("o.msh"), 1,
                 "--translate needs 2 numbers");
  expect_failure(base + "--moving airfoil --translate 0.1,0 --about 0,0 -o " + path("o.msh"), 1,
                 "--about is the fixed point of --rotate or --scale");
  expect_failure(base + "--moving airfoil --rotate nan --about 0,0 -o " + path("o.msh"), 1,
                 "non-finite");
  expect_failure(base + "--moving airfoil --translate 0.1,0 -o " + path("o.vtu") + " --vtu " +
                     path("o.vtu"),
                 1, "name the same file");
  write("untagged.csv", "1,0.1,0\n2,0.1,0\n");
  expect_failure(base + "--moving airfoil --displacement " + path("untagged.csv") + " -o " +
                     path("o.msh"),
                 1, "with a header naming the first 'tag'");
  write("o.msh", "precious");
  expect_failure(base + "--moving airfoil --translate 0.1,0 -o " + path("o.msh"), 1, "file exists");
  expect_failure(base + "--moving airfoil --translate 0.1,0 -f -o " + in, 1,
                 "would overwrite an input");
  expect_failure("deform --mesh " + path("none.msh") + " --moving a --translate 0.1,0 -o " +
                     path("p.msh"),
                 1, "none.msh");
}

} // namespace
