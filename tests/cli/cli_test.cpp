// End-to-end tests of the ksum command: real files in, real files out, exit codes and messages.
#include "support/cli_run.hpp"
#include "support/reference.hpp"

#include <ksum/datasets.hpp>
#include <ksum/io.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <sys/wait.h>

namespace fs = std::filesystem;

namespace {

TEST_F(Cli, InfoListsBuildAndKernels) {
  const auto r = ksum("info");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("CUDA backend"), std::string::npos);
  EXPECT_NE(r.output.find("wendland6"), std::string::npos);
  const auto j = ksum("info --json");
  EXPECT_EQ(j.code, 0);
  EXPECT_NE(j.output.find("\"kernels\""), std::string::npos);
}

TEST_F(Cli, SumMatchesTheReferenceCsvAndNpy) {
  const auto p = ksum::test::random_points(300, 3, 21);
  const auto w = ksum::test::random_points(300, 2, 22, -1, 1);
  auto named = p;
  named.names = {"x", "y", "z"};
  ksum::io::write_table(path("pts.csv"), named);
  ksum::io::write_table(path("w.npy"), w);
  const auto r = ksum("sum --kernel gaussian --eps 2 --sources " + path("pts.csv") + " --weights " +
                      path("w.npy") + " --backend cpu -o " + path("u.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto u = ksum::io::read_table(path("u.csv"));
  ASSERT_EQ(u.rows(), 300);
  ASSERT_EQ(u.cols(), 2);
  EXPECT_EQ(u.names, (std::vector<std::string>{"u0", "u1"}));
  EXPECT_LE(ksum::test::sum_error(ksum::Kernel::gaussian, 2.0, p, p, w, false, true, u), 1e-12);

  const auto g =
      ksum("sum --kernel laplace --sources " + path("pts.csv") + " --targets " + path("pts.csv") +
           " --weights " + path("w.npy") + " --gradient --precision f32 -o " + path("g.npy"));
  ASSERT_EQ(g.code, 0) << g.output;
  const auto gu = ksum::io::read_table(path("g.npy"));
  ASSERT_EQ(gu.cols(), 2 * 4); // (u, du/dx, du/dy, du/dz) per rhs
  auto pf = ksum::test::rounded<float>(p), wf = ksum::test::rounded<float>(w);
  EXPECT_LE(ksum::test::sum_error(ksum::Kernel::laplace, 1.0, pf, pf, wf, true, false, gu), 2e-5);
}

TEST_F(Cli, SumByTheFmmMeetsItsToleranceAndRefusesWhatItCannotDo) {
  const auto p = ksum::test::random_points(4000, 3, 31);
  const auto w = ksum::test::random_points(4000, 1, 32, -1, 1);
  ksum::io::write_table(path("p.npy"), p);
  ksum::io::write_table(path("w.npy"), w);
  const auto r =
      ksum("sum --kernel multiquadric --eps 3 --method fmm --tol 1e-6 --sources " + path("p.npy") +
           " --weights " + path("w.npy") + " --backend cpu -o " + path("u.npy"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("fmm tol=1e-06 order="), std::string::npos) << r.output;
  const auto u = ksum::io::read_table(path("u.npy"));
  EXPECT_LE(ksum::test::sum_error(ksum::Kernel::multiquadric, 3.0, p, p, w, false, true, u), 1e-6);
  EXPECT_EQ(r.output.find("mixed precision"), std::string::npos) << r.output; // 1e-6: double

  // At 1e-3 parts run in float unless --fmm-double: the note says which; both meet the tolerance
  // and differ by float rounding only.
  const auto mixed =
      ksum("sum --kernel laplace --method fmm --tol 1e-3 --sources " + path("p.npy") +
           " --weights " + path("w.npy") + " --backend cpu -o " + path("um.npy"));
  const auto dbl =
      ksum("sum --kernel laplace --method fmm --tol 1e-3 --fmm-double --sources " + path("p.npy") +
           " --weights " + path("w.npy") + " --backend cpu -o " + path("ud.npy"));
  ASSERT_EQ(mixed.code, 0) << mixed.output;
  ASSERT_EQ(dbl.code, 0) << dbl.output;
  EXPECT_NE(mixed.output.find("(mixed precision)"), std::string::npos) << mixed.output;
  EXPECT_EQ(dbl.output.find("mixed precision"), std::string::npos) << dbl.output;
  const auto um = ksum::io::read_table(path("um.npy")), ud = ksum::io::read_table(path("ud.npy"));
  EXPECT_LE(ksum::test::sum_error(ksum::Kernel::laplace, 1.0, p, p, w, false, true, um), 1e-3);
  EXPECT_LE(ksum::test::sum_error(ksum::Kernel::laplace, 1.0, p, p, w, false, true, ud), 1e-3);
  double e2 = 0, r2 = 0;
  for (std::int64_t i = 0; i < ud.rows(); ++i) {
    e2 += (um(i, 0) - ud(i, 0)) * (um(i, 0) - ud(i, 0));
    r2 += ud(i, 0) * ud(i, 0);
  }
  EXPECT_GT(std::sqrt(e2 / r2), 0);    // float did run
  EXPECT_LE(std::sqrt(e2 / r2), 1e-5); // measured ~1e-7

  ksum::io::write_table(path("p2.npy"), ksum::test::random_points(50, 2, 33));
  ksum::io::write_table(path("w2.npy"), ksum::test::random_points(50, 1, 34));
  expect_failure("sum --kernel laplace --method fmm --sources " + path("p2.npy") + " --weights " +
                     path("w2.npy") + " -o " + path("v.npy"),
                 1, "the 2D FMM serves the log kernel");
  expect_failure("sum --kernel laplace --method fmm --tol 1e-13 --sources " + path("p.npy") +
                     " --weights " + path("w.npy") + " -o " + path("v.npy"),
                 1, "tolerance 1e-13");
  expect_failure("sum --kernel laplace --method fmm --precision f32 --tol 1e-7 --sources " +
                     path("p.npy") + " --weights " + path("w.npy") + " -o " + path("v.npy"),
                 1, "float32");
  expect_failure("sum --kernel laplace --method fast --sources " + path("p.npy") + " --weights " +
                     path("w.npy") + " -o " + path("v.npy"),
                 105, "--method: fast not in");
}

TEST_F(Cli, SumByTheFastGaussTransformMeetsItsToleranceAndRefusesOtherKernels) {
  // ksum sum --kernel gaussian --method fgt: exp(−(eps r)²) = exp(−r²/h²) with h = 1/eps, to
  // |u_i − exact| ≤ tol · Σ|w| (self term left out as for every ksum sum without --targets).
  const std::int64_t n = 2000;
  const double eps = 6.0, tol = 1e-7;
  const auto p = ksum::test::random_points(n, 3, 51);
  const auto t = ksum::test::random_points(700, 3, 52);
  const auto w = ksum::test::random_points(n, 1, 53, -1, 1);
  ksum::io::write_table(path("p.npy"), p);
  ksum::io::write_table(path("t.npy"), t);
  ksum::io::write_table(path("w.npy"), w);
  double l1 = 0;
  for (std::int64_t j = 0; j < n; ++j)
    l1 += std::abs(w(j, 0));
  const auto max_error = [&](const ksum::Table<double> &tgt, const ksum::Table<double> &u,
                             bool self) {
    double worst = 0;
    for (std::int64_t i = 0; i < tgt.rows(); i += 37) {
      long double s = 0;
      for (std::int64_t j = 0; j < n; ++j) {
        if (self && i == j)
          continue;
        long double r2 = 0;
        for (int k = 0; k < 3; ++k)
          r2 += ((long double)tgt(i, k) - p(j, k)) * ((long double)tgt(i, k) - p(j, k));
        s += w(j, 0) * std::exp(-(long double)eps * eps * r2);
      }
      worst = std::max(worst, std::abs(u(i, 0) - double(s)) / l1);
    }
    return worst;
  };
  auto r =
      ksum("sum --kernel gaussian --eps 6 --method fgt --force-method --tol 1e-7 --sources " +
           path("p.npy") + " --weights " + path("w.npy") + " --backend cpu -o " + path("u.npy"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("fgt h=0.166667 tol=1e-07 p="), std::string::npos) << r.output;
  const auto u = ksum::io::read_table(path("u.npy"));
  ASSERT_EQ(u.rows(), n);
  EXPECT_LE(max_error(p, u, true), tol);
  r = ksum("sum --kernel gaussian --eps 6 --method fgt --force-method --tol 1e-7 --sources " +
           path("p.npy") + " --targets " + path("t.npy") + " --weights " + path("w.npy") +
           " --backend cpu -o " + path("ut.npy"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto ut = ksum::io::read_table(path("ut.npy"));
  ASSERT_EQ(ut.rows(), 700);
  EXPECT_LE(max_error(t, ut, false), tol);
  // Without --force-method, 2,000 points at h = 1/6 in 3D: the cost model predicts the direct sum
  // cheaper, so it runs and the note says why.
  r = ksum("sum --kernel gaussian --eps 6 --method fgt --tol 1e-7 --sources " + path("p.npy") +
           " --weights " + path("w.npy") + " --backend cpu -o " + path("ud.npy"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("predicts the direct sum cheaper"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(f64), direct: sum"), std::string::npos) << r.output;
  EXPECT_LE(max_error(p, ksum::io::read_table(path("ud.npy")), true), 1e-13);

  // --timing: the breakdown line, with every phase, and the same result as without it.
  r = ksum("sum --kernel gaussian --eps 6 --tol 1e-7 --sources " + path("p.npy") + " --weights " +
           path("w.npy") + " --backend cpu --timing -o " + path("uti.npy"));
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char *part : {"ksum sum timing: read ", "GPU context ", "plan set-up ", "(tree ",
                           "; sum ", "; write ", "total "})
    EXPECT_NE(r.output.find(part), std::string::npos) << part << "\n" << r.output;
  const auto uti = ksum::io::read_table(path("uti.npy"));
  const auto ud = ksum::io::read_table(path("ud.npy"));
  ASSERT_EQ(uti.rows(), ud.rows());
  for (std::int64_t i = 0; i < uti.rows(); ++i)
    ASSERT_EQ(uti(i, 0), ud(i, 0)) << i;

  expect_failure("sum --kernel laplace --method fgt --sources " + path("p.npy") + " --weights " +
                     path("w.npy") + " -o " + path("v.npy"),
                 1, "method fgt is the fast Gauss transform: it serves the gaussian kernel only");
  expect_failure("sum --kernel gaussian --method fgt --gradient --sources " + path("p.npy") +
                     " --weights " + path("w.npy") + " -o " + path("v.npy"),
                 1, "use method direct for the gradient");
  expect_failure("sum --kernel gaussian --method fgt --tol 1e-13 --sources " + path("p.npy") +
                     " --weights " + path("w.npy") + " -o " + path("v.npy"),
                 1, "tolerance 1e-13");
  EXPECT_FALSE(fs::exists(dir / "v.npy"));
}

// --method auto with the gaussian kernel: the first run times the direct sum, the FMM (not in 2D)
// and the FGT on this machine, picks the FGT (10^10 pairs against 25 boxes of h = 0.2), meets the
// FGT's tolerance, and keeps the rates in methods.json; the next run reads them from there.
TEST_F(Cli, SumWithMethodAutoPicksTheFgtAndKeepsItsRates) {
  const std::int64_t n = 100000;
  const double eps = 5.0, tol = 1e-6;
  const auto p = ksum::test::random_points(n, 2, 54);
  const auto w = ksum::test::random_points(n, 1, 55, -1, 1);
  ksum::io::write_table(path("p.npy"), p);
  ksum::io::write_table(path("w.npy"), w);
  const std::string cache = path("cache");
  ::setenv("KSUM_CACHE_DIR", cache.c_str(), 1);
  ::unsetenv("KSUM_METHOD_CACHE");
  const std::string args = "sum --kernel gaussian --eps 5 --method auto --tol 1e-6 --threads 2 "
                           "--backend cpu --sources " +
                           path("p.npy") + " --weights " + path("w.npy") + " -f -o " +
                           path("u.npy");
  const auto first = ksum(args), second = ksum(args);
  ::unsetenv("KSUM_CACHE_DIR");
  ASSERT_EQ(first.code, 0) << first.output;
  EXPECT_NE(first.output.find("method auto chose fgt: predicted direct "), std::string::npos)
      << first.output;
  EXPECT_NE(first.output.find("(rates timed on this machine)"), std::string::npos) << first.output;
  ASSERT_EQ(second.code, 0) << second.output;
  EXPECT_NE(second.output.find("method auto chose fgt"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("rates timed on this machine earlier, from the cache"),
            std::string::npos)
      << second.output;
  std::ifstream in(cache + "/methods.json");
  std::stringstream text;
  text << in.rdbuf();
  for (const char *key : {"\"direct | cpu ", "\"fgt | cpu "})
    EXPECT_NE(text.str().find(key), std::string::npos) << key << "\n" << text.str();
  // The FGT's guarantee on sampled targets against a long-double sum (self term left out).
  const auto u = ksum::io::read_table(path("u.npy"));
  ASSERT_EQ(u.rows(), n);
  double l1 = 0, worst = 0;
  for (std::int64_t j = 0; j < n; ++j)
    l1 += std::abs(w(j, 0));
  for (std::int64_t i = 0; i < n; i += 4999) {
    long double s = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      if (j == i)
        continue;
      const long double dx = (long double)p(i, 0) - p(j, 0), dy = (long double)p(i, 1) - p(j, 1);
      s += w(j, 0) * std::exp(-(long double)eps * eps * (dx * dx + dy * dy));
    }
    worst = std::max(worst, std::abs(u(i, 0) - double(s)) / l1);
  }
  EXPECT_LE(worst, tol);
}

TEST_F(Cli, SumIn2DByTheFmmLogAndHarmonicKernels) {
  // ksum sum --kernel log --method fmm (seed 004 Paper IV's FMM) against the fp64 reference, and
  // the harmonic kernel with complex weights as two columns against its definition.
  const std::int64_t n = 3000;
  const auto p = ksum::test::random_points(n, 2, 41);
  const auto w = ksum::test::random_points(n, 2, 42, -1, 1);
  ksum::io::write_table(path("p2.npy"), p);
  ksum::io::write_table(path("w2.npy"), w);
  auto r = ksum("sum --kernel log --eps 2 --method fmm --tol 1e-9 --sources " + path("p2.npy") +
                " --weights " + path("w2.npy") + " --backend cpu -o " + path("ul.npy"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto ul = ksum::io::read_table(path("ul.npy"));
  EXPECT_LE(ksum::test::sum_error(ksum::Kernel::log, 2.0, p, p, w, false, true, ul), 1e-9);
  r = ksum("sum --kernel harmonic --method fmm --tol 1e-9 --sources " + path("p2.npy") +
           " --weights " + path("w2.npy") + " --backend cpu -o " + path("uh.npy"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto uh = ksum::io::read_table(path("uh.npy"));
  ASSERT_EQ(uh.cols(), 2);
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < n; i += 97) {
    long double ur = 0, ui = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      if (j == i)
        continue;
      const long double dx = p(i, 0) - p(j, 0), dy = p(i, 1) - p(j, 1), r2 = dx * dx + dy * dy;
      ur += (w(j, 0) * dx + w(j, 1) * dy) / r2; // Re q / (z − z_j)
      ui += (w(j, 1) * dx - w(j, 0) * dy) / r2;
    }
    num = std::max(num, std::hypot(uh(i, 0) - double(ur), uh(i, 1) - double(ui)));
    den = std::max(den, std::hypot(double(ur), double(ui)));
  }
  EXPECT_LE(num / den, 1e-9);
  ksum::io::write_table(path("w3.npy"), ksum::test::random_points(n, 3, 43));
  expect_failure("sum --kernel harmonic --sources " + path("p2.npy") + " --weights " +
                     path("w3.npy") + " -o " + path("v.npy"),
                 1, "two columns (Re q, Im q)");
  expect_failure("sum --kernel gaussian --method fmm --sources " + path("p2.npy") + " --weights " +
                     path("w2.npy") + " -o " + path("v.npy"),
                 1, "kernel gaussian in 2D needs method direct");
}

TEST_F(Cli, RefusesToOverwriteWithoutForce) {
  write("p.csv", "0,0\n1,0\n0,1\n");
  write("w.csv", "1\n2\n3\n");
  write("out.csv", "precious\n");
  const std::string base = "sum --kernel cubic --sources " + path("p.csv") + " --weights " +
                           path("w.csv") + " -o " + path("out.csv");
  const auto r = ksum(base);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("exists"), std::string::npos) << r.output;
  std::ifstream in(dir / "out.csv");
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, "precious\n");
  EXPECT_EQ(ksum(base + " --force").code, 0);
  const auto over = ksum("sum --kernel cubic --sources " + path("p.csv") + " --weights " +
                         path("w.csv") + " --force -o " + path("p.csv"));
  EXPECT_NE(over.code, 0);
  EXPECT_NE(over.output.find("overwrite an input"), std::string::npos) << over.output;
}

TEST_F(Cli, BadInputsGiveOneClearLineAndNonZeroExit) {
  write("p.csv", "x,y\n0,0\n1,nan\n");
  write("ragged.csv", "0,0\n1\n");
  write("w.csv", "1\n2\n");
  write("w3.csv", "1\n2\n3\n");
  write("good.csv", "0,0\n1,1\n");
  const std::string out = " -o " + path("o.csv");
  auto sum = [&](const std::string &kernel, const std::string &src, const std::string &w) {
    return "sum --kernel " + kernel + " --sources " + path(src) + " --weights " + path(w);
  };
  expect_failure(sum("laplace", "p.csv", "w.csv") + out, 1, "p.csv:3:2");
  expect_failure(sum("laplace", "ragged.csv", "w.csv") + out, 1, "ragged.csv:2");
  expect_failure(sum("laplace", "good.csv", "w3.csv") + out, 1, "one weight row per source");
  expect_failure(sum("gausian", "good.csv", "w.csv") + out, 1, "unknown kernel 'gausian'");
  expect_failure(sum("laplace", "missing.csv", "w.csv") + out, 1, "missing.csv");
  expect_failure(sum("laplace", "good.csv", "w.csv") + " -o " + path("o.dat"), 1, ".dat");
  expect_failure(sum("laplace --eps -3", "good.csv", "w.csv") + out, 1, "eps");
  const auto r = ksum("sum --sources " + path("good.csv")); // missing required options
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("--kernel"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "o.csv")); // nothing half-written after a failure
}

TEST_F(Cli, InterpolateGlobalWithEachSolver) {
  const auto x = ksum::datasets::halton(1500, 2);
  ksum::Table<double> data(x.rows(), 3);
  for (std::int64_t i = 0; i < x.rows(); ++i) {
    data(i, 0) = x(i, 0);
    data(i, 1) = x(i, 1);
    data(i, 2) = ksum::datasets::franke(x(i, 0), x(i, 1));
  }
  ksum::io::write_table(path("data.csv"), data);
  std::vector<std::vector<double>> results;
  for (const std::string solver : {"dense", "fgp", "krylov"}) {
    const auto r = ksum("interpolate --method global --data " + path("data.csv") +
                        " --grid 20x20 --kernel multiquadric --eps 20 --tol 1e-10 --backend cpu "
                        "--solver " +
                        solver + " -o " + path(solver + ".csv"));
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("final residual"), std::string::npos) << r.output;
    if (solver != "dense") {
      EXPECT_NE(r.output.find("iterations"), std::string::npos) << r.output;
    }
    const auto g = ksum::io::read_table(path(solver + ".csv"));
    ASSERT_EQ(g.rows(), 400);
    ASSERT_EQ(g.cols(), 3);
    double se = 0;
    std::vector<double> col;
    for (std::int64_t i = 0; i < g.rows(); ++i) {
      se += std::pow(g(i, 2) - ksum::datasets::franke(g(i, 0), g(i, 1)), 2);
      col.push_back(g(i, 2));
    }
    // Measured RMSE 1.6e-4 on this grid (multiquadric, eps 20, N = 1500): 3x margin.
    EXPECT_LT(std::sqrt(se / 400.0), 5e-4) << solver;
    results.push_back(col);
  }
  // The three solvers give the same interpolant (tolerance 1e-10; system condition ~1e7).
  for (std::size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_NEAR(results[1][i], results[0][i], 1e-7);
    EXPECT_NEAR(results[2][i], results[0][i], 1e-7);
  }
  expect_failure("interpolate --method global --data " + path("data.csv") +
                     " --grid 5x5 --eps loocv -o " + path("x.csv"),
                 1, "needs a number");
  expect_failure("interpolate --method global --data " + path("data.csv") +
                     " --grid 5x5 --kernel tps --solver fgp -o " + path("x.csv"),
                 1, "needs polynomial degree 0");
  expect_failure("interpolate --method global --data " + path("data.csv") +
                     " --grid 5x5 --kernel tps --degree 0 -o " + path("x.csv"),
                 1, "needs a polynomial of degree >= 1");
}

TEST_F(Cli, InterpolatePumOnAGridAndAtGivenPoints) {
  const auto x = ksum::datasets::halton(1089, 2);
  ksum::Table<double> data(x.rows(), 4);
  for (std::int64_t i = 0; i < x.rows(); ++i) {
    data(i, 0) = x(i, 0);
    data(i, 1) = x(i, 1);
    data(i, 2) = ksum::datasets::franke(x(i, 0), x(i, 1));
    data(i, 3) = 2 * data(i, 2); // a second value column
  }
  ksum::io::write_table(path("data.npy"), data);
  auto r = ksum("interpolate --method pum --data " + path("data.npy") +
                " --dim 2 --grid 30x20 --kernel matern4 --eps 10 -o " + path("grid.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("patches"), std::string::npos);
  const auto g = ksum::io::read_table(path("grid.csv"));
  ASSERT_EQ(g.rows(), 600);
  ASSERT_EQ(g.cols(), 4);
  double se = 0;
  for (std::int64_t i = 0; i < g.rows(); ++i) {
    se += std::pow(g(i, 2) - ksum::datasets::franke(g(i, 0), g(i, 1)), 2);
    EXPECT_NEAR(g(i, 3), 2 * g(i, 2), 1e-12);
  }
  // Seed 001 table 3: RMSE 4.73e-4 for N = 1089, M4, eps = 10 on 90,000 points; this coarse grid
  // weighs the corners more (6.1e-4 measured). The criterion: within a factor 2.
  EXPECT_LT(std::sqrt(se / 600.0), 2 * 4.73e-4);
  write("eval.csv", "0.5,0.5\n0.25,0.75\n");
  r = ksum("interpolate --data " + path("data.npy") + " --dim 2 --eval " + path("eval.csv") +
           " --eps loocv -o " + path("at.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("LOOCV eps"), std::string::npos);
  const auto at = ksum::io::read_table(path("at.csv"));
  EXPECT_NEAR(at(0, 2), ksum::datasets::franke(0.5, 0.5), 1e-4);
  write("far.csv", "2,2\n");
  expect_failure("interpolate --data " + path("data.npy") + " --dim 2 --eval " + path("far.csv") +
                     " -o " + path("far_out.csv"),
                 1, "outside the data's bounding box");
  expect_failure("interpolate --data " + path("data.npy") +
                     " --dim 2 --grid 10x10 --kernel tps -o " + path("t.csv"),
                 1, "strictly positive definite");
  expect_failure("interpolate --data " + path("data.npy") + " -o " + path("t.csv"), 1,
                 "exactly one of --eval");
  // Thin-plate splines with their linear polynomial (--degree 1).
  r = ksum("interpolate --data " + path("data.npy") + " --dim 2 --eval " + path("eval.csv") +
           " --kernel tps --degree 1 --eps 1 -o " + path("tps.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto tps = ksum::io::read_table(path("tps.csv"));
  EXPECT_NEAR(tps(1, 2), ksum::datasets::franke(0.25, 0.75), 1e-3);
  // A heat map of the grid: a real PNG (signature and size in the IHDR chunk).
  r = ksum("interpolate --data " + path("data.npy") + " --dim 2 --grid 50x40 --eps 10 -o " +
           path("g2.csv") + " --plot " + path("map.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  std::ifstream png(dir / "map.png", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(png)), {});
  ASSERT_GT(bytes.size(), 33u);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
  const auto be32 = [&](std::size_t at) {
    return (std::uint32_t(std::uint8_t(bytes[at])) << 24) |
           (std::uint32_t(std::uint8_t(bytes[at + 1])) << 16) |
           (std::uint32_t(std::uint8_t(bytes[at + 2])) << 8) | std::uint8_t(bytes[at + 3]);
  };
  EXPECT_EQ(be32(16), 50u * 10); // 10 pixels per cell for a 50-cell-wide grid
  EXPECT_EQ(be32(20), 40u * 10);
  expect_failure("interpolate --data " + path("data.npy") + " --dim 2 --eval " + path("eval.csv") +
                     " -o " + path("g3.csv") + " --plot " + path("m2.png"),
                 1, "--plot needs --grid");
}

TEST_F(Cli, DemoRunsAndReportsErrorAndSpeed) {
  const auto r = ksum("demo --n 600 --backend cpu");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("rel. error"), std::string::npos);
  EXPECT_NE(r.output.find("multiquadric"), std::string::npos);
}

TEST_F(Cli, HelpExplainsTheCommand) {
  const auto r = ksum("sum --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("--gradient"), std::string::npos);
  EXPECT_NE(r.output.find("self term"), std::string::npos);
}

} // namespace
