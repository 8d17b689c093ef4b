// The TD-BEM solver of seed 003: assembly, M^0 factored once, marching on in time with the
// summation stage in slices (§2.3, §3.3) spread over MPI ranks (§5.1) and workers (§5.2).
#include "bem/assembly.hpp"
#include "bem/workers.hpp"
#include "runtime/mpi_comm.hpp"

#include <ksum/error.hpp>
#include <ksum/tdbem.hpp>

#include <Eigen/SparseCore>
#include <Eigen/SparseLU>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <mutex>

namespace ksum {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Rank r's slices: contiguous, about equal in data (§5.1). A slice's size is about
// n · (2 r_j / h + 1) values (every row sees element j over 2 r_j / h + 1 shells).
std::pair<std::int64_t, std::int64_t> rank_slices(const bem::Geometry &g, double h, int rank,
                                                  int ranks) {
  std::vector<double> prefix(static_cast<std::size_t>(g.n) + 1, 0.0);
  for (std::int64_t j = 0; j < g.n; ++j)
    prefix[static_cast<std::size_t>(j) + 1] =
        prefix[static_cast<std::size_t>(j)] + 2 * g.radius[static_cast<std::size_t>(j)] / h + 1;
  auto cut = [&](int r) {
    if (r <= 0)
      return std::int64_t{0};
    if (r >= ranks)
      return g.n;
    const double target = prefix.back() * r / ranks;
    return static_cast<std::int64_t>(std::lower_bound(prefix.begin(), prefix.end(), target) -
                                     prefix.begin());
  };
  return {cut(rank), cut(rank + 1)};
}

} // namespace

TdbemKernel parse_tdbem_kernel(std::string_view name) {
  if (name == "scalar")
    return TdbemKernel::scalar;
  if (name == "full")
    return TdbemKernel::full;
  if (name == "contiguous")
    return TdbemKernel::contiguous;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("kernel '{}': expected scalar, full or contiguous", name));
}
TdbemOrdering parse_tdbem_ordering(std::string_view name) {
  if (name == "natural")
    return TdbemOrdering::natural;
  if (name == "morton")
    return TdbemOrdering::morton;
  if (name == "hilbert")
    return TdbemOrdering::hilbert;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("ordering '{}': expected natural, morton or hilbert", name));
}
std::string_view to_string(TdbemKernel k) {
  return k == TdbemKernel::scalar ? "scalar" : k == TdbemKernel::full ? "full" : "contiguous";
}
std::string_view to_string(TdbemOrdering o) {
  return o == TdbemOrdering::natural  ? "natural"
         : o == TdbemOrdering::morton ? "morton"
                                      : "hilbert";
}

IncidentField plane_wave_pulse(std::array<double, 3> d, double c, double t0, double width,
                               double amplitude) {
  const double l = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  if (!(l > 0) || !(c > 0) || !(width > 0) || !std::isfinite(t0) || !std::isfinite(amplitude))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("plane wave: direction length {}, c = {}, width = {}, t0 = {}", l, c,
                            width, t0));
  for (auto &v : d)
    v /= l;
  return [=](const std::array<double, 3> &x, double t) {
    const double tau = (t - t0 - (d[0] * x[0] + d[1] * x[1] + d[2] * x[2]) / c) / width;
    return amplitude * std::exp(-tau * tau);
  };
}

template <std::floating_point T> struct TdbemSolver<T>::Impl {
  TdbemOptions opt;
  runtime::Comm comm;
  double h = 0, dt = 0;
  std::vector<std::int64_t> order; // unknown u is element order[u]
  bem::Geometry geo;
  Table<double> centroids; // surface order
  bem::Slices<T> slices;
  std::int64_t j0 = 0, j1 = 0;
  Eigen::SparseLU<Eigen::SparseMatrix<double>> lu;
  std::vector<Eigen::SparseMatrix<double, Eigen::RowMajor>> shells; // M^1 … M^{ng−1}, own slices
  std::unique_ptr<bem::Workers<T>> workers;
  std::unique_ptr<bem::History<T>> past;
  IncidentField incident;
  struct ProbeRow {
    std::int64_t j;
    std::int32_t first;
    std::vector<double> values;
  };
  std::vector<std::vector<ProbeRow>> probes;
  std::int32_t probe_depth = 0;
  std::vector<std::vector<double>> probe_history;
  std::vector<T> group;                    // ng·n: the summation vectors of the current group
  std::vector<std::vector<double>> recent; // a^m of the current group, unknown order
  std::vector<double> current;             // a^n, unknown order
  std::int64_t step = 0;
  TdbemStats stats;
  std::mutex mutex;
};

