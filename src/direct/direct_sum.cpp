// The DirectSum plan: validates inputs (naming the offending index), scales coordinates once, picks
// the backend and hands the work to the CPU or CUDA engine.
#include "core/validate.hpp"
#include "direct/direct_problem.hpp"
#include "direct/method_model.hpp"
#include "fmm/fmm3d/bbfmm.hpp"
#include "kernels/kernel_defs.hpp"

#include <ksum/device.hpp>
#include <ksum/direct.hpp>
#include <ksum/error.hpp>
#include <ksum/fgt.hpp>
#include <ksum/fmm2d.hpp>
#include <ksum/tasksize.hpp>

#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <utility>

namespace ksum {

Backend parse_backend(std::string_view name) {
  if (name == "auto")
    return Backend::automatic;
  if (name == "cpu")
    return Backend::cpu;
  if (name == "gpu" || name == "cuda")
    return Backend::cuda;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown backend '{}'; valid: auto, cpu, gpu", name));
}

std::string_view to_string(Backend b) {
  switch (b) {
  case Backend::automatic:
    return "auto";
  case Backend::cpu:
    return "cpu";
  case Backend::cuda:
    return "gpu";
  }
  return "?";
}

Method parse_method(std::string_view name) {
  if (name == "direct")
    return Method::direct;
  if (name == "fmm")
    return Method::fmm;
  if (name == "fgt")
    return Method::fgt;
  if (name == "auto")
    return Method::automatic;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown method '{}'; valid: direct, fmm, fgt, auto", name));
}

std::string_view to_string(Method m) {
  switch (m) {
  case Method::direct:
    return "direct";
  case Method::fmm:
    return "fmm";
  case Method::automatic:
    return "auto";
  case Method::fgt:
    return "fgt";
  }
  return "?";
}

using detail::check_finite;

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
} // namespace

