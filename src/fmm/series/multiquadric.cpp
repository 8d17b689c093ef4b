// The multiquadric far-field series (multiquadric.hpp): the G_l recursion on polynomial
// coefficients (setup) and its evaluation (eval).
#include "fmm/series/multiquadric.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <array>
#include <string>

namespace ksum::fmm {
namespace {

// dst(degree m + 1) += s · (t · x) · src(degree m)
void add_times_linear(const double *src, int m, const double t[3], double s, double *dst) {
  for (int a = 0; a <= m; ++a)
    for (int c = 0; c <= m - a; ++c) {
      const double v = s * src[mq_index(m, a, c) - mq_offset(m)];
      dst[mq_index(m + 1, a + 1, c) - mq_offset(m + 1)] += t[0] * v;
      dst[mq_index(m + 1, a, c) - mq_offset(m + 1)] += t[1] * v;
      dst[mq_index(m + 1, a, c + 1) - mq_offset(m + 1)] += t[2] * v;
    }
}

// dst(degree m + 2) += s · |x|² · src(degree m)
void add_times_r2(const double *src, int m, double s, double *dst) {
  for (int a = 0; a <= m; ++a)
    for (int c = 0; c <= m - a; ++c) {
      const double v = s * src[mq_index(m, a, c) - mq_offset(m)];
      dst[mq_index(m + 2, a + 2, c) - mq_offset(m + 2)] += v;
      dst[mq_index(m + 2, a, c) - mq_offset(m + 2)] += v;
      dst[mq_index(m + 2, a, c + 2) - mq_offset(m + 2)] += v;
    }
}

} // namespace

MqExpansion::MqExpansion(int terms_, double c_) : terms(terms_), c(c_) {
  if (terms < 0 || terms > mq_max_terms)
    throw Error(ErrorCode::invalid_argument,
                "multiquadric series: terms out of [0, " + std::to_string(mq_max_terms) + "]");
  coef.assign(static_cast<std::size_t>(mq_offset(terms)), 0.0);
}

void MqExpansion::add(const double t[3], double w) {
  if (terms <= 0)
    return;
  // G_l of this source; one scratch buffer per thread, not an allocation per source.
  thread_local std::vector<double> g;
  g.assign(coef.size(), 0.0);
  g[0] = 1;
  if (terms > 1) {
    const double minus_t[3] = {-t[0], -t[1], -t[2]};
    add_times_linear(g.data(), 0, minus_t, 1.0, g.data() + mq_offset(1));
  }
  const double alpha = t[0] * t[0] + t[1] * t[1] + t[2] * t[2] + c * c;
  for (int l = 2; l < terms; ++l) {
    double *gl = g.data() + mq_offset(l);
    add_times_linear(g.data() + mq_offset(l - 1), l - 1, t, (2.0 * l - 3) / l, gl);
    if (l != 3) // B_3 = 0
      add_times_r2(g.data() + mq_offset(l - 2), l - 2, (3.0 - l) / l * alpha, gl);
  }
  for (std::size_t k = 0; k < coef.size(); ++k)
    coef[k] += w * g[k];
}

double MqExpansion::evaluate(const double x[3], int use) const {
  use = std::min(use, terms);
  if (use <= 0)
    return 0;
  // terms ≤ mq_max_terms: the powers stay on the stack (this runs once per target and box).
  std::array<double, mq_max_terms> px, py, pz;
  px[0] = py[0] = pz[0] = 1;
  for (std::size_t k = 1; k < static_cast<std::size_t>(use); ++k) {
    px[k] = px[k - 1] * x[0];
    py[k] = py[k - 1] * x[1];
    pz[k] = pz[k - 1] * x[2];
  }
  const double r2 = x[0] * x[0] + x[1] * x[1] + x[2] * x[2];
  double scale = std::sqrt(r2); // 1 / |x|^{2l − 1} at l = 0
  double u = 0;
  const double *cf = coef.data(); // degree l, then a = l, l − 1, …, 0, then c: consecutive
  for (int l = 0; l < use; ++l) {
    double s = 0;
    for (int m = 0; m <= l; ++m) { // a = l − m
      double sm = 0;
      for (int c = 0; c <= m; ++c)
        sm += *cf++ * py[static_cast<std::size_t>(m - c)] * pz[static_cast<std::size_t>(c)];
      s += px[static_cast<std::size_t>(l - m)] * sm;
    }
    u += s * scale;
    scale /= r2;
  }
  return u;
}

int mq_terms_for(double bound, double rho, double dist, int max_terms) {
  if (!(dist > rho))
    return -1;
  for (int terms = 2; terms <= max_terms; ++terms)
    if (mq_truncation_bound(terms, rho, dist) <= bound)
      return terms;
  return -1;
}

} // namespace ksum::fmm
