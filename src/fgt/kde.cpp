// Kernel density estimation on top of the Gauss transform: bandwidth rules, the scaled transform,
// and evaluation grids.
#include <ksum/datasets.hpp>
#include <ksum/error.hpp>
#include <ksum/kde.hpp>

#include "core/validate.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <numbers>
#include <string>

namespace ksum {
namespace {

// "column 2" or "column 2 (height)" when the file had a header.
template <class T> std::string column_name(const Table<T> &t, std::int64_t k) {
  if (static_cast<std::int64_t>(t.names.size()) == t.cols() && !t.names[k].empty())
    return fmt::format("column {} ({})", k, t.names[k]);
  return fmt::format("column {}", k);
}

void check_sigma(double sigma) {
  if (!std::isfinite(sigma) || sigma <= 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("KDE bandwidth σ = {}: the kernel's standard deviation must be "
                            "positive and finite",
                            sigma));
}

template <class T> void check_data(const Table<T> &data) {
  if (data.rows() == 0)
    throw Error(ErrorCode::empty_input, "KDE data: no points");
  if (data.cols() == 0)
    throw Error(ErrorCode::empty_input, "KDE data: no coordinate columns");
  detail::check_finite(data, "KDE data");
}

// The weights normalised to sum 1 (empty: all equal).
template <class T> std::vector<double> normalised(const Table<T> *weights, std::int64_t n) {
  if (!weights)
    return {};
  const auto &w = *weights;
  if (w.cols() != 1 || w.rows() != n)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("KDE weights are {} x {} but the data have {} points: one weight "
                            "(one column) per data point",
                            w.rows(), w.cols(), n));
  detail::check_finite(w, "KDE weights");
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (w(i, 0) < 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("KDE weights: negative weight {} at row {}; weights must be >= 0",
                              static_cast<double>(w(i, 0)), i));
    sum += static_cast<double>(w(i, 0));
  }
  if (!(sum > 0) || !std::isfinite(sum))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("KDE weights sum to {}: need a positive finite total", sum));
  std::vector<double> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    out[i] = static_cast<double>(w(i, 0)) / sum;
  return out;
}

// Σ w_i² of the normalised weights (1/n without weights): 1/n_eff.
double sum_squares(const std::vector<double> &w, std::int64_t n) {
  if (w.empty())
    return 1.0 / static_cast<double>(n);
  double s = 0;
  for (const double v : w)
    s += v * v;
  return s;
}

template <class T>
std::vector<double> bandwidth_from(const Table<T> &data, const Bandwidth &b,
                                   const std::vector<double> &w) {
  const std::int64_t n = data.rows(), d = data.cols();
  if (b.rule == BandwidthRule::fixed) {
    check_sigma(b.sigma);
    return std::vector<double>(static_cast<std::size_t>(d), b.sigma);
  }
  const std::string rule(to_string(b.rule));
  if (n < 2)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("KDE bandwidth: the {} rule needs at least 2 data points to estimate "
                            "the spread, got {}; give a fixed bandwidth σ instead",
                            rule, n));
  const double s2 = sum_squares(w, n);
  // The weighted variance's unbiased denominator (SciPy's): 1 − Σw² (= (n − 1)/n unweighted).
  const double denom = 1 - s2;
  if (!(denom > 0)) {
    std::int64_t heavy = 0;
    for (std::int64_t i = 0; i < n; ++i)
      if (w[i] > w[heavy])
        heavy = i;
    throw Error(ErrorCode::invalid_argument,
                fmt::format("KDE weights: all the weight is on one data point (row {}), so the {} "
                            "rule has no spread to measure; give a fixed bandwidth σ instead",
                            heavy, rule));
  }
  const double neff = 1 / s2, dd = static_cast<double>(d);
  const double factor = b.rule == BandwidthRule::scott
                            ? std::pow(neff, -1 / (dd + 4))
                            : std::pow(neff * (dd + 2) / 4, -1 / (dd + 4));
  std::vector<double> sigma(static_cast<std::size_t>(d));
  for (std::int64_t k = 0; k < d; ++k) {
    const auto x = data.col(k);
    const auto wt = [&](std::int64_t i) { return w.empty() ? 1.0 / static_cast<double>(n) : w[i]; };
    // Two passes: the mean first, so that a constant column gives exactly zero spread.
    double mean = 0;
    for (std::int64_t i = 0; i < n; ++i)
      mean += wt(i) * static_cast<double>(x[i]);
    double var = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double dev = static_cast<double>(x[i]) - mean;
      var += wt(i) * dev * dev;
    }
    const double s = std::sqrt(var / denom);
    if (!(s > 0)) {
      std::int64_t first = 0;
      while (!w.empty() && w[first] == 0)
        ++first;
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("KDE data {}: every point{} has the value {} (zero spread), so the "
                              "{} rule gives σ = 0; give a fixed bandwidth σ instead",
                              column_name(data, k), w.empty() ? "" : " with positive weight",
                              static_cast<double>(x[first]), rule));
    }
    if (!std::isfinite(s * factor))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("KDE data {}: the spread overflows a double; rescale the data",
                              column_name(data, k)));
    sigma[k] = s * factor;
  }
  return sigma;
}

