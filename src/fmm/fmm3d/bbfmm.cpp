// The interpolation FMM (bbfmm.hpp): order selection, operators, and the passes of apply().
#include "fmm/fmm3d/bbfmm.hpp"
#include "fmm/fmm3d/chebyshev.hpp"
#include "fmm/fmm3d/fmm_kernels.hpp"
#include "fmm/fmm3d/octree.hpp"
#include "fmm/fmm3d/order_calibration.hpp"
#include "kernels/kernel_defs.hpp"

#include <ksum/error.hpp>
#include <ksum/tasksize.hpp>

// Eigen's products run inside our OpenMP loops, one thread each: no nested team of its own.
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Core>
#include <Eigen/QR>
#include <Eigen/SVD>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <omp.h>
#include <optional>
#include <random>
#include <string_view>
#include <utility>

namespace ksum::fmm {
namespace {

using Clock = std::chrono::steady_clock;

// Operators beyond this are rebuilt per apply() instead of kept (kernels that are not homogeneous
// need one set of 16 p³ × p³ matrices per level).
constexpr double operator_cache_bytes = 1.5 * (1u << 30);
constexpr double gpu_operator_bytes = 8.0 * (1u << 30);
constexpr std::size_t max_cols = 2048; // columns per CPU M2L product
// From this tolerance on the CPU's low-rank M2L products and near-field sums run in float
// (BbFmmOptions::mixed_precision).
constexpr double mixed_from = 1e-4;
// The CPU's low-rank M2L operators are exact to this share of the tolerance (relative Frobenius
// error per class operator).
constexpr double m2l_cut_share = 0.1;
constexpr std::int64_t min_lowrank_pairs = 4096;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A tree's work, counted once for its statistics and for comparing two trees of one plan.
struct TreeCounts {
  std::int64_t leaves = 0;
  std::int64_t near = 0;   // source–target pairs of the U lists
  double expansion = 0;    // W: p³ per target of the leaf; X: p³ per source of the source leaf
  double occupancy = 0;    // the leaves' points (sources + targets), weighted by themselves
};
TreeCounts count_tree(const FmmTree &tr, std::int64_t p3) {
  TreeCounts c;
  double occ_num = 0, occ_den = 0;
  for (std::size_t b = 0; b < tr.boxes.size(); ++b) {
    const FmmBox &A = tr.boxes[b];
    if (A.leaf()) {
      ++c.leaves;
      const double ns = double(A.sources()), nt = double(A.targets());
      occ_num += ns * ns + nt * nt;
      occ_den += ns + nt;
      for (auto e = tr.u.offsets[b]; e < tr.u.offsets[b + 1]; ++e)
        c.near += A.targets() * tr.boxes[static_cast<std::size_t>(tr.u.boxes[std::size_t(e)])]
                                    .sources();
      c.expansion += double(tr.w.size(static_cast<std::int32_t>(b))) * double(A.targets()) *
                     double(p3);
    }
    for (auto e = tr.x.offsets[b]; e < tr.x.offsets[b + 1]; ++e)
      c.expansion +=
          double(tr.boxes[static_cast<std::size_t>(tr.x.boxes[std::size_t(e)])].sources()) *
          double(p3);
  }
  c.occupancy = occ_den > 0 ? occ_num / occ_den : 0.0;
  return c;
}

// K(s r) = s^degree K(r) for these kernels, so one operator set serves every level.
std::optional<int> homogeneous_degree(Kernel k) {
  switch (k) {
  case Kernel::laplace:
    return -1;
  case Kernel::linear:
    return 1;
  case Kernel::cubic:
    return 3;
  case Kernel::quintic:
    return 5;
  default:
    return std::nullopt;
  }
}

double kernel_at(Kernel k, double r2) {
  return kdef::visit<double>(k, [r2](auto kf) {
    return static_cast<double>(kf.value(r2 + kdef::p_offset<decltype(kf)>()));
  });
}

// out[a'b'c'] (+)= Σ Tx[a'a] Ty[b'b] Tz[c'c] in[abc] (transpose: Tx[a a'] …), T p × p row-major.
void tensor3(int p, const double *tx, const double *ty, const double *tz, bool transpose,
             const double *in, double *out, double *s1, double *s2) {
  auto t = [&](const double *m, int i, int k) { return transpose ? m[k * p + i] : m[i * p + k]; };
  const int pp = p * p;
  for (int a2 = 0; a2 < p; ++a2)
    for (int bc = 0; bc < pp; ++bc) {
      double acc = 0;
      for (int a = 0; a < p; ++a)
        acc += t(tx, a2, a) * in[a * pp + bc];
      s1[a2 * pp + bc] = acc;
    }
  for (int a2 = 0; a2 < p; ++a2)
    for (int b2 = 0; b2 < p; ++b2)
      for (int c = 0; c < p; ++c) {
        double acc = 0;
        for (int b = 0; b < p; ++b)
          acc += t(ty, b2, b) * s1[a2 * pp + b * p + c];
        s2[a2 * pp + b2 * p + c] = acc;
      }
  for (int ab = 0; ab < pp; ++ab)
    for (int c2 = 0; c2 < p; ++c2) {
      double acc = 0;
      for (int c = 0; c < p; ++c)
        acc += t(tz, c2, c) * s2[ab * p + c];
      out[ab * p + c2] += acc;
    }
}

// One M2L class operator K (P × P, column-major) in low rank, K ≈ U W (U: P × r, W: r × P), with
// ‖K − U W‖_F ≤ cut · ‖K − K₁‖_F (K₁: its leading singular pair); rank −1 where that needs r > P /
// 2 (no saving: U W costs 4 P r flops per column against K's 2 P²). A range finder on s = 16, 32, …
// Gaussian columns (a fixed seed: the same factors every time); with the SVD of Qᵀ K (s × P), its
// basis Q is kept once the projection's residual ‖K − Q Qᵀ K‖_F, computed as such, is within half
// the allowed error; then the smallest r whose dropped singular values and that residual stay
// within it.
struct LowRank {
  int rank = -1;
  std::vector<double> u, w; // P × r and r × P, column-major
};

LowRank compress_class(const double *k, int P, double cut) {
  using Mat = Eigen::MatrixXd;
  LowRank out;
  const Eigen::Map<const Mat> K(k, P, P);
  const double kf2 = K.squaredNorm();
  if (!(kf2 > 0) || !std::isfinite(kf2))
    return out;
  std::mt19937_64 rng(0x6d326cull);
  std::normal_distribution<double> gauss;
  // s = 16, 32, … and last ⌈P/2⌉ + 8 (the largest useful rank plus a little oversampling).
  const int cap = std::min(P, (P + 1) / 2 + 8);
  for (int s = std::min(16, cap);; s = std::min(2 * s, cap)) {
    const int cols = s;
    Mat omega(P, cols);
    for (Eigen::Index j = 0; j < omega.size(); ++j)
      omega.data()[j] = gauss(rng);
    const Mat Y = K * omega;
    const Eigen::HouseholderQR<Mat> qr(Y);
    const Mat Q = qr.householderQ() * Mat::Identity(P, cols);
    const Mat B = Q.transpose() * K; // cols × P
    const double res2 = (K - Q * B).squaredNorm();
    const Eigen::BDCSVD<Mat> svd(B, Eigen::ComputeThinU | Eigen::ComputeThinV);
    const auto &sv = svd.singularValues();
    // Relative to what is left beyond the leading singular pair: that pair is nearly the
    // operator's constant part (its mean over the box pair), which weights of both signs cancel,
    // so that sums far smaller than |K| |w| are still resolved (multiquadric: 8.7e-6 at 1e-6
    // relative to the whole norm, 20,000 points, signed weights).
    const double allowed = cut * cut * std::max(kf2 - sv[0] * sv[0], 0.0);
    if (res2 > allowed / 4) {
      if (s == cap)
        return out;
      continue;
    }
    int r = static_cast<int>(sv.size());
    double dropped = res2;
    while (r > 1 && dropped + sv[r - 1] * sv[r - 1] <= allowed) {
      --r;
      dropped += sv[r] * sv[r];
    }
    if (2 * r > P)
      return out;
    out.rank = r;
    const Mat U = Q * svd.matrixU().leftCols(r);
    const Mat W = sv.head(r).asDiagonal() * svd.matrixV().leftCols(r).transpose();
    out.u.assign(U.data(), U.data() + U.size());
    out.w.assign(W.data(), W.data() + W.size());
    return out;
  }
  return out;
}

} // namespace

struct BbFmm::Operators {
  int p = 0, P = 0;
  Chebyshev cheb;
  std::vector<std::vector<std::int32_t>> perm; // 48 × P: π_t(m)
  std::vector<std::vector<std::int32_t>> pinv; // 48 × P: π_t⁻¹
  std::vector<std::vector<double>> sets;       // 16 P × P column-major matrices each
  std::vector<int> level_set;                  // per level: index into sets, −1: none
  std::vector<double> level_scale;
  std::vector<std::int32_t> perm_flat, pinv_flat; // the same tables, 48 P each (GPU)
  std::vector<double> m2m_flat;                   // both octant bits, p² each (GPU)
  // Per set: its 16 class operators in low rank for the CPU's M2L (empty: not compressed; a class
  // of rank −1 uses its full matrix).
  std::vector<std::vector<LowRank>> low;
  // Per set, for the CPU's M2L at loose tolerances (mixed_from): each low-rank class operator
  // in float with a symmetry t folded in, W_c Π_t⁻¹ (r × P) followed by Π_t U_c (P × r), from
  // data[at[48 c + t]] (−1: not built), so that its pairs need no permuted gather or scatter:
  // Z = W_c Π_t⁻¹ M(b), L(a) += Π_t U_c Z. Empty `at`: not folded.
  struct Folded {
    std::vector<float> data;
    std::vector<std::int64_t> at;
  };
  std::vector<Folded> folded;

