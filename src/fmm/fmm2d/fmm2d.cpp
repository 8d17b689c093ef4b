// The 2D FMM plan (seed 004 Paper IV): validation, the pyramid, the passes on the CPU's threads and
// the hand-off of the near field (and optionally the M2L) to the GPU.
#include "core/parallel_errors.hpp"
#include "fmm/fmm2d/expansions2d.hpp"
#include "fmm/fmm2d/fmm2d_gpu.hpp"
#include "fmm/fmm2d/pyramid.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>
#include <ksum/fmm2d.hpp>
#include <ksum/tasksize.hpp>

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>

namespace ksum {

Fmm2dKernel parse_fmm2d_kernel(std::string_view name) {
  if (name == "harmonic" || name == "biot-savart")
    return Fmm2dKernel::harmonic;
  if (name == "log")
    return Fmm2dKernel::log;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown 2D FMM kernel '{}'; valid: harmonic, log", name));
}

std::string_view to_string(Fmm2dKernel k) {
  return k == Fmm2dKernel::harmonic ? "harmonic" : "log";
}

Fmm2dSmoothing parse_fmm2d_smoothing(std::string_view name) {
  if (name == "none")
    return Fmm2dSmoothing::none;
  if (name == "gaussian" || name == "oseen")
    return Fmm2dSmoothing::gaussian;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown smoothing '{}'; valid: none, gaussian (oseen)", name));
}

int fmm2d_default_levels(std::int64_t n, double per_box) {
  int l = 1;
  while (l < 15 && static_cast<double>(n) / std::ldexp(1.0, 2 * (l - 1)) > per_box)
    ++l;
  return l;
}

namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Terms for the tolerance. The error of the θ-criterion's translations decays like C θ^p (seed
// 004 Paper IV §2.3: p ~ log TOL / log θ); C, the max error over max |u|, was measured with p
// fixed from 2 to 65, θ 0.3 … 0.7, both kernels, uniform, line-like and clustered points (8
// Gaussian clusters of widths 1e-3 … 0.1), 2·10^4 and 2·10^5 points, random complex strengths
// (bench/results/2026-11-27-fmm2d-order-calibration). The largest C of every (θ, p) lies under
//   harmonic: C(p, θ) = 3.17 · p^−1.19 · e^−1.93θ,     log: C(p, θ) = 2.27 · p^−1.72 · e^−2.15θ,
// the clustered points being the worst; uniform points sit 2 … 30 times below it. The worst C
// depends on the tree more than on N (against a fit to the 2·10^4 points alone, the 2·10^5
// points reached 2.2 times it, with ~12 points per finest box against ~20), so the fit is to
// both sizes, and the order the smallest p with C(p, θ) θ^p ≤ tol / 2: a factor 2 to spare.
// (Before: C = 0.5 for every p and kernel, which put the error 50 … 1000 times below the
// tolerance.) Trees in
// which the θ-criterion's bound is reached more often — over-refined ones and clusters of
// repeated points (boxes of zero size, for which it admits R = θ d; measured C up to 0.23) — keep
// C = 0.5 (degenerate_boxes below).
double order_constant(Fmm2dKernel kernel, int p, double theta, bool degenerate) {
  if (degenerate)
    return 0.5;
  const double pd = static_cast<double>(p);
  return kernel == Fmm2dKernel::harmonic ? 3.17 * std::pow(pd, -1.19) * std::exp(-1.93 * theta)
                                         : 2.27 * std::pow(pd, -1.72) * std::exp(-2.15 * theta);
}
int order_for(Fmm2dKernel kernel, double tol, double theta, bool degenerate) {
  for (int p = 2; p <= fmm2d::kMaxTerms; ++p)
    if (order_constant(kernel, p, theta, degenerate) * std::pow(theta, p) <= tol / 2)
      return p;
  return fmm2d::kMaxTerms + 1;
}

constexpr int max_order = fmm2d::kMaxTerms;

} // namespace