template <std::floating_point T>
TdbemSolver<T>::TdbemSolver(const TriangleSurface &surface, const TdbemOptions &options)
    : impl_(std::make_unique<Impl>()) {
  Impl &m = *impl_;
  m.opt = options;
  m.comm = options.mpi ? runtime::Comm::world() : runtime::Comm::self();
  if (!(options.c > 0) || !std::isfinite(options.c))
    throw Error(ErrorCode::invalid_argument, fmt::format("c = {}: must be > 0", options.c));
  if (!(options.dt >= 0) || !std::isfinite(options.dt))
    throw Error(ErrorCode::invalid_argument, fmt::format("dt = {}: must be > 0", options.dt));
  if (options.ng < 1 || options.ng > 16)
    throw Error(ErrorCode::invalid_argument, fmt::format("ng = {}: must be 1 … 16", options.ng));
  check_surface(surface, "surface");
  const std::int64_t n = surface.elements();
  m.centroids = bem::centroid_table(bem::make_geometry(surface));
  m.order = bem::order_unknowns(m.centroids, options.ordering);
  m.geo = bem::make_geometry(surface, m.order);
  m.dt = options.dt > 0 ? options.dt : m.geo.mean_edge / options.c;
  m.h = options.c * m.dt;
  if (m.h >= m.geo.diameter / 2)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("dt = {:.4g} is too large for this surface: cΔt = {:.4g} is more than "
                            "half its diameter {:.4g}, so one step crosses the whole surface; use "
                            "cΔt about its mean edge length {:.4g}",
                            m.dt, m.h, m.geo.diameter, m.geo.mean_edge));
  auto &st = m.stats;
  st.unknowns = n;
  st.ranks = m.comm.size();
  st.rank = m.comm.rank();
  st.ng = options.ng;
  std::tie(m.j0, m.j1) = rank_slices(m.geo, m.h, m.comm.rank(), m.comm.size());
  st.slice_begin = m.j0;
  st.slice_end = m.j1;

  // Every rank assembles and cuts its own slices; a failure on one rank reaches all (agree).
  bool failed = false;
  int code = 0;
  std::string message;
  try {
    double t0 = now();
    bem::Assembled m0;
    m.slices =
        bem::assemble<T>(m.geo, m.h, options.time_basis, m.j0, m.j1, m0, options.assembly_progress);
    st.assembly_seconds = now() - t0;
    st.kmax = m.slices.kmax;
    st.dmax = m.slices.dmax();
    st.nnz = m.slices.nnz();
    st.nnz_m0 = static_cast<std::int64_t>(m0.m0_values.size());
    st.dav = m.slices.rows.empty()
                 ? 0
                 : static_cast<double>(st.nnz) / static_cast<double>(m.slices.rows.size());
    st.ordering_quality = bem::ordering_quality(m.slices);
    t0 = now();
    if (m.comm.rank() == 0) {
      std::vector<Eigen::Triplet<double>> trip;
      for (std::size_t q = 0; q < m0.m0_values.size(); ++q)
        trip.emplace_back(m0.m0_rows[q], m0.m0_cols[q], m0.m0_values[q]);
      Eigen::SparseMatrix<double> a(n, n);
      a.setFromTriplets(trip.begin(), trip.end());
      a.makeCompressed();
      m.lu.compute(a);
      if (m.lu.info() != Eigen::Success)
        throw Error(ErrorCode::internal,
                    fmt::format("the sparse LU of M^0 ({} × {}, {} non-zeros) failed: {}", n, n,
                                trip.size(), m.lu.lastErrorMessage()));
    }
    st.factor_seconds = now() - t0;
    // M^1 … M^{ng−1} of the own slices, row-major, to complete the summation vectors (§3.3).
    m.shells.resize(static_cast<std::size_t>(options.ng));
    std::vector<std::vector<Eigen::Triplet<double>>> trips(m.shells.size());
    for (std::int64_t j = m.j0; j < m.j1; ++j)
      for (auto r = m.slices.ptr[j]; r < m.slices.ptr[j + 1]; ++r) {
        const auto &row = m.slices.rows[static_cast<std::size_t>(r)];
        for (std::int32_t k = row.k0; k < std::min(row.k0 + row.length, options.ng); ++k)
          trips[static_cast<std::size_t>(k)].emplace_back(
              row.row, j,
              static_cast<double>(
                  m.slices.values[static_cast<std::size_t>(row.offset + k - row.k0)]));
      }
    for (std::size_t k = 1; k < m.shells.size(); ++k) {
      m.shells[k].resize(n, n);
      m.shells[k].setFromTriplets(trips[k].begin(), trips[k].end());
    }
    t0 = now();
    m.workers = std::make_unique<bem::Workers<T>>(m.slices, m.j0, m.j1, options, options.ng);
    st.blocking_seconds = now() - t0;
    m.workers->fill_stats(st);
  } catch (const Error &e) {
    failed = true;
    code = static_cast<int>(e.code());
    message = e.what();
  } catch (const std::bad_alloc &) {
    failed = true;
    code = static_cast<int>(ErrorCode::unsupported);
    message = fmt::format("out of memory assembling or blocking the slices of {} unknowns", n);
  }
  m.comm.agree(failed, code, message);
  m.current.assign(static_cast<std::size_t>(n), 0.0);
}

