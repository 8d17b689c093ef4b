// Block Sherman–Morrison inverses (seed 004 Paper III) against LAPACK getrf + getri in fp64.
// Accuracy: ‖A⁻¹ − A⁻¹_ref‖_F / ‖A⁻¹_ref‖_F ≤ c κ(A) u with κ(A) = ‖A‖_F ‖A⁻¹_ref‖_F (the
// Frobenius condition number, from the reference inverse) and u the unit roundoff of the
// precision under test.
#include <ksum/bsm.hpp>
#include <ksum/error.hpp>

#include <gtest/gtest.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using ksum::BsmA0;
using ksum::BsmFallback;
using ksum::BsmMethod;
using ksum::BsmOptions;
using ksum::BsmStats;
using ksum::Table;

// The accuracy constant c of the bound above: the largest err / (κ u) measured over every case of
// this file was 0.31 (fp64) and 0.42 (fp32); c = 10 leaves a margin and still fails an
// inverse that loses one more digit than LU.
constexpr double kC = 10;

Table<double> reference_inverse(const Table<double> &A) {
  const std::int64_t n = A.rows();
  Table<double> inv = A;
  std::vector<lapack_int> ipiv(static_cast<std::size_t>(n));
  EXPECT_EQ(LAPACKE_dgetrf(LAPACK_COL_MAJOR, int(n), int(n), inv.data(), int(n), ipiv.data()), 0);
  EXPECT_EQ(LAPACKE_dgetri(LAPACK_COL_MAJOR, int(n), inv.data(), int(n), ipiv.data()), 0);
  return inv;
}

double frob(const Table<double> &A) {
  double s = 0;
  for (std::int64_t j = 0; j < A.cols(); ++j)
    for (std::int64_t i = 0; i < A.rows(); ++i)
      s += A(i, j) * A(i, j);
  return std::sqrt(s);
}

template <class T> double rel_error(const Table<T> &got, const Table<double> &ref) {
  double num = 0, den = 0;
  for (std::int64_t j = 0; j < ref.cols(); ++j)
    for (std::int64_t i = 0; i < ref.rows(); ++i) {
      const double d = double(got(i, j)) - ref(i, j);
      num += d * d;
      den += ref(i, j) * ref(i, j);
    }
  return std::sqrt(num / den);
}

enum class Kind { random, dominant, graded };
const char *name(Kind k) {
  return k == Kind::random ? "random" : k == Kind::dominant ? "dominant" : "graded";
}

// random: I + G / (2√n), G standard normal (spectrum in a disc of radius ≈ 1/2 around 1).
// dominant: uniform off-diagonal in [−1, 1], a_ii = ±(1 + Σ_j |a_ij|).
// graded: D B D with B dominant and D = diag(10^(−3 i/(n−1))) (κ up to ~1e6).
Table<double> make_matrix(Kind kind, std::int64_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uni(-1, 1);
  Table<double> A(n, n);
  if (kind == Kind::random) {
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i)
        A(i, j) = (i == j ? 1.0 : 0.0) + normal(rng) / (2 * std::sqrt(double(n)));
    return A;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    double row = 0;
    for (std::int64_t j = 0; j < n; ++j)
      if (j != i) {
        A(i, j) = uni(rng);
        row += std::abs(A(i, j));
      }
    A(i, i) = (uni(rng) < 0 ? -1 : 1) * (1 + row);
  }
  if (kind == Kind::graded && n > 1)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i)
        A(i, j) *= std::pow(10.0, -3.0 * double(i + j) / double(n - 1));
  return A;
}

struct Case {
  BsmMethod method;
  std::int64_t block;
};

std::vector<Case> cases(std::int64_t n) {
  std::vector<Case> out{{BsmMethod::svsm, 0}, {BsmMethod::lu, 0}};
  for (BsmMethod m : {BsmMethod::bsm, BsmMethod::rmbsm})
    for (std::int64_t s :
         {std::int64_t(1), std::int64_t(4), std::int64_t(16), std::int64_t(64), n, std::int64_t(0)})
      if (s <= n)
        out.push_back({m, s});
  return out;
}

