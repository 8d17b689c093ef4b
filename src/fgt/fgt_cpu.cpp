// The uniform-box fast Gauss transform on the CPU (see fgt_cpu.hpp and fgt_series.hpp).
#include "fgt/fgt_cpu.hpp"
#include "fgt/fgt_gpu.hpp"
#include "fgt/fgt_series.hpp"
#include "kernels/kmath.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <omp.h>
#include <random>

namespace ksum::fgt {
namespace {

struct Grid {
  int d;
  const std::vector<std::int64_t> &count;
  const std::vector<double> &side;
  const std::vector<double> &lo;

  std::int64_t cell(int k, double z) const {
    if (count[k] == 1 || side[k] <= 0)
      return 0;
    const double c = std::floor((z - lo[k]) / side[k]);
    return std::clamp<std::int64_t>(std::int64_t(c), 0, count[k] - 1);
  }
  std::int64_t key(const double *z) const {
    std::int64_t key = 0;
    for (int k = 0; k < d; ++k)
      key = key * count[k] + cell(k, z[k]);
    return key;
  }
  void decode(std::int64_t key, std::int64_t *idx) const {
    for (int k = d - 1; k >= 0; --k) {
      idx[k] = key % count[k];
      key /= count[k];
    }
  }
};

// Sorts the points by box: a counting sort where the grid is small, a comparison sort otherwise.
BoxSet sort_into_boxes(const double *z, std::int64_t n, const Grid &g, int threads) {
  const int d = g.d;
  detail::uninit_vector<std::int64_t> keys(static_cast<std::size_t>(n));
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < n; ++i)
    keys[i] = g.key(z + i * d);
  double total = 1;
  for (int k = 0; k < d; ++k)
    total *= double(g.count[k]);
  BoxSet s;
  s.order.resize(static_cast<std::size_t>(n));
  if (total <= std::max<double>(4.0 * n, 1 << 20)) {
    // A stable counting sort: one histogram per chunk of points (chunks, not threads, so that
    // it is right whatever number of threads OpenMP grants), at most ~2n counters in all.
    const std::int64_t boxes = std::int64_t(total);
    const int chunks = int(std::clamp<std::int64_t>(std::min<std::int64_t>(threads, n / 100000 + 1),
                                                    1, std::max<std::int64_t>(1, 2 * n / boxes)));
    std::vector<std::vector<std::int64_t>> hist(chunks);
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int t = 0; t < chunks; ++t) {
      auto &h = hist[t];
      h.assign(static_cast<std::size_t>(boxes), 0);
      for (std::int64_t i = n * t / chunks; i < n * (t + 1) / chunks; ++i)
        ++h[keys[i]];
    }
    std::int64_t at = 0;
    for (std::int64_t b = 0; b < boxes; ++b) {
      const std::int64_t first = at;
      for (int t = 0; t < chunks; ++t) {
        const std::int64_t c = hist[t][b];
        hist[t][b] = at;
        at += c;
      }
      if (at > first) {
        s.key.push_back(b);
        s.begin.push_back(first);
      }
    }
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int t = 0; t < chunks; ++t) {
      auto &h = hist[t];
      for (std::int64_t i = n * t / chunks; i < n * (t + 1) / chunks; ++i)
        s.order[h[keys[i]]++] = i;
    }
  } else {
    std::iota(s.order.begin(), s.order.end(), std::int64_t(0));
    std::stable_sort(s.order.begin(), s.order.end(),
                     [&](std::int64_t a, std::int64_t b) { return keys[a] < keys[b]; });
    for (std::int64_t i = 0; i < n; ++i)
      if (i == 0 || keys[s.order[i]] != keys[s.order[i - 1]]) {
        s.key.push_back(keys[s.order[i]]);
        s.begin.push_back(i);
      }
  }
  s.begin.push_back(n);
  s.pts.resize(static_cast<std::size_t>(n) * d);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < n; ++i)
    for (int k = 0; k < d; ++k)
      s.pts[i * d + k] = z[s.order[i] * d + k];
  s.center.resize(s.key.size() * d);
  std::vector<std::int64_t> idx(d);
  for (std::size_t b = 0; b < s.key.size(); ++b) {
    g.decode(s.key[b], idx.data());
    for (int k = 0; k < d; ++k)
      s.center[b * d + k] = g.lo[k] + (double(idx[k]) + 0.5) * g.side[k];
  }
  return s;
}

} // namespace

