// GlobalRbfInterpolant: validation, the polynomial basis, the choice of solver, and evaluation.
#include "core/validate.hpp"
#include "rbf/global/distributed_global.hpp"
#include "rbf/global/polynomial.hpp"
#include "rbf/global/solvers.hpp"
#include "spatial/kdtree.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>
#include <ksum/global.hpp>

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numeric>
#include <omp.h>

namespace ksum {

GlobalSolver parse_global_solver(std::string_view name) {
  if (name == "auto")
    return GlobalSolver::automatic;
  if (name == "dense")
    return GlobalSolver::dense;
  if (name == "fgp")
    return GlobalSolver::fgp;
  if (name == "krylov" || name == "gmres")
    return GlobalSolver::krylov;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown solver '{}'; valid: auto, dense, fgp, krylov", name));
}

std::string_view to_string(GlobalSolver s) {
  switch (s) {
  case GlobalSolver::automatic:
    return "auto";
  case GlobalSolver::dense:
    return "dense";
  case GlobalSolver::fgp:
    return "fgp";
  case GlobalSolver::krylov:
    return "krylov";
  }
  return "?";
}

CentreUpdate parse_centre_update(std::string_view name) {
  if (name == "auto")
    return CentreUpdate::automatic;
  if (name == "update")
    return CentreUpdate::update;
  if (name == "refit")
    return CentreUpdate::refit;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown centre update '{}'; valid: auto, update, refit", name));
}

std::string_view to_string(CentreUpdate u) {
  switch (u) {
  case CentreUpdate::automatic:
    return "auto";
  case CentreUpdate::update:
    return "update";
  case CentreUpdate::refit:
    return "refit";
  }
  return "?";
}

// Measured on this project's CPU by bench/rbf_update_bench (docs/bsm.md, "moving RBF centres"):
// the crossover lies at 2m ≈ N/10 … N/5.5; N/16 keeps a margin of about 1.6.
bool centre_update_pays(std::int64_t centres, std::int64_t moved) {
  return 2 * moved * 16 <= centres;
}

int default_degree(Kernel k) {
  return std::max(-1, kernel_info(k).min_degree);
}

int definiteness_sign(Kernel k) {
  return (kernel_info(k).min_degree + 1) % 2 == 0 ? 1 : -1;
}

namespace {

Backend resolve(Backend b) {
  if (b != Backend::automatic)
    return b;
  return gpu_count() == 0 ? Backend::cpu : Backend::cuda;
}

class DirectMatVec final : public KernelMatVec {
public:
  DirectMatVec(const Table<double> &centres, Kernel kernel, double eps, double smoothing,
               Backend backend, int threads, Method method, double fmm_tolerance)
      : ds_(DirectOptions{.kernel = kernel,
                          .eps = eps,
                          .backend = backend,
                          .threads = threads,
                          .method = method,
                          .tolerance = fmm_tolerance}),
        tolerance_(fmm_tolerance),
        diag_(kernel_value(kernel, eps, 0.0) + definiteness_sign(kernel) * smoothing),
        n_(centres.rows()) {
    ds_.set_points(centres);
  }
  std::int64_t size() const override { return n_; }
  void apply(const Table<double> &x, Table<double> &y) override {
    y = ds_.execute(x);
    rbf::add_diagonal(diag_, x, y);
  }
  std::string describe() const override {
    const char *where = ds_.backend() == Backend::cuda ? "GPU" : "CPU";
    if (ds_.stats().method == Method::fmm)
      return fmt::format("fmm ({}, tol {:.0e}, order {})", where, tolerance_,
                         ds_.stats().fmm_order);
    return fmt::format("direct ({})", where);
  }

private:
  DirectSum<double> ds_;
  double tolerance_;
  double diag_;
  std::int64_t n_;
};

// The polynomial basis of degree deg on the box of the points, mapped into [−1, 1]^d.
rbf::PolyBasis basis_from_box(const std::vector<double> &lo, const std::vector<double> &hi,
                              int deg) {
  const std::int64_t d = static_cast<std::int64_t>(lo.size());
  std::vector<double> centre(d);
  double half = 0;
  for (std::int64_t k = 0; k < d; ++k) {
    centre[k] = 0.5 * (lo[k] + hi[k]);
    half = std::max(half, 0.5 * (hi[k] - lo[k]));
  }
  return rbf::PolyBasis(deg, d, centre, half > 0 ? half : 1.0);
}

rbf::PolyBasis basis_on_box(const Table<double> &points, int deg) {
  const std::int64_t n = points.rows(), d = points.cols();
  std::vector<double> lo(d), hi(d);
  for (std::int64_t k = 0; k < d; ++k) {
    lo[k] = hi[k] = points(0, k);
    for (std::int64_t i = 0; i < n; ++i) {
      lo[k] = std::min(lo[k], points(i, k));
      hi[k] = std::max(hi[k], points(i, k));
    }
  }
  return basis_from_box(lo, hi, deg);
}

// Rows with the span and the singular values of P's: R of P = QR when P has more rows than
// columns, else P itself. Stacked over ranks they decide P's rank as P would (TSQR).
Table<double> r_factor(const Table<double> &P) {
  const std::int64_t n = P.rows(), m = P.cols();
  if (m == 0)
    return Table<double>(0, 0);
  if (n <= m)
    return P;
  const Eigen::Map<const Eigen::MatrixXd> Pm(P.data(), n, m);
  const Eigen::HouseholderQR<Eigen::MatrixXd> qr(Pm);
  Table<double> R(m, m);
  Eigen::Map<Eigen::MatrixXd>(R.data(), m, m) =
      qr.matrixQR().topRows(m).triangularView<Eigen::Upper>();
  return R;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

std::unique_ptr<KernelMatVec> make_direct_matvec(const Table<double> &centres, Kernel kernel,
                                                 double eps, double smoothing, Backend backend,
                                                 int threads, Method method, double fmm_tolerance) {
  return std::make_unique<DirectMatVec>(centres, kernel, eps, smoothing, resolve(backend), threads,
                                        method, fmm_tolerance);
}

std::vector<std::int64_t> rbf::twins_in(const spatial::KdTree &tree, const Table<double> &x,
                                        std::int64_t self_base, std::int64_t row_base, int nt) {
  const std::int64_t n = x.rows(), d = x.cols();
  std::vector<std::int64_t> twin(static_cast<std::size_t>(n), -1);
#pragma omp parallel num_threads(nt)
  {
    std::vector<std::pair<double, std::int64_t>> nb;
    std::vector<double> xi(static_cast<std::size_t>(d));
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t c = 0; c < d; ++c)
        xi[c] = x(i, c);
      tree.nearest(xi.data(), 2, 0, nb);
      for (const auto &[d2, j] : nb)
        if (j != self_base + i && d2 == 0.0) {
          twin[i] = row_base + j;
          break;
        }
    }
  }
  return twin;
}

void rbf::check_distinct(const Table<double> &x) {
  const std::vector<std::int64_t> twin =
      twins_in(spatial::KdTree(x), x, 0, 0, omp_get_max_threads());
  for (std::int64_t i = 0; i < x.rows(); ++i)
    if (twin[i] >= 0) // the smallest row with a twin, and its smallest twin
      throw Error(ErrorCode::invalid_argument, distinct_error_message(i, twin[i]));
}

std::string rbf::distinct_error_message(std::int64_t i, std::int64_t j) {
  return fmt::format("data points {} and {} are identical (rows counted from 0): the "
                     "interpolation matrix is singular. Remove or merge repeated points",
                     i, j);
}

struct GlobalRbfInterpolant::Impl {
  GlobalRbfOptions opt;
  GlobalRbfStats stats;
  Table<double> centres, values, lambda, poly;
  rbf::PolyBasis basis;
  Backend backend = Backend::cpu;
  bool fitted = false;
  // K and K⁻¹ of a dense CPU fit, for move_centres' updates (null: not held).
  std::unique_ptr<rbf::HeldInverse> held;
  // automatic found the system too ill-conditioned for updates (see move_centres); set_data
  // clears it.
  bool updates_off = false;
  // A distributed fit's communicator (null: one process): centres and λ are this rank's rows.
  std::unique_ptr<Communicator> comm;

