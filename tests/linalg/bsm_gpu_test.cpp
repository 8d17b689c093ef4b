// Block Sherman–Morrison inverses (seed 004 Paper III) with Backend::cuda against the CPU path:
// every method in float and double, the standard and the general case, block sizes dividing n
// and not, breakdowns at the same step, the same documented errors. Both paths are within
// c κ(A) u of the inverse (bsm_test.cpp), so they must agree to 2 c κ(A) u, κ(A) = ‖A‖_F ‖A⁻¹‖_F
// and u the unit roundoff of the precision under test. Skipped without a GPU.
#include "support/expect_error.hpp"
#include "support/gpu.hpp"

#include <ksum/bsm.hpp>
#include <ksum/error.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using ksum::Backend;
using ksum::BsmA0;
using ksum::BsmFallback;
using ksum::BsmMethod;
using ksum::BsmOptions;
using ksum::BsmStats;
using ksum::Table;
using ksum::test::expect_error;

constexpr double kC = 10; // bsm_test.cpp's accuracy constant

template <class T> double unit_roundoff() {
  return std::ldexp(1.0, sizeof(T) == 4 ? -24 : -53);
}

template <class T> Table<T> convert(const Table<double> &A) {
  Table<T> out(A.rows(), A.cols(), ksum::Uninitialized{});
  for (std::int64_t j = 0; j < A.cols(); ++j)
    for (std::int64_t i = 0; i < A.rows(); ++i)
      out(i, j) = T(A(i, j));
  return out;
}

template <class T> double frob(const Table<T> &A) {
  double s = 0;
  for (std::int64_t j = 0; j < A.cols(); ++j)
    for (std::int64_t i = 0; i < A.rows(); ++i)
      s += double(A(i, j)) * double(A(i, j));
  return std::sqrt(s);
}

template <class T> double rel_diff(const Table<T> &a, const Table<T> &b) {
  double num = 0;
  for (std::int64_t j = 0; j < b.cols(); ++j)
    for (std::int64_t i = 0; i < b.rows(); ++i) {
      const double d = double(a(i, j)) - double(b(i, j));
      num += d * d;
    }
  return std::sqrt(num) / frob(b);
}

// κ_F(A) from the CPU's fp64 LU inverse.
double kappa(const Table<double> &A) {
  BsmOptions o;
  o.method = BsmMethod::lu;
  o.backend = Backend::cpu;
  return frob(A) * frob(ksum::inverse(A, o));
}

// Diagonally dominant with random signs (well conditioned), or I + G/(2√n) (random).
Table<double> make_matrix(bool dominant, std::int64_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uni(-1, 1);
  Table<double> A(n, n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i)
      A(i, j) =
          dominant ? uni(rng) : (i == j ? 1.0 : 0.0) + normal(rng) / (2 * std::sqrt(double(n)));
  if (dominant)
    for (std::int64_t i = 0; i < n; ++i) {
      double row = 0;
      for (std::int64_t j = 0; j < n; ++j)
        row += j == i ? 0 : std::abs(A(i, j));
      A(i, i) = (uni(rng) < 0 ? -1 : 1) * (1 + row);
    }
  return A;
}

struct Case {
  BsmMethod method;
  std::int64_t block;
};

// Block sizes dividing n and not (1, 4, 16, 64, n), explicit so that CPU and GPU use the same s.
std::vector<Case> cases(std::int64_t n) {
  std::vector<Case> out{{BsmMethod::svsm, 0}, {BsmMethod::lu, 0}};
  for (BsmMethod m : {BsmMethod::bsm, BsmMethod::rmbsm})
    for (std::int64_t s : {std::int64_t(1), std::int64_t(4), std::int64_t(16), std::int64_t(64), n})
      if (s <= n)
        out.push_back({m, s});
  return out;
}

std::string describe(const Case &c, std::int64_t n) {
  return std::string(ksum::to_string(c.method)) + " n=" + std::to_string(n) +
         " s=" + std::to_string(c.block);
}

