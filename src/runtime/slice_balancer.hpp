#pragma once
// The dynamic balancing of seed 003 §5.2 (figure 11): W workers of different speeds each own a
// contiguous interval of the S slices; after every iteration the intervals move so that every
// worker's time approaches the average of the last iteration's times.
//
//   t_a = mean t_i,  c_i = t_i / s_i  (cost per slice on worker i, slices assumed equal)
//   slower than t_a:  drop r_i = (t_i − t_a) / c_i slices
//   faster than t_a:  wants o_i = (t_a − t_i) / c_i, and gets o_i · Σr / Σo (so that the
//                     slices dropped and given balance)
//
// Every worker is aimed at the last average time, so with equal work per slice the worst time
// falls each iteration towards the optimum; with uneven work it need not improve, so (as the seed
// does) it runs a fixed number of iterations and then returns to the best assignment it measured.
#include <cstdint>
#include <span>
#include <vector>

namespace ksum::runtime {

class SliceBalancer {
public:
  // slices ≥ 0, workers ≥ 1, iterations ≥ 1: how many reports move the intervals before the best
  // assignment is frozen. The first assignment gives every worker the same number of slices.
  SliceBalancer(std::int64_t slices, int workers, int iterations = 40);

  // Slices per worker, in worker order (worker w owns [bounds()[w], bounds()[w + 1])).
  const std::vector<std::int64_t> &counts() const { return counts_; }
  std::vector<std::int64_t> bounds() const;

  // The measured wall time of every worker for the current assignment (seconds, finite, ≥ 0).
  // Moves to the next assignment, or to the best one once the iterations are spent.
  void report(std::span<const double> times);

  bool frozen() const { return frozen_; }
  int reports() const { return reports_; }
  double best_time() const { return best_time_; } // the smallest max_i t_i reported
  const std::vector<std::int64_t> &best_counts() const { return best_; }

  // One step of the seed's heuristic on its own: new counts from counts and times (total kept).
  static std::vector<std::int64_t> rebalance(std::span<const std::int64_t> counts,
                                             std::span<const double> times);

private:
  std::int64_t slices_;
  int iterations_;
  std::vector<std::int64_t> counts_, best_;
  double best_time_;
  int reports_ = 0;
  bool frozen_ = false;
};

} // namespace ksum::runtime