  void fit(const Table<double> &points, const Table<double> &values, rbf::PolyBasis new_basis,
           bool form_inverse);
  void fit_distributed(const Table<double> &points, const Table<double> &values,
                       const Communicator &comm);
  void check_shapes(std::int64_t n, std::int64_t d, std::int64_t nc) const;
  // The L-set size must exceed the polynomial's terms.
  void check_lset_size(std::int64_t terms, std::int64_t d) const {
    if (opt.lset_size <= terms)
      throw Error(
          ErrorCode::invalid_argument,
          fmt::format("the L-set size q = {} must exceed the {} polynomial terms of degree {} "
                      "in {} dimensions (use q >= {})",
                      opt.lset_size, terms, degree(), d, 2 * terms + 1));
  }

  double fmm_tolerance() const {
    return opt.matvec_tolerance > 0 ? opt.matvec_tolerance
                                    : std::clamp(opt.tolerance / 10, 1e-11, 0.1);
  }

  void validate_options() const {
    const auto &info = kernel_info(opt.kernel);
    if (opt.matvec_tolerance != 0 &&
        !(opt.matvec_tolerance >= 1e-11 && opt.matvec_tolerance <= 0.1))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("matvec_tolerance must be 0 (coupled to the solver's) or lie in "
                              "[1e-11, 0.1], got {}",
                              opt.matvec_tolerance));
    if (info.singular)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("kernel '{}' is singular at r = 0 and cannot interpolate; use e.g. "
                              "multiquadric, tps, gaussian or matern4",
                              info.name));
    if (!(opt.eps > 0) || !std::isfinite(opt.eps))
      throw Error(
          ErrorCode::invalid_argument,
          fmt::format("the shape parameter eps must be positive and finite, got {}", opt.eps));
    if (!(opt.smoothing >= 0) || !std::isfinite(opt.smoothing))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("smoothing must be >= 0, got {}", opt.smoothing));
    if (!(opt.tolerance >= 1e-14 && opt.tolerance < 1))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("tolerance must lie in [1e-14, 1) (double precision reaches about "
                              "1e-14 at best), got {}",
                              opt.tolerance));
    if (opt.max_iterations < 1)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("max_iterations must be >= 1, got {}", opt.max_iterations));
    if (opt.gmres_restart < 1 || opt.gmres_restart > 2000)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("gmres_restart must lie in [1, 2000], got {}", opt.gmres_restart));
    if (opt.lset_size < 2 || opt.lset_size > 1000)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("the L-set size q must lie in [2, 1000] (seed 000: 30-50), got {}",
                              opt.lset_size));
    const int deg = degree();
    if (deg < -1)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("polynomial degree must be >= -1, got {}", opt.degree));
    if (deg < info.min_degree)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("kernel '{}' needs a polynomial of degree >= {} for a unique "
                              "interpolant (seed 000 table 1); got degree {}",
                              info.name, info.min_degree, deg));
  }
  int degree() const {
    return opt.degree == GlobalRbfOptions::kernel_default_degree ? default_degree(opt.kernel)
                                                                 : opt.degree;
  }

  void check_unisolvent(const Table<double> &P, std::int64_t d) const {
    const std::int64_t m = P.cols();
    if (m == 0)
      return;
    if (P.rows() < m)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{} data points cannot determine a polynomial of degree {} in {} "
                              "dimensions ({} terms)",
                              P.rows(), degree(), d, m));
    const Eigen::Map<const Eigen::MatrixXd> Pm(P.data(), P.rows(), m);
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(Pm);
    qr.setThreshold(1e-10);
    if (qr.rank() < m)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("the data points are not unisolvent for polynomials of degree {} "
                              "in {} dimensions (rank {} of {} terms): they lie on a "
                              "lower-dimensional set (e.g. a line or a plane). Use a lower "
                              "--degree or a strictly positive definite kernel",
                              degree(), d, qr.rank(), m));
  }

  GlobalSolver choose_solver(std::int64_t n) const {
    const int deg = degree();
    const bool fgp_ok = deg == 0;
    switch (opt.solver) {
    case GlobalSolver::automatic:
      if (n <= opt.dense_max_n)
        return GlobalSolver::dense;
      return fgp_ok ? GlobalSolver::fgp : GlobalSolver::krylov;
    case GlobalSolver::fgp:
      if (!fgp_ok)
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("FGP (seed 000 §3.1) adds exactly a constant: it needs "
                                "polynomial degree 0 (got {}; kernel '{}'). Use --solver krylov",
                                deg, kernel_info(opt.kernel).name));
      return GlobalSolver::fgp;
    default:
      return opt.solver;
    }
  }
};

