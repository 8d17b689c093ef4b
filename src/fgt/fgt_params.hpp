#pragma once
// Error bounds and the cost model of the Gauss transforms (scaled coordinates z = x / h).
//
// Every source reaches a target by exactly one route (direct, a series, or dropped beyond the
// cutoff), and each route's error is at most a bound times |q_j|. So the error at any target is at
// most max(route bounds) · Σ|q_j|: each bound is held to tolerance / 2, leaving the other half to
// rounding. The FGT's order uses the sampled one-source error (sampled_translate_errors), which
// bounds the Hermite, Taylor and translated routes alike; the proven bounds (bound_series,
// bound_translate) stay for the tests and the record.
#include <cstdint>
#include <vector>

namespace ksum::fgt {

// Cramér's inequality: |H_n(t)| e^{−t²/2} ≤ K 2^{n/2} √(n!) with K < 1.086435.
inline constexpr double cramer = 1.086435;
inline constexpr int max_order = 40;
// The most tensor or graded terms a series may have: beyond this a series costs more than the
// direct sum of any box pair worth expanding, and memory per box grows past caches.
inline constexpr std::int64_t max_terms = 1 << 16;

// Interactions with |z_y − z_x| ≥ R are dropped: e^{−R²} = eps.
double cutoff_radius(double eps);

// Bounds per unit |q| for truncation at p terms per dimension, boxes of half-sides rho[k]:
// a Hermite (or Taylor) series alone, and a Hermite series translated to a Taylor series. Each
// is Σ over the dropped multi-indices of the Cramér bound of its terms: per dimension the terms
// are bounded by K (√2 ρ)ⁿ/√n! (one series) and K (2ρ)^{n+m}/√(n! m!) (translation, using
// (n+m)! ≤ 2^{n+m} n! m!).
double bound_series(int p, const double *rho, int d);
double bound_translate(int p, const double *rho, int d);

// IFGT: e^{−|y−x|²} = e^{−|a|²} e^{−|b|²} e^{2a·b} with a = z_x − c, b = z_y − c and e^{2a·b}
// truncated below total degree p. The Taylor remainder of e^z is ≤ |z|^p/p! e^{max(z,0)}, so the
// error is ≤ (2|a||b|)^p/p! e^{−(|a|−|b|)²}, maximised over |a| ≤ rx, |b| ≤ ry.
double bound_ifgt(int p, double rx, double ry);

// The 1-D error of the Hermite series translated to a Taylor series, both truncated at p terms,
// for boxes of half-side `half` whose centres lie 0, 2·half, 4·half … reach + 2·half apart (at
// most 64 distances: a coarser step where the boxes are far smaller than the reach): the
// largest |e^{−(y−x)²} − Σ_{n,m<p} (a^n/n!) ((−b)^m/m!) h_{n+m}(c)| over source and target
// offsets a, b ∈ [−half, half] sampled at 5 points each. Entry p for p = 1 … p_max (entry 0
// unused). It replaced bound_translate (Cramér's inequality) in the order choice: that bound sat
// 10^2 … 10^11 above the measured errors (issue 26; bench/fgt_bench bounds).
std::vector<double> sampled_translate_errors(int p_max, double half, double reach);
std::int64_t graded_terms(int p, int d);           // C(p − 1 + d, d); saturates at max_terms + 1
inline std::int64_t ipow_saturated(int p, int d) { // p^d; saturates at max_terms + 1
  std::int64_t r = 1;
  for (int k = 0; k < d; ++k)
    if ((r *= p) > max_terms)
      return max_terms + 1;
  return r;
}

// Flop-unit costs of the pieces (an exp counts 20).
struct Costs {
  static double direct_pair(int d) { return 3.0 * d + 20; }
  static double eval(std::int64_t terms, int d, int p) {
    return 2.0 * terms + 3.0 * d * p + 20.0 * d;
  }
  static double form(std::int64_t terms, int d, int p) {
    return 2.0 * terms + 3.0 * d * p + 20.0 * d;
  }
  static double translate(std::int64_t terms, int d, int p) { return 2.0 * d * p * terms; }
  // Per interacting pair of boxes: finding it, storing it, and the loop set-up around it; per
  // target row of a direct pair; a pair inside the FGT's short direct loops (measured ~2x the
  // plain sum's).
  static constexpr double box_pair = 400;
  static constexpr double direct_row = 50;
  static double direct_in_box(int d) { return 2 * direct_pair(d); }
  // The plain direct sum is vectorised (and tiled on the GPU): half a scalar pair's cost.
  static constexpr double plain_direct_share = 0.5;
  // IFGT: the graded monomials cost one multiply per term on top of the dot product.
  static double ifgt_eval(std::int64_t terms, int d) { return 3.0 * terms + 3.0 * d + 20; }
};

// The cheapest route for a pair of boxes with ns sources and mt targets, whose source box has
// nb_s neighbours and target box nb_t (to share the cost of forming and evaluating a series).
enum class Route : std::uint8_t { direct, hermite, taylor, translate };
struct RouteCost {
  Route route;
  double cost;
};
RouteCost best_route(double ns, double mt, double nb_s, double nb_t, std::int64_t terms, int d,
                     int p, bool series_ok);

// The bounding box of the points in scaled coordinates.
struct Extent {
  int d = 0;
  std::int64_t n = 0, m = 0;
  std::vector<double> lo, hi;
};

// The uniform grid of the FGT: n_k boxes of side s_k ≤ 2ρ along each axis.
struct FgtGrid {
  std::vector<std::int64_t> count; // boxes per axis
  std::vector<double> side;        // box side per axis (0 where the extent is 0)
  int p = 0;                       // 0: no series meets the tolerance (every pair direct)
  std::int64_t terms = 0;          // p^d
  double bound = 0, cutoff = 0, rho = 0, cost = 0;
  double estimate = 0; // the sampled error of p (sampled_translate_errors, summed over the axes)
};
// limit_p, limit_terms: the largest p and p^d an engine handles (the GPU's are smaller).
FgtGrid fgt_grid(const Extent &e, double rho, double eps, int order, int limit_p = max_order,
                 std::int64_t limit_terms = max_terms);
// Box offsets o (d per offset) with Σ ((|o_k| − 1)₊ s_k)² < R², or empty when there are more
// than `limit` candidates (then every box is tested instead).
std::vector<std::int64_t> neighbour_offsets(const FgtGrid &g, int d, std::int64_t limit);
FgtGrid choose_fgt(const Extent &e, double eps, int order, int limit_p = max_order,
                   std::int64_t limit_terms = max_terms); // the cheapest ρ by the model

struct IfgtChoice {
  std::int64_t clusters = 1;
  int p = 0;
  std::int64_t terms = 0;
  double rx = 0, bound = 0, cutoff = 0, cost = 0;
};
// p for clusters of radius rx (0 when none up to max_order meets eps within max_terms).
int ifgt_order(double rx, double eps, int d, int order);
IfgtChoice choose_ifgt(const Extent &e, double eps, int order);

double direct_cost(const Extent &e);

} // namespace ksum::fgt
