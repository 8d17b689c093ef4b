// The TD-BEM interaction matrices (seed 003 §2.2); see assembly.hpp for the method.
#include "bem/assembly.hpp"
#include "bem/vec3.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fmt/format.h>
#include <numbers>
#include <omp.h>

namespace ksum::bem {
namespace {

// G(v) = ∫_{−∞}^{v} T(s) ds of the temporal basis seen at v = R/h − k: the box
// (piecewise-constant σ, a^n its value on ((n−1)Δt, nΔt], non-zero for R/h − k ∈ [0, 1)) or the
// hat T(s) = max(0, 1 − |s|) (piecewise-linear σ through a^n at nΔt).
double box_integral(double v) {
  return std::clamp(v, 0.0, 1.0);
}
double hat_integral(double v) {
  if (v <= -1)
    return 0;
  if (v <= 0)
    return 0.5 * (v + 1) * (v + 1);
  if (v < 1)
    return 1 - 0.5 * (1 - v) * (1 - v);
  return 1;
}

// Gauss–Legendre, 8 points on [−1, 1].
constexpr std::array<double, 8> kNodes = {
    -0.9602898564975363, -0.7966664774136267, -0.5255324099163290, -0.1834346424956498,
    0.1834346424956498,  0.5255324099163290,  0.7966664774136267,  0.9602898564975363};
constexpr std::array<double, 8> kWeights = {
    0.1012285362903763, 0.2223810344533745, 0.3137066458778873, 0.3626837833783620,
    0.3626837833783620, 0.3137066458778873, 0.2223810344533745, 0.1012285362903763};

// Distance from p to the triangle (a, b, c) in its plane (p in that plane).
double in_plane_distance(const V3 &p, const V3 &a, const V3 &b, const V3 &c, const V3 &n) {
  const V3 v[3] = {a, b, c};
  bool inside = true;
  double d = 1e300;
  for (int e = 0; e < 3; ++e) {
    const V3 &A = v[e], &B = v[(e + 1) % 3];
    if (dot(cross(sub(B, A), sub(p, A)), n) < 0)
      inside = false;
    const V3 ab = sub(B, A);
    const double t = std::clamp(dot(sub(p, A), ab) / dot(ab, ab), 0.0, 1.0);
    d = std::min(d, norm(sub(p, V3{A[0] + t * ab[0], A[1] + t * ab[1], A[2] + t * ab[2]})));
  }
  return inside ? 0 : d;
}

} // namespace

Geometry make_geometry(const TriangleSurface &s, const std::vector<std::int64_t> &order) {
  Geometry g;
  g.n = s.elements();
  g.centroid.resize(static_cast<std::size_t>(g.n));
  g.normal.resize(g.centroid.size());
  g.corner.resize(g.centroid.size());
  g.area.resize(g.centroid.size());
  g.radius.resize(g.centroid.size());
  double edges = 0;
  V3 lo{1e300, 1e300, 1e300}, hi{-1e300, -1e300, -1e300};
  for (std::int64_t u = 0; u < g.n; ++u) {
    const auto e = order.empty() ? u : order[static_cast<std::size_t>(u)];
    auto &c = g.corner[static_cast<std::size_t>(u)];
    for (int a = 0; a < 3; ++a) {
      const auto r = s.triangles[static_cast<std::size_t>(3 * e + a)];
      c[a] = {s.nodes(r, 0), s.nodes(r, 1), s.nodes(r, 2)};
      for (int q = 0; q < 3; ++q) {
        lo[q] = std::min(lo[q], c[a][q]);
        hi[q] = std::max(hi[q], c[a][q]);
      }
    }
    const V3 nn = cross(sub(c[1], c[0]), sub(c[2], c[0]));
    const double l = norm(nn);
    g.area[static_cast<std::size_t>(u)] = l / 2;
    g.normal[static_cast<std::size_t>(u)] = {nn[0] / l, nn[1] / l, nn[2] / l};
    V3 m{};
    for (int a = 0; a < 3; ++a)
      for (int q = 0; q < 3; ++q)
        m[q] += c[a][q] / 3;
    g.centroid[static_cast<std::size_t>(u)] = m;
    double r = 0;
    for (int a = 0; a < 3; ++a) {
      r = std::max(r, norm(sub(c[a], m)));
      edges += norm(sub(c[(a + 1) % 3], c[a]));
    }
    g.radius[static_cast<std::size_t>(u)] = r;
  }
  g.diameter = norm(sub(hi, lo));
  g.mean_edge = g.n > 0 ? edges / (3.0 * static_cast<double>(g.n)) : 0;
  return g;
}

Table<double> centroid_table(const Geometry &g) {
  Table<double> c(g.n, 3);
  for (std::int64_t u = 0; u < g.n; ++u)
    for (int a = 0; a < 3; ++a)
      c(u, a) = g.centroid[static_cast<std::size_t>(u)][a];
  return c;
}

void shell_integrals(const V3 &x, const Geometry &g, std::int64_t j, double h, TimeBasis basis,
                     std::int32_t &first, std::vector<double> &out) {
  const auto G = basis == TimeBasis::linear ? hat_integral : box_integral;
  const auto &c = g.corner[static_cast<std::size_t>(j)];
  const V3 &n = g.normal[static_cast<std::size_t>(j)];
  const double z = dot(sub(x, c[0]), n);
  const double az = std::abs(z);
  const V3 p = {x[0] - z * n[0], x[1] - z * n[1], x[2] - z * n[2]};
  double rmax = 0;
  for (int a = 0; a < 3; ++a)
    rmax = std::max(rmax, norm(sub(x, c[a])));
  const double dplane = in_plane_distance(p, c[0], c[1], c[2], n);
  const double rmin = std::sqrt(z * z + dplane * dplane);
  // T(k − R/h) ≠ 0 for some R in [rmin, rmax] ⇒ rmin/h − 1 < k < rmax/h + 1 (both bases).
  const auto k_lo =
      std::max<std::int32_t>(0, static_cast<std::int32_t>(std::floor(rmin / h - 1)) + 1);
  const auto k_hi = static_cast<std::int32_t>(std::ceil(rmax / h + 1)) - 1;
  first = k_lo;
  out.assign(static_cast<std::size_t>(std::max(0, k_hi - k_lo + 1)), 0.0);
  if (out.empty())
    return;
  const std::size_t nk = out.size();
  double g0[64];
  double *base = nk <= 64 ? g0 : nullptr;
  std::vector<double> g0_big;
  if (!base) {
    g0_big.resize(nk);
    base = g0_big.data();
  }
  for (std::size_t q = 0; q < nk; ++q)
    base[q] = G(az / h - (k_lo + static_cast<double>(q)));
  std::vector<double> cut;
  for (int e = 0; e < 3; ++e) {
    const V3 &A = c[e], &B = c[(e + 1) % 3];
    const V3 ab = sub(B, A);
    const double len = norm(ab);
    const V3 eu = {ab[0] / len, ab[1] / len, ab[2] / len};
    const double tp = dot(sub(p, A), eu);
    const V3 foot = {A[0] + tp * eu[0], A[1] + tp * eu[1], A[2] + tp * eu[2]};
    const double d = norm(sub(p, foot));
    if (d <= 1e-12 * len) // p on the edge's line: the edge triangle has no area
      continue;
    const double sgn = dot(cross(sub(A, p), sub(B, p)), n) >= 0 ? 1.0 : -1.0;
    const double fa = std::atan2(-tp, d), fb = std::atan2(len - tp, d);
    // Breakpoints: R(φ) = √(d²/cos²φ + z²) crosses m·h (the kinks of T(k − R/h) for every k).
    cut.assign({fa, fb});
    const double r_lo = std::sqrt(d * d + z * z);
    const double r_hi = std::max(norm(sub(x, A)), norm(sub(x, B)));
    for (auto m = static_cast<std::int64_t>(std::floor(r_lo / h)) + 1; m * h < r_hi; ++m) {
      const double rho = std::sqrt(std::max(0.0, (m * h) * (m * h) - z * z));
      if (rho <= d)
        continue;
      const double f = std::acos(d / rho);
      for (double s : {-f, f})
        if (s > fa && s < fb)
          cut.push_back(s);
    }
    std::sort(cut.begin(), cut.end());
    for (std::size_t q = 0; q + 1 < cut.size(); ++q) {
      const double a0 = cut[q], a1 = cut[q + 1];
      // Pieces no wider than 0.35 rad keep 8 points accurate where R(φ) grows fast.
      const int pieces = std::max(1, static_cast<int>(std::ceil((a1 - a0) / 0.35)));
      const double w = (a1 - a0) / pieces;
      for (int piece = 0; piece < pieces; ++piece) {
        const double mid = a0 + (piece + 0.5) * w, half = 0.5 * w;
        for (std::size_t gq = 0; gq < kNodes.size(); ++gq) {
          const double phi = mid + half * kNodes[gq];
          const double cphi = std::cos(phi);
          const double r = std::sqrt(d * d / (cphi * cphi) + z * z);
          const double wt = sgn * half * kWeights[gq];
          const double u = r / h;
          for (std::size_t k = 0; k < nk; ++k)
            out[k] += wt * (G(u - (k_lo + static_cast<double>(k))) - base[k]);
        }
      }
    }
  }
  const double scale = h / (4 * std::numbers::pi);
  double big = 0;
  for (auto &v : out) {
    v *= scale;
    big = std::max(big, std::abs(v));
  }
  // Shells outside the true range come out as rounding noise: trim them from both ends.
  std::size_t b = 0, e = out.size();
  while (b < e && std::abs(out[b]) <= 1e-13 * big)
    ++b;
  while (e > b && std::abs(out[e - 1]) <= 1e-13 * big)
    --e;
  out.erase(out.begin() + static_cast<std::ptrdiff_t>(e), out.end());
  out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(b));
  first += static_cast<std::int32_t>(b);
}

