// Error bounds and the cost model of the Gauss transforms (see fgt_params.hpp).
#include "fgt/fgt_params.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace ksum::fgt {
namespace {

// Σ_{n<p} xⁿ/√n! and Σ_{n≥p} xⁿ/√n! (the tail to below 1e-40 of the head: the terms fall
// faster than geometrically once n > x²).
struct Split {
  double head = 0, tail = 0;
};
Split split_sum(double x, int p) {
  Split s;
  double term = 1;
  for (int n = 0;; ++n) {
    if (n < p)
      s.head += term;
    else
      s.tail += term;
    if (n >= p && (term <= 1e-40 * (s.head + s.tail) || n > p + 4000))
      break;
    term *= x / std::sqrt(double(n + 1));
  }
  return s;
}

// K^f [Π (head_i + tail_i) − Π head_i] over f factors, telescoped so that no cancellation occurs:
// Σ_i tail_i Π_{j<i} head_j Π_{j>i} (head_j + tail_j).
double dropped(const std::vector<Split> &f, int k_factors) {
  double total = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    double t = f[i].tail;
    for (std::size_t j = 0; j < f.size(); ++j)
      if (j < i)
        t *= f[j].head;
      else if (j > i)
        t *= f[j].head + f[j].tail;
    total += t;
  }
  return std::pow(cramer, k_factors) * total;
}

double ball_volume(int d, double r) {
  return std::pow(std::numbers::pi, d / 2.0) / std::tgamma(d / 2.0 + 1) * std::pow(r, d);
}

} // namespace

double cutoff_radius(double eps) {
  return std::sqrt(std::log(1 / eps));
}

double bound_series(int p, const double *rho, int d) {
  std::vector<Split> f;
  for (int k = 0; k < d; ++k)
    f.push_back(split_sum(std::sqrt(2.0) * rho[k], p));
  return dropped(f, d);
}

double bound_translate(int p, const double *rho, int d) {
  std::vector<Split> f;
  for (int k = 0; k < d; ++k) {
    const Split s = split_sum(2 * rho[k], p);
    f.push_back(s);
    f.push_back(s);
  }
  return dropped(f, d);
}

std::vector<double> sampled_translate_errors(int p_max, double half, double reach) {
  std::vector<double> worst(static_cast<std::size_t>(p_max) + 1, 0.0);
  if (half <= 0 || p_max < 1)
    return worst;
  const int samples = 5; // a, b ∈ {−ρ, −ρ/2, 0, ρ/2, ρ}: the error peaks at the box edges
  const int kmax = 2 * p_max;
  std::vector<double> h(static_cast<std::size_t>(kmax) + 1), A(static_cast<std::size_t>(p_max)),
      B(static_cast<std::size_t>(p_max));
  // Centre distances 0, 2·half, 4·half, … (at most 64 of them: boxes far smaller than the
  // cutoff take a coarser step; their errors are tiny anyway).
  const double last = reach + 2 * half, step = std::max(2 * half, last / 64);
  for (int ic = 0; ic * step <= last + 1e-12 * step; ++ic) {
    const double c = ic * step;
    // h_k(c) = H_k(c) e^{−c²} by the recurrence h_{k+1} = 2c h_k − 2k h_{k−1}.
    h[0] = std::exp(-c * c);
    if (kmax >= 1)
      h[1] = 2 * c * h[0];
    for (int k = 1; k < kmax; ++k)
      h[std::size_t(k + 1)] = 2 * c * h[std::size_t(k)] - 2.0 * k * h[std::size_t(k - 1)];
    for (int ia = 0; ia < samples; ++ia)
      for (int ib = 0; ib < samples; ++ib) {
        const double a = half * (2.0 * ia / (samples - 1) - 1),
                     b = half * (2.0 * ib / (samples - 1) - 1);
        const double exact = std::exp(-(c + b - a) * (c + b - a));
        A[0] = 1, B[0] = 1;
        for (int n = 1; n < p_max; ++n) {
          A[std::size_t(n)] = A[std::size_t(n - 1)] * a / n;
          B[std::size_t(n)] = B[std::size_t(n - 1)] * -b / n;
        }
        // S(P) = Σ_{n<P, m<P} A_n B_m h_{n+m}(c): S(P + 1) adds row n = P and column m = P.
        double sum = 0;
        for (int P = 1; P <= p_max; ++P) {
          const int q = P - 1;
          double add = A[std::size_t(q)] * B[std::size_t(q)] * h[std::size_t(2 * q)];
          for (int k = 0; k < q; ++k)
            add += (A[std::size_t(q)] * B[std::size_t(k)] + A[std::size_t(k)] * B[std::size_t(q)]) *
                   h[std::size_t(q + k)];
          sum += add;
          worst[std::size_t(P)] = std::max(worst[std::size_t(P)], std::abs(exact - sum));
        }
      }
  }
  return worst;
}

