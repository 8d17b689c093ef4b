#pragma once
// The far-field series of the multiquadric φ(x − t) = (|x − t|² + c²)^{1/2} about a box centre
// (seed 000 §3.3, Cherrie–Beatson–Newsam), x and t relative to the centre:
//   φ(x − t) = Σ_{l≥0} G_l(x) / |x|^{2l−1},  G_l = P_l(|t|² + c², −2⟨t, x⟩, |x|²)  (Lemma 3.1)
// G_l is a homogeneous polynomial of degree l in x. The P_l are the coefficients of
//   (1 + βs + αγs²)^{1/2} = Σ_l P_l s^l,
// and differentiating that generating function gives
//   (l + 1) P_{l+1} = (1/2 − l) β P_l + (2 − l) αγ P_{l−1},
//   G_0 = 1, G_1 = −⟨t, x⟩, G_l = (2l − 3)/l ⟨t, x⟩ G_{l−1} + (3 − l)/l (|t|² + c²)|x|² G_{l−2}.
// Seed 000 prints Lemma 3.2 without the "− l" and (13) with A_l = −(2l − 3)/l; both disagree with
// the direct expansion at l = 2 (G_2 = ½(|t|² + c²)|x|² − ½⟨t, x⟩²), so the recursion here is the
// one derived above, and the tests check it against the direct sum.
#include <cmath>
#include <cstdint>
#include <vector>

namespace ksum::fmm {

// Monomials x^a y^b z^c of degree l, stored for l = 0, 1, …: degree l starts at offset(l) and
// holds (l + 1)(l + 2)/2 entries, index T(l − a) + c with T(m) = m(m + 1)/2.
constexpr std::int64_t mq_offset(int l) {
  return static_cast<std::int64_t>(l) * (l + 1) * (l + 2) / 6;
}
constexpr std::int64_t mq_index(int l, int a, int c) {
  return mq_offset(l) + static_cast<std::int64_t>(l - a) * (l - a + 1) / 2 + c;
}

constexpr int mq_max_terms = 64;

// A box's expansion: Σ_i w_i G_l^{(i)}(x) for l = 0 … terms − 1, as polynomial coefficients.
struct MqExpansion {
  int terms = 0; // the truncation: l < terms (Lemma 3.1's sum to p + 1 has terms = p + 2)
  double c = 0;  // the multiquadric's shift c = 1/ε
  std::vector<double> coef;
  explicit MqExpansion(int terms_ = 0, double c_ = 0); // 0 ≤ terms ≤ mq_max_terms
  // Adds a source of weight w at t (relative to the centre). O(terms³).
  void add(const double t[3], double w);
  // The series at x (relative to the centre); valid for |x| > sqrt(|t|² + c²) of every source.
  double evaluate(const double x[3]) const { return evaluate(x, terms); }
  // The first `use` ≤ terms terms only.
  double evaluate(const double x[3], int use) const;
};

// Lemma 3.1's bound on |φ(x − t) − Σ_{l<terms}| for one source with sqrt(|t|² + c²) ≤ rho and a
// target at distance dist > rho: 2ρ (ρ/dist)^{terms−1} dist / (dist − ρ).
inline double mq_truncation_bound(int terms, double rho, double dist) {
  return 2 * rho * std::pow(rho / dist, terms - 1) * dist / (dist - rho);
}

// The fewest terms (≥ 2) whose bound is at most `bound`, or −1 when more than max_terms would be
// needed (or dist ≤ rho: the series does not converge there).
int mq_terms_for(double bound, double rho, double dist, int max_terms = mq_max_terms);

} // namespace ksum::fmm
