#pragma once
// The improved fast Gauss transform (Yang, Duraiswami, Gumerov; Raykar's error bounds) for higher
// dimensions, in scaled coordinates z = x / h. With a = z_x − c and b = z_y − c about a cluster
// centre c,
//   e^{−|z_y − z_x|²} = e^{−|a|²} e^{−|b|²} e^{2 a·b},  e^{2 a·b} = Σ_α (2^{|α|}/α!) a^α b^α,
// truncated below total degree p (graded: C(p − 1 + d, d) terms instead of p^d). Per cluster
//   C_α = (2^{|α|}/α!) Σ_j q_j e^{−|a_j|²} a_j^α,    G(y) = Σ_clusters e^{−|b|²} Σ_α C_α b^α,
// over the clusters whose centre is within r_c + R of y (R the cutoff). The clusters come from
// Gonzalez's farthest-point clustering (a 2-approximation of the smallest largest radius).
#include "fgt/fgt_params.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace ksum::fgt {

struct IfgtPlan {
  int d = 0, p = 0;
  std::int64_t terms = 0, k = 0;
  double cutoff = 0, rx = 0, bound = 0;
  std::vector<double> centers; // k × d
  std::vector<double> radius;  // per cluster
  // Sources sorted by cluster: order[i] is the input row of sorted source i.
  std::vector<std::int64_t> begin, order;
  std::vector<double> pts; // sorted sources, point-major
  // Graded monomials: b^α = b^{parent[α]} · b_{axis[α]}; constant[α] = 2^{|α|}/α!.
  std::vector<std::int32_t> parent, axis;
  std::vector<double> constant;
};

// Points scaled and point-major. clusters and order come from choose_ifgt (order 0: from eps).
IfgtPlan build_ifgt(const double *src, std::int64_t n, int d, std::int64_t clusters, double eps,
                    int order, int threads);

void execute_ifgt(const IfgtPlan &plan, const double *q, const double *tgt, std::int64_t m,
                  double *out, int threads, const std::function<void(double)> &progress);

} // namespace ksum::fgt
