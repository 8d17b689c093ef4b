// The FMM of a simulation: one Fmm2d<double> plan for every call of a run (new particle positions
// each call), its θ and Nlevels moved between calls by the Autotuner (seed 004 Paper IV §4, §5).
#include "sim/sim_detail.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <numbers>
#include <omp.h>

namespace ksum::sim {
namespace {

Fmm2dOptions plan_options(const FieldOptions &o) {
  if (!(o.core_radius >= 0) || !std::isfinite(o.core_radius))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("simulate: core radius δ = {} must be ≥ 0 and finite", o.core_radius));
  Fmm2dOptions f;
  f.kernel = Fmm2dKernel::harmonic;
  f.method = o.method;
  f.tolerance = o.tolerance;
  f.theta = o.theta;
  f.levels = o.levels;
  f.backend = o.backend;
  f.gpu_m2l = o.gpu_m2l;
  f.threads = o.threads;
  f.smoothing = o.core_radius > 0 && o.core_mode == CoreMode::plan ? Fmm2dSmoothing::gaussian
                                                                   : Fmm2dSmoothing::none;
  f.core_radius = o.core_radius;
  return f;
}

AutotuneOptions tuner_options(const FieldOptions &o) {
  AutotuneOptions a;
  a.scheme = o.autotune;
  a.cap = o.cap;
  return a;
}

// The core-radius fallback: θ shrinks by this factor per refused tree, down to this floor (the
// autotuner's default lower bound), before the tree loses a level.
constexpr double kThetaShrink = 0.8;
constexpr double kThetaFloor = 0.25;

} // namespace

struct Field::Impl {
  FieldOptions opt;
  Fmm2d<double> plan;
  std::optional<Autotuner> tuner;
  FieldStats stats;
  bool built = false; // a tree was built once: set_parameters() rebuilds from then on

  explicit Impl(FieldOptions o) : opt(o), plan(plan_options(o)) {
    // Checks θ, Nlevels and cap against the tuner's bounds now, not at the first call.
    Autotuner probe(tuner_options(opt), {opt.theta, std::max(opt.levels, 1)});
    (void)probe;
  }

  // The plan's core-radius check refused the tree (seed 004 Paper IV §5.3's smoother applies in
  // the near field only, so every weakly coupled pair must be beyond its reach): a coarser tree has
  // larger boxes and larger gaps between the weakly coupled ones.
  bool core_refusal(const Error &e) const {
    return e.code() == ErrorCode::invalid_argument && opt.core_mode == CoreMode::plan &&
           opt.core_radius > 0 && plan.levels() > 1;
  }

  std::vector<Complex> run(std::span<const Complex> src, std::span<const Complex> q,
                           std::span<const Complex> tgt, bool self, bool tuned) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto m = self ? src.size() : tgt.size();
    if (src.empty() || m == 0)
      return std::vector<Complex>(m, Complex(0, 0));
    if (tuned && !tuner) {
      const int l0 = opt.levels > 0
                         ? opt.levels
                         : fmm2d_default_levels(static_cast<std::int64_t>(std::max(src.size(), m)));
      const auto a = tuner_options(opt);
      tuner.emplace(a, AutotuneParams{opt.theta, std::clamp(l0, a.levels_min, a.levels_max)});
    }
    // Untuned, with a tuner that never moves and no --levels: Nlevels follows the point count
    // (the plan's default), the fair untuned baseline for a growing particle set (the cylinder).
    AutotuneParams want{opt.theta, opt.levels};
    if (tuner && !(opt.autotune == AutotuneScheme::off && opt.levels == 0))
      want = tuner->current();
    // set_parameters() rebuilds the tree on the previous call's points when θ or Nlevels change; a
    // refusal there is about points that are replaced next, so it is not acted on.
    try {
      plan.set_parameters(want.theta, want.levels);
    } catch (const Error &e) {
      if (!core_refusal(e))
        throw;
    }
    const auto set_points = [&] {
      if (self)
        plan.set_points(src);
      else
        plan.set_points(src, tgt);
    };
    int asked = 0, refusals = 0; // Nlevels of the first tree tried (the plan resolves 0)
    try {
      set_points();
      asked = plan.levels();
    } catch (const Error &e) {
      if (!core_refusal(e))
        throw;
      asked = plan.levels();
      refusals = 1;
      // The smallest gap between weakly coupled boxes is at least R(1/θ − 1) (R the larger box
      // radius), so a smaller θ widens it on the same tree; below θ_floor, one level coarser
      // (larger boxes) from the asked θ again. Level 1 has no weak pairs and always passes.
      const double floor = std::min(want.theta, kThetaFloor);
      int levels = asked;
      double theta = want.theta * kThetaShrink;
      for (;;) {
        if (theta < floor) {
          levels -= 1;
          theta = want.theta;
        }
        try {
          // A plan that has held points rebuilds on the ones given last (these) right here.
          plan.set_parameters(theta, levels);
          if (!built)
            set_points();
          break;
        } catch (const Error &e2) {
          if (!core_refusal(e2))
            throw;
          ++refusals;
          theta *= kThetaShrink;
        }
      }
    }
    stats.core_retries += refusals;
    built = true;
    auto out = plan.execute(q);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (opt.core_mode == CoreMode::correction && opt.core_radius > 0) {
      const auto t1 = std::chrono::steady_clock::now();
      // The direct sum is exact: then the correction reaches every pair exp(−r²/δ²) sees
      // (e^{−745} is below the smallest double).
      const double tol = opt.method == Method::direct ? 1e-300 : opt.tolerance;
      detail::subtract_core(src, q, self ? src : tgt, opt.core_radius, tol,
                            opt.threads > 0 ? opt.threads : omp_get_max_threads(), out);
      const double c = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
      stats.seconds_core += c;
      stats.seconds += c;
    }
    const auto &s = plan.stats();
    stats.calls += 1;
    stats.seconds += secs;
    stats.seconds_partition += s.seconds_partition;
    stats.seconds_upward += s.seconds_upward;
    stats.seconds_downward += s.seconds_downward;
    stats.seconds_near += s.seconds_near;
    stats.seconds_gpu_near += s.seconds_gpu_near;
    stats.theta = plan.theta();
    stats.requested_theta = want.theta;
    stats.levels = plan.levels();
    stats.order = plan.order();
    stats.requested_levels = asked;
    stats.cpu_waited_on_gpu = stats.cpu_waited_on_gpu || s.cpu_waited_on_gpu;
    if (tuned) {
      const auto before = tuner->log().size();
      std::optional<bool> signal;
      if (plan.backend() == Backend::cuda)
        signal = s.cpu_waited_on_gpu;
      // A tree the plan refuses is infeasible for these points: the call ran ΔL levels coarser
      // (or at a smaller θ), and is reported as (1 + ΔL) times its time, so that a levels move
      // that asked for it is undone (and its cost counted by AT3b) instead of the tuner drifting
      // to levels that never run. θ's fallback keeps the level and θ's ordering, so it is not
      // penalised.
      tuner->record(secs * (1 + asked - plan.levels()), signal);
      const auto &log = tuner->log();
      stats.moves.insert(stats.moves.end(), log.begin() + static_cast<std::ptrdiff_t>(before),
                         log.end());
      stats.tuned_calls += 1;
    }
    return out;
  }
};

