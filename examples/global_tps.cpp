// A global thin-plate-spline interpolant of Franke's 3D function on 20,000 Halton points, solved
// by GMRES with the L-set preconditioner (docs/global-rbf.md), checked at 1,000 other points.
#include <ksum/ksum.hpp>

#include <cmath>
#include <cstdio>

int main() {
  const auto x = ksum::datasets::halton(20000, 3);
  ksum::Table<double> f(x.rows(), 1);
  for (std::int64_t i = 0; i < x.rows(); ++i)
    f(i, 0) = ksum::datasets::franke3(x(i, 0), x(i, 1), x(i, 2));
  ksum::GlobalRbfInterpolant rbf(
      {.kernel = ksum::Kernel::tps, .solver = ksum::GlobalSolver::krylov, .tolerance = 1e-8});
  rbf.set_data(x, f); // the matvecs run on the GPU when one is present
  const auto y = ksum::datasets::halton(1000, 3, 500000);
  const auto u = rbf.evaluate(y);
  double se = 0;
  for (std::int64_t i = 0; i < y.rows(); ++i)
    se += std::pow(u(i, 0) - ksum::datasets::franke3(y(i, 0), y(i, 1), y(i, 2)), 2);
  std::printf("%d GMRES iterations, residual %.1e, RMSE %.2e\n", rbf.stats().iterations,
              rbf.stats().residual_rel, std::sqrt(se / static_cast<double>(y.rows())));
}