template <class T> void standard_case_matches_cpu() {
  const double u = unit_roundoff<T>();
  for (bool dominant : {false, true})
    for (std::int64_t n : {1, 3, 17, 64, 130, 257}) {
      const Table<double> A64 = make_matrix(dominant, n, 500 + unsigned(n));
      const Table<T> A = convert<T>(A64);
      const double bound = 2 * kC * kappa(A64) * u;
      for (const Case &c : cases(n))
        for (BsmA0 a0 : {BsmA0::diagonal, BsmA0::identity}) {
          if (a0 == BsmA0::identity && (dominant || c.method == BsmMethod::lu))
            continue; // A0 = I only on the random matrices (I + G/(2√n): X = A − I is small)
          BsmOptions o;
          o.method = c.method;
          o.block = c.block;
          o.a0 = a0;
          o.fallback = BsmFallback::error;
          o.backend = Backend::cpu;
          BsmStats cs, gs;
          const Table<T> cpu = ksum::inverse(A, o, &cs);
          o.backend = Backend::cuda;
          const Table<T> gpu = ksum::inverse(A, o, &gs);
          EXPECT_LE(rel_diff(gpu, cpu), bound) << describe(c, n) << " " << ksum::to_string(a0);
          EXPECT_EQ(gs.method, c.method);
          EXPECT_EQ(gs.requested, c.method);
          EXPECT_EQ(gs.block, cs.block) << describe(c, n);
          EXPECT_FALSE(gs.fallback);
          EXPECT_GT(gs.flops, 0);
          EXPECT_GT(gs.min_pivot, 0);
        }
    }
}

TEST(BsmGpu, StandardCaseMatchesCpuInDouble) {
  KSUM_REQUIRE_GPU();
  standard_case_matches_cpu<double>();
}

TEST(BsmGpu, StandardCaseMatchesCpuInFloat) {
  KSUM_REQUIRE_GPU();
  standard_case_matches_cpu<float>();
}

TEST(BsmGpu, AutomaticBlockGivesTheInverse) {
  KSUM_REQUIRE_GPU();
  const std::int64_t n = 700; // automatic s = n / 8 clamped to [128, 256]: 128, not dividing 700
  const Table<double> A = make_matrix(true, n, 9);
  const double bound = 2 * kC * kappa(A) * unit_roundoff<double>();
  for (BsmMethod m : {BsmMethod::bsm, BsmMethod::rmbsm}) {
    BsmOptions o;
    o.method = m;
    o.backend = Backend::cpu;
    const Table<double> cpu = ksum::inverse(A, o);
    o.backend = Backend::cuda;
    BsmStats st;
    EXPECT_LE(rel_diff(ksum::inverse(A, o, &st), cpu), bound) << ksum::to_string(m);
    EXPECT_EQ(st.block, 128);
  }
}

template <class T> void general_case_matches_cpu() {
  const double u = unit_roundoff<T>();
  for (auto [n, m] : {std::pair<std::int64_t, std::int64_t>{17, 5}, {64, 20}, {130, 130}}) {
    const Table<double> A0 = make_matrix(false, n, 31 + unsigned(n));
    BsmOptions lu;
    lu.method = BsmMethod::lu;
    lu.backend = Backend::cpu;
    const Table<double> A0inv64 = ksum::inverse(A0, lu);
    std::mt19937_64 rng(77 + n);
    std::normal_distribution<double> normal;
    Table<double> X64(n, m), Y64(n, m), A64 = A0;
    for (std::int64_t j = 0; j < m; ++j)
      for (std::int64_t i = 0; i < n; ++i) {
        X64(i, j) = normal(rng) / std::sqrt(double(n));
        Y64(i, j) = normal(rng) / std::sqrt(double(n));
      }
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t k = 0; k < m; ++k)
          A64(i, j) += X64(i, k) * Y64(j, k);
    const double bound = 2 * kC * kappa(A64) * u;
    const Table<T> A0inv = convert<T>(A0inv64), X = convert<T>(X64), Y = convert<T>(Y64);
    const ksum::ApplyInverse<T> op = [&](bool t, const T *in, std::int64_t ldi, T *out,
                                         std::int64_t ldo, std::int64_t cols) {
      for (std::int64_t c = 0; c < cols; ++c)
        for (std::int64_t i = 0; i < n; ++i) {
          double s = 0;
          for (std::int64_t k = 0; k < n; ++k)
            s += double(t ? A0inv(k, i) : A0inv(i, k)) * double(in[c * ldi + k]);
          out[c * ldo + i] = T(s);
        }
    };
    for (const Case &c : cases(m))
      for (BsmFallback fb : {BsmFallback::error, BsmFallback::lu}) {
        BsmOptions o;
        o.method = c.method;
        o.block = c.block;
        o.fallback = fb; // error lets the GPU keep U in X's storage; lu keeps X
        o.backend = Backend::cpu;
        const Table<T> cpu = ksum::inverse_update(A0inv, X, Y, o);
        o.backend = Backend::cuda;
        BsmStats st;
        EXPECT_LE(rel_diff(ksum::inverse_update(A0inv, X, Y, o, &st), cpu), bound)
            << "dense " << describe(c, m) << " n=" << n;
        EXPECT_FALSE(st.fallback);
        EXPECT_EQ(st.method, c.method);
        EXPECT_LE(rel_diff(ksum::inverse_update(op, n, X, Y, o), cpu), bound)
            << "operator " << describe(c, m) << " n=" << n;
      }
  }
}

