// Global RBF interpolation (seed 000): the dense, FGP and Krylov solvers against an independent
// fp64 reference (the saddle-point system (4) solved in the test by Eigen's full-pivoting LU with
// libm kernel values and unscaled monomials), the interpolation property, polynomial
// reproduction, and every bad input. Tolerances are stated where used.
#include "rbf/global/lsets.hpp"
#include "rbf/global/polynomial.hpp"
#include "spatial/kdtree.hpp"
#include "support/expect_error.hpp"
#include "support/reference.hpp"

#include <ksum/datasets.hpp>
#include <ksum/error.hpp>
#include <ksum/global.hpp>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <numeric>
#include <random>

namespace ksum {
namespace {

using test::expect_error;

double smooth(const Table<double> &x, std::int64_t i) {
  double r = 0, c = 0;
  for (std::int64_t k = 0; k < x.cols(); ++k) {
    r += (x(i, k) - 0.4) * (x(i, k) - 0.4);
    c += (k + 1) * x(i, k);
  }
  return std::exp(-2 * r) * std::cos(2 * c) + 0.5;
}

Table<double> values_of(const Table<double> &x, int columns = 1) {
  Table<double> f(x.rows(), columns);
  for (std::int64_t i = 0; i < x.rows(); ++i)
    for (int c = 0; c < columns; ++c)
      f(i, c) = c == 0 ? smooth(x, i) : std::sin((c + 2) * x(i, 0) - c * x(i, x.cols() - 1)) + c;
  return f;
}

// Monomials of total degree ≤ k in the raw coordinates (not ksum's scaled basis).
std::vector<std::vector<int>> exponents(int k, std::int64_t d) {
  std::vector<std::vector<int>> out;
  std::vector<int> e(d, 0);
  std::function<void(std::int64_t, int)> rec = [&](std::int64_t axis, int left) {
    if (axis == d) {
      out.push_back(e);
      return;
    }
    for (int p = 0; p <= left; ++p) {
      e[axis] = p;
      rec(axis + 1, left - p);
    }
    e[axis] = 0;
  };
  if (k >= 0)
    rec(0, k);
  return out;
}

double monomial(const Table<double> &x, std::int64_t i, const std::vector<int> &e) {
  double v = 1;
  for (std::size_t k = 0; k < e.size(); ++k)
    v *= std::pow(x(i, static_cast<std::int64_t>(k)), e[k]);
  return v;
}

// The independent reference: s(y) from the full (4) solved by FullPivLU.
Table<double> reference_interpolant(Kernel kernel, double eps, int degree, const Table<double> &x,
                                    const Table<double> &f, const Table<double> &y,
                                    double smoothing = 0.0) {
  const std::int64_t n = x.rows();
  const auto ex = exponents(degree, x.cols());
  const std::int64_t m = static_cast<std::int64_t>(ex.size()), size = n + m;
  Eigen::MatrixXd K = Eigen::MatrixXd::Zero(size, size);
  auto dist = [](const Table<double> &a, std::int64_t i, const Table<double> &b, std::int64_t j) {
    double s = 0;
    for (std::int64_t k = 0; k < a.cols(); ++k)
      s += (a(i, k) - b(j, k)) * (a(i, k) - b(j, k));
    return std::sqrt(s);
  };
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j)
      K(i, j) = kernel_value(kernel, eps, dist(x, i, x, j));
    K(i, i) += smoothing;
    for (std::int64_t t = 0; t < m; ++t)
      K(i, n + t) = K(n + t, i) = monomial(x, i, ex[t]);
  }
  Eigen::MatrixXd rhs = Eigen::MatrixXd::Zero(size, f.cols());
  for (std::int64_t c = 0; c < f.cols(); ++c)
    for (std::int64_t i = 0; i < n; ++i)
      rhs(i, c) = f(i, c);
  const Eigen::MatrixXd sol = K.fullPivLu().solve(rhs);
  Table<double> u(y.rows(), f.cols());
  for (std::int64_t c = 0; c < f.cols(); ++c)
    for (std::int64_t i = 0; i < y.rows(); ++i) {
      double s = 0;
      for (std::int64_t j = 0; j < n; ++j)
        s += sol(j, c) * kernel_value(kernel, eps, dist(y, i, x, j));
      for (std::int64_t t = 0; t < m; ++t)
        s += sol(n + t, c) * monomial(y, i, ex[t]);
      u(i, c) = s;
    }
  return u;
}

double max_abs_diff(const Table<double> &a, const Table<double> &b) {
  double m = 0;
  for (std::int64_t k = 0; k < a.rows() * a.cols(); ++k)
    m = std::max(m, std::abs(a.data()[k] - b.data()[k]));
  return m;
}
double max_abs(const Table<double> &a) {
  double m = 0;
  for (std::int64_t k = 0; k < a.rows() * a.cols(); ++k)
    m = std::max(m, std::abs(a.data()[k]));
  return m;
}

GlobalRbfOptions cpu_options(Kernel k, double eps, GlobalSolver s) {
  GlobalRbfOptions o;
  o.kernel = k;
  o.eps = eps;
  o.solver = s;
  o.backend = Backend::cpu;
  return o;
}

