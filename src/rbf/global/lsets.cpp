#include "rbf/global/lsets.hpp"

#include "kernels/kernel_defs.hpp"
#include "spatial/kdtree.hpp"

#include <ksum/error.hpp>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <omp.h>
#include <random>

namespace ksum::rbf {

namespace {

int thread_count(int threads) {
  return threads > 0 ? threads : omp_get_max_threads();
}

// ζ of one set: solve [Φ_L Π_L; Π_Lᵀ 0] [ζ; a] = [e_0; 0]. False when the system is singular.
template <class K>
bool local_lagrange(const K &kf, double c2, const Table<double> &x, const std::uint32_t *mem,
                    std::int64_t n, int degree, Eigen::MatrixXd &B, Eigen::VectorXd &rhs,
                    double *zeta) {
  constexpr double p0 = kdef::p_offset<K>();
  const std::int64_t d = x.cols();
  // The polynomial in coordinates relative to the set's own point, scaled by the set's radius.
  std::vector<double> centre(d);
  for (std::int64_t k = 0; k < d; ++k)
    centre[k] = x(mem[0], k);
  double radius = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (std::int64_t k = 0; k < d; ++k) {
      const double e = x(mem[i], k) - centre[k];
      s += e * e;
    }
    radius = std::max(radius, std::sqrt(s));
  }
  const PolyBasis basis(degree, d, centre, radius > 0 ? radius : 1.0);
  const std::int64_t m = basis.terms(), size = n + m;
  B.setZero(size, size);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = j; i < n; ++i) {
      double s = 0;
      for (std::int64_t k = 0; k < d; ++k) {
        const double e = x(mem[i], k) - x(mem[j], k);
        s += e * e;
      }
      B(i, j) = B(j, i) = static_cast<double>(kf.value(p0 + c2 * s));
    }
  if (m > 0) {
    double xi[PolyBasis::max_dim], v[PolyBasis::max_terms];
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t k = 0; k < d; ++k)
        xi[k] = x(mem[i], k);
      basis.eval(xi, 1, v);
      for (std::int64_t t = 0; t < m; ++t)
        B(i, n + t) = B(n + t, i) = v[t];
    }
  }
  rhs.setZero(size);
  rhs(0) = 1.0;
  const Eigen::PartialPivLU<Eigen::MatrixXd> lu(B);
  if (!(lu.rcond() > 1e-15))
    return false;
  const Eigen::VectorXd sol = lu.solve(rhs);
  for (std::int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(sol(i)))
      return false;
    zeta[i] = sol(i);
  }
  return zeta[0] != 0.0;
}

} // namespace

LSets build_lsets(const Table<double> &x, const LSetConfig &cfg) {
  const std::int64_t n = x.rows(), d = x.cols();
  if (n >= (std::int64_t{1} << 32))
    throw Error(ErrorCode::unsupported,
                fmt::format("L-sets index points with 32 bits: {} points is too many", n));
  const std::int64_t m_terms = static_cast<std::int64_t>(PolyBasis::count(cfg.poly_degree, d));
  LSets s;
  s.n = n;
  // Seed 000 step 3: a random permutation σ; rank[i] is i's position in it.
  std::vector<std::int64_t> order(n), rank(n);
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::mt19937_64 rng(cfg.seed);
  std::shuffle(order.begin(), order.end(), rng);
  for (std::int64_t m = 0; m < n; ++m)
    rank[order[m]] = m;
  // Sets while more points remain than there are polynomial terms.
  const std::int64_t nsets = std::max<std::int64_t>(0, n - m_terms);
  const spatial::KdTree tree(x, rank);
  s.ptr.resize(nsets + 1);
  s.ptr[0] = 0;
  for (std::int64_t m = 0; m < nsets; ++m)
    s.ptr[m + 1] = s.ptr[m] + std::min<std::int64_t>(cfg.q, n - m);
  s.idx.resize(s.ptr[nsets]);
  s.zeta.assign(s.ptr[nsets], 0.0);
  const int nt = thread_count(cfg.threads);
  std::int64_t skipped = 0;
  const double cs = kdef::coord_scale(cfg.kernel, cfg.eps), c2 = cs * cs;
  kdef::visit<double>(cfg.kernel, [&](auto kf) {
#pragma omp parallel num_threads(nt) reduction(+ : skipped)
    {
      std::vector<std::pair<double, std::int64_t>> nb;
      Eigen::MatrixXd B;
      Eigen::VectorXd rhs;
      double xl[PolyBasis::max_dim];
#pragma omp for schedule(dynamic, 256)
      for (std::int64_t m = 0; m < nsets; ++m) {
        const std::int64_t l = order[m], size = s.ptr[m + 1] - s.ptr[m];
        for (std::int64_t k = 0; k < d; ++k)
          xl[k] = x(l, k);
        // Seed 000 step 4: the q nearest among σ(m), …, σ(N).
        tree.nearest(xl, static_cast<int>(size), m, nb);
        std::uint32_t *mem = &s.idx[s.ptr[m]];
        mem[0] = static_cast<std::uint32_t>(l);
        std::int64_t c = 1;
        for (const auto &[dist2, j] : nb)
          if (j != l && c < size)
            mem[c++] = static_cast<std::uint32_t>(j);
        // Seed 000 step 5: the local Lagrange function of x_l on L_l.
        if (!local_lagrange(kf, c2, x, mem, size, cfg.poly_degree, B, rhs, &s.zeta[s.ptr[m]])) {
          std::fill(&s.zeta[s.ptr[m]], &s.zeta[s.ptr[m]] + size, 0.0);
          ++skipped;
        }
      }
    }
  });
  s.skipped = skipped;
  // The transpose (point → sets containing it) for a gather without atomics in apply().
  s.tptr.assign(n + 1, 0);
  for (const auto j : s.idx)
    ++s.tptr[j + 1];
  for (std::int64_t j = 0; j < n; ++j)
    s.tptr[j + 1] += s.tptr[j];
  s.tset.resize(s.idx.size());
  s.tzeta.resize(s.idx.size());
  std::vector<std::int64_t> fill(s.tptr.begin(), s.tptr.end() - 1);
  for (std::int64_t l = 0; l < nsets; ++l)
    for (std::int64_t k = s.ptr[l]; k < s.ptr[l + 1]; ++k) {
      const std::int64_t e = fill[s.idx[k]]++;
      s.tset[e] = static_cast<std::uint32_t>(l);
      s.tzeta[e] = s.zeta[k];
    }
  return s;
}

void LSets::apply(const double *r, double *tau, std::vector<double> &mu, int threads) const {
  const std::int64_t nsets = count();
  mu.resize(nsets);
  const int nt = thread_count(threads);
#pragma omp parallel num_threads(nt)
  {
    // Seed 000 step 6: μ_l = Σ_{i∈L_l} ζ_li r_i / ζ_ll …
#pragma omp for schedule(static)
    for (std::int64_t l = 0; l < nsets; ++l) {
      const std::int64_t b = ptr[l], e = ptr[l + 1];
      if (zeta[b] == 0.0) {
        mu[l] = 0.0;
        continue;
      }
      double acc = 0;
      for (std::int64_t k = b; k < e; ++k)
        acc += zeta[k] * r[idx[k]];
      mu[l] = acc / zeta[b];
    }
    // … and τ_j = Σ_l μ_l ζ_lj over the sets containing j.
#pragma omp for schedule(static)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t e = tptr[j]; e < tptr[j + 1]; ++e)
        acc += mu[tset[e]] * tzeta[e];
      tau[j] = acc;
    }
  }
}

} // namespace ksum::rbf
