// ksum kde end to end: grids and --eval files, the plots, and the refusals with their messages.
#include "support/cli_run.hpp"
#include "support/reference.hpp"

#include <ksum/io.hpp>

#include <cmath>
#include <fmt/format.h>
#include <numbers>

namespace {

using ksum::Table;

class KdeCli : public Cli {
protected:
  // n points of dimension d in [0, 1)^d, written as CSV with a header x0, x1, …
  std::string data(const std::string &name, std::int64_t n, std::int64_t d,
                   std::uint64_t seed = 1) const {
    auto t = ksum::test::random_points(n, d, seed);
    for (std::int64_t k = 0; k < d; ++k)
      t.names.push_back(fmt::format("c{}", k));
    ksum::io::write_table(path(name), t);
    return path(name);
  }
  bool is_png(const std::string &name) const {
    std::ifstream in(path(name), std::ios::binary);
    std::string head(8, '\0');
    in.read(head.data(), 8);
    return in && std::filesystem::file_size(path(name)) > 100 && head == "\x89PNG\r\n\x1a\n";
  }
};

TEST_F(KdeCli, OneDimensionalGridWithLinePlot) {
  const auto d = data("x.csv", 400, 1);
  const auto r =
      ksum("kde --data " + d + " --grid 300 -o " + path("f.csv") + " --plot " + path("f.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("ksum kde: n=400 d=1 sigma=("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(scott)"), std::string::npos) << r.output;
  const auto f = ksum::io::read_table(path("f.csv"));
  ASSERT_EQ(f.rows(), 300);
  ASSERT_EQ(f.cols(), 2);
  EXPECT_EQ(f.names, (std::vector<std::string>{"c0", "density"}));
  // The grid is the data's box padded by 3σ, first point to last; the density integrates to ~1.
  EXPECT_LT(f(0, 0), 0.0);
  EXPECT_GT(f(299, 0), 1.0);
  double sum = 0;
  for (std::int64_t i = 0; i < f.rows(); ++i) {
    EXPECT_GE(f(i, 1), -1e-6);
    sum += f(i, 1);
  }
  EXPECT_NEAR(sum * (f(299, 0) - f(0, 0)) / 299, 1.0, 3e-3);
  // The summary's own integral check says the same.
  const std::string key = "integral sum(f) * cell = ";
  const auto at = r.output.find(key);
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_NEAR(std::stod(r.output.substr(at + key.size())), 1.0, 3e-3) << r.output;
  EXPECT_TRUE(is_png("f.png"));
}

TEST_F(KdeCli, TwoDimensionalGridWithHeatMapAndRange) {
  const auto d = data("xy.csv", 500, 2);
  const auto r = ksum("kde --data " + d + " --grid 60x40 --range=-1,2,-0.5,1.5 --bandwidth 0.1 " +
                      "--method fgt -o " + path("f.npy") + " --plot " + path("f.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("fgt p="), std::string::npos) << r.output;
  const auto f = ksum::io::read_table(path("f.npy"));
  ASSERT_EQ(f.rows(), 60 * 40);
  ASSERT_EQ(f.cols(), 3);
  EXPECT_DOUBLE_EQ(f(0, 0), -1.0);
  EXPECT_DOUBLE_EQ(f(59, 0), 2.0); // first coordinate fastest
  EXPECT_DOUBLE_EQ(f(60, 1), -0.5 + 2.0 / 39);
  EXPECT_DOUBLE_EQ(f(2399, 1), 1.5);
  EXPECT_TRUE(is_png("f.png"));
}

TEST_F(KdeCli, EvalFileMatchesTheFormula) {
  const auto x = ksum::test::random_points(50, 2, 3);
  ksum::io::write_table(path("x.csv"), x);
  const auto y = ksum::test::random_points(7, 2, 4);
  ksum::io::write_table(path("y.csv"), y);
  const auto r = ksum("kde --data " + path("x.csv") + " --eval " + path("y.csv") +
                      " --bandwidth 0.3 --tol 1e-10 -o " + path("f.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("integral"), std::string::npos) << r.output; // no grid, no check
  const auto f = ksum::io::read_table(path("f.csv"));
  ASSERT_EQ(f.rows(), 7);
  ASSERT_EQ(f.cols(), 3);
  EXPECT_EQ(f.names, (std::vector<std::string>{"x0", "x1", "density"}));
  const double s = 0.3, peak = 1 / (2 * std::numbers::pi * s * s);
  for (std::int64_t i = 0; i < 7; ++i) {
    double ref = 0;
    for (std::int64_t j = 0; j < 50; ++j)
      ref += std::exp(-(std::pow(y(i, 0) - x(j, 0), 2) + std::pow(y(i, 1) - x(j, 1), 2)) /
                      (2 * s * s));
    EXPECT_EQ(f(i, 0), y(i, 0));
    EXPECT_NEAR(f(i, 2), ref * peak / 50, 1e-10 * peak);
  }
}

TEST_F(KdeCli, WeightsAndFloatPrecision) {
  const auto d = data("x.csv", 200, 1);
  Table<double> w(200, 1, 1.0);
  w(0, 0) = 5;
  ksum::io::write_table(path("w.csv"), w);
  const auto r = ksum("kde --data " + d + " --weights " + path("w.csv") +
                      " --grid 100 --precision f32 --tol 1e-5 -o " + path("f.npy"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("n_eff="), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(f32)"), std::string::npos) << r.output;
  EXPECT_EQ(ksum::io::read_table(path("f.npy")).rows(), 100);
  ksum::io::write_table(path("w3.csv"), Table<double>(3, 1, 1.0));
  expect_failure("kde --data " + d + " --weights " + path("w3.csv") + " --grid 10 -o " +
                     path("g.csv"),
                 1, "w3.csv has 3 rows but " + d + " has 200 points");
}

TEST_F(KdeCli, BadBandwidth) {
  const auto d = data("x.csv", 20, 1);
  expect_failure("kde --data " + d + " --grid 10 --bandwidth wide -o " + path("f.csv"), 1,
                 "bandwidth 'wide': expected scott, silverman, or a positive number");
  expect_failure("kde --data " + d + " --grid 10 --bandwidth -1 -o " + path("f.csv"), 1,
                 "positive and finite");
  EXPECT_FALSE(std::filesystem::exists(path("f.csv")));
  const auto flat = path("flat.csv");
  write("flat.csv", "a,b\n1,2\n2,2\n3,2\n");
  expect_failure("kde --data " + flat + " --grid 10 -o " + path("f.csv"), 1,
                 "column 1 (b): every point has the value 2 (zero spread)");
}

TEST_F(KdeCli, MissingFileIsNamed) {
  expect_failure("kde --data " + path("nothere.csv") + " --grid 10 -o " + path("f.csv"), 1,
                 "nothere.csv");
  const auto d = data("x.csv", 20, 1);
  expect_failure("kde --data " + d + " --eval " + path("noeval.npy") + " -o " + path("f.csv"), 1,
                 "noeval.npy");
}

TEST_F(KdeCli, ExistingOutputRefusedWithoutForce) {
  const auto d = data("x.csv", 20, 1);
  write("f.csv", "keep\n");
  expect_failure("kde --data " + d + " --grid 10 -o " + path("f.csv"), 1,
                 "f.csv: file exists (use --force to overwrite)");
  std::ifstream in(path("f.csv"));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "keep");
  write("p.png", "keep\n");
  expect_failure("kde --data " + d + " --grid 10 -o " + path("g.csv") + " --plot " + path("p.png"),
                 1, "p.png: file exists");
  EXPECT_FALSE(std::filesystem::exists(path("g.csv")));
  const auto r = ksum("kde --data " + d + " --grid 10 --force -o " + path("f.csv") + " --plot " +
                      path("p.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(ksum::io::read_table(path("f.csv")).rows(), 10);
  EXPECT_TRUE(is_png("p.png"));
}

TEST_F(KdeCli, PlotRefusedBeyondTwoDimensions) {
  const auto d3 = data("x3.csv", 30, 3);
  const auto e3 = data("y3.csv", 5, 3, 2);
  expect_failure("kde --data " + d3 + " --eval " + e3 + " -o " + path("f.csv") + " --plot " +
                     path("f.png"),
                 1, "--plot draws 1D or 2D densities; " + d3 + " has dimension 3");
  const auto d2 = data("x2.csv", 30, 2);
  const auto e2 = data("y2.csv", 5, 2, 2);
  expect_failure("kde --data " + d2 + " --eval " + e2 + " -o " + path("f.csv") + " --plot " +
                     path("f.png"),
                 1, "scattered --eval points cannot be drawn");
  expect_failure("kde --data " + d2 + " --grid 10 -o " + path("f.csv") + " --plot " + path("f.jpg"),
                 1, "expected a .png file");
  EXPECT_FALSE(std::filesystem::exists(path("f.csv")));
}

TEST_F(KdeCli, GridOptions) {
  const auto d3 = data("x3.csv", 30, 3);
  expect_failure("kde --data " + d3 + " --grid 5 -o " + path("f.csv"), 1, "add --grid-dims");
  const auto r = ksum("kde --data " + d3 + " --grid 5x4x3 --grid-dims -o " + path("f.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(ksum::io::read_table(path("f.csv")).rows(), 60);
  const auto d1 = data("x1.csv", 30, 1);
  expect_failure("kde --data " + d1 + " --grid 1 -o " + path("g.csv"), 1,
                 "'1' is not a count >= 2");
  expect_failure("kde --data " + d1 + " --grid 5x5 -o " + path("g.csv"), 1,
                 "--grid '5x5' has 2 axes but " + d1 + " has dimension 1");
  expect_failure("kde --data " + d1 + " --grid 5 --range=2,1 -o " + path("g.csv"), 1,
                 "--range: axis 0 is [2, 1]");
  expect_failure("kde --data " + d1 + " --grid 5 --eval " + d1 + " -o " + path("g.csv"), 1,
                 "give exactly one of --eval FILE and --grid N");
  expect_failure("kde --data " + d1 + " --eval " + d1 + " --range 0,1 -o " + path("g.csv"), 1,
                 "--range sets the box of --grid");
}

} // namespace