TEST(BsmGpu, GeneralCaseMatchesCpuInDouble) {
  KSUM_REQUIRE_GPU();
  general_case_matches_cpu<double>();
}

TEST(BsmGpu, GeneralCaseMatchesCpuInFloat) {
  KSUM_REQUIRE_GPU();
  general_case_matches_cpu<float>();
}

// Nonsingular, with a singular leading 2 × 2 block: the standard-case recursion breaks down at
// the step whose leading minor is singular (bsm.hpp).
Table<double> leading_block_singular() {
  Table<double> A(6, 6);
  for (std::int64_t i = 0; i < 6; ++i)
    A(i, i) = 5;
  A(0, 0) = 1;
  A(0, 1) = 2;
  A(1, 0) = 2;
  A(1, 1) = 4;
  A(1, 2) = 1;
  A(2, 1) = 1;
  return A;
}

// The error message of a call, "" when it succeeds.
template <class F> std::string error_of(F &&f) {
  try {
    f();
  } catch (const ksum::Error &e) {
    EXPECT_EQ(e.code(), ksum::ErrorCode::invalid_argument) << e.what();
    return e.what();
  }
  return "";
}

std::string step_of(const std::string &msg) {
  const auto at = msg.find("broke down at step ");
  return at == std::string::npos ? "" : msg.substr(at, msg.find(' ', at + 19) - at);
}

TEST(BsmGpu, BreakdownIsReportedAtTheCpuStep) {
  KSUM_REQUIRE_GPU();
  const Table<double> A = leading_block_singular();
  // Blocks that straddle the singular minor lose digits (bsm_test.cpp allows 1e3 c κ u).
  const double bound = 2e3 * kC * kappa(A) * unit_roundoff<double>();
  for (auto [m, s] : {std::pair{BsmMethod::svsm, 0},
                      {BsmMethod::bsm, 1},
                      {BsmMethod::rmbsm, 1},
                      {BsmMethod::bsm, 2},
                      {BsmMethod::rmbsm, 2},
                      {BsmMethod::bsm, 4}}) {
    BsmOptions o;
    o.method = m;
    o.block = s;
    o.fallback = BsmFallback::error;
    o.backend = Backend::cpu;
    const std::string cpu = error_of([&] { (void)ksum::inverse(A, o); });
    o.backend = Backend::cuda;
    const std::string gpu = error_of([&] { (void)ksum::inverse(A, o); });
    EXPECT_EQ(step_of(gpu), step_of(cpu))
        << ksum::to_string(m) << " s=" << s << "\nCPU: " << cpu << "\nGPU: " << gpu;
    o.fallback = BsmFallback::lu;
    BsmStats cs, gs;
    o.backend = Backend::cpu;
    const Table<double> cinv = ksum::inverse(A, o, &cs);
    o.backend = Backend::cuda;
    EXPECT_LE(rel_diff(ksum::inverse(A, o, &gs), cinv), bound) << ksum::to_string(m);
    EXPECT_EQ(gs.fallback, cs.fallback);
    EXPECT_EQ(gs.fallback_step, cs.fallback_step);
    EXPECT_EQ(gs.method, cs.method);
    EXPECT_EQ(gs.requested, m);
  }
}