template <std::floating_point T> struct DirectSum<T>::Impl {
  DirectOptions opt;
  Backend backend = Backend::cpu;
  bool self = false;
  std::int64_t n = 0, m = 0, d = 0;
  Table<T> src, tgt; // scaled copies; tgt is empty when self
  std::unique_ptr<detail::CudaDirect<T>> cuda;
  std::unique_ptr<fmm::BbFmm> fmm;          // set when the FMM serves the plan
  std::unique_ptr<Fmm2d<T>> fmm2;           // set when the 2D FMM serves the plan (log kernel)
  std::unique_ptr<GaussTransform<T>> gauss; // set when the fast Gauss transform serves the plan
  SumStats stats;

  detail::DirectProblem<T> problem(const T *w, std::int64_t nrhs) const {
    detail::DirectProblem<T> p;
    p.kernel = opt.kernel;
    p.gradient = opt.gradient;
    p.self = self;
    p.grad_scale = static_cast<T>(2 * kdef::coord_scale(opt.kernel, opt.eps));
    p.n = n;
    p.m = m;
    p.d = d;
    p.nrhs = nrhs;
    p.src = src.data();
    p.tgt = self ? src.data() : tgt.data();
    p.w = w;
    return p;
  }

  // 2D: the adaptive FMM of seed 004 Paper IV with the log kernel, −log(ε r) = −Re log(ε (x − y))
  // in complex notation; coordinates are scaled by ε so coincident points still contribute 0.
  void set_fmm2d(const Table<T> &sources, const Table<T> *targets, Backend chosen,
                 std::chrono::steady_clock::time_point t_setup) {
    if (opt.kernel != Kernel::log)
      throw Error(ErrorCode::unsupported,
                  fmt::format("the 2D FMM serves the log kernel (and the harmonic kernel of "
                              "ksum::Fmm2d); kernel {} in 2D needs method direct",
                              kernel_info(opt.kernel).name));
    if (opt.gradient)
      throw Error(ErrorCode::unsupported,
                  "the FMM computes values only; use method direct for the gradient");
    Fmm2dOptions fo;
    fo.kernel = Fmm2dKernel::log;
    fo.tolerance = opt.tolerance;
    fo.backend = chosen;
    fo.threads = opt.threads;
    auto f = std::make_unique<Fmm2d<T>>(fo);
    const T c = static_cast<T>(opt.eps);
    const auto complexify = [c](const Table<T> &t) {
      std::vector<std::complex<T>> z(static_cast<std::size_t>(t.rows()));
      for (std::int64_t i = 0; i < t.rows(); ++i)
        z[i] = {c * t(i, 0), c * t(i, 1)};
      return z;
    };
    const auto zs = complexify(sources);
    if (targets)
      f->set_points(zs, complexify(*targets));
    else
      f->set_points(zs);
    self = targets == nullptr;
    n = sources.rows();
    d = 2;
    m = targets ? targets->rows() : n;
    src = Table<T>();
    tgt = Table<T>();
    backend = chosen;
    fmm.reset();
    gauss.reset();
    fmm2 = std::move(f);
    const auto &fs = fmm2->stats();
    stats = SumStats{.method = Method::fmm,
                     .fmm_order = fs.order,
                     .tree_depth = fs.levels,
                     .tree_boxes = (std::int64_t(1) << (2 * fs.levels)) / 3,
                     .seconds_setup = seconds_since(t_setup),
                     .seconds_tree = fs.seconds_partition};
  }

  // Where method auto's rates came from, for its notes.
  static const char *rates_source(const detail::AutoChoice &c) {
    return c.cached ? "rates timed on this machine earlier, from the cache methods.json"
                    : "rates timed on this machine";
  }

  // "direct 1.61 s, fmm 0.43 s, fgt 0.052 s": the candidates' predicted times.
  static std::string predicted_times(const detail::AutoChoice &c) {
    std::string s = fmt::format("direct {:.3g} s", c.direct_seconds);
    if (std::isfinite(c.fmm_seconds))
      s += fmt::format(", fmm {:.3g} s", c.fmm_seconds);
    if (std::isfinite(c.fgt_seconds))
      s += fmt::format(", fgt {:.3g} s", c.fgt_seconds);
    return s;
  }

  // The gaussian kernel exp(−(ε r)²) is the Gauss transform's exp(−r²/h²) with h = 1/ε. Its self
  // mode counts the pair i = j (exp(0) = 1), which execute() takes out again: û_i −= w_i.
  static GaussOptions gauss_options(const DirectOptions &o,
                                    const detail::AutoChoice *measured = nullptr) {
    GaussOptions g;
    if (measured) {
      g.seconds_per_direct_unit = measured->seconds_per_direct_unit;
      g.seconds_per_fgt_unit = measured->seconds_per_fgt_unit;
    }
    g.bandwidth = 1 / o.eps;
    g.tolerance = o.tolerance;
    g.method = GaussMethod::fgt;
    g.hand_over = !o.force_method;
    g.backend = o.backend;
    g.threads = o.threads;
    g.device = o.devices.empty() ? 0 : o.devices.front();
    g.progress = o.progress;
    return g;
  }

  // The 3D FMM's GPUs: those listed, or from fmm_all_gpus_from targets on every visible one (each
  // runs the whole upward pass and its share of the rest; below that size one GPU's execute is
  // mostly launches, which a second GPU would repeat rather than share), else the first.
  static constexpr std::int64_t fmm_all_gpus_from = std::int64_t{1} << 22;
  static std::vector<int> fmm_devices(const DirectOptions &o, std::int64_t targets) {
    if (!o.devices.empty())
      return o.devices;
    const int visible = targets >= fmm_all_gpus_from ? gpu_count() : 1;
    std::vector<int> ids;
    for (int id = 0; id < std::max(visible, 1); ++id)
      ids.push_back(id);
    return ids;
  }

  // The FGT plan, or (returning false, with `note` set) nothing when its cost model predicts the
  // direct sum cheaper and force_method is off.
  bool set_fgt(const Table<T> &sources, const Table<T> *targets,
               std::chrono::steady_clock::time_point t_setup, std::string &note,
               const detail::AutoChoice *measured = nullptr) {
    auto g = std::make_unique<GaussTransform<T>>(gauss_options(opt, measured));
    if (targets)
      g->set_points(sources, *targets);
    else
      g->set_points(sources);
    {
      const auto &gs = g->stats();
      if (gs.method == GaussMethod::direct) { // handed over (GaussOptions::hand_over)
        if (measured)
          note = fmt::format("method auto: the fast Gauss transform's plan for these points "
                             "predicts {:.3g} s against the direct sum's {:.3g} s ({}), so the "
                             "direct sum ran",
                             gs.predicted_fgt, gs.predicted_direct, rates_source(*measured));
        else
          note = fmt::format("method fgt: at h = {:.3g}, tol {:.1e} and these points the fast "
                             "Gauss transform's cost model predicts the direct sum cheaper ({:.3g} "
                             "against {:.3g}, in the model's units), so the direct sum ran "
                             "(force_method / --force-method runs the FGT)",
                             1 / opt.eps, opt.tolerance, gs.predicted_fgt, gs.predicted_direct);
        return false;
      }
    }
    self = targets == nullptr;
    n = sources.rows();
    d = sources.cols();
    m = targets ? targets->rows() : n;
    src = Table<T>();
    tgt = Table<T>();
    fmm.reset();
    fmm2.reset();
    gauss = std::move(g);
    const auto &gs = gauss->stats();
    backend = gs.backend;
    stats = SumStats{.method = Method::fgt,
                     .fmm_order = gs.order,
                     .tree_boxes = gs.boxes,
                     .estimated_error = gs.error_bound,
                     .seconds_setup = seconds_since(t_setup)};
    return true;
  }

  // Validates and prepares everything in locals and commits only when nothing has thrown, so a
  // failed set_points leaves the plan as it was (or, if the GPU upload itself failed, unusable
  // until the next set_points, never silently stale).
  void set(const Table<T> &sources, const Table<T> *targets) {
    if (sources.cols() < 1)
      throw Error(ErrorCode::invalid_argument,
                  "sources: dimension must be at least 1 (no columns)");
    if (targets && targets->cols() != sources.cols())
      throw Error(ErrorCode::shape_mismatch,
                  fmt::format("targets have {} columns but sources have {}: the dimensions differ",
                              targets->cols(), sources.cols()));
    check_finite(sources, "sources");
    if (targets)
      check_finite(*targets, "targets");
    std::string note; // a handover from the method asked for
    if (opt.method == Method::fgt &&
        set_fgt(sources, targets, std::chrono::steady_clock::now(), note))
      return;
    const std::int64_t dim = sources.cols();
    Backend chosen = opt.backend;
    if (chosen == Backend::automatic)
      chosen = (gpu_count() > 0 && dim <= detail::gpu_max_dim) ? Backend::cuda : Backend::cpu;
    if (chosen == Backend::cuda && dim > detail::gpu_max_dim)
      throw Error(ErrorCode::unsupported,
                  fmt::format("the GPU direct sum handles dimension up to {}, got {}; use the "
                              "cpu backend",
                              detail::gpu_max_dim, dim));
    const auto t_setup = std::chrono::steady_clock::now();
    const std::int64_t nt = targets ? targets->rows() : sources.rows();
    Method method = opt.method == Method::fgt ? Method::direct : opt.method;
    if (method == Method::automatic) {
      const auto choice = detail::choose_method(opt, chosen, sources, targets);
      method = choice.method;
      std::string why;
      const char *source = rates_source(choice);
      if (choice.timed && choice.direct_seconds < detail::kTimeFastMethodsAbove)
        why = fmt::format("method auto chose direct: predicted {:.3g} s ({}), too short to pay for "
                          "timing the fast methods",
                          choice.direct_seconds, source);
      else if (choice.timed)
        why = fmt::format("method auto chose {}: predicted {} ({})", to_string(method),
                          predicted_times(choice), source);
      if (method == Method::fgt) {
        if (set_fgt(sources, targets, t_setup, note, &choice)) {
          stats.note = std::move(why);
          return;
        }
        // The plan's real boxes predicted the FGT slower than the direct sum: the next fastest.
        if (choice.fmm_seconds < choice.direct_seconds) {
          method = Method::fmm;
          note = fmt::format("method auto: the fast Gauss transform's plan for these points "
                             "predicted more than the direct sum, so the FMM ran (predicted {}; "
                             "{})",
                             predicted_times(choice), source);
        } else {
          method = Method::direct;
        }
      } else {
        note = std::move(why);
      }
    }
    if (method == Method::fmm && dim == 2) {
      set_fmm2d(sources, targets, chosen, t_setup);
      return;
    }
    if (method == Method::fmm) {
      if (dim != 3)
        throw Error(ErrorCode::unsupported,
                    fmt::format("the FMM is for points in 2D (log kernel) and 3D; these have "
                                "dimension {} (use method direct)",
                                dim));
      if (opt.gradient)
        throw Error(ErrorCode::unsupported,
                    "the FMM computes values only; use method direct for the gradient");
      auto f = std::make_unique<fmm::BbFmm>(fmm::BbFmmOptions{
          .kernel = opt.kernel,
          .eps = opt.eps,
          .tolerance = opt.tolerance,
          .order = opt.fmm_order,
          .leaf_size = opt.fmm_leaf_size,
          .threads = opt.threads,
          .near_chunk = opt.fmm_near_chunk,
          .m2l_chunk = opt.fmm_m2l_chunk,
          .pass_chunk = opt.fmm_pass_chunk,
          .compress_m2l = opt.fmm_lowrank,
          .mixed_precision = opt.fmm_mixed_precision,
          .compress_m2l_gpu =
              opt.fmm_lowrank_gpu && std::max(sources.rows(), nt) >= opt.fmm_lowrank_gpu_from,
          .gpu = chosen == Backend::cuda,
          .gpu_single = sizeof(T) == 4,
          .device = opt.devices.empty() ? 0 : opt.devices.front(),
          .devices = chosen == Backend::cuda ? fmm_devices(opt, nt) : std::vector<int>{}});
      const auto s64 = sources.template cast<double>();
      const auto t64 = targets ? targets->template cast<double>() : Table<double>();
      f->set_points(s64.data(), s64.rows(), targets ? t64.data() : nullptr, t64.rows());
      self = targets == nullptr;
      n = sources.rows();
      d = dim;
      m = nt;
      src = Table<T>();
      tgt = Table<T>();
      backend = chosen;
      fmm = std::move(f);
      fmm2.reset();
      gauss.reset();
      const auto &fs = fmm->stats();
      stats = SumStats{.method = Method::fmm,
                       .fmm_order = fs.order,
                       .tree_depth = fs.depth,
                       .tree_boxes = fs.boxes,
                       .estimated_error = fs.estimated_error,
                       .fmm_m2l_rank = fs.m2l_rank,
                       .fmm_mixed_precision = fs.mixed_precision,
                       .fmm_leaf_size = fs.leaf_size,
                       .seconds_setup = seconds_since(t_setup),
                       .seconds_tree = fs.seconds_tree,
                       .seconds_sort = fs.tree_phases.sort,
                       .seconds_operators = fs.seconds_operators};
      stats.note = std::move(note);
      return;
    }
    const T c = static_cast<T>(kdef::coord_scale(opt.kernel, opt.eps));
    auto scaled = [c](const Table<T> &t, const char *what) {
      Table<T> s(t.rows(), t.cols());
      for (std::int64_t k = 0; k < t.rows() * t.cols(); ++k) {
        s.data()[k] = c * t.data()[k];
        if (!std::isfinite(s.data()[k]))
          throw Error(ErrorCode::invalid_argument,
                      fmt::format("{}: eps = {} times the coordinate {} at row {} overflows the {} "
                                  "range",
                                  what, static_cast<double>(c), static_cast<double>(t.data()[k]),
                                  k % t.rows(), sizeof(T) == 4 ? "float32" : "float64"));
      }
      return s;
    };
    Table<T> new_src = scaled(sources, "sources");
    Table<T> new_tgt = targets ? scaled(*targets, "targets") : Table<T>();
    if (chosen == Backend::cuda && !cuda)
      cuda = detail::make_cuda_direct<T>(opt.devices, opt.device_memory_limit);

    self = targets == nullptr;
    n = sources.rows();
    d = dim;
    m = self ? n : targets->rows();
    src = std::move(new_src);
    tgt = std::move(new_tgt);
    backend = chosen;
    fmm.reset();
    fmm2.reset();
    gauss.reset();
    if (backend == Backend::cuda) {
      try {
        cuda->set_geometry(problem(nullptr, 0));
      } catch (...) {
        d = 0; // execute() now asks for set_points instead of using half-uploaded geometry
        throw;
      }
    }
    stats = SumStats{.method = Method::direct, .seconds_setup = seconds_since(t_setup)};
    stats.note = std::move(note);
  }
};