template <std::floating_point T> struct Fmm2d<T>::Impl {
  using X = fmm2d::cx<T>;
  Fmm2dOptions opt;
  Fmm2dStats stats;
  Backend backend = Backend::cpu;
  int threads = 1;
  double theta = 0.5;
  int levels_request = 0, levels = 0, p = 0;
  bool have_points = false;
  std::vector<C> src_copy, tgt_copy; // the points given last (for set_parameters)
  bool self = true;
  fmm2d::Pyramid<T> pyr;
  std::uint64_t generation = 0;
  std::vector<T> binom; // C(n, k) at n * ld + k, n < 2 p
  std::vector<T> hank;  // C(l+k−1, k−1) at l * p + k (the CPU M2L's rows)
  int ld = 0;
  std::vector<X> mult, local, qs, out;
  std::unique_ptr<fmm2d::Fmm2dGpu<T>> gpu;
  // The task sizes learnt from the previous execute (the downward pass's subtree level, the near
  // field's leaves per task), kept while the tree's shape (levels, p, points) stays: a simulation
  // rebuilds the pyramid every step at the same shape.
  tasksize::LearnedLevel down_level;
  tasksize::LearnedChunk near_learned{4};
  std::array<std::int64_t, 6> learned_for{-1, -1, -1, -1, -1, -1};

  void validate_options() {
    const auto &o = opt;
    if (o.method == Method::fgt)
      throw Error(ErrorCode::unsupported,
                  "fmm2d: method fgt is the fast Gauss transform (gaussian kernel, "
                  "ksum::GaussTransform); use fmm, direct or auto");
    const double lo = std::is_same_v<T, float> ? 1e-6 : 1e-13;
    if (!(o.tolerance >= lo && o.tolerance <= 0.1))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("fmm2d: tolerance {} outside {} … 0.1 for {} precision (use {})",
                              o.tolerance, lo, std::is_same_v<T, float> ? "single" : "double",
                              std::is_same_v<T, float> ? "double precision for less" : "1e-13"));
    check_theta(o.theta);
    if (o.levels < 0 || o.levels > 15)
      throw Error(
          ErrorCode::invalid_argument,
          fmt::format("fmm2d: levels {} outside 1 … 15 (0: from the number of points)", o.levels));
    if (o.order != 0 && (o.order < 2 || o.order > max_order))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("fmm2d: order {} outside 2 … {} (0: from the tolerance)", o.order,
                              max_order));
    if (o.smoothing != Fmm2dSmoothing::none) {
      if (o.kernel != Fmm2dKernel::harmonic)
        throw Error(ErrorCode::invalid_argument,
                    "fmm2d: the Gaussian core smooths the harmonic kernel only");
      if (!(o.core_radius > 0) || !std::isfinite(o.core_radius))
        throw Error(
            ErrorCode::invalid_argument,
            fmt::format("fmm2d: core radius δ = {} must be positive and finite", o.core_radius));
    }
    if (o.threads < 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("fmm2d: threads {} must be ≥ 0 (0: OpenMP's default)", o.threads));
    if (o.subtree_level < -1 || o.subtree_level > 14)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("fmm2d: subtree level {} outside 0 … 14 (−1: the task-size model; a "
                              "level past the pyramid's last is its last)",
                              o.subtree_level));
    if (o.near_chunk < 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("fmm2d: near-field leaves per task {} must be ≥ 0 (0: the task-size "
                              "model)",
                              o.near_chunk));
  }
  static void check_theta(double t) {
    if (!(t > 0.05 && t < 0.95))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("fmm2d: θ = {} outside (0.05, 0.95)", t));
  }

  // Whether the tree has boxes for which the θ-criterion's bound is reached more often than in
  // the calibration's trees (see order_constant): an over-refined pyramid (fewer than 4 points
  // per finest box on average: single-point boxes have radius 0), or boxes of several points a
  // million times smaller than the root (clusters of repeated or nearly repeated points).
  bool degenerate_boxes() const {
    const auto n = static_cast<double>(src_copy.size()),
               m = self ? n : static_cast<double>(tgt_copy.size());
    if (std::max(n, m) < 4.0 * static_cast<double>(fmm2d::level_size(levels - 1)))
      return true;
    auto tiny = [](const std::vector<T> &radius, const std::vector<std::int64_t> &count) {
      if (radius.empty())
        return false;
      const T small = static_cast<T>(1e-6) * radius[0];
      for (std::size_t i = 1; i < radius.size() && i < count.size(); ++i)
        if (count[i] >= 2 && radius[i] <= small)
          return true;
      return false;
    };
    return tiny(pyr.src_radius, pyr.src_count) || (!self && tiny(pyr.tgt_radius, pyr.tgt_count));
  }

  void resolve_order() {
    p = opt.order > 0 ? opt.order : order_for(opt.kernel, opt.tolerance, theta, degenerate_boxes());
    if (p > max_order)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("fmm2d: tolerance {} at θ = {} needs {} terms (at most {}); use a "
                              "smaller θ",
                              opt.tolerance, theta, p, max_order));
    p = std::max(p, 2);
    ld = 2 * p;
    binom.assign(static_cast<std::size_t>(ld) * ld, T(0));
    std::vector<double> row(ld, 0.0);
    for (int n = 0; n < ld; ++n) {
      for (int k = n; k >= 1; --k)
        row[k] += row[k - 1];
      row[0] = 1;
      for (int k = 0; k <= n; ++k)
        binom[static_cast<std::size_t>(n) * ld + k] = static_cast<T>(row[k]);
    }
    hank.assign(static_cast<std::size_t>(p) * p, T(0));
    for (int l = 1; l < p; ++l)
      for (int k = 1; k < p; ++k)
        hank[static_cast<std::size_t>(l) * p + k] =
            binom[static_cast<std::size_t>(l + k - 1) * ld + (k - 1)];
  }

  // The first non-finite point (searched in parallel), named in the error.
  template <class Span> void check_points(Span pts, const char *what) const {
    const std::int64_t n = static_cast<std::int64_t>(pts.size());
    std::int64_t bad = n;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(min : bad)
    for (std::int64_t i = 0; i < n; ++i)
      if (!std::isfinite(pts[i].real()) || !std::isfinite(pts[i].imag()))
        bad = std::min(bad, i);
    if (bad < n)
      throw Error(ErrorCode::non_finite, fmt::format("fmm2d: {} {} is ({}, {}): not finite", what,
                                                     bad, pts[bad].real(), pts[bad].imag()));
  }

  void build() {
    const auto t0 = clock_type::now();
    const std::int64_t n = static_cast<std::int64_t>(src_copy.size());
    const std::int64_t m = self ? n : static_cast<std::int64_t>(tgt_copy.size());
    levels = levels_request > 0 ? levels_request : fmm2d_default_levels(std::max(n, m));
    have_points = false; // until the tree and the order are both in place (either may throw)
    fmm2d::build_pyramid(pyr, src_copy.data(), n, self ? nullptr : tgt_copy.data(), m, levels,
                         theta, threads);
    resolve_order(); // after the tree: the order's constant depends on its boxes
    if (opt.smoothing != Fmm2dSmoothing::none) {
      // exp(−gap²/δ²) ≤ tol/10: the far field may use the plain kernel.
      const double need = opt.core_radius * std::sqrt(std::log(10.0 / opt.tolerance));
      if (pyr.min_weak_gap < need)
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("fmm2d: core radius δ = {} is too large for this tree: weakly "
                                "coupled boxes come {:.3g} close, the plain far field needs {:.3g} "
                                "(δ ≤ {:.3g}, or fewer levels)",
                                opt.core_radius, pyr.min_weak_gap, need,
                                pyr.min_weak_gap / (need / opt.core_radius)));
    }
    ++generation;
    have_points = true;
    // θ changes the lists (and so each box's work) at the same levels and p.
    const std::array<std::int64_t, 6> shape{levels, p, n, m, pyr.m2l_count, pyr.p2p_pairs};
    if (shape != learned_for) {
      down_level.reset();
      near_learned.reset();
      learned_for = shape;
    }
    stats = {};
    stats.levels = levels;
    stats.order = p;
    stats.theta = theta;
    stats.m2l_translations = pyr.m2l_count;
    stats.p2p_pairs = pyr.p2p_pairs;
    stats.seconds_partition = seconds_since(t0);
    stats.seconds_split = pyr.seconds_split;
    stats.seconds_connect = pyr.seconds_connect;
  }

  // One pass over complex strengths (sorted) into out (sorted targets, overwritten).
  void pass(bool harmonic) {
    const int L = levels;
    const std::int64_t nbox = pyr.num_boxes();
    const std::int64_t nleaf = fmm2d::level_size(L - 1), leaf0 = fmm2d::level_first(L - 1);
    const std::int64_t m = self ? static_cast<std::int64_t>(pyr.src.size())
                                : static_cast<std::int64_t>(pyr.tgt.size());
    const X *zs = reinterpret_cast<const X *>(pyr.src.data());
    const X *zt = reinterpret_cast<const X *>(pyr.targets());
    const std::int64_t *toff = pyr.target_offsets();
    const auto *sc = reinterpret_cast<const X *>(pyr.src_centre.data());
    const auto *tc = reinterpret_cast<const X *>(pyr.tgt_centre.data());
    out.assign(static_cast<std::size_t>(m), X{0, 0});

    const bool gpu_near = backend == Backend::cuda;
    const bool gpu_m2l = gpu_near && opt.gpu_m2l;
    fmm2d::NearSpec spec{harmonic,
                         opt.smoothing == Fmm2dSmoothing::gaussian ? opt.core_radius : 0.0};
    if (gpu_near)
      gpu->start_near(pyr, generation, qs.data(), spec);

    // Upward: P2M on the leaves, M2M level by level (seed 004 Paper IV §3.1).
    auto t0 = clock_type::now();
    mult.assign(static_cast<std::size_t>(nbox) * p, X{0, 0});
    local.assign(static_cast<std::size_t>(nbox) * p, X{0, 0});
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t k = 0; k < nleaf; ++k) {
      const std::int64_t b = leaf0 + k, a = pyr.src_off[k], e = pyr.src_off[k + 1];
      if (e > a)
        fmm2d::p2m(zs + a, qs.data() + a, static_cast<int>(e - a), sc[b], pyr.src_scale[b], p,
                   mult.data() + b * p);
    }
    for (int l = L - 2; l >= 0; --l) {
      const std::int64_t f = fmm2d::level_first(l), fc = fmm2d::level_first(l + 1);
#pragma omp parallel for num_threads(threads) schedule(static) if (fmm2d::level_size(l) > 64)
      for (std::int64_t k = 0; k < fmm2d::level_size(l); ++k)
        for (std::int64_t c = fc + 4 * k; c < fc + 4 * k + 4; ++c)
          if (pyr.src_count[c] > 0)
            fmm2d::m2m(mult.data() + c * p, sc[c], pyr.src_scale[c], sc[f + k],
                       pyr.src_scale[f + k], p, binom.data(), ld, mult.data() + (f + k) * p);
    }
    stats.seconds_upward += seconds_since(t0);

    // Downward: M2L + L2L. Boxes above the task level run serially; then one task per box of the
    // task level completes its whole subtree, L2P included (both directions of every interaction
    // are computed, so subtrees never wait on each other).
    t0 = clock_type::now();
    if (gpu_m2l) {
      const auto tm = gpu->m2l(pyr, generation, p, mult.data(), local.data());
      stats.seconds_gpu_m2l += tm.kernel + tm.upload + tm.download;
    }
    const auto box_down = [&](int l, std::int64_t k) {
      const std::int64_t b = fmm2d::level_first(l) + k;
      if (pyr.tgt_count[b] == 0)
        return;
      X *loc = local.data() + b * p;
      const T s2 = pyr.tgt_scale[b];
      if (l > 0) {
        const std::int64_t parent = fmm2d::level_first(l - 1) + k / 4;
        fmm2d::l2l(local.data() + parent * p, tc[parent], pyr.tgt_scale[parent], tc[b], s2, p, loc);
      }
      if (!gpu_m2l && l > 0) {
        const std::int64_t f = fmm2d::level_first(l);
        for (std::int64_t e = pyr.weak_off[l][k]; e < pyr.weak_off[l][k + 1]; ++e) {
          const std::int64_t c = f + pyr.weak[l][e];
          fmm2d::m2l_rows(mult.data() + c * p, sc[c], pyr.src_scale[c], tc[b], s2, p, hank.data(),
                          loc);
        }
      }
      if (l == L - 1) {
        for (std::int64_t i = toff[k]; i < toff[k + 1]; ++i) {
          X phi, dphi;
          fmm2d::l2p(loc, tc[b], s2, p, zt[i], phi, dphi);
          out[i] = harmonic ? dphi : X{phi.re, T(0)};
        }
      }
    };
    int first_level = 0; // before any measurement: ≥ 8 tasks per thread
    while (first_level < L - 1 && fmm2d::level_size(first_level) < 8 * threads)
      ++first_level;
    const int task_level = down_level.choose(L, 4, threads, opt.subtree_level, first_level);
    stats.subtree_level = task_level;
    const auto t_boxes = clock_type::now();
    for (int l = 0; l < task_level; ++l)
      for (std::int64_t k = 0; k < fmm2d::level_size(l); ++k)
        box_down(l, k);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (std::int64_t r = 0; r < fmm2d::level_size(task_level); ++r)
      for (int l = task_level; l < L; ++l) {
        const std::int64_t w = std::int64_t(1) << (2 * (l - task_level));
        for (std::int64_t k = r * w; k < (r + 1) * w; ++k)
          box_down(l, k);
      }
    if (threads > 1)
      down_level.record(L, 4, task_level, threads, seconds_since(t_boxes));
    stats.seconds_downward += seconds_since(t0);

    // Near field: on the GPU (already running) or here.
    t0 = clock_type::now();
    if (gpu_near) {
      const double before = seconds_since(t0);
      stats.seconds_gpu_near += gpu->finish_near(out.data());
      const double waited = seconds_since(t0) - before;
      stats.cpu_waited_on_gpu = stats.cpu_waited_on_gpu || waited > 1e-4;
    } else {
      near_cpu(harmonic, spec.core, zs, zt, toff, leaf0);
    }
    stats.seconds_near += seconds_since(t0);
  }

  void near_cpu(bool harmonic, double core, const X *zs, const X *zt, const std::int64_t *toff,
                std::int64_t leaf0) {
    const int lf = levels - 1;
    const std::int64_t nleaf = fmm2d::level_size(lf);
    const T inv_core2 = core > 0 ? T(1 / (core * core)) : T(0);
    const auto &so = pyr.strong_off[lf];
    const auto &sl = pyr.strong[lf];
    (void)leaf0;
    const std::int64_t chunk = near_learned.choose(threads, opt.near_chunk);
    stats.near_chunk = chunk;
    const auto t0 = clock_type::now();
#pragma omp parallel for num_threads(threads) schedule(dynamic, chunk)
    for (std::int64_t b = 0; b < nleaf; ++b) {
      for (std::int64_t i = toff[b]; i < toff[b + 1]; ++i) {
        const X z = zt[i];
        T ur = 0, ui = 0;
        for (std::int64_t e = so[b]; e < so[b + 1]; ++e) {
          const std::int64_t c = sl[e];
          const std::int64_t a = pyr.src_off[c], en = pyr.src_off[c + 1];
          if (harmonic) {
#pragma omp simd reduction(+ : ur, ui)
            for (std::int64_t j = a; j < en; ++j) {
              const T dx = z.re - zs[j].re, dy = z.im - zs[j].im;
              const T r2 = dx * dx + dy * dy;
              T f = r2 > 0 ? T(1) / r2 : T(0);
              if (inv_core2 > 0)
                f *= T(1) - std::exp(-r2 * inv_core2);
              // q / dz = q · conj(dz) / |dz|²
              const T qr = qs[j].re, qi = qs[j].im;
              ur += f * (qr * dx + qi * dy);
              ui += f * (qi * dx - qr * dy);
            }
          } else {
#pragma omp simd reduction(+ : ur)
            for (std::int64_t j = a; j < en; ++j) {
              const T dx = z.re - zs[j].re, dy = z.im - zs[j].im;
              const T r2 = dx * dx + dy * dy;
              ur += r2 > 0 ? qs[j].re * T(0.5) * std::log(r2) : T(0);
            }
          }
        }
        out[i].re += ur;
        out[i].im += ui;
      }
    }
    if (threads > 1)
      near_learned.record(nleaf, threads, seconds_since(t0), chunk);
  }

  // The exact sum, every pair: the reference (and method = direct).
  void direct(std::span<const C> q, std::span<C> res) const {
    const std::int64_t n = static_cast<std::int64_t>(src_copy.size());
    const std::vector<C> &tg = self ? src_copy : tgt_copy;
    const std::int64_t m = static_cast<std::int64_t>(tg.size());
    const bool harmonic = opt.kernel == Fmm2dKernel::harmonic;
    const double core = opt.smoothing == Fmm2dSmoothing::gaussian ? opt.core_radius : 0.0;
    const T inv_core2 = core > 0 ? T(1 / (core * core)) : T(0);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 64)
    for (std::int64_t i = 0; i < m; ++i) {
      T ur = 0, ui = 0;
      for (std::int64_t j = 0; j < n; ++j) {
        if (self && j == i)
          continue;
        const T dx = tg[i].real() - src_copy[j].real(), dy = tg[i].imag() - src_copy[j].imag();
        const T r2 = dx * dx + dy * dy;
        if (!(r2 > 0))
          continue;
        if (harmonic) {
          T f = T(1) / r2;
          if (inv_core2 > 0)
            f *= T(1) - std::exp(-r2 * inv_core2);
          ur += f * (q[j].real() * dx + q[j].imag() * dy);
          ui += f * (q[j].imag() * dx - q[j].real() * dy);
        } else {
          const T lg = T(0.5) * std::log(r2);
          ur += q[j].real() * lg;
          ui += q[j].imag() * lg;
        }
      }
      res[i] = {ur, ui};
    }
  }

  // Copies the points given in parallel (a time step's 10^6 points are a serial copy's
  // milliseconds); the vector keeps its memory between calls.
  void copy_points(std::vector<C> &to, std::span<const C> from) const {
    to.resize(from.size());
    const std::int64_t n = static_cast<std::int64_t>(from.size());
#pragma omp parallel for num_threads(threads) schedule(static) if (n > 100000)
    for (std::int64_t i = 0; i < n; ++i)
      to[i] = from[i];
  }
};