TEST(BsmGpu, SingularInputsGiveTheDocumentedErrors) {
  KSUM_REQUIRE_GPU();
  Table<double> A = make_matrix(true, 8, 3);
  for (std::int64_t j = 0; j < 8; ++j)
    A(5, j) = A(2, j); // two equal rows
  for (BsmMethod m : {BsmMethod::lu, BsmMethod::bsm, BsmMethod::svsm}) {
    BsmOptions o;
    o.method = m;
    o.backend = Backend::cuda;
    expect_error([&] { (void)ksum::inverse(A, o); }, ksum::ErrorCode::invalid_argument,
                 "the matrix A is singular");
  }
  // I + Yᵀ A0⁻¹ X = 1 − 1 = 0 with A0 = I, X = −e1, Y = e1.
  Table<double> eye(4, 4), X(4, 1), Y(4, 1);
  for (std::int64_t i = 0; i < 4; ++i)
    eye(i, i) = 1;
  X(0, 0) = -1;
  Y(0, 0) = 1;
  BsmOptions o;
  o.method = BsmMethod::lu;
  o.backend = Backend::cuda;
  expect_error([&] { (void)ksum::inverse_update(eye, X, Y, o); }, ksum::ErrorCode::invalid_argument,
               "the capacitance matrix I + Yᵀ A0⁻¹ X (so A0 + X Yᵀ) is singular");
  Table<double> Z = make_matrix(true, 4, 1);
  Z(1, 1) = 0;
  o.method = BsmMethod::bsm;
  expect_error([&] { (void)ksum::inverse(Z, o); }, ksum::ErrorCode::invalid_argument,
               "A(1, 1) = 0");
  Z(1, 1) = NAN;
  expect_error([&] { (void)ksum::inverse(Z, o); }, ksum::ErrorCode::non_finite,
               "row 1, column 1 (0-based): nan");
}

// An n × m factor with N(0, scale²) entries.
Table<double> factor(std::int64_t n, std::int64_t m, unsigned seed, double scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  Table<double> F(n, m);
  for (std::int64_t j = 0; j < m; ++j)
    for (std::int64_t i = 0; i < n; ++i)
      F(i, j) = scale * normal(rng);
  return F;
}

Table<double> plus_outer(const Table<double> &A, const Table<double> &X, const Table<double> &Y) {
  Table<double> out = A;
  for (std::int64_t j = 0; j < A.cols(); ++j)
    for (std::int64_t k = 0; k < X.cols(); ++k)
      for (std::int64_t i = 0; i < A.rows(); ++i)
        out(i, j) += X(i, k) * Y(j, k);
  return out;
}

// InverseUpdate with the state on the GPU against the same updates on the CPU: set_matrix, a
// sequence of ranks (1, 8, 33, 1), solve, and from a given inverse; both are within c κ u of
// (A + Σ X Yᵀ)⁻¹, so they agree to 2 c κ u.
template <class T> void resident_update_matches_cpu() {
  const double u = unit_roundoff<T>();
  for (std::int64_t n : {1, 37, 300}) {
    Table<double> A64 = make_matrix(false, n, 40 + unsigned(n));
    BsmOptions co, go;
    co.backend = Backend::cpu;
    go.backend = Backend::cuda;
    ksum::InverseUpdate<T> cpu(co), gpu(go);
    cpu.set_matrix(convert<T>(A64));
    gpu.set_matrix(convert<T>(A64));
    EXPECT_EQ(gpu.size(), n);
    EXPECT_LE(rel_diff(gpu.inverse(), cpu.inverse()), 2 * kC * kappa(A64) * u) << "n=" << n;
    EXPECT_GT(gpu.stats().min_pivot, 0);
    unsigned seed = 7;
    for (std::int64_t m : {1, 8, 33, 1}) {
      const std::int64_t mm = std::min(m, n);
      const double scale = 0.3 / std::sqrt(double(n));
      const Table<double> X = factor(n, mm, seed++, scale), Y = factor(n, mm, seed++, scale);
      A64 = plus_outer(A64, X, Y);
      cpu.update(convert<T>(X), convert<T>(Y));
      gpu.update(convert<T>(X), convert<T>(Y));
      const double bound = 2 * kC * kappa(A64) * u;
      EXPECT_LE(rel_diff(gpu.inverse(), cpu.inverse()), bound) << "n=" << n << " m=" << mm;
      EXPECT_FALSE(gpu.stats().fallback);
      EXPECT_GT(gpu.stats().flops, 0);
      // The same measure (rounding apart: C is formed on each side).
      EXPECT_NEAR(gpu.stats().min_pivot, cpu.stats().min_pivot, 1e-2 * cpu.stats().min_pivot);
      const Table<T> b = convert<T>(factor(n, 3, seed++, 1.0));
      EXPECT_LE(rel_diff(gpu.solve(b), cpu.solve(b)), bound) << "solve n=" << n << " m=" << mm;
    }
    // From a given inverse: A is recovered on the device only in the fallback (below).
    ksum::InverseUpdate<T> from_inv(go);
    from_inv.set_inverse(cpu.inverse());
    const Table<double> X = factor(n, 2, 99, 0.1), Y = factor(n, 2, 98, 0.1);
    from_inv.update(convert<T>(X), convert<T>(Y));
    cpu.update(convert<T>(X), convert<T>(Y));
    EXPECT_LE(rel_diff(from_inv.inverse(), cpu.inverse()),
              2 * kC * kappa(plus_outer(A64, X, Y)) * u)
        << "from the inverse, n=" << n;
  }
}

