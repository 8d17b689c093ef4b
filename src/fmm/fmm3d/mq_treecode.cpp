// The multiquadric treecode (mq_treecode.hpp): tree and per-pair choice at construction, then
// setup (series per source box) and eval (series or direct per pair) in apply().
#include "fmm/fmm3d/mq_treecode.hpp"

#include "fmm/fmm3d/mq_gpu.hpp"
#include "fmm/series/multiquadric.hpp"

#include <ksum/error.hpp>

#include <chrono>
#include <cmath>
#include <fmt/format.h>

namespace ksum::fmm {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double distance(const double a[3], const double b[3]) {
  return std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                   (a[2] - b[2]) * (a[2] - b[2]));
}

} // namespace

MqTreecode::MqTreecode(const Table<double> &points, const MqTreecodeOptions &options)
    : opt_(options) {
  if (!(options.c >= 0) || !std::isfinite(options.c))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("multiquadric treecode: c = {} (expected c ≥ 0)", options.c));
  if (!(options.tolerance >= 1e-14 && options.tolerance < 1))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("multiquadric treecode: tolerance {} outside [1e-14, 1) (fp64)",
                            options.tolerance));
  if (options.gpu && options.single && options.tolerance < 1e-6)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("multiquadric treecode: tolerance {} is below what float reaches "
                            "(1e-6); use double precision",
                            options.tolerance));
  const auto t0 = std::chrono::steady_clock::now();
  tree_ = build_octree(points, {.leaf_size = options.leaf_size, .theta = options.theta});
  stats_.seconds_tree = seconds_since(t0);
  // The series length that serves a pair at the acceptance ratio θ with c = 0.
  stats_.terms = mq_terms_for(options.tolerance * (1 - options.theta), options.theta, 1.0);
  if (stats_.terms < 0)
    stats_.terms = mq_max_terms;
  use_series_.assign(tree_.far.size(), 0);
  for (std::size_t a = 0; a < tree_.boxes.size(); ++a)
    for (auto k = tree_.far_offsets[a]; k < tree_.far_offsets[a + 1]; ++k) {
      const auto &A = tree_.boxes[a];
      const auto &B = tree_.boxes[static_cast<std::size_t>(tree_.far[static_cast<std::size_t>(k)])];
      // d: the nearest a target can be to B's centre; d − r_B: to one of B's points.
      const double d = distance(A.centre, B.centre) - A.radius;
      const double rho = std::sqrt(B.radius * B.radius + options.c * options.c);
      // The fewest terms whose bound meets the pair's share (far-apart pairs need fewer).
      const int terms = d > B.radius
                            ? mq_terms_for(options.tolerance * (d - B.radius), rho, d, stats_.terms)
                            : -1;
      const bool ok = terms > 0;
      use_series_[static_cast<std::size_t>(k)] = static_cast<char>(ok ? terms : 0);
      stats_.series_terms += ok ? terms : 0;
      (ok ? stats_.series_pairs : stats_.direct_pairs) += 1;
    }
  for (const auto l : tree_.leaves)
    stats_.direct_pairs += tree_.near_offsets[static_cast<std::size_t>(l) + 1] -
                           tree_.near_offsets[static_cast<std::size_t>(l)];
  if (options.gpu)
    gpu_ = make_mq_gpu(tree_, use_series_, stats_.terms, options.c, options.single, options.device);
}

MqTreecode::~MqTreecode() = default;