TEST(BsmInverse, StandardCaseMatchesLapackInDouble) {
  const double u = std::ldexp(1.0, -53);
  double worst = 0;
  for (Kind kind : {Kind::random, Kind::dominant, Kind::graded})
    for (std::int64_t n : {1, 2, 3, 17, 64, 200, 513}) {
      const Table<double> A = make_matrix(kind, n, 1000 + unsigned(n));
      const Table<double> ref = reference_inverse(A);
      const double kappa = frob(A) * frob(ref);
      for (const Case &c : cases(n)) {
        BsmOptions o;
        o.method = c.method;
        o.block = c.block;
        o.fallback = BsmFallback::error; // none of these matrices may break down
        BsmStats st;
        const Table<double> inv = ksum::inverse(A, o, &st);
        const double err = rel_error(inv, ref);
        worst = std::max(worst, err / (kappa * u));
        EXPECT_LE(err, kC * kappa * u)
            << name(kind) << " n=" << n << " " << ksum::to_string(c.method) << " s=" << c.block
            << " kappa=" << kappa;
        EXPECT_FALSE(st.fallback);
        EXPECT_EQ(st.method, c.method);
        if (c.method == BsmMethod::bsm || c.method == BsmMethod::rmbsm) {
          // automatic in the standard case: min(n, n / 8 within [128, 256]) (bsm.hpp)
          EXPECT_EQ(st.block,
                    c.block > 0 ? c.block : std::min(n, std::clamp<std::int64_t>(n / 8, 128, 256)));
        }
        EXPECT_GT(st.flops, 0);
      }
    }
  std::printf("[ bsm ] fp64 standard case: max err / (kappa u) = %.3g (c = %g)\n", worst, kC);
}

TEST(BsmInverse, IdentitySplittingMatchesLapack) {
  const double u = std::ldexp(1.0, -53);
  for (std::int64_t n : {3, 64, 200}) {
    const Table<double> A = make_matrix(Kind::random, n, 7 + unsigned(n));
    const Table<double> ref = reference_inverse(A);
    const double kappa = frob(A) * frob(ref);
    for (BsmMethod m : {BsmMethod::svsm, BsmMethod::bsm, BsmMethod::rmbsm}) {
      BsmOptions o;
      o.method = m;
      o.a0 = BsmA0::identity;
      o.block = 16;
      EXPECT_LE(rel_error(ksum::inverse(A, o), ref), kC * kappa * u)
          << "n=" << n << " " << ksum::to_string(m);
    }
  }
}

TEST(BsmInverse, FloatMatchesLapackAtFloatTolerance) {
  const double u = std::ldexp(1.0, -24);
  double worst = 0;
  for (Kind kind : {Kind::random, Kind::dominant, Kind::graded})
    for (std::int64_t n : {2, 17, 64, 200}) {
      const Table<double> A = make_matrix(kind, n, 2000 + unsigned(n));
      const Table<double> ref = reference_inverse(A);
      const Table<float> Af = A.cast<float>();
      const double kappa = frob(A) * frob(ref);
      for (const Case &c : cases(n)) {
        BsmOptions o;
        o.method = c.method;
        o.block = c.block;
        o.fallback = BsmFallback::error;
        const double err = rel_error(ksum::inverse(Af, o), ref);
        worst = std::max(worst, err / (kappa * u));
        EXPECT_LE(err, kC * kappa * u)
            << name(kind) << " n=" << n << " " << ksum::to_string(c.method) << " s=" << c.block;
      }
    }
  std::printf("[ bsm ] fp32 standard case: max err / (kappa u) = %.3g (c = %g)\n", worst, kC);
}

// The general case A = A0 + X Yᵀ with a dense, non-diagonal A0 and m < n.
TEST(BsmInverse, GeneralCaseMatchesLapack) {
  const double u = std::ldexp(1.0, -53);
  for (auto [n, m] : {std::pair<std::int64_t, std::int64_t>{17, 5}, {64, 20}, {200, 37}}) {
    const Table<double> A0 = make_matrix(Kind::random, n, 31 + unsigned(n));
    const Table<double> A0inv = reference_inverse(A0);
    std::mt19937_64 rng(77 + n);
    std::normal_distribution<double> normal;
    Table<double> X(n, m), Y(n, m);
    for (std::int64_t j = 0; j < m; ++j)
      for (std::int64_t i = 0; i < n; ++i) {
        X(i, j) = normal(rng) / std::sqrt(double(n));
        Y(i, j) = normal(rng) / std::sqrt(double(n));
      }
    Table<double> A = A0;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t k = 0; k < m; ++k)
          A(i, j) += X(i, k) * Y(j, k);
    const Table<double> ref = reference_inverse(A);
    const double kappa = frob(A) * frob(ref);
    const ksum::ApplyInverse<double> op = [&](bool t, const double *in, std::int64_t ldi,
                                              double *out, std::int64_t ldo, std::int64_t cols) {
      for (std::int64_t c = 0; c < cols; ++c)
        for (std::int64_t i = 0; i < n; ++i) {
          double s = 0;
          for (std::int64_t k = 0; k < n; ++k)
            s += (t ? A0inv(k, i) : A0inv(i, k)) * in[c * ldi + k];
          out[c * ldo + i] = s;
        }
    };
    for (const Case &c : cases(m)) {
      BsmOptions o;
      o.method = c.method;
      o.block = c.block;
      o.fallback = BsmFallback::error;
      BsmStats st;
      EXPECT_LE(rel_error(ksum::inverse_update(A0inv, X, Y, o, &st), ref), kC * kappa * u)
          << "dense n=" << n << " m=" << m << " " << ksum::to_string(c.method) << " s=" << c.block;
      EXPECT_FALSE(st.fallback);
      EXPECT_LE(rel_error(ksum::inverse_update(op, n, X, Y, o), ref), kC * kappa * u)
          << "operator n=" << n << " m=" << m << " " << ksum::to_string(c.method)
          << " s=" << c.block;
    }
  }
}