TEST(PolyBasis, CountsAndGradedOrder) {
  EXPECT_EQ(rbf::PolyBasis::count(2, 3), 10);
  EXPECT_EQ(rbf::PolyBasis::count(-1, 3), 0);
  const rbf::PolyBasis b(2, 2, {1.0, 1.0}, 2.0);
  ASSERT_EQ(b.terms(), 6);
  const double x[2] = {3.0, 0.0}; // z = (1, −0.5)
  double v[6];
  b.eval(x, 1, v);
  // 1, then z1, z2, then z1², z1 z2, z2².
  const double want[6] = {1, 1, -0.5, 1, -0.5, 0.25};
  for (int t = 0; t < 6; ++t)
    EXPECT_DOUBLE_EQ(v[t], want[t]) << t;
}

TEST(KdTree, RankFilteredNearestMatchesBruteForce) {
  for (const std::int64_t d : {1, 2, 3, 5}) {
    const auto x = test::random_points(700, d, 11 + d);
    std::vector<std::int64_t> rank(700);
    for (std::int64_t i = 0; i < 700; ++i)
      rank[i] = (i * 397) % 700; // a permutation
    const spatial::KdTree tree(x, rank, 8);
    std::vector<std::pair<double, std::int64_t>> got;
    for (const std::int64_t min_rank : {0, 300, 650, 695}) {
      for (std::int64_t qi = 0; qi < 700; qi += 37) {
        std::vector<double> q(d);
        for (std::int64_t k = 0; k < d; ++k)
          q[k] = x(qi, k);
        tree.nearest(q.data(), 12, min_rank, got);
        std::vector<std::pair<double, std::int64_t>> all;
        for (std::int64_t j = 0; j < 700; ++j) {
          if (rank[j] < min_rank)
            continue;
          double s = 0;
          for (std::int64_t k = 0; k < d; ++k)
            s += (x(j, k) - q[k]) * (x(j, k) - q[k]);
          all.emplace_back(s, j);
        }
        std::sort(all.begin(), all.end());
        all.resize(std::min<std::size_t>(12, all.size()));
        // The same points in the same order; distances to rounding (the tree's loop may fuse
        // multiply-adds differently).
        ASSERT_EQ(got.size(), all.size());
        for (std::size_t t = 0; t < all.size(); ++t) {
          ASSERT_EQ(got[t].second, all[t].second)
              << "d=" << d << " min_rank=" << min_rank << " query " << qi << " rank " << t;
          ASSERT_NEAR(got[t].first, all[t].first, 1e-15);
        }
      }
    }
  }
}

// The k nearest of rank ≥ min_rank by brute force, (squared distance, index) in order.
std::vector<std::pair<double, std::int64_t>> brute_nearest(const Table<double> &x, const double *q,
                                                           int k, std::int64_t min_rank,
                                                           const std::vector<std::int64_t> &rank) {
  std::vector<std::pair<double, std::int64_t>> all;
  for (std::int64_t j = 0; j < x.rows(); ++j) {
    if (rank[j] < min_rank)
      continue;
    double s = 0;
    for (std::int64_t c = 0; c < x.cols(); ++c)
      s += (x(j, c) - q[c]) * (x(j, c) - q[c]);
    all.emplace_back(s, j);
  }
  const std::size_t kk = std::min<std::size_t>(k, all.size());
  std::partial_sort(all.begin(), all.begin() + kk, all.end());
  all.resize(kk);
  return all;
}

// The tree's levels (a tree of the points of rank ≥ t_p for each p), the coordinates returned with
// the neighbours, and the leaf order with its accessors: dimensions with and without a compiled-in
// path, leaves of one point, bounds that select every level, k beyond 64 and beyond the
// candidates, queries off the points, ranks with ties and no ranks.
TEST(KdTree, LevelsCoordinatesAndLeafOrderMatchBruteForce) {
  const std::int64_t n = 3000;
  for (const std::int64_t d : {2, 3, 4, 5}) {
    const auto x = test::random_points(n, d, 40 + d);
    std::vector<std::int64_t> perm(n), ties(n);
    std::iota(perm.begin(), perm.end(), std::int64_t{0});
    std::shuffle(perm.begin(), perm.end(), std::mt19937_64(d));
    for (std::int64_t i = 0; i < n; ++i)
      ties[i] = i % 7;
    const std::vector<std::int64_t> zeros(n, 0);
    struct Ranks {
      const std::vector<std::int64_t> &rank;
      bool given;
      std::vector<std::int64_t> bounds;
    };
    const Ranks rank_cases[] = {{perm, true, {0, 700, 1499, 1500, 2300, 2990, 2999, 3000}},
                                {ties, true, {0, 3, 6, 7}},
                                {zeros, false, {0}}};
    for (const auto &rc : rank_cases)
      for (const int leaf : {1, 32}) {
        const spatial::KdTree tree(x, rc.given ? rc.rank : std::vector<std::int64_t>{}, leaf, 2);
        const auto &order = tree.leaf_order();
        ASSERT_EQ(static_cast<std::int64_t>(order.size()), n);
        std::vector<char> seen(n, 0);
        for (std::int64_t t = 0; t < n; ++t) {
          ASSERT_FALSE(seen[order[t]]) << "leaf order repeats a point";
          seen[order[t]] = 1;
          ASSERT_EQ(tree.leaf_rank(t), rc.rank[order[t]]);
          for (std::int64_t c = 0; c < d; ++c)
            ASSERT_EQ(tree.leaf_coord(t, c), x(order[t], c));
        }
        std::vector<std::pair<double, std::int64_t>> got;
        std::vector<double> coords;
        for (const std::int64_t min_rank : rc.bounds)
          for (const int k : {1, 40, 100})
            for (std::int64_t qi = 0; qi < n; qi += 331) {
              std::vector<double> q(d);
              for (std::int64_t c = 0; c < d; ++c)
                q[c] = x(qi, c) + (qi % 2 ? 0.003 * (c + 1) : 0.0);
              tree.nearest(q.data(), k, min_rank, got, &coords);
              const auto want = brute_nearest(x, q.data(), k, min_rank, rc.rank);
              ASSERT_EQ(got.size(), want.size());
              ASSERT_EQ(coords.size(), got.size() * d);
              for (std::size_t t = 0; t < want.size(); ++t) {
                ASSERT_EQ(got[t].second, want[t].second)
                    << "d=" << d << " leaf=" << leaf << " min_rank=" << min_rank << " k=" << k
                    << " query " << qi << " rank " << t;
                ASSERT_NEAR(got[t].first, want[t].first, 1e-15);
                for (std::int64_t c = 0; c < d; ++c)
                  ASSERT_EQ(coords[t * d + c], x(got[t].second, c));
              }
            }
      }
  }
}

