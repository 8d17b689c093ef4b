// The improved fast Gauss transform on the CPU (see ifgt.hpp).
#include "fgt/ifgt.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fmt/format.h>
#include <omp.h>

namespace ksum::fgt {
namespace {

// Graded multi-indices below total degree p, each α ≠ 0 reached from α − e_k with k its last
// non-zero axis, so that every index is generated once and after its parent.
void graded_indices(IfgtPlan &plan) {
  const int d = plan.d;
  std::vector<std::vector<int>> alpha{std::vector<int>(d, 0)};
  std::vector<int> last{0};
  plan.parent = {-1};
  plan.axis = {-1};
  plan.constant = {1.0};
  std::size_t from = 0, to = 1; // the previous degree's block
  for (int degree = 1; degree < plan.p; ++degree) {
    for (std::size_t i = from; i < to; ++i)
      for (int k = last[i]; k < d; ++k) {
        auto a = alpha[i];
        ++a[k];
        plan.constant.push_back(plan.constant[i] * 2.0 / a[k]);
        alpha.push_back(std::move(a));
        last.push_back(k);
        plan.parent.push_back(std::int32_t(i));
        plan.axis.push_back(k);
      }
    from = to;
    to = alpha.size();
  }
  plan.terms = std::int64_t(alpha.size());
}

// mono[α] = b^α over the graded indices.
inline void monomials(const IfgtPlan &plan, const double *b, double *mono) {
  mono[0] = 1;
  for (std::int64_t a = 1; a < plan.terms; ++a)
    mono[a] = mono[plan.parent[a]] * b[plan.axis[a]];
}

} // namespace

IfgtPlan build_ifgt(const double *src, std::int64_t n, int d, std::int64_t clusters, double eps,
                    int order, int threads) {
  IfgtPlan plan;
  plan.d = d;
  plan.cutoff = cutoff_radius(eps / 2);
  // Gonzalez: the next centre is the point farthest from all centres so far.
  std::vector<double> dist(static_cast<std::size_t>(n), 0.0);
  std::vector<std::int64_t> assign(static_cast<std::size_t>(n), 0);
  const auto d2 = [&](std::int64_t i, const double *c) {
    double r2 = 0;
    for (int k = 0; k < d; ++k) {
      const double dz = src[i * d + k] - c[k];
      r2 += dz * dz;
    }
    return r2;
  };
  if (n > 0)
    plan.centers.assign(src, src + d);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < n; ++i)
    dist[i] = d2(i, plan.centers.data());
  if (order > 0 && graded_terms(order, d) > max_terms)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("ifgt: order {} in {} dimensions has {} or more terms (at most {})",
                            order, d, max_terms + 1, max_terms));
  // Beyond the clusters the cost model asked for, more until the largest radius admits a series
  // within max_terms (the model's radius assumed uniformly spread points).
  std::int64_t k = n > 0 ? 1 : 0;
  while (k < n) {
    double far = -1;
    std::int64_t at = 0;
#pragma omp parallel num_threads(threads) if (n > 200000)
    {
      double f = -1;
      std::int64_t a = 0;
#pragma omp for schedule(static) nowait
      for (std::int64_t i = 0; i < n; ++i)
        if (dist[i] > f)
          f = dist[i], a = i;
#pragma omp critical
      if (f > far || (f == far && a < at))
        far = f, at = a;
    }
    if (far <= 0)
      break; // fewer distinct points than clusters
    if (k >= clusters && ifgt_order(std::sqrt(far), eps, d, order) > 0)
      break;
    if (k >= 4 * clusters + 64)
      break; // the radius falls too slowly: refused below, the direct sum or the FGT is better
    plan.centers.insert(plan.centers.end(), src + at * d, src + at * d + d);
    const double *c = plan.centers.data() + k * d;
#pragma omp parallel for num_threads(threads) schedule(static) if (n > 200000)
    for (std::int64_t i = 0; i < n; ++i) {
      const double r2 = d2(i, c);
      if (r2 < dist[i])
        dist[i] = r2, assign[i] = k;
    }
    ++k;
  }
  plan.k = k;
  plan.radius.assign(static_cast<std::size_t>(k), 0.0);
  plan.begin.assign(static_cast<std::size_t>(k) + 1, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    plan.radius[assign[i]] = std::max(plan.radius[assign[i]], std::sqrt(dist[i]));
    ++plan.begin[assign[i] + 1];
  }
  for (std::int64_t c = 0; c < k; ++c)
    plan.begin[c + 1] += plan.begin[c];
  plan.order.resize(static_cast<std::size_t>(n));
  auto next = plan.begin;
  for (std::int64_t i = 0; i < n; ++i)
    plan.order[next[assign[i]]++] = i;
  plan.pts.resize(static_cast<std::size_t>(n) * d);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < n; ++i)
    for (int a = 0; a < d; ++a)
      plan.pts[i * d + a] = src[plan.order[i] * d + a];
  plan.rx = k > 0 ? *std::max_element(plan.radius.begin(), plan.radius.end()) : 0;
  plan.p = std::max(1, ifgt_order(plan.rx, eps, d, order));
  if (ifgt_order(plan.rx, eps, d, order) == 0)
    throw Error(ErrorCode::unsupported,
                fmt::format("ifgt: clusters of radius {:.3g} h in {} dimensions need more than "
                            "{} terms for tolerance {:g}; use method fgt or direct",
                            plan.rx, d, max_terms, eps));
  plan.bound = bound_ifgt(plan.p, plan.rx, plan.rx + plan.cutoff);
  graded_indices(plan);
  return plan;
}