GlobalRbfInterpolant::GlobalRbfInterpolant(GlobalRbfOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->opt = std::move(options);
  impl_->validate_options();
}
GlobalRbfInterpolant::~GlobalRbfInterpolant() = default;
GlobalRbfInterpolant::GlobalRbfInterpolant(GlobalRbfInterpolant &&) noexcept = default;
GlobalRbfInterpolant &GlobalRbfInterpolant::operator=(GlobalRbfInterpolant &&) noexcept = default;

// The checks of set_data's arguments that need no other rank: n rows (all ranks' together when
// distributed) of dimension d with nc value columns.
void GlobalRbfInterpolant::Impl::check_shapes(std::int64_t n, std::int64_t d,
                                              std::int64_t nc) const {
  if (n == 0 || d == 0)
    throw Error(ErrorCode::empty_input, "no data points to interpolate");
  if (nc == 0)
    throw Error(ErrorCode::empty_input, "no value columns to interpolate");
  if (d > rbf::PolyBasis::max_dim)
    throw Error(ErrorCode::unsupported,
                fmt::format("dimension {} is above the supported {}", d, rbf::PolyBasis::max_dim));
  const int deg = degree();
  if (rbf::PolyBasis::count(deg, d) > static_cast<double>(rbf::PolyBasis::max_terms))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("a polynomial of degree {} in {} dimensions has {:.0f} terms; at most "
                            "{} are supported",
                            deg, d, rbf::PolyBasis::count(deg, d), rbf::PolyBasis::max_terms));
}

void GlobalRbfInterpolant::set_data(const Table<double> &points, const Table<double> &values) {
  Impl &im = *impl_;
  const std::int64_t n = points.rows(), d = points.cols(), nc = values.cols();
  if (values.rows() != n)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("{} data points but {} value rows", n, values.rows()));
  im.check_shapes(n, d, nc);
  detail::check_finite(points, "data points");
  detail::check_finite(values, "data values");
  const int deg = im.degree();
  rbf::check_distinct(points);
  im.fit(points, values, basis_on_box(points, deg), false);
  im.updates_off = false;
  im.comm.reset();
}

