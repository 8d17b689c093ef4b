// RBF partition of unity (seed 001): indexing (spatial/grid_index), local fits with Cholesky and
// LOOCV (Rippa's e_k = c_k / (Φ⁻¹)_kk, Brent over log ε), Shepard evaluation with W2 weights.
#include "core/parallel_errors.hpp"
#include "core/validate.hpp"
#include "kernels/kernel_defs.hpp"
#include "linalg/brent.hpp"
#include "linalg/cholesky.hpp"
#include "rbf/pum/pum_gpu.hpp"
#include "rbf/pum/pum_impl.hpp"
#include "spatial/grid_index.hpp"

#include <ksum/device.hpp>
#include <ksum/distributed.hpp>
#include <ksum/error.hpp>
#include <ksum/pum.hpp>
#include <ksum/tasksize.hpp>

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <mutex>
#include <numeric>
#include <omp.h>

namespace ksum {
namespace {

using detail::check_finite;
using pum_detail::Clock;
using pum_detail::extent;
using pum_detail::ring_for;
using pum_detail::since;

// Wendland C2, the PU weight of seed 001 eq. (7): (1 − r)^4 (4r + 1) on r < 1.
double w2(double r) {
  if (r >= 1)
    return 0;
  const double t = 1 - r, t2 = t * t;
  return t2 * t2 * (4 * r + 1);
}

// A local fit is usable when its Cholesky succeeds and the solve reproduces the data to
// max_residual · max|f| (plus the rounding of the residual itself). Ill-conditioned systems that
// pass still give good interpolants (their coefficient errors lie where they change the
// interpolant little), as seed 001's runs at ε = 10 show.
// LOOCV needs a conditioning filter: Rippa's (Φ⁻¹)_kk turn into noise first, and the search would
// chase that noise to ever smaller ε. The thresholds are shared with the GPU fits (pum_gpu.hpp).
using detail::pum_max_noise;
using detail::pum_max_residual;
using detail::pum_min_rcond_loocv;

} // namespace

// evaluate()'s points and fit()'s patches per task on the CPU where the task-size model is off
// (KSUM_TASKSIZE=off).
constexpr std::int64_t kPumEvalChunk = 256, kPumFitChunk = 16;

// Runs items [0, n) as range(lo, hi, threads, chunk), `chunk` items per OpenMP dynamic task: a
// given chunk > 0 as it is; 0: the task-size model's (tasksize::dynamic_chunk) from the measured
// cost of the first `sample` items, run on one thread first (they are part of the result, and what
// follows does not depend on the chunk). One thread: one chunk of everything. Returns the chunk.
template <class Range>
std::int64_t run_with_model_chunk(std::int64_t n, int nthreads, std::int64_t chunk,
                                  std::int64_t sample, std::int64_t fallback, Range &&range) {
  std::int64_t lo = 0;
  if (chunk <= 0) {
    const std::int64_t k = std::min<std::int64_t>(n, nthreads > 1 ? sample : 0);
    const auto t0 = Clock::now();
    if (k > 0)
      range(std::int64_t(0), k, 1, k);
    const double c =
        k > 0 ? std::chrono::duration<double>(Clock::now() - t0).count() / static_cast<double>(k)
              : 0.0;
    lo = k;
    chunk = nthreads > 1 ? tasksize::dynamic_chunk(n - k, c, nthreads, fallback)
                         : std::max<std::int64_t>(1, n);
  }
  if (lo < n)
    range(lo, n, nthreads, chunk);
  return chunk;
}

namespace {
// Fills the min / median / max of the chosen ε and of the points per patch (sorts its arguments).
void set_distribution_stats(PumStats &stats, std::vector<double> &e,
                            std::vector<std::int64_t> &sizes);
} // namespace

namespace pum_detail {

std::int64_t find_repeats(const spatial::Compressed &cells, const Table<double> &x, bool merge,
                          const std::function<std::int64_t(std::int64_t)> &row,
                          std::vector<std::int64_t> &first) {
  const std::int64_t s = x.cols();
  first.assign(static_cast<std::size_t>(x.rows()), -1);
  std::int64_t dups = 0;
  for (std::int64_t c = 0; c + 1 < static_cast<std::int64_t>(cells.ptr.size()); ++c)
    for (std::int64_t a = cells.ptr[c]; a < cells.ptr[c + 1]; ++a)
      for (std::int64_t b = cells.ptr[c]; b < a; ++b) {
        const std::int64_t i = std::min(cells.idx[a], cells.idx[b]);
        const std::int64_t j = std::max(cells.idx[a], cells.idx[b]);
        if (first[j] >= 0)
          continue;
        bool same = true;
        for (std::int64_t k = 0; k < s && same; ++k)
          same = x(i, k) == x(j, k);
        if (!same)
          continue;
        if (!merge) {
          std::string where;
          for (std::int64_t k = 0; k < s; ++k)
            where += fmt::format("{}{}", k ? ", " : "", x(i, k));
          throw Error(ErrorCode::invalid_argument,
                      fmt::format("data rows {} and {} are the same point ({}); remove one or use "
                                  "--merge-duplicates",
                                  row(i), row(j), where));
        }
        first[j] = first[i] >= 0 ? first[i] : i;
        ++dups;
      }
  return dups;
}

std::string too_large_patch(std::int64_t points) {
  return fmt::format("a patch holds {} points (the most allowed is {}): the data are very "
                     "clustered or --min-points is large; raise --density",
                     points, max_patch_points);
}

} // namespace pum_detail

void PumInterpolant::Impl::validate(const Table<double> &points, const Table<double> &values,
                                    bool partitioned) const {
  const auto &info = kernel_info(opt.kernel);
  if (opt.degree < -1 || opt.degree > 1)
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("the local polynomial degree must be -1 (none), 0 or 1, got {}", opt.degree));
  if (info.singular)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("'{}' is singular at r = 0 and cannot interpolate", info.name));
  if (info.min_degree > 1)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("'{}' needs local polynomials of degree {}; PUM supports up to 1",
                            info.name, info.min_degree));
  if (info.min_degree > opt.degree)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("'{}' is conditionally positive definite: its local interpolants need "
                            "a polynomial of degree {} (--degree {}). Or use a strictly positive "
                            "definite kernel: gaussian, inverse-multiquadric, inverse-quadratic, "
                            "matern0..6, wendland2..6",
                            info.name, info.min_degree, info.min_degree));
  if (info.support == Support::compact && points.cols() > 3)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("'{}' is positive definite only up to dimension 3, the data have {}",
                            info.name, points.cols()));
  if ((points.rows() < 1 && !partitioned) || points.cols() < 1)
    throw Error(ErrorCode::empty_input, "PUM: no data points");
  if (values.rows() != points.rows() || values.cols() < 1)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("PUM: {} points but {} value rows with {} columns", points.rows(),
                            values.rows(), values.cols()));
  if (!(opt.eps > 0) || !std::isfinite(opt.eps))
    throw Error(ErrorCode::invalid_argument, fmt::format("eps must be > 0, got {}", opt.eps));
  if (!(opt.eps_min > 0) || !(opt.eps_max > opt.eps_min) || !std::isfinite(opt.eps_max))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("the LOOCV bracket needs 0 < eps_min < eps_max, got [{}, {}]",
                            opt.eps_min, opt.eps_max));
  if (opt.min_patch_points < 0 || opt.loocv_iterations < 1 || opt.threads < 0)
    throw Error(ErrorCode::invalid_argument,
                "min_patch_points >= 0, loocv_iterations >= 1 and threads >= 0 are required");
  if (opt.eval_chunk < 0 || opt.fit_chunk < 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("eval_chunk and fit_chunk must be >= 0 (0: the task-size model), got "
                            "{} and {}",
                            opt.eval_chunk, opt.fit_chunk));
  if (!partitioned) { // partitioned: over the ranks, with the rows of all their data
    check_finite(points, "data points");
    check_finite(values, "data values");
  }
}