// The tree's squared distance (spatial/kdtree.cpp): the squares rounded and added in coordinate
// order, the last one fused with its addition in an odd dimension above 1 where the machine has
// fused multiply-adds.
double tree_distance2(const Table<double> &x, std::int64_t j, const double *q) {
  const std::int64_t d = x.cols();
  double s = 0;
  for (std::int64_t c = 0; c < d; ++c) {
    const double e = x(j, c) - q[c];
#if defined(__FMA__) || defined(__aarch64__)
    if (c == d - 1 && d % 2 == 1 && d > 1)
      return std::fma(e, e, s);
#endif
    volatile double sq = e * e; // rounded on its own
    s += sq;
  }
  return s;
}

// On grids many distances are equal: the k nearest are then decided by the smaller index, which
// needs every tied candidate to be looked at (a box's bound may not exceed a distance on its face).
TEST(KdTree, TiesInDistanceGoToTheSmallerIndex) {
  const std::int64_t c2[2] = {30, 30}, c3[3] = {12, 12, 12};
  const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
  for (const auto &x : {datasets::grid(c2, lo, hi, 2), datasets::grid(c3, lo, hi, 3)}) {
    const std::int64_t n = x.rows(), d = x.cols();
    std::vector<std::int64_t> rank(n);
    std::iota(rank.begin(), rank.end(), std::int64_t{0});
    std::shuffle(rank.begin(), rank.end(), std::mt19937_64(n));
    for (const int leaf : {1, 8, 32}) {
      const spatial::KdTree tree(x, rank, leaf);
      std::vector<std::pair<double, std::int64_t>> got;
      for (const std::int64_t min_rank : {std::int64_t{0}, n / 3, n / 2, n - 50})
        for (const int k : {6, 19, 27, 40})
          for (std::int64_t qi = 0; qi < n; qi += 7) {
            std::vector<double> q(d);
            for (std::int64_t c = 0; c < d; ++c)
              q[c] = x(qi, c);
            tree.nearest(q.data(), k, min_rank, got);
            std::vector<std::pair<double, std::int64_t>> all;
            for (std::int64_t j = 0; j < n; ++j)
              if (rank[j] >= min_rank)
                all.emplace_back(tree_distance2(x, j, q.data()), j);
            const std::size_t kk = std::min<std::size_t>(k, all.size());
            std::partial_sort(all.begin(), all.begin() + kk, all.end());
            ASSERT_EQ(got.size(), kk);
            for (std::size_t t = 0; t < kk; ++t) {
              ASSERT_EQ(got[t].second, all[t].second)
                  << "d=" << d << " leaf=" << leaf << " min_rank=" << min_rank << " k=" << k
                  << " query " << qi << " rank " << t;
              ASSERT_EQ(got[t].first, all[t].first);
            }
          }
    }
  }
}

