// The GaussTransform plan: validation, the choice among direct, FGT and IFGT by the cost model,
// and the hand-off to the engines (CPU; the GPU where one serves the plan).
#include "core/validate.hpp"
#include "fgt/fgt_cpu.hpp"
#include "fgt/fgt_gpu.hpp"
#include "fgt/fgt_launch.hpp"
#include "fgt/ifgt.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>
#include <ksum/fgt.hpp>
#include <ksum/tasksize.hpp>

#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <omp.h>
#include <optional>

namespace ksum {

GaussMethod parse_gauss_method(std::string_view name) {
  if (name == "auto")
    return GaussMethod::automatic;
  if (name == "direct")
    return GaussMethod::direct;
  if (name == "fgt")
    return GaussMethod::fgt;
  if (name == "ifgt")
    return GaussMethod::ifgt;
  throw Error(
      ErrorCode::invalid_argument,
      fmt::format("unknown Gauss transform method '{}'; valid: auto, direct, fgt, ifgt", name));
}

std::string_view to_string(GaussMethod m) {
  switch (m) {
  case GaussMethod::automatic:
    return "auto";
  case GaussMethod::direct:
    return "direct";
  case GaussMethod::fgt:
    return "fgt";
  case GaussMethod::ifgt:
    return "ifgt";
  }
  return "?";
}

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
template <class T> constexpr const char *precision_name() {
  return sizeof(T) == 4 ? "float32" : "float64";
}
} // namespace

