// The multiquadric far-field series (seed 000 §3.3) against the direct fp64 sum: Lemma 3.1's
// bound holds for every truncation, the error falls with the number of terms, G_2 matches its
// closed form, and the term count chosen for a bound meets it.
#include "fmm/series/multiquadric.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <random>

namespace {

using ksum::fmm::MqExpansion;

TEST(MqSeries, SecondTermMatchesItsClosedForm) {
  // G_2 = ½(|t|² + c²)|x|² − ½⟨t, x⟩² from the binomial series (the seed's (13) flips the sign of
  // the second part).
  const double t[3] = {0.3, -0.2, 0.1}, x[3] = {1.5, 0.7, -2.0}, c = 0.4;
  MqExpansion e(3, c);
  e.add(t, 1.0);
  const double alpha = 0.09 + 0.04 + 0.01 + c * c, tx = 0.45 - 0.14 - 0.2;
  const double r2 = 1.5 * 1.5 + 0.49 + 4.0;
  MqExpansion only2(3, c);
  only2.coef = e.coef;
  for (std::int64_t k = 0; k < ksum::fmm::mq_offset(2); ++k)
    only2.coef[static_cast<std::size_t>(k)] = 0;
  // evaluate() divides G_2 by |x|³.
  EXPECT_NEAR(only2.evaluate(x) * std::pow(r2, 1.5), 0.5 * alpha * r2 - 0.5 * tx * tx, 1e-13);
}

TEST(MqSeries, MeetsLemma31BoundAgainstTheDirectSum) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (const double c : {0.0, 0.05, 0.3}) {
    // 200 sources in the ball of radius 0.5, weights of both signs.
    std::vector<std::array<double, 3>> src;
    std::vector<double> w;
    double rho = 0, wsum = 0;
    while (src.size() < 200) {
      std::array<double, 3> t{0.5 * u(rng), 0.5 * u(rng), 0.5 * u(rng)};
      if (t[0] * t[0] + t[1] * t[1] + t[2] * t[2] > 0.25)
        continue;
      src.push_back(t);
      w.push_back(u(rng));
      wsum += std::abs(w.back());
      rho = std::max(rho, std::sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2] + c * c));
    }
    double previous = 1e300;
    for (const int terms : {2, 4, 8, 12, 16, 20}) {
      MqExpansion e(terms, c);
      for (std::size_t i = 0; i < src.size(); ++i)
        e.add(src[i].data(), w[i]);
      double worst = 0, worst_ratio = 0;
      for (int k = 0; k < 50; ++k) {
        const double dist = 1.5 + 3 * (k % 5); // 1.5 … 13.5 box radii away
        double d[3] = {u(rng), u(rng), u(rng)};
        const double len = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        const double x[3] = {d[0] / len * dist, d[1] / len * dist, d[2] / len * dist};
        long double exact = 0;
        for (std::size_t i = 0; i < src.size(); ++i) {
          long double q = c * c;
          for (int a = 0; a < 3; ++a)
            q += (x[a] - src[i][a]) * (long double)(x[a] - src[i][a]);
          exact += w[i] * std::sqrt(q);
        }
        const double err = std::abs(e.evaluate(x) - static_cast<double>(exact));
        const double bound = wsum * ksum::fmm::mq_truncation_bound(terms, rho, dist);
        EXPECT_LE(err, bound + 1e-12 * wsum * dist) << "c " << c << " terms " << terms;
        if (dist == 1.5)
          worst = std::max(worst, err);
        worst_ratio = std::max(worst_ratio, err / (wsum * dist));
      }
      EXPECT_LT(worst, previous) << "c " << c << " terms " << terms; // converges with terms
      previous = worst;
      if (terms == 20) {
        EXPECT_LT(worst_ratio, 1e-9);
      }
    }
  }
}

TEST(MqSeries, TermCountForABoundMeetsIt) {
  for (const double ratio : {0.2, 0.5, 0.7}) {
    const int terms = ksum::fmm::mq_terms_for(1e-8, ratio, 1.0);
    ASSERT_GT(terms, 1);
    EXPECT_LE(ksum::fmm::mq_truncation_bound(terms, ratio, 1.0), 1e-8);
    EXPECT_GT(ksum::fmm::mq_truncation_bound(terms - 1, ratio, 1.0), 1e-8);
  }
  EXPECT_EQ(ksum::fmm::mq_terms_for(1e-8, 1.0, 1.0), -1);   // no convergence at dist = rho
  EXPECT_EQ(ksum::fmm::mq_terms_for(1e-30, 0.99, 1.0), -1); // more than 64 terms
}

} // namespace