// The L-sets against their definition (seed 000 §3.1): set m holds σ(m) and its q − 1 nearest
// among σ(m), …, σ(N) (brute force, ties to the smaller index); ζ solves the set's local system
// (reference: Eigen's full-pivoting LU with libm kernel values and raw monomials, ζ not depending
// on the polynomial basis). Tolerance: the systems' condition numbers reach about 1e8 here.
TEST(LSets, AreTheNearestUnvisitedPointsWithTheirLocalLagrangeFunctions) {
  struct Case {
    Kernel k;
    double eps;
    std::int64_t d;
    int q, degree;
  };
  const Case cases[] = {{Kernel::multiquadric, 40.0, 2, 20, 0},
                        {Kernel::tps, 1.0, 2, 15, 1},
                        {Kernel::gaussian, 25.0, 3, 30, -1},
                        {Kernel::cubic, 1.0, 3, 25, 1},
                        {Kernel::multiquadric, 40.0, 3, 60, 2}}; // beyond 64 unknowns
  for (const auto &c : cases) {
    const std::int64_t n = 1200;
    const auto x = datasets::halton(n, c.d);
    const std::uint64_t seed = 11;
    const auto s = rbf::build_lsets(x, {c.k, c.eps, c.q, c.degree, seed, 2});
    // σ as build_lsets defines it: the points sorted by (lset_key(seed, j), j).
    std::vector<std::int64_t> order(n), rank(n);
    std::iota(order.begin(), order.end(), std::int64_t{0});
    std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      const auto ka = rbf::lset_key(seed, a), kb = rbf::lset_key(seed, b);
      return ka != kb ? ka < kb : a < b;
    });
    for (std::int64_t m = 0; m < n; ++m)
      rank[order[m]] = m;
    const auto ex = exponents(c.degree, c.d);
    const std::int64_t terms = static_cast<std::int64_t>(ex.size());
    ASSERT_EQ(s.count(), n - terms);
    EXPECT_EQ(s.skipped, 0);
    for (std::int64_t m = 0; m < s.count(); ++m) {
      const std::int64_t l = order[m], b = s.ptr[m], size = s.ptr[m + 1] - b;
      ASSERT_EQ(size, std::min<std::int64_t>(c.q, n - m));
      std::vector<double> xl(c.d);
      for (std::int64_t k = 0; k < c.d; ++k)
        xl[k] = x(l, k);
      const auto nb = brute_nearest(x, xl.data(), static_cast<int>(size), m, rank);
      ASSERT_EQ(s.idx[b], l);
      std::int64_t t = 1;
      for (const auto &[d2, j] : nb) {
        if (j != l && t < size) {
          ASSERT_EQ(s.idx[b + t++], j) << "set " << m;
        }
      }
      if (m % 23 != 0)
        continue;
      const std::int64_t sys = size + terms;
      Eigen::MatrixXd K = Eigen::MatrixXd::Zero(sys, sys);
      for (std::int64_t i = 0; i < size; ++i) {
        const std::int64_t pi = s.idx[b + i];
        for (std::int64_t j = 0; j < size; ++j) {
          const std::int64_t pj = s.idx[b + j];
          double r2 = 0;
          for (std::int64_t k = 0; k < c.d; ++k)
            r2 += (x(pi, k) - x(pj, k)) * (x(pi, k) - x(pj, k));
          K(i, j) = kernel_value(c.k, c.eps, std::sqrt(r2));
        }
        for (std::int64_t e = 0; e < terms; ++e)
          K(i, size + e) = K(size + e, i) = monomial(x, pi, ex[e]);
      }
      Eigen::VectorXd e0 = Eigen::VectorXd::Zero(sys);
      e0(0) = 1;
      const Eigen::VectorXd want = K.fullPivLu().solve(e0);
      const double scale = want.head(size).cwiseAbs().maxCoeff();
      for (std::int64_t i = 0; i < size; ++i)
        ASSERT_NEAR(s.zeta[b + i], want(i), 1e-6 * scale) << "set " << m << " member " << i;
    }
  }
}

// σ's keys: a permutation with no memory of the index order (rank correlation of index and place
// below 0.03 for 20,000 points, where a random permutation's is about ±0.007), different per seed,
// and independent of how many points there are (a point's key is its own).
TEST(LSets, OrderKeysAreAnUncorrelatedPermutationPerSeed) {
  const std::int64_t n = 20000;
  auto places = [&](std::uint64_t seed) {
    std::vector<std::int64_t> order(n), place(n);
    std::iota(order.begin(), order.end(), std::int64_t{0});
    std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      return std::make_pair(rbf::lset_key(seed, a), a) < std::make_pair(rbf::lset_key(seed, b), b);
    });
    for (std::int64_t m = 0; m < n; ++m)
      place[order[m]] = m;
    return place;
  };
  const auto p1 = places(1), p2 = places(2);
  double sxy = 0, sxz = 0, s2 = 0;
  const double mean = 0.5 * static_cast<double>(n - 1);
  for (std::int64_t j = 0; j < n; ++j) {
    sxy += (static_cast<double>(j) - mean) * (static_cast<double>(p1[j]) - mean);
    sxz += (static_cast<double>(p2[j]) - mean) * (static_cast<double>(p1[j]) - mean);
    s2 += (static_cast<double>(j) - mean) * (static_cast<double>(j) - mean);
  }
  EXPECT_LT(std::abs(sxy / s2), 0.03);
  EXPECT_LT(std::abs(sxz / s2), 0.03);
  EXPECT_EQ(rbf::lset_key(1, 12345), rbf::lset_key(1, 12345));
  EXPECT_NE(rbf::lset_key(1, 12345), rbf::lset_key(2, 12345));
}

// A point given twice makes every set that holds both copies exactly singular: those sets are
// counted as skipped and keep ζ = 0; the others are solved.
TEST(LSets, SingularSetsAreDetectedAndLeftZero) {
  auto x = datasets::halton(400, 2);
  for (std::int64_t k = 0; k < 2; ++k)
    x(7, k) = x(3, k);
  const auto s = rbf::build_lsets(x, {Kernel::multiquadric, 20.0, 15, 0, 5, 1});
  std::int64_t both = 0;
  for (std::int64_t m = 0; m < s.count(); ++m) {
    const auto first = s.idx.begin() + s.ptr[m], last = s.idx.begin() + s.ptr[m + 1];
    const bool twice = std::find(first, last, 3u) != last && std::find(first, last, 7u) != last;
    both += twice;
    if (twice) {
      for (std::int64_t e = s.ptr[m]; e < s.ptr[m + 1]; ++e)
        ASSERT_EQ(s.zeta[e], 0.0) << "set " << m;
    } else {
      ASSERT_NE(s.zeta[s.ptr[m]], 0.0) << "set " << m;
    }
  }
  EXPECT_GT(both, 0);
  EXPECT_EQ(s.skipped, both);
}

