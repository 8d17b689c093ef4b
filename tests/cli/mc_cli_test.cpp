// ksum mc end to end on a tiny polyelectrolyte: every output of a run, a checkpoint continued by
// --restart against one longer run, the refusals to overwrite, and bad input with its message.
#include "support/cli_run.hpp"

#include <ksum/io.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

class McCli : public Cli {};

// Two chains of 6 with their 12 counter-ions in a sphere: 24 particles, milliseconds a sweep.
const std::string tiny =
    "mc --chains 2 --monomers 6 --concentration 0.05 --backend cpu --threads 1 ";

std::string read_file(const std::string &file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The summary line that starts with `key` (e.g. "energy"), or "" when there is none.
std::string line_of(const std::string &text, const std::string &key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0)
      return line;
  return "";
}

TEST_F(McCli, RunWritesSamplesRadialTrajectoriesPlotsAndSummary) {
  const auto r =
      ksum(tiny + "--steps 40 --equilibrate 15 --progress-every 20 --samples " + path("s.csv") +
           " --radial " + path("r.csv") + " --radial-bins 10 --xyz " + path("t.xyz") + " --csv " +
           path("t.csv") + " --traj-every 10 --plot " + path("pe") + " --summary " +
           path("run.txt") + " --checkpoint " + path("run.ck"));
  ASSERT_EQ(r.code, 0) << r.output;
  // Progress on stderr: sweep, energy, acceptance per move kind, rate.
  EXPECT_NE(r.output.find("mc: sweep 20  U "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("acceptance translate"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("moves/s"), std::string::npos) << r.output;

  const auto s = ksum::io::read_table(path("s.csv"));
  ASSERT_EQ(s.rows(), 40);
  ASSERT_EQ(s.cols(), 8); // sweep, energy, ree, rg, then ree_c, rg_c of both chains
  EXPECT_EQ(s.names[0], "sweep");
  EXPECT_EQ(s.names[1], "energy");
  EXPECT_EQ(s.names[3], "rg");
  EXPECT_EQ(s(0, 0), 1);
  EXPECT_EQ(s(39, 0), 40);
  for (std::int64_t i = 0; i < s.rows(); ++i) {
    EXPECT_GT(s(i, 2), 0);    // R_ee
    EXPECT_GT(s(i, 3), 0);    // R_g
    EXPECT_LT(s(i, 3), 30.0); // a chain of 6 with bonds near 5 Å
  }
  const auto g = ksum::io::read_table(path("r.csv"));
  ASSERT_EQ(g.rows(), 10);
  EXPECT_EQ(g.names[1], "density");
  double counted = 0;
  for (std::int64_t b = 0; b < g.rows(); ++b)
    counted += g(b, 2);
  EXPECT_EQ(counted, 40.0 * 12); // every counter-ion of every sample, inside the cell

  const auto xyz = read_file(path("t.xyz"));
  std::size_t frames = 0;
  for (std::size_t p = 0; (p = xyz.find("sweep=", p)) != std::string::npos; ++p)
    ++frames;
  EXPECT_EQ(frames, 4u);
  EXPECT_EQ(xyz.rfind("24\n", 0), 0u);
  const auto traj = ksum::io::read_table(path("t.csv"));
  EXPECT_EQ(traj.rows(), 4 * 24);
  EXPECT_EQ(traj.cols(), 5);
  for (const char *f : {"pe_energy.png", "pe_rg.png", "pe_radial.png", "run.ck"})
    EXPECT_GT(std::filesystem::file_size(path(f)), 100u) << f;

  const auto summary = read_file(path("run.txt"));
  EXPECT_NE(summary.find("2 chains x 6 monomers (12 charged, z = -1), 12 counter-ions"),
            std::string::npos)
      << summary;
  for (const char *key : {"energy       U = ", "chains       <R_ee> = ", "acceptance   translate",
                          "drift        ", "time         ", "backend      cpu"})
    EXPECT_NE(summary.find(key), std::string::npos) << key << "\n" << summary;
  EXPECT_NE(summary.find("(25 samples after sweep 15)"), std::string::npos) << summary;
  EXPECT_NE(r.output.find(summary), std::string::npos) << "the summary file is stdout's summary";
}

TEST_F(McCli, RestartContinuesTheRunExactly) {
  const std::string model = tiny + "--salt 2 --seed 7 --recompute-every 15 ";
  auto r = ksum(model + "--steps 25 --checkpoint " + path("a.ck"));
  ASSERT_EQ(r.code, 0) << r.output;
  r = ksum("mc --backend cpu --threads 1 --restart " + path("a.ck") + " --steps 25 --samples " +
           path("b.csv") + " --summary " + path("b.txt"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("run          25 sweeps (25 -> 50)"), std::string::npos) << r.output;
  r = ksum(model + "--steps 50 --checkpoint-every 20 --checkpoint " + path("c.ck") + " --samples " +
           path("c.csv") + " --summary " + path("c.txt"));
  ASSERT_EQ(r.code, 0) << r.output;

  // The same chain: every sample (17 digits) and the final energy agree to the bit.
  const auto b = ksum::io::read_table(path("b.csv")), c = ksum::io::read_table(path("c.csv"));
  ASSERT_EQ(b.rows(), 50);
  ASSERT_EQ(c.rows(), 50);
  ASSERT_EQ(b.cols(), c.cols());
  for (std::int64_t i = 0; i < b.rows(); ++i)
    for (std::int64_t j = 0; j < b.cols(); ++j)
      ASSERT_EQ(b(i, j), c(i, j)) << "sample " << i << " column " << c.names[j];
  const auto bs = read_file(path("b.txt")), cs = read_file(path("c.txt"));
  ASSERT_FALSE(line_of(cs, "energy").empty()) << cs;
  EXPECT_EQ(line_of(bs, "energy"), line_of(cs, "energy"));
  EXPECT_EQ(line_of(bs, "chains"), line_of(cs, "chains"));
  EXPECT_EQ(line_of(bs, "acceptance"), line_of(cs, "acceptance"));
  EXPECT_EQ(line_of(bs, "model"), line_of(cs, "model"));

  // Model options with --restart would be ignored: refused.
  expect_failure("mc --restart " + path("a.ck") + " --steps 5 --chains 3", 1,
                 "--chains: with --restart the model");
  // A checkpoint replaced by its continuation only with --force.
  expect_failure("mc --restart " + path("a.ck") + " --steps 5 --checkpoint " + path("a.ck"), 1,
                 "file exists (use --force");
  r = ksum("mc --restart " + path("a.ck") + " --steps 5 --checkpoint " + path("a.ck") + " -f");
  EXPECT_EQ(r.code, 0) << r.output;
}

TEST_F(McCli, ExistingOutputsAreKeptWithoutForce) {
  auto r = ksum(tiny + "--steps 3 --samples " + path("s.csv") + " --plot " + path("p"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto before = read_file(path("s.csv"));
  expect_failure(tiny + "--steps 5 --samples " + path("s.csv"), 1, "s.csv: file exists");
  expect_failure(tiny + "--steps 5 --plot " + path("p"), 1, "p_energy.png: file exists");
  write("t.xyz", "keep\n");
  expect_failure(tiny + "--steps 5 --xyz " + path("t.xyz"), 1, "t.xyz: file exists");
  expect_failure(tiny + "--steps 5 --summary " + path("t.xyz"), 1, "t.xyz: file exists");
  EXPECT_EQ(read_file(path("s.csv")), before);
  EXPECT_EQ(read_file(path("t.xyz")), "keep\n");
  r = ksum(tiny + "--steps 5 --samples " + path("s.csv") + " -f");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(ksum::io::read_table(path("s.csv")).rows(), 5);
}

TEST_F(McCli, BadInputIsAClearError) {
  expect_failure(tiny + "--bjerrum nan", 1, "--bjerrum nan: expected a finite number");
  expect_failure(tiny + "--cell-radius 50 --box 50", 1, "give one of --cell-radius");
  expect_failure(tiny + "--debye -2", 1, "--debye -2: the Debye length must be > 0");
  expect_failure(tiny + "--electrostatics debye-huckel", 1, "needs --debye");
  expect_failure(tiny + "--epsilon-r 78 --bjerrum 7", 1, "not both");
  expect_failure(tiny + "--short-range soft", 1, "unknown short-range potential 'soft'");
  expect_failure(tiny + "--bond fene --bond-r0 4", 1, "FENE takes --bond-rmax");
  expect_failure(tiny + "--bond fene --bond-rmax 4", 1, "broken at the start");
  expect_failure(tiny + "--valence 5", 1, "not a multiple of the counter-ion valence 5");
  expect_failure("mc --chains 2 --monomers 6 --cell-radius 6", 1, "volume fraction");
  expect_failure(tiny + "--plot x.png", 1, "expected a prefix");
  expect_failure(tiny + "--checkpoint-every 5", 1, "needs --checkpoint FILE");
  expect_failure(tiny + "--monomers 0", 105, "--monomers: must be ≥ 1, got 0");
  expect_failure(tiny + "--precision half", 105, "half");
  expect_failure("mc --restart " + path("missing.ck"), 1, "missing.ck: cannot open the checkpoint");
  write("bad.ck", "KSUMMCCK but not a checkpoint at all");
  expect_failure("mc --restart " + path("bad.ck"), 1, "bad.ck: ");
}

} // namespace
