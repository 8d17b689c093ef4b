// The k-nearest-neighbour RBF interpolant (SciPy's RBFInterpolator with `neighbors`): for each
// evaluation point, seed 000 eq. (2)–(4) on its k nearest data points, with the polynomial in
// coordinates centred and scaled to the neighbourhood's box (only the conditioning depends on
// that: the span, hence the interpolant, does not).
#include <ksum/error.hpp>
#include <ksum/global.hpp>

#include "core/parallel_errors.hpp"
#include "core/validate.hpp"
#include "rbf/global/polynomial.hpp"
#include "spatial/kdtree.hpp"

#include <Eigen/Dense>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <omp.h>
#include <vector>

namespace ksum {

struct LocalRbfInterpolant::Impl {
  LocalRbfOptions opt;
  int degree = -1;
  std::int64_t k = 0, d = 0, c = 0;
  Table<double> points, values;
  std::unique_ptr<spatial::KdTree> tree;
};

LocalRbfInterpolant::LocalRbfInterpolant(LocalRbfOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (options.neighbors < 1)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("neighbors = {}: must be at least 1", options.neighbors));
  if (!(options.smoothing >= 0) || !std::isfinite(options.smoothing))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("smoothing = {}: must be finite and non-negative", options.smoothing));
  if (!(options.eps > 0) || !std::isfinite(options.eps))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("eps = {}: must be positive and finite", options.eps));
  impl_->degree = options.degree == GlobalRbfOptions::kernel_default_degree
                      ? default_degree(options.kernel)
                      : options.degree;
  if (impl_->degree < -1)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("degree = {}: must be at least -1", options.degree));
  impl_->opt = std::move(options);
}
LocalRbfInterpolant::~LocalRbfInterpolant() = default;
LocalRbfInterpolant::LocalRbfInterpolant(LocalRbfInterpolant &&) noexcept = default;
LocalRbfInterpolant &LocalRbfInterpolant::operator=(LocalRbfInterpolant &&) noexcept = default;

const LocalRbfOptions &LocalRbfInterpolant::options() const {
  return impl_->opt;
}

void LocalRbfInterpolant::set_data(const Table<double> &points, const Table<double> &values) {
  auto &im = *impl_;
  if (points.rows() == 0)
    throw Error(ErrorCode::empty_input, "points: no data points");
  if (points.cols() == 0)
    throw Error(ErrorCode::empty_input, "points: dimension must be at least 1 (no columns)");
  if (values.cols() == 0)
    throw Error(ErrorCode::empty_input, "values: need at least one column");
  if (values.rows() != points.rows())
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("values have {} rows, points {}", values.rows(), points.rows()));
  if (points.cols() > rbf::PolyBasis::max_dim)
    throw Error(ErrorCode::invalid_argument, fmt::format("dimension {} above the {} supported",
                                                         points.cols(), rbf::PolyBasis::max_dim));
  detail::check_finite(points, "points");
  detail::check_finite(values, "values");
  const std::int64_t k = std::min<std::int64_t>(im.opt.neighbors, points.rows());
  const double terms = rbf::PolyBasis::count(im.degree, points.cols());
  if (terms > static_cast<double>(k))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("At least {} data points are required when `degree` is {} and the "
                            "number of dimensions is {}.",
                            static_cast<std::int64_t>(terms), im.degree, points.cols()));
  im.k = k;
  im.d = points.cols();
  im.c = values.cols();
  im.points = points; // owned copies: the caller's arrays may go away
  im.values = values;
  im.tree = std::make_unique<spatial::KdTree>(im.points, std::vector<std::int64_t>{}, 16,
                                              im.opt.threads > 0 ? im.opt.threads
                                                                 : omp_get_max_threads());
}

