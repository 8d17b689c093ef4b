// docs/pum.md's example: Franke's function on Halton points, RBF-PUM with LOOCV.
#include <cmath>
#include <cstdio>
#include <ksum/ksum.hpp>

int main() {
  auto x = ksum::datasets::halton(16641, 2); // N × 2 data sites
  ksum::Table<double> f(x.rows(), 1);
  for (std::int64_t i = 0; i < x.rows(); ++i)
    f(i, 0) = ksum::datasets::franke(x(i, 0), x(i, 1));
  ksum::PumInterpolant pum({.kernel = ksum::Kernel::matern4, .loocv = true});
  pum.set_data(x, f);               // index, local fits, LOOCV
  ksum::Table<double> y(1, 2, 0.5); // evaluate at (0.5, 0.5)
  std::printf("s = %.8f, f = %.8f, eps median %.3g\n", pum.evaluate(y)(0, 0),
              ksum::datasets::franke(0.5, 0.5), pum.stats().eps_median);
}