Table<double> add_outer(Table<double> A, const Table<double> &X, const Table<double> &Y) {
  for (std::int64_t j = 0; j < A.cols(); ++j)
    for (std::int64_t i = 0; i < A.rows(); ++i)
      for (std::int64_t k = 0; k < X.cols(); ++k)
        A(i, j) += X(i, k) * Y(j, k);
  return A;
}

TEST(BsmUpdate, RankOneAndRankEightMatchRefactoring) {
  const double u = std::ldexp(1.0, -53);
  const std::int64_t n = 120;
  Table<double> A = make_matrix(Kind::dominant, n, 5);
  ksum::InverseUpdate<double> up;
  up.set_matrix(A);
  EXPECT_LE(rel_error(up.inverse(), reference_inverse(A)), 1e-14);
  std::mt19937_64 rng(9);
  std::normal_distribution<double> normal;
  for (std::int64_t m : {1, 8, 1, 8}) {
    Table<double> X(n, m), Y(n, m);
    for (std::int64_t j = 0; j < m; ++j)
      for (std::int64_t i = 0; i < n; ++i) {
        X(i, j) = normal(rng);
        Y(i, j) = normal(rng);
      }
    A = add_outer(A, X, Y);
    up.update(X, Y);
    const Table<double> ref = reference_inverse(A);
    const double kappa = frob(A) * frob(ref);
    EXPECT_LE(rel_error(up.inverse(), ref), kC * kappa * u) << "rank " << m;
    EXPECT_FALSE(up.stats().fallback);
    EXPECT_GT(up.stats().min_pivot, 1e-6);
    Table<double> b(n, 2), xref(n, 2);
    for (std::int64_t i = 0; i < n; ++i)
      b(i, 0) = normal(rng), b(i, 1) = normal(rng);
    for (std::int64_t c = 0; c < 2; ++c)
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t k = 0; k < n; ++k)
          xref(i, c) += ref(i, k) * b(k, c);
    EXPECT_LE(rel_error(up.solve(b), xref), kC * kappa * u) << "rank " << m;
  }
  // From a given inverse (no A kept) the same update gives the same result.
  const Table<double> A1 = make_matrix(Kind::random, n, 11);
  ksum::InverseUpdate<double> from_inv;
  from_inv.set_inverse(reference_inverse(A1));
  Table<double> X(n, 3), Y(n, 3);
  for (std::int64_t j = 0; j < 3; ++j)
    for (std::int64_t i = 0; i < n; ++i)
      X(i, j) = normal(rng) / 10, Y(i, j) = normal(rng) / 10;
  from_inv.update(X, Y);
  const Table<double> ref1 = reference_inverse(add_outer(A1, X, Y));
  EXPECT_LE(rel_error(from_inv.inverse(), ref1), 1e-13);
}