template <class T>
Table<T> density(const Table<T> &data, const Table<T> *weights, const Table<T> &eval,
                 const KdeOptions &o, KdeInfo *info) {
  const auto t0 = std::chrono::steady_clock::now();
  check_data(data);
  const std::int64_t n = data.rows(), d = data.cols();
  const auto w = normalised(weights, n);
  const auto sigma = bandwidth_from(data, o.bandwidth, w);
  if (eval.cols() != d)
    throw Error(
        ErrorCode::shape_mismatch,
        fmt::format("KDE evaluation points have {} columns but the data have {}", eval.cols(), d));
  detail::check_finite(eval, "KDE evaluation points");

  // 1/Π(√(2π) σ_k) through logarithms: the product may leave double's range in high dimension
  // while the ratio to it (the density's scale) does not.
  double log_norm = 0;
  for (const double s : sigma)
    log_norm += std::log(std::sqrt(2 * std::numbers::pi) * s);
  const double peak = std::exp(-log_norm);

  Table<T> out(eval.rows(), 1);
  out.names = {"density"};
  GaussStats stats{};
  if (eval.rows() > 0) {
    // Coordinates scaled by 1/σ_k: exp(−Σ_k Δ_k²/(2σ_k²)) = exp(−|Δ'|²/h²) with h = √2.
    const auto scaled = [&](const Table<T> &t) {
      Table<T> s(t.rows(), d, Uninitialized{});
      for (std::int64_t k = 0; k < d; ++k)
        for (std::int64_t i = 0; i < t.rows(); ++i)
          s(i, k) = static_cast<T>(static_cast<double>(t(i, k)) / sigma[k]);
      return s;
    };
    // q_i = n w_i keeps Σ|q| = n with or without weights, so the transform's bound
    // tolerance · Σ|q| becomes tolerance · peak on f = G / (n Π √(2π) σ_k).
    Table<T> q(n, 1, T(1));
    for (std::size_t i = 0; i < w.size(); ++i)
      q(static_cast<std::int64_t>(i), 0) = static_cast<T>(static_cast<double>(n) * w[i]);
    GaussOptions g;
    g.bandwidth = std::numbers::sqrt2;
    g.tolerance = o.tolerance;
    g.method = o.method;
    g.backend = o.backend;
    g.threads = o.threads;
    g.device = o.device;
    g.progress = o.progress;
    GaussTransform<T> transform(g);
    transform.set_points(scaled(data), scaled(eval));
    const auto sums = transform.execute(q);
    const double scale = peak / static_cast<double>(n);
    for (std::int64_t i = 0; i < eval.rows(); ++i)
      out(i, 0) = static_cast<T>(static_cast<double>(sums(i, 0)) * scale);
    stats = transform.stats();
  }
  if (info) {
    info->sigma = sigma;
    info->effective_n = 1 / sum_squares(w, n);
    info->peak = peak;
    info->error_bound = o.tolerance * peak;
    info->stats = stats;
    info->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return out;
}

} // namespace

std::string_view to_string(BandwidthRule r) {
  switch (r) {
  case BandwidthRule::fixed:
    return "fixed";
  case BandwidthRule::scott:
    return "scott";
  case BandwidthRule::silverman:
    return "silverman";
  }
  return "unknown";
}

Bandwidth parse_bandwidth(std::string_view text) {
  if (text == "scott")
    return {BandwidthRule::scott, 0};
  if (text == "silverman")
    return {BandwidthRule::silverman, 0};
  const std::string s(text);
  char *end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0')
    throw Error(ErrorCode::invalid_argument,
                fmt::format("bandwidth '{}': expected scott, silverman, or a positive number (the "
                            "kernel's standard deviation σ)",
                            s));
  if (!std::isfinite(v) || v <= 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("bandwidth '{}': the kernel's standard deviation σ must be positive "
                            "and finite",
                            s));
  return {BandwidthRule::fixed, v};
}