  // Folds the pairs (class c, symmetry t) flagged in used[48 c + t] for `set`'s low-rank classes.
  void fold(std::size_t set, const std::vector<char> &used) {
    folded.resize(low.size());
    auto &buf = folded[set].data;
    auto &at = folded[set].at;
    buf.clear();
    at.assign(16 * 48, -1);
    for (int c = 0; c < 16; ++c) {
      const LowRank &lr = low[set][static_cast<std::size_t>(c)];
      if (lr.rank < 0)
        continue;
      const int r = lr.rank;
      for (int t = 0; t < 48; ++t) {
        if (!used[static_cast<std::size_t>(48 * c + t)])
          continue;
        const auto o = static_cast<std::int64_t>(buf.size());
        at[static_cast<std::size_t>(48 * c + t)] = o;
        buf.resize(buf.size() + static_cast<std::size_t>(2 * r * P));
        float *w = buf.data() + o;
        float *u = w + static_cast<std::ptrdiff_t>(r) * P;
        const auto &pi = pinv[static_cast<std::size_t>(t)];
        const auto &pf = perm[static_cast<std::size_t>(t)];
        for (int q = 0; q < P; ++q)
          for (int k = 0; k < r; ++k)
            w[static_cast<std::ptrdiff_t>(pi[static_cast<std::size_t>(q)]) * r + k] =
                static_cast<float>(lr.w[static_cast<std::size_t>(q * r + k)]);
        for (int k = 0; k < r; ++k)
          for (int q = 0; q < P; ++q)
            u[static_cast<std::ptrdiff_t>(k) * P + q] = static_cast<float>(
                lr.u[static_cast<std::size_t>(k * P + pf[static_cast<std::size_t>(q)])]);
      }
    }
  }

  // The 16 classes of `set` (16 P × P matrices) compressed to relative Frobenius error `cut`.
  std::vector<LowRank> compress(const std::vector<double> &set, double cut, int threads) const {
    std::vector<LowRank> out(16);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int c = 0; c < 16; ++c)
      out[static_cast<std::size_t>(c)] =
          compress_class(set.data() + static_cast<std::size_t>(c) * P * P, P, cut);
    return out;
  }

  explicit Operators(int order) : p(order), P(order * order * order), cheb(order) {
    const auto &sym = m2l_symmetry();
    perm.assign(48, std::vector<std::int32_t>(static_cast<std::size_t>(P)));
    pinv = perm;
    for (int t = 0; t < 48; ++t)
      for (int m = 0; m < P; ++m) {
        const int mi[3] = {m / (p * p), m / p % p, m % p};
        int mo[3];
        for (int i = 0; i < 3; ++i)
          mo[sym.perm[t][i]] = sym.flip[t][i] ? p - 1 - mi[i] : mi[i];
        const int pm = (mo[0] * p + mo[1]) * p + mo[2];
        perm[static_cast<std::size_t>(t)][static_cast<std::size_t>(m)] = pm;
        pinv[static_cast<std::size_t>(t)][static_cast<std::size_t>(pm)] = m;
      }
    for (int t = 0; t < 48; ++t) {
      perm_flat.insert(perm_flat.end(), perm[static_cast<std::size_t>(t)].begin(),
                       perm[static_cast<std::size_t>(t)].end());
      pinv_flat.insert(pinv_flat.end(), pinv[static_cast<std::size_t>(t)].begin(),
                       pinv[static_cast<std::size_t>(t)].end());
    }
    m2m_flat = cheb.m2m[0];
    m2m_flat.insert(m2m_flat.end(), cheb.m2m[1].begin(), cheb.m2m[1].end());
  }

  // The 16 class operators for boxes of side h (scaled coordinates):
  // K_c[m' + P k'] = K(h (D_c + (n_m' − n_k') / 2)).
  std::vector<double> build(Kernel kernel, double h, int threads) const {
    const auto &sym = m2l_symmetry();
    std::vector<double> out(static_cast<std::size_t>(16) * P * P);
    std::vector<double> nx(static_cast<std::size_t>(3 * P));
    for (int m = 0; m < P; ++m) {
      nx[static_cast<std::size_t>(3 * m)] = cheb.nodes[static_cast<std::size_t>(m / (p * p))];
      nx[static_cast<std::size_t>(3 * m + 1)] = cheb.nodes[static_cast<std::size_t>(m / p % p)];
      nx[static_cast<std::size_t>(3 * m + 2)] = cheb.nodes[static_cast<std::size_t>(m % p)];
    }
    kdef::visit<double>(kernel, [&](auto kf) {
      constexpr double p0 = kdef::p_offset<decltype(kf)>();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
      for (int ck = 0; ck < 16 * P; ++ck) {
        const int c = ck / P, k = ck % P;
        double *col = out.data() + (static_cast<std::size_t>(c) * P + k) * P;
        const double *nk = nx.data() + 3 * k;
        const double dx = sym.canonical[c][0] - nk[0] / 2, dy = sym.canonical[c][1] - nk[1] / 2,
                     dz = sym.canonical[c][2] - nk[2] / 2;
        for (int m = 0; m < P; ++m) {
          const double *nm = nx.data() + 3 * m;
          const double a = h * (dx + nm[0] / 2), b = h * (dy + nm[1] / 2), e = h * (dz + nm[2] / 2);
          col[m] = kf.value(p0 + (a * a + b * b + e * e));
        }
      }
    });
    return out;
  }
};

BbFmm::BbFmm(const BbFmmOptions &options) : opt_(options) {
  if (!(options.tolerance > 0 && options.tolerance < 1))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("fmm: tolerance {} (expected 0 < tolerance < 1)", options.tolerance));
  if (options.order < 0 || options.order > max_chebyshev_order)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("fmm: order {} (expected 0 … {})", options.order, max_chebyshev_order));
  if (options.leaf_size < 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("fmm: leaf_size {} (expected ≥ 0; 0: automatic)", options.leaf_size));
  if (!(options.eps > 0 && std::isfinite(options.eps)))
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("fmm: shape parameter eps must be finite and > 0, got {}", options.eps));
  for (const auto &[name, v] : {std::pair{"near_chunk", options.near_chunk},
                                {"m2l_chunk", options.m2l_chunk},
                                {"pass_chunk", options.pass_chunk}})
    if (v < 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("fmm: {} {} (expected ≥ 0; 0: the task-size model)", name, v));
  scale_ = kdef::coord_scale(options.kernel, options.eps);
}