template <std::floating_point T> Fmm2d<T>::Fmm2d(Fmm2dOptions options) : impl_(new Impl) {
  impl_->opt = options;
  impl_->validate_options();
  impl_->theta = options.theta;
  impl_->levels_request = options.levels;
  impl_->threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  Backend b = options.backend;
  if (b == Backend::automatic)
    b = gpu_count() == 0 ? Backend::cpu : Backend::cuda;
  if (options.gpu_m2l && b != Backend::cuda)
    throw Error(ErrorCode::invalid_argument, "fmm2d: gpu_m2l needs the GPU backend (backend cuda)");
  if (b == Backend::cuda && options.method != Method::direct)
    impl_->gpu = fmm2d::make_fmm2d_gpu<T>(0);
  impl_->backend = b;
}

template <std::floating_point T> Fmm2d<T>::~Fmm2d() = default;
template <std::floating_point T> Fmm2d<T>::Fmm2d(Fmm2d &&) noexcept = default;
template <std::floating_point T> Fmm2d<T> &Fmm2d<T>::operator=(Fmm2d &&) noexcept = default;

template <std::floating_point T> void Fmm2d<T>::set_points(std::span<const C> sources) {
  impl_->check_points(sources, "source");
  impl_->copy_points(impl_->src_copy, sources);
  impl_->tgt_copy.clear();
  impl_->self = true;
  impl_->build();
}

