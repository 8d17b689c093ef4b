#include <ksum/error.hpp>
#include <ksum/io.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using ksum::Error;
using ksum::ErrorCode;
using ksum::Table;
using ksum::io::ReadOptions;
using ksum::io::WriteOptions;

namespace {

class IoTest : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::random_device rd;
    dir_ = fs::temp_directory_path() /
           ("ksum_io_test_" + std::string(info->name()) + "_" + std::to_string(rd()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  fs::path file(const std::string &name) const { return dir_ / name; }

  fs::path write_file(const std::string &name, const std::string &bytes) const {
    const fs::path p = file(name);
    std::ofstream out(p, std::ios::binary);
    out << bytes;
    return p;
  }

  static std::string read_file(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto &e : fs::directory_iterator(dir_))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path dir_;
};

// Runs f, which must throw ksum::Error with `code`, and returns the message for further checks.
template <class F> std::string error_message(F &&f, ErrorCode code) {
  try {
    f();
  } catch (const Error &e) {
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(code))
        << "got " << ksum::to_string(e.code()) << ": " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected ksum::Error(" << ksum::to_string(code) << ")";
  return {};
}

#define EXPECT_CONTAINS(haystack, needle)                                                          \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)                                 \
      << "message: " << (haystack) << "\nexpected to contain: " << (needle)

Table<double> make_table(std::int64_t rows, std::int64_t cols) {
  Table<double> t(rows, cols);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      t(i, j) = (static_cast<double>(i) + 0.1) * std::pow(-3.7, static_cast<double>(j)) / 7.0;
  return t;
}

void expect_same(const Table<double> &a, const Table<double> &b) {
  ASSERT_EQ(a.rows(), b.rows());
  ASSERT_EQ(a.cols(), b.cols());
  for (std::int64_t i = 0; i < a.rows(); ++i)
    for (std::int64_t j = 0; j < a.cols(); ++j)
      EXPECT_EQ(a(i, j), b(i, j)) << "at (" << i << ", " << j << ")";
  EXPECT_EQ(a.names, b.names);
}

template <class U> void append_le(std::string &out, U u) {
  for (std::size_t b = 0; b < sizeof(U); ++b)
    out.push_back(static_cast<char>((u >> (8 * b)) & 0xff));
}

std::string f8_bytes(const std::vector<double> &values) {
  std::string out;
  for (double v : values)
    append_le(out, std::bit_cast<std::uint64_t>(v));
  return out;
}

std::string f4_bytes(const std::vector<float> &values) {
  std::string out;
  for (float v : values)
    append_le(out, std::bit_cast<std::uint32_t>(v));
  return out;
}

// A .npy file as numpy lays it out, with the header dict given verbatim.
std::string npy(const std::string &dict, const std::string &data, int major = 1) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  if (major == 1)
    append_le(out, static_cast<std::uint16_t>(header.size()));
  else
    append_le(out, static_cast<std::uint32_t>(header.size()));
  return out + header + data;
}

std::string npy_dict(const std::string &descr, bool fortran, const std::string &shape) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

const double nan = std::numeric_limits<double>::quiet_NaN();

// ---- CSV reading and round trips ----

TEST_F(IoTest, CsvRoundTripWithHeader) {
  Table<double> t = make_table(5, 3);
  t(0, 0) = 1e300;
  t(1, 1) = -1e-300;
  t(2, 2) = 0.1;
  t(3, 0) = -0.0;
  t.names = {"x", "y", "weight"};
  const fs::path p = file("data.csv");
  ksum::io::write_table(p, t);
  expect_same(ksum::io::read_table(p), t);
}

TEST_F(IoTest, CsvRoundTripWithoutHeader) {
  const Table<double> t = make_table(4, 2);
  const fs::path p = file("data.txt");
  ksum::io::write_table(p, t);
  const Table<double> back = ksum::io::read_table(p);
  expect_same(back, t);
  EXPECT_TRUE(back.names.empty());
}

TEST_F(IoTest, CsvWritesFmtGeneralFormat) {
  Table<double> t(2, 2);
  t(0, 0) = 0.1;
  t(0, 1) = 3;
  t(1, 0) = -0.375;
  t(1, 1) = 1e21;
  t.names = {"a", "b"};
  const fs::path p = file("out.csv");
  ksum::io::write_table(p, t);
  EXPECT_EQ(read_file(p), "a,b\n0.10000000000000001,3\n-0.375,1e+21\n");
  WriteOptions six;
  six.overwrite = true;
  six.significant_digits = 6;
  ksum::io::write_table(p, t, six);
  EXPECT_EQ(read_file(p), "a,b\n0.1,3\n-0.375,1e+21\n");
}

TEST_F(IoTest, CsvNineDigitsRoundTripFloats) {
  Table<double> t = make_table(6, 2);
  for (std::int64_t i = 0; i < t.rows(); ++i)
    for (std::int64_t j = 0; j < t.cols(); ++j)
      t(i, j) = static_cast<float>(t(i, j));
  WriteOptions o;
  o.significant_digits = 9;
  const fs::path p = file("f.csv");
  ksum::io::write_table(p, t, o);
  const Table<double> back = ksum::io::read_table(p);
  for (std::int64_t i = 0; i < t.rows(); ++i)
    for (std::int64_t j = 0; j < t.cols(); ++j)
      EXPECT_EQ(static_cast<float>(back(i, j)), static_cast<float>(t(i, j)));
}

TEST_F(IoTest, CsvHeaderDetection) {
  const Table<double> named = ksum::io::read_table(write_file("a.csv", "x,y\n1,2\n"));
  EXPECT_EQ(named.names, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(named.rows(), 1);

  const Table<double> plain = ksum::io::read_table(write_file("b.csv", "1,2\n3,4\n"));
  EXPECT_TRUE(plain.names.empty());
  EXPECT_EQ(plain.rows(), 2);
  EXPECT_EQ(plain(1, 0), 3);

  // One non-number is enough; the numeric-looking names are kept as text.
  const Table<double> mixed = ksum::io::read_table(write_file("c.csv", "t, 2.5\n1,2\n"));
  EXPECT_EQ(mixed.names, (std::vector<std::string>{"t", "2.5"}));
  EXPECT_EQ(mixed.rows(), 1);
}

TEST_F(IoTest, CsvCommentsBlankLinesAndSpaces) {
  const fs::path p = write_file("c.csv", "# produced by a test\n\n   # indented comment\n"
                                         " x , y \n\n  1 ,\t2  \n   \n3,4\n# trailing\n");
  const Table<double> t = ksum::io::read_table(p);
  EXPECT_EQ(t.names, (std::vector<std::string>{"x", "y"}));
  ASSERT_EQ(t.rows(), 2);
  EXPECT_EQ(t(0, 0), 1);
  EXPECT_EQ(t(0, 1), 2);
  EXPECT_EQ(t(1, 0), 3);
  EXPECT_EQ(t(1, 1), 4);
}

TEST_F(IoTest, CsvCrlfAndMissingFinalNewline) {
  const Table<double> t = ksum::io::read_table(write_file("w.csv", "a,b\r\n1,2\r\n\r\n3,4"));
  EXPECT_EQ(t.names, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(t.rows(), 2);
  EXPECT_EQ(t(1, 1), 4);
}

TEST_F(IoTest, CsvByteOrderMarkPlusSignAndUnderflow) {
  const Table<double> t =
      ksum::io::read_table(write_file("bom.csv", "\xEF\xBB\xBFvalue\n+1.5\n1e-400\n-1e-400\n.5\n"));
  EXPECT_EQ(t.names, (std::vector<std::string>{"value"}));
  ASSERT_EQ(t.rows(), 4);
  EXPECT_EQ(t(0, 0), 1.5);
  EXPECT_EQ(t(1, 0), 0.0);
  EXPECT_EQ(t(2, 0), 0.0);
  EXPECT_TRUE(std::signbit(t(2, 0)));
  EXPECT_EQ(t(3, 0), 0.5);
}

TEST_F(IoTest, CsvExpectColsMatching) {
  ReadOptions o;
  o.expect_cols = 2;
  EXPECT_EQ(ksum::io::read_table(write_file("d.csv", "1,2\n"), o).cols(), 2);
}

// ---- CSV contract: one bad input each ----

TEST_F(IoTest, CsvMalformedNumber) {
  std::string text = "a,b,c\n";
  for (int line = 2; line < 12; ++line)
    text += "1,2,3\n";
  text += "1,2,abc\n4,5,6\n";
  const fs::path p = write_file("data.csv", text);
  const std::string msg = error_message([&] { ksum::io::read_table(p); }, ErrorCode::parse);
  EXPECT_CONTAINS(msg, p.string() + ":12:3: cannot parse 'abc' as a number");
}

TEST_F(IoTest, CsvRaggedRow) {
  const fs::path p = write_file("data.csv", "1,2,3\n4,5,6\n# note\n7,8,9\n\n1,2,3\n1,2\n");
  const std::string msg = error_message([&] { ksum::io::read_table(p); }, ErrorCode::parse);
  EXPECT_CONTAINS(msg, p.string() + ":7: expected 3 columns, found 2");
}

TEST_F(IoTest, CsvHeaderWidthDiffersFromData) {
  const fs::path p = write_file("data.csv", "a,b,c\n1,2\n3,4\n");
  const std::string msg = error_message([&] { ksum::io::read_table(p); }, ErrorCode::parse);
  EXPECT_CONTAINS(msg, p.string() + ":1:");
  EXPECT_CONTAINS(msg, "line 2");
}

TEST_F(IoTest, CsvEmptyField) {
  const fs::path p = write_file("data.csv", "1,2,3\n4,,6\n");
  const std::string msg = error_message([&] { ksum::io::read_table(p); }, ErrorCode::parse);
  EXPECT_CONTAINS(msg, p.string() + ":2:2: empty field");

  const fs::path q = write_file("trailing.csv", "1,2,\n");
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(q); }, ErrorCode::parse),
                  q.string() + ":1:3: empty field");
}

