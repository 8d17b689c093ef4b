#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
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

// e^x for x ≤ 0 (below −700 it returns e^−700 ≈ 1e−304), to a few units in the last place:
// e^x = 2^k e^r with k = round(x / ln 2), |r| ≤ ln 2 / 2 and e^r by its Taylor series to r^12
// (the next term is below 2e−16). Plain arithmetic, so a loop over pairs vectorises it.
inline double exp_nonpositive(double x) {
  x = !(x >= -700.0) ? -700.0 : x; // NaN too (masked-off lanes may compute one)
  const double k = std::nearbyint(x * 1.4426950408889634); // 1 / ln 2
  // r = x − k ln 2 with ln 2 in two parts, the first exact in k's few bits.
  const double r = (x - k * 0.693147180369123816490) - k * 1.90821492927058770002e-10;
  double p = 1.0 / 479001600.0; // 1/12!
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const auto bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(k) + 1023) << 52;
  return p * std::bit_cast<double>(bits);
}
void subtract_core(std::span<const Complex> src, std::span<const Complex> q,
                   std::span<const Complex> tgt, double core, double tolerance, int threads,
                   std::span<Complex> u);

} // namespace ksum::sim::detail