// Dense solver against the reference, dimensions 1–4, kernels with and without polynomials.
TEST(GlobalDense, MatchesIndependentReferenceAndInterpolates) {
  struct Case {
    Kernel k;
    double eps;
    std::int64_t d;
    int degree;
  };
  const Case cases[] = {{Kernel::multiquadric, 3.0, 2, 0},
                        {Kernel::tps, 1.0, 2, 1},
                        {Kernel::gaussian, 6.0, 3, -1},
                        {Kernel::cubic, 1.0, 3, 1},
                        {Kernel::matern4, 4.0, 4, -1},
                        {Kernel::multiquadric, 100.0, 1, 2},
                        {Kernel::inverse_multiquadric, 3.0, 2, -1},
                        {Kernel::linear, 1.0, 2, 0}};
  for (const auto &c : cases) {
    const auto x = datasets::halton(300, c.d);
    const auto f = values_of(x, 2);
    auto o = cpu_options(c.k, c.eps, GlobalSolver::dense);
    o.degree = c.degree;
    GlobalRbfInterpolant rbf(o);
    rbf.set_data(x, f);
    EXPECT_EQ(rbf.stats().degree, c.degree);
    // Interpolation property at the data: 1e-10 relative to max |f|.
    const auto at_data = rbf.evaluate(x);
    EXPECT_LE(max_abs_diff(at_data, f), 1e-10 * max_abs(f))
        << kernel_info(c.k).name << " d=" << c.d;
    // Off the data: the interpolant is unique, so any correct solve agrees; 1e-8 relative
    // (the reference's own rounding at condition numbers up to ~1e7).
    const auto y = test::random_points(50, c.d, 5);
    const auto want = reference_interpolant(c.k, c.eps, c.degree, x, f, y);
    EXPECT_LE(max_abs_diff(rbf.evaluate(y), want), 1e-8 * max_abs(want))
        << kernel_info(c.k).name << " d=" << c.d;
  }
}

TEST(GlobalIterative, SmoothingIsInThePreconditionerToo) {
  // Φ + σρI: with the L-sets built on Φ alone the iteration stalled at a relative residual of
  // 0.02–0.6 for ρ ≥ 0.01 (SciPy's smoothing); now it converges to the dense solution.
  const auto x = test::random_points(2000, 2, 91);
  Table<double> f(2000, 1);
  for (std::int64_t i = 0; i < 2000; ++i)
    f(i, 0) = std::sin(3 * x(i, 0)) * std::cos(2 * x(i, 1));
  const auto y = test::random_points(100, 2, 92);
  for (const double rho : {1e-2, 1.0})
    for (const auto s : {GlobalSolver::fgp, GlobalSolver::krylov}) {
      auto o = cpu_options(Kernel::multiquadric, 30.0, s);
      o.smoothing = rho;
      o.tolerance = 1e-11;
      GlobalRbfInterpolant it(o);
      it.set_data(x, f);
      auto od = cpu_options(Kernel::multiquadric, 30.0, GlobalSolver::dense);
      od.smoothing = rho;
      GlobalRbfInterpolant dense(od);
      dense.set_data(x, f);
      EXPECT_LE(max_abs_diff(it.evaluate(y), dense.evaluate(y)), 1e-7)
          << "rho " << rho << " " << to_string(s);
    }
}

TEST(GlobalDense, ReproducesPolynomialsOfItsDegree) {
  // tps with degree 1 reproduces linear data, multiquadric with degree 2 quadratic data: exactly
  // (to rounding: 1e-9 relative) away from the data too.
  const auto x = datasets::halton(200, 2);
  const auto y = test::random_points(40, 2, 9);
  for (const int degree : {1, 2}) {
    Table<double> f(x.rows(), 1);
    auto poly = [degree](double a, double b) {
      return 1 + 2 * a - 3 * b + (degree == 2 ? a * a - 2 * a * b + 0.5 * b * b : 0.0);
    };
    for (std::int64_t i = 0; i < x.rows(); ++i)
      f(i, 0) = poly(x(i, 0), x(i, 1));
    auto o =
        cpu_options(degree == 1 ? Kernel::tps : Kernel::multiquadric, 3.0, GlobalSolver::dense);
    o.degree = degree;
    GlobalRbfInterpolant rbf(o);
    rbf.set_data(x, f);
    const auto u = rbf.evaluate(y);
    for (std::int64_t i = 0; i < y.rows(); ++i)
      EXPECT_NEAR(u(i, 0), poly(y(i, 0), y(i, 1)), 1e-9 * 4) << degree;
    // λ vanishes when the polynomial alone interpolates: to rounding times the condition of Φ
    // (~1e8 here), so 1e-6.
    EXPECT_LE(max_abs(rbf.coefficients()), 1e-6);
  }
}