TEST_F(IoTest, CsvNaN) {
  const fs::path p = write_file("data.csv", "x,y\n1,2\n3,4\n# c\n5,nan\n");
  const std::string msg = error_message([&] { ksum::io::read_table(p); }, ErrorCode::non_finite);
  EXPECT_CONTAINS(msg, p.string() + ":5:2: non-finite value 'nan'");
}

TEST_F(IoTest, CsvInf) {
  const fs::path p = write_file("data.csv", "1,2\n-inf,4\n");
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(p); }, ErrorCode::non_finite),
                  p.string() + ":2:1: non-finite value '-inf'");
  // A literal beyond the double range would silently become inf.
  const fs::path q = write_file("big.csv", "1,2\n3,1e400\n");
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(q); }, ErrorCode::non_finite),
                  q.string() + ":2:2: value '1e400' is too large");
}

TEST_F(IoTest, CsvEmptyFile) {
  const fs::path p = write_file("data.csv", "");
  const std::string msg = error_message([&] { ksum::io::read_table(p); }, ErrorCode::empty_input);
  EXPECT_CONTAINS(msg, p.string() + ": no data rows");

  const fs::path q = write_file("comments.csv", "# nothing\n\n");
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(q); }, ErrorCode::empty_input),
                  q.string() + ": no data rows");

  ReadOptions o;
  o.allow_empty = true;
  const Table<double> t = ksum::io::read_table(p, o);
  EXPECT_EQ(t.rows(), 0);
  EXPECT_EQ(t.cols(), 0);
}