TEST(BsmUpdate, SingularCapacitanceIsRefusedOrRefactored) {
  // A = I, X = −e_1, Y = e_1: A + XYᵀ zeroes a_11 (singular), capacitance 1 − 1 = 0.
  const std::int64_t n = 5;
  Table<double> I(n, n), X(n, 1), Y(n, 1);
  for (std::int64_t i = 0; i < n; ++i)
    I(i, i) = 1;
  X(0, 0) = -1;
  Y(0, 0) = 1;
  BsmOptions o;
  o.fallback = BsmFallback::error;
  ksum::InverseUpdate<double> up(o);
  up.set_matrix(I);
  try {
    up.update(X, Y);
    FAIL() << "no error";
  } catch (const ksum::Error &e) {
    EXPECT_EQ(e.code(), ksum::ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("capacitance"), std::string::npos) << e.what();
  }
  EXPECT_EQ(rel_error(up.inverse(), I), 0.0); // unchanged
  // X = −e_1 / 2: A + XYᵀ = diag(1/2, 1, …) with capacitance 1/2 → fine; a threshold above 1/2
  // makes it a breakdown, and the lu fallback refactors to the same inverse.
  X(0, 0) = -0.5;
  BsmOptions fo;
  fo.pivot_threshold = 0.9;
  ksum::InverseUpdate<double> fb(fo);
  fb.set_matrix(I);
  fb.update(X, Y);
  EXPECT_TRUE(fb.stats().fallback);
  EXPECT_DOUBLE_EQ(fb.inverse()(0, 0), 2.0);
  EXPECT_DOUBLE_EQ(fb.inverse()(1, 1), 1.0);
}

// A nonsingular matrix whose leading 3 × 3 block is singular: with A0 = diag(A), Y = I the
// Sherman–Morrison recursion adds A's columns one by one and its k-th pivot is
// det(A(1:k,1:k)) / (det(A(1:k−1,1:k−1)) a_kk), which is zero at k = 3 (1-based).
Table<double> leading_minor_singular() {
  const std::int64_t n = 6;
  Table<double> A(n, n);
  const double B[3][3] = {{2, 1, 1}, {1, 2, 1}, {3, 3, 2}}; // det 0, leading minors 2, 3
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      A(i, j) = B[i][j];
  for (int i = 0; i < 3; ++i) {
    A(i, i + 3) = 1;
    A(i + 3, i) = 1 + 0.1 * i;
    A(i + 3, i + 3) = 5;
  }
  return A;
}

TEST(BsmBreakdown, ZeroPivotIsReportedWithItsStep) {
  const Table<double> A = leading_minor_singular();
  for (auto [m, s, step] : {std::tuple{BsmMethod::svsm, 0, 3},
                            {BsmMethod::bsm, 1, 3},
                            {BsmMethod::rmbsm, 1, 3},
                            {BsmMethod::bsm, 3, 1},
                            {BsmMethod::rmbsm, 3, 1}}) {
    BsmOptions o;
    o.method = m;
    o.block = s;
    o.fallback = BsmFallback::error;
    try {
      (void)ksum::inverse(A, o);
      FAIL() << ksum::to_string(m) << " s=" << s << ": no error";
    } catch (const ksum::Error &e) {
      EXPECT_EQ(e.code(), ksum::ErrorCode::invalid_argument);
      const std::string msg = e.what();
      EXPECT_NE(msg.find("broke down at step " + std::to_string(step) + " "), std::string::npos)
          << msg;
    }
  }
}

TEST(BsmBreakdown, LuFallbackGivesTheInverseAndSaysSo) {
  const double u = std::ldexp(1.0, -53);
  const Table<double> A = leading_minor_singular();
  const Table<double> ref = reference_inverse(A);
  const double kappa = frob(A) * frob(ref);
  for (auto [m, s, step] :
       {std::tuple{BsmMethod::svsm, 0, 3}, {BsmMethod::bsm, 1, 3}, {BsmMethod::rmbsm, 3, 1}}) {
    BsmOptions o;
    o.method = m;
    o.block = s;
    o.fallback = BsmFallback::lu;
    BsmStats st;
    const Table<double> inv = ksum::inverse(A, o, &st);
    EXPECT_LE(rel_error(inv, ref), kC * kappa * u) << ksum::to_string(m);
    EXPECT_TRUE(st.fallback);
    EXPECT_EQ(st.fallback_step, step);
    EXPECT_EQ(st.method, BsmMethod::lu);
    EXPECT_EQ(st.requested, m);
    EXPECT_LT(st.min_pivot, 1e-12);
  }
  // Blocks of 2 straddle the singular minor (leading 2 × 2 and 4 × 4 minors are nonsingular): no
  // breakdown, and the result is still the inverse.
  BsmOptions o;
  o.block = 2;
  o.fallback = BsmFallback::error;
  BsmStats st;
  EXPECT_LE(rel_error(ksum::inverse(A, o, &st), ref), 1e3 * kC * kappa * u);
  EXPECT_FALSE(st.fallback);
}