// Repeated points make a local matrix singular. They always share a cell, so comparing the points
// of each cell finds them all in linear time. Also builds the cell index of the points kept and
// leaves pts and vals in its cell order.
void PumInterpolant::Impl::merge_or_reject_duplicates(const Table<double> &points,
                                                      const Table<double> &values) {
  const std::int64_t n = points.rows(), sd = points.cols();
  grid = std::make_unique<spatial::GridIndex>(points, opt.patch_density, opt.patch_radius);
  const spatial::GridIndex &g = *grid;
  const auto &cells = g.cells();
  // A parallel test first, on the points in cell order (a cell's points contiguous): duplicates
  // are rare, and the pass below that names or merges them is serial.
  pts = g.gather(points);
  bool any = false;
#pragma omp parallel for schedule(dynamic, 1024) reduction(|| : any)
  for (std::int64_t c = 0; c < g.num_cells(); ++c)
    for (std::int64_t a = cells.ptr[c]; a < cells.ptr[c + 1] && !any; ++a)
      for (std::int64_t b = cells.ptr[c]; b < a && !any; ++b) {
        bool same = true;
        for (std::int64_t k = 0; k < sd && same; ++k)
          same = pts(a, k) == pts(b, k);
        any = any || same;
      }
  if (!any) { // the index just built serves the fit
    stats.merged_duplicates = 0;
    vals = g.gather(values);
    grid->use_sorted_order();
    return;
  }
  std::vector<std::int64_t> first; // first[i]: the earlier row i repeats, or −1
  const std::int64_t dups = pum_detail::find_repeats(
      cells, points, opt.merge_duplicates, [](std::int64_t i) { return i; }, first);
  stats.merged_duplicates = dups;
  if (dups == 0) { // the index just built serves the fit (pts is already in its order)
    vals = g.gather(values);
    grid->use_sorted_order();
    return;
  }
  // Keep the first of each group, with the mean of the group's values.
  const std::int64_t nc = values.cols();
  pts = Table<double>(n - dups, sd);
  vals = Table<double>(n - dups, nc);
  const std::vector<std::int64_t> kept = pum_detail::merge_groups(
      first,
      [&](std::int64_t r, std::int64_t i) {
        for (std::int64_t c = 0; c < nc; ++c)
          vals(r, c) += values(i, c);
      },
      [&](std::int64_t r, std::int64_t count) {
        for (std::int64_t c = 0; c < nc; ++c)
          vals(r, c) /= static_cast<double>(count);
      });
  for (std::int64_t r = 0; r < n - dups; ++r)
    for (std::int64_t k = 0; k < sd; ++k)
      pts(r, k) = points(kept[r], k);
  grid = std::make_unique<spatial::GridIndex>(pts, opt.patch_density, opt.patch_radius);
  pts = grid->gather(pts);
  vals = grid->gather(vals);
  grid->use_sorted_order();
}

std::int64_t PumInterpolant::Impl::build_patches(std::int64_t lo, std::int64_t hi,
                                                 const std::vector<std::int64_t> *ring_limit) {
  const std::int64_t ncells = grid->num_cells(), n = n_total > 0 ? n_total : pts.rows();
  if (hi < 0)
    hi = ncells;
  const double delta = grid->patch_radius();
  const auto [min_width, diag] = extent(*grid);
  centres.resize(ncells * s);
  patches.assign(ncells, Patch{});
  std::vector<std::int64_t> counts(ncells, 0);
  std::atomic<std::int64_t> grown{0}, short_of_points{0};
  if (ring_limit)
    needs.assign(static_cast<std::size_t>(hi - lo), 0);
  // Calls f(i) for every point within r of the centre xi of cell c (the GPU index makes the same
  // decisions: same rings, same cell order, same rounding of the distance).
  const auto for_points_within = [&](std::int64_t c, const double *xi, double r, auto &&f) {
    const double r2 = r * r;
    const auto &cl = grid->cells();
    grid->for_neighbours(c, ring_for(r, min_width), [&](std::int64_t cell) {
      for (std::int64_t a = cl.ptr[cell]; a < cl.ptr[cell + 1]; ++a) {
        const std::int64_t i = cl.idx[a];
        double d2 = 0;
        for (std::int64_t k = 0; k < s; ++k)
          d2 = spatial::dist2_step(d2, pts(i, k), xi[k]);
        if (d2 < r2)
          f(i);
      }
    });
  };
  const int nthreads = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  // Seed 001 §4.1, second stage: count the points of every patch (fixing its radius), take the
  // prefix sum, then fill the patch → points index; both passes in parallel, no per-patch buffers.
#pragma omp parallel for schedule(static) num_threads(nthreads)
  for (std::int64_t c = 0; c < ncells; ++c)
    grid->cell_centre(c, centres.data() + c * s);
#pragma omp parallel for schedule(dynamic, 256) num_threads(nthreads)
  for (std::int64_t c = lo; c < hi; ++c) {
    const double *xi = centres.data() + c * s;
    double r = delta;
    std::int64_t count = 0;
    while (true) {
      count = 0;
      if (const std::int64_t ring = ring_for(r, min_width);
          ring_limit && ring > (*ring_limit)[c - lo]) {
        // This rank holds the points of fewer cells around this one: it asks for more.
        needs[c - lo] = ring;
        ++short_of_points;
        break;
      }
      for_points_within(c, xi, r, [&](std::int64_t) { ++count; });
      // An empty patch stays empty (growing it would extrapolate from far away); a sparse one
      // grows.
      if (count == 0 || count >= std::min(min_pts, n) || r > 2 * diag)
        break;
      r *= 1.25;
    }
    patches[c].radius = r;
    counts[c] = count;
    if (r > delta)
      ++grown;
  }
  if (short_of_points.load() > 0)
    return short_of_points.load();
  std::int64_t total = 0, largest = 0;
  for (std::int64_t c = 0; c < ncells; ++c) {
    patches[c].begin = total;
    total += counts[c];
    patches[c].end = total;
    largest = std::max(largest, counts[c]);
  }
  if (total == 0 && !comm) // partitioned: checked over the ranks
    throw Error(ErrorCode::internal, "PUM: no patch holds a data point");
  // Dense local systems of this size cost O(n^3) time and O(n^2) memory each: refuse, with advice
  // (checked before the index is allocated).
  largest_patch = largest;
  if (largest > pum_detail::max_patch_points && !comm) // partitioned: over the ranks
    throw Error(ErrorCode::invalid_argument, pum_detail::too_large_patch(largest));
  pidx.resize(total);
#pragma omp parallel for schedule(dynamic, 256) num_threads(nthreads)
  for (std::int64_t c = lo; c < hi; ++c) {
    std::int64_t at = patches[c].begin;
    for_points_within(c, centres.data() + c * s, patches[c].radius,
                      [&](std::int64_t i) { pidx[at++] = i; });
  }
  coef_at.resize(ncells);
  std::int64_t cofs = 0, empty = 0;
  base_ring = ring_for(delta, min_width);
  grown_list.clear();
  for (std::int64_t c = 0; c < ncells; ++c) {
    coef_at[c] = cofs;
    cofs += patches[c].n() * ncols;
    empty += c >= lo && c < hi && patches[c].n() == 0;
    if (patches[c].n() > 0 && patches[c].radius > delta)
      grown_list.push_back(c);
  }
  coef.resize(cofs); // every patch's fit writes all of its coefficients
  stats.patches = hi - lo - empty;
  stats.empty_patches = empty;
  stats.grown_patches = grown;
  stats.radius = delta;
  return 0;
}