template <std::floating_point T>
DirectSum<T>::DirectSum(DirectOptions options) : impl_(std::make_unique<Impl>()) {
  if (!std::isfinite(options.eps) || options.eps <= 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("shape parameter eps must be finite and > 0, got {}", options.eps));
  if (options.threads < 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("threads must be >= 0 (0: default), got {}", options.threads));
  if (options.method == Method::fgt) {
    if (options.kernel != Kernel::gaussian)
      throw Error(ErrorCode::unsupported,
                  fmt::format("method fgt is the fast Gauss transform: it serves the gaussian "
                              "kernel only; kernel {} needs method direct (or fmm in 2D/3D)",
                              kernel_info(options.kernel).name));
    if (options.gradient)
      throw Error(ErrorCode::unsupported,
                  "method fgt computes values only; use method direct for the gradient");
    GaussTransform<T> check(Impl::gauss_options(options)); // its tolerance range and threads
  }
  const double min_tol = std::is_same_v<T, float> ? 1e-6 : 1e-11;
  if (!(options.tolerance >= min_tol && options.tolerance <= 0.1) &&
      options.method != Method::direct && options.method != Method::fgt)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("tolerance {} is outside what the FMM reaches in {}: use {} … 0.1{}",
                            options.tolerance, std::is_same_v<T, float> ? "float32" : "float64",
                            min_tol,
                            std::is_same_v<T, float> ? " (or double precision for less)" : ""));
  if (options.fmm_order != 0 && (options.fmm_order < 2 || options.fmm_order > 16))
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("fmm_order {} (expected 2 … 16, or 0: from the tolerance)", options.fmm_order));
  if (options.cpu_block < 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("cpu_block must be >= 0 (0: chosen by the task-size model), got {}",
                            options.cpu_block));
  if (options.fmm_leaf_size < 0)
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("fmm_leaf_size must be >= 0 (0: automatic), got {}", options.fmm_leaf_size));
  for (const auto &[name, v] : {std::pair{"fmm_near_chunk", options.fmm_near_chunk},
                                {"fmm_m2l_chunk", options.fmm_m2l_chunk},
                                {"fmm_pass_chunk", options.fmm_pass_chunk}})
    if (v < 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{} must be >= 0 (0: the task-size model), got {}", name, v));
  if (options.device_memory_limit < 0)
    throw Error(ErrorCode::invalid_argument, fmt::format("device_memory_limit must be >= 0, got {}",
                                                         options.device_memory_limit));
  impl_->opt = std::move(options);
}

