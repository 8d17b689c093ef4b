// ksum::mc::Engine, the energy library of seed 004 Paper I: validates systems and moves, keeps the
// host mirror of the resident system and dispatches to the CPU (engine_cpu.cpp) or GPU
// (engine_gpu.cpp) backend.
#include "mc/engine_cpu.hpp"
#include "mc/engine_gpu.hpp"
#include "mc/potential.hpp"
#include "mc/proposal.hpp"

#include <ksum/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <optional>
#include <utility>

namespace ksum::mc {

namespace {

constexpr const char *axis_name[3] = {"x", "y", "z"};

void check_sizes(const System &s) {
  const std::size_t n = s.x.size();
  if (s.y.size() != n || s.z.size() != n || s.charge.size() != n || s.radius.size() != n)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("system arrays differ in size: x {}, y {}, z {}, charge {}, radius {}",
                            n, s.y.size(), s.z.size(), s.charge.size(), s.radius.size()));
  if (!s.species.empty() && s.species.size() != n)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("system species has {} entries for {} particles (give one per "
                            "particle or none)",
                            s.species.size(), n));
}

void check_values(const System &s) {
  const std::pair<const char *, const std::vector<double> *> fields[] = {
      {"x", &s.x}, {"y", &s.y}, {"z", &s.z}, {"charge", &s.charge}, {"radius", &s.radius}};
  for (std::int64_t i = 0; i < s.size(); ++i) {
    for (const auto &[name, v] : fields)
      if (!std::isfinite((*v)[i]))
        throw Error(ErrorCode::non_finite,
                    fmt::format("particle {}: {} = {} is not finite", i, name, (*v)[i]));
    if (s.radius[i] < 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("particle {}: radius = {} is negative", i, s.radius[i]));
  }
}

void check_bonds(const System &s) {
  const std::int64_t n = s.size();
  const auto nb = static_cast<std::int64_t>(s.bonds.size());
  std::vector<std::pair<std::array<std::int64_t, 2>, std::int64_t>> sorted(nb);
  for (std::int64_t b = 0; b < nb; ++b) {
    const auto [i, j] = s.bonds[b];
    if (i < 0 || i >= n || j < 0 || j >= n)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("bond {} ({}, {}) names a particle outside [0, {})", b, i, j, n));
    if (i == j)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("bond {} joins particle {} to itself", b, i));
    sorted[b] = {{std::min(i, j), std::max(i, j)}, b};
  }
  std::sort(sorted.begin(), sorted.end());
  for (std::int64_t b = 1; b < nb; ++b)
    if (sorted[b].first == sorted[b - 1].first)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("bonds {} and {} both join particles {} and {}", sorted[b - 1].second,
                              sorted[b].second, sorted[b].first[0], sorted[b].first[1]));
}

// Hard spheres that cannot all fit: told before the pair-by-pair overlap search. Both bounds are
// necessary conditions only (they never refuse a system that has a valid configuration): in a
// sphere of radius R_c, balls centred within R_c lie within R_c + R_max; in a periodic box, balls
// of radius min(R_i, L_min/2) around non-overlapping centres are disjoint in the torus.
void check_fit(const System &s, const Potential &pot, const Cell &cell) {
  if (pot.short_range != ShortRange::hard_sphere || s.size() == 0)
    return;
  const double ball = 4 * std::numbers::pi / 3;
  if (cell.boundary == Boundary::sphere) {
    double sum = 0, rmax = 0;
    for (const double r : s.radius) {
      sum += ball * r * r * r;
      rmax = std::max(rmax, r);
    }
    const double reach = cell.radius + rmax, room = ball * reach * reach * reach;
    if (sum > room)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{} hard spheres of total volume {:.6g} do not fit in a spherical "
                              "cell of radius {} (volume {:.6g} within reach of its largest "
                              "sphere, radius {} + {})",
                              s.size(), sum, cell.radius, room, cell.radius, rmax));
  } else if (cell.boundary == Boundary::periodic) {
    const double half = 0.5 * std::min({cell.box[0], cell.box[1], cell.box[2]});
    double sum = 0;
    for (const double r : s.radius) {
      const double rc = std::min(r, half);
      sum += ball * rc * rc * rc;
    }
    const double room = cell.box[0] * cell.box[1] * cell.box[2];
    if (sum > room)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{} hard spheres of total volume {:.6g} do not fit in the periodic "
                              "box {} x {} x {} (volume {:.6g})",
                              s.size(), sum, cell.box[0], cell.box[1], cell.box[2], room));
  }
}

