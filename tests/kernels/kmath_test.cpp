// The fast elementary functions of kernels/kmath.hpp against libm, and every kernel functor of
// kernels/kernel_defs.hpp against the fp64 catalogue formulas (value and derivative).
#include "kernels/kernel_defs.hpp"

#include <ksum/error.hpp>
#include <ksum/kernels.hpp>

#include <cmath>
#include <gtest/gtest.h>
#include <limits>

namespace {

template <class T> double ulps(double got, double want) {
  return std::abs(got - want) / (std::abs(want) * std::numeric_limits<T>::epsilon());
}

// The largest error(x, f(x), reference(x)) over x log-spaced across the normal range of T.
template <class T, class F, class R, class E> double worst_over_range(F f, R ref, E error) {
  const double lo = sizeof(T) == 4 ? -37 : -307, hi = -lo;
  double worst = 0;
  for (int k = 0; k <= 100000; ++k) {
    const T x = static_cast<T>(std::pow(10.0, lo + (hi - lo) * k / 100000.0));
    worst = std::max(worst, error(double(f(x)), ref(double(x))));
  }
  return worst;
}

template <class T> class KmathTest : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(KmathTest, Precisions);

// Tolerances: 4 ulp for exp2 and rsqrt, 4 ulp for log away from 1 (near 1, absolute 4 eps).
TYPED_TEST(KmathTest, Exp2MatchesLibm) {
  using T = TypeParam;
  const double lowest = sizeof(T) == 4 ? -126 : -1022;
  double worst = 0;
  for (int k = 0; k <= 100000; ++k) {
    const T x = static_cast<T>(lowest * k / 100000.0);
    worst = std::max(worst, ulps<T>(ksum::kmath::exp2_nonpos(x), std::exp2(double(x))));
  }
  EXPECT_LE(worst, 4.0);
  EXPECT_EQ(ksum::kmath::exp2_nonpos(T(lowest - 1)), T(0)); // underflow gives exactly 0
  EXPECT_EQ(ksum::kmath::exp2_nonpos(T(-1e30)), T(0));
  EXPECT_EQ(ksum::kmath::exp2_nonpos(T(0)), T(1));
}

TYPED_TEST(KmathTest, RsqrtMatchesLibm) {
  using T = TypeParam;
  const double worst = worst_over_range<T>(
      [](T x) { return ksum::kmath::rsqrt(x); }, [](double x) { return 1.0 / std::sqrt(x); },
      [](double got, double want) { return ulps<T>(got, want); });
  EXPECT_LE(worst, 4.0);
}

TYPED_TEST(KmathTest, LogMatchesLibm) {
  using T = TypeParam;
  const double worst = worst_over_range<T>(
      [](T x) { return ksum::kmath::log(x); }, [](double x) { return std::log(x); },
      [](double got, double want) {
        return std::abs(got - want) /
               (std::max(std::abs(want), 1.0) * std::numeric_limits<T>::epsilon());
      });
  EXPECT_LE(worst, 4.0);
}

// Functors take p = p0 + (c r)^2 with c = coord_scale(eps); check K and dK/dq against the libm
// formulas.
class FunctorTest : public ::testing::TestWithParam<ksum::Kernel> {};

TEST_P(FunctorTest, ValueAndDerivativeMatchCatalogue) {
  const ksum::Kernel k = GetParam();
  for (double eps : {0.5, 1.0, 3.0}) {
    const double c = ksum::kdef::coord_scale(k, eps);
    ksum::kdef::visit<double>(k, [&](auto kf) {
      const double p0 = ksum::kdef::p_offset<decltype(kf)>();
      for (double r : {1e-3, 0.05, 0.2, 0.33, 0.7, 1.0, 1.5, 4.0}) {
        const double q = p0 + (c * r) * (c * r);
        double dk = 0;
        const double v = kf.value(q, dk);
        const double want = ksum::kernel_value(k, eps, r);
        const double scale = std::max(std::abs(want), 1e-300);
        EXPECT_NEAR(kf.value(q), want, 1e-13 * std::max(scale, 1e-12))
            << ksum::kernel_info(k).name << " eps=" << eps << " r=" << r;
        EXPECT_NEAR(v, want, 1e-13 * std::max(scale, 1e-12));
        // dK/dr = dK/dq * 2 c^2 r
        const double dr = ksum::kernel_derivative(k, eps, r);
        EXPECT_NEAR(dk * 2 * c * c * r, dr, 1e-12 * std::max(std::abs(dr), 1e-12))
            << ksum::kernel_info(k).name << " derivative, eps=" << eps << " r=" << r;
      }
    });
  }
}

TEST_P(FunctorTest, FiniteAtZeroDistance) {
  const ksum::Kernel k = GetParam();
  ksum::kdef::visit<double>(k, [&](auto kf) {
    double dk = -1;
    const double v = kf.value(ksum::kdef::p_offset<decltype(kf)>(), dk);
    EXPECT_TRUE(std::isfinite(v));
    EXPECT_TRUE(std::isfinite(dk));
    if (ksum::kernel_info(k).singular)
      EXPECT_EQ(v, 0.0); // coincident pairs of singular kernels contribute nothing
    else
      EXPECT_NEAR(v, ksum::kernel_value(k, 1.0, 0.0), 1e-15);
  });
}

std::vector<ksum::Kernel> every_kernel() {
  std::vector<ksum::Kernel> ks;
  for (const auto &info : ksum::all_kernels())
    ks.push_back(info.kind);
  return ks;
}

INSTANTIATE_TEST_SUITE_P(AllKernels, FunctorTest, ::testing::ValuesIn(every_kernel()),
                         [](const auto &info) {
                           std::string s(ksum::kernel_info(info.param).name);
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

TEST(Catalogue, NamesRoundTripAndDegrees) {
  EXPECT_EQ(ksum::all_kernels().size(), 17u);
  for (const auto &info : ksum::all_kernels())
    EXPECT_EQ(ksum::parse_kernel(info.name), info.kind);
  EXPECT_EQ(ksum::kernel_info(ksum::Kernel::tps).min_degree, 1);
  EXPECT_EQ(ksum::kernel_info(ksum::Kernel::multiquadric).min_degree, 0);
  EXPECT_EQ(ksum::kernel_info(ksum::Kernel::gaussian).min_degree, -1);
  EXPECT_EQ(ksum::kernel_info(ksum::Kernel::quintic).min_degree, 2);
  EXPECT_EQ(ksum::kernel_info(ksum::Kernel::wendland4).support, ksum::Support::compact);
}

TEST(Catalogue, UnknownNameIsAnErrorListingTheValidOnes) {
  try {
    ksum::parse_kernel("gausian");
    FAIL() << "no error";
  } catch (const ksum::Error &e) {
    EXPECT_EQ(e.code(), ksum::ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("'gausian'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("gaussian"), std::string::npos);
  }
}

} // namespace