BbFmm::~BbFmm() = default;

double BbFmm::calibrated_ratio(Kernel kernel, int p) {
  using namespace detail;
  const auto k = static_cast<std::size_t>(kernel);
  if (k >= std::size(kOrderErrorRatio))
    return 1.0;
  const auto &row = kOrderErrorRatio[k];
  if (p <= kCalibratedMaxOrder)
    return row[static_cast<std::size_t>(std::max(p, kCalibratedMinOrder) - kCalibratedMinOrder)];
  // Past the table: the largest of its last four orders.
  const std::size_t n = std::size(row);
  return std::max({row[n - 1], row[n - 2], row[n - 3], row[n - 4]});
}

double BbFmm::interpolation_error(Kernel kernel, int p, double s) {
  const Chebyshev ch(p);
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> u(-1, 1);
  const double phi0 = kernel_info(kernel).singular ? 0 : std::abs(kernel_at(kernel, 0));
  double worst = 0, scale = phi0;
  std::vector<double> sv(static_cast<std::size_t>(p));
  // Every canonical V offset (in box sides 2s): the closest ones carry the largest error for
  // smooth kernels, but a compactly supported kernel's edge (wendland: only C^k there) may fall
  // inside any of them.
  const auto &sym = m2l_symmetry();
  for (const auto &cls : sym.canonical)
    for (int sample = 0; sample < 24; ++sample) {
      const double off[3] = {2 * s * cls[0], 2 * s * cls[1], 2 * s * cls[2]};
      double z[6]; // x (target cube at 0), then y (source cube at off)
      for (int a = 0; a < 3; ++a) {
        z[a] = s * u(rng);
        z[3 + a] = off[a] + s * u(rng);
      }
      auto k_of = [&](const double *v) {
        const double a = v[0] - v[3], b = v[1] - v[4], c = v[2] - v[5];
        return kernel_at(kernel, a * a + b * b + c * c);
      };
      const double k0 = k_of(z);
      scale = std::max(scale, std::abs(k0));
      double err = 0;
      for (int i = 0; i < 6; ++i) {
        const double centre = i < 3 ? 0 : off[i - 3];
        ch.eval((z[i] - centre) / s, sv.data());
        double v[6], acc = 0;
        std::copy(z, z + 6, v);
        for (int m = 0; m < p; ++m) {
          v[i] = centre + s * ch.nodes[static_cast<std::size_t>(m)];
          acc += sv[static_cast<std::size_t>(m)] * k_of(v);
        }
        err += std::abs(acc - k0);
      }
      worst = std::max(worst, err);
    }
  return scale > 0 ? worst / scale : 0;
}