FgtPlan build_fgt(const double *src, std::int64_t n, const double *tgt, std::int64_t m, int d,
                  const Extent &extent, FgtGrid grid, int threads, double cost_limit) {
  FgtPlan plan;
  plan.d = d;
  plan.p = grid.p;
  plan.terms = grid.terms;
  plan.lo = extent.lo;
  plan.grid = std::move(grid);
  plan.self = tgt == nullptr;
  const Grid g{d, plan.grid.count, plan.grid.side, plan.lo};
  plan.src = sort_into_boxes(src, n, g, threads);
  if (!plan.self)
    plan.tgt = sort_into_boxes(tgt, m, g, threads);
  const BoxSet &S = plan.src, &T = plan.targets();
  const std::int64_t ns = S.boxes(), nt = T.boxes();

  // Source boxes within the cutoff of each target box.
  const auto offsets = neighbour_offsets(plan.grid, d, std::max<std::int64_t>(ns, 1));
  const std::int64_t noff = offsets.empty() ? 0 : std::int64_t(offsets.size()) / d;
  if (std::isfinite(cost_limit)) {
    // Every target box meets its offsets' boxes inside the grid (an offset o is inside for the
    // fraction Π_k (count_k − |o_k|)₊ / count_k of the boxes), occupied in the proportion ns / all.
    double all = 1;
    for (int k = 0; k < d; ++k)
      all *= double(plan.grid.count[k]);
    double reach = double(ns);
    if (noff > 0) {
      reach = 0;
      for (std::int64_t o = 0; o < noff; ++o) {
        double inside = 1;
        for (int k = 0; k < d; ++k) {
          const double c = double(plan.grid.count[k]);
          inside *= std::max(0.0, c - double(std::abs(offsets[o * d + k]))) / c;
        }
        reach += inside;
      }
    }
    const double partners = std::max(1.0, std::min(double(ns), reach * double(ns) / all));
    const double ms = double(n) / double(std::max<std::int64_t>(ns, 1)),
                 mt = double(m) / double(std::max<std::int64_t>(nt, 1));
    const auto r = best_route(ms, mt, partners, partners, plan.terms, d, plan.p,
                              plan.p > 0 && plan.terms <= max_terms);
    const double estimate =
        double(nt) * partners * (r.cost + Costs::box_pair) + double(n + m) * (2.0 * d + 30);
    // The estimate measured 1.0 … 1.6 times the listed plan's cost (the mean occupancy in the
    // route costs): stop only where it is over twice the limit.
    if (estimate > 2 * cost_limit) {
      plan.cost = estimate;
      plan.stopped = true;
      return plan;
    }
  }
  std::vector<std::int64_t> sidx(static_cast<std::size_t>(ns * d));
  for (std::int64_t b = 0; b < ns; ++b)
    g.decode(S.key[b], sidx.data() + b * d);
  std::vector<std::vector<std::int64_t>> lists(static_cast<std::size_t>(nt));
  const double R2 = plan.grid.cutoff * plan.grid.cutoff;
#pragma omp parallel num_threads(threads)
  {
    std::vector<std::int64_t> ti(d), q(d);
#pragma omp for schedule(dynamic, 16)
    for (std::int64_t c = 0; c < nt; ++c) {
      g.decode(T.key[c], ti.data());
      auto &list = lists[c];
      if (noff > 0) {
        for (std::int64_t o = 0; o < noff; ++o) {
          std::int64_t key = 0;
          bool inside = true;
          for (int k = 0; k < d && inside; ++k) {
            q[k] = ti[k] + offsets[o * d + k];
            inside = q[k] >= 0 && q[k] < plan.grid.count[k];
            key = key * plan.grid.count[k] + q[k];
          }
          if (!inside)
            continue;
          const auto it = std::lower_bound(S.key.begin(), S.key.end(), key);
          if (it != S.key.end() && *it == key)
            list.push_back(it - S.key.begin());
        }
      } else {
        for (std::int64_t b = 0; b < ns; ++b) {
          double r2 = 0;
          for (int k = 0; k < d; ++k) {
            const double gap =
                double(std::max<std::int64_t>(std::abs(sidx[b * d + k] - ti[k]) - 1, 0)) *
                plan.grid.side[k];
            r2 += gap * gap;
          }
          if (r2 < R2)
            list.push_back(b);
        }
      }
    }
  }

  // Routes by work estimates (seed 002 §2.2), sharing a series' cost among the box's partners.
  std::vector<std::int64_t> partners(static_cast<std::size_t>(ns), 0);
  plan.pair_begin.assign(static_cast<std::size_t>(nt) + 1, 0);
  for (std::int64_t c = 0; c < nt; ++c) {
    for (auto b : lists[c])
      ++partners[b];
    plan.pair_begin[c + 1] = plan.pair_begin[c] + std::int64_t(lists[c].size());
  }
  const std::int64_t npairs = plan.pair_begin[nt];
  plan.pair_src.resize(static_cast<std::size_t>(npairs));
  plan.pair_route.resize(static_cast<std::size_t>(npairs));
  plan.hermite_box.assign(static_cast<std::size_t>(ns), 0);
  plan.taylor_box.assign(static_cast<std::size_t>(nt), 0);
  const bool series = plan.p > 0 && plan.terms <= max_terms;
  for (std::int64_t c = 0; c < nt; ++c) {
    const double mt = double(T.size(c)), nb_t = double(lists[c].size());
    for (std::size_t i = 0; i < lists[c].size(); ++i) {
      const std::int64_t b = lists[c][i], at = plan.pair_begin[c] + std::int64_t(i);
      const auto r = best_route(double(S.size(b)), mt, double(partners[b]), nb_t, plan.terms, d,
                                plan.p, series);
      plan.pair_src[at] = b;
      plan.pair_route[at] = r.route;
      plan.cost += r.cost + Costs::box_pair;
      ++plan.pairs[int(r.route)];
      if (r.route == Route::hermite || r.route == Route::translate)
        plan.hermite_box[b] = 1;
      if (r.route == Route::taylor || r.route == Route::translate)
        plan.taylor_box[c] = 1;
    }
  }
  plan.cost += double(n + m) * (2.0 * d + 30);
  return plan;
}

