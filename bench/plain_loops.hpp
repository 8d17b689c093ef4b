#pragma once
// The baseline of the CPU benchmark: the obvious loop a user would write, #pragma omp simd over the
// sources with the libm formula of each kernel in double precision, OpenMP over the targets.
// Compiled with the same flags as ksum in the same program.
#include <ksum/kernels.hpp>

#include <cmath>
#include <cstdint>

namespace ksum::bench {

template <class Phi>
void plain_loop(const double *x, const double *y, const double *z, const double *w, std::int64_t n,
                double *out, Phi phi, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    // Loop-invariant values in locals: without this GCC 12 does not vectorise the inner loop, and
    // the baseline would be a scalar loop rather than the vector loop a careful user writes.
    const double *xs = x, *ys = y, *zs = z, *ws = w;
    const double xi = xs[i], yi = ys[i], zi = zs[i];
    double acc = 0;
#pragma omp simd reduction(+ : acc)
    for (std::int64_t j = 0; j < n; ++j) {
      const double dx = xi - xs[j], dy = yi - ys[j], dz = zi - zs[j];
      const double r = std::sqrt(dx * dx + dy * dy + dz * dz);
      acc += (j != i) ? ws[j] * phi(r) : 0.0;
    }
    out[i] = acc;
  }
}

inline void plain_sum(Kernel k, double e, const double *x, const double *y, const double *z,
                      const double *w, std::int64_t n, double *out, int threads) {
  auto run = [&](auto phi) { plain_loop(x, y, z, w, n, out, phi, threads); };
  switch (k) {
  case Kernel::gaussian:
    run([e](double r) { return std::exp(-e * e * r * r); });
    break;
  case Kernel::multiquadric:
    run([e](double r) { return std::sqrt(1 + e * e * r * r); });
    break;
  case Kernel::inverse_multiquadric:
    run([e](double r) { return 1 / std::sqrt(1 + e * e * r * r); });
    break;
  case Kernel::inverse_quadratic:
    run([e](double r) { return 1 / (1 + e * e * r * r); });
    break;
  case Kernel::matern0:
    run([e](double r) { return std::exp(-e * r); });
    break;
  case Kernel::matern2:
    run([e](double r) { return std::exp(-e * r) * (e * r + 1); });
    break;
  case Kernel::matern4:
    run([e](double r) { return std::exp(-e * r) * (e * e * r * r + 3 * e * r + 3); });
    break;
  case Kernel::matern6:
    run([e](double r) {
      const double s = e * r;
      return std::exp(-s) * (((s + 6) * s + 15) * s + 15);
    });
    break;
  case Kernel::wendland2:
    run([e](double r) {
      const double t = std::max(1 - e * r, 0.0);
      return t * t * t * t * (4 * e * r + 1);
    });
    break;
  case Kernel::wendland4:
    run([e](double r) {
      const double s = e * r, t = std::max(1 - s, 0.0), t2 = t * t;
      return t2 * t2 * t2 * (35 * s * s + 18 * s + 3);
    });
    break;
  case Kernel::wendland6:
    run([e](double r) {
      const double s = e * r, t = std::max(1 - s, 0.0), t4 = t * t * t * t;
      return t4 * t4 * (((32 * s + 25) * s + 8) * s + 1);
    });
    break;
  case Kernel::tps:
    run([e](double r) { return r > 0 ? e * e * r * r * std::log(e * r) : 0.0; });
    break;
  case Kernel::cubic:
    run([e](double r) { return e * e * e * r * r * r; });
    break;
  case Kernel::linear:
    run([e](double r) { return e * r; });
    break;
  case Kernel::quintic:
    run([e](double r) { return std::pow(e * r, 5); });
    break;
  case Kernel::laplace:
    run([e](double r) { return r > 0 ? 1 / (e * r) : 0.0; });
    break;
  case Kernel::log:
    run([e](double r) { return r > 0 ? -std::log(e * r) : 0.0; });
    break;
  }
}

} // namespace ksum::bench
