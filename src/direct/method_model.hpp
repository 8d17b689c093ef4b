#pragma once
// The cost model behind Method::automatic: on first use per (kernel, tolerance, backend,
// precision, dimension) it times a small direct sum and a small FMM on this machine (a fraction of
// a second), then predicts both for the real sizes: direct ∝ N·M pairs, FMM ∝ N + M points. For
// the gaussian kernel it also times a small fast Gauss transform and scales its cost model.
#include <ksum/direct.hpp>

#include <concepts>
#include <cstdint>

namespace ksum::detail {

// Method::automatic for every kernel: the direct sum, the 3D FMM (dimension 3) and, for the
// gaussian kernel, the fast Gauss transform, each predicted in seconds from rates timed on this
// machine, the fastest chosen (no gradient: the fast methods compute values only). The direct
// sum's rate is timed first; the fast methods only where it predicts kTimeFastMethodsAbove or more.
// Each rate is timed once per machine: kept in methods.json beside the task-size cache (see
// tasksize::default_cache_path; KSUM_METHOD_CACHE=off neither reads nor writes it). The FGT's rate
// comes from a timed FGT on points spread like these (their bounding box shrunk to hold ≤ 2·10⁵
// points on the GPU, 2·10⁴ on the CPU, at the same density) at the same bandwidth and tolerance.
// Where the direct sum is predicted shorter than this (seconds), the FMM and the FGT are not timed.
inline constexpr double kTimeFastMethodsAbove = 0.25;

struct AutoChoice {
  Method method = Method::direct;
  bool timed = false;  // false: too few pairs to be worth timing (the direct sum)
  bool cached = false; // some rate came from the cache file (timed by an earlier process)
  // Predicted seconds (infinity: not a candidate).
  double direct_seconds = 0, fmm_seconds = 0, fgt_seconds = 0;
  // For GaussOptions: the measured seconds per unit of the Gauss transform's cost model.
  double seconds_per_direct_unit = 0, seconds_per_fgt_unit = 0;
};
// backend: the direct sum's (resolved: cpu or cuda).
template <std::floating_point T>
AutoChoice choose_method(const DirectOptions &options, Backend backend, const Table<T> &sources,
                         const Table<T> *targets);

} // namespace ksum::detail