void BbFmm::set_points(const double *sources, std::int64_t n, const double *targets,
                       std::int64_t m) {
  const auto t0 = Clock::now();
  gpu_.reset(); // never left pointing at a tree that a failure below half replaced
  ops_.reset();
  for (auto *v : {&ws_, &us_, &mult_, &loc_}) // sized again by the next apply
    ksum::detail::uninit_vector<double>().swap(*v);
  near_chunk_.reset(); // a new tree: the passes' costs are measured again
  level_chunks_ = {};
  const int threads = opt_.threads > 0 ? opt_.threads : omp_get_max_threads();
  const bool self = targets == nullptr;
  std::vector<double> s(static_cast<std::size_t>(3 * n)), t;
  // Scaled coordinates, and their extent, must stay finite (the tree divides by the extent).
  auto scale_into = [&](const double *from, std::int64_t count, std::vector<double> &to,
                        const char *what) {
    to.resize(static_cast<std::size_t>(3 * count));
    for (int a = 0; a < 3; ++a) {
      double lo = std::numeric_limits<double>::infinity(), hi = -lo;
#pragma omp parallel for schedule(static) reduction(min                                            \
                                                    : lo) reduction(max                            \
                                                                    : hi) if (count > 100000)
      for (std::int64_t i = 0; i < count; ++i) {
        const double v = scale_ * from[a * count + i];
        to[static_cast<std::size_t>(a * count + i)] = v;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      if (count > 0 && !std::isfinite(hi - lo))
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("fmm: the {} span [{}, {}] along axis {} (after scaling by eps) "
                                "overflows double precision",
                                what, lo / scale_, hi / scale_, a));
    }
  };
  scale_into(sources, n, s, "sources");
  if (!self)
    scale_into(targets, m, t, "targets");
  if (!self) { // both sets share one cube
    for (int a = 0; a < 3; ++a) {
      double lo = 0, hi = 0;
      bool any = false;
      for (const auto *v : {&s, &t}) {
        const std::int64_t c = static_cast<std::int64_t>(v->size()) / 3;
        for (std::int64_t i = 0; i < c; ++i) {
          const double x = (*v)[static_cast<std::size_t>(a * c + i)];
          lo = any ? std::min(lo, x) : x;
          hi = any ? std::max(hi, x) : x;
          any = true;
        }
      }
      if (!std::isfinite(hi - lo))
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("fmm: sources and targets together span [{}, {}] along axis {} "
                                "(after scaling by eps): that overflows double precision",
                                lo / scale_, hi / scale_, a));
    }
  }
  const auto homog = homogeneous_degree(opt_.kernel);
  const double target_err = opt_.tolerance / 2;
  // The order for boxes of half side s (one value for homogeneous kernels): the smallest p whose
  // predicted error, the estimate times its calibrated ratio to the measured error, is at most
  // tolerance / 2.
  auto order_for = [&](double half, int from) {
    for (int p = std::max(from, 2); p <= max_chebyshev_order; ++p)
      if (calibrated_ratio(opt_.kernel, p) *
              interpolation_error(opt_.kernel, p, homog ? 1.0 : half) <=
          target_err)
        return p;
    throw Error(ErrorCode::invalid_argument,
                fmt::format("fmm: tolerance {} is beyond what Chebyshev order {} reaches for the "
                            "{} kernel in double precision; ask for a larger tolerance or use "
                            "the direct sum",
                            opt_.tolerance, max_chebyshev_order, kernel_info(opt_.kernel).name));
  };
  // Guess the order from the unit cube, build the tree with the leaf size it implies, then check
  // every level that has far interactions; rebuild (at most twice) while the order changes the leaf
  // size.
  int p = opt_.order > 0 ? opt_.order : order_for(1.0, 2);
  // The levels of the tree that have far interactions (V, X or W lists).
  auto far_levels = [&] {
    std::vector<char> far_level(static_cast<std::size_t>(tree_.depth) + 1, 0);
    for (std::size_t b = 0; b < tree_.boxes.size(); ++b) {
      const auto lb = static_cast<std::size_t>(tree_.boxes[b].level);
      if (tree_.v.size(static_cast<std::int32_t>(b)) > 0 ||
          tree_.x.size(static_cast<std::int32_t>(b)) > 0)
        far_level[lb] = 1;
      for (auto e = tree_.w.offsets[b]; e < tree_.w.offsets[b + 1]; ++e)
        far_level[static_cast<std::size_t>(
            tree_.boxes[static_cast<std::size_t>(tree_.w.boxes[static_cast<std::size_t>(e)])]
                .level)] = 1;
    }
    return far_level;
  };
  // The M2L runs on low-rank class operators (compress_class) to a share of the tolerance.
  const bool lowrank = opt_.gpu ? opt_.compress_m2l_gpu : opt_.compress_m2l;
  const double cut = m2l_cut_share * opt_.tolerance;
  // A homogeneous kernel's one operator set and its low-rank classes for order unit_p, made while
  // the order is chosen (the leaf size depends on the ranks) and kept for the plan.
  int unit_p = 0;
  std::vector<double> unit_set;
  std::vector<LowRank> unit_low;
  double seconds_unit = 0; // building and factoring those (counted as the operators' time)
  auto leaf_for = [&](int p) -> std::int64_t {
    const std::int64_t P = static_cast<std::int64_t>(p) * p * p;
    // Leaves of up to 2·p³ points: a uniform tree then holds 0.25 … 2 p³ per leaf, where the near
    // field (∝ points per leaf) and the M2L (∝ p⁶ per box) cost about the same. With p³ the tree
    // went a level deeper for p = 5, 6 at 10^6 points and its M2L took 2.6× (p = 6: 9.0 against
    // 1.1 s, whole execute 10.2 against 3.9 s on 2 cores;
    // bench/results/2026-11-27-fmm-order-calibration).
    std::int64_t leaf = std::max<std::int64_t>(32, 2 * P);
    // The GPU's near field takes one block of 128 threads per target leaf, which leaves of a few
    // dozen points keep mostly idle: at 10^6 points (H200, Laplace, double) leaves of up to 512
    // points against 2 p³ took 16.2 against 23.6 ms at p = 5 on uniform points (2 p³ = 250
    // split half the level-4 boxes into leaves of ~30), 43 against 58 ms at p = 8 on Plummer
    // points; Plummer points at p = 5 took 22.0 against 21.6 ms, and uniform points at p = 8 got
    // the same tree (bench/results/2026-11-27-h200-gpu-fmm-leaf). Larger p (2 p³ ≥ 1458) was not
    // measured and keeps 2 p³.
    if (opt_.gpu && p <= 8)
      leaf = 512;
    // Only where the tree will have the V pairs that make the M2L low rank (~189 per box of ~2 P
    // points), and on the CPU only: on the GPU (low rank from 2^22 points) a low-rank leaf size
    // was not measured, so its trees keep the sizes above.
    if (lowrank && !opt_.gpu && homog && std::max(n, m) / (2 * P) * 189 >= min_lowrank_pairs) {
      if (unit_p != p) {
        const auto t_unit = Clock::now();
        const Operators tmp(p);
        unit_set = tmp.build(opt_.kernel, 1.0, threads);
        unit_low = tmp.compress(unit_set, cut, threads);
        unit_p = p;
        seconds_unit += since(t_unit);
      }
      // Low rank r: the M2L costs 4 P r flops per V pair instead of 2 P². The balance of the
      // near field (∝ leaf²) with it then moves the leaf size by √(2 r / P): 2 √(2 P r).
      // (A class in full costs what rank P / 2 does.)
      double r = 0;
      for (const auto &c : unit_low)
        r += (c.rank >= 0 ? std::min<double>(c.rank, P / 2.0) : P / 2.0) / 16.0;
      leaf = std::max<std::int64_t>(32, std::llround(2 * std::sqrt(2 * double(P) * r)));
    }
    return leaf;
  };
  // The order the tree's levels with far interactions need (one level for a homogeneous kernel).
  auto needed_order = [&] {
    const auto far_level = far_levels();
    int need = 2;
    for (std::size_t l = 0; l < far_level.size(); ++l)
      if (far_level[l] && (!homog || need == 2))
        need = order_for(tree_.half_side(static_cast<std::int32_t>(l)), need);
    return need;
  };
  for (int attempt = 0;; ++attempt) {
    const std::int64_t P = static_cast<std::int64_t>(p) * p * p;
    const std::int64_t leaf = opt_.leaf_size > 0 ? opt_.leaf_size : leaf_for(p);
    tree_ = build_fmm_tree(s.data(), n, self ? nullptr : t.data(), m,
                           FmmTreeOptions{.leaf_size = leaf,
                                          .expansion_size = P,
                                          .sort_device = opt_.gpu ? opt_.device : -1});
    stats_.leaf_size = leaf;
    if (opt_.order > 0)
      break;
    const int need = needed_order();
    // The tree's leaves follow p: a second rebuild where the first one's tree asked for a higher
    // order still (its leaves were sized for the lower one: at 6,000 points, multiquadric at
    // 1e-7, p = 9 on leaves sized for p = 5 took 1.0 s per product instead of 0.016 s), then p
    // only goes up.
    if (need == p || attempt > 1 || (attempt == 1 && need < p) || opt_.leaf_size > 0) {
      p = std::max(p, need);
      break;
    }
    p = attempt == 0 ? need : std::max(p, need);
  }
  stats_.order = p;
  // The levels are a factor 8 apart in points per box, so a uniform region's leaves can hold as
  // few as an eighth of the leaf size, where the M2L of the many small boxes outweighs the near
  // field it saves: at 2·10⁶ uniform points (Laplace, 1e-6, CPU, low rank) the 399-point leaf
  // size split every level-4 box of 488 points into leaves of 61 (M2L 10.1 s, near 1.4 s on one
  // core per 10⁶ points, against 2.1 and 4.4 s at 10⁶ points, whose leaves hold 244). Where the
  // leaves hold less than a third of the leaf size on average (weighted by their points), a tree
  // with a root cube 2^{1/3} or 2^{2/3} wider puts 2 or 4 times the points into each box and is
  // kept if its predicted cost is 10 % lower (near pairs, W and X pairs at p³ per point, and V
  // pairs at leaf² / 28 pairs each: 27 leaf² / 4 near pairs per box of a typical half-full leaf
  // against ~189 V pairs balance at the leaf size) and its levels need no higher order. Not with
  // a given order for a kernel whose accuracy depends on the boxes' size (larger boxes at that
  // order would be less accurate). GPU plans too since session 46, with the same model (the CPU's
  // costs): on an H200 (Laplace, 512-point leaves) it chose the wider root at 4·10⁶ uniform points
  // (execute 0.120 → 0.089 s at 1e-6, 0.049 → 0.044 s at 1e-3) and for a distributed rank's local
  // tree at 10⁷ points per rank on 2 GPUs (0.389 → 0.296 s), and kept the bounding cube at 10⁶,
  // 2·10⁶, 8·10⁶ uniform and 2·10⁶ Plummer points. KSUM_FMM_GPU_WIDE_ROOT=0 turns it off for GPU
  // plans (for measuring).
  stats_.root_scale = 1;
  const std::int64_t p3 = std::int64_t(p) * p * p;
  auto counts = count_tree(tree_, p3);
  static const bool gpu_wide_root = [] { // read once per process
    const char *v = std::getenv("KSUM_FMM_GPU_WIDE_ROOT");
    const std::string_view s = v ? v : "";
    return !(s == "0" || s == "off" || s == "false" || s == "no");
  }();
  if ((!opt_.gpu || gpu_wide_root) && opt_.leaf_size == 0 &&
      std::max(n, m) >= 64 * stats_.leaf_size &&
      (opt_.order == 0 || homog) && counts.occupancy > 0 &&
      counts.occupancy < double(stats_.leaf_size) / 3) {
    const double leaf = double(stats_.leaf_size);
    const auto cost = [&](const FmmTree &tr, const TreeCounts &c) {
      return double(c.near) + c.expansion + double(tr.v.boxes.size()) * leaf * leaf / 28.0;
    };
    const double scale = counts.occupancy >= leaf / 6 ? std::cbrt(2.0) : std::cbrt(4.0);
    FmmTree wide = build_fmm_tree(s.data(), n, self ? nullptr : t.data(), m,
                                  FmmTreeOptions{.leaf_size = stats_.leaf_size,
                                                 .expansion_size = p3,
                                                 .sort_device = -1,
                                                 .root_scale = scale});
    const auto wide_counts = count_tree(wide, p3);
    const double old_cost = cost(tree_, counts);
    std::swap(tree_, wide);
    int need = 2;
    if (opt_.order == 0) {
      try { // a wider box may need an order beyond any: then the first tree stays
        need = needed_order();
      } catch (const Error &) {
        need = max_chebyshev_order + 1;
      }
    }
    if (cost(tree_, wide_counts) < 0.9 * old_cost && need <= p) {
      stats_.root_scale = scale;
      counts = wide_counts;
    } else {
      std::swap(tree_, wide); // the first tree stays
    }
  }
  // The estimate of the order in use: the largest over the levels with far interactions.
  {
    const auto far_level = far_levels();
    double est = 0;
    for (std::size_t l = 0; l < far_level.size(); ++l)
      if (far_level[l])
        est = std::max(
            est, interpolation_error(opt_.kernel, p,
                                     homog ? 1.0 : tree_.half_side(static_cast<std::int32_t>(l))));
    stats_.estimated_error = est;
  }
  stats_.depth = tree_.depth;
  {
    const auto levels = static_cast<std::size_t>(tree_.depth) + 1;
    level_chunks_.up.assign(levels, tasksize::LearnedChunk{8});
    level_chunks_.m2l.assign(levels, tasksize::LearnedChunk{1});
    level_chunks_.down.assign(levels, tasksize::LearnedChunk{8});
  }
  stats_.boxes = static_cast<std::int64_t>(tree_.boxes.size());
  stats_.leaves = counts.leaves;
  stats_.near_interactions = counts.near;
  stats_.v_pairs = static_cast<std::int64_t>(tree_.v.boxes.size());
  stats_.u_pairs = static_cast<std::int64_t>(tree_.u.boxes.size());
  stats_.w_pairs = static_cast<std::int64_t>(tree_.w.boxes.size());
  stats_.x_pairs = static_cast<std::int64_t>(tree_.x.boxes.size());
  stats_.seconds_tree = since(t0) - seconds_unit;
  stats_.tree_phases = tree_.seconds;
  if (unit_p != p) { // factors of an order not kept: not held through the operators' build
    unit_set = {};
    unit_low = {};
  }

  const auto t1 = Clock::now();
  ops_ = std::make_unique<Operators>(p);
  auto &ops = *ops_;
  ops.level_set.assign(static_cast<std::size_t>(tree_.depth) + 1, -1);
  ops.level_scale.assign(static_cast<std::size_t>(tree_.depth) + 1, 1.0);
  for (std::int32_t l = 0; l <= tree_.depth; ++l) {
    bool any = false;
    for (std::int32_t b = tree_.level_begin[static_cast<std::size_t>(l)];
         b < tree_.level_begin[static_cast<std::size_t>(l) + 1] && !any; ++b)
      any = tree_.v.size(b) > 0;
    if (!any)
      continue;
    const double h = 2 * tree_.half_side(l);
    if (homog) {
      if (ops.sets.empty())
        ops.sets.push_back(unit_p == p ? std::move(unit_set)
                                       : ops.build(opt_.kernel, 1.0, threads));
      ops.level_set[static_cast<std::size_t>(l)] = 0;
      ops.level_scale[static_cast<std::size_t>(l)] = std::pow(h, *homog);
    } else {
      ops.level_set[static_cast<std::size_t>(l)] = static_cast<int>(ops.sets.size());
      ops.sets.emplace_back(); // built below if the cache allows, else during each apply()
    }
  }
  // Cache the per-level operators while they fit operator_cache_bytes, finest levels first (they
  // have the most boxes); the rest are rebuilt by every apply().
  const double set_bytes = 8.0 * 16 * ops.P * ops.P;
  double cached = homog ? set_bytes : 0;
  for (std::int32_t l = tree_.depth; l >= 0 && !homog; --l) {
    const int set = ops.level_set[static_cast<std::size_t>(l)];
    if (set < 0 || cached + set_bytes > operator_cache_bytes)
      continue;
    ops.sets[static_cast<std::size_t>(set)] =
        ops.build(opt_.kernel, 2 * tree_.half_side(l), threads);
    cached += set_bytes;
  }
  // A set is compressed where its V pairs are enough to repay that in one apply (the range finder
  // costs about as much as a few thousand full products; the plans of small problems keep the
  // full matrices). Sets built later (the GPU's) are compressed then.
  std::vector<std::int64_t> v_pairs(ops.sets.size(), 0);
  for (std::int32_t l = 0; l <= tree_.depth; ++l)
    if (const int set = ops.level_set[static_cast<std::size_t>(l)]; set >= 0)
      v_pairs[static_cast<std::size_t>(set)] +=
          tree_.v.offsets[static_cast<std::size_t>(
              tree_.level_begin[static_cast<std::size_t>(l) + 1])] -
          tree_.v.offsets[static_cast<std::size_t>(tree_.level_begin[static_cast<std::size_t>(l)])];
  ops.low.resize(ops.sets.size());
  auto compress_built = [&] {
    if (!lowrank)
      return;
    for (std::size_t set = 0; set < ops.sets.size(); ++set)
      if (!ops.sets[set].empty() && ops.low[set].empty() && v_pairs[set] >= min_lowrank_pairs)
        ops.low[set] = homog && unit_p == p && set == 0 && !unit_low.empty()
                           ? std::move(unit_low)
                           : ops.compress(ops.sets[set], cut, threads);
  };
  compress_built();
  // Float's range: a tree (scaled coordinates) of at most 1e15 across whose smallest boxes are at
  // least 1e-15 wide and not cut off at the deepest level (whose leaves may hold points far
  // closer than their size); the weights are checked at each apply.
  const double smallest = tree_.width / static_cast<double>(std::uint64_t{1} << tree_.depth);
  // On the GPU (a double engine) only the near field goes to float.
  stats_.mixed_precision = !(opt_.gpu && opt_.gpu_single) && opt_.mixed_precision &&
                           opt_.tolerance >= mixed_from && tree_.width <= 1e15 &&
                           smallest >= 1e-15 && tree_.depth < morton_bits;
  // The kernel's largest |value| over the distances a float term can have (from a 40th of the
  // smallest box, below which pairs keep double, to the tree's diagonal; 65 distances evenly
  // spaced in log r, the kernels being smooth there): with the weights it bounds every float
  // term and sum (mixed_for), which keeps growing kernels (cubic, quintic) below float's overflow.
  kernel_max_ = 0;
  if (stats_.mixed_precision)
    kdef::visit<double>(opt_.kernel, [&](auto kf) {
      constexpr double p0 = kdef::p_offset<decltype(kf)>();
      const double lo = 0.0125 * smallest, hi = std::sqrt(3.0) * tree_.width;
      for (int k = 0; k <= 64; ++k) {
        const double r = lo * std::pow(hi / lo, k / 64.0);
        kernel_max_ = std::max(kernel_max_, std::abs(kf.value(p0 + r * r)));
      }
    });
  if (stats_.mixed_precision && !opt_.gpu)
    for (std::size_t set = 0; set < ops.sets.size(); ++set) {
      if (ops.low[set].empty())
        continue;
      std::vector<char> used(16 * 48, 0);
      for (std::int32_t l = 0; l <= tree_.depth; ++l)
        if (ops.level_set[static_cast<std::size_t>(l)] == static_cast<int>(set))
          for (auto e = tree_.v.offsets[static_cast<std::size_t>(
                   tree_.level_begin[static_cast<std::size_t>(l)])];
               e < tree_.v.offsets[static_cast<std::size_t>(
                       tree_.level_begin[static_cast<std::size_t>(l) + 1])];
               ++e)
            used[static_cast<std::size_t>(48 * tree_.v_class[static_cast<std::size_t>(e)] +
                                          tree_.v_transform[static_cast<std::size_t>(e)])] = 1;
      ops.fold(set, used);
    }
  has_local_.assign(tree_.boxes.size(), 0);
  for (std::size_t b = 0; b < tree_.boxes.size(); ++b) {
    const FmmBox &B = tree_.boxes[b];
    has_local_[b] = tree_.v.size(static_cast<std::int32_t>(b)) > 0 ||
                    tree_.x.size(static_cast<std::int32_t>(b)) > 0 ||
                    (B.parent >= 0 && has_local_[static_cast<std::size_t>(B.parent)]);
  }
  gpu_.reset();
  if (opt_.gpu) {
    // The GPU keeps every level's operators.
    const double total = set_bytes * static_cast<double>(ops.sets.size());
    if (total > gpu_operator_bytes)
      throw Error(ErrorCode::unsupported,
                  fmt::format("fmm: the GPU would need {:.1f} GiB of M2L operators (order {}, {} "
                              "levels); ask for a larger tolerance or use the CPU",
                              total / (1u << 30), p, ops.sets.size()));
    GpuSetup g{.tree = &tree_,
               .kernel = opt_.kernel,
               .p = p,
               .nodes = &ops.cheb.nodes,
               .tn = &ops.cheb.tn,
               .m2m = &ops.m2m_flat,
               .perm = &ops.perm_flat,
               .pinv = &ops.pinv_flat,
               .level_ops = {},
               .level_scale = ops.level_scale,
               .has_local = &has_local_};
    for (std::int32_t l = 0; l <= tree_.depth; ++l) {
      const int set = ops.level_set[static_cast<std::size_t>(l)];
      if (set >= 0 && ops.sets[static_cast<std::size_t>(set)].empty())
        ops.sets[static_cast<std::size_t>(set)] =
            ops.build(opt_.kernel, 2 * tree_.half_side(l), threads);
      g.level_ops.push_back(set >= 0 ? ops.sets[static_cast<std::size_t>(set)].data() : nullptr);
    }
    compress_built();
    // Views of each level's low-rank classes, uploaded by the engine.
    std::vector<GpuSetup::LowRankSet> views(ops.low.size());
    for (std::size_t set = 0; set < ops.low.size(); ++set)
      for (std::size_t c = 0; c < ops.low[set].size(); ++c) {
        views[set].rank[c] = ops.low[set][c].rank;
        views[set].u[c] = ops.low[set][c].u.data();
        views[set].w[c] = ops.low[set][c].w.data();
      }
    for (std::int32_t l = 0; l <= tree_.depth; ++l) {
      const int set = ops.level_set[static_cast<std::size_t>(l)];
      g.level_low.push_back(set >= 0 && !ops.low[static_cast<std::size_t>(set)].empty()
                                ? &views[static_cast<std::size_t>(set)]
                                : nullptr);
    }
    gpu_ = make_fmm_gpu(g, opt_.gpu_single,
                        opt_.devices.empty() ? std::vector<int>{opt_.device} : opt_.devices);
  }
  double rank_sum = 0, classes = 0;
  for (const auto &set : ops.low)
    for (const auto &c : set)
      if (c.rank >= 0) {
        rank_sum += c.rank;
        ++classes;
      }
  stats_.m2l_rank = classes > 0 ? rank_sum / classes : 0;
  stats_.operator_bytes = 0;
  for (const auto &set : ops.sets)
    stats_.operator_bytes += 8.0 * static_cast<double>(set.size());
  stats_.seconds_operators = since(t1) + seconds_unit;
}