void execute_fgt(const FgtPlan &plan, const double *q, double *out, int threads,
                 const std::function<void(double)> &progress, std::int64_t chunk,
                 double *loop_seconds, std::int64_t hermite_chunk, double *hermite_seconds) {
  chunk = std::max<std::int64_t>(1, chunk);
  hermite_chunk = std::max<std::int64_t>(1, hermite_chunk);
  const int d = plan.d, p = std::max(plan.p, 1);
  const std::int64_t P = std::max<std::int64_t>(plan.terms, 1);
  const BoxSet &S = plan.src, &T = plan.targets();
  const std::int64_t ns = S.boxes(), nt = T.boxes();

  // Hermite coefficients A_α = Σ_j q_j u_j^α / α! of the source boxes that need them.
  std::vector<std::int64_t> slot(static_cast<std::size_t>(ns), -1);
  std::int64_t slots = 0;
  for (std::int64_t b = 0; b < ns; ++b)
    if (plan.hermite_box[b])
      slot[b] = slots++;
  std::vector<double> A(static_cast<std::size_t>(slots * P), 0.0);
  detail::uninit_vector<double> qs(static_cast<std::size_t>(S.begin[ns]));
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < S.begin[ns]; ++i)
    qs[i] = q[S.order[i]];
  const auto t_hermite = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
  {
    std::vector<double> g(static_cast<std::size_t>(d) * p), work(static_cast<std::size_t>(P));
#pragma omp for schedule(dynamic, hermite_chunk)
    for (std::int64_t b = 0; b < ns; ++b) {
      if (slot[b] < 0)
        continue;
      double *a = A.data() + slot[b] * P;
      for (std::int64_t i = S.begin[b]; i < S.begin[b + 1]; ++i) {
        for (int k = 0; k < d; ++k)
          scaled_powers(S.pts[i * d + k] - S.center[b * d + k], p, g.data() + k * p);
        tensor_accumulate(qs[i], g.data(), d, p, a, work.data());
      }
    }
  }
  if (hermite_seconds)
    *hermite_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_hermite).count();

  detail::uninit_vector<double> sorted_out(static_cast<std::size_t>(T.begin[nt]));
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t t = 0; t < T.begin[nt]; ++t)
    sorted_out[t] = 0;
  std::atomic<std::int64_t> done{0};
  const auto t_loop = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
  {
    const std::size_t Ps = static_cast<std::size_t>(P);
    std::vector<double> f(static_cast<std::size_t>(d) * p), work(Ps), taylor(Ps), tin(Ps), tout(Ps),
        mat(static_cast<std::size_t>(d) * p * p), hv(2 * static_cast<std::size_t>(p));
    std::vector<double> fact(static_cast<std::size_t>(2 * p), 1.0);
    for (int k = 1; k < 2 * p; ++k)
      fact[k] = fact[k - 1] * k;
#pragma omp for schedule(dynamic, chunk)
    for (std::int64_t c = 0; c < nt; ++c) {
      const double *cc = T.center.data() + c * d;
      if (plan.taylor_box[c])
        std::fill(taylor.begin(), taylor.end(), 0.0);
      for (std::int64_t at = plan.pair_begin[c]; at < plan.pair_begin[c + 1]; ++at) {
        const std::int64_t b = plan.pair_src[at];
        const double *sc = S.center.data() + b * d;
        switch (plan.pair_route[at]) {
        case Route::direct: {
          // Vectorised over the box's sources: weights in box order, a branch-free exp.
          const double *sp = S.pts.data();
          const std::int64_t i0 = S.begin[b], i1 = S.begin[b + 1];
          for (std::int64_t t = T.begin[c]; t < T.begin[c + 1]; ++t) {
            const double *y = T.pts.data() + t * d;
            double s = 0;
#pragma omp simd reduction(+ : s)
            for (std::int64_t i = i0; i < i1; ++i) {
              double r2 = 0;
              for (int k = 0; k < d; ++k) {
                const double dz = y[k] - sp[i * d + k];
                r2 += dz * dz;
              }
              s += qs[i] * kmath::exp_nonpos(-r2);
            }
            sorted_out[t] += s;
          }
          break;
        }
        case Route::hermite: {
          const double *a = A.data() + slot[b] * P;
          for (std::int64_t t = T.begin[c]; t < T.begin[c + 1]; ++t) {
            for (int k = 0; k < d; ++k)
              hermite_functions(T.pts[t * d + k] - sc[k], p, f.data() + k * p);
            sorted_out[t] += tensor_dot(a, f.data(), d, p, work.data());
          }
          break;
        }
        case Route::taylor:
          for (std::int64_t i = S.begin[b]; i < S.begin[b + 1]; ++i) {
            for (int k = 0; k < d; ++k) {
              hermite_functions(S.pts[i * d + k] - cc[k], p, f.data() + k * p);
              for (int n = 0; n < p; ++n)
                f[k * p + n] /= fact[n];
            }
            tensor_accumulate(qs[i], f.data(), d, p, taylor.data(), work.data());
          }
          break;
        case Route::translate: {
          for (int k = 0; k < d; ++k) {
            hermite_functions(cc[k] - sc[k], 2 * p - 1, hv.data());
            for (int bb = 0; bb < p; ++bb)
              for (int aa = 0; aa < p; ++aa)
                mat[(k * p + bb) * p + aa] = ((bb & 1) ? -1.0 : 1.0) / fact[bb] * hv[aa + bb];
          }
          std::copy_n(A.data() + slot[b] * P, P, tin.data());
          tensor_apply(mat.data(), d, p, tin.data(), tout.data());
          for (std::size_t i = 0; i < Ps; ++i)
            taylor[i] += tout[i];
          break;
        }
        }
      }
      if (plan.taylor_box[c])
        for (std::int64_t t = T.begin[c]; t < T.begin[c + 1]; ++t) {
          for (int k = 0; k < d; ++k) {
            const double tau = T.pts[t * d + k] - cc[k];
            f[k * p] = 1;
            for (int n = 1; n < p; ++n)
              f[k * p + n] = f[k * p + n - 1] * tau;
          }
          sorted_out[t] += tensor_dot(taylor.data(), f.data(), d, p, work.data());
        }
      const std::int64_t now = done.fetch_add(1, std::memory_order_relaxed) + 1;
      if (progress && omp_get_thread_num() == 0 && now % 64 == 0)
        progress(double(now) / double(nt));
    }
  }
  if (loop_seconds)
    *loop_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_loop).count();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t t = 0; t < T.begin[nt]; ++t)
    out[T.order[t]] = sorted_out[t];
}

} // namespace ksum::fgt

