#pragma once
// Shared direct-sum test cases, run once per backend (direct_cpu_test.cpp, direct_gpu_test.cpp).
#include "support/reference.hpp"

#include <ksum/direct.hpp>

#include <gtest/gtest.h>
#include <random>

namespace ksum::test {

struct SumCase {
  Kernel kernel = Kernel::laplace;
  double eps = 1.0;
  std::int64_t n = 500, m = -1, d = 3, nrhs = 1; // m = −1: targets are the sources
  bool gradient = false;
  std::int64_t device_memory = 0;
  bool duplicates = false;    // every fourth source repeats the previous one
  bool coincident = false;    // separate targets that are a copy of the sources (m ignored)
  std::vector<int> devices{}; // GPUs to split the targets over (empty: all)
};

inline double default_eps(Kernel k) {
  switch (k) {
  case Kernel::laplace:
  case Kernel::log:
    return 1.0;
  case Kernel::wendland2:
  case Kernel::wendland4:
  case Kernel::wendland6:
    return 1.8; // support radius 0.55: a mix of inside and outside pairs
  default:
    return 1.5;
  }
}

// Runs the case on `backend` in precision T and returns the error measure of sum_error().
template <class T> double run_case(const SumCase &c, Backend backend, std::uint64_t seed = 7) {
  auto src = random_points(c.n, c.d, seed);
  if (c.duplicates)
    for (std::int64_t j = 1; j < c.n; j += 4)
      for (std::int64_t k = 0; k < c.d; ++k)
        src(j, k) = src(j - 1, k);
  const bool self = c.m < 0 && !c.coincident;
  auto tgt = (self || c.coincident) ? src : random_points(c.m, c.d, seed + 1);
  auto w = random_points(c.n, c.nrhs, seed + 2, -1.0, 1.0);
  src = rounded<T>(src);
  tgt = rounded<T>(tgt);
  w = rounded<T>(w);

  DirectOptions opt;
  opt.kernel = c.kernel;
  opt.eps = c.eps;
  opt.gradient = c.gradient;
  opt.backend = backend;
  opt.device_memory_limit = c.device_memory;
  opt.devices = c.devices;
  DirectSum<T> plan(opt);
  if (self)
    plan.set_points(src.cast<T>());
  else
    plan.set_points(src.cast<T>(), tgt.cast<T>());
  EXPECT_EQ(plan.backend(), backend);
  const auto got = plan.execute(w.cast<T>()).template cast<double>();
  EXPECT_EQ(got.rows(), tgt.rows());
  EXPECT_EQ(got.cols(), c.nrhs * (c.gradient ? 1 + c.d : 1));
  // A second execute on the same plan must give the same answer (resident geometry, reused
  // buffers).
  const auto again = plan.execute(w.cast<T>()).template cast<double>();
  for (std::int64_t k = 0; k < got.rows() * got.cols(); ++k)
    EXPECT_EQ(got.data()[k], again.data()[k]) << "second execute differs at flat index " << k;
  return sum_error(c.kernel, c.eps, src, tgt, w, c.gradient, self, got);
}

inline std::vector<Kernel> every_kernel() {
  std::vector<Kernel> ks;
  for (const auto &info : all_kernels())
    ks.push_back(info.kind);
  return ks;
}

inline std::string kernel_test_name(Kernel k) {
  std::string s(kernel_info(k).name);
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

// Test bodies both backends run (direct_cpu_test.cpp, direct_gpu_test.cpp).

// Every kernel, targets = sources in 3D, both precisions.
inline void expect_self_sum_3d(Kernel k, Backend b) {
  SumCase c{.kernel = k, .eps = default_eps(k), .n = 1100};
  EXPECT_LE(run_case<double>(c, b), tolerance<double>());
  EXPECT_LE(run_case<float>(c, b), tolerance<float>());
}

// Separate targets in 2D, three right-hand sides, with the gradient.
inline void expect_targets_gradient_rhs_2d(Kernel k, Backend b) {
  SumCase c{
      .kernel = k, .eps = default_eps(k), .n = 600, .m = 333, .d = 2, .nrhs = 3, .gradient = true};
  EXPECT_LE(run_case<double>(c, b), tolerance<double>());
  EXPECT_LE(run_case<float>(c, b), tolerance<float>());
}

// Dimension d with `nrhs` right-hand sides and the gradient, and the plain self sum.
inline void expect_dimension(std::int64_t d, std::int64_t nrhs, Backend b) {
  for (Kernel k : {Kernel::gaussian, Kernel::multiquadric, Kernel::laplace, Kernel::matern2}) {
    SumCase c{.kernel = k,
              .eps = default_eps(k),
              .n = 300,
              .m = 170,
              .d = d,
              .nrhs = nrhs,
              .gradient = true};
    EXPECT_LE(run_case<double>(c, b), tolerance<double>()) << kernel_info(k).name;
    EXPECT_LE(run_case<float>(c, b), tolerance<float>()) << kernel_info(k).name;
    SumCase s{.kernel = k, .eps = default_eps(k), .n = 257, .d = d};
    EXPECT_LE(run_case<double>(s, b), tolerance<double>()) << kernel_info(k).name;
  }
}

// Targets given separately that coincide with sources (and duplicated sources): singular kernels
// define those pairs as 0. On the GPU this exercises the recomputation of non-finite fast sums.
inline void expect_coincident_singular(Backend b) {
  for (Kernel k : {Kernel::laplace, Kernel::log})
    for (std::int64_t d : {2, 3, 5}) {
      SumCase c{.kernel = k, .n = 700, .d = d, .duplicates = true, .coincident = true};
      EXPECT_LE(run_case<double>(c, b), tolerance<double>()) << kernel_info(k).name;
      EXPECT_LE(run_case<float>(c, b), tolerance<float>()) << kernel_info(k).name;
      SumCase s{.kernel = k, .n = 700, .d = d, .duplicates = true};
      EXPECT_LE(run_case<double>(s, b), tolerance<double>()) << kernel_info(k).name;
    }
}

} // namespace ksum::test