template <std::floating_point T> DirectSum<T>::~DirectSum() = default;
template <std::floating_point T> DirectSum<T>::DirectSum(DirectSum &&) noexcept = default;
template <std::floating_point T>
DirectSum<T> &DirectSum<T>::operator=(DirectSum &&) noexcept = default;

template <std::floating_point T> void DirectSum<T>::set_points(const Table<T> &sources) {
  impl_->set(sources, nullptr);
}

template <std::floating_point T>
void DirectSum<T>::set_points(const Table<T> &sources, const Table<T> &targets) {
  impl_->set(sources, &targets);
}

template <std::floating_point T> Table<T> DirectSum<T>::execute(const Table<T> &weights) {
  auto &im = *impl_;
  if (im.d == 0)
    throw Error(ErrorCode::invalid_argument, "execute: call set_points first");
  if (weights.rows() != im.n)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("weights have {} rows but there are {} sources", weights.rows(), im.n));
  if (weights.cols() < 1)
    throw Error(ErrorCode::invalid_argument, "weights: need at least one column");
  check_finite(weights, "weights");
  const auto t_exec = std::chrono::steady_clock::now();
  const auto p = im.problem(weights.data(), weights.cols());
  // Zeros written by all threads: one thread's first touch of 10^8 values took a few tenths of a
  // second, and a GPU's download into untouched pages faults them in one by one. (The Gauss
  // transform returns its own table, which replaces this one.)
  Table<T> out(im.m, p.out_cols(), Uninitialized{});
  if (!im.gauss) {
    const std::int64_t size = out.rows() * out.cols();
    T *o = out.data();
#pragma omp parallel for schedule(static) if (size > 100000)
    for (std::int64_t k = 0; k < size; ++k)
      o[k] = T(0);
  }
  if (im.gauss) {
    out = im.gauss->execute(weights);
    if (im.self)
      for (std::int64_t r = 0; r < weights.cols(); ++r)
        for (std::int64_t i = 0; i < im.n; ++i)
          out(i, r) -= weights(i, r);
  } else if (im.fmm2) {
    // Two right-hand sides per complex pass: u = −Re Σ q log(z − z_j) per column.
    im.stats.seconds_upward = im.stats.seconds_downward = im.stats.seconds_near = 0;
    for (std::int64_t r = 0; r < weights.cols(); r += 2) {
      std::vector<std::complex<T>> q(static_cast<std::size_t>(im.n));
      for (std::int64_t j = 0; j < im.n; ++j)
        q[j] = {weights(j, r), r + 1 < weights.cols() ? weights(j, r + 1) : T(0)};
      const auto u = im.fmm2->execute(q);
      for (std::int64_t i = 0; i < im.m; ++i) {
        out(i, r) = -u[i].real();
        if (r + 1 < weights.cols())
          out(i, r + 1) = -u[i].imag();
      }
      const auto &fs = im.fmm2->stats();
      im.stats.seconds_upward += fs.seconds_upward;
      im.stats.seconds_downward += fs.seconds_downward;
      im.stats.seconds_near += fs.seconds_near;
    }
    if (im.opt.progress)
      im.opt.progress(1.0);
  } else if (im.fmm) {
    if (im.m > 0 && im.n > 0) {
      im.fmm->apply(weights.data(), weights.cols(), out.data());
      const auto &fs = im.fmm->stats();
      im.stats.seconds_upward = fs.seconds_upward;
      im.stats.seconds_m2l = fs.seconds_m2l;
      im.stats.seconds_downward = fs.seconds_downward;
      im.stats.seconds_near = fs.seconds_near;
      im.stats.seconds_transfer = fs.seconds_transfer;
      im.stats.fmm_near_chunk = fs.near_chunk;
      im.stats.fmm_m2l_chunk = fs.m2l_chunk;
      im.stats.fmm_pass_chunk = fs.pass_chunk;
    }
    if (im.opt.progress)
      im.opt.progress(1.0);
  } else if (im.m > 0 && im.n > 0) {
    if (im.backend == Backend::cuda)
      im.cuda->execute(p, out.data(), im.opt.progress);
    else {
      im.stats.cpu_block = std::clamp<std::int64_t>(
          im.opt.cpu_block > 0 ? im.opt.cpu_block
                               : tasksize::direct_cpu_block(im.m, im.n, im.opt.threads),
          1, im.m);
      detail::cpu_direct(p, out.data(), im.opt.threads, im.opt.progress, im.stats.cpu_block);
    }
  }
  const std::int64_t size = out.rows() * out.cols();
  std::int64_t bad = size;