TEST_F(IoTest, CsvHeaderOnly) {
  const fs::path p = write_file("data.csv", "# c\nx,y,z\n");
  const std::string msg = error_message([&] { ksum::io::read_table(p); }, ErrorCode::empty_input);
  EXPECT_CONTAINS(msg, p.string() + ": no data rows");
  EXPECT_CONTAINS(msg, "line 2");

  ReadOptions o;
  o.allow_empty = true;
  const Table<double> t = ksum::io::read_table(p, o);
  EXPECT_EQ(t.rows(), 0);
  EXPECT_EQ(t.cols(), 3);
  EXPECT_EQ(t.names, (std::vector<std::string>{"x", "y", "z"}));
}

TEST_F(IoTest, CsvWrongExpectCols) {
  const fs::path p = write_file("data.csv", "1,2,3\n");
  ReadOptions o;
  o.expect_cols = 4;
  const std::string msg =
      error_message([&] { ksum::io::read_table(p, o); }, ErrorCode::shape_mismatch);
  EXPECT_CONTAINS(msg, p.string() + ": expected 4 columns, found 3");
}

TEST_F(IoTest, NegativeExpectColsIsInvalid) {
  const fs::path p = write_file("data.csv", "1\n");
  ReadOptions o;
  o.expect_cols = -2;
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(p, o); }, ErrorCode::invalid_argument),
                  p.string());
}