// Periodic positions into [0, L); in a spherical cell every centre must be inside (in double and
// in the engine's precision T, which is what the pair code will test).
template <class T> void place_in_cell(System &s, const Cell &cell, const PairParams<T> &p) {
  if (cell.boundary == Boundary::periodic) {
    for (std::int64_t i = 0; i < s.size(); ++i) {
      s.x[i] = wrap(s.x[i], cell.box[0]);
      s.y[i] = wrap(s.y[i], cell.box[1]);
      s.z[i] = wrap(s.z[i], cell.box[2]);
    }
  } else if (cell.boundary == Boundary::sphere) {
    for (std::int64_t i = 0; i < s.size(); ++i) {
      const double r = std::sqrt(s.x[i] * s.x[i] + s.y[i] * s.y[i] + s.z[i] * s.z[i]);
      if (r > cell.radius ||
          outside_cell(p, static_cast<T>(s.x[i]), static_cast<T>(s.y[i]), static_cast<T>(s.z[i])))
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("particle {} at ({}, {}, {}) is outside the spherical cell: |x| = "
                                "{} > radius {}",
                                i, s.x[i], s.y[i], s.z[i], r, cell.radius));
    }
  }
}

// Overlapping hard spheres or coincident particles at the start (the engine's precision T decides,
// as it will in every ΔU). A grid of cells no narrower than the largest contact distance (plus the
// rounding of T) keeps it O(N log N): only particles in neighbouring cells can overlap.
template <class T>
void check_overlaps(const System &s, const PairParams<T> &p, bool hard, const Cell &cell) {
  const std::int64_t n = s.size();
  if (n < 2)
    return;
  const std::vector<T> x(s.x.begin(), s.x.end()), y(s.y.begin(), s.y.end()),
      z(s.z.begin(), s.z.end());
  const bool periodic = p.periodic != 0;
  double lo[3], hi[3], rmax = 0, scale = 0;
  const std::vector<double> *c[3] = {&s.x, &s.y, &s.z};
  for (int a = 0; a < 3; ++a) {
    const auto [mn, mx] = std::minmax_element(c[a]->begin(), c[a]->end());
    lo[a] = periodic ? 0 : *mn;
    hi[a] = periodic ? cell.box[a] : *mx;
    scale = std::max({scale, std::abs(lo[a]), std::abs(hi[a])});
  }
  if (hard)
    rmax = *std::max_element(s.radius.begin(), s.radius.end());
  constexpr double max_cells = 1 << 20;
  const double h = 2 * rmax * (1 + 1e-6) + 16 * std::numeric_limits<T>::epsilon() * scale;
  std::int64_t nc[3];
  double w[3];
  for (int a = 0; a < 3; ++a) {
    const double ext = hi[a] - lo[a];
    if (!std::isfinite(ext))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("particle positions along {} span {} to {}: farther apart than a "
                              "double can hold",
                              axis_name[a], lo[a], hi[a]));
    if (periodic) {
      nc[a] = h > 0 ? static_cast<std::int64_t>(std::clamp(std::floor(ext / h), 1.0, max_cells))
                    : static_cast<std::int64_t>(max_cells);
      w[a] = ext / static_cast<double>(nc[a]);
    } else {
      w[a] = std::max(h, ext / max_cells);
      if (!(w[a] > 0))
        w[a] = 1;
      nc[a] = static_cast<std::int64_t>(std::floor(ext / w[a])) + 1;
    }
  }
  const auto cell_of = [&](std::int64_t i, int a) {
    const auto k = static_cast<std::int64_t>(std::floor(((*c[a])[i] - lo[a]) / w[a]));
    return std::clamp<std::int64_t>(k, 0, nc[a] - 1);
  };
  const auto key = [&](std::int64_t cx, std::int64_t cy, std::int64_t cz) {
    return (cx * nc[1] + cy) * nc[2] + cz;
  };
  std::vector<std::pair<std::int64_t, std::int64_t>> sorted(n);
  for (std::int64_t i = 0; i < n; ++i)
    sorted[i] = {key(cell_of(i, 0), cell_of(i, 1), cell_of(i, 2)), i};
  std::sort(sorted.begin(), sorted.end());
  std::int64_t near[27];
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t ci[3] = {cell_of(i, 0), cell_of(i, 1), cell_of(i, 2)};
    int count = 0;
    for (int dx = -1; dx <= 1; ++dx)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dz = -1; dz <= 1; ++dz) {
          std::int64_t cc[3] = {ci[0] + dx, ci[1] + dy, ci[2] + dz};
          bool inside = true;
          for (int a = 0; a < 3; ++a) {
            if (periodic)
              cc[a] = (cc[a] + nc[a]) % nc[a];
            else
              inside = inside && cc[a] >= 0 && cc[a] < nc[a];
          }
          if (inside)
            near[count++] = key(cc[0], cc[1], cc[2]);
        }
    std::sort(near, near + count);
    count = static_cast<int>(std::unique(near, near + count) - near);
    for (int k = 0; k < count; ++k) {
      auto it = std::lower_bound(sorted.begin(), sorted.end(), std::pair{near[k], std::int64_t(0)});
      for (; it != sorted.end() && it->first == near[k]; ++it) {
        const std::int64_t j = it->second;
        if (j <= i)
          continue;
        const T r2 = distance2(p, x[i] - x[j], y[i] - y[j], z[i] - z[j]);
        const T sigma = static_cast<T>(s.radius[i] + s.radius[j]);
        int o = 0;
        pair_energy(p, r2, T(0), sigma, o);
        if (o == 0)
          continue;
        if (r2 <= T(0))
          throw Error(ErrorCode::invalid_argument,
                      fmt::format("particles {} and {} coincide at the start (at ({}, {}, {}))", i,
                                  j, s.x[i], s.y[i], s.z[i]));
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("hard spheres {} and {} overlap at the start: distance {} < "
                                "contact distance {} (R_{} + R_{})",
                                i, j, std::sqrt(static_cast<double>(r2)), s.radius[i] + s.radius[j],
                                i, j));
      }
    }
  }
}

