// The FGP algorithm (Faul, Goodsell & Powell), seed 000 §3.1 steps 2 and 6–10, for every value
// column in lockstep so that one matvec serves all columns of an iteration.
#include "rbf/global/solvers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <omp.h>

namespace ksum::rbf {

namespace {

// The largest magnitude; infinity when any entry is not finite (so a NaN never passes a test).
double max_abs(const double *a, std::int64_t n) {
  double m = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]))
      return std::numeric_limits<double>::infinity();
    m = std::max(m, std::abs(a[i]));
  }
  return m;
}

// The shift ω that minimises max_i |r_i − ω| over all rows (step 9), applied to r; returns ω.
double centre_range(double *r, std::int64_t n, const Rows &rows) {
  // (−min, max) over the rows of every rank; a rank without rows contributes −∞ to both.
  double b[2] = {-std::numeric_limits<double>::infinity(),
                 -std::numeric_limits<double>::infinity()};
  if (n > 0) {
    const auto [lo, hi] = std::minmax_element(r, r + n);
    b[0] = -*lo;
    b[1] = *hi;
  }
  rows.max(b, 2);
  if (!std::isfinite(b[0]) || !std::isfinite(b[1]))
    return 0; // no rows anywhere (or a non-finite residual, which the caller's test catches)
  const double w = 0.5 * (b[1] - b[0]);
  for (std::int64_t i = 0; i < n; ++i)
    r[i] -= w;
  return w;
}

} // namespace

SolveResult solve_fgp(KernelMatVec &A, const TauOperator &tau_of, const Table<double> &f,
                      const IterSettings &it) {
  const std::int64_t n = f.rows(), nc = f.cols();
  const int nt = it.threads > 0 ? it.threads : omp_get_max_threads();
  const Rows &rows = it.rows;
  // Over all rows (all ranks).
  const auto gmax = [&](const double *a) { return rows.max(max_abs(a, n)); };
  const auto gdot = [&](const double *a, const double *b) { return rows.sum(dot(a, b, n, nt)); };
  SolveResult res;
  res.lambda = Table<double>(n, nc);
  res.poly = Table<double>(1, nc);
  Table<double> r(n, nc), delta(n, nc), d(n, nc), tau(n, nc);
  std::vector<double> target(nc);
  std::vector<char> done(nc, 0);
  std::vector<int> k(nc, 1);
  // Step 2: λ = 0, α = (min f + max f) / 2, r = f − α.
  for (std::int64_t c = 0; c < nc; ++c) {
    std::copy(f.col(c).begin(), f.col(c).end(), r.col(c).begin());
    res.poly(0, c) = centre_range(r.col(c).data(), n, rows);
    target[c] = it.tolerance * gmax(f.col(c).data());
  }
  auto worst = [&] {
    double w = 0;
    for (std::int64_t c = 0; c < nc; ++c) {
      const double fn = gmax(f.col(c).data());
      w = std::max(w, fn > 0 ? gmax(r.col(c).data()) / fn : 0.0);
    }
    return w;
  };
  bool verified = false;
  while (true) {
    for (std::int64_t c = 0; c < nc; ++c)
      done[c] = gmax(r.col(c).data()) <= target[c];
    if (std::all_of(done.begin(), done.end(), [](char v) { return v != 0; })) {
      // Termination (7) holds for the recursively updated residual: confirm it with the true
      // one, r = f − Φλ − α, and go on from there when rounding has made the two drift apart.
      if (verified)
        break;
      Table<double> s(n, nc);
      A.apply(res.lambda, s);
      ++res.matvecs;
      for (std::int64_t c = 0; c < nc; ++c)
        for (std::int64_t i = 0; i < n; ++i)
          r(i, c) = f(i, c) - s(i, c) - res.poly(0, c);
      verified = true;
      for (std::int64_t c = 0; c < nc; ++c)
        if (gmax(r.col(c).data()) > target[c]) {
          verified = false;
          k[c] = 1; // restart the recursion from the true residual
        }
      continue;
    }
    verified = false;
    if (res.iterations >= it.max_iterations) {
      res.converged = false;
      break;
    }
    // Step 6: τ from the L-sets; step 7: the search direction δ, conjugate to the previous one.
    for (std::int64_t c = 0; c < nc; ++c) {
      if (done[c])
        continue;
      tau_of(r.col(c).data(), tau.col(c).data());
      double *dl = delta.col(c).data();
      const double *tc = tau.col(c).data(), *dc = d.col(c).data();
      if (k[c] == 1) {
        std::copy(tc, tc + n, dl);
      } else {
        const double den = gdot(dl, dc);
        const double beta = den != 0.0 ? gdot(tc, dc) / den : 0.0;
#pragma omp parallel for num_threads(nt) schedule(static)
        for (std::int64_t i = 0; i < n; ++i)
          dl[i] = tc[i] - beta * dl[i];
      }
    }
    // Step 8: d = Φδ (columns already converged carry δ = 0 and are ignored).
    for (std::int64_t c = 0; c < nc; ++c)
      if (done[c])
        std::fill(delta.col(c).begin(), delta.col(c).end(), 0.0);
    A.apply(delta, d);
    ++res.matvecs;
    ++res.iterations;
    // Step 9: the step γ, the new residual and the shift ω that minimises its maximum.
    for (std::int64_t c = 0; c < nc; ++c) {
      if (done[c])
        continue;
      double *rc = r.col(c).data(), *lc = res.lambda.col(c).data();
      const double *dl = delta.col(c).data(), *dc = d.col(c).data();
      const double den = gdot(dl, dc);
      const double gamma = den != 0.0 ? gdot(dl, rc) / den : 0.0;
#pragma omp parallel for num_threads(nt) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) {
        rc[i] -= gamma * dc[i];
        lc[i] += gamma * dl[i];
      }
      res.poly(0, c) += centre_range(rc, n, rows);
      ++k[c]; // step 10
    }
    const double w = worst();
    res.history.push_back(w);
    if (it.progress)
      it.progress(res.iterations, w);
  }
  return res;
}

} // namespace ksum::rbf