void execute_ifgt(const IfgtPlan &plan, const double *q, const double *tgt, std::int64_t m,
                  double *out, int threads, const std::function<void(double)> &progress) {
  const int d = plan.d;
  const std::int64_t T = plan.terms, K = plan.k;
  std::vector<double> C(static_cast<std::size_t>(K * T), 0.0);
#pragma omp parallel num_threads(threads)
  {
    std::vector<double> mono(static_cast<std::size_t>(T)), a(d);
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t c = 0; c < K; ++c) {
      double *cc = C.data() + c * T;
      for (std::int64_t i = plan.begin[c]; i < plan.begin[c + 1]; ++i) {
        double r2 = 0;
        for (int k = 0; k < d; ++k) {
          a[k] = plan.pts[i * d + k] - plan.centers[c * d + k];
          r2 += a[k] * a[k];
        }
        monomials(plan, a.data(), mono.data());
        const double w = q[plan.order[i]] * std::exp(-r2);
        for (std::int64_t t = 0; t < T; ++t)
          cc[t] += w * mono[t];
      }
      for (std::int64_t t = 0; t < T; ++t)
        cc[t] *= plan.constant[t];
    }
  }
  std::atomic<std::int64_t> done{0};
#pragma omp parallel num_threads(threads)
  {
    std::vector<double> mono(static_cast<std::size_t>(T)), b(d);
#pragma omp for schedule(dynamic, 256)
    for (std::int64_t i = 0; i < m; ++i) {
      double s = 0;
      for (std::int64_t c = 0; c < K; ++c) {
        double r2 = 0;
        for (int k = 0; k < d; ++k) {
          b[k] = tgt[i * d + k] - plan.centers[c * d + k];
          r2 += b[k] * b[k];
        }
        const double reach = plan.radius[c] + plan.cutoff;
        if (r2 > reach * reach)
          continue;
        monomials(plan, b.data(), mono.data());
        const double *cc = C.data() + c * T;
        double v = 0;
        for (std::int64_t t = 0; t < T; ++t)
          v += cc[t] * mono[t];
        s += std::exp(-r2) * v;
      }
      out[i] = s;
      const std::int64_t now = done.fetch_add(1, std::memory_order_relaxed) + 1;
      if (progress && omp_get_thread_num() == 0 && now % 4096 == 0)
        progress(double(now) / double(m));
    }
  }
}

} // namespace ksum::fgt