// Solves for λ and the polynomial on (points, values) in the given basis, and commits (nothing
// changes when it throws). form_inverse: a dense CPU fit forms and holds K⁻¹.
void GlobalRbfInterpolant::Impl::fit(const Table<double> &points, const Table<double> &values,
                                     rbf::PolyBasis new_basis, bool form_inverse) {
  Impl &im = *this;
  const auto &opt = im.opt;
  const std::int64_t n = points.rows(), d = points.cols(), nc = values.cols();
  const int deg = im.degree();
  const Table<double> P = new_basis.matrix(points);
  std::unique_ptr<rbf::HeldInverse> new_held;
  im.check_unisolvent(P, d);
  im.check_lset_size(P.cols(), d);

  im.backend = resolve(opt.backend);
  if (im.backend == Backend::cuda && gpu_count() == 0)
    throw Error(ErrorCode::unsupported, "backend gpu requested but no GPU is visible");
  GlobalRbfStats st;
  st.solver = im.choose_solver(n);
  st.backend = im.backend;
  st.degree = deg;
  st.poly_terms = P.cols();

  std::unique_ptr<KernelMatVec> A =
      opt.matvec ? opt.matvec(points)
                 : make_direct_matvec(points, opt.kernel, opt.eps, opt.smoothing, im.backend,
                                      opt.threads, opt.matvec_method, im.fmm_tolerance());
  if (!A || A->size() != n)
    throw Error(ErrorCode::invalid_argument,
                "the supplied matvec factory returned no product or one of the wrong size");
  st.matvec = A->describe();

  rbf::SolveResult res;
  const auto t0 = std::chrono::steady_clock::now();
  if (st.solver == GlobalSolver::dense) {
    const rbf::DenseProblem dp{&points,    &P,      &values,
                               opt.kernel, opt.eps, definiteness_sign(opt.kernel) * opt.smoothing,
                               opt.threads};
    if (im.backend == Backend::cuda)
      res = rbf::solve_dense_gpu(dp);
    else if (form_inverse) {
      new_held = std::make_unique<rbf::HeldInverse>();
      res = rbf::solve_dense_inverse(dp, *new_held);
    } else
      res = rbf::solve_dense_cpu(dp);
    st.seconds_solve = seconds_since(t0);
  } else {
    const rbf::LSets sets =
        rbf::build_lsets(points, {opt.kernel, opt.eps, opt.lset_size, deg, opt.seed, opt.threads,
                                  definiteness_sign(opt.kernel) * opt.smoothing});
    st.lsets = sets.count();
    st.lsets_skipped = sets.skipped;
    if (sets.count() > 0 && sets.skipped == sets.count())
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("every local L-set system was singular (q = {}, kernel '{}', eps "
                              "{}): no preconditioner. Try a larger eps or q, or --solver dense",
                              opt.lset_size, kernel_info(opt.kernel).name, opt.eps));
    st.seconds_setup = seconds_since(t0);
    const auto t1 = std::chrono::steady_clock::now();
    const rbf::IterSettings it{opt.tolerance, opt.max_iterations, opt.gmres_restart, opt.threads,
                               opt.progress};
    std::vector<double> mu;
    const rbf::TauOperator tau = [&](const double *r, double *t) {
      sets.apply(r, t, mu, opt.threads);
    };
    res = st.solver == GlobalSolver::fgp ? rbf::solve_fgp(*A, tau, values, it)
                                         : rbf::solve_gmres(*A, tau, P, values, it);
    st.seconds_solve = seconds_since(t1);
  }
  detail::check_finite(res.lambda, "the computed coefficients (the system is numerically "
                                   "singular: try a larger eps or --smoothing)");

  // The true residual f − Φλ − Πc at the centres, by one more product.
  Table<double> s(n, nc);
  A->apply(res.lambda, s);
  ++res.matvecs;
  double worst_inf = 0; // max over columns of ‖r‖∞ / ‖f‖∞ (FGP's measure)
  for (std::int64_t c = 0; c < nc; ++c) {
    double rmax = 0, r2 = 0, f2 = 0, fmax = 0;
    std::vector<double> pv(P.cols());
    for (std::int64_t i = 0; i < n; ++i) {
      double p = 0;
      for (std::int64_t t = 0; t < P.cols(); ++t)
        p += P(i, t) * res.poly(t, c);
      const double r = values(i, c) - s(i, c) - p;
      rmax = std::max(rmax, std::abs(r));
      r2 += r * r;
      f2 += values(i, c) * values(i, c);
      fmax = std::max(fmax, std::abs(values(i, c)));
    }
    worst_inf = std::max(worst_inf, fmax > 0 ? rmax / fmax : rmax);
    st.residual_max = std::max(st.residual_max, rmax);
    st.residual_rel = std::max(st.residual_rel, f2 > 0 ? std::sqrt(r2 / f2) : std::sqrt(r2));
  }
  st.iterations = res.iterations;
  st.matvecs = res.matvecs;
  st.history = std::move(res.history);
  if (!res.converged) {
    const bool fgp = st.solver == GlobalSolver::fgp;
    throw Error(ErrorCode::not_converged,
                fmt::format("{} did not reach the tolerance {:.3g} in {} iterations ({} {:.3g}). "
                            "Raise --max-iter or change eps{}",
                            to_string(st.solver), opt.tolerance, st.iterations,
                            fgp ? "max|f - s| / max|f| =" : "||f - s|| / ||f|| =",
                            fgp ? worst_inf : st.residual_rel,
                            fgp ? "; or try --solver krylov"
                                : (n <= 20000 ? "; or use --solver dense" : "")));
  }
  if (st.solver == GlobalSolver::dense && !(st.residual_rel <= 1e-3))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("the interpolation matrix is numerically singular: relative residual "
                            "{:.3g} after the dense solve (kernel '{}', eps {}). Try a larger eps "
                            "or --smoothing",
                            st.residual_rel, kernel_info(opt.kernel).name, opt.eps));
  im.basis = std::move(new_basis);
  im.centres = points;
  im.values = values;
  im.lambda = std::move(res.lambda);
  im.poly = std::move(res.poly);
  im.held = std::move(new_held);
  st.inverse_held = im.held != nullptr;
  im.stats = std::move(st);
  im.fitted = true;
}

