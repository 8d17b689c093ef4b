// Kernel evaluations of the interpolation FMM (fmm_kernels.hpp): P2P, M2P, P2L and L2P, with the
// inner loops over sources vectorised like the CPU direct sum.
#include "fmm/fmm3d/fmm_kernels.hpp"
#include "kernels/kernel_defs.hpp"

#include <algorithm>
#include <omp.h>

namespace ksum::fmm {
namespace {

// kv[j] = K(x, y_j) for j in [0, len): y as three coordinate arrays.
template <class K>
void kernel_row(const K &kf, const double x[3], const double *__restrict y0,
                const double *__restrict y1, const double *__restrict y2, std::int64_t len,
                double *__restrict kv) {
  constexpr double p0 = kdef::p_offset<K>();
#pragma omp simd
  for (std::int64_t j = 0; j < len; ++j) {
    const double a = x[0] - y0[j], b = x[1] - y1[j], c = x[2] - y2[j];
    kv[j] = kf.value(p0 + a * a + b * b + c * c);
  }
}

// Σ_j w_j K(x, y_j): each difference taken in double, then in the kernel's value type T (double,
// or float for the near field at loose tolerances), as are the weights and the sum.
template <class K, class T>
T kernel_dot(const K &kf, const double x[3], const double *__restrict y0,
             const double *__restrict y1, const double *__restrict y2, const T *__restrict w,
             std::int64_t len) {
  constexpr T p0 = static_cast<T>(kdef::p_offset<K>());
  T acc = 0;
#pragma omp simd reduction(+ : acc)
  for (std::int64_t j = 0; j < len; ++j) {
    const auto a = static_cast<T>(x[0] - y0[j]), b = static_cast<T>(x[1] - y1[j]),
               c = static_cast<T>(x[2] - y2[j]);
    acc += w[j] * kf.value(p0 + a * a + b * b + c * c);
  }
  return acc;
}

// Σ_j kv[j] w[j]: one right-hand side against a row of kernel values.
double dot(const double *__restrict kv, const double *__restrict w, std::int64_t len) {
  double acc = 0;
#pragma omp simd reduction(+ : acc)
  for (std::int64_t j = 0; j < len; ++j)
    acc += kv[j] * w[j];
  return acc;
}

// The p³ Chebyshev nodes of box b as three coordinate arrays (xs, xs + P, xs + 2P).
void box_nodes(const FmmTree &t, const Chebyshev &ch, const FmmBox &b, double *xs) {
  const int p = ch.p, P = p * p * p;
  double c[3];
  t.centre(b, c);
  const double s = t.half_side(b.level);
  for (int m = 0; m < P; ++m) {
    xs[m] = c[0] + s * ch.nodes[static_cast<std::size_t>(m / (p * p))];
    xs[P + m] = c[1] + s * ch.nodes[static_cast<std::size_t>(m / p % p)];
    xs[2 * P + m] = c[2] + s * ch.nodes[static_cast<std::size_t>(m % p)];
  }
}

template <class K>
void x_list_impl(const K &kf, const NearContext &c, double *loc, int threads, std::int64_t chunk) {
  const FmmTree &t = c.tree;
  const int P = c.cheb.p * c.cheb.p * c.cheb.p;
  const double *s = t.src.data();
  const std::int64_t n = c.n;
  const auto nb = static_cast<std::int32_t>(t.boxes.size());
#pragma omp parallel num_threads(threads)
  {
    std::vector<double> xs(static_cast<std::size_t>(3 * P)), kv;
#pragma omp for schedule(dynamic, chunk)
    for (std::int32_t a = 0; a < nb; ++a) {
      if (t.x.size(a) == 0)
        continue;
      box_nodes(t, c.cheb, t.boxes[static_cast<std::size_t>(a)], xs.data());
      double *la = loc + static_cast<std::size_t>(a) * static_cast<std::size_t>(P * c.nrhs);
      for (auto e = t.x.offsets[static_cast<std::size_t>(a)];
           e < t.x.offsets[static_cast<std::size_t>(a) + 1]; ++e) {
        const FmmBox &B = t.boxes[static_cast<std::size_t>(t.x.boxes[static_cast<std::size_t>(e)])];
        const std::int64_t len = B.sources();
        kv.resize(static_cast<std::size_t>(len));
        for (int q = 0; q < P; ++q) {
          const double x[3] = {xs[static_cast<std::size_t>(q)], xs[static_cast<std::size_t>(P + q)],
                               xs[static_cast<std::size_t>(2 * P + q)]};
          if (c.nrhs == 1) {
            la[q] += kernel_dot(kf, x, s + B.sb, s + n + B.sb, s + 2 * n + B.sb, c.ws + B.sb, len);
            continue;
          }
          kernel_row(kf, x, s + B.sb, s + n + B.sb, s + 2 * n + B.sb, len, kv.data());
          for (std::int64_t r = 0; r < c.nrhs; ++r)
            la[r * P + q] += dot(kv.data(), c.ws + r * n + B.sb, len);
        }
      }
    }
  }
}

template <class K>
std::int64_t leaf_pass_impl(const K &kf, const NearContext &c, const double *mult,
                            const double *loc, const std::vector<char> &has_local, double *us,
                            int threads, std::int64_t chunk) {
  const FmmTree &t = c.tree;
  const Chebyshev &ch = c.cheb;
  const int p = ch.p, P = p * p * p;
  const std::int64_t n = c.n, m = t.m, nrhs = c.nrhs;
  const double *s = t.src.data();
  const double *g = t.tgt_data();
  const auto exp_size = static_cast<std::size_t>(P * nrhs);
  std::vector<std::int32_t> leaves;
  for (std::size_t b = 0; b < t.boxes.size(); ++b)
    if (t.boxes[b].leaf() && t.boxes[b].targets() > 0)
      leaves.push_back(static_cast<std::int32_t>(b));
  // Total weights of the coincident leaves (summed as one point each).
  std::vector<double> box_weight(t.boxes.size() * static_cast<std::size_t>(nrhs), 0.0);
  for (std::size_t b = 0; b < t.boxes.size(); ++b)
    if (t.boxes[b].coincident)
      for (std::int64_t r = 0; r < nrhs; ++r)
        for (std::int64_t j = t.boxes[b].sb; j < t.boxes[b].se; ++j)
          box_weight[b * static_cast<std::size_t>(nrhs) + static_cast<std::size_t>(r)] +=
              c.ws[r * n + j];
#pragma omp parallel num_threads(threads)
  {
    std::vector<double> xs(static_cast<std::size_t>(3 * P)), kv, run,
        sv(static_cast<std::size_t>(3 * p)), tmp(static_cast<std::size_t>(p * p));
    std::vector<float> runf;
#pragma omp for schedule(dynamic, chunk)
    for (std::size_t li = 0; li < leaves.size(); ++li) {
      const std::int32_t a = leaves[li];
      const FmmBox &A = t.boxes[static_cast<std::size_t>(a)];
      for (std::int64_t r = 0; r < nrhs; ++r)
        std::fill(us + r * m + A.tb, us + r * m + A.te, 0.0);
      if (has_local[static_cast<std::size_t>(a)]) { // L2P
        double cen[3];
        t.centre(A, cen);
        const double inv = 1 / t.half_side(A.level);
        const double *la = loc + static_cast<std::size_t>(a) * exp_size;
        for (std::int64_t i = A.tb; i < A.te; ++i) {
          for (int ax = 0; ax < 3; ++ax)
            ch.eval((g[ax * m + i] - cen[ax]) * inv, sv.data() + ax * p);
          for (std::int64_t r = 0; r < nrhs; ++r) {
            const double *lr = la + r * P;
            for (int ab = 0; ab < p * p; ++ab) {
              double acc = 0;
              for (int cz = 0; cz < p; ++cz)
                acc += lr[ab * p + cz] * sv[static_cast<std::size_t>(2 * p + cz)];
              tmp[static_cast<std::size_t>(ab)] = acc;
            }
            double u = 0;
            for (int ax = 0; ax < p; ++ax) {
              double acc = 0;
              for (int by = 0; by < p; ++by)
                acc += tmp[static_cast<std::size_t>(ax * p + by)] *
                       sv[static_cast<std::size_t>(p + by)];
              u += acc * sv[static_cast<std::size_t>(ax)];
            }
            us[r * m + i] += u;
          }
        }
      }
      for (auto e = t.w.offsets[static_cast<std::size_t>(a)];
           e < t.w.offsets[static_cast<std::size_t>(a) + 1]; ++e) { // M2P
        const std::int32_t b = t.w.boxes[static_cast<std::size_t>(e)];
        box_nodes(t, ch, t.boxes[static_cast<std::size_t>(b)], xs.data());
        const double *mb = mult + static_cast<std::size_t>(b) * exp_size;
        for (std::int64_t i = A.tb; i < A.te; ++i) {
          const double x[3] = {g[i], g[m + i], g[2 * m + i]};
          for (std::int64_t r = 0; r < nrhs; ++r)
            us[r * m + i] +=
                kernel_dot(kf, x, xs.data(), xs.data() + P, xs.data() + 2 * P, mb + r * P, P);
        }
      }
      // P2P. With one right-hand side the sources of the leaf's plain neighbours (not coincident,
      // and not the leaf itself when targets are the sources) are copied into one run first, so
      // that each target takes one long sum instead of one short sum per neighbour (leaves of ~30
      // points at loose tolerances).
      bool gathered = false;
      if (nrhs == 1) {
        std::size_t len = 0;
        for (auto e = t.u.offsets[static_cast<std::size_t>(a)];
             e < t.u.offsets[static_cast<std::size_t>(a) + 1]; ++e) {
          const std::int32_t b = t.u.boxes[static_cast<std::size_t>(e)];
          const FmmBox &B = t.boxes[static_cast<std::size_t>(b)];
          if (!B.coincident && !(t.self && b == a))
            len += static_cast<std::size_t>(B.sources());
        }
        gathered = len > 0;
        if (gathered) {
          // Coordinates in double, then the weights: in double, or in float for loose tolerances
          // (c.single), where each difference is taken in double and then rounded (relative 6e-8
          // however close the points are), and the kernel and the sum are float.
          run.resize((c.single ? 3 : 4) * len);
          runf.resize(c.single ? len : 0);
          std::size_t o = 0;
          for (auto e = t.u.offsets[static_cast<std::size_t>(a)];
               e < t.u.offsets[static_cast<std::size_t>(a) + 1]; ++e) {
            const std::int32_t b = t.u.boxes[static_cast<std::size_t>(e)];
            const FmmBox &B = t.boxes[static_cast<std::size_t>(b)];
            if (B.coincident || (t.self && b == a))
              continue;
            const auto k = static_cast<std::size_t>(B.sources());
            for (int ax = 0; ax < 3; ++ax)
              std::copy_n(s + ax * n + B.sb, k, run.data() + ax * len + o);
            if (c.single)
              std::transform(c.ws + B.sb, c.ws + B.sb + static_cast<std::int64_t>(k),
                             runf.data() + o, [](double v) { return static_cast<float>(v); });
            else
              std::copy_n(c.ws + B.sb, k, run.data() + 3 * len + o);
            o += k;
          }
          const kdef::in_float<K> kff{};
          const auto l = static_cast<std::int64_t>(len);
          const double *y0 = run.data(), *y1 = y0 + len, *y2 = y1 + len;
          for (std::int64_t i = A.tb; i < A.te; ++i) {
            const double x[3] = {g[i], g[m + i], g[2 * m + i]};
            us[i] += c.single ? static_cast<double>(kernel_dot(kff, x, y0, y1, y2, runf.data(), l))
                              : kernel_dot(kf, x, y0, y1, y2, y2 + len, l);
          }
        }
      }
      for (auto e = t.u.offsets[static_cast<std::size_t>(a)];
           e < t.u.offsets[static_cast<std::size_t>(a) + 1]; ++e) {
        const std::int32_t b = t.u.boxes[static_cast<std::size_t>(e)];
        const FmmBox &B = t.boxes[static_cast<std::size_t>(b)];
        const bool same = t.self && b == a;
        if (gathered && !B.coincident && !same)
          continue; // summed above
        const std::int64_t len = B.sources();
        if (B.coincident) {
          const double y[3] = {s[B.sb], s[n + B.sb], s[2 * n + B.sb]};
          const double *bw =
              box_weight.data() + static_cast<std::size_t>(b) * static_cast<std::size_t>(nrhs);
          for (std::int64_t i = A.tb; i < A.te; ++i) {
            const double x[3] = {g[i], g[m + i], g[2 * m + i]};
            double kv1 = 0;
            kernel_row(kf, x, y, y + 1, y + 2, 1, &kv1);
            for (std::int64_t r = 0; r < nrhs; ++r)
              us[r * m + i] += kv1 * (bw[r] - (same ? c.ws[r * n + i] : 0.0));
          }
          continue;
        }
        kv.resize(static_cast<std::size_t>(len));
        for (std::int64_t i = A.tb; i < A.te; ++i) {
          const double x[3] = {g[i], g[m + i], g[2 * m + i]};
          if (nrhs == 1 && !same) {
            us[i] += kernel_dot(kf, x, s + B.sb, s + n + B.sb, s + 2 * n + B.sb, c.ws + B.sb, len);
            continue;
          }
          kernel_row(kf, x, s + B.sb, s + n + B.sb, s + 2 * n + B.sb, len, kv.data());
          if (same)
            kv[static_cast<std::size_t>(i - B.sb)] = 0; // the self term j = i
          for (std::int64_t r = 0; r < nrhs; ++r)
            us[r * m + i] += dot(kv.data(), c.ws + r * n + B.sb, len);
        }
      }
    }
  }
  return static_cast<std::int64_t>(leaves.size());
}

} // namespace

void x_list(Kernel kernel, const NearContext &c, double *loc, int threads, std::int64_t chunk) {
  kdef::visit<double>(kernel, [&](auto kf) { x_list_impl(kf, c, loc, threads, chunk); });
}

std::int64_t leaf_pass(Kernel kernel, const NearContext &c, const double *mult, const double *loc,
                       const std::vector<char> &has_local, double *us, int threads,
                       std::int64_t chunk) {
  std::int64_t leaves = 0;
  kdef::visit<double>(kernel, [&](auto kf) {
    leaves =
        leaf_pass_impl(kf, c, mult, loc, has_local, us, threads, std::max<std::int64_t>(1, chunk));
  });
  return leaves;
}

} // namespace ksum::fmm