#pragma omp parallel for reduction(min : bad) schedule(static) if (size > 100000)
  for (std::int64_t k = 0; k < size; ++k)
    if (!std::isfinite(out.data()[k]) && k < bad)
      bad = k;
  for (std::int64_t k = bad; k < size; ++k)
    if (!std::isfinite(out.data()[k]))
      throw Error(ErrorCode::non_finite,
                  fmt::format("the sum overflowed the {} range at target {}, column {}; try "
                              "double precision or smaller weights",
                              sizeof(T) == 4 ? "float32" : "float64", k % im.m, k / im.m));
  im.stats.seconds_execute = seconds_since(t_exec);
  return out;
}

template <std::floating_point T>
Table<T> DirectSum<T>::execute(const Table<T> &weights, bool gradient) {
  auto &im = *impl_;
  if (gradient == im.opt.gradient)
    return execute(weights);
  if (gradient && (im.fmm || im.fmm2 || im.gauss))
    throw Error(ErrorCode::unsupported,
                fmt::format("method {} computes values only; use method direct for the gradient",
                            to_string(im.stats.method)));
  // The scaled geometry does not depend on the gradient: only the problem's output columns do.
  struct Restore {
    bool &flag;
    bool value;
    ~Restore() { flag = value; }
  } restore{im.opt.gradient, im.opt.gradient};
  im.opt.gradient = gradient;
  return execute(weights);
}

template <std::floating_point T> Backend DirectSum<T>::backend() const {
  return impl_->backend;
}
template <std::floating_point T> std::int64_t DirectSum<T>::dimension() const {
  return impl_->d;
}
template <std::floating_point T> std::int64_t DirectSum<T>::num_sources() const {
  return impl_->n;
}
template <std::floating_point T> std::int64_t DirectSum<T>::num_targets() const {
  return impl_->m;
}
template <std::floating_point T> const DirectOptions &DirectSum<T>::options() const {
  return impl_->opt;
}
template <std::floating_point T> const SumStats &DirectSum<T>::stats() const {
  return impl_->stats;
}

template class DirectSum<float>;
template class DirectSum<double>;

} // namespace ksum