// Mixed precision where the weights, the expansions they make and the float terms w K stay well
// inside float's range (an expansion is at most the sum of the weights of its box, a sum at most
// n wmax kernel_max_), and the largest terms are normal floats; wmax: the largest |weight|.
bool BbFmm::mixed_for(double wmax) const {
  const double n = static_cast<double>(std::max<std::int64_t>(tree_.n, 1));
  const double kmax = std::max(kernel_max_, 1.0);
  return stats_.mixed_precision && wmax * n * kmax <= 1e30 &&
         (wmax == 0 || (wmax >= 1e-30 && wmax * kernel_max_ >= 1e-30));
}

template <class U> double BbFmm::largest_weight(const U *w, std::int64_t count) const {
  const int threads = opt_.threads > 0 ? opt_.threads : omp_get_max_threads();
  double wmax = 0;
#pragma omp parallel for num_threads(threads) schedule(static)                                     \
    reduction(max                                                                                  \
              : wmax) if (count > 100000)
  for (std::int64_t k = 0; k < count; ++k)
    wmax = std::max(wmax, std::abs(static_cast<double>(w[k])));
  return wmax;
}

void BbFmm::apply(const double *w, std::int64_t nrhs, double *out) {
  const auto t0 = Clock::now();
  if (gpu_) {
    if (stats_.mixed_precision)
      gpu_->near_in_float(mixed_for(largest_weight(w, tree_.n * nrhs)));
    GpuTimes times;
    gpu_->apply(w, nrhs, out, times);
    record(times);
    stats_.seconds_apply = since(t0);
    return;
  }
  const FmmTree &tr = tree_;
  const std::int64_t n = tr.n, m = tr.m;
  const int threads = opt_.threads > 0 ? opt_.threads : omp_get_max_threads();
  // Weights in tree order, one column per right-hand side; the results in tree order (the near
  // pass writes every target's first).
  ws_.resize(static_cast<std::size_t>(n * nrhs));
  us_.resize(static_cast<std::size_t>(m * nrhs));
  double wmax = 0;
  for (std::int64_t r = 0; r < nrhs; ++r)
#pragma omp parallel for num_threads(threads) schedule(static) reduction(max : wmax) if (n > 100000)
    for (std::int64_t k = 0; k < n; ++k) {
      const double v = w[r * n + tr.src_order[static_cast<std::size_t>(k)]];
      ws_[static_cast<std::size_t>(r * n + k)] = v;
      wmax = std::max(wmax, std::abs(v));
    }
  const bool mixed = mixed_for(wmax);
  const auto &us = us_;
  apply_cpu(ws_.data(), nrhs, us_.data(), mixed);
  for (std::int64_t r = 0; r < nrhs; ++r)
#pragma omp parallel for num_threads(threads) schedule(static) if (m > 100000)
    for (std::int64_t k = 0; k < m; ++k) {
      const std::int64_t row = tr.self ? tr.src_order[static_cast<std::size_t>(k)]
                                       : tr.tgt_order[static_cast<std::size_t>(k)];
      out[r * m + row] = us[static_cast<std::size_t>(r * m + k)];
    }
  stats_.seconds_apply = since(t0);
}