void PumInterpolant::Impl::fit(std::int64_t first, std::int64_t last) {
  const std::int64_t ncells = grid->num_cells();
  if (last < 0)
    last = ncells;
  np = opt.degree < 0 ? 0 : opt.degree == 0 ? 1 : 1 + s;
  pcoef.assign(ncells * ncols * np, 0.0);
  std::atomic<std::int64_t> regularised{0}, fitted{0};
  std::int64_t nonempty = 0;
  for (std::int64_t c = first; c < last; ++c)
    nonempty += patches[c].n() > 0;
  detail::ParallelErrors errors;
  const int nthreads = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  kdef::visit<double>(opt.kernel, [&](auto kf) {
    using K = decltype(kf);
    constexpr double p0 = kdef::p_offset<K>();
    // Patches [lo, hi) on `threads` threads, `chunk` patches per task.
    const auto range = [&](std::int64_t lo, std::int64_t hi, int threads, std::int64_t chunk) {
#pragma omp parallel for schedule(dynamic, chunk) num_threads(threads)
      for (std::int64_t c = lo; c < hi; ++c) {
        if (errors.failed())
          continue;
        try {
          Patch &P = patches[c];
          const std::int64_t n = P.n();
          if (n == 0)
            continue;
          const double *xi = centres.data() + c * s;
          // Local coordinates relative to the centre, and the values.
          Eigen::MatrixXd X(n, s), F(n, ncols), A(n, n), Pm(n, np), D;
          for (std::int64_t a = 0; a < n; ++a) {
            const std::int64_t i = pidx[P.begin + a];
            for (std::int64_t k = 0; k < s; ++k)
              X(a, k) = pts(i, k) - xi[k];
            for (std::int64_t q = 0; q < ncols; ++q)
              F(a, q) = vals(i, q);
          }
          // Squared distances, computed once for every ε tried (column-major: the inner loop runs
          // down a column and vectorises).
          Eigen::MatrixXd D2(n, n); // the first axis writes, the others add (no zero fill)
          for (std::int64_t k = 0; k < s; ++k)
            for (std::int64_t b = 0; b < n; ++b) {
              const double xb = X(b, k);
              double *col = D2.data() + b * n;
              const double *xk = X.data() + k * n;
              if (k == 0) {
#pragma omp simd
                for (std::int64_t a = 0; a < n; ++a)
                  col[a] = (xk[a] - xb) * (xk[a] - xb);
              } else {
#pragma omp simd
                for (std::int64_t a = 0; a < n; ++a)
                  col[a] += (xk[a] - xb) * (xk[a] - xb);
              }
            }
          // Polynomial part (degree >= 0): 1, z_1 .. z_s in z = (x − ξ) / radius; the local system
          // is then [Φ P; Pᵀ 0] (solved by LU with partial pivoting).
          for (std::int64_t a = 0; a < n && np > 0; ++a) {
            Pm(a, 0) = 1;
            for (std::int64_t k = 0; k + 1 < np; ++k)
              Pm(a, k + 1) = X(a, k) / P.radius;
          }
          if (np > 1 && Eigen::ColPivHouseholderQR<Eigen::MatrixXd>(Pm).rank() < np) {
            std::string where;
            for (std::int64_t k = 0; k < s; ++k)
              where += fmt::format("{}{:.6g}", k ? ", " : "", xi[k]);
            throw Error(
                ErrorCode::invalid_argument,
                fmt::format("the {} data points of the patch centred at ({}) do not "
                            "determine a linear polynomial (they lie on a lower-dimensional "
                            "set); use --degree 0 or a positive definite kernel",
                            n, where));
          }
          Eigen::MatrixXd L(n, np == 0 ? n : 0); // the Cholesky factor (lower triangle)
          const auto lower = [&] { return L.triangularView<Eigen::Lower>(); };
          Eigen::PartialPivLU<Eigen::MatrixXd> lu;
          Eigen::MatrixXd M, rhs;
          if (np > 0) {
            rhs = Eigen::MatrixXd::Zero(n + np, ncols);
            rhs.topRows(n) = F;
          }
          double amax = 0; // max |Φ| of the last assembly
          const auto factor = [&](double eps, double nugget) {
            const double cs = kdef::coord_scale(opt.kernel, eps), c2 = cs * cs;
            // The whole block as one vector loop (faster than the lower triangle column by column).
            double m = 0;
            const double *d2 = D2.data();
            double *av = A.data();
#pragma omp simd reduction(max : m)
            for (std::int64_t k = 0; k < n * n; ++k) {
              av[k] = kf.value(p0 + c2 * d2[k]);
              m = std::max(m, std::abs(av[k]));
            }
            amax = m;
            A.diagonal().array() += nugget;
            if (np == 0) {
              L = A;
              if (n <= linalg::cholesky_lower_max_n)
                return linalg::cholesky_lower(L.data(), n, n);
              // Larger patches: Eigen's cache-blocked factorisation, in place.
              const Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>> llt(L);
              return llt.info() == Eigen::Success;
            }
            M = Eigen::MatrixXd::Zero(n + np, n + np);
            M.topLeftCorner(n, n) = A.selfadjointView<Eigen::Lower>();
            M.topRightCorner(n, np) = Pm;
            M.bottomLeftCorner(np, n) = Pm.transpose();
            lu.compute(M);
            const double rc = lu.rcond();
            return std::isfinite(rc) && rc > 0;
          };
          // The coefficients C (and D, the polynomial's) of the factorised system.
          const auto solve = [&]() {
            if (np == 0) { // column by column: Eigen's vector path (trsv) beats trsm for one column
              Eigen::MatrixXd C = F;
              for (std::int64_t q = 0; q < ncols; ++q) {
                lower().solveInPlace(C.col(q));
                lower().transpose().solveInPlace(C.col(q));
              }
              return C;
            }
            const Eigen::MatrixXd sol = lu.solve(rhs);
            D = sol.bottomRows(np);
            return Eigen::MatrixXd(sol.topRows(n));
          };
          const double c0 = kf.value(p0);
          double eps = opt.eps;
          if (opt.loocv && n > 1) {
            // Seed 001 §3: minimise ‖e‖∞ over log ε, e_k = c_k / (Φ⁻¹)_kk (Rippa); an unusable
            // factorisation, or one whose 1 / (Φ_00 max_k (Φ⁻¹)_kk) (within a factor n² above the
            // reciprocal condition number) is too small, scores +inf so the search moves to
            // better-conditioned ε.
            const auto cost = [&](double log_eps) {
              if (!factor(std::exp(log_eps), 0.0))
                return std::numeric_limits<double>::infinity();
              Eigen::VectorXd dinv;
              Eigen::MatrixXd C;
              if (np == 0) {
                const Eigen::MatrixXd Linv =
                    lower().solve(Eigen::MatrixXd::Identity(n, n)); // Φ⁻¹ = L⁻ᵀ L⁻¹
                dinv = Linv.colwise().squaredNorm().transpose();
                if (!(1.0 / (c0 * dinv.maxCoeff()) > pum_min_rcond_loocv))
                  return std::numeric_limits<double>::infinity();
                C = solve();
              } else { // Rippa on the augmented system: (M⁻¹)_kk for the first n
                const Eigen::MatrixXd Minv = lu.inverse();
                dinv = Minv.diagonal().head(n);
                if (!(1.0 / (amax * dinv.cwiseAbs().maxCoeff()) > pum_min_rcond_loocv))
                  return std::numeric_limits<double>::infinity();
                C = (Minv * rhs).topRows(n);
              }
              double e = 0;
              for (std::int64_t q = 0; q < ncols; ++q)
                e = std::max(e, (C.col(q).array() / dinv.array()).abs().maxCoeff());
              return std::isfinite(e) ? e : std::numeric_limits<double>::infinity();
            };
            const auto best =
                linalg::brent_minimize(cost, std::log(opt.eps_min), std::log(opt.eps_max),
                                       detail::pum_loocv_log_tol, opt.loocv_iterations);
            eps = std::isfinite(best.fx) ? std::exp(best.x) : opt.eps_max;
          }
          // Fixed ε, or the chosen one: when the system is singular to working precision or its
          // solve does not reproduce the data, add a small nugget (growing ×100) and count the
          // patch.
          double nugget = 0;
          double scale = std::max(1.0, std::abs(c0));
          if (np > 0) { // conditionally positive definite kernels may vanish at 0: scale by max |Φ|
            factor(eps, 0.0);
            scale = std::max(scale, amax);
          }
          const double fmax = std::max(F.cwiseAbs().maxCoeff(), std::numeric_limits<double>::min());
          // Try without a nugget, then with 1e-12 · K(0) growing ×100; keep the first attempt that
          // reproduces the data, or else the one that comes closest.
          Eigen::MatrixXd C, best_C, best_D;
          double best_res = std::numeric_limits<double>::infinity(), best_nugget = 0;
          for (double nug = 0; nug <= 1e-2 * scale; nug = nug == 0 ? 1e-12 * scale : nug * 100) {
            if (!factor(eps, nug))
              continue;
            C = solve();
            // Residual against Φ = A − nug·I, compared with the data and with the rounding of the
            // product itself (large |c| of an ill-conditioned system makes A·c inexact by itself).
            Eigen::MatrixXd R = A * C - F - nug * C;
            if (np > 0)
              R += Pm * D;
            const double res = R.cwiseAbs().maxCoeff();
            // max |A|: on the diagonal for a positive definite φ (largest at 0).
            const double rounding = 8.0 * static_cast<double>(n) *
                                    std::numeric_limits<double>::epsilon() *
                                    (np == 0 ? A.diagonal().cwiseAbs().maxCoeff() : amax + nug) *
                                    C.cwiseAbs().maxCoeff();
            if (res < best_res) {
              best_res = res;
              best_C = C;
              best_D = D;
              best_nugget = nug;
            }
            // Accept when the data are reproduced and the rounding noise of using these
            // coefficients (the same |A| |c| n eps anywhere the interpolant is evaluated) stays
            // small.
            if (res <= pum_max_residual * fmax + rounding && rounding <= pum_max_noise * fmax)
              break;
          }
          if (std::isfinite(best_res)) {
            C = std::move(best_C);
            D = std::move(best_D);
            nugget = best_nugget;
          } else if (np > 0) {
            // No factorisation succeeded (pathological data): the patch's mean, never NaN.
            C = Eigen::MatrixXd::Zero(n, ncols);
            D = Eigen::MatrixXd::Zero(np, ncols);
            D.row(0) = F.colwise().mean();
            nugget = 1;
          } else {
            // No factorisation succeeded (pathological data): a diagonal solve, never NaN.
            C = F.array().colwise() / A.diagonal().array();
            nugget = 1;
          }
          if (nugget > 0)
            ++regularised;
          for (std::int64_t q = 0; q < ncols; ++q) {
            for (std::int64_t a = 0; a < n; ++a)
              coef[coef_at[c] + q * n + a] = C(a, q);
            for (std::int64_t t = 0; t < np; ++t)
              pcoef[(c * ncols + q) * np + t] = D(t, q);
          }
          P.eps = eps;
          P.scale = kdef::coord_scale(opt.kernel, eps);
          const std::int64_t done = ++fitted;
          if (opt.progress && omp_get_thread_num() == 0 && done % 64 == 0)
            opt.progress(static_cast<double>(done) / static_cast<double>(nonempty));
        } catch (...) {
          errors.capture();
        }
      }
    };
    // The first 32 cells' fits time the task-size model's C.
    stats.fit_chunk = run_with_model_chunk(
        last - first, nthreads, opt.fit_chunk, 32, kPumFitChunk,
        [&](std::int64_t lo, std::int64_t hi, int threads, std::int64_t chunk) {
          range(first + lo, first + hi, threads, chunk);
        });
  });
  errors.rethrow();
  if (opt.progress)
    opt.progress(1.0);
  stats.regularised_patches = regularised;
  if (!comm) // partitioned: over the ranks, by the caller (no collective inside a phase)
    finish_stats();
}