template <std::floating_point T> struct GaussTransform<T>::Impl {
  GaussOptions opt;
  GaussStats stats;
  int threads = 1;
  std::int64_t d = 0, n = 0, m = 0;
  bool ready = false, self = false;
  detail::uninit_vector<double> zs, zt; // scaled, point-major; zt empty when self
  std::optional<fgt::FgtPlan> fgt;
  tasksize::LearnedChunk box_chunk{1}; // the fgt loop's target boxes per task, learnt per execute
  tasksize::LearnedChunk hermite_chunk{4}; // its Hermite loop's source boxes per task, the same
  std::optional<fgt::IfgtPlan> ifgt;
  std::unique_ptr<DirectSum<T>> direct;
  std::unique_ptr<fgt::FgtGpu<T>> gpu;

  detail::uninit_vector<double> scale(const Table<T> &t, const char *what) const {
    const std::int64_t rows = t.rows(), cols = t.cols();
    detail::uninit_vector<double> z(static_cast<std::size_t>(rows * cols));
    const double inv = 1 / opt.bandwidth;
    std::int64_t bad = rows * cols;
#pragma omp parallel for num_threads(threads) schedule(static)                                     \
    reduction(min                                                                                  \
              : bad) if (rows * cols > 1000000)
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t k = 0; k < cols; ++k) {
        const double v = double(t(i, k)) * inv;
        z[i * cols + k] = v;
        if (!std::isfinite(v))
          bad = std::min(bad, i * cols + k);
      }
    if (bad < rows * cols)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{}: coordinate {} at row {}, column {} divided by the bandwidth {} "
                              "overflows",
                              what, double(t(bad / cols, bad % cols)), bad / cols, bad % cols,
                              opt.bandwidth));
    return z;
  }

  void set(const Table<T> &sources, const Table<T> *targets) {
    if (sources.cols() < 1)
      throw Error(ErrorCode::invalid_argument,
                  "sources: dimension must be at least 1 (no columns)");
    if (targets && targets->cols() != sources.cols())
      throw Error(ErrorCode::shape_mismatch,
                  fmt::format("targets have {} columns but sources have {}: the dimensions differ",
                              targets->cols(), sources.cols()));
    detail::check_finite(sources, "sources");
    if (targets)
      detail::check_finite(*targets, "targets");
    const auto t0 = std::chrono::steady_clock::now();
    ready = false;
    fgt.reset();
    box_chunk.reset(); // a new plan: its loops' costs are measured again
    hermite_chunk.reset();
    ifgt.reset();
    direct.reset();
    gpu.reset();
    d = sources.cols();
    n = sources.rows();
    m = targets ? targets->rows() : n;
    self = targets == nullptr;
    zs = scale(sources, "sources");
    zt = targets ? scale(*targets, "targets") : detail::uninit_vector<double>();
    const double *zy = self ? zs.data() : zt.data();

    fgt::Extent e;
    e.d = int(d);
    e.n = n;
    e.m = m;
    e.lo.assign(d, std::numeric_limits<double>::infinity());
    e.hi.assign(d, -std::numeric_limits<double>::infinity());
    // One parallel pass (per-thread bounds, merged) where the points are many.
    const auto widen = [&](const double *z, std::int64_t rows) {
#pragma omp parallel num_threads(threads) if (rows * d > 1000000)
      {
        std::vector<double> lo(e.lo), hi(e.hi);
#pragma omp for schedule(static) nowait
        for (std::int64_t i = 0; i < rows; ++i)
          for (std::int64_t k = 0; k < d; ++k) {
            lo[k] = std::min(lo[k], z[i * d + k]);
            hi[k] = std::max(hi[k], z[i * d + k]);
          }
#pragma omp critical
        for (std::int64_t k = 0; k < d; ++k) {
          e.lo[k] = std::min(e.lo[k], lo[k]);
          e.hi[k] = std::max(e.hi[k], hi[k]);
        }
      }
    };
    widen(zs.data(), n);
    if (!self)
      widen(zy, m);
    stats = GaussStats{};
    stats.cutoff = fgt::cutoff_radius(opt.tolerance / 2);
    Backend backend = opt.backend;
    if (backend == Backend::automatic)
      backend = gpu_count() == 0 ? Backend::cpu : Backend::cuda;
    else if (backend == Backend::cuda && !cuda_enabled()) // the device: when the engine is made
      throw Error(ErrorCode::unsupported,
                  "backend gpu: this build of ksum has no CUDA backend or no GPU is visible");

    GaussMethod method = opt.method;
    if (n == 0 || m == 0) {
      method = GaussMethod::direct;
    } else {
      stats.predicted_direct = fgt::direct_cost(e);
      // On the GPU, a grid whose series fit its kernels (p ≤ 16, p^d ≤ 4096).
      const bool on_gpu = fgt::runs_on_gpu(backend, int(d), opt.order);
      const auto g = fgt::choose_fgt_for(e, opt.tolerance, opt.order, on_gpu);
      const auto c = fgt::choose_ifgt(e, opt.tolerance, opt.order);
      // The fixed model counts CPU work. On the GPU the direct sum and the FGT's kernels run about
      // 50 times faster than on the CPU's threads (H100 vs 16 cores, measured on the direct sum),
      // while the IFGT stays on the CPU: it must beat the GPU's direct sum. Measured rates (seconds
      // per unit, timed on this device) replace both factors.
      const bool measured = opt.seconds_per_direct_unit > 0 && opt.seconds_per_fgt_unit > 0;
      const double gpu_speed = backend == Backend::cuda ? fgt::kGpuSpeedup : 1.0;
      const double direct_scale = measured ? opt.seconds_per_direct_unit : 1 / gpu_speed;
      const double fgt_scale = measured ? opt.seconds_per_fgt_unit : on_gpu ? 1 / gpu_speed : 1.0;
      stats.predicted_direct *= direct_scale;
      stats.predicted_fgt = g.cost * fgt_scale;
      stats.predicted_ifgt =
          c.p > 0 && !measured ? c.cost : std::numeric_limits<double>::infinity();
      if (method == GaussMethod::automatic) {
        method = GaussMethod::direct;
        double best = stats.predicted_direct;
        if (stats.predicted_fgt < best)
          method = GaussMethod::fgt, best = stats.predicted_fgt;
        if (stats.predicted_ifgt < best)
          method = GaussMethod::ifgt;
      }
      const bool may_hand_over = opt.method == GaussMethod::automatic || opt.hand_over;
      if (method == GaussMethod::fgt) {
        if (!std::isfinite(g.cost))
          throw Error(ErrorCode::unsupported,
                      fmt::format("fgt: a grid of boxes of side ~h over these {}-dimensional "
                                  "points would need more than 4e18 boxes; use ifgt or direct",
                                  d));
        fgt = fgt::build_fgt(zs.data(), n, self ? nullptr : zt.data(), m, int(d), e, g, threads,
                             may_hand_over ? stats.predicted_direct / fgt_scale
                                           : std::numeric_limits<double>::infinity());
        // The model's guess assumed uniform points; the plan knows the real boxes.
        if (may_hand_over && (fgt->stopped || fgt->cost * fgt_scale > stats.predicted_direct)) {
          stats.predicted_fgt = fgt->cost * fgt_scale;
          fgt.reset();
          method = GaussMethod::direct;
        } else {
          zs = {}; // the plan holds the points sorted by box
          zt = {};
          stats.predicted_fgt = fgt->cost * fgt_scale;
          stats.order = fgt->p;
          stats.terms = fgt->terms;
          stats.radius = g.rho;
          for (std::int64_t k = 0; k < d; ++k)
            stats.radius = k == 0 ? g.side[k] / 2 : std::max(stats.radius, g.side[k] / 2);
          stats.error_bound =
              fgt->p > 0 ? std::max(g.estimate, opt.tolerance / 2) : opt.tolerance / 2;
          stats.boxes = fgt->src.boxes() + (self ? 0 : fgt->tgt.boxes());
          stats.pairs_direct = fgt->pairs[0];
          stats.pairs_hermite = fgt->pairs[1];
          stats.pairs_taylor = fgt->pairs[2];
          stats.pairs_translate = fgt->pairs[3];
        }
      } else if (method == GaussMethod::ifgt) {
        try {
          ifgt = fgt::build_ifgt(zs.data(), n, int(d), c.p > 0 ? c.clusters : 1, opt.tolerance,
                                 opt.order, threads);
        } catch (const Error &err) {
          // The model's radius assumed uniform points; automatic falls back to the direct sum.
          if (opt.method != GaussMethod::automatic || err.code() != ErrorCode::unsupported)
            throw;
        }
      }
      if (method == GaussMethod::ifgt && !ifgt) {
        method = GaussMethod::direct;
      } else if (method == GaussMethod::ifgt) {
        stats.order = ifgt->p;
        stats.terms = ifgt->terms;
        stats.radius = ifgt->rx;
        stats.error_bound = std::max(ifgt->bound, opt.tolerance / 2);
        stats.boxes = ifgt->k;
      }
    }
    // The device, now that the host work is done (the CLI starts the driver beside it).
    if (opt.backend == Backend::cuda && !fgt::gpu_available())
      throw Error(ErrorCode::unsupported,
                  "backend gpu: this build of ksum has no CUDA backend or no GPU is visible");
    if (method == GaussMethod::direct) {
      DirectOptions o;
      o.kernel = Kernel::gaussian;
      o.eps = 1 / opt.bandwidth;
      o.backend = opt.backend;
      o.threads = opt.threads;
      o.devices = {opt.device};
      o.progress = opt.progress;
      direct = std::make_unique<DirectSum<T>>(o);
      if (targets)
        direct->set_points(sources, *targets);
      else
        direct->set_points(sources, sources); // every pair, i = j included
      stats.error_bound = 0;
      backend = direct->backend();
    }
    // The GPU serves the direct sum and the FGT; the IFGT runs on the CPU.
    // (Backend gpu without a device threw above.)
    if (backend == Backend::cuda && fgt) {
      if (fgt::gpu_available()) {
        try {
          gpu = fgt::make_fgt_gpu<T>(opt.device);
          gpu->set_plan(*fgt);
        } catch (const Error &e) {
          if (e.code() != ErrorCode::unsupported)
            throw;
          gpu.reset(); // a plan beyond the GPU kernels' sizes runs on the CPU
          backend = Backend::cpu;
        }
      } else {
        backend = Backend::cpu;
      }
    } else if (ifgt) {
      backend = Backend::cpu;
    }
    stats.backend = backend;
    stats.method = method;
    stats.seconds_setup = seconds_since(t0);
    ready = true;
  }
};

