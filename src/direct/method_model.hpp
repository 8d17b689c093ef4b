#pragma once
// The cost model behind Method::automatic: on first use per (kernel, tolerance, backend,
// precision) it times a small direct sum and a small FMM on this machine (a fraction of a second),
// then predicts both for the real sizes: direct ∝ N·M pairs, FMM ∝ N + M points.
#include <ksum/direct.hpp>

#include <cstdint>

namespace ksum::detail {

bool fmm_predicted_faster(const DirectOptions &options, Backend backend, bool single_precision,
                          std::int64_t n, std::int64_t m);

} // namespace ksum::detail