void GlobalRbfInterpolant::set_data(const Table<double> &points, const Table<double> &values,
                                    const Communicator &comm) {
  if (!comm.distributed()) {
    set_data(points, values);
    return;
  }
  impl_->fit_distributed(points, values, comm);
  impl_->updates_off = false;
}

// set_data over ranks (global.hpp): every step either runs on every rank or ends on every rank
// with the same error (Communicator::agree), so no rank waits in a collective the others left.
void GlobalRbfInterpolant::Impl::fit_distributed(const Table<double> &points,
                                                 const Table<double> &values,
                                                 const Communicator &comm) {
  Impl &im = *this;
  const auto &opt = im.opt;
  const int rank = comm.rank(), deg = im.degree();
  const std::int64_t n = points.rows(), d = points.cols(), nc = values.cols();
  // This rank's own checks first (agree is the first collective, so that a caller's argument
  // error agreed before this call meets it), then the shapes over the ranks.
  comm.agree(capture([&] {
    if (values.rows() != n)
      throw Error(ErrorCode::shape_mismatch,
                  fmt::format("{} data points but {} value rows", n, values.rows()));
    detail::check_finite(points, fmt::format("data points (rank {}'s rows)", rank).c_str());
    detail::check_finite(values, fmt::format("data values (rank {}'s rows)", rank).c_str());
    if (opt.matvec)
      throw Error(ErrorCode::unsupported,
                  "a fit over MPI ranks multiplies by Φ around the ranks itself: a custom matvec "
                  "factory is not distributed");
    if (opt.matvec_method == Method::fmm && points.cols() != 3)
      throw Error(ErrorCode::unsupported,
                  fmt::format("the distributed FMM product is 3D; these points have dimension "
                              "{}: use matvec_method direct",
                              points.cols()));
    if (opt.solver == GlobalSolver::dense)
      throw Error(ErrorCode::unsupported,
                  "the dense solver is not distributed: use fgp, krylov or auto over MPI ranks");
  }));
  const auto counts = comm.allgather(n), dims = comm.allgather(d), vcols = comm.allgather(nc);
  std::int64_t total = 0, offset = 0;
  for (int r = 0; r < comm.size(); ++r) {
    total += counts[static_cast<std::size_t>(r)];
    if (r < rank)
      offset += counts[static_cast<std::size_t>(r)];
  }
  comm.agree(capture([&] {
    for (int r = 1; r < comm.size(); ++r)
      if (dims[static_cast<std::size_t>(r)] != dims[0] ||
          vcols[static_cast<std::size_t>(r)] != vcols[0])
        throw Error(ErrorCode::shape_mismatch,
                    fmt::format("rank {} passed {} coordinates and {} value columns, rank 0 {} "
                                "and {}: every rank's rows must have the same shape",
                                r, dims[static_cast<std::size_t>(r)],
                                vcols[static_cast<std::size_t>(r)], dims[0], vcols[0]));
    check_shapes(total, d, nc);
  }));

  // No rank gathers the others' points: the polynomial's box is reduced, unisolvence is decided
  // on the ranks' stacked R factors, and the duplicate check and the L-set search exchange only
  // what lies near each rank's boxes (build_lsets_over_ranks).
  GlobalRbfStats st;
  rbf::PolyBasis new_basis;
  Table<double> P;
  {
    std::vector<double> box(2 * static_cast<std::size_t>(d),
                            -std::numeric_limits<double>::infinity());
    for (std::int64_t k = 0; k < d; ++k)
      for (std::int64_t i = 0; i < n; ++i) {
        box[2 * k] = std::max(box[2 * k], -points(i, k));
        box[2 * k + 1] = std::max(box[2 * k + 1], points(i, k));
      }
    comm.allreduce_max(box.data(), 2 * d);
    std::vector<double> lo(d), hi(d);
    for (std::int64_t k = 0; k < d; ++k) {
      lo[k] = -box[2 * k];
      hi[k] = box[2 * k + 1];
    }
    new_basis = basis_from_box(lo, hi, deg);
  }
  Table<double> stacked; // the rows whose span is that of every rank's Π (TSQR's first level)
  comm.agree(capture([&] {
    P = new_basis.matrix(points);
    stacked = r_factor(P);
  }));
  const std::int64_t m_terms = P.cols();
  const auto r_rows = comm.allgather(stacked.rows());
  Table<double> all_r(std::accumulate(r_rows.begin(), r_rows.end(), std::int64_t{0}), m_terms);
  for (std::int64_t c = 0; c < m_terms; ++c)
    comm.allgatherv(stacked.col(c).data(), stacked.rows(), all_r.col(c).data(), r_rows);
  // Checked right after the duplicates (inside the L-set search), in one process's order.
  const auto checks = [&] {
    check_unisolvent(all_r, d); // (the same on every rank)
    check_lset_size(m_terms, d);
    st.solver = opt.solver == GlobalSolver::automatic
                    ? (deg == 0 ? GlobalSolver::fgp : GlobalSolver::krylov)
                    : choose_solver(total);
    st.backend = resolve(opt.backend);
    if (st.backend == Backend::cuda && gpu_count() == 0)
      throw Error(ErrorCode::unsupported,
                  fmt::format("backend gpu requested but rank {} sees no GPU", rank));
  };
  st.degree = deg;
  st.poly_terms = m_terms;
  st.ranks = comm.size();

  const auto t0 = std::chrono::steady_clock::now();
  rbf::DistributedLSetStats ls;
  rbf::RowSets sets =
      rbf::build_lsets_over_ranks(comm, points, offset, total,
                                  {opt.kernel, opt.eps, opt.lset_size, deg, opt.seed, opt.threads,
                                   definiteness_sign(opt.kernel) * opt.smoothing},
                                  &ls, checks);
  double formed[3] = {static_cast<double>(sets.count()), static_cast<double>(sets.skipped),
                      static_cast<double>(ls.received)};
  comm.allreduce_sum(formed, 2);
  st.lsets = static_cast<std::int64_t>(formed[0]);
  st.lsets_skipped = static_cast<std::int64_t>(formed[1]);
  st.lset_search_received = static_cast<std::int64_t>(comm.allreduce_max(formed[2]));
  if (st.lsets > 0 && st.lsets_skipped == st.lsets)
    comm.agree(true, static_cast<int>(ErrorCode::invalid_argument),
               fmt::format("every local L-set system was singular (q = {}, kernel '{}', eps {}): "
                           "no preconditioner. Try a larger eps or q",
                           opt.lset_size, kernel_info(opt.kernel).name, opt.eps));
  // The products: direct around the ranks, or the distributed FMM (matvec_method fmm; automatic
  // stays direct over ranks: the one-process cost model does not know the exchanges).
  const std::unique_ptr<KernelMatVec> A = rbf::make_distributed_matvec(
      comm, points, opt.kernel, opt.eps,
      kernel_value(opt.kernel, opt.eps, 0.0) + definiteness_sign(opt.kernel) * opt.smoothing,
      st.backend, opt.threads, opt.matvec_method == Method::fmm ? Method::fmm : Method::direct,
      fmm_tolerance());
  st.matvec = A->describe();
  rbf::TauOperator tau;
  rbf::DistributedTauStats ts;
  comm.agree(capture([&] { tau = rbf::distributed_tau(comm, sets, counts, opt.threads, &ts); }));
  sets = rbf::RowSets(); // τ keeps this rank's sets over its rows and halo
  st.lset_halo_rows =
      static_cast<std::int64_t>(comm.allreduce_max(static_cast<double>(ts.halo_rows)));
  st.seconds_setup = seconds_since(t0);

  const auto t1 = std::chrono::steady_clock::now();
  rbf::IterSettings it{opt.tolerance, opt.max_iterations, opt.gmres_restart, opt.threads,
                       opt.progress};
  it.rows.comm = &comm;
  rbf::SolveResult res;
  comm.agree(capture([&] {
    res = st.solver == GlobalSolver::fgp ? rbf::solve_fgp(*A, tau, values, it)
                                         : rbf::solve_gmres(*A, tau, P, values, it);
  }));
  st.seconds_solve = seconds_since(t1);
  comm.agree(capture([&] {
    detail::check_finite(res.lambda, "the computed coefficients (the system is numerically "
                                     "singular: try a larger eps or --smoothing)");
  }));

  // The true residual f − Φλ − Πc over every rank's rows, by one more product.
  Table<double> s(n, nc);
  A->apply(res.lambda, s);
  ++res.matvecs;
  std::vector<double> maxima(2 * nc), sums(2 * nc); // per column: max|r|, max|f|; Σr², Σf²
  for (std::int64_t c = 0; c < nc; ++c)
    for (std::int64_t i = 0; i < n; ++i) {
      double p = 0;
      for (std::int64_t t = 0; t < P.cols(); ++t)
        p += P(i, t) * res.poly(t, c);
      const double r = values(i, c) - s(i, c) - p;
      maxima[2 * c] = std::max(maxima[2 * c], std::abs(r));
      maxima[2 * c + 1] = std::max(maxima[2 * c + 1], std::abs(values(i, c)));
      sums[2 * c] += r * r;
      sums[2 * c + 1] += values(i, c) * values(i, c);
    }
  comm.allreduce_max(maxima.data(), 2 * nc);
  comm.allreduce_sum(sums.data(), 2 * nc);
  double worst_inf = 0;
  for (std::int64_t c = 0; c < nc; ++c) {
    const double rmax = maxima[2 * c], fmax = maxima[2 * c + 1];
    worst_inf = std::max(worst_inf, fmax > 0 ? rmax / fmax : rmax);
    st.residual_max = std::max(st.residual_max, rmax);
    st.residual_rel =
        std::max(st.residual_rel, sums[2 * c + 1] > 0 ? std::sqrt(sums[2 * c] / sums[2 * c + 1])
                                                      : std::sqrt(sums[2 * c]));
  }
  st.iterations = res.iterations;
  st.matvecs = res.matvecs;
  st.history = std::move(res.history);
  if (!res.converged) {
    const bool fgp = st.solver == GlobalSolver::fgp;
    comm.agree(true, static_cast<int>(ErrorCode::not_converged),
               fmt::format("{} did not reach the tolerance {:.3g} in {} iterations ({} {:.3g}). "
                           "Raise --max-iter or change eps{}",
                           to_string(st.solver), opt.tolerance, st.iterations,
                           fgp ? "max|f - s| / max|f| =" : "||f - s|| / ||f|| =",
                           fgp ? worst_inf : st.residual_rel,
                           fgp ? "; or try --solver krylov" : ""));
  }
  im.basis = std::move(new_basis);
  im.centres = points;
  im.values = values;
  im.lambda = std::move(res.lambda);
  im.poly = std::move(res.poly);
  im.held.reset();
  st.inverse_held = false;
  im.stats = std::move(st);
  im.comm = std::make_unique<Communicator>(comm);
  im.backend = im.stats.backend;
  im.fitted = true;
}