TEST(BsmBreakdown, SingularMatrixIsAClearError) {
  Table<double> A = make_matrix(Kind::dominant, 8, 3);
  for (std::int64_t j = 0; j < 8; ++j)
    A(5, j) = A(2, j); // two equal rows
  for (BsmMethod m : {BsmMethod::lu, BsmMethod::bsm, BsmMethod::svsm}) {
    BsmOptions o;
    o.method = m;
    try {
      (void)ksum::inverse(A, o);
      FAIL() << ksum::to_string(m) << ": no error";
    } catch (const ksum::Error &e) {
      EXPECT_EQ(e.code(), ksum::ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("the matrix A is singular"), std::string::npos)
          << e.what();
    }
  }
}

template <class F> void expect_error(F &&f, ksum::ErrorCode code, const std::string &needle) {
  try {
    f();
    FAIL() << "no error (expected '" << needle << "')";
  } catch (const ksum::Error &e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(BsmContract, NonFiniteInputsAreRefused) {
  Table<double> A = make_matrix(Kind::dominant, 4, 1);
  A(2, 1) = NAN;
  expect_error([&] { (void)ksum::inverse(A); }, ksum::ErrorCode::non_finite,
               "row 2, column 1 (0-based): nan");
  A(2, 1) = 0;
  A(0, 3) = -INFINITY;
  expect_error([&] { (void)ksum::inverse(A); }, ksum::ErrorCode::non_finite,
               "row 0, column 3 (0-based): -inf");
  Table<float> X(4, 2), Y(4, 2), A0inv(4, 4);
  for (int i = 0; i < 4; ++i)
    A0inv(i, i) = 1;
  X(3, 1) = INFINITY;
  expect_error([&] { (void)ksum::inverse_update(A0inv, X, Y); }, ksum::ErrorCode::non_finite,
               "X has a non-finite entry at row 3, column 1");
  ksum::InverseUpdate<float> up;
  up.set_inverse(A0inv);
  expect_error([&] { up.update(X, Y); }, ksum::ErrorCode::non_finite, "row 3, column 1");
}

TEST(BsmContract, BadShapesAndOptionsAreRefused) {
  const Table<double> A = make_matrix(Kind::dominant, 4, 1);
  expect_error([&] { (void)ksum::inverse(A.data(), 0, 4); }, ksum::ErrorCode::invalid_argument,
               "n = 0");
  expect_error([&] { (void)ksum::inverse(A.data(), 4, 3); }, ksum::ErrorCode::invalid_argument,
               "leading dimension 3");
  expect_error([&] { (void)ksum::inverse(Table<double>(3, 4)); }, ksum::ErrorCode::shape_mismatch,
               "3 × 4");
  BsmOptions cuda;
  cuda.backend = ksum::Backend::cuda;
#ifndef KSUM_USE_CUDA
  expect_error([&] { ksum::InverseUpdate<double> update(cuda); }, ksum::ErrorCode::unsupported,
               "GPU path");
  expect_error([&] { (void)ksum::inverse(A, cuda); }, ksum::ErrorCode::unsupported, "GPU path");
#endif
  Table<double> Z = A;
  Z(1, 1) = 0;
  expect_error([&] { (void)ksum::inverse(Z); }, ksum::ErrorCode::invalid_argument, "A(1, 1) = 0");
  BsmOptions ident;
  ident.a0 = BsmA0::identity; // a zero diagonal is fine with A0 = I
  const Table<double> ref = reference_inverse(Z);
  EXPECT_LE(rel_error(ksum::inverse(Z, ident), ref), 1e-13);
  Table<double> X(4, 2), Y(3, 2);
  expect_error([&] { (void)ksum::inverse_update(A, X, Y); }, ksum::ErrorCode::shape_mismatch,
               "Y is 3 × 2");
  expect_error([&] { (void)ksum::inverse_update(A, Table<double>(4, 0), Table<double>(4, 0)); },
               ksum::ErrorCode::empty_input, "m = 0");
  ksum::InverseUpdate<double> up;
  expect_error([&] { up.update(X, X); }, ksum::ErrorCode::invalid_argument, "set_matrix");
  EXPECT_EQ(ksum::parse_bsm_method("rmbsm"), BsmMethod::rmbsm);
  expect_error([&] { (void)ksum::parse_bsm_method("qr"); }, ksum::ErrorCode::invalid_argument,
               "'qr'");
}

} // namespace
