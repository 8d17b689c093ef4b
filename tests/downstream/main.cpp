// A user's program built against the installed ksum package: the README's first example.
#include <ksum/ksum.hpp>

#include <cmath>
#include <cstdio>

int main() {
  ksum::Table<double> pts(3, 2), w(3, 1, 1.0);
  pts(1, 0) = 1.0; // points (0,0), (1,0), (0,1)
  pts(2, 1) = 1.0;
  ksum::DirectSum<double> plan({.kernel = ksum::Kernel::gaussian, .backend = ksum::Backend::cpu});
  plan.set_points(pts);
  const auto u = plan.execute(w);
  const double want = std::exp(-1.0) + std::exp(-1.0); // point 0 sees the other two at r = 1
  std::printf("u(0) = %.15f, expected %.15f\n", u(0, 0), want);
  return std::abs(u(0, 0) - want) < 1e-14 ? 0 : 1;
}