template <std::floating_point T>
void Fmm2d<T>::set_points(std::span<const C> sources, std::span<const C> targets) {
  impl_->check_points(sources, "source");
  impl_->check_points(targets, "target");
  impl_->copy_points(impl_->src_copy, sources);
  impl_->copy_points(impl_->tgt_copy, targets);
  impl_->self = false;
  impl_->build();
}

template <std::floating_point T>
std::vector<typename Fmm2d<T>::C> Fmm2d<T>::execute(std::span<const C> strengths) {
  const auto &I = *impl_;
  if (!I.have_points)
    throw Error(ErrorCode::invalid_argument, "fmm2d: execute() before set_points()");
  std::vector<C> res(I.self ? I.src_copy.size() : I.tgt_copy.size());
  execute(strengths, res);
  return res;
}

template <std::floating_point T>
void Fmm2d<T>::execute(std::span<const C> strengths, std::span<C> res) {
  auto &I = *impl_;
  if (!I.have_points)
    throw Error(ErrorCode::invalid_argument, "fmm2d: execute() before set_points()");
  const std::size_t n = I.src_copy.size();
  if (strengths.size() != n)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("fmm2d: {} strengths for {} sources", strengths.size(), n));
  const std::size_t targets = I.self ? n : I.tgt_copy.size();
  if (res.size() != targets)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("fmm2d: a result of {} entries for {} targets", res.size(), targets));
  I.check_points(strengths, "strength");
  const auto t0 = clock_type::now();
  const double partition = I.stats.seconds_partition;
  I.stats = Fmm2dStats{};
  I.stats.levels = I.levels;
  I.stats.order = I.p;
  I.stats.theta = I.theta;
  I.stats.m2l_translations = I.pyr.m2l_count;
  I.stats.p2p_pairs = I.pyr.p2p_pairs;
  I.stats.seconds_partition = partition;
  I.stats.seconds_split = I.pyr.seconds_split;
  I.stats.seconds_connect = I.pyr.seconds_connect;
  const std::int64_t m =
      I.self ? static_cast<std::int64_t>(n) : static_cast<std::int64_t>(I.tgt_copy.size());
  if (I.opt.method == Method::direct || n == 0 || m == 0 ||
      (I.opt.method == Method::automatic && static_cast<double>(n) * m < 4e6)) {
    if (n == 0)
      std::fill(res.begin(), res.end(), C(0, 0));
    else
      I.direct(strengths, res);
    I.stats.seconds_execute = seconds_since(t0);
    return;
  }
  const bool harmonic = I.opt.kernel == Fmm2dKernel::harmonic;
  I.qs.resize(n);
  // The log kernel's strengths are real per pass: Σ q_j log|z − z_j| = Re-part pass + i Im-part
  // pass.
  bool any_imag = false;
  for (std::size_t j = 0; j < n && !any_imag; ++j)
    any_imag = strengths[j].imag() != 0;
  const int passes = harmonic || !any_imag ? 1 : 2;
  const std::int32_t *perm_t = I.self ? I.pyr.src_index.data() : I.pyr.tgt_index.data();
  for (int pass = 0; pass < passes; ++pass) {
#pragma omp parallel for num_threads(I.threads) schedule(static)
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
      const C q = strengths[I.pyr.src_index[i]];
      I.qs[i] = harmonic ? typename Impl::X{q.real(), q.imag()}
                         : typename Impl::X{pass == 0 ? q.real() : q.imag(), T(0)};
    }
    I.pass(harmonic);