TEST_F(IoTest, MissingFile) {
  const fs::path p = file("missing.csv");
  const std::string msg = error_message([&] { ksum::io::read_table(p); }, ErrorCode::io);
  EXPECT_CONTAINS(msg, p.string());
  EXPECT_CONTAINS(msg, "No such file or directory");
  const fs::path q = file("missing.npy");
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(q); }, ErrorCode::io), q.string());
}

TEST_F(IoTest, DirectoryIsNotAFile) {
  const fs::path p = file("folder.csv");
  fs::create_directory(p);
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(p); }, ErrorCode::io), p.string());
}

// ---- NPY reading and round trips ----

TEST_F(IoTest, NpyRoundTripFloat64) {
  Table<double> t = make_table(7, 3);
  t(6, 2) = 1e-310; // subnormal
  const fs::path p = file("x.npy");
  ksum::io::write_table(p, t);
  const std::string bytes = read_file(p);
  ASSERT_GE(bytes.size(), 10u);
  const std::size_t header_len = static_cast<unsigned char>(bytes[8]) |
                                 static_cast<std::size_t>(static_cast<unsigned char>(bytes[9]))
                                     << 8;
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(bytes[10 + header_len - 1], '\n');
  EXPECT_EQ(bytes.substr(10, 60), "{'descr': '<f8', 'fortran_order': False, 'shape': (7, 3), } ");
  EXPECT_EQ(bytes.size(), 10 + header_len + 7 * 3 * 8);
  expect_same(ksum::io::read_table(p), t);
}

TEST_F(IoTest, NpyRoundTripFloat32) {
  Table<double> t = make_table(4, 2);
  for (std::int64_t i = 0; i < t.rows(); ++i)
    for (std::int64_t j = 0; j < t.cols(); ++j)
      t(i, j) = static_cast<float>(t(i, j));
  WriteOptions o;
  o.npy_float32 = true;
  const fs::path p = file("x.NPY");
  ksum::io::write_table(p, t, o);
  EXPECT_NE(read_file(p).find("'descr': '<f4'"), std::string::npos);
  EXPECT_EQ(read_file(p).size(), 128 + 4 * 2 * 4u);
  expect_same(ksum::io::read_table(p), t);
}

TEST_F(IoTest, NpyRoundTripOneColumnAndEmptyRows) {
  const Table<double> t = make_table(3, 1);
  const fs::path p = file("col.npy");
  ksum::io::write_table(p, t);
  expect_same(ksum::io::read_table(p), t);

  const Table<double> none(0, 2);
  const fs::path q = file("none.npy");
  ksum::io::write_table(q, none);
  ReadOptions o;
  o.allow_empty = true;
  const Table<double> back = ksum::io::read_table(q, o);
  EXPECT_EQ(back.rows(), 0);
  EXPECT_EQ(back.cols(), 2);
}

TEST_F(IoTest, NpyReadsOneDimensional) {
  const fs::path p =
      write_file("v.npy", npy(npy_dict("<f8", false, "(3,)"), f8_bytes({1, -2, 3.5})));
  const Table<double> t = ksum::io::read_table(p);
  ASSERT_EQ(t.rows(), 3);
  ASSERT_EQ(t.cols(), 1);
  EXPECT_EQ(t(0, 0), 1);
  EXPECT_EQ(t(1, 0), -2);
  EXPECT_EQ(t(2, 0), 3.5);
}

