// ksum bsm end to end: every input format (.npy in C and Fortran order, float32 and float64, CSV,
// Matrix Market coordinate and array, general and symmetric) inverted by every method and checked
// by multiplying back, the rank-m update against the updated matrix, the solve, the refusals to
// overwrite, and bad input with its message and exit code.
//
// Tolerance: the test matrix is diagonally dominant with κ_F(A) < 30, so an fp64 inverse B has
// max |A B − I| ≲ n κ u ≈ 1e-13; 1e-12 leaves a margin. A float32 run gets 1e-4 (u = 6e-8).
#include "support/cli_run.hpp"

#include <ksum/io.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>

namespace {

class BsmCli : public Cli {};

using ksum::Table;

constexpr double kTolF64 = 1e-12;
constexpr double kTolF32 = 1e-4;

// Rows dominant by a factor ~2, a few negative entries and a non-constant diagonal, so A0 = diag(A)
// is not a multiple of I.
Table<double> test_matrix(std::int64_t n) {
  Table<double> A(n, n);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      A(i, j) = i == j ? double(n + i) : std::sin(double(3 * i + 7 * j + 1));
  return A;
}

Table<double> symmetric(Table<double> A) {
  for (std::int64_t j = 0; j < A.cols(); ++j)
    for (std::int64_t i = 0; i < j; ++i)
      A(i, j) = A(j, i);
  return A;
}

// max |M B − I|
double identity_error(const Table<double> &M, const Table<double> &B) {
  const std::int64_t n = M.rows();
  double worst = 0;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < n; ++k)
        s += M(i, k) * B(k, j);
      worst = std::max(worst, std::abs(s - (i == j ? 1.0 : 0.0)));
    }
  return worst;
}

// A Fortran-ordered float32 .npy (write_table writes C order), byte by byte as numpy lays it out.
void write_npy_f32_fortran(const std::string &file, const Table<double> &A) {
  std::string dict = "{'descr': '<f4', 'fortran_order': True, 'shape': (" +
                     std::to_string(A.rows()) + ", " + std::to_string(A.cols()) + "), }";
  while ((10 + dict.size() + 1) % 64 != 0)
    dict.push_back(' ');
  dict.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(char(dict.size() & 0xff));
  out.push_back(char(dict.size() >> 8));
  out += dict;
  for (std::int64_t j = 0; j < A.cols(); ++j)
    for (std::int64_t i = 0; i < A.rows(); ++i) {
      const auto bits = std::bit_cast<std::uint32_t>(float(A(i, j)));
      for (int b = 0; b < 4; ++b)
        out.push_back(char((bits >> (8 * b)) & 0xff));
    }
  std::ofstream(file, std::ios::binary) << out;
}

std::string csv(const Table<double> &A) {
  std::ostringstream s;
  s.precision(17);
  for (std::int64_t i = 0; i < A.rows(); ++i)
    for (std::int64_t j = 0; j < A.cols(); ++j)
      s << A(i, j) << (j + 1 < A.cols() ? "," : "\n");
  return s.str();
}

std::string mtx_coordinate(const Table<double> &A) {
  std::ostringstream s;
  s.precision(17);
  s << "%%MatrixMarket matrix coordinate real general\n% a comment line\n"
    << A.rows() << " " << A.cols() << " " << A.rows() * A.cols() << "\n";
  for (std::int64_t j = 0; j < A.cols(); ++j)
    for (std::int64_t i = 0; i < A.rows(); ++i)
      s << i + 1 << " " << j + 1 << " " << A(i, j) << "\n";
  return s.str();
}

// The lower triangle column by column, as the symmetric array format stores it.
std::string mtx_array_symmetric(const Table<double> &A) {
  std::ostringstream s;
  s.precision(17);
  s << "%%MatrixMarket matrix array real symmetric\n" << A.rows() << " " << A.cols() << "\n";
  for (std::int64_t j = 0; j < A.cols(); ++j)
    for (std::int64_t i = j; i < A.rows(); ++i)
      s << A(i, j) << "\n";
  return s.str();
}