void PumInterpolant::Impl::finish_stats() {
  const std::int64_t ncells = grid->num_cells();
  std::vector<double> e;
  std::vector<std::int64_t> sizes;
  for (std::int64_t c = 0; c < ncells; ++c)
    if (patches[c].n() > 0) {
      e.push_back(patches[c].eps);
      sizes.push_back(patches[c].n());
    }
  if (comm) { // partitioned: every rank's patches (the others' are empty here)
    const auto counts = comm->allgather(static_cast<std::int64_t>(e.size()));
    const std::int64_t all = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
    std::vector<double> mine(e.size() * 2), both(static_cast<std::size_t>(all) * 2);
    for (std::size_t k = 0; k < e.size(); ++k) {
      mine[2 * k] = e[k];
      mine[2 * k + 1] = static_cast<double>(sizes[k]);
    }
    std::vector<std::int64_t> counts2(counts.size());
    for (std::size_t r = 0; r < counts.size(); ++r)
      counts2[r] = 2 * counts[r];
    comm->allgatherv(mine.data(), static_cast<std::int64_t>(mine.size()), both.data(), counts2);
    e.resize(static_cast<std::size_t>(all));
    sizes.resize(static_cast<std::size_t>(all));
    for (std::int64_t k = 0; k < all; ++k) {
      e[k] = both[2 * k];
      sizes[k] = static_cast<std::int64_t>(both[2 * k + 1]);
    }
  }
  set_distribution_stats(stats, e, sizes);
}

