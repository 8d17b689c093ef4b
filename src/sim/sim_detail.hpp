#pragma once
// Pieces the three simulations share: option checks and the rasterisation of particles for the
// pictures.
#include <ksum/simulate.hpp>

#include <string_view>

namespace ksum::sim::detail {

// Error(invalid_argument) "simulate <scenario>: <name> = <value> <why>" unless ok.
void require(bool ok, std::string_view scenario, std::string_view name, double value,
             std::string_view why);

// The field Σ_j w_j exp(−|x − z_j|²/ρ²)/(πρ²) at the centres of the nx × ny cells of side `cell`
// whose lower left corner is `lo`, ρ = max(width, ¾ cell): with width = δ, the vorticity of
// Gaussian vortex blobs (or the smoothed density of masses).
Picture splat(std::span<const Complex> z, std::span<const double> w, Complex lo, double cell,
              std::int64_t nx, std::int64_t ny, double width);

// Cells across a box of `width` × `height`: side `cell`, enlarged so neither count exceeds
// max_cells; returns the side and sets nx, ny.
double grid_for(double width, double height, double cell, std::int64_t max_cells, std::int64_t &nx,
                std::int64_t &ny);

// A signed field for a diverging picture: values clamped to ±(99th percentile of |v|) and
// divided by it, so that zero sits in the middle of the colour scale when both signs appear.
void normalise_signed(Picture &p);

// The Gaussian core as a correction of a plain sum u (core_correction.cpp): subtracts
// q_j·exp(−r²/δ²)/(z_i − y_j) over the pairs with 0 < r < core_cutoff(δ, tol), leaving
// u_i = Σ_j q_j (1 − exp(−r²/δ²))/(z_i − y_j) to tol/10 of each pair term.
double core_cutoff(double core, double tolerance);
void subtract_core(std::span<const Complex> src, std::span<const Complex> q,
                   std::span<const Complex> tgt, double core, double tolerance, int threads,
                   std::span<Complex> u);

} // namespace ksum::sim::detail