#pragma omp parallel for num_threads(I.threads) schedule(static)
    for (std::int64_t i = 0; i < m; ++i) {
      const auto v = I.out[i];
      C &r = res[perm_t[i]];
      if (harmonic)
        r = {v.re, v.im};
      else if (pass == 0)
        r = {v.re, T(0)};
      else
        r = {r.real(), v.re};
    }
  }
  std::int64_t bad = m;
#pragma omp parallel for num_threads(I.threads) schedule(static) reduction(min : bad)
  for (std::int64_t i = 0; i < m; ++i)
    if (!std::isfinite(res[i].real()) || !std::isfinite(res[i].imag()))
      bad = std::min(bad, i);
  if (bad < m)
    throw Error(ErrorCode::internal,
                fmt::format("fmm2d: result {} is not finite ({}, {}); please report this input",
                            bad, res[bad].real(), res[bad].imag()));
  I.stats.seconds_execute = seconds_since(t0);
}

template <std::floating_point T> void Fmm2d<T>::set_parameters(double theta, int levels) {
  Impl::check_theta(theta);
  if (levels < 0 || levels > 15)
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("fmm2d: levels {} outside 1 … 15 (0: from the number of points)", levels));
  const bool changed = theta != impl_->theta || levels != impl_->levels_request;
  impl_->theta = theta;
  impl_->levels_request = levels;
  if (changed && impl_->have_points)
    impl_->build();
}

template <std::floating_point T> double Fmm2d<T>::theta() const {
  return impl_->theta;
}
template <std::floating_point T> int Fmm2d<T>::levels() const {
  return impl_->levels;
}
template <std::floating_point T> int Fmm2d<T>::order() const {
  return impl_->p;
}
template <std::floating_point T> Backend Fmm2d<T>::backend() const {
  return impl_->backend;
}
template <std::floating_point T> const Fmm2dOptions &Fmm2d<T>::options() const {
  return impl_->opt;
}
template <std::floating_point T> const Fmm2dStats &Fmm2d<T>::stats() const {
  return impl_->stats;
}

template class Fmm2d<float>;
template class Fmm2d<double>;

} // namespace ksum