void PumInterpolant::set_data(const Table<double> &points, const Table<double> &values,
                              const Communicator &comm) {
  if (!comm.distributed())
    return set_data(points, values);
  auto fresh = std::make_unique<Impl>();
  fresh->opt = impl_->opt;
  Impl &im = *fresh;
  const int P = comm.size(), rank = comm.rank();
  comm.agree(capture([&] { im.validate(points, values); }));
  // The same data on every rank: shapes and a checksum of the bits, in rank order.
  std::uint64_t sum = 1469598103934665603ull;
  for (const Table<double> *t : {&points, &values})
    for (std::int64_t k = 0; k < t->rows() * t->cols(); ++k) {
      std::uint64_t bits;
      std::memcpy(&bits, t->data() + k, sizeof bits);
      sum = (sum ^ bits) * 1099511628211ull;
    }
  const auto rows = comm.allgather(points.rows()), dims = comm.allgather(points.cols()),
             cols = comm.allgather(values.cols()),
             sums = comm.allgather(static_cast<std::int64_t>(sum >> 1));
  for (int r = 1; r < P; ++r)
    if (rows[r] != rows[0] || dims[r] != dims[0] || cols[r] != cols[0] || sums[r] != sums[0])
      throw AgreedError(ErrorCode::invalid_argument,
                        fmt::format("PUM over {} ranks: rank {}'s data ({} × {} points, {} value "
                                    "columns) differ from rank 0's ({} × {}, {}): every rank "
                                    "passes all the data",
                                    P, r, rows[r], dims[r], cols[r], rows[0], dims[0], cols[0]));
  const auto t0 = Clock::now();
  im.s = points.cols();
  im.ncols = values.cols();
  im.min_pts = im.opt.min_patch_points > 0 ? im.opt.min_patch_points : 3 * (im.s + 1);
  if (im.opt.backend == Backend::cuda)
    throw AgreedError(ErrorCode::unsupported,
                      "PUM over MPI ranks fits on the CPU cores of each rank; use the cpu or auto "
                      "backend");
  // The index and the patches: the same on every rank (the same data, deterministic).
  comm.agree(capture([&] {
    im.merge_or_reject_duplicates(points, values);
    im.build_patches();
  }));
  im.stats.seconds_index = since(t0);
  const auto t1 = Clock::now();
  // Contiguous cell ranges of about equal work, n³ per patch (its factorisations).
  const std::int64_t ncells = im.grid->num_cells();
  std::vector<double> work(static_cast<std::size_t>(ncells) + 1, 0.0);
  for (std::int64_t c = 0; c < ncells; ++c) {
    const double n = static_cast<double>(im.patches[c].n());
    work[c + 1] = work[c] + n * n * n + 1;
  }
  std::vector<std::int64_t> cut(static_cast<std::size_t>(P) + 1, ncells);
  cut[0] = 0;
  for (int r = 1; r < P; ++r)
    cut[r] = std::lower_bound(work.begin(), work.end(), work[ncells] * r / P) - work.begin();
  const std::int64_t lo = cut[rank], hi = std::max(lo, cut[rank + 1]);
  comm.agree(capture([&] { im.fit(lo, hi); }));
  // Every rank's patches to every rank: coefficients, polynomial parts, ε and scale.
  const auto gather = [&](auto begin_of, double *data) {
    std::vector<std::int64_t> counts(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r)
      counts[r] = begin_of(std::max(cut[r], cut[r + 1])) - begin_of(cut[r]);
    const std::int64_t at = begin_of(lo);
    std::vector<double> mine(data + at, data + at + counts[rank]);
    comm.allgatherv(mine.data(), counts[rank], data + begin_of(0), counts);
  };
  const std::int64_t ncoef = static_cast<std::int64_t>(im.coef.size());
  gather([&](std::int64_t c) { return c < ncells ? im.coef_at[c] : ncoef; }, im.coef.data());
  const std::int64_t per = im.ncols * im.np;
  gather([&](std::int64_t c) { return c * per; }, im.pcoef.data());
  std::vector<double> eps(ncells), scale(ncells);
  for (std::int64_t c = lo; c < hi; ++c) {
    eps[c] = im.patches[c].eps;
    scale[c] = im.patches[c].scale;
  }
  gather([](std::int64_t c) { return c; }, eps.data());
  gather([](std::int64_t c) { return c; }, scale.data());
  for (std::int64_t c = 0; c < ncells; ++c) {
    im.patches[c].eps = eps[c];
    im.patches[c].scale = scale[c];
  }
  std::int64_t regularised = 0;
  for (auto v : comm.allgather(im.stats.regularised_patches))
    regularised += v;
  im.stats.regularised_patches = regularised;
  im.finish_stats();
  im.stats.seconds_fit = since(t1);
  impl_ = std::move(fresh);
}