TEST_F(IoTest, NpyReadsCAndFortranOrder) {
  // The matrix [[1, 2, 3], [4, 5, 6]] in both layouts.
  const fs::path c =
      write_file("c.npy", npy(npy_dict("<f8", false, "(2, 3)"), f8_bytes({1, 2, 3, 4, 5, 6})));
  const fs::path f =
      write_file("f.npy", npy(npy_dict("<f4", true, "(2, 3)"), f4_bytes({1, 4, 2, 5, 3, 6})));
  for (const fs::path &p : {c, f}) {
    const Table<double> t = ksum::io::read_table(p);
    ASSERT_EQ(t.rows(), 2);
    ASSERT_EQ(t.cols(), 3);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        EXPECT_EQ(t(i, j), 3 * i + j + 1) << p << " at (" << i << ", " << j << ")";
  }
}

TEST_F(IoTest, NpyReadsVersion2AndLegacyHeaders) {
  const fs::path v2 =
      write_file("v2.npy", npy(npy_dict("<f8", false, "(2, 1)"), f8_bytes({7, 8}), 2));
  const Table<double> t = ksum::io::read_table(v2);
  ASSERT_EQ(t.rows(), 2);
  EXPECT_EQ(t(1, 0), 8);

  // Older numpy: double quotes, no trailing comma, Python 2 longs.
  const fs::path old = write_file(
      "old.npy", npy("{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (1L, 2L)}",
                     f4_bytes({0.5f, 0.25f})));
  const Table<double> u = ksum::io::read_table(old);
  ASSERT_EQ(u.cols(), 2);
  EXPECT_EQ(u(0, 1), 0.25);
}

// ---- NPY contract ----

TEST_F(IoTest, NpyBadMagic) {
  const fs::path p = write_file("x.npy", "1,2,3\n4,5,6\n");
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(p); }, ErrorCode::parse),
                  p.string() + ": not a .npy file");
  const fs::path q = write_file("short.npy", "\x93NU");
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(q); }, ErrorCode::parse), q.string());
}

TEST_F(IoTest, NpyBigEndian) {
  const fs::path p = write_file("x.npy", npy(npy_dict(">f8", false, "(1,)"), std::string(8, '\0')));
  const std::string msg = error_message([&] { ksum::io::read_table(p); }, ErrorCode::unsupported);
  EXPECT_CONTAINS(msg, p.string() + ": big-endian dtype '>f8'");
}

TEST_F(IoTest, NpyIntegerDtype) {
  const fs::path p = write_file("x.npy", npy(npy_dict("<i8", false, "(1,)"), std::string(8, '\0')));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(p); }, ErrorCode::unsupported),
                  p.string() + ": dtype '<i8' is not supported");
  const fs::path q = write_file(
      "s.npy",
      npy("{'descr': [('a', '<f8'), ('b', '<i4')], 'fortran_order': False, 'shape': (1,), }",
          std::string(12, '\0')));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(q); }, ErrorCode::unsupported),
                  q.string() + ": structured dtype");
}

TEST_F(IoTest, NpyThreeDimensional) {
  const fs::path p = write_file(
      "x.npy", npy(npy_dict("<f8", false, "(2, 2, 2)"), f8_bytes({1, 2, 3, 4, 5, 6, 7, 8})));
  const std::string msg = error_message([&] { ksum::io::read_table(p); }, ErrorCode::unsupported);
  EXPECT_CONTAINS(msg, p.string() + ": 3-dimensional array of shape (2, 2, 2)");
  const fs::path q = write_file("scalar.npy", npy(npy_dict("<f8", false, "()"), f8_bytes({1})));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(q); }, ErrorCode::unsupported),
                  q.string() + ": 0-dimensional");
}

TEST_F(IoTest, NpyTruncated) {
  const fs::path p =
      write_file("x.npy", npy(npy_dict("<f8", false, "(3, 2)"), f8_bytes({1, 2, 3, 4, 5})));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(p); }, ErrorCode::parse),
                  p.string() + ": truncated: expected 48 bytes of data, found 40");
  const std::string full = npy(npy_dict("<f8", false, "(3, 2)"), f8_bytes({1, 2, 3, 4, 5, 6}));
  const fs::path q = write_file("header.npy", full.substr(0, 40));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(q); }, ErrorCode::parse),
                  q.string() + ": truncated .npy header");
}