double bound_ifgt(int p, double rx, double ry) {
  if (rx <= 0 || ry <= 0)
    return 0;
  const double b = std::min(ry, (rx + std::sqrt(rx * rx + 2.0 * p)) / 2);
  return std::exp(p * std::log(2 * rx * b) - std::lgamma(p + 1.0) - (b - rx) * (b - rx));
}

std::int64_t graded_terms(int p, int d) {
  // C(p − 1 + d, d) = Π_{i=1..d} (p − 1 + i) / i, exact in integers at every step.
  std::int64_t c = 1;
  for (int i = 1; i <= d; ++i) {
    c = c * (p - 1 + i) / i;
    if (c > max_terms)
      return max_terms + 1;
  }
  return c;
}

RouteCost best_route(double ns, double mt, double nb_s, double nb_t, std::int64_t terms, int d,
                     int p, bool series_ok) {
  RouteCost best{Route::direct, mt * (ns * Costs::direct_in_box(d) + Costs::direct_row)};
  if (!series_ok)
    return best;
  const double form = Costs::form(terms, d, p), eval = Costs::eval(terms, d, p);
  const RouteCost options[] = {
      {Route::hermite, mt * eval + ns * form / nb_s},
      {Route::taylor, ns * form + mt * eval / nb_t},
      {Route::translate, Costs::translate(terms, d, p) + ns * form / nb_s + mt * eval / nb_t}};
  for (const auto &o : options)
    if (o.cost < best.cost)
      best = o;
  return best;
}

// Box offsets o with Σ ((|o_k| − 1)₊ s_k)² < R², or empty when there are more of them than
// `limit` (then every source box is tested instead).
std::vector<std::int64_t> neighbour_offsets(const FgtGrid &g, int d, std::int64_t limit) {
  std::vector<std::int64_t> reach(d);
  double span = 1;
  for (int k = 0; k < d; ++k) {
    // In double: cutoff / side overflows int64 for a spread below ~1e-18 h.
    reach[k] =
        g.side[k] > 0
            ? std::int64_t(std::min(double(g.count[k] - 1), std::floor(g.cutoff / g.side[k]) + 1))
            : 0;
    span *= 2.0 * reach[k] + 1;
  }
  std::vector<std::int64_t> out;
  if (span > double(limit))
    return out;
  std::vector<std::int64_t> o(d);
  for (int k = 0; k < d; ++k)
    o[k] = -reach[k];
  for (;;) {
    double r2 = 0;
    for (int k = 0; k < d; ++k) {
      const double gap = double(std::max<std::int64_t>(std::abs(o[k]) - 1, 0)) * g.side[k];
      r2 += gap * gap;
    }
    if (r2 < g.cutoff * g.cutoff)
      out.insert(out.end(), o.begin(), o.end());
    int k = d - 1;
    while (k >= 0 && o[k] == reach[k])
      o[k] = -reach[k], --k;
    if (k < 0)
      break;
    ++o[k];
  }
  return out;
}

