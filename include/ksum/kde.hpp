#pragma once
// Kernel density estimation with the Gaussian kernel, evaluated by the Gauss transform (fgt.hpp):
//
//   f(y) = 1 / (n Π_k √(2π) σ_k) · Σ_i exp(−Σ_k (y_k − x_ik)² / (2 σ_k²))
//
// Bandwidth convention: σ_k is the kernel's standard deviation along axis k (a diagonal
// bandwidth matrix diag(σ_k²)). SciPy's gaussian_kde uses the full weighted covariance of the data
// scaled by the same Scott/Silverman factor; we use its diagonal, so the two agree exactly when the
// columns are uncorrelated, and otherwise ours is the product kernel with the same marginal widths.
// The Gauss transform is called on coordinates scaled by 1/σ_k with h = √2 (its kernel is
// exp(−r²/h²), so h = √2 σ in unscaled terms).
//
// Error guarantee: every density value is within tolerance · 1/Π_k(√(2π) σ_k) of the exact sum,
// i.e. tolerance times the peak height of one normalised kernel (the Gauss transform's bound
// tolerance · Σ|q| with Σ|q| = n, divided by n Π_k √(2π) σ_k).
#include <ksum/direct.hpp>
#include <ksum/fgt.hpp>
#include <ksum/table.hpp>

#include <concepts>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

namespace ksum {

enum class BandwidthRule { fixed, scott, silverman };
std::string_view to_string(BandwidthRule r);

// The bandwidth: a rule, or (fixed) one kernel standard deviation σ for every dimension.
struct Bandwidth {
  BandwidthRule rule = BandwidthRule::scott;
  double sigma = 0; // fixed only: σ > 0, finite
};

// "scott", "silverman", or a positive finite number (fixed σ). Anything else is
// Error(invalid_argument) naming the text.
Bandwidth parse_bandwidth(std::string_view text);

struct KdeOptions {
  Bandwidth bandwidth{};
  // Absolute error of every density value relative to the peak of one normalised kernel,
  // 1/Π_k(√(2π) σ_k): the Gauss transform's tolerance (its limits apply: 1e-12 … 0.5 in double,
  // 1e-6 … 0.5 in float).
  double tolerance = 1e-6;
  GaussMethod method = GaussMethod::automatic;
  Backend backend = Backend::automatic;
  int threads = 0; // CPU threads; 0: OpenMP's default
  int device = 0;  // the GPU to use
  // Called now and then with the fraction done (forwarded to the Gauss transform).
  std::function<void(double)> progress{};
};

// What kernel_density() used and did.
struct KdeInfo {
  std::vector<double> sigma; // σ_k per dimension
  double effective_n = 0;    // (Σ w)² / Σ w²: n without weights
  double peak = 0;           // 1/Π_k(√(2π) σ_k): the height of one normalised kernel
  double error_bound = 0;    // tolerance · peak: the guaranteed absolute error of every value
  GaussStats stats{};        // the Gauss transform's (default when there are no evaluation points)
  double seconds = 0;        // the whole call
};

// Per-dimension kernel standard deviations for `data` (n rows, d columns):
//   scott:     σ_k = n_eff^{−1/(d+4)} s_k
//   silverman: σ_k = (n_eff (d+2)/4)^{−1/(d+4)} s_k
//   fixed:     σ_k = σ
// where s_k is the sample standard deviation of column k (ddof = 1) and n_eff = n. With weights
// (one column, one non-negative value per row) s_k is the weighted standard deviation
// √(Σ w_i (x_ik − μ_k)² / (1 − Σ w_i²)) of the weights normalised to sum 1 and n_eff = 1/Σ w_i², as
// in SciPy's gaussian_kde. Errors: no data (empty_input), fewer than 2 points for a rule, a column
// with zero spread (naming it), a bad fixed σ (invalid_argument), bad weights (see below).
template <std::floating_point T>
std::vector<double> kde_bandwidth(const Table<T> &data, const Bandwidth &bandwidth,
                                  const Table<T> *weights = nullptr);

// The density at each row of `eval` (d columns, like `data`): one column, named "density".
// Errors: non-finite input (non_finite, naming the array, row and column), `eval` with another
// column count (shape_mismatch), and those of kde_bandwidth and the Gauss transform.
template <std::floating_point T>
Table<T> kernel_density(const Table<T> &data, const Table<T> &eval, const KdeOptions &options,
                        KdeInfo *info = nullptr);

// Weighted: `weights` is one column with a non-negative finite value per data point, not all
// zero; they are normalised to sum 1. A negative weight is Error(invalid_argument) naming its row.
template <std::floating_point T>
Table<T> kernel_density(const Table<T> &data, const Table<T> &weights, const Table<T> &eval,
                        const KdeOptions &options, KdeInfo *info = nullptr);

// A box for an evaluation grid.
struct KdeRange {
  std::vector<double> lo, hi;
};

// The data's bounding box padded by `padding` · σ_k on each side along axis k: with the default 3
// the grid holds all but a fraction of about 1e-3 of the mass of the outermost kernels.
template <std::floating_point T>
KdeRange kde_range(const Table<T> &data, std::span<const double> sigma, double padding = 3.0);

// A regular grid of Π counts[k] points over [lo_k, hi_k] (both ends included; a single point sits
// at the middle), the first coordinate varying fastest: point (i_0, i_1, …) is row
// i_0 + counts[0] (i_1 + counts[1] (…)). Any dimension. Errors (invalid_argument): lengths that
// differ, a count below 1, non-finite bounds or hi_k < lo_k, more than 2^40 points.
template <std::floating_point T>
Table<T> kde_grid(std::span<const double> lo, std::span<const double> hi,
                  std::span<const std::int64_t> counts);

// The volume of one cell of that grid, Π_k (hi_k − lo_k)/(counts[k] − 1) (an axis of one point
// counts as width 1): Σ f · cell volume over the grid approximates ∫ f = 1 when the grid covers
// the data.
double kde_cell_volume(std::span<const double> lo, std::span<const double> hi,
                       std::span<const std::int64_t> counts);

extern template std::vector<double> kde_bandwidth(const Table<float> &, const Bandwidth &,
                                                  const Table<float> *);
extern template std::vector<double> kde_bandwidth(const Table<double> &, const Bandwidth &,
                                                  const Table<double> *);
extern template Table<float> kernel_density(const Table<float> &, const Table<float> &,
                                            const KdeOptions &, KdeInfo *);
extern template Table<double> kernel_density(const Table<double> &, const Table<double> &,
                                             const KdeOptions &, KdeInfo *);
extern template Table<float> kernel_density(const Table<float> &, const Table<float> &,
                                            const Table<float> &, const KdeOptions &, KdeInfo *);
extern template Table<double> kernel_density(const Table<double> &, const Table<double> &,
                                             const Table<double> &, const KdeOptions &, KdeInfo *);
extern template KdeRange kde_range(const Table<float> &, std::span<const double>, double);
extern template KdeRange kde_range(const Table<double> &, std::span<const double>, double);
extern template Table<float> kde_grid(std::span<const double>, std::span<const double>,
                                      std::span<const std::int64_t>);
extern template Table<double> kde_grid(std::span<const double>, std::span<const double>,
                                       std::span<const std::int64_t>);

} // namespace ksum