TEST_F(IoTest, NpyTrailingBytes) {
  const fs::path p = write_file("x.npy", npy(npy_dict("<f8", false, "(2,)"), f8_bytes({1, 2, 3})));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(p); }, ErrorCode::parse),
                  p.string() + ": 8 unexpected bytes");
}

TEST_F(IoTest, NpyNaN) {
  // Shape (4, 2) in C order: flat index 7 is (row 3, column 1).
  const fs::path p = write_file(
      "x.npy", npy(npy_dict("<f8", false, "(4, 2)"), f8_bytes({1, 2, 3, 4, 5, 6, 7, nan})));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(p); }, ErrorCode::non_finite),
                  p.string() + ": non-finite value nan at index 7 (row 3, column 1)");

  // The first bad value in file order wins, although Table's column-major memory holds index 2
  // (row 1, column 0) before index 1 (row 0, column 1).
  const fs::path q = write_file(
      "q.npy", npy(npy_dict("<f8", false, "(4, 2)"), f8_bytes({1, nan, nan, 4, 5, 6, 7, 8})));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(q); }, ErrorCode::non_finite),
                  q.string() + ": non-finite value nan at index 1 (row 0, column 1)");

  // Same shape in Fortran order: file index 6 is (row 2, column 1), index 3 is (row 3, column 0).
  const fs::path f = write_file(
      "f.npy", npy(npy_dict("<f8", true, "(4, 2)"), f8_bytes({1, 2, 3, nan, 5, 6, nan, 8})));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(f); }, ErrorCode::non_finite),
                  f.string() + ": non-finite value nan at index 3 (row 3, column 0)");

  const fs::path g =
      write_file("g.npy", npy(npy_dict("<f4", false, "(3,)"),
                              f4_bytes({1, -std::numeric_limits<float>::infinity(), 2})));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(g); }, ErrorCode::non_finite),
                  g.string() + ": non-finite value -inf at index 1 (row 1, column 0)");
}

TEST_F(IoTest, NpyNoRows) {
  const fs::path p = write_file("x.npy", npy(npy_dict("<f8", false, "(0, 3)"), ""));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(p); }, ErrorCode::empty_input),
                  p.string() + ": no data (shape (0, 3))");
}

TEST_F(IoTest, NpyMalformedHeader) {
  const std::string data = f8_bytes({1});
  const fs::path a = write_file("a.npy", npy("{'descr': '<f8', 'shape': (1,), }", data));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(a); }, ErrorCode::parse),
                  a.string() + ": .npy header lacks 'fortran_order'");
  const fs::path b = write_file("b.npy", npy(npy_dict("<f8", false, "(1)"), data));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(b); }, ErrorCode::parse), b.string());
  const fs::path c = write_file("c.npy", npy("{'descr': '<f8', 'fortran_order': maybe}", data));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(c); }, ErrorCode::parse),
                  c.string() + ": malformed .npy header");
  const fs::path d =
      write_file("d.npy", npy(npy_dict("<f8", false, "(1,)").substr(0, 20) + "x': 1}", data));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(d); }, ErrorCode::parse), d.string());
  const fs::path e = write_file(
      "e.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), 'extra': 'x'}", data));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(e); }, ErrorCode::parse),
                  e.string() + ": .npy header has unexpected key 'extra'");
  const fs::path f = write_file("f.npy", npy(npy_dict("<f8", false, "(-1,)"), data));
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(f); }, ErrorCode::parse), f.string());
}

TEST_F(IoTest, NpyUnknownVersion) {
  std::string bytes = npy(npy_dict("<f8", false, "(1,)"), f8_bytes({1}));
  bytes[6] = 9;
  const fs::path p = write_file("x.npy", bytes);
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(p); }, ErrorCode::unsupported),
                  p.string() + ": .npy format version 9.0");
}

// ---- dispatch and writing ----

