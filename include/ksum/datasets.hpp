#pragma once
// Built-in point sets and test functions of the seeds (used by `ksum demo`, the tests and the
// reproduction benchmarks).
#include <ksum/table.hpp>

#include <cstdint>

namespace ksum::datasets {

// The first n points of the s-dimensional Halton sequence in [0, 1]^s (bases: the first s primes),
// starting after `skip` points (skip = 1 drops the origin). s <= 32.
Table<double> halton(std::int64_t n, std::int64_t s, std::int64_t skip = 1);

// A regular grid of n_1 × … × n_s points over the box [lo_k, hi_k] (the first axis varies fastest).
Table<double> grid(const std::int64_t *counts, const double *lo, const double *hi, std::int64_t s);

// Franke's 2D test function (seed 001 §5).
double franke(double x, double y);

} // namespace ksum::datasets
