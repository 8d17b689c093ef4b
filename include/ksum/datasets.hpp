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

// Halton points on the unit sphere S² ⊂ R³: 2D Halton (u, v) mapped by the area-preserving
// z = 2u − 1, φ = 2πv (seed 001 §5.2).
Table<double> halton_sphere(std::int64_t n, std::int64_t skip = 1);

// n nearly uniform "spiral points" on S² (Rakhmanov, Saff & Zhou), from the south to the north
// pole: z_k = −1 + 2(k − 1)/(n − 1), φ_k = φ_{k−1} + 3.6 / sqrt(n (1 − z_k²)) (seed 001 §5.2).
Table<double> spiral_sphere(std::int64_t n);

// Random 3D point sets of the FMM tests and benchmarks (Mersenne Twister with the given seed):
// uniform in the unit cube [0, 1]³; the Plummer sphere (density ∝ (1 + r²)^{−5/2}, unit scale
// radius: strongly clustered, deep trees); uniform on the unit sphere's surface (a 2D manifold).
Table<double> uniform_cube(std::int64_t n, std::uint64_t seed = 1);
Table<double> plummer(std::int64_t n, std::uint64_t seed = 1);
Table<double> sphere_shell(std::int64_t n, std::uint64_t seed = 1);

// Franke's 2D and 3D test functions f2, f3 and the s-variate g_s(x) = 4^s Π x_k (1 − x_k)
// (seed 001 §5).
double franke(double x, double y);
double franke3(double x, double y, double z);
double g_s(const double *x, std::int64_t s);

} // namespace ksum::datasets