// The number after `key` in the output (e.g. the residual), or NaN.
double number_after(const std::string &text, const std::string &key) {
  const auto p = text.find(key);
  return p == std::string::npos ? NAN : std::strtod(text.c_str() + p + key.size(), nullptr);
}

const std::string kResidual = "||A inv(A) - I||_F / sqrt(n) = ";

TEST_F(BsmCli, EveryInputFormatGivesTheInverse) {
  const Table<double> A = test_matrix(9), S = symmetric(A);
  ksum::io::write_table(path("A.npy"), A);
  write_npy_f32_fortran(path("A32.npy"), A);
  write("A.csv", csv(A));
  write("A.mtx", mtx_coordinate(A));
  write("S.mtx", mtx_array_symmetric(S));
  struct Input {
    std::string file;
    const Table<double> *matrix;
    double tol;
  };
  // The float32 file holds A rounded to float; the inverse is of that matrix.
  const Table<double> A32 = A.cast<float>().cast<double>();
  for (const Input &in :
       {Input{"A.npy", &A, kTolF64}, Input{"A32.npy", &A32, kTolF64}, Input{"A.csv", &A, kTolF64},
        Input{"A.mtx", &A, kTolF64}, Input{"S.mtx", &S, kTolF64}}) {
    const auto r = ksum("bsm " + path(in.file) + " -o " + path("inv.npy") + " -f");
    ASSERT_EQ(r.code, 0) << in.file << "\n" << r.output;
    EXPECT_NE(r.output.find(in.file + ": 9 × 9, f64"), std::string::npos) << r.output;
    const Table<double> B = ksum::io::read_table(path("inv.npy"));
    ASSERT_EQ(B.rows(), 9);
    ASSERT_EQ(B.cols(), 9);
    EXPECT_LE(identity_error(*in.matrix, B), in.tol) << in.file;
    EXPECT_LE(number_after(r.output, kResidual), in.tol) << r.output;
  }
  // float32 arithmetic, CSV output read back.
  const auto r = ksum("bsm " + path("A32.npy") + " --precision f32 -o " + path("inv.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_LE(identity_error(A32, ksum::io::read_table(path("inv.csv"))), kTolF32);
}

TEST_F(BsmCli, EveryMethodAndBlockSize) {
  const Table<double> A = test_matrix(13);
  ksum::io::write_table(path("A.npy"), A);
  for (const std::string opts :
       {"--method svsm", "--method bsm --block 1", "--method bsm --block 4", "--method bsm",
        "--method rmbsm --block 5", "--method rmbsm --a0 identity", "--method lu"}) {
    const auto r =
        ksum("bsm " + path("A.npy") + " " + opts + " --threads 1 -f -o " + path("inv.npy"));
    ASSERT_EQ(r.code, 0) << opts << "\n" << r.output;
    EXPECT_LE(identity_error(A, ksum::io::read_table(path("inv.npy"))), kTolF64) << opts;
    for (const char *key : {"method       ", "time         ", "GFlop/s", kResidual.c_str()})
      EXPECT_NE(r.output.find(key), std::string::npos) << opts << ": " << key << "\n" << r.output;
  }
  auto r = ksum("bsm " + path("A.npy") + " --method bsm --block 4");
  EXPECT_NE(r.output.find("method       bsm, block 4, A0 = diag(A)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("fallback     not taken"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("pivots       min rho_k = "), std::string::npos) << r.output;
  r = ksum("bsm " + path("A.npy") + " --method lu");
  EXPECT_NE(r.output.find("condition    reciprocal 1-norm estimate"), std::string::npos)
      << r.output;
}

TEST_F(BsmCli, RandomMatricesAndSummary) {
  for (const std::string kind : {"random", "dominant", "graded"}) {
    const auto r = ksum("bsm --random 60 --kind " + kind + " --seed 3");
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("--random 60 (" + kind + ", seed 3): 60 × 60, f64"), std::string::npos)
        << r.output;
    // graded has κ up to ~1e6 (bsm_test.cpp): its residual is larger.
    EXPECT_LE(number_after(r.output, kResidual), kind == "graded" ? 1e-9 : kTolF64) << r.output;
  }
  const auto r = ksum("bsm --random 40 --precision f32 --summary " + path("s.txt"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_LE(number_after(r.output, kResidual), kTolF32) << r.output;
  std::ifstream in(path("s.txt"));
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty());
  EXPECT_NE(r.output.find(s.str()), std::string::npos) << "the summary file is stdout's report";
}

TEST_F(BsmCli, UpdateAndSolveMatchTheUpdatedMatrix) {
  const std::int64_t n = 12, m = 3;
  const Table<double> A = test_matrix(n);
  Table<double> X(n, m), Y(n, m), b(n, 2);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t k = 0; k < m; ++k) {
      X(i, k) = std::cos(double(i * m + k));
      Y(i, k) = 0.5 * std::sin(double(2 * i + k + 1));
    }
    b(i, 0) = 1;
    b(i, 1) = double(i);
  }
  Table<double> A1 = A;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t k = 0; k < m; ++k)
        A1(i, j) += X(i, k) * Y(j, k);
  ksum::io::write_table(path("A.npy"), A);
  ksum::io::write_table(path("X.npy"), X);
  ksum::io::write_table(path("Y.csv"), Y);
  ksum::io::write_table(path("b.npy"), b);
  const auto r =
      ksum("bsm " + path("A.npy") + " --update " + path("X.npy") + " " + path("Y.csv") + " --rhs " +
           path("b.npy") + " --solution " + path("x.npy") + " -o " + path("B.npy"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("update       rank 3: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("refactoring (lu) "), std::string::npos) << r.output;
  EXPECT_LE(number_after(r.output, "||(A + X Y^T) B - I||_F / sqrt(n) = "), kTolF64) << r.output;
  EXPECT_LE(number_after(r.output, "||A x - b||_F / ||b||_F = "), kTolF64) << r.output;
  const Table<double> B = ksum::io::read_table(path("B.npy"));
  EXPECT_LE(identity_error(A1, B), kTolF64);
  const Table<double> x = ksum::io::read_table(path("x.npy"));
  ASSERT_EQ(x.rows(), n);
  ASSERT_EQ(x.cols(), 2);
  for (std::int64_t c = 0; c < 2; ++c)
    for (std::int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (std::int64_t k = 0; k < n; ++k)
        s += A1(i, k) * x(k, c);
      EXPECT_NEAR(s, b(i, c), kTolF64 * (1 + double(n))) << "row " << i << " rhs " << c;
    }
  expect_failure("bsm " + path("A.npy") + " --update " + path("X.npy") + " " + path("b.npy"), 1,
                 "both must be n × m");
}

TEST_F(BsmCli, BreakdownIsReportedOrFallsBackToLu) {
  // Nonsingular, but its leading 3 × 3 block [[2,1,1],[1,2,1],[3,3,2]] is singular: the
  // Sherman–Morrison recursion with A0 = diag(A) breaks down at step 3 (bsm_test.cpp).
  write("L.csv", "2,1,1,1,0,0\n1,2,1,0,1,0\n3,3,2,0,0,1\n1,0,0,5,0,0\n0,1.1,0,0,5,0\n"
                 "0,0,1.2,0,0,5\n");
  expect_failure("bsm " + path("L.csv") + " --method svsm --fallback error", 1,
                 "svsm broke down at step 3");
  const auto r = ksum("bsm " + path("L.csv") + " --method svsm -o " + path("inv.npy"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("fallback     lu: svsm broke down at step 3"), std::string::npos)
      << r.output;
  EXPECT_LE(number_after(r.output, kResidual), kTolF64) << r.output;
  write("Z.csv", "1,2\n2,4\n");
  expect_failure("bsm " + path("Z.csv") + " --method lu", 1, "the matrix A is singular");
}

TEST_F(BsmCli, RefusesToOverwrite) {
  ksum::io::write_table(path("A.npy"), test_matrix(4));
  write("inv.npy", "keep me");
  expect_failure("bsm " + path("A.npy") + " -o " + path("inv.npy"), 1,
                 "inv.npy: file exists (use --force to overwrite)");
  std::ifstream in(path("inv.npy"));
  std::string kept;
  std::getline(in, kept);
  EXPECT_EQ(kept, "keep me");
  expect_failure("bsm " + path("A.npy") + " -f -o " + path("A.npy"), 1,
                 "the output would overwrite an input file");
  write("x.npy", "keep me too");
  expect_failure("bsm " + path("A.npy") + " --rhs " + path("A.npy") + " --solution " +
                     path("x.npy"),
                 1, "x.npy: file exists");
  EXPECT_EQ(ksum("bsm " + path("A.npy") + " -f -o " + path("inv.npy")).code, 0);
  EXPECT_EQ(ksum::io::read_table(path("inv.npy")).rows(), 4);
}

TEST_F(BsmCli, BadInputIsNamed) {
  ksum::io::write_table(path("R.npy"), Table<double>(3, 4, 1.0));
  expect_failure("bsm " + path("R.npy"), 1, "R.npy: the matrix is 3 × 4; an inverse needs");
  Table<double> A = test_matrix(4);
  A(1, 3) = NAN;
  ksum::io::write_table(path("N.npy"), A);
  expect_failure("bsm " + path("N.npy"), 1,
                 "N.npy: non-finite value nan at index 7 (row 1, "
                 "column 3)");
  write("N.csv", "1,0,0\n0,1,nan\n0,0,1\n");
  expect_failure("bsm " + path("N.csv"), 1, "N.csv:2:3: non-finite value");
  write("N.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 3 NaN\n"
                 "3 3 1\n");
  expect_failure("bsm " + path("N.mtx"), 1,
                 "N.mtx:4: non-finite value nan at row 2, column 3 (1-based)");
  write("P.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 abc\n");
  expect_failure("bsm " + path("P.mtx"), 1, "P.mtx:4: cannot parse 'abc' as a number");
  write("O.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n3 1 1\n");
  expect_failure("bsm " + path("O.mtx"), 1, "entry (3, 1) lies outside the 2 × 2 matrix");
  write("S.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n2 2 1\n");
  expect_failure("bsm " + path("S.mtx"), 1, "the file ends after 2 of its 3 entries");
  write("C.mtx", "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n");
  expect_failure("bsm " + path("C.mtx"), 1, "field 'complex'");
  write("H.mtx", "1 2 3\n");
  expect_failure("bsm " + path("H.mtx"), 1, "not a Matrix Market matrix");
  expect_failure("bsm " + path("missing.npy"), 1,
                 "missing.npy: cannot open for reading: No such file or directory");
  expect_failure("bsm " + path("missing.mtx"), 1, "missing.mtx: cannot open for reading");
  expect_failure("bsm", 1, "give a matrix file (.npy, .csv or .mtx) or --random N");
  expect_failure("bsm --random 5 --kind graded " + path("R.npy"), 1, "not both");
  expect_failure("bsm " + path("R.npy") + " --seed 3", 1, "--seed and --kind choose");
  expect_failure("bsm --random 5 --method svsm --block 2", 1, "--method svsm has none");
  expect_failure("bsm --random 5 --solution " + path("x.npy"), 1, "--solution FILE needs --rhs");
  const auto r = ksum("bsm --random 5 --method qr");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("--method: qr not in {svsm,bsm,rmbsm,lu}"), std::string::npos)
      << r.output;
}

} // namespace