std::vector<double> MqTreecode::apply(const std::vector<double> &w) {
  const std::int64_t n = tree_.points.rows();
  if (static_cast<std::int64_t>(w.size()) != n)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("multiquadric treecode: {} weights for {} points", w.size(), n));
  std::vector<double> ws(static_cast<std::size_t>(n)), us(static_cast<std::size_t>(n), 0.0);
  for (std::int64_t k = 0; k < n; ++k)
    ws[static_cast<std::size_t>(k)] =
        w[static_cast<std::size_t>(tree_.order[static_cast<std::size_t>(k)])];
  if (gpu_) {
    gpu_->apply(ws, us, stats_.seconds_setup, stats_.seconds_eval);
    std::vector<double> out(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k)
      out[static_cast<std::size_t>(tree_.order[static_cast<std::size_t>(k)])] =
          us[static_cast<std::size_t>(k)];
    return out;
  }
  const double c2 = opt_.c * opt_.c;
  const Table<double> &p = tree_.points;

  // Setup: the series of every box that some pair serves by it.
  const auto t_setup = std::chrono::steady_clock::now();
  const std::size_t nb = tree_.boxes.size();
  std::vector<char> needed(nb, 0);
  for (std::size_t k = 0; k < tree_.far.size(); ++k)
    if (use_series_[k])
      needed[static_cast<std::size_t>(tree_.far[k])] = 1;
  std::vector<MqExpansion> expansion(nb);
#pragma omp parallel for schedule(dynamic, 4)
  for (std::size_t b = 0; b < nb; ++b) {
    if (!needed[b])
      continue;
    const auto &B = tree_.boxes[b];
    MqExpansion e(stats_.terms, opt_.c);
    for (std::int64_t j = B.begin; j < B.end; ++j) {
      const double t[3] = {p(j, 0) - B.centre[0], p(j, 1) - B.centre[1], p(j, 2) - B.centre[2]};
      e.add(t, ws[static_cast<std::size_t>(j)]);
    }
    expansion[b] = std::move(e);
  }
  stats_.seconds_setup = seconds_since(t_setup);

  // Eval: per target, the far boxes of its leaf and the leaf's ancestors, then its near boxes.
  const auto t_eval = std::chrono::steady_clock::now();
  auto direct = [&](const OctreeBox &B, std::int64_t i) {
    double s = 0;
    for (std::int64_t j = B.begin; j < B.end; ++j) {
      const double dx = p(i, 0) - p(j, 0), dy = p(i, 1) - p(j, 1), dz = p(i, 2) - p(j, 2);
      s += ws[static_cast<std::size_t>(j)] * std::sqrt(dx * dx + dy * dy + dz * dz + c2);
    }
    return s;
  };
#pragma omp parallel for schedule(dynamic, 1)
  for (std::size_t li = 0; li < tree_.leaves.size(); ++li) {
    const auto l = static_cast<std::size_t>(tree_.leaves[li]);
    const auto &L = tree_.boxes[l];
    for (std::int64_t i = L.begin; i < L.end; ++i) {
      double u = 0;
      for (std::int32_t a = static_cast<std::int32_t>(l); a >= 0;
           a = tree_.boxes[static_cast<std::size_t>(a)].parent)
        for (auto k = tree_.far_offsets[static_cast<std::size_t>(a)];
             k < tree_.far_offsets[static_cast<std::size_t>(a) + 1]; ++k) {
          const auto b = static_cast<std::size_t>(tree_.far[static_cast<std::size_t>(k)]);
          const auto &B = tree_.boxes[b];
          if (use_series_[static_cast<std::size_t>(k)]) {
            const double x[3] = {p(i, 0) - B.centre[0], p(i, 1) - B.centre[1],
                                 p(i, 2) - B.centre[2]};
            u += expansion[b].evaluate(x, use_series_[static_cast<std::size_t>(k)]);
          } else {
            u += direct(B, i);
          }
        }
      for (auto k = tree_.near_offsets[l]; k < tree_.near_offsets[l + 1]; ++k)
        u += direct(tree_.boxes[static_cast<std::size_t>(tree_.near[static_cast<std::size_t>(k)])],
                    i);
      us[static_cast<std::size_t>(i)] = u;
    }
  }
  stats_.seconds_eval = seconds_since(t_eval);
  std::vector<double> out(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k)
    out[static_cast<std::size_t>(tree_.order[static_cast<std::size_t>(k)])] =
        us[static_cast<std::size_t>(k)];
  return out;
}

} // namespace ksum::fmm