Table<double> LocalRbfInterpolant::evaluate(const Table<double> &x) const {
  const auto &im = *impl_;
  if (!im.tree)
    throw Error(ErrorCode::invalid_argument, "set_data() must be called before evaluate()");
  if (x.cols() != im.d)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("points have {} coordinates, the data {}", x.cols(), im.d));
  detail::check_finite(x, "points");
  const std::int64_t m = x.rows(), k = im.k, d = im.d, c = im.c;
  Table<double> out(m, c, Uninitialized{});
  const Kernel kern = im.opt.kernel;
  const double eps = im.opt.eps;
  const double diag = definiteness_sign(kern) * im.opt.smoothing;
  detail::ParallelErrors errors;
  const int threads = im.opt.threads > 0 ? im.opt.threads : omp_get_max_threads();
#pragma omp parallel num_threads(threads)
  {
    std::vector<std::pair<double, std::int64_t>> nb;
    std::vector<double> coords, xi(d), centre(d), pv(rbf::PolyBasis::max_terms);
    Eigen::MatrixXd A, rhs;
#pragma omp for schedule(dynamic, 16)
    for (std::int64_t i = 0; i < m; ++i) {
      if (errors.failed())
        continue;
      try {
        for (std::int64_t a = 0; a < d; ++a)
          xi[a] = x(i, a);
        im.tree->nearest(xi.data(), static_cast<int>(k), 0, nb, &coords);
        // The polynomial's coordinates: the neighbourhood's box mapped into [−1, 1]^d.
        double scale = 0;
        for (std::int64_t a = 0; a < d; ++a) {
          double lo = coords[a], hi = coords[a];
          for (std::int64_t j = 1; j < k; ++j) {
            lo = std::min(lo, coords[j * d + a]);
            hi = std::max(hi, coords[j * d + a]);
          }
          centre[a] = 0.5 * (lo + hi);
          scale = std::max(scale, 0.5 * (hi - lo));
        }
        const rbf::PolyBasis basis(im.degree, d, centre, scale > 0 ? scale : 1.0);
        const std::int64_t q = basis.terms(), s = k + q;
        A.setZero(s, s);
        rhs.setZero(s, c);
        for (std::int64_t a = 0; a < k; ++a) {
          const double *ya = &coords[a * d];
          for (std::int64_t b = 0; b < a; ++b) {
            const double *yb = &coords[b * d];
            double r2 = 0;
            for (std::int64_t t = 0; t < d; ++t)
              r2 += (ya[t] - yb[t]) * (ya[t] - yb[t]);
            A(a, b) = A(b, a) = kernel_value(kern, eps, std::sqrt(r2));
          }
          A(a, a) = kernel_value(kern, eps, 0.0) + diag;
          basis.eval(ya, 1, pv.data());
          for (std::int64_t t = 0; t < q; ++t)
            A(a, k + t) = A(k + t, a) = pv[t];
          for (std::int64_t r = 0; r < c; ++r)
            rhs(a, r) = im.values(nb[a].second, r);
        }
        const Eigen::PartialPivLU<Eigen::MatrixXd> lu(A);
        const Eigen::MatrixXd coef = lu.solve(rhs);
        if (!coef.allFinite() || !(lu.rcond() > 0))
          throw Error(ErrorCode::invalid_argument,
                      fmt::format("the local system of evaluation point {} (its {} nearest data "
                                  "points) is singular: duplicate points, or too few distinct "
                                  "points for degree {}",
                                  i, k, im.degree));
        basis.eval(xi.data(), 1, pv.data());
        for (std::int64_t r = 0; r < c; ++r) {
          double v = 0;
          for (std::int64_t a = 0; a < k; ++a) {
            const double *ya = &coords[a * d];
            double r2 = 0;
            for (std::int64_t t = 0; t < d; ++t)
              r2 += (xi[t] - ya[t]) * (xi[t] - ya[t]);
            v += coef(a, r) * kernel_value(kern, eps, std::sqrt(r2));
          }
          for (std::int64_t t = 0; t < q; ++t)
            v += coef(k + t, r) * pv[t];
          out(i, r) = v;
        }
      } catch (...) {
        errors.capture();
      }
    }
  }
  errors.rethrow();
  return out;
}

} // namespace ksum