namespace {
void set_distribution_stats(PumStats &stats, std::vector<double> &e,
                            std::vector<std::int64_t> &sizes) {
  std::sort(e.begin(), e.end());
  std::sort(sizes.begin(), sizes.end());
  if (!e.empty()) {
    stats.eps_min = e.front();
    stats.eps_median = e[e.size() / 2];
    stats.eps_max = e.back();
    stats.min_points = sizes.front();
    stats.median_points = sizes[sizes.size() / 2];
    stats.max_points = sizes.back();
  }
}
} // namespace

namespace {
// φ(|y − x_a|) for the points x_a = (base[idx[a]], base[rows + idx[a]], …) of a patch, a < n: at(a)
// one value, dot() their sum weighted by coefficients, values() all of them. The dimension S is a
// template argument where it is 1, 2 or 3 (0: s at run time), so that the loop over the patch's
// points vectorises (gathers of its coordinates, the kernel in SIMD).
template <int S, class K> struct PatchKernel {
  const K &kf;
  const double *base;
  std::int64_t rows, s;
  const std::int64_t *idx;
  const double *y;
  double c2;
  double at(std::int64_t a) const {
    constexpr double p0 = kdef::p_offset<K>();
    double d2 = 0;
    const std::int64_t dim = S > 0 ? S : s;
    for (std::int64_t k = 0; k < dim; ++k) {
      const double d = y[k] - base[k * rows + idx[a]];
      d2 += d * d;
    }
    return kf.value(p0 + c2 * d2);
  }
  double dot(const double *cf, std::int64_t n) const {
    double r = 0;
#pragma omp simd reduction(+ : r)
    for (std::int64_t a = 0; a < n; ++a)
      r += cf[a] * at(a);
    return r;
  }
  void values(double *phi, std::int64_t n) const {
#pragma omp simd
    for (std::int64_t a = 0; a < n; ++a)
      phi[a] = at(a);
  }
};
} // namespace

template <int S, class K>
void PumInterpolant::Impl::add_local(const K &kf, std::int64_t j, const double *y, double w,
                                     double *acc, std::vector<double> &phi) const {
  const Patch &P = patches[j];
  const std::int64_t n = P.n();
  const double *cf = coef.data() + coef_at[j];
  const PatchKernel<S, K> pk{kf, pts.data(),       pts.rows(), s, pidx.data() + P.begin,
                             y,  P.scale * P.scale};
  if (ncols == 1) {
    acc[0] += w * pk.dot(cf, n);
  } else { // one kernel evaluation per point for all the value columns
    phi.resize(std::max<std::size_t>(phi.size(), static_cast<std::size_t>(n)));
    pk.values(phi.data(), n);
    for (std::int64_t q = 0; q < ncols; ++q) {
      const double *c = cf + q * n;
      double r = 0;
#pragma omp simd reduction(+ : r)
      for (std::int64_t a = 0; a < n; ++a)
        r += c[a] * phi[a];
      acc[q] += w * r;
    }
  }
  for (std::int64_t q = 0; q < ncols && np > 0; ++q) {
    const double *pc = pcoef.data() + (j * ncols + q) * np;
    const double *xi = centres.data() + j * s;
    double r = pc[0];
    for (std::int64_t k = 0; k + 1 < np; ++k)
      r += pc[k + 1] * (y[k] - xi[k]) / P.radius;
    acc[q] += w * r;
  }
}

PumInterpolant::PumInterpolant(PumOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->opt = options;
}
PumInterpolant::~PumInterpolant() = default;
PumInterpolant::PumInterpolant(PumInterpolant &&) noexcept = default;
PumInterpolant &PumInterpolant::operator=(PumInterpolant &&) noexcept = default;
const PumStats &PumInterpolant::stats() const {
  return impl_->stats;
}
const PumOptions &PumInterpolant::options() const {
  return impl_->opt;
}
std::int64_t PumInterpolant::last_eval_chunk() const {
  return impl_->last_eval_chunk.load();
}
void PumInterpolant::set_progress(std::function<void(double)> progress) {
  impl_->opt.progress = std::move(progress);
}

void PumInterpolant::set_data(const Table<double> &points, const Table<double> &values) {
  auto fresh = std::make_unique<Impl>();
  fresh->opt = impl_->opt;
  Impl &im = *fresh;
  im.validate(points, values);
  const auto t0 = Clock::now();
  im.s = points.cols();
  im.ncols = values.cols();
  im.min_pts = im.opt.min_patch_points > 0 ? im.opt.min_patch_points : 3 * (im.s + 1);
  const bool gpu_shape =
      (im.s == 2 || im.s == 3) && im.ncols <= detail::pum_gpu_max_cols && im.opt.degree < 0;
  if (im.opt.degree >= 0 && im.opt.backend == Backend::cuda)
    throw Error(ErrorCode::unsupported,
                "PUM on the GPU: local polynomials (degree >= 0) run on the CPU; use the cpu or "
                "auto backend");
  if (im.opt.backend == Backend::cuda ||
      (im.opt.backend == Backend::automatic && gpu_shape && gpu_count() > 0)) {
    bool done = false;
    try {
      done = im.try_gpu_fit(points, values);
    } catch (const Error &e) {
      // With the automatic backend a CUDA failure (e.g. out of GPU memory) falls back to the
      // CPU path; asked for the GPU explicitly, the user gets the error.
      if (im.opt.backend != Backend::automatic || e.code() != ErrorCode::device)
        throw;
      im.gpu.reset();
      im.gpu_fit = nullptr;
      im.host_ready = true;
      im.stats = PumStats{};
    }
    if (done) {
      impl_ = std::move(fresh);
      return;
    }
  }
  // The index of the points kept, with the points of a cell contiguous in memory (seed 001 §4.1).
  im.merge_or_reject_duplicates(points, values);
  im.build_patches();
  im.stats.seconds_index = since(t0);
  const auto t1 = Clock::now();
  im.fit();
  im.stats.seconds_fit = since(t1);
  impl_ = std::move(fresh); // a failure above leaves the interpolant as it was
}