TEST(GlobalDense, SmoothingSatisfiesItsEquationWithTheKernelsSign) {
  // −φ is conditionally positive definite for the multiquadric (σ = −1), +φ for tps (σ = +1):
  // smoothing solves (Φ + σρI)λ + Πa = f, so f − s(x_i) = σρλ_i at every data point, and the
  // smoothed interpolant is the minimiser of Σ(f − s)² / ρ + |s|², hence its data misfit grows
  // with ρ.
  const auto x = datasets::halton(250, 2);
  const auto f = values_of(x);
  EXPECT_EQ(definiteness_sign(Kernel::multiquadric), -1);
  EXPECT_EQ(definiteness_sign(Kernel::linear), -1);
  EXPECT_EQ(definiteness_sign(Kernel::quintic), -1);
  EXPECT_EQ(definiteness_sign(Kernel::tps), 1);
  EXPECT_EQ(definiteness_sign(Kernel::cubic), 1);
  EXPECT_EQ(definiteness_sign(Kernel::gaussian), 1);
  for (const auto k : {Kernel::multiquadric, Kernel::tps}) {
    const double sigma = definiteness_sign(k);
    double previous_misfit = 0;
    for (const double rho : {1e-4, 1e-3, 1e-2}) {
      auto o = cpu_options(k, 3.0, GlobalSolver::dense);
      o.smoothing = rho;
      GlobalRbfInterpolant rbf(o);
      rbf.set_data(x, f);
      const auto s = rbf.evaluate(x);
      double misfit = 0;
      for (std::int64_t i = 0; i < x.rows(); ++i) {
        EXPECT_NEAR(f(i, 0) - s(i, 0), sigma * rho * rbf.coefficients()(i, 0), 1e-10);
        misfit += std::pow(f(i, 0) - s(i, 0), 2);
      }
      EXPECT_GT(misfit, previous_misfit) << kernel_info(k).name << " rho " << rho;
      previous_misfit = misfit;
      const auto y = test::random_points(20, 2, 3);
      EXPECT_LE(max_abs_diff(rbf.evaluate(y), reference_interpolant(k, 3.0, default_degree(k), x, f,
                                                                    y, sigma * rho)),
                1e-9);
    }
  }
}

// FGP against dense: seed 000's algorithm on N ≤ 5000 agrees with the direct solution to 1e-8.
TEST(GlobalFgp, AgreesWithDenseOnHaltonPoints) {
  for (const std::int64_t d : {2, 3}) {
    const std::int64_t n = d == 2 ? 3000 : 2000;
    const auto x = datasets::halton(n, d);
    const auto f = values_of(x, 2);
    const double eps = 0.5 * std::pow(static_cast<double>(n), 1.0 / d); // ε h ≈ 0.5
    auto od = cpu_options(Kernel::multiquadric, eps, GlobalSolver::dense);
    GlobalRbfInterpolant dense(od);
    dense.set_data(x, f);
    auto of = cpu_options(Kernel::multiquadric, eps, GlobalSolver::fgp);
    of.tolerance = 1e-11;
    GlobalRbfInterpolant fgp(of);
    fgp.set_data(x, f);
    const auto &st = fgp.stats();
    EXPECT_EQ(st.solver, GlobalSolver::fgp);
    EXPECT_LE(st.residual_max, 1e-11 * max_abs(f) * 1.0001);
    EXPECT_LE(st.iterations, 60) << "d=" << d; // measured: see docs/global-rbf.md
    EXPECT_EQ(st.lsets, n - 1);                // seed 000 step 5: sets for m = 1 … N − 1
    EXPECT_EQ(st.lsets_skipped, 0);
    const auto y = test::random_points(400, d, 17, 0.05, 0.95);
    EXPECT_LE(max_abs_diff(fgp.evaluate(y), dense.evaluate(y)), 1e-8 * max_abs(f)) << "d=" << d;
    // Σλ = 0: the side condition of a constant.
    for (std::int64_t c = 0; c < 2; ++c) {
      double sum = 0, mag = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        sum += fgp.coefficients()(i, c);
        mag += std::abs(fgp.coefficients()(i, c));
      }
      EXPECT_LE(std::abs(sum), 1e-12 * mag);
    }
  }
}