TEST(BsmGpu, ResidentInverseUpdateMatchesCpuInDouble) {
  KSUM_REQUIRE_GPU();
  resident_update_matches_cpu<double>();
}

// One GPU object through matrices of different sizes (its work buffers follow n), and the flops
// of an update counted as on the CPU whatever solves came before.
TEST(BsmGpu, ResidentInverseUpdateReusedAcrossSizes) {
  KSUM_REQUIRE_GPU();
  const double u = unit_roundoff<double>();
  BsmOptions co, go;
  co.backend = Backend::cpu;
  go.backend = Backend::cuda;
  ksum::InverseUpdate<double> gpu(go);
  for (std::int64_t n : {37, 300, 5}) {
    const Table<double> A = make_matrix(false, n, 70 + unsigned(n));
    ksum::InverseUpdate<double> cpu(co);
    cpu.set_matrix(A);
    gpu.set_matrix(A);
    const Table<double> b = factor(n, 2, 5, 1.0);
    (void)gpu.solve(b); // counted nowhere
    const Table<double> X = factor(n, 4, 6, 0.1), Y = factor(n, 4, 7, 0.1);
    cpu.update(X, Y);
    gpu.update(X, Y);
    EXPECT_LE(rel_diff(gpu.inverse(), cpu.inverse()), 2 * kC * kappa(plus_outer(A, X, Y)) * u)
        << "n=" << n;
    EXPECT_NEAR(gpu.stats().flops, cpu.stats().flops, 1e-12 * cpu.stats().flops) << "n=" << n;
  }
}

TEST(BsmGpu, ResidentInverseUpdateMatchesCpuInFloat) {
  KSUM_REQUIRE_GPU();
  resident_update_matches_cpu<float>();
}

// The breakdown paths of the resident update: a singular A, a singular capacitance matrix with
// fallback error (the inverse unchanged), and the lu fallback refactoring on the device, from A
// (set_matrix) and from a given inverse (A recovered by inverting it).
TEST(BsmGpu, ResidentInverseUpdateBreakdowns) {
  KSUM_REQUIRE_GPU();
  const std::int64_t n = 5;
  Table<double> I(n, n), X(n, 1), Y(n, 1);
  for (std::int64_t i = 0; i < n; ++i)
    I(i, i) = 1;
  BsmOptions o;
  o.backend = Backend::cuda;
  o.fallback = BsmFallback::error;
  Table<double> S = I;
  S(2, 2) = 0;
  ksum::InverseUpdate<double> up(o);
  expect_error([&] { up.set_matrix(S); }, ksum::ErrorCode::invalid_argument,
               "the matrix A is singular");
  up.set_matrix(I);
  X(0, 0) = -1;
  Y(0, 0) = 1;
  expect_error([&] { up.update(X, Y); }, ksum::ErrorCode::invalid_argument,
               "capacitance matrix I + Yᵀ A⁻¹ X is singular");
  EXPECT_EQ(rel_diff(up.inverse(), I), 0.0); // unchanged
  // Capacitance 1/2 under a threshold of 0.9: the lu fallback, A + XYᵀ = diag(1/2, 1, …).
  X(0, 0) = -0.5;
  o.fallback = BsmFallback::lu;
  o.pivot_threshold = 0.9;
  for (bool from_inverse : {false, true}) {
    ksum::InverseUpdate<double> fb(o);
    if (from_inverse)
      fb.set_inverse(I);
    else
      fb.set_matrix(I);
    fb.update(X, Y);
    EXPECT_TRUE(fb.stats().fallback);
    EXPECT_NEAR(fb.inverse()(0, 0), 2.0, 1e-15) << from_inverse;
    EXPECT_NEAR(fb.inverse()(1, 1), 1.0, 1e-15) << from_inverse;
    // A second fallback starts from the refactored state: diag(1/2 − 1/4, 1, …).
    X(0, 0) = -0.25;
    fb.update(X, Y);
    EXPECT_TRUE(fb.stats().fallback);
    EXPECT_NEAR(fb.inverse()(0, 0), 4.0, 1e-14) << from_inverse;
    X(0, 0) = -0.5;
  }
}

} // namespace