template <class T> void check_bonds_intact(const System &s, const PairParams<T> &p) {
  if (p.bond != 2)
    return;
  for (std::size_t b = 0; b < s.bonds.size(); ++b) {
    const auto [i, j] = s.bonds[b];
    const T r2 = distance2(p, static_cast<T>(s.x[i]) - static_cast<T>(s.x[j]),
                           static_cast<T>(s.y[i]) - static_cast<T>(s.y[j]),
                           static_cast<T>(s.z[i]) - static_cast<T>(s.z[j]));
    int o = 0;
    bond_energy(p, r2, o);
    if (o != 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("FENE bond {} between particles {} and {} is broken at the start: "
                              "length {} >= r_max {}",
                              b, i, j, std::sqrt(static_cast<double>(r2)),
                              static_cast<double>(p.bond_rmax)));
  }
}

void check_move(const Move &move, std::int64_t n) {
  const auto m = static_cast<std::int64_t>(move.particles.size());
  if (static_cast<std::int64_t>(move.xyz.size()) != 3 * m)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("move: xyz has {} values for {} particles (3 per particle)",
                            move.xyz.size(), m));
  for (std::int64_t k = 0; k < m; ++k) {
    const std::int64_t i = move.particles[k];
    if (i < 0 || i >= n)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("move: particle index {} (entry {}) is outside [0, {})", i, k, n));
    for (int a = 0; a < 3; ++a)
      if (!std::isfinite(move.xyz[3 * k + a]))
        throw Error(ErrorCode::non_finite,
                    fmt::format("move: particle {}: new {} = {} is not finite", i, axis_name[a],
                                move.xyz[3 * k + a]));
  }
  const auto twice = [](std::int64_t i) {
    return Error(ErrorCode::invalid_argument,
                 fmt::format("move: particle {} is listed more than once", i));
  };
  if (m <= 32) {
    for (std::int64_t k = 0; k < m; ++k)
      for (std::int64_t l = k + 1; l < m; ++l)
        if (move.particles[k] == move.particles[l])
          throw twice(move.particles[k]);
  } else {
    std::vector<std::int64_t> sorted = move.particles;
    std::sort(sorted.begin(), sorted.end());
    const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end())
      throw twice(*dup);
  }
}

