#pragma once
// The fast Gauss transform of Greengard & Strain on uniform boxes (seed 002 §2.2): the boxes, the
// interacting pairs with their route (direct, Hermite, Taylor, Hermite→Taylor) chosen by work
// estimates, and their execution on the CPU's threads. Coordinates are scaled: z = x / h.
#include "fgt/fgt_params.hpp"

#include <ksum/table.hpp>

#include <cstdint>
#include <limits>
#include <functional>
#include <vector>

namespace ksum::fgt {

// Points sorted by box. pts is point-major (pts[i·d + k]) in box order; order[i] is the input row
// of sorted point i; box b holds the sorted points begin[b] … begin[b+1] − 1.
struct BoxSet {
  std::vector<std::int64_t> key;             // mixed-radix box index, ascending
  std::vector<std::int64_t> begin;           // boxes + 1
  detail::uninit_vector<std::int64_t> order; // sorted position → input row
  detail::uninit_vector<double> pts;         // sorted scaled coordinates (uninitialised on
                                             // allocation: the parallel fill touches it first)
  std::vector<double> center;                // d per box
  std::int64_t boxes() const { return std::int64_t(key.size()); }
  std::int64_t size(std::int64_t b) const { return begin[b + 1] - begin[b]; }
};

struct FgtPlan {
  int d = 0, p = 0;
  std::int64_t terms = 0; // p^d
  FgtGrid grid;
  std::vector<double> lo; // grid origin
  bool self = false;      // targets are the sources (tgt is unused)
  BoxSet src, tgt;
  // Interacting pairs by target box (CSR): source box and route.
  std::vector<std::int64_t> pair_begin;
  std::vector<std::int64_t> pair_src;
  std::vector<Route> pair_route;
  std::vector<std::uint8_t> hermite_box; // per source box: its Hermite expansion is used
  std::vector<std::uint8_t> taylor_box;  // per target box: its Taylor expansion is used
  std::int64_t pairs[4] = {0, 0, 0, 0};  // by route
  double cost = 0;                       // of the routes chosen (flop units)
  // build_fgt stopped after sorting the points into boxes: its estimate of the cost (in `cost`)
  // passed cost_limit, so no pairs were listed.
  bool stopped = false;

  const BoxSet &targets() const { return self ? src : tgt; }
};

// Points are scaled, point-major; tgt == nullptr: targets are the sources. Where an estimate of
// the cost from the occupied boxes (made after sorting the points into boxes, before listing the
// pairs, which is most of the set-up for a long cutoff on small boxes) exceeds twice cost_limit,
// it stops there (FgtPlan::stopped). The estimate (occupied boxes spread evenly, their mean
// occupancy in the route costs) measured 1.0 … 1.6 times the listed plan's cost on uniform and
// clustered points, so it stops only where the listed plan would cost more than the limit.
FgtPlan build_fgt(const double *src, std::int64_t n, const double *tgt, std::int64_t m, int d,
                  const Extent &extent, FgtGrid grid, int threads,
                  double cost_limit = std::numeric_limits<double>::infinity());

// out[i] (input target order) = Σ_j q_j e^{−|z_i − z_j|²} by the plan's routes. chunk: target
// boxes per task of the evaluation loop (OpenMP schedule(dynamic, chunk)); *loop_seconds (if
// given): that loop's time. hermite_chunk: source boxes per task of the loop that forms the
// Hermite expansions; *hermite_seconds (if given): its time.
void execute_fgt(const FgtPlan &plan, const double *q, double *out, int threads,
                 const std::function<void(double)> &progress, std::int64_t chunk = 1,
                 double *loop_seconds = nullptr, std::int64_t hermite_chunk = 4,
                 double *hermite_seconds = nullptr);

} // namespace ksum::fgt