void GlobalRbfInterpolant::move_centres(std::span<const std::int64_t> index,
                                        const Table<double> &new_points,
                                        const Table<double> *new_values) {
  const auto t0 = std::chrono::steady_clock::now();
  Impl &im = *impl_;
  const auto &opt = im.opt;
  if (!im.fitted)
    throw Error(ErrorCode::invalid_argument, "move_centres() before set_data()");
  if (im.comm)
    throw Error(ErrorCode::unsupported,
                "move_centres() on a fit distributed over MPI ranks: call set_data again");
  const std::int64_t n = im.centres.rows(), d = im.centres.cols(), nc = im.values.cols();
  const std::int64_t m = static_cast<std::int64_t>(index.size());
  if (new_points.rows() != m || new_points.cols() != d)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("new_points is {} × {}; it must be {} × {} (one row per index, the "
                            "data's dimension)",
                            new_points.rows(), new_points.cols(), m, d));
  if (new_values && (new_values->rows() != m || new_values->cols() != nc))
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("new_values is {} × {}; it must be {} × {} (one row per index, one "
                            "column per value column)",
                            new_values->rows(), new_values->cols(), m, nc));
  if (m == 0)
    return;
  std::vector<std::int64_t> slot(static_cast<std::size_t>(n), -1);
  for (std::int64_t a = 0; a < m; ++a) {
    const std::int64_t k = index[static_cast<std::size_t>(a)];
    if (k < 0 || k >= n)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("index[{}] = {} is out of range: the interpolant has {} centres "
                              "(0 … {})",
                              a, k, n, n - 1));
    if (slot[static_cast<std::size_t>(k)] >= 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("centre {} is listed twice (index[{}] and index[{}]): each centre "
                              "moves at most once per call",
                              k, slot[static_cast<std::size_t>(k)], a));
    slot[static_cast<std::size_t>(k)] = a;
  }
  detail::check_finite(new_points, "new_points");
  if (new_values)
    detail::check_finite(*new_values, "new_values");

  // The moved set, and no moved centre on top of another centre.
  Table<double> points = im.centres, values = im.values;
  for (std::int64_t a = 0; a < m; ++a) {
    const std::int64_t k = index[static_cast<std::size_t>(a)];
    for (std::int64_t q = 0; q < d; ++q)
      points(k, q) = new_points(a, q);
    if (new_values)
      for (std::int64_t c = 0; c < nc; ++c)
        values(k, c) = (*new_values)(a, c);
  }
  for (std::int64_t a = 0; a < m; ++a) {
    const std::int64_t k = index[static_cast<std::size_t>(a)];
    for (std::int64_t j = 0; j < n; ++j) {
      bool same = j != k;
      for (std::int64_t q = 0; q < d && same; ++q)
        same = points(j, q) == points(k, q);
      if (same)
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("centre {} (index[{}]) would move onto centre {}{}: the "
                                "interpolation matrix would be singular; nothing was moved",
                                k, a, j,
                                slot[static_cast<std::size_t>(j)] >= 0
                                    ? fmt::format(" (index[{}])", slot[static_cast<std::size_t>(j)])
                                    : std::string()));
    }
  }

  GlobalRbfStats counts = im.stats;
  ++counts.moves;
  auto finish = [&](GlobalRbfStats &st, std::int64_t rank) {
    st.moves = counts.moves;
    st.updates = counts.updates;
    st.update_fallbacks = counts.update_fallbacks;
    st.inverse_held = im.held != nullptr;
    st.move_rank = rank;
    st.seconds_move = seconds_since(t0);
  };
  const bool dense_cpu = im.stats.solver == GlobalSolver::dense && im.backend == Backend::cpu;
  const bool use_update = dense_cpu && (opt.centre_update == CentreUpdate::update ||
                                        (opt.centre_update == CentreUpdate::automatic &&
                                         !im.updates_off && centre_update_pays(n, m)));
  if (use_update && im.held) {
    const Table<double> P = im.basis.matrix(points);
    im.check_unisolvent(P, d);
    const bool fresh = im.held->updates == 0;
    try {
      const auto t1 = std::chrono::steady_clock::now();
      rbf::move_held(*im.held, index, points, P, opt.kernel, opt.eps, opt.threads);
      ++im.held->updates;
      const double t_update = seconds_since(t1);
      const auto t2 = std::chrono::steady_clock::now();
      const double r0 = im.held->residual0;
      Table<double> start(n + im.held->terms, nc);
      for (std::int64_t c = 0; c < nc; ++c) {
        for (std::int64_t i = 0; i < n; ++i)
          start(i, c) = im.lambda(i, c);
        for (std::int64_t t = 0; t < im.held->terms; ++t)
          start(n + t, c) = im.poly(t, c);
      }
      double rmax = 0, rrel = 0;
      rbf::SolveResult res =
          rbf::solve_held(*im.held, values, &start, opt.threads, 10 * r0, rmax, rrel);
      if (rrel <= std::max(100 * r0, 1e-12)) {
        GlobalRbfStats st = im.stats;
        st.residual_max = rmax;
        st.residual_rel = rrel;
        st.iterations = st.matvecs = 0;
        st.history.clear();
        st.seconds_setup = t_update; // the Woodbury update of K⁻¹
        st.seconds_solve = seconds_since(t2);
        im.centres = std::move(points);
        im.values = std::move(values);
        im.lambda = std::move(res.lambda);
        im.poly = std::move(res.poly);
        ++counts.updates;
        finish(st, 2 * m);
        im.stats = std::move(st);
        return;
      }
    } catch (const Error &e) {
      if (e.code() != ErrorCode::invalid_argument) { // a breakdown is invalid_argument
        im.held.reset();
        im.stats.inverse_held = false;
        throw;
      }
    }
    // The update broke down (the capacitance matrix is nearly singular: this move makes K'
    // nearly singular, or K was) or missed the residual test. On the first update of a fresh
    // inverse that means the system is too ill-conditioned for updates to keep a refit's
    // accuracy at a gain: automatic stops updating until set_data. After several updates it is
    // drift, and a fresh inverse cures it.
    ++counts.update_fallbacks;
    if (fresh && opt.centre_update == CentreUpdate::automatic)
      im.updates_off = true;
    im.held.reset();
    im.stats.inverse_held = false;
  } else if (!use_update) {
    im.held.reset(); // it would be stale after this refit
    im.stats.inverse_held = false;
  }
  // Refit the moved set in the same polynomial basis (a dense CPU fit that will update next time
  // forms K⁻¹ now).
  im.fit(points, values, im.basis, use_update && !im.updates_off);
  finish(im.stats, 0);
}