template <std::floating_point T>
GaussTransform<T>::GaussTransform(GaussOptions options) : impl_(std::make_unique<Impl>()) {
  if (!std::isfinite(options.bandwidth) || options.bandwidth <= 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("bandwidth h must be finite and > 0, got {}", options.bandwidth));
  const double min_tol = sizeof(T) == 4 ? 1e-6 : 1e-12;
  if (!(options.tolerance >= min_tol && options.tolerance <= 0.5) &&
      options.method != GaussMethod::direct)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("tolerance {} is outside what the Gauss transform reaches in {}: use "
                            "{} … 0.5{}",
                            options.tolerance, precision_name<T>(), min_tol,
                            sizeof(T) == 4 ? " (or double precision for less)" : ""));
  if (options.order < 0 || options.order > fgt::max_order)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("order {} (expected 1 … {}, or 0: from the tolerance)", options.order,
                            fgt::max_order));
  if (options.threads < 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("threads must be >= 0 (0: default), got {}", options.threads));
  if (options.hermite_chunk < 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("hermite_chunk must be >= 0 (0: the task-size model), got {}",
                            options.hermite_chunk));
  if (options.box_chunk < 0)
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("box_chunk must be >= 0 (0: the task-size model), got {}", options.box_chunk));
  for (const auto &[name, v] :
       {std::pair{"seconds_per_direct_unit", options.seconds_per_direct_unit},
        {"seconds_per_fgt_unit", options.seconds_per_fgt_unit}})
    if (!std::isfinite(v) || v < 0)
      throw Error(
          ErrorCode::invalid_argument,
          fmt::format("{} must be finite and >= 0 (0: the fixed cost model), got {}", name, v));
  impl_->opt = std::move(options);
  impl_->threads = impl_->opt.threads > 0 ? impl_->opt.threads : omp_get_max_threads();
}