template <std::floating_point T> TdbemSolver<T>::~TdbemSolver() = default;
template <std::floating_point T> TdbemSolver<T>::TdbemSolver(TdbemSolver &&) noexcept = default;
template <std::floating_point T>
TdbemSolver<T> &TdbemSolver<T>::operator=(TdbemSolver &&) noexcept = default;

template <std::floating_point T> void TdbemSolver<T>::set_incident(IncidentField field) {
  std::lock_guard lock(impl_->mutex);
  impl_->incident = std::move(field);
}

template <std::floating_point T> void TdbemSolver<T>::set_probes(const Table<double> &points) {
  Impl &m = *impl_;
  std::lock_guard lock(m.mutex);
  if (m.past)
    throw Error(ErrorCode::invalid_argument, "probes are set before the first run()");
  if (points.rows() > 0 && points.cols() != 3)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("probes: {} columns, expected 3 (x, y, z)", points.cols()));
  m.probes.assign(static_cast<std::size_t>(points.rows()), {});
  m.probe_depth = 0;
  for (std::int64_t p = 0; p < points.rows(); ++p) {
    const std::array<double, 3> x = {points(p, 0), points(p, 1), points(p, 2)};
    for (int a = 0; a < 3; ++a)
      if (!std::isfinite(x[a]))
        throw Error(ErrorCode::non_finite, fmt::format("probe {}: {} = {}", p, "xyz"[a], x[a]));
    if (m.comm.rank() != 0)
      continue;
    auto &rows = m.probes[static_cast<std::size_t>(p)];
    std::vector<double> vals;
    for (std::int64_t j = 0; j < m.geo.n; ++j) {
      std::int32_t first = 0;
      bem::shell_integrals(x, m.geo, j, m.h, m.opt.time_basis, first, vals);
      if (vals.empty())
        continue;
      m.probe_depth = std::max(m.probe_depth, first + static_cast<std::int32_t>(vals.size()));
      rows.push_back({j, first, vals});
    }
  }
}