// FGP and GMRES with fast multipole products (issue 5): the FMM's tolerance is coupled to the
// solver's, so the residual measured exactly (direct sums at every centre) meets the tolerance.
TEST(GlobalFmm, IterativeSolversWithFmmProductsMeetTheToleranceExactly) {
  const std::int64_t n = 6000;
  const auto x = datasets::halton(n, 3);
  const auto f = values_of(x, 1);
  const double eps = std::cbrt(static_cast<double>(n)); // ε h ≈ 1
  for (const auto solver : {GlobalSolver::fgp, GlobalSolver::krylov}) {
    auto o = cpu_options(solver == GlobalSolver::fgp ? Kernel::multiquadric : Kernel::tps,
                         solver == GlobalSolver::fgp ? eps : 1.0, solver);
    o.tolerance = 1e-6;
    o.matvec_method = Method::fmm;
    GlobalRbfInterpolant rbf(o);
    rbf.set_data(x, f);
    const auto &st = rbf.stats();
    EXPECT_NE(st.matvec.find("fmm (CPU, tol 1e-07"), std::string::npos) << st.matvec;
    const auto s = rbf.evaluate(x, Method::direct);
    double r_inf = 0, r2 = 0, f2 = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      r_inf = std::max(r_inf, std::abs(f(i, 0) - s(i, 0)));
      r2 += (f(i, 0) - s(i, 0)) * (f(i, 0) - s(i, 0));
      f2 += f(i, 0) * f(i, 0);
    }
    if (solver == GlobalSolver::fgp)
      EXPECT_LE(r_inf, 2e-6 * max_abs(f)); // FGP's test: ‖r‖∞ ≤ tol ‖f‖∞
    else
      EXPECT_LE(std::sqrt(r2 / f2), 2e-6); // GMRES's: ‖r‖₂ ≤ tol ‖f‖₂
    // evaluate() follows the matvec method: the FMM's values agree with the direct ones.
    const auto y = test::random_points(2000, 3, 19, 0.05, 0.95);
    EXPECT_LE(max_abs_diff(rbf.evaluate(y), rbf.evaluate(y, Method::direct)), 1e-5 * max_abs(f));
  }
}

// GMRES with the L-set preconditioner for the kernels FGP does not cover, against dense.
TEST(GlobalKrylov, AgreesWithDenseForEveryKernelFamily) {
  struct Case {
    Kernel k;
    double eps_h; // ε times the point spacing
    std::int64_t d;
    int max_iter; // measured counts are well below (docs/global-rbf.md)
  };
  const Case cases[] = {
      {Kernel::tps, 1.0, 2, 40},          {Kernel::tps, 1.0, 3, 40},
      {Kernel::multiquadric, 0.5, 2, 40}, {Kernel::cubic, 1.0, 2, 60},
      {Kernel::gaussian, 1.5, 2, 40},     {Kernel::inverse_multiquadric, 1.0, 3, 40},
      {Kernel::matern2, 0.5, 2, 60}};
  for (const auto &c : cases) {
    const std::int64_t n = 2000;
    const auto x = datasets::halton(n, c.d);
    const auto f = values_of(x);
    const double eps = c.eps_h * std::pow(static_cast<double>(n), 1.0 / c.d);
    GlobalRbfInterpolant dense(cpu_options(c.k, eps, GlobalSolver::dense));
    dense.set_data(x, f);
    auto ok = cpu_options(c.k, eps, GlobalSolver::krylov);
    ok.tolerance = 1e-11;
    GlobalRbfInterpolant kry(ok);
    kry.set_data(x, f);
    const auto &st = kry.stats();
    EXPECT_LE(st.residual_rel, 1.01e-11) << kernel_info(c.k).name;
    EXPECT_LE(st.iterations, c.max_iter) << kernel_info(c.k).name << " d=" << c.d;
    const auto y = test::random_points(300, c.d, 23, 0.05, 0.95);
    EXPECT_LE(max_abs_diff(kry.evaluate(y), dense.evaluate(y)), 1e-8 * max_abs(f))
        << kernel_info(c.k).name << " d=" << c.d;
  }
}

TEST(GlobalKrylov, ColumnsAreIndependentRightHandSidesAcrossRestarts) {
  // Unrelated columns converge at different steps; a Krylov basis of 5 forces restarts.
  const auto x = datasets::halton(1500, 2);
  const auto f = values_of(x, 3);
  auto o = cpu_options(Kernel::tps, 1.0, GlobalSolver::krylov);
  o.tolerance = 1e-12;
  o.gmres_restart = 5;
  o.max_iterations = 1000;
  GlobalRbfInterpolant all(o);
  all.set_data(x, f);
  const auto y = test::random_points(100, 2, 4);
  const auto u = all.evaluate(y);
  for (std::int64_t c = 0; c < 3; ++c) {
    Table<double> fc(x.rows(), 1);
    for (std::int64_t i = 0; i < x.rows(); ++i)
      fc(i, 0) = f(i, c);
    GlobalRbfInterpolant one(o);
    one.set_data(x, fc);
    const auto uc = one.evaluate(y);
    for (std::int64_t i = 0; i < y.rows(); ++i)
      EXPECT_NEAR(u(i, c), uc(i, 0), 1e-9) << c;
  }
}

// The matvec is pluggable: a caller's product is the one the solver uses.
TEST(GlobalKrylov, UsesASuppliedMatVec) {
  struct Counting final : KernelMatVec {
    std::unique_ptr<KernelMatVec> inner;
    int *calls;
    std::int64_t size() const override { return inner->size(); }
    void apply(const Table<double> &x, Table<double> &y) override {
      ++*calls;
      inner->apply(x, y);
    }
    std::string describe() const override { return "counting"; }
  };
  int calls = 0;
  auto o = cpu_options(Kernel::multiquadric, 20.0, GlobalSolver::fgp);
  o.matvec = [&](const Table<double> &c) {
    auto m = std::make_unique<Counting>();
    m->inner = make_direct_matvec(c, Kernel::multiquadric, 20.0, 0.0, Backend::cpu);
    m->calls = &calls;
    return m;
  };
  const auto x = datasets::halton(800, 2);
  GlobalRbfInterpolant rbf(o);
  rbf.set_data(x, values_of(x));
  EXPECT_EQ(rbf.stats().matvec, "counting");
  EXPECT_EQ(calls, rbf.stats().matvecs);
  EXPECT_GE(calls, rbf.stats().iterations);
}