template <std::floating_point T>
std::vector<double> kde_bandwidth(const Table<T> &data, const Bandwidth &bandwidth,
                                  const Table<T> *weights) {
  check_data(data);
  return bandwidth_from(data, bandwidth, normalised(weights, data.rows()));
}

template <std::floating_point T>
Table<T> kernel_density(const Table<T> &data, const Table<T> &eval, const KdeOptions &options,
                        KdeInfo *info) {
  return density<T>(data, nullptr, eval, options, info);
}

template <std::floating_point T>
Table<T> kernel_density(const Table<T> &data, const Table<T> &weights, const Table<T> &eval,
                        const KdeOptions &options, KdeInfo *info) {
  return density<T>(data, &weights, eval, options, info);
}

template <std::floating_point T>
KdeRange kde_range(const Table<T> &data, std::span<const double> sigma, double padding) {
  check_data(data);
  if (static_cast<std::int64_t>(sigma.size()) != data.cols())
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("KDE range: {} bandwidths for data of dimension {}", sigma.size(),
                            data.cols()));
  if (!std::isfinite(padding) || padding < 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("KDE range: padding {} must be finite and >= 0", padding));
  KdeRange r;
  for (std::int64_t k = 0; k < data.cols(); ++k) {
    check_sigma(sigma[k]);
    double lo = INFINITY, hi = -INFINITY;
    for (const T v : data.col(k)) {
      lo = std::min(lo, static_cast<double>(v));
      hi = std::max(hi, static_cast<double>(v));
    }
    r.lo.push_back(lo - padding * sigma[k]);
    r.hi.push_back(hi + padding * sigma[k]);
  }
  return r;
}

template <std::floating_point T>
Table<T> kde_grid(std::span<const double> lo, std::span<const double> hi,
                  std::span<const std::int64_t> counts) {
  if (lo.size() != counts.size() || hi.size() != counts.size() || counts.empty())
    throw Error(ErrorCode::invalid_argument,
                fmt::format("KDE grid: {} lower bounds, {} upper bounds and {} counts; need the "
                            "same number (>= 1) of each",
                            lo.size(), hi.size(), counts.size()));
  for (std::size_t k = 0; k < counts.size(); ++k)
    if (!std::isfinite(lo[k]) || !std::isfinite(hi[k]) || hi[k] < lo[k])
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("KDE grid: axis {} has range [{}, {}]; need finite lo <= hi", k,
                              lo[k], hi[k]));
  const auto g =
      datasets::grid(counts.data(), lo.data(), hi.data(), static_cast<std::int64_t>(counts.size()));
  if constexpr (std::is_same_v<T, double>)
    return g;
  else
    return g.template cast<T>();
}

double kde_cell_volume(std::span<const double> lo, std::span<const double> hi,
                       std::span<const std::int64_t> counts) {
  if (lo.size() != counts.size() || hi.size() != counts.size())
    throw Error(ErrorCode::invalid_argument,
                fmt::format("KDE cell volume: {} lower bounds, {} upper bounds and {} counts",
                            lo.size(), hi.size(), counts.size()));
  double v = 1;
  for (std::size_t k = 0; k < counts.size(); ++k)
    if (counts[k] > 1)
      v *= (hi[k] - lo[k]) / static_cast<double>(counts[k] - 1);
  return v;
}

template std::vector<double> kde_bandwidth(const Table<float> &, const Bandwidth &,
                                           const Table<float> *);
template std::vector<double> kde_bandwidth(const Table<double> &, const Bandwidth &,
                                           const Table<double> *);
template Table<float> kernel_density(const Table<float> &, const Table<float> &, const KdeOptions &,
                                     KdeInfo *);
template Table<double> kernel_density(const Table<double> &, const Table<double> &,
                                      const KdeOptions &, KdeInfo *);
template Table<float> kernel_density(const Table<float> &, const Table<float> &,
                                     const Table<float> &, const KdeOptions &, KdeInfo *);
template Table<double> kernel_density(const Table<double> &, const Table<double> &,
                                      const Table<double> &, const KdeOptions &, KdeInfo *);
template KdeRange kde_range(const Table<float> &, std::span<const double>, double);
template KdeRange kde_range(const Table<double> &, std::span<const double>, double);
template Table<float> kde_grid(std::span<const double>, std::span<const double>,
                               std::span<const std::int64_t>);
template Table<double> kde_grid(std::span<const double>, std::span<const double>,
                                std::span<const std::int64_t>);

} // namespace ksum