FgtGrid fgt_grid(const Extent &e, double rho, double eps, int order, int limit_p,
                 std::int64_t limit_terms) {
  FgtGrid g;
  const int d = e.d;
  g.rho = rho;
  g.cutoff = cutoff_radius(eps / 2);
  double boxes = 1;
  std::vector<double> half(d);
  for (int k = 0; k < d; ++k) {
    const double ext = e.hi[k] - e.lo[k];
    const double n = std::max(1.0, std::ceil(ext / (2 * rho)));
    boxes *= n;
    g.count.push_back(n > 4e18 ? std::int64_t(4e18) : std::int64_t(n));
    g.side.push_back(ext / n);
    half[k] = g.side[k] / 2;
  }
  if (boxes > 4e18) {
    g.cost = std::numeric_limits<double>::infinity();
    return g;
  }
  // The estimate per p: Σ_k of each axis's sampled 1-D error (the d-dimensional kernel is the
  // product of the axes' factors, each within 1 + its error of the exact one).
  // p_top: the largest p the engine takes (p ≤ limit_p, p^d ≤ limit_terms); a given order may
  // exceed it.
  int p_top = 1;
  while (p_top < limit_p && ipow_saturated(p_top + 1, d) <= limit_terms)
    ++p_top;
  const int p_est = std::max(p_top, order);
  std::vector<double> estimate(static_cast<std::size_t>(p_est) + 1, 0.0);
  for (int k = 0; k < d; ++k) {
    const auto e1 = sampled_translate_errors(p_est, half[k], g.cutoff);
    for (int p = 1; p <= p_est; ++p)
      estimate[std::size_t(p)] += e1[std::size_t(p)];
  }
  if (order > 0) {
    g.p = order;
  } else {
    for (int p = 1; p <= p_top; ++p)
      if (estimate[std::size_t(p)] <= eps / 2) {
        g.p = p;
        break;
      }
  }
  g.terms = g.p > 0 ? ipow_saturated(g.p, d) : 0;
  g.bound = g.p > 0 ? bound_translate(g.p, half.data(), d) : 0;
  g.estimate = g.p > 0 ? estimate[std::size_t(g.p)] : 0;

  // Neighbours within the cutoff (the box count of the offsets when they are few enough to list).
  double span = 1;
  for (int k = 0; k < d; ++k)
    span *= g.side[k] > 0 ? 2.0 * std::min<double>(double(g.count[k] - 1),
                                                   std::floor(g.cutoff / g.side[k]) + 1) +
                                1
                          : 1.0;
  const auto listed = neighbour_offsets(g, d, 200000);
  double neighbours = listed.empty() ? span : double(listed.size() / std::size_t(d));
  neighbours = std::min(neighbours, boxes);
  const double ns = double(e.n) / boxes, mt = double(e.m) / boxes;
  const auto r = best_route(ns, mt, neighbours, neighbours, g.terms, d, g.p, g.p > 0);
  g.cost = boxes * neighbours * (r.cost + Costs::box_pair) + double(e.n + e.m) * (2.0 * d + 30);
  return g;
}

FgtGrid choose_fgt(const Extent &e, double eps, int order, int limit_p, std::int64_t limit_terms) {
  FgtGrid best;
  best.cost = std::numeric_limits<double>::infinity();
  for (double rho : {0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0, 1.2, 1.5}) {
    auto g = fgt_grid(e, rho, eps, order, limit_p, limit_terms);
    if (g.cost < best.cost)
      best = std::move(g);
  }
  return best;
}

int ifgt_order(double rx, double eps, int d, int order) {
  if (order > 0)
    return graded_terms(order, d) <= max_terms ? order : 0;
  const double ry = rx + cutoff_radius(eps / 2);
  for (int p = 1; p <= max_order && graded_terms(p, d) <= max_terms; ++p)
    if (bound_ifgt(p, rx, ry) <= eps / 2)
      return p;
  return 0;
}

IfgtChoice choose_ifgt(const Extent &e, double eps, int order) {
  IfgtChoice best;
  best.cost = std::numeric_limits<double>::infinity();
  const int d = e.d;
  double diag2 = 0, volume = 1;
  int d_eff = 0;
  for (int k = 0; k < d; ++k) {
    const double ext = e.hi[k] - e.lo[k];
    diag2 += ext * ext;
    if (ext > 0)
      volume *= ext, ++d_eff;
  }
  const double R = cutoff_radius(eps / 2);
  for (std::int64_t k = 1; k <= std::max<std::int64_t>(1, e.n) && k <= (1 << 16); k *= 2) {
    IfgtChoice c;
    c.clusters = k;
    c.rx = 0.5 * std::sqrt(diag2) * std::pow(double(k), -1.0 / std::max(d_eff, 1));
    c.p = ifgt_order(c.rx, eps, d, order);
    if (c.p == 0)
      continue;
    c.terms = graded_terms(c.p, d);
    c.cutoff = R;
    c.bound = bound_ifgt(c.p, c.rx, c.rx + R);
    const double reach =
        d_eff > 0 ? k * std::min(1.0, ball_volume(d_eff, R + 2 * c.rx) / volume) : double(k);
    c.cost = double(e.n) * k * 3.0 * d + double(e.n) * Costs::ifgt_eval(c.terms, d) +
             double(e.m) * (k * 3.0 * d + reach * Costs::ifgt_eval(c.terms, d));
    if (c.cost < best.cost)
      best = c;
  }
  return best;
}

double direct_cost(const Extent &e) {
  return double(e.n) * double(e.m) * Costs::direct_pair(e.d) * Costs::plain_direct_share;
}

} // namespace ksum::fgt