template <class T>
Slices<T> assemble(const Geometry &g, double h, TimeBasis basis, std::int64_t j0, std::int64_t j1,
                   Assembled &m0, const std::function<void(std::int64_t, std::int64_t)> &progress) {
  const std::int64_t n = g.n;
  if (j0 < 0 || j1 > n || j0 > j1)
    throw Error(ErrorCode::invalid_argument, fmt::format("slices [{}, {}) of {}", j0, j1, n));
  struct Column {
    std::vector<SliceRow> rows;
    std::vector<T> values;
    std::vector<std::int64_t> m0_rows;
    std::vector<double> m0_values;
  };
  // M^0: every column, but only the pairs closer than h (+ the element's radius) integrated.
  std::vector<Column> cols(static_cast<std::size_t>(n));
  std::atomic<std::int64_t> done{0};
#pragma omp parallel
  {
    std::vector<double> val;
#pragma omp for schedule(dynamic, 4)
    for (std::int64_t j = 0; j < n; ++j) {
      Column &col = cols[static_cast<std::size_t>(j)];
      const bool slice = j >= j0 && j < j1;
      const V3 &cj = g.centroid[static_cast<std::size_t>(j)];
      const double rj = g.radius[static_cast<std::size_t>(j)];
      for (std::int64_t i = 0; i < n; ++i) {
        const V3 &x = g.centroid[static_cast<std::size_t>(i)];
        if (!slice && norm(sub(x, cj)) - rj >= h)
          continue; // no M^0 term and not this rank's slice
        std::int32_t first = 0;
        shell_integrals(x, g, j, h, basis, first, val);
        if (val.empty())
          continue;
        std::size_t skip = 0;
        if (first == 0) {
          col.m0_rows.push_back(i);
          col.m0_values.push_back(val[0]);
          skip = 1;
        }
        if (!slice || skip >= val.size())
          continue;
        SliceRow r;
        r.row = i;
        r.k0 = first + static_cast<std::int32_t>(skip);
        r.length = static_cast<std::int32_t>(val.size() - skip);
        r.offset = static_cast<std::int64_t>(col.values.size());
        col.rows.push_back(r);
        for (std::size_t q = skip; q < val.size(); ++q)
          col.values.push_back(static_cast<T>(val[q]));
      }
      const auto columns = ++done;
      if (progress && omp_get_thread_num() == 0) // the caller's callback runs on one thread
        progress(columns, n);
    }
  }
  Slices<T> s;
  s.n = n;
  s.ptr.assign(static_cast<std::size_t>(n) + 1, 0);
  std::int64_t rows = 0, values = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    rows += static_cast<std::int64_t>(cols[static_cast<std::size_t>(j)].rows.size());
    values += static_cast<std::int64_t>(cols[static_cast<std::size_t>(j)].values.size());
  }
  s.rows.reserve(static_cast<std::size_t>(rows));
  s.values.reserve(static_cast<std::size_t>(values));
  m0 = {};
  for (std::int64_t j = 0; j < n; ++j) {
    Column &col = cols[static_cast<std::size_t>(j)];
    const auto shift = static_cast<std::int64_t>(s.values.size());
    for (auto r : col.rows) {
      r.offset += shift;
      s.kmax = std::max(s.kmax, r.k0 + r.length - 1);
      s.rows.push_back(r);
    }
    s.values.insert(s.values.end(), col.values.begin(), col.values.end());
    s.ptr[static_cast<std::size_t>(j) + 1] = static_cast<std::int64_t>(s.rows.size());
    for (std::size_t q = 0; q < col.m0_rows.size(); ++q) {
      m0.m0_rows.push_back(col.m0_rows[q]);
      m0.m0_cols.push_back(j);
      m0.m0_values.push_back(col.m0_values[q]);
    }
    col = Column{};
  }
  // Kmax of the whole system (the same on every rank): 2 + ℓ_max / h bounds it (§2.2).
  m0.kmax = s.kmax;
  return s;
}