template <std::floating_point T> GaussTransform<T>::~GaussTransform() = default;
template <std::floating_point T>
GaussTransform<T>::GaussTransform(GaussTransform &&) noexcept = default;
template <std::floating_point T>
GaussTransform<T> &GaussTransform<T>::operator=(GaussTransform &&) noexcept = default;

template <std::floating_point T> void GaussTransform<T>::set_points(const Table<T> &sources) {
  impl_->set(sources, nullptr);
}
template <std::floating_point T>
void GaussTransform<T>::set_points(const Table<T> &sources, const Table<T> &targets) {
  impl_->set(sources, &targets);
}

template <std::floating_point T> Table<T> GaussTransform<T>::execute(const Table<T> &weights) {
  auto &im = *impl_;
  if (!im.ready)
    throw Error(ErrorCode::invalid_argument, "execute: call set_points first");
  if (weights.rows() != im.n)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("weights have {} rows but there are {} sources", weights.rows(), im.n));
  if (weights.cols() < 1)
    throw Error(ErrorCode::invalid_argument, "weights: need at least one column");
  detail::check_finite(weights, "weights");
  const auto t0 = std::chrono::steady_clock::now();
  Table<T> out(im.m, weights.cols());
  if (im.direct) {
    if (im.n > 0 && im.m > 0)
      out = im.direct->execute(weights);
  } else {
    std::vector<double> q(static_cast<std::size_t>(im.n)), u(static_cast<std::size_t>(im.m));
    const double *zy = im.self ? im.zs.data() : im.zt.data();
    for (std::int64_t r = 0; r < weights.cols(); ++r) {
      for (std::int64_t j = 0; j < im.n; ++j)
        q[j] = double(weights(j, r));
      const auto part = [&](double f) {
        if (im.opt.progress)
          im.opt.progress((double(r) + f) / double(weights.cols()));
      };
      if (im.gpu)
        im.gpu->execute(q.data(), u.data());
      else if (im.fgt) {
        // Target boxes per task: fixed, or the task-size model from the loop's per-box cost in the
        // previous call (the boxes are independent; the results do not depend on the size).
        // The same for the source boxes per task of the Hermite expansions.
        const std::int64_t chunk = im.box_chunk.choose(im.threads, im.opt.box_chunk);
        const std::int64_t hchunk = im.hermite_chunk.choose(im.threads, im.opt.hermite_chunk);
        double loop = 0, hermite = 0;
        fgt::execute_fgt(*im.fgt, q.data(), u.data(), im.threads, part, chunk, &loop, hchunk,
                         &hermite);
        im.stats.box_chunk = chunk;
        im.box_chunk.record(im.fgt->targets().boxes(), im.threads, loop, chunk);
        const bool hermite_used = im.stats.pairs_hermite + im.stats.pairs_translate > 0;
        im.stats.hermite_chunk = hermite_used ? hchunk : 0;
        im.stats.seconds_hermite = hermite;
        if (hermite_used)
          im.hermite_chunk.record(im.fgt->src.boxes(), im.threads, hermite, hchunk);
      } else
        fgt::execute_ifgt(*im.ifgt, q.data(), zy, im.m, u.data(), im.threads, part);
      for (std::int64_t i = 0; i < im.m; ++i)
        out(i, r) = static_cast<T>(u[i]);
    }
    if (im.opt.progress)
      im.opt.progress(1.0);
  }
  im.stats.seconds_execute = seconds_since(t0);
  return out;
}

template <std::floating_point T> std::int64_t GaussTransform<T>::dimension() const {
  return impl_->d;
}
template <std::floating_point T> std::int64_t GaussTransform<T>::num_sources() const {
  return impl_->n;
}
template <std::floating_point T> std::int64_t GaussTransform<T>::num_targets() const {
  return impl_->m;
}
template <std::floating_point T> const GaussOptions &GaussTransform<T>::options() const {
  return impl_->opt;
}
template <std::floating_point T> const GaussStats &GaussTransform<T>::stats() const {
  return impl_->stats;
}

template class GaussTransform<float>;
template class GaussTransform<double>;

} // namespace ksum