detail::PumGrid PumInterpolant::Impl::gpu_grid() const {
  detail::PumGrid g;
  g.s = static_cast<int>(s);
  for (std::int64_t k = 0; k < s && k < 3; ++k) {
    g.d[k] = grid->cells_per_axis()[k];
    g.lo[k] = grid->lo(k);
    g.hi[k] = grid->hi(k);
    g.width[k] = grid->cell_width(k);
  }
  g.ncells = grid->num_cells();
  g.delta = grid->patch_radius();
  const auto e = extent(*grid);
  g.min_width = e.min_width;
  g.diag = e.diag;
  g.base_ring = ring_for(g.delta, e.min_width);
  return g;
}

bool PumInterpolant::Impl::try_gpu_fit(const Table<double> &points, const Table<double> &values) {
  const auto t0 = Clock::now();
  std::vector<double> lo, hi;
  spatial::bounding_box(points, lo, hi);
  grid = std::make_unique<spatial::GridIndex>(lo.data(), hi.data(), s, points.rows(),
                                              opt.patch_density, opt.patch_radius);
  const detail::PumGrid g = gpu_grid();
  auto fit = detail::pum_gpu_fit(g, points, values, opt, min_pts);
  if (!fit)
    return false; // duplicates (the CPU path reports or merges them) or patches too large
  const std::int64_t ncells = g.ncells;
  const auto &cnt = fit->counts();
  const auto &eps = fit->eps();
  const auto &reg = fit->regularised();
  const auto &radius = fit->radius();
  std::vector<double> e;
  std::vector<std::int64_t> sizes;
  for (std::int64_t c = 0; c < ncells; ++c)
    if (cnt[c] > 0) {
      e.push_back(eps[c]);
      sizes.push_back(cnt[c]);
      stats.grown_patches += radius[c] > g.delta;
      stats.regularised_patches += reg[c];
    }
  stats.patches = static_cast<std::int64_t>(sizes.size());
  stats.empty_patches = ncells - stats.patches;
  stats.radius = g.delta;
  set_distribution_stats(stats, e, sizes);
  stats.seconds_fit = fit->seconds_fit;
  stats.seconds_index = since(t0) - fit->seconds_fit;
  stats.fit_backend = Backend::cuda;
  base_ring = g.base_ring;
  gpu_fit = fit.get();
  gpu = std::move(fit);
  host_ready = false;
  if (opt.progress)
    opt.progress(1.0);
  return true;
}

void PumInterpolant::Impl::ensure_host() {
  if (host_ready)
    return;
  const detail::PumHostPacked h = gpu_fit->download();
  const std::int64_t ncells = grid->num_cells();
  const auto total = static_cast<std::int64_t>(h.px.size()) / s;
  pts = Table<double>(total, s);
  std::copy(h.px.begin(), h.px.end(), pts.data());
  pidx.resize(total);
  std::iota(pidx.begin(), pidx.end(), std::int64_t{0});
  patches.assign(ncells, Patch{});
  coef_at.resize(ncells);
  centres.resize(ncells * s);
  for (std::int64_t c = 0; c < ncells; ++c) {
    Patch &P = patches[c];
    P.radius = h.radius[c];
    P.eps = h.eps[c];
    P.scale = h.scale[c];
    P.begin = h.off[c];
    P.end = h.off[c] + h.cnt[c];
    coef_at[c] = h.off[c] * ncols;
    grid->cell_centre(c, centres.data() + c * s);
  }
  coef.assign(h.coef.begin(), h.coef.end());
  grown_list.assign(h.grown.begin(), h.grown.end());
  host_ready = true;
}

detail::PumGpu &PumInterpolant::Impl::gpu_engine() {
  if (!gpu) {
    // Pack the CPU fit: patch c's points become entries begin .. end of px.
    const std::int64_t ncells = grid->num_cells();
    const auto total = static_cast<std::int64_t>(pidx.size());
    detail::PumHostPacked h;
    h.kernel = opt.kernel;
    h.grid = gpu_grid();
    h.ncols = static_cast<int>(ncols);
    h.off.resize(ncells);
    h.cnt.resize(ncells);
    h.radius.resize(ncells);
    h.scale.resize(ncells);
    for (std::int64_t c = 0; c < ncells; ++c) {
      h.off[c] = patches[c].begin;
      h.cnt[c] = static_cast<int>(patches[c].n());
      h.radius[c] = patches[c].radius;
      h.scale[c] = patches[c].scale;
    }
    h.px.resize(total * s);
    for (std::int64_t k = 0; k < s; ++k)
      for (std::int64_t a = 0; a < total; ++a)
        h.px[k * total + a] = pts(pidx[a], k);
    h.coef.assign(coef.begin(), coef.end());
    h.grown.assign(grown_list.begin(), grown_list.end());
    gpu = detail::make_pum_gpu(h);
  }
  return *gpu;
}

namespace {
// f.template operator()<S>() with S the dimension s where it is 1, 2 or 3 (0: any other).
template <class F> void with_dim(std::int64_t s, F &&f) {
  switch (s) {
  case 1:
    f.template operator()<1>();
    break;
  case 2:
    f.template operator()<2>();
    break;
  case 3:
    f.template operator()<3>();
    break;
  default:
    f.template operator()<0>();
  }
}
} // namespace

