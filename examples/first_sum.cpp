// The README's first program: Coulomb potentials of charges read from two files.
#include <cstdio>
#include <ksum/ksum.hpp>

int main() {
  auto pts = ksum::io::read_table("points.csv"); // N rows, d columns
  auto q = ksum::io::read_table("charges.csv");  // N rows, one column per right-hand side
  ksum::DirectSum<double> plan({.kernel = ksum::Kernel::laplace}); // backend auto: GPU if present
  plan.set_points(pts);     // targets = sources, self term left out
  auto u = plan.execute(q); // u(i, r) = Σ_{j≠i} q(j, r) / |x_i − x_j|
  std::printf("u[0] = %g on %s\n", u(0, 0), ksum::to_string(plan.backend()).data());
}