template <std::floating_point T>
void TdbemSolver<T>::run(std::int64_t steps,
                         const std::function<void(std::int64_t, std::int64_t)> &progress) {
  Impl &m = *impl_;
  std::lock_guard lock(m.mutex);
  if (steps < 0)
    throw Error(ErrorCode::invalid_argument, fmt::format("steps = {}: must be ≥ 0", steps));
  if (!m.incident)
    throw Error(ErrorCode::invalid_argument, "no incident field: call set_incident() first");
  const std::int64_t n = m.geo.n;
  const int ng = m.opt.ng;
  if (!m.past)
    m.past = std::make_unique<bem::History<T>>(
        n, std::max<std::int32_t>({m.slices.kmax, m.probe_depth, 1}), m.workers->lead(),
        m.workers->tail());
  auto &st = m.stats;
  std::vector<double> s(static_cast<std::size_t>(n)), a(static_cast<std::size_t>(n));
  std::vector<T> a_t(static_cast<std::size_t>(n));
  Eigen::VectorXd rhs(n);
  for (std::int64_t done = 0; done < steps; ++done) {
    const int g = static_cast<int>(m.step % ng);
    double t0 = now();
    if (g == 0) { // a new group: s^{m} … s^{m+ng−1} without the terms of a^{≥ m} (§3.3)
      m.group.assign(static_cast<std::size_t>(ng * n), T(0));
      m.workers->sum(*m.past, m.group.data());
      m.recent.clear();
    }
    for (std::int64_t i = 0; i < n; ++i)
      s[static_cast<std::size_t>(i)] =
          static_cast<double>(m.group[static_cast<std::size_t>(g * n + i)]);
    for (int k = 1; k <= g; ++k) { // complete s^m with M^k a^{m−k}, a^{m−k} of this group
      const Eigen::Map<const Eigen::VectorXd> ak(m.recent[static_cast<std::size_t>(g - k)].data(),
                                                 n);
      Eigen::Map<Eigen::VectorXd>(s.data(), n) += m.shells[static_cast<std::size_t>(k)] * ak;
    }
    st.summation_seconds += now() - t0;
    t0 = now();
    m.comm.reduce_sum(s.data(), n);
    st.exchange_seconds += now() - t0;
    t0 = now();
    bool failed = false;
    std::string message;
    if (m.comm.rank() == 0) {
      const double time = static_cast<double>(m.step) * m.dt;
      for (std::int64_t u = 0; u < n && !failed; ++u) {
        const auto &c = m.geo.centroid[static_cast<std::size_t>(u)];
        const double l = -m.incident(c, time);
        if (!std::isfinite(l)) {
          failed = true;
          message = fmt::format("the incident field is {} at element {} (t = {})", l,
                                m.order[static_cast<std::size_t>(u)], time);
        }
        rhs[u] = l - s[static_cast<std::size_t>(u)];
      }
      if (!failed) {
        Eigen::Map<Eigen::VectorXd>(a.data(), n) = m.lu.solve(rhs);
        for (std::int64_t u = 0; u < n && !failed; ++u)
          if (!std::isfinite(a[static_cast<std::size_t>(u)])) {
            failed = true;
            message = fmt::format("step {}: the density became non-finite at element {} (the "
                                  "marching is unstable for this Δt and mesh)",
                                  m.step, m.order[static_cast<std::size_t>(u)]);
          }
      }
    }
    m.comm.agree(failed, static_cast<int>(ErrorCode::non_finite), message);
    st.solve_seconds += now() - t0;
    t0 = now();
    m.comm.broadcast(a.data(), n);
    st.exchange_seconds += now() - t0;
    for (std::int64_t u = 0; u < n; ++u)
      a_t[static_cast<std::size_t>(u)] = static_cast<T>(a[static_cast<std::size_t>(u)]);
    m.past->push(a_t);
    m.workers->push(a_t);
    m.recent.push_back(a);
    m.current = a;
    if (m.comm.rank() == 0 && !m.probes.empty()) {
      std::vector<double> row;
      for (const auto &probe : m.probes) {
        double u = 0;
        for (const auto &r : probe) {
          const T *h = m.past->at(r.j).data();
          for (std::size_t q = 0; q < r.values.size(); ++q)
            u += r.values[q] * static_cast<double>(h[r.first + q]);
        }
        row.push_back(u);
      }
      m.probe_history.push_back(std::move(row));
    }
    ++m.step;
    ++st.steps;
    if (progress)
      progress(done + 1, steps);
  }
  m.workers->fill_stats(st);
}

template <std::floating_point T> std::int64_t TdbemSolver<T>::step() const {
  return impl_->step;
}
template <std::floating_point T> double TdbemSolver<T>::dt() const {
  return impl_->dt;
}
template <std::floating_point T> std::int64_t TdbemSolver<T>::unknowns() const {
  return impl_->geo.n;
}
template <std::floating_point T> std::vector<T> TdbemSolver<T>::density() const {
  const Impl &m = *impl_;
  std::vector<T> out(m.current.size());
  for (std::size_t u = 0; u < m.current.size(); ++u)
    out[static_cast<std::size_t>(m.order[u])] = static_cast<T>(m.current[u]);
  return out;
}
template <std::floating_point T>
const std::vector<std::vector<double>> &TdbemSolver<T>::probe_history() const {
  return impl_->probe_history;
}
template <std::floating_point T> const Table<double> &TdbemSolver<T>::centroids() const {
  return impl_->centroids;
}
template <std::floating_point T> const TdbemStats &TdbemSolver<T>::stats() const {
  return impl_->stats;
}

template class TdbemSolver<float>;
template class TdbemSolver<double>;

} // namespace ksum