Backend resolve(Backend b) {
  if (b == Backend::automatic)
    return detail::gpu_available() ? Backend::cuda : Backend::cpu;
  if (b == Backend::cuda && !detail::gpu_available())
    throw Error(ErrorCode::unsupported,
                "the Monte Carlo engine's cuda backend was requested but no CUDA GPU is available "
                "(no device, or a build without CUDA)");
  return b;
}

} // namespace

template <std::floating_point T> struct Engine<T>::Impl {
  EngineOptions opt;
  PairParams<T> params;
  Backend backend;
  mutable System host;
  mutable bool host_stale = false; // GPU: positions moved by translate() on the device
  std::optional<detail::CpuEngine<T>> cpu;
  std::unique_ptr<detail::GpuEngine<T>> gpu;
  std::vector<std::int64_t> everyone; // 0 … N−1: translate()'s movable list when none is given
  mutable Move wrapped;               // the periodic copy of a move, reused

  explicit Impl(EngineOptions o)
      : opt(std::move(o)), params(detail::make_pair_params<T>(opt.potential, opt.cell)),
        backend(Backend::cpu) {
    if (opt.threads < 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("threads must be >= 0 (0: OpenMP's default), got {}", opt.threads));
    if (opt.device < 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("device must be >= 0, got {}", opt.device));
    if (opt.batch < 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("batch must be >= 0 (0: chosen from N), got {}", opt.batch));
    backend = resolve(opt.backend);
    if (backend == Backend::cuda)
      gpu = detail::make_gpu_engine<T>(params, opt.device, opt.batch);
    else
      cpu.emplace(params, opt.cell.box, opt.threads);
  }

  // Validated, and wrapped into a periodic box (the backends get wrapped positions only).
  const Move &prepare(const Move &move) const {
    check_move(move, host.size());
    if (opt.cell.boundary != Boundary::periodic)
      return move;
    wrapped.particles.assign(move.particles.begin(), move.particles.end());
    wrapped.xyz.resize(move.xyz.size());
    for (std::size_t k = 0; k < move.xyz.size(); ++k)
      wrapped.xyz[k] = wrap(move.xyz[k], opt.cell.box[k % 3]);
    wrapped.rigid = move.rigid;
    return wrapped;
  }
};

