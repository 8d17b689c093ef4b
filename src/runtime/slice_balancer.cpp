// Seed 003 §5.2, figure 11: see slice_balancer.hpp.
#include "runtime/slice_balancer.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numeric>

namespace ksum::runtime {

SliceBalancer::SliceBalancer(std::int64_t slices, int workers, int iterations)
    : slices_(slices), iterations_(iterations),
      best_time_(std::numeric_limits<double>::infinity()) {
  if (slices < 0)
    throw Error(ErrorCode::invalid_argument, fmt::format("slices = {}: must be >= 0", slices));
  if (workers < 1)
    throw Error(ErrorCode::invalid_argument, fmt::format("workers = {}: must be >= 1", workers));
  if (iterations < 1)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("iterations = {}: must be >= 1", iterations));
  counts_.assign(static_cast<std::size_t>(workers), slices / workers);
  for (std::int64_t w = 0; w < slices % workers; ++w)
    ++counts_[static_cast<std::size_t>(w)];
  best_ = counts_;
}

std::vector<std::int64_t> SliceBalancer::bounds() const {
  std::vector<std::int64_t> b(counts_.size() + 1, 0);
  std::partial_sum(counts_.begin(), counts_.end(), b.begin() + 1);
  return b;
}

std::vector<std::int64_t> SliceBalancer::rebalance(std::span<const std::int64_t> counts,
                                                   std::span<const double> times) {
  const std::size_t w = counts.size();
  if (times.size() != w)
    throw Error(ErrorCode::shape_mismatch, fmt::format("{} times for {} workers", times.size(), w));
  double sum_t = 0, sum_busy_t = 0;
  std::int64_t total = 0, busy = 0;
  for (std::size_t i = 0; i < w; ++i) {
    if (!std::isfinite(times[i]) || times[i] < 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("worker {}: time {} (expected a finite time >= 0)", i, times[i]));
    sum_t += times[i];
    total += counts[i];
    if (counts[i] > 0) {
      sum_busy_t += times[i];
      busy += counts[i];
    }
  }
  if (total == 0 || busy == 0 || sum_busy_t <= 0)
    return {counts.begin(), counts.end()};
  const double ta = sum_t / static_cast<double>(w);
  // Cost per slice; an idle worker has not been measured: the mean cost stands in for it.
  const double mean_cost = sum_busy_t / static_cast<double>(busy);
  std::vector<double> s(w), give(w, 0.0);
  double removed = 0, wanted = 0;
  for (std::size_t i = 0; i < w; ++i) {
    const double c = counts[i] > 0 && times[i] > 0 ? times[i] / counts[i] : mean_cost;
    s[i] = static_cast<double>(counts[i]);
    if (times[i] > ta) {
      const double r = std::min(s[i], (times[i] - ta) / c);
      s[i] -= r;
      removed += r;
    } else {
      give[i] = (ta - times[i]) / c;
      wanted += give[i];
    }
  }
  if (wanted > 0)
    for (std::size_t i = 0; i < w; ++i)
      s[i] += give[i] * removed / wanted;
  // Whole slices, the total kept: floors, then the largest remainders get one more.
  std::vector<std::int64_t> out(w);
  std::vector<std::size_t> order(w);
  std::int64_t assigned = 0;
  for (std::size_t i = 0; i < w; ++i) {
    out[i] = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::floor(s[i])));
    assigned += out[i];
    order[i] = i;
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return s[a] - std::floor(s[a]) > s[b] - std::floor(s[b]);
  });
  for (std::size_t k = 0; assigned < total; k = (k + 1) % w, ++assigned)
    ++out[order[k]];
  for (std::size_t k = w; assigned > total; --assigned) { // floors cannot exceed, but be safe
    k = (k + w - 1) % w;
    while (out[order[k]] == 0)
      k = (k + w - 1) % w;
    --out[order[k]];
  }
  return out;
}

void SliceBalancer::report(std::span<const double> times) {
  if (times.size() != counts_.size())
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("{} times for {} workers", times.size(), counts_.size()));
  const double worst = *std::max_element(times.begin(), times.end());
  ++reports_;
  if (worst < best_time_) {
    best_time_ = worst;
    best_ = counts_;
  }
  if (frozen_)
    return;
  if (reports_ >= iterations_) {
    frozen_ = true;
    counts_ = best_; // the seed's rollback to the best configuration measured
    return;
  }
  counts_ = rebalance(counts_, times);
}

} // namespace ksum::runtime