TEST(GlobalRbf, AutomaticSolverChoice) {
  const auto x = datasets::halton(400, 2);
  const auto f = values_of(x);
  auto o = cpu_options(Kernel::multiquadric, 10.0, GlobalSolver::automatic);
  o.dense_max_n = 100;
  GlobalRbfInterpolant mq(o);
  mq.set_data(x, f);
  EXPECT_EQ(mq.stats().solver, GlobalSolver::fgp);
  o.kernel = Kernel::tps;
  GlobalRbfInterpolant tps(o);
  tps.set_data(x, f);
  EXPECT_EQ(tps.stats().solver, GlobalSolver::krylov);
  o.dense_max_n = 1000;
  GlobalRbfInterpolant small(o);
  small.set_data(x, f);
  EXPECT_EQ(small.stats().solver, GlobalSolver::dense);
}

TEST(GlobalRbf, BadInputsAreClearErrors) {
  const auto x = datasets::halton(100, 2);
  const auto f = values_of(x);
  // Repeated points: both indices named.
  auto xd = x;
  xd(57, 0) = x(12, 0);
  xd(57, 1) = x(12, 1);
  expect_error(
      [&] {
        GlobalRbfInterpolant(cpu_options(Kernel::multiquadric, 2, GlobalSolver::dense))
            .set_data(xd, f);
      },
      ErrorCode::invalid_argument, "data points 12 and 57 are identical");
  // Not unisolvent: tps needs a linear polynomial, the points lie on a line.
  Table<double> line(50, 2);
  for (std::int64_t i = 0; i < 50; ++i) {
    line(i, 0) = i * 0.02;
    line(i, 1) = 1 - i * 0.02;
  }
  expect_error(
      [&] {
        GlobalRbfInterpolant(cpu_options(Kernel::tps, 1, GlobalSolver::dense))
            .set_data(line, values_of(line));
      },
      ErrorCode::invalid_argument, "not unisolvent for polynomials of degree 1");
  // Degree below the kernel's minimum.
  auto o = cpu_options(Kernel::tps, 1, GlobalSolver::dense);
  o.degree = 0;
  expect_error([&] { GlobalRbfInterpolant{o}; }, ErrorCode::invalid_argument,
               "needs a polynomial of degree >= 1");
  // FGP adds a constant only.
  auto of = cpu_options(Kernel::tps, 1, GlobalSolver::fgp);
  expect_error([&] { GlobalRbfInterpolant(of).set_data(x, f); }, ErrorCode::invalid_argument,
               "needs polynomial degree 0");
  // Singular kernels do not interpolate; bad parameters.
  expect_error([&] { GlobalRbfInterpolant{cpu_options(Kernel::laplace, 1, GlobalSolver::dense)}; },
               ErrorCode::invalid_argument, "singular at r = 0");
  auto ot = cpu_options(Kernel::multiquadric, 1, GlobalSolver::fgp);
  ot.tolerance = 1e-16;
  expect_error([&] { GlobalRbfInterpolant{ot}; }, ErrorCode::invalid_argument, "tolerance");
  expect_error(
      [&] { GlobalRbfInterpolant{cpu_options(Kernel::multiquadric, -1, GlobalSolver::fgp)}; },
      ErrorCode::invalid_argument, "eps must be positive");
  auto oq = cpu_options(Kernel::multiquadric, 1, GlobalSolver::fgp);
  oq.lset_size = 1;
  expect_error([&] { GlobalRbfInterpolant{oq}; }, ErrorCode::invalid_argument, "L-set size");
  // q must exceed the polynomial terms (tps in 3D: 4), or every local system is singular.
  auto o4 = cpu_options(Kernel::tps, 1, GlobalSolver::krylov);
  o4.lset_size = 4;
  const auto x3 = datasets::halton(200, 3);
  expect_error([&] { GlobalRbfInterpolant(o4).set_data(x3, values_of(x3)); },
               ErrorCode::invalid_argument, "must exceed the 4 polynomial terms");
  // Shapes and values.
  GlobalRbfInterpolant ok(cpu_options(Kernel::multiquadric, 2, GlobalSolver::dense));
  expect_error([&] { ok.set_data(x, Table<double>(99, 1)); }, ErrorCode::shape_mismatch,
               "100 data points but 99 value rows");
  auto fn = f;
  fn(33, 0) = std::nan("");
  expect_error([&] { ok.set_data(x, fn); }, ErrorCode::non_finite, "row 33");
  expect_error([&] { ok.evaluate(x); }, ErrorCode::invalid_argument, "before set_data");
  ok.set_data(x, f);
  expect_error([&] { ok.evaluate(Table<double>(3, 3)); }, ErrorCode::shape_mismatch, "dimension 2");
  // An iteration limit that is too small: not_converged, with the residual reached.
  auto oi = cpu_options(Kernel::multiquadric, 10, GlobalSolver::fgp);
  oi.max_iterations = 1;
  oi.tolerance = 1e-12;
  expect_error([&] { GlobalRbfInterpolant(oi).set_data(x, f); }, ErrorCode::not_converged,
               "did not reach the tolerance");
}

} // namespace
} // namespace ksum