void BbFmm::apply(const float *w, std::int64_t nrhs, float *out) {
  if (gpu_) {
    const auto t0 = Clock::now();
    if (stats_.mixed_precision)
      gpu_->near_in_float(mixed_for(largest_weight(w, tree_.n * nrhs)));
    GpuTimes times;
    gpu_->apply(w, nrhs, out, times);
    record(times);
    stats_.seconds_apply = since(t0);
    return;
  }
  std::vector<double> wd(w, w + tree_.n * nrhs), od(static_cast<std::size_t>(tree_.m * nrhs));
  apply(wd.data(), nrhs, od.data());
  std::copy(od.begin(), od.end(), out);
}

void BbFmm::record(const GpuTimes &times) {
  stats_.near_chunk = stats_.m2l_chunk = stats_.pass_chunk = 0; // no CPU pass ran
  stats_.seconds_upward = times.upward;
  stats_.seconds_m2l = times.m2l;
  stats_.seconds_downward = times.downward;
  stats_.seconds_near = times.near;
  stats_.seconds_transfer = times.transfer;
}

void BbFmm::apply_cpu(const double *ws, std::int64_t nrhs, double *us, bool mixed) {
  const FmmTree &tr = tree_;
  const Operators &ops = *ops_;
  const int p = ops.p, P = ops.P;
  const std::int64_t n = tr.n;
  const int threads = opt_.threads > 0 ? opt_.threads : omp_get_max_threads();
  const std::size_t nb = tr.boxes.size();
  const auto box_at = [&](std::int32_t b) -> const FmmBox & {
    return tr.boxes[static_cast<std::size_t>(b)];
  };
  const auto exp_size = static_cast<std::size_t>(P * nrhs);
  mult_.resize(nb * exp_size);
  loc_.resize(nb * exp_size);
  {
    double *mz = mult_.data(), *lz = loc_.data();
    const auto len = static_cast<std::int64_t>(nb * exp_size);
#pragma omp parallel for num_threads(threads) schedule(static) if (len > 100000)
    for (std::int64_t k = 0; k < len; ++k) {
      mz[k] = 0;
      lz[k] = 0;
    }
  }
  const auto &mult = mult_;
  const auto &loc = loc_;
  auto M = [&](std::int32_t b) { return mult_.data() + static_cast<std::size_t>(b) * exp_size; };
  auto L = [&](std::int32_t b) { return loc_.data() + static_cast<std::size_t>(b) * exp_size; };
  const std::vector<char> &has_local = has_local_;

  // Each level's loop of each pass: its task size from the model (LearnedChunk: the previous
  // apply's time of the same loop) or opt_ (forced), and its time recorded for the next apply.
  // The results do not depend on the sizes: every task writes its own boxes' expansions.
  const auto level_loop = [&](tasksize::LearnedChunk &learned, std::int64_t forced,
                              std::int64_t items, auto &&body) {
    const std::int64_t chunk = learned.choose(threads, forced);
    const auto t0 = Clock::now();
    body(chunk);
    learned.record(items, threads, since(t0), chunk);
    return chunk;
  };
  const auto deepest = static_cast<std::size_t>(tr.depth);
  stats_.m2l_chunk = stats_.pass_chunk = 0;

  // Upward pass: P2M at leaves, M2M level by level.
  const auto t_up = Clock::now();
  for (std::int32_t l = tr.depth; l >= 0; --l) {
    const std::int32_t b0 = tr.level_begin[static_cast<std::size_t>(l)],
                       b1 = tr.level_begin[static_cast<std::size_t>(l) + 1];
    const std::int64_t used = level_loop(
        level_chunks_.up[static_cast<std::size_t>(l)], opt_.pass_chunk, b1 - b0,
        [&](std::int64_t chunk) {
#pragma omp parallel num_threads(threads)
          {
            std::vector<double> sx(static_cast<std::size_t>(3 * p)),
                s1(static_cast<std::size_t>(P)), s2(static_cast<std::size_t>(P)),
                sxy(static_cast<std::size_t>(p * p));
#pragma omp for schedule(dynamic, chunk)
            for (std::int32_t b = b0; b < b1; ++b) {
              const FmmBox &B = box_at(b);
              if (B.sources() == 0)
                continue;
              double *mb = M(b);
              if (B.leaf()) {
                double c[3];
                tr.centre(B, c);
                const double inv = 1 / tr.half_side(B.level);
                for (std::int64_t j = B.sb; j < B.se; ++j) {
                  for (int a = 0; a < 3; ++a)
                    ops.cheb.eval((tr.src[static_cast<std::size_t>(a * n + j)] - c[a]) * inv,
                                  sx.data() + a * p);
                  for (int a = 0; a < p; ++a)
                    for (int bb = 0; bb < p; ++bb)
                      sxy[static_cast<std::size_t>(a * p + bb)] =
                          sx[static_cast<std::size_t>(a)] * sx[static_cast<std::size_t>(p + bb)];
                  for (std::int64_t r = 0; r < nrhs; ++r) {
                    const double wj = ws[r * n + j];
                    double *mr = mb + r * P;
                    for (int ab = 0; ab < p * p; ++ab) {
                      const double f = wj * sxy[static_cast<std::size_t>(ab)];
                      double *row = mr + ab * p;
#pragma omp simd
                      for (int cz = 0; cz < p; ++cz)
                        row[cz] += f * sx[static_cast<std::size_t>(2 * p + cz)];
                    }
                  }
                }
              } else {
                for (std::int32_t c = B.first_child; c < B.first_child + B.children; ++c) {
                  const FmmBox &C = box_at(c);
                  if (C.sources() == 0)
                    continue;
                  const int o = C.octant;
                  for (std::int64_t r = 0; r < nrhs; ++r)
                    tensor3(p, ops.cheb.m2m[(o >> 2) & 1].data(), ops.cheb.m2m[(o >> 1) & 1].data(),
                            ops.cheb.m2m[o & 1].data(), false, M(c) + r * P, mb + r * P, s1.data(),
                            s2.data());
                }
              }
            }
          }
        });
    if (static_cast<std::size_t>(l) == deepest)
      stats_.pass_chunk = used;
  }
  stats_.seconds_upward = since(t_up);

  // M2L level by level, blocked: per chunk of target boxes and per class, the permuted multipoles
  // as the columns of one matrix, multiplied by the class operator, scattered back permuted.
  const auto t_m2l = Clock::now();
  for (std::int32_t l = 2; l <= tr.depth; ++l) {
    const int set = ops.level_set[static_cast<std::size_t>(l)];
    if (set < 0)
      continue;
    const double sc = ops.level_scale[static_cast<std::size_t>(l)];
    std::vector<double> built;
    if (ops.sets[static_cast<std::size_t>(set)].empty())
      built = ops.build(opt_.kernel, 2 * tr.half_side(l), threads);
    const auto &mats = built.empty() ? ops.sets[static_cast<std::size_t>(set)] : built;
    // The low-rank classes of a kept set (a set rebuilt here runs in full).
    const std::vector<LowRank> *low = built.empty() &&
                                              static_cast<std::size_t>(set) < ops.low.size() &&
                                              !ops.low[static_cast<std::size_t>(set)].empty()
                                          ? &ops.low[static_cast<std::size_t>(set)]
                                          : nullptr;
    // At loose tolerances (mixed_from) the low-rank classes run in float with their
    // symmetries folded in (Operators::fold): rounding ~1e-7 of the terms, far below the
    // tolerance, the results added to the double local expansions.
    const Operators::Folded *folded = mixed && low &&
                                              static_cast<std::size_t>(set) < ops.folded.size() &&
                                              !ops.folded[static_cast<std::size_t>(set)].at.empty()
                                          ? &ops.folded[static_cast<std::size_t>(set)]
                                          : nullptr;
    std::vector<std::int32_t> targets;
    for (std::int32_t b = tr.level_begin[static_cast<std::size_t>(l)];
         b < tr.level_begin[static_cast<std::size_t>(l) + 1]; ++b)
      if (tr.v.size(b) > 0)
        targets.push_back(b);
    // Blocks of 16 target boxes (64 where the pairs are split further by symmetry): one product
    // per block and class (and symmetry), the same whatever the task size (a product's rounding
    // may depend on its width); the model chooses blocks per task.
    const std::int64_t chunk = folded ? 64 : 16;
    const auto chunks = static_cast<std::int64_t>((targets.size() + chunk - 1) / chunk);
    const std::int64_t used = level_loop(
        level_chunks_.m2l[static_cast<std::size_t>(l)], opt_.m2l_chunk, chunks,
        [&](std::int64_t blocks) {
#pragma omp parallel num_threads(threads)
          {
            std::vector<double> X, Y, Z;
            std::vector<float> Xf, Yf, Zf;
            struct Col {
              std::int32_t a, b;
              std::uint8_t t;
              std::int64_t r;
            };
            std::vector<Col> sorted;
            std::array<std::vector<Col>, 16> by_class;
#pragma omp for schedule(dynamic, blocks)
            for (std::int64_t ch = 0; ch < chunks; ++ch) {
              const std::size_t k0 = static_cast<std::size_t>(ch * chunk);
              const std::size_t k1 = std::min(targets.size(), k0 + chunk);
              // The block's V pairs by class, in box and list order (one pass over the lists).
              for (auto &cl : by_class)
                cl.clear();
              for (std::size_t k = k0; k < k1; ++k) {
                const std::int32_t a = targets[k];
                for (auto e = tr.v.offsets[static_cast<std::size_t>(a)];
                     e < tr.v.offsets[static_cast<std::size_t>(a) + 1]; ++e)
                  for (std::int64_t r = 0; r < nrhs; ++r)
                    by_class[tr.v_class[static_cast<std::size_t>(e)]].push_back(
                        Col{a, tr.v.boxes[static_cast<std::size_t>(e)],
                            tr.v_transform[static_cast<std::size_t>(e)], r});
              }
              for (int c = 0; c < 16; ++c) {
                const std::vector<Col> &cols = by_class[static_cast<std::size_t>(c)];
                if (cols.empty())
                  continue;
                const LowRank *lr = low ? &(*low)[static_cast<std::size_t>(c)] : nullptr;
                const bool lowrank_c = lr && lr->rank >= 0;
                if (lowrank_c && folded) {
                  // By symmetry (a counting sort, keeping the block's order within each), then
                  // per symmetry U_ct (W_ct M) in float on the unpermuted multipoles.
                  std::array<std::int32_t, 49> start{};
                  for (const Col &cl : cols)
                    ++start[static_cast<std::size_t>(cl.t) + 1];
                  for (std::size_t t = 0; t < 48; ++t)
                    start[t + 1] += start[t];
                  sorted.resize(cols.size());
                  {
                    std::array<std::int32_t, 49> next = start;
                    for (const Col &cl : cols)
                      sorted[static_cast<std::size_t>(next[cl.t]++)] = cl;
                  }
                  const int r = lr->rank;
                  for (std::size_t t = 0; t < 48; ++t) {
                    if (start[t + 1] == start[t])
                      continue;
                    const float *wt =
                        folded->data.data() + folded->at[static_cast<std::size_t>(48 * c) + t];
                    Eigen::Map<const Eigen::MatrixXf> W(wt, r, P),
                        U(wt + static_cast<std::ptrdiff_t>(r) * P, P, r);
                    for (auto c0 = static_cast<std::size_t>(start[t]);
                         c0 < static_cast<std::size_t>(start[t + 1]); c0 += max_cols) {
                      const auto nc = static_cast<std::int64_t>(
                          std::min(static_cast<std::size_t>(start[t + 1]), c0 + max_cols) - c0);
                      Xf.resize(static_cast<std::size_t>(P * nc));
                      Yf.resize(static_cast<std::size_t>(P * nc));
                      Zf.resize(static_cast<std::size_t>(r * nc));
                      for (std::int64_t j = 0; j < nc; ++j) {
                        const Col &cl = sorted[c0 + static_cast<std::size_t>(j)];
                        const double *src = M(cl.b) + cl.r * P;
                        float *dst = Xf.data() + j * P;
                        for (int q = 0; q < P; ++q)
                          dst[q] = static_cast<float>(src[q]);
                      }
                      Eigen::Map<const Eigen::MatrixXf> Xm(Xf.data(), P, nc);
                      Eigen::Map<Eigen::MatrixXf> Zm(Zf.data(), r, nc), Ym(Yf.data(), P, nc);
                      Zm.noalias() = W * Xm;
                      Ym.noalias() = U * Zm;
                      for (std::int64_t j = 0; j < nc; ++j) {
                        const Col &cl = sorted[c0 + static_cast<std::size_t>(j)];
                        const float *src = Yf.data() + j * P;
                        double *dst = L(cl.a) + cl.r * P;
                        for (int q = 0; q < P; ++q)
                          dst[q] += sc * static_cast<double>(src[q]);
                      }
                    }
                  }
                  continue;
                }
                // At most max_cols columns per product, so the scratch stays small for many
                // right-hand sides.
                for (std::size_t c0 = 0; c0 < cols.size(); c0 += max_cols) {
                  const std::size_t c1 = std::min(cols.size(), c0 + max_cols);
                  const auto nc = static_cast<std::int64_t>(c1 - c0);
                  X.resize(static_cast<std::size_t>(P * nc));
                  Y.resize(static_cast<std::size_t>(P * nc));
                  for (std::int64_t j = 0; j < nc; ++j) {
                    const Col &cl = cols[c0 + static_cast<std::size_t>(j)];
                    const auto &pi = ops.pinv[cl.t];
                    const double *src = M(cl.b) + cl.r * P;
                    double *dst = X.data() + j * P;
                    for (int q = 0; q < P; ++q)
                      dst[q] = src[pi[static_cast<std::size_t>(q)]];
                  }
                  Eigen::Map<const Eigen::MatrixXd> Xm(X.data(), P, nc);
                  Eigen::Map<Eigen::MatrixXd> Ym(Y.data(), P, nc);
                  if (lowrank_c) { // U (W X): 4 P r flops per column for 2 P²
                    Eigen::Map<const Eigen::MatrixXd> U(lr->u.data(), P, lr->rank),
                        W(lr->w.data(), lr->rank, P);
                    Z.resize(static_cast<std::size_t>(lr->rank * nc));
                    Eigen::Map<Eigen::MatrixXd> Zm(Z.data(), lr->rank, nc);
                    Zm.noalias() = W * Xm;
                    Ym.noalias() = U * Zm;
                  } else {
                    Eigen::Map<const Eigen::MatrixXd> K(
                        mats.data() + static_cast<std::size_t>(c) * P * P, P, P);
                    Ym.noalias() = K * Xm;
                  }
                  for (std::int64_t j = 0; j < nc; ++j) {
                    const Col &cl = cols[c0 + static_cast<std::size_t>(j)];
                    const auto &pi = ops.perm[cl.t];
                    const double *src = Y.data() + j * P;
                    double *dst = L(cl.a) + cl.r * P;
                    for (int q = 0; q < P; ++q)
                      dst[q] += sc * src[pi[static_cast<std::size_t>(q)]];
                  }
                }
              }
            }
          }
        });
    if (static_cast<std::size_t>(l) == deepest)
      stats_.m2l_chunk = used;
  }
  stats_.seconds_m2l = since(t_m2l);

  // X list (P2L), then the downward pass (L2L).
  const auto t_down = Clock::now();
  const NearContext ctx{tr, ops.cheb, ws, n, nrhs, mixed};
  if (stats_.x_pairs > 0)
    level_loop(level_chunks_.x, opt_.pass_chunk, static_cast<std::int64_t>(nb),
               [&](std::int64_t chunk) { x_list(opt_.kernel, ctx, loc_.data(), threads, chunk); });
  for (std::int32_t l = 1; l <= tr.depth; ++l) {
    const std::int32_t b0 = tr.level_begin[static_cast<std::size_t>(l)],
                       b1 = tr.level_begin[static_cast<std::size_t>(l) + 1];
    level_loop(level_chunks_.down[static_cast<std::size_t>(l)], opt_.pass_chunk, b1 - b0,
               [&](std::int64_t chunk) {
#pragma omp parallel num_threads(threads)
                 {
                   std::vector<double> s1(static_cast<std::size_t>(P)),
                       s2(static_cast<std::size_t>(P));
#pragma omp for schedule(dynamic, chunk)
                   for (std::int32_t b = b0; b < b1; ++b) {
                     const FmmBox &B = box_at(b);
                     if (!has_local[static_cast<std::size_t>(B.parent)] || B.targets() == 0)
                       continue;
                     const int o = B.octant;
                     for (std::int64_t r = 0; r < nrhs; ++r)
                       tensor3(p, ops.cheb.m2m[(o >> 2) & 1].data(),
                               ops.cheb.m2m[(o >> 1) & 1].data(), ops.cheb.m2m[o & 1].data(), true,
                               L(B.parent) + r * P, L(b) + r * P, s1.data(), s2.data());
                   }
                 }
               });
  }
  stats_.seconds_downward = since(t_down);

  // Target leaves: L2P, W list (M2P), U list (P2P).
  const auto t_near = Clock::now();
  // Leaves per task: fixed, or the task-size model from the previous apply's per-leaf cost (the
  // leaves are independent, so C does not depend on the chunk); the results do not depend on it.
  const std::int64_t chunk = near_chunk_.choose(threads, opt_.near_chunk);
  const std::int64_t leaves =
      leaf_pass(opt_.kernel, ctx, mult.data(), loc.data(), has_local, us, threads, chunk);
  stats_.seconds_near = since(t_near);
  stats_.near_chunk = chunk;
  near_chunk_.record(leaves, threads, stats_.seconds_near, chunk);
}

} // namespace ksum::fmm