void PumInterpolant::Impl::eval_cpu(const Table<double> &y, Table<double> &out,
                                    std::vector<std::int64_t> &status) {
  const std::int64_t m = y.rows();
  status.assign(static_cast<std::size_t>(m), eval_ok);
  std::atomic<std::int64_t> evaluated{0};
  detail::ParallelErrors errors;
  const double delta = grid->patch_radius();
  std::int64_t max_cells_per_axis = 1;
  for (std::int64_t k = 0; k < s; ++k)
    max_cells_per_axis = std::max(max_cells_per_axis, grid->cells_per_axis()[k]);
  const int nthreads = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  kdef::visit<double>(opt.kernel, [&](auto kf) {
    // Points [lo, hi) on `threads` threads, `chunk` points per task.
    const auto range = [&]<int S>(std::int64_t lo, std::int64_t hi, int threads,
                                  std::int64_t chunk) {
#pragma omp parallel num_threads(threads)
      {
        std::vector<double> x(s), acc(ncols), phi;
#pragma omp for schedule(dynamic, chunk)
        for (std::int64_t i = lo; i < hi; ++i) {
          if (errors.failed())
            continue;
          try {
            const std::int64_t done = ++evaluated;
            if (opt.progress && omp_get_thread_num() == 0 && done % 1024 == 0)
              opt.progress(static_cast<double>(done) / static_cast<double>(m));
            bool in_box = true;
            for (std::int64_t k = 0; k < s; ++k) {
              x[k] = y(i, k);
              const double tol = 1e-12 * (grid->hi(k) - grid->lo(k));
              in_box = in_box && x[k] >= grid->lo(k) - tol && x[k] <= grid->hi(k) + tol;
            }
            if (!in_box && !opt.extrapolate) {
              status[i] = eval_outside;
              continue;
            }
            std::fill(acc.begin(), acc.end(), 0.0);
            double wsum = 0, best_d2 = std::numeric_limits<double>::infinity();
            std::int64_t nearest = -1;
            const std::int64_t cell = grid->hash(x.data());
            auto visit_patch = [&](std::int64_t j) {
              const Patch &P = patches[j];
              if (!nonempty(j)) // partitioned: a patch whose points another rank holds counts
                return;         // for the nearest one; its weight here is 0 (visibility)
              const double *xi = centres.data() + j * s;
              double d2 = 0;
              for (std::int64_t k = 0; k < s; ++k)
                d2 = spatial::dist2_step(d2, x[k], xi[k]);
              if (d2 < best_d2) {
                best_d2 = d2;
                nearest = j;
              }
              const double w = P.radius > 0 ? w2(std::sqrt(d2) / P.radius) : 0.0;
              if (w <= 0)
                return;
              if (P.n() == 0)
                throw Error(ErrorCode::internal,
                            fmt::format("PUM over ranks: patch {} reaches a point of this rank "
                                        "but its fit was not sent here",
                                        j));
              wsum += w;
              this->template add_local<S>(kf, j, x.data(), w, acc.data(), phi);
            };
            // Patches of the seed's radius through the neighbouring cells; grown ones (few) apart,
            // so that one sparse region does not widen every point's search.
            grid->for_neighbours(cell, base_ring, [&](std::int64_t j) {
              if (patches[j].radius <= delta)
                visit_patch(j);
            });
            for (const std::int64_t j : grown_list)
              visit_patch(j);
            if (wsum > 0) {
              for (std::int64_t q = 0; q < ncols; ++q)
                out(i, q) = acc[q] / wsum;
              continue;
            }
            if (!opt.extrapolate) {
              status[i] = in_box ? eval_hole : eval_outside;
              continue;
            }
            // Extrapolation: the nearest non-empty patch's local interpolant, searching wider rings
            // (at most the whole grid; set_data guarantees a non-empty patch exists).
            for (std::int64_t ring = 2 * base_ring; nearest < 0; ring *= 2) {
              grid->for_neighbours(cell, ring, visit_patch);
              if (ring > max_cells_per_axis)
                break;
            }
            if (patches[nearest].n() == 0) { // partitioned: held by another rank
              status[i] = nearest;
              continue;
            }
            std::fill(acc.begin(), acc.end(), 0.0);
            this->template add_local<S>(kf, nearest, x.data(), 1.0, acc.data(), phi);
            for (std::int64_t q = 0; q < ncols; ++q)
              out(i, q) = acc[q];
          } catch (...) {
            errors.capture();
          }
        }
      }
    };
    with_dim(s, [&]<int S>() {
      // The first 64 points time the task-size model's C.
      last_eval_chunk = run_with_model_chunk(
          m, nthreads, opt.eval_chunk, 64, kPumEvalChunk,
          [&](std::int64_t lo, std::int64_t hi, int threads, std::int64_t chunk) {
            range.template operator()<S>(lo, hi, threads, chunk);
          });
    });
  });
  errors.rethrow();
  if (opt.progress)
    opt.progress(1.0);
}

void PumInterpolant::Impl::eval_single_patches(const Table<double> &y,
                                               const std::vector<std::int64_t> &patch,
                                               Table<double> &out) const {
  kdef::visit<double>(opt.kernel, [&](auto kf) {
    with_dim(s, [&]<int S>() { // the same instantiation as eval_cpu's: the same bits
      std::vector<double> x(s), acc(ncols), phi;
      for (std::int64_t i = 0; i < y.rows(); ++i) {
        for (std::int64_t k = 0; k < s; ++k)
          x[k] = y(i, k);
        std::fill(acc.begin(), acc.end(), 0.0);
        this->template add_local<S>(kf, patch[i], x.data(), 1.0, acc.data(), phi);
        for (std::int64_t q = 0; q < ncols; ++q)
          out(i, q) = acc[q];
      }
    });
  });
}

Table<double> PumInterpolant::evaluate(const Table<double> &y) const {
  Impl &im = *impl_;
  if (!im.grid)
    throw Error(ErrorCode::invalid_argument, "evaluate: call set_data first");
  if (im.comm)
    return im.evaluate_partitioned(y); // collective
  if (y.cols() != im.s)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("evaluation points have {} columns but the data have dimension {}",
                            y.cols(), im.s));
  check_finite(y, "evaluation points");
  const std::int64_t m = y.rows(), s = im.s;
  Table<double> out(m, im.ncols);
  const bool gpu_shape =
      (s == 2 || s == 3) && im.ncols <= detail::pum_gpu_max_cols && im.opt.degree < 0;
  {
    std::lock_guard<std::mutex> lock(im.lazy);
    if (im.gpu_fit || im.opt.backend == Backend::cuda ||
        (im.opt.backend == Backend::automatic && gpu_shape && gpu_count() > 0)) {
      // Points outside the box or in holes make the GPU decline the batch: the CPU path below
      // then extrapolates them or names them in its error. With the automatic backend a CUDA
      // failure (e.g. out of GPU memory) also leaves the points to the CPU path.
      bool served = false;
      try {
        served = im.gpu_engine().evaluate(y.data(), m, out.data());
      } catch (const Error &e) {
        if (im.opt.backend != Backend::automatic || e.code() != ErrorCode::device)
          throw;
        if (!im.gpu_fit)
          im.gpu.reset();
      }
      if (served) {
        if (im.opt.progress)
          im.opt.progress(1.0);
        return out;
      }
    }
    im.ensure_host();
  }
  std::vector<std::int64_t> status;
  im.eval_cpu(y, out, status);
  const auto first = [&](std::int64_t what) {
    const auto at = std::find(status.begin(), status.end(), what);
    return at == status.end() ? std::int64_t{-1} : static_cast<std::int64_t>(at - status.begin());
  };
  const std::int64_t outside = first(Impl::eval_outside),
                     i = outside >= 0 ? outside : first(Impl::eval_hole);
  if (i >= 0) {
    std::string where;
    for (std::int64_t k = 0; k < s; ++k)
      where += fmt::format("{}{}", k ? ", " : "", y(i, k));
    throw Error(ErrorCode::invalid_argument,
                outside >= 0 ? fmt::format("evaluation point {} ({}) lies outside the data's "
                                           "bounding box; use --extrapolate to evaluate it from "
                                           "the nearest patches",
                                           i, where)
                             : fmt::format("evaluation point {} ({}) is not covered by any patch "
                                           "(a hole in the data); use --extrapolate",
                                           i, where));
  }
  return out;
}

} // namespace ksum