TEST_F(IoTest, FormatFromPath) {
  using ksum::io::Format;
  EXPECT_EQ(ksum::io::format_from_path("a/b.csv"), Format::csv);
  EXPECT_EQ(ksum::io::format_from_path("b.TXT"), Format::csv);
  EXPECT_EQ(ksum::io::format_from_path("b.Npy"), Format::npy);
  const std::string msg =
      error_message([] { ksum::io::format_from_path("x.dat"); }, ErrorCode::invalid_argument);
  EXPECT_EQ(msg, "x.dat: unknown file type '.dat' (use .csv or .npy)");
  EXPECT_CONTAINS(
      error_message([] { ksum::io::format_from_path("noext"); }, ErrorCode::invalid_argument),
      "noext: unknown file type");
}

TEST_F(IoTest, UnknownExtensionOnReadAndWrite) {
  const fs::path p = write_file("x.dat", "1\n");
  EXPECT_CONTAINS(error_message([&] { ksum::io::read_table(p); }, ErrorCode::invalid_argument),
                  p.string() + ": unknown file type '.dat'");
  EXPECT_CONTAINS(error_message([&] { ksum::io::write_table(file("y.dat"), make_table(1, 1)); },
                                ErrorCode::invalid_argument),
                  "y.dat");
  EXPECT_FALSE(fs::exists(file("y.dat")));
}

TEST_F(IoTest, OverwriteRefused) {
  for (const char *name : {"out.csv", "out.npy"}) {
    const fs::path p = write_file(name, "precious\n");
    const std::string msg =
        error_message([&] { ksum::io::write_table(p, make_table(2, 2)); }, ErrorCode::io);
    EXPECT_CONTAINS(msg, p.string() + ": file exists (use --force to overwrite)");
    EXPECT_EQ(read_file(p), "precious\n");
  }
  EXPECT_EQ(listing(), (std::vector<std::string>{"out.csv", "out.npy"}));
}

TEST_F(IoTest, OverwriteAllowed) {
  const fs::path p = write_file("out.csv", "precious\n");
  WriteOptions o;
  o.overwrite = true;
  const Table<double> t = make_table(2, 2);
  ksum::io::write_table(p, t, o);
  expect_same(ksum::io::read_table(p), t);
  EXPECT_EQ(listing(), (std::vector<std::string>{"out.csv"}));
}

TEST_F(IoTest, FailedWriteLeavesNothingBehind) {
  const fs::path p = write_file("out.csv", "precious\n");
  WriteOptions o;
  o.overwrite = true;
  Table<double> t = make_table(2, 2);
  t.names = {"a,b", "c"};
  EXPECT_CONTAINS(
      error_message([&] { ksum::io::write_table(p, t, o); }, ErrorCode::invalid_argument),
      p.string() + ": column name 'a,b'");
  EXPECT_EQ(read_file(p), "precious\n");
  EXPECT_EQ(listing(), (std::vector<std::string>{"out.csv"}));
}

TEST_F(IoTest, WriteIntoMissingFolder) {
  const fs::path p = file("no/such/dir/out.csv");
  const std::string msg =
      error_message([&] { ksum::io::write_table(p, make_table(1, 1)); }, ErrorCode::io);
  EXPECT_CONTAINS(msg, p.string());
  EXPECT_CONTAINS(msg, "No such file or directory");
}

TEST_F(IoTest, CsvWriterRefusesNamesItCannotReadBack) {
  const fs::path p = file("out.csv");
  Table<double> t = make_table(1, 2);
  t.names = {"a"};
  EXPECT_CONTAINS(error_message([&] { ksum::io::write_table(p, t); }, ErrorCode::invalid_argument),
                  p.string() + ": 1 column names for 2 columns");
  t.names = {"1", "2"};
  EXPECT_CONTAINS(error_message([&] { ksum::io::write_table(p, t); }, ErrorCode::invalid_argument),
                  "read back as data");
  t.names = {"#a", "b"};
  EXPECT_CONTAINS(error_message([&] { ksum::io::write_table(p, t); }, ErrorCode::invalid_argument),
                  "comment");
  t.names.clear();
  WriteOptions o;
  o.significant_digits = 0;
  EXPECT_CONTAINS(
      error_message([&] { ksum::io::write_table(p, t, o); }, ErrorCode::invalid_argument),
      "significant_digits");
  EXPECT_TRUE(listing().empty());
}

} // namespace
