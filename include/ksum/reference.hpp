#pragma once
// The fp64 reference direct sum: libm kernel formulas (kernel_value / kernel_derivative), long
// double accumulation, no vectorisation tricks. Slow and independent of the fast paths it checks.
#include <ksum/kernels.hpp>
#include <ksum/table.hpp>

#include <cstdint>
#include <span>

namespace ksum {

// u (and with `gradient` ∇ₓu, same column layout as DirectSum::execute) at the target rows listed
// in `rows`. With `self`, targets are the sources and pair (i, i) is left out.
Table<double> reference_sum(Kernel k, double eps, const Table<double> &sources,
                            const Table<double> &targets, const Table<double> &weights,
                            bool gradient, bool self, std::span<const std::int64_t> rows);

} // namespace ksum
