#pragma once
// Brent's minimisation of a function of one variable on [a, b]: golden-section steps, replaced by
// parabolic interpolation through the three best points when that step is acceptable (Brent 1973,
// "Algorithms for minimization without derivatives", ch. 5). Used for seed 001's LOOCV over log ε.
#include "kernels/hd.hpp"

#include <cmath>
#include <limits>

namespace ksum::linalg {

struct BrentResult {
  double x, fx;
  int evaluations;
};

// Host and device (the GPU PUM fit runs it in every thread of a block on block-wide values).
template <class F> KSUM_HD BrentResult brent_minimize(F &&f, double a, double b, double tol, int max_iter) {
  const double golden = 0.3819660112501051; // (3 − sqrt 5) / 2
  const double eps = 1.4901161193847656e-08; // sqrt(DBL_EPSILON) = 2^-26
  double x = a + golden * (b - a), w = x, v = x;
  double fx = f(x), fw = fx, fv = fx;
  double d = 0, e = 0;
  int evals = 1;
  for (int it = 0; it < max_iter; ++it) {
    const double m = 0.5 * (a + b), t1 = eps * fabs(x) + tol / 3, t2 = 2 * t1;
    if (fabs(x - m) <= t2 - 0.5 * (b - a))
      break;
    bool golden_step = true;
    if (fabs(e) > t1) {
      // Parabola through (v, fv), (w, fw), (x, fx): its vertex is x + p / q.
      double r = (x - w) * (fx - fv), q = (x - v) * (fx - fw), p = (x - v) * q - (x - w) * r;
      q = 2 * (q - r);
      if (q > 0)
        p = -p;
      else
        q = -q;
      if (fabs(p) < fabs(0.5 * q * e) && p > q * (a - x) && p < q * (b - x)) {
        e = d;
        d = p / q;
        const double u = x + d;
        if (u - a < t2 || b - u < t2)
          d = x < m ? t1 : -t1;
        golden_step = false;
      }
    }
    if (golden_step) {
      e = (x < m ? b : a) - x;
      d = golden * e;
    }
    const double u = x + (fabs(d) >= t1 ? d : (d > 0 ? t1 : -t1));
    const double fu = f(u);
    ++evals;
    if (fu <= fx) {
      (u < x ? b : a) = x;
      v = w, fv = fw, w = x, fw = fx, x = u, fx = fu;
    } else {
      (u < x ? a : b) = u;
      if (fu <= fw || w == x) {
        v = w, fv = fw, w = u, fw = fu;
      } else if (fu <= fv || v == x || v == w) {
        v = u, fv = fu;
      }
    }
  }
  return {x, fx, evals};
}

} // namespace ksum::linalg
