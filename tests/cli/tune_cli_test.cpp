// ksum tune end to end: a calibration written to the cache, read back on the next run, rebuilt
// when the cache is corrupt, the chosen block sizes printed (each a power of two or a balanced
// split within the problem's range), --plot's measured-vs-predicted table and PNG, and bad input.
#include "support/cli_run.hpp"

#include <fstream>
#include <regex>
#include <sstream>

namespace {

class TuneCli : public Cli {};

std::string read(const std::string &file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_F(TuneCli, CalibratesCachesAndChooses) {
  const std::string cache = path("c/tasksize.json");
  const std::string base =
      "tune --threads 2 --problems nbody_light,matmul_few_loops --n 512 --cache " + cache;
  auto r = ksum(base);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("calibrated now"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("overhead O"), std::string::npos) << r.output;
  // Every chosen S is a power of two in [8, n / 2] (the candidates of ksum tune).
  const std::regex row(R"(\| (nbody_light|matmul_few_loops) \| 512 \| (\d+) \|)");
  int rows = 0;
  for (std::sregex_iterator it(r.output.begin(), r.output.end(), row), end; it != end; ++it) {
    const long s = std::stol((*it)[2]);
    EXPECT_GE(s, 8) << r.output;
    EXPECT_LE(s, 256) << r.output;
    EXPECT_EQ(s & (s - 1), 0) << s;
    ++rows;
  }
  EXPECT_EQ(rows, 2) << r.output;
  EXPECT_NE(r.output.find("| direct_cpu | 10000 × 10000 |"), std::string::npos) << r.output;
  if (r.output.find("not written") != std::string::npos)
    GTEST_SKIP() << "the overhead measurement fell back on this busy machine:\n" << r.output;
  ASSERT_TRUE(std::filesystem::exists(cache));
  EXPECT_NE(read(cache).find("\"direct_cpu\""), std::string::npos);
  // The second run reads the cache.
  r = ksum(base);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("read from the cache"), std::string::npos) << r.output;
  // A corrupt cache is rebuilt, not an error (and written again, unless this busy machine made an
  // overhead measurement fall back to its default: then it is used and not cached, and says so).
  std::ofstream(cache) << "{ not json";
  r = ksum(base);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("corrupt"), std::string::npos) << r.output;
  if (r.output.find("not written") == std::string::npos)
    EXPECT_NE(read(cache).find("\"overhead\""), std::string::npos) << r.output;
}

TEST_F(TuneCli, PlotMeasuresAndRefusesToOverwrite) {
  const std::string cache = path("tasksize.json"), png = path("tune.png");
  const std::string args =
      "tune --threads 2 --problems nbody_light --n 512 --cache " + cache + " --plot " + png;
  auto r = ksum(args);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("measured vs predicted"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(chosen)"), std::string::npos) << r.output;
  ASSERT_TRUE(std::filesystem::exists(png));
  EXPECT_GT(std::filesystem::file_size(png), 100u);
  expect_failure(args, 1, "exists");
  r = ksum(args + " -f");
  EXPECT_EQ(r.code, 0) << r.output;
}

TEST_F(TuneCli, BadInputIsNamed) {
  expect_failure("tune --problems nbody,matmul --cache " + path("t.json"), 1, "nbody");
  expect_failure("tune --threads 0", 105, "--threads");
  // A cache path that cannot be written: a directory where the file should be.
  std::filesystem::create_directories(path("d/tasksize.json"));
  expect_failure("tune --threads 1 --problems nbody_light --n 256 --cache " +
                     path("d/tasksize.json"),
                 1, "tasksize.json");
}

} // namespace