template <std::floating_point T>
Engine<T>::Engine(EngineOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
template <std::floating_point T> Engine<T>::~Engine() = default;
template <std::floating_point T> Engine<T>::Engine(Engine &&) noexcept = default;
template <std::floating_point T> Engine<T> &Engine<T>::operator=(Engine &&) noexcept = default;

template <std::floating_point T> void Engine<T>::set_system(const System &system) {
  Impl &d = *impl_;
  System s = system;
  check_sizes(s);
  check_values(s);
  check_bonds(s);
  check_fit(s, d.opt.potential, d.opt.cell);
  place_in_cell(s, d.opt.cell, d.params);
  check_overlaps(s, d.params, d.params.short_range == 1, d.opt.cell);
  check_bonds_intact(s, d.params);
  d.host = std::move(s);
  d.host_stale = false;
  d.everyone.resize(d.host.size());
  std::iota(d.everyone.begin(), d.everyone.end(), std::int64_t(0));
  if (d.gpu)
    d.gpu->upload(d.host);
  else
    d.cpu->upload(d.host);
}

template <std::floating_point T> const System &Engine<T>::system() const {
  const Impl &d = *impl_;
  if (d.gpu && d.host_stale) {
    d.gpu->download(d.host);
    d.host_stale = false;
  }
  return d.host;
}

template <std::floating_point T> std::int64_t Engine<T>::size() const {
  return impl_->host.size();
}

template <std::floating_point T> Backend Engine<T>::backend() const {
  return impl_->backend;
}

template <std::floating_point T> Energy Engine<T>::total() const {
  const Impl &d = *impl_;
  if (d.host.size() == 0)
    return {};
  return d.gpu ? d.gpu->total() : d.cpu->total();
}

template <std::floating_point T>
Energy Engine<T>::total_full_recompute(const System &system) const {
  const Impl &d = *impl_;
  check_sizes(system);
  check_values(system);
  check_bonds(system);
  if (system.size() == 0)
    return {};
  const System *s = &system;
  System wrapped;
  if (d.opt.cell.boundary == Boundary::periodic) {
    wrapped = system;
    place_in_cell(wrapped, d.opt.cell, d.params);
    s = &wrapped;
  }
  return d.gpu ? d.gpu->total_full_recompute(*s) : d.cpu->total_full_recompute(*s);
}

template <std::floating_point T> Energy Engine<T>::delta(const Move &move) const {
  const Impl &d = *impl_;
  const Move &m = d.prepare(move);
  if (m.particles.empty())
    return {};
  return d.gpu ? d.gpu->delta(m) : d.cpu->delta(m);
}

template <std::floating_point T> void Engine<T>::apply(const Move &move) {
  Impl &d = *impl_;
  const Move &m = d.prepare(move);
  if (m.particles.empty())
    return;
  for (std::size_t k = 0; k < m.particles.size(); ++k) {
    const std::int64_t i = m.particles[k];
    d.host.x[i] = m.xyz[3 * k];
    d.host.y[i] = m.xyz[3 * k + 1];
    d.host.z[i] = m.xyz[3 * k + 2];
  }
  if (d.gpu)
    d.gpu->apply(m);
  else
    d.cpu->apply(m);
}

template <std::floating_point T>
TranslateResult Engine<T>::translate(const TranslateParams &params) {
  Impl &d = *impl_;
  const std::int64_t n = d.host.size();
  if (params.count < 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("translate: count must be >= 0, got {}", params.count));
  if (params.step.empty()) {
    if (!std::isfinite(params.max_step) || params.max_step < 0)
      throw Error(
          ErrorCode::invalid_argument,
          fmt::format("translate: max_step must be finite and >= 0, got {}", params.max_step));
  } else {
    if (static_cast<std::int64_t>(params.step.size()) != n)
      throw Error(ErrorCode::shape_mismatch,
                  fmt::format("translate: step has {} entries for {} particles (one per particle "
                              "or none)",
                              params.step.size(), n));
    for (std::int64_t i = 0; i < n; ++i)
      if (!std::isfinite(params.step[i]) || params.step[i] < 0)
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("translate: step of particle {} must be finite and >= 0, got {}", i,
                                params.step[i]));
  }
  if (!params.movable.empty()) {
    std::vector<char> seen(n, 0);
    for (std::size_t k = 0; k < params.movable.size(); ++k) {
      const std::int64_t i = params.movable[k];
      if (i < 0 || i >= n)
        throw Error(
            ErrorCode::invalid_argument,
            fmt::format("translate: movable particle {} (entry {}) is outside [0, {})", i, k, n));
      if (seen[i]++)
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("translate: movable particle {} is listed more than once", i));
    }
  }
  if (params.count == 0)
    return {};
  if (n == 0)
    throw Error(ErrorCode::invalid_argument, "translate: the system has no particles to move");
  const std::vector<std::int64_t> &movable = params.movable.empty() ? d.everyone : params.movable;
  if (d.gpu) {
    TranslateResult res = d.gpu->translate(params, movable);
    d.host_stale = d.host_stale || res.accepted > 0;
    return res;
  }
  return d.cpu->translate(params, movable, d.host);
}

template class Engine<float>;
template class Engine<double>;

} // namespace ksum::mc