Table<double> GlobalRbfInterpolant::evaluate(const Table<double> &points) const {
  return evaluate(points, impl_->opt.matvec_method);
}

Table<double> GlobalRbfInterpolant::evaluate(const Table<double> &points, Method method) const {
  const Impl &im = *impl_;
  if (!im.fitted)
    throw Error(ErrorCode::invalid_argument, "evaluate() before set_data()");
  const std::int64_t m = points.rows(), nc = im.lambda.cols(), terms = im.basis.terms();
  const auto check = [&] {
    if (points.cols() != im.centres.cols())
      throw Error(ErrorCode::shape_mismatch,
                  fmt::format("evaluation points have {} columns; the data have dimension {}",
                              points.cols(), im.centres.cols()));
    detail::check_finite(points, "evaluation points");
  };
  Table<double> u;
  if (im.comm) {
    // Over the ranks: each its own points, summed over every rank's centres (collective), by
    // the direct sum around the ranks whatever the method (the distributed FMM sums over the
    // centres themselves, not at other points).
    im.comm->agree(capture(check));
    DistributedSum<double> ds(*im.comm, DirectOptions{.kernel = im.opt.kernel,
                                                      .eps = im.opt.eps,
                                                      .backend = im.backend,
                                                      .threads = im.opt.threads});
    ds.set_points(im.centres, points);
    u = ds.execute(im.lambda);
  } else {
    check();
    if (m == 0)
      return Table<double>(0, nc);
    if (method != Method::direct && points.cols() != 3)
      method = Method::direct; // the FMM is 3D only
    DirectSum<double> ds(DirectOptions{.kernel = im.opt.kernel,
                                       .eps = im.opt.eps,
                                       .backend = im.backend,
                                       .threads = im.opt.threads,
                                       .method = method,
                                       .tolerance = im.fmm_tolerance()});
    ds.set_points(im.centres, points);
    u = ds.execute(im.lambda);
  }
  if (terms > 0) {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < m; ++i) {
      double x[rbf::PolyBasis::max_dim], v[rbf::PolyBasis::max_terms];
      for (std::int64_t k = 0; k < points.cols(); ++k)
        x[k] = points(i, k);
      im.basis.eval(x, 1, v);
      for (std::int64_t c = 0; c < nc; ++c) {
        double p = 0;
        for (std::int64_t t = 0; t < terms; ++t)
          p += v[t] * im.poly(t, c);
        u(i, c) += p;
      }
    }
  }
  return u;
}

const Communicator *GlobalRbfInterpolant::communicator() const {
  return impl_->comm.get();
}

const Table<double> &GlobalRbfInterpolant::coefficients() const {
  return impl_->lambda;
}
const Table<double> &GlobalRbfInterpolant::poly_coefficients() const {
  return impl_->poly;
}
const GlobalRbfStats &GlobalRbfInterpolant::stats() const {
  return impl_->stats;
}
const GlobalRbfOptions &GlobalRbfInterpolant::options() const {
  return impl_->opt;
}

} // namespace ksum