template <class T> double ordering_quality(const Slices<T> &slices) {
  double sum = 0;
  std::int64_t counted = 0;
  for (std::int64_t j = 0; j < slices.n; ++j) {
    const auto b = slices.ptr[j], e = slices.ptr[j + 1];
    if (e - b < 2)
      continue;
    double q = 0;
    for (auto r = b + 1; r < e; ++r) {
      const auto &u = slices.rows[static_cast<std::size_t>(r - 1)];
      const auto &v = slices.rows[static_cast<std::size_t>(r)];
      const double overlap =
          std::max(0, std::min(u.k0 + u.length, v.k0 + v.length) - std::max(u.k0, v.k0));
      q += overlap * overlap;
    }
    sum += q / static_cast<double>(e - b - 1);
    ++counted;
  }
  return counted ? sum / static_cast<double>(counted) : 0;
}

template Slices<float> assemble(const Geometry &, double, TimeBasis, std::int64_t, std::int64_t,
                                Assembled &,
                                const std::function<void(std::int64_t, std::int64_t)> &);
template Slices<double> assemble(const Geometry &, double, TimeBasis, std::int64_t, std::int64_t,
                                 Assembled &,
                                 const std::function<void(std::int64_t, std::int64_t)> &);
template double ordering_quality(const Slices<float> &);
template double ordering_quality(const Slices<double> &);

} // namespace ksum::bem