CoreMode parse_core_mode(std::string_view name) {
  if (name == "correction")
    return CoreMode::correction;
  if (name == "plan")
    return CoreMode::plan;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("simulate: unknown core mode '{}'; valid: correction, plan", name));
}

std::string_view to_string(CoreMode mode) {
  return mode == CoreMode::plan ? "plan" : "correction";
}

Field::Field(FieldOptions options) : impl_(std::make_unique<Impl>(options)) {}
Field::~Field() = default;
Field::Field(Field &&) noexcept = default;
Field &Field::operator=(Field &&) noexcept = default;

std::vector<Complex> Field::sum(std::span<const Complex> z, std::span<const Complex> q,
                                bool tuned) {
  return impl_->run(z, q, {}, true, tuned);
}

std::vector<Complex> Field::sum(std::span<const Complex> sources, std::span<const Complex> q,
                                std::span<const Complex> targets, bool tuned) {
  return impl_->run(sources, q, targets, false, tuned);
}

FieldStats Field::take_stats() {
  return std::exchange(impl_->stats, FieldStats{});
}
const FieldOptions &Field::options() const {
  return impl_->opt;
}
const std::optional<Autotuner> &Field::autotuner() const {
  return impl_->tuner;
}

std::string Field::autotune_csv() const {
  if (impl_->tuner)
    return impl_->tuner->log_csv();
  return Autotuner(tuner_options(impl_->opt), {impl_->opt.theta, std::max(impl_->opt.levels, 1)})
      .log_csv();
}

std::vector<Complex> vortex_velocity(Field &field, std::span<const Complex> z,
                                     std::span<const double> gamma, bool tuned) {
  if (z.size() != gamma.size())
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("simulate: {} vortices but {} strengths", z.size(), gamma.size()));
  const std::vector<Complex> q(gamma.begin(), gamma.end());
  auto s = field.sum(z, q, tuned);
  // u − iv = s/(2πi), so u + iv = conj(s/(2πi)) = i·conj(s)/(2π) (seed 004 Paper IV §5.1).
  const Complex f(0, 1 / (2 * std::numbers::pi));
  for (auto &v : s)
    v = f * std::conj(v);
  return s;
}

std::vector<Complex> gravity(Field &field, std::span<const Complex> z, std::span<const double> mass,
                             double G, bool tuned) {
  if (z.size() != mass.size())
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("simulate: {} bodies but {} masses", z.size(), mass.size()));
  const std::vector<Complex> q(mass.begin(), mass.end());
  auto s = field.sum(z, q, tuned);
  // Φ = G Σ m_j log|z − z_j| is the real part of G Σ m_j log(z − z_j), so ∂Φ/∂x − i∂Φ/∂y =
  // G Σ m_j/(z − z_j) = G s and a = −∇Φ = −G conj(s).
  for (auto &v : s)
    v = -G * std::conj(v);
  return s;
}

} // namespace ksum::sim
