// ksum tdbem end to end: the probe CSV, the plot, the .vtu snapshots and the summary of a small
// sphere run, a Gmsh surface, and the refusals with their messages.
#include "support/cli_run.hpp"

#include <ksum/io.hpp>
#include <ksum/mesh.hpp>
#include <ksum/tdbem.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace {

class TdbemCli : public Cli {};

TEST_F(TdbemCli, SphereRunWritesProbesPlotSnapshotsAndSummary) {
  const auto r = ksum("tdbem --refine 1 --steps 30 --ng 3 --backend cpu --probe-csv " +
                      path("p.csv") + " --plot " + path("p.png") + " --vtu " + path("snap") +
                      " --vtu-every 10 --summary " + path("run.txt"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("80 unknowns"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("worker       cpu"), std::string::npos) << r.output;
  const auto p = ksum::io::read_table(path("p.csv"));
  ASSERT_EQ(p.rows(), 30);
  ASSERT_EQ(p.cols(), 4); // t and the three default probes
  EXPECT_EQ(p.names[0], "t");
  // The back-scattered pulse reaches the probe in front: a clearly non-zero signal, finite.
  double peak = 0;
  for (std::int64_t n = 0; n < p.rows(); ++n)
    peak = std::max(peak, std::abs(p(n, 1)));
  EXPECT_GT(peak, 1e-3);
  EXPECT_LT(peak, 1.0);
  EXPECT_TRUE(std::filesystem::file_size(path("p.png")) > 100);
  for (const char *f : {"snap_000010.vtu", "snap_000020.vtu", "snap_000030.vtu"})
    EXPECT_TRUE(std::filesystem::exists(path(f))) << f;
  std::ifstream summary(path("run.txt"));
  std::string text((std::istreambuf_iterator<char>(summary)), {});
  EXPECT_NE(text.find("blocks"), std::string::npos);
  // Nothing is overwritten without --force.
  expect_failure("tdbem --refine 1 --steps 2 --probe-csv " + path("p.csv"), 1, "exists");
}

// A Gmsh 2.2 text file of the sphere's triangles, without `drop` of them.
void write_msh(const std::string &file, const ksum::TriangleSurface &s, std::int64_t drop = 0) {
  std::ofstream out(file);
  out << "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n" << s.nodes.rows() << "\n";
  out.precision(17);
  for (std::int64_t r = 0; r < s.nodes.rows(); ++r)
    out << r + 1 << " " << s.nodes(r, 0) << " " << s.nodes(r, 1) << " " << s.nodes(r, 2) << "\n";
  const auto m = s.elements() - drop;
  out << "$EndNodes\n$Elements\n" << m << "\n";
  for (std::int64_t e = 0; e < m; ++e)
    out << e + 1 << " 2 2 1 1 " << s.triangles[3 * e] + 1 << " " << s.triangles[3 * e + 1] + 1
        << " " << s.triangles[3 * e + 2] + 1 << "\n";
  out << "$EndElements\n";
}

TEST_F(TdbemCli, GmshSurfaceIsReadAndAnOpenOneRefused) {
  if (!ksum::io::have_gmsh())
    GTEST_SKIP() << "built without the Gmsh SDK";
  const auto s = ksum::sphere_surface(1.0, 1);
  write_msh(path("sphere.msh"), s);
  const auto r = ksum("tdbem --mesh " + path("sphere.msh") + " --steps 3 --backend cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("80 unknowns"), std::string::npos) << r.output;
  write_msh(path("open.msh"), s, 1);
  expect_failure("tdbem --mesh " + path("open.msh") + " --steps 3", 1, "not closed");
  expect_failure("tdbem --mesh " + path("missing.msh") + " --steps 2", 1, "missing.msh");
}

TEST_F(TdbemCli, BadOptionsAreClearErrors) {
  expect_failure("tdbem --refine 1 --block 12y3", 1, "--block '12y3'");
  expect_failure("tdbem --refine 1 --dt 5", 1, "too large");
  expect_failure("tdbem --refine 1 --direction 0,0,0", 1, "zero vector");
  expect_failure("tdbem --refine 1 --vtu snap", 1, "--vtu-every");
  expect_failure("tdbem --refine 1 --plot " + path("x.jpg"), 1, "expected a .png");
  expect_failure("tdbem --refine 1 --kernel dense", 105, "dense");
}

} // namespace