namespace ksum::fgt {

void hermite_bench_data(int d, int p, std::int64_t n, std::int64_t clusters,
                        std::vector<double> &targets, std::vector<double> &centres,
                        std::vector<double> &coef) {
  std::mt19937_64 rng(2010);
  std::uniform_real_distribution<double> box(0.0, 4.0), unit(-1.0, 1.0);
  targets.resize(static_cast<std::size_t>(n) * d);
  for (auto &v : targets)
    v = box(rng);
  centres.resize(static_cast<std::size_t>(clusters) * d);
  for (auto &v : centres)
    v = box(rng);
  const std::int64_t P = ipow(p, d);
  std::vector<double> scale(static_cast<std::size_t>(P), 1.0);
  for (std::int64_t a = 0; a < P; ++a) {
    std::int64_t rest = a;
    for (int k = 0; k < d; ++k) {
      const int n_k = int(rest % p);
      rest /= p;
      for (int j = 1; j <= n_k; ++j)
        scale[a] *= 0.5 / j;
    }
  }
  coef.resize(static_cast<std::size_t>(clusters * P));
  for (std::int64_t c = 0; c < clusters; ++c)
    for (std::int64_t a = 0; a < P; ++a)
      coef[c * P + a] = unit(rng) * scale[a];
}

void hermite_eval_cpu(int d, int p, const std::vector<double> &targets,
                      const std::vector<double> &centres, const std::vector<double> &coef,
                      const std::vector<std::int64_t> &rows, double *out, int threads) {
  const std::int64_t P = ipow(p, d), clusters = std::int64_t(centres.size()) / d;
  const std::int64_t count = std::int64_t(rows.size());
#pragma omp parallel num_threads(threads)
  {
    std::vector<double> f(static_cast<std::size_t>(d) * p), work(static_cast<std::size_t>(P));
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < count; ++r) {
      const std::int64_t i = rows[r];
      double s = 0;
      for (std::int64_t c = 0; c < clusters; ++c) {
        for (int k = 0; k < d; ++k)
          hermite_functions(targets[i * d + k] - centres[c * d + k], p, f.data() + k * p);
        s += tensor_dot(coef.data() + c * P, f.data(), d, p, work.data());
      }
      out[r] = s;
    }
  }
}

double hermite_flops(int d, int p) {
  double contraction = 0;
  for (int k = 1; k <= d; ++k)
    contraction += double(ipow(p, k));
  return 2 * contraction + d * (3.0 * p - 2);
}

HermiteBench hermite_bench_cpu(int d, int p, std::int64_t n, std::int64_t clusters, int threads,
                               int reps) {
  std::vector<double> tgt, ctr, coef;
  hermite_bench_data(d, p, n, clusters, tgt, ctr, coef);
  std::vector<std::int64_t> rows(static_cast<std::size_t>(n));
  std::iota(rows.begin(), rows.end(), std::int64_t(0));
  std::vector<double> out(static_cast<std::size_t>(n)), times;
  for (int r = 0; r < std::max(reps, 1); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    hermite_eval_cpu(d, p, tgt, ctr, coef, rows, out.data(), threads);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], 0.0, hermite_flops(d, p)};
}

} // namespace ksum::fgt
