#include "rbf/global/lsets.hpp"

#include "kernels/kernel_defs.hpp"
#include "spatial/kdtree.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <new>
#include <numeric>
#include <omp.h>
#include <utility>

namespace ksum::rbf {

namespace {

int thread_count(int threads) {
  return threads > 0 ? threads : omp_get_max_threads();
}

// c − a b, rounded once where the machine has fused multiply-adds (the factorisation's every
// update; explicit, so that the result does not depend on how a compiler contracts).
inline double fnma(double a, double b, double c) {
#if defined(__FMA__) || defined(__aarch64__)
  return std::fma(-a, b, c);
#else
  return c - a * b;
#endif
}

// One set's system and its factors: a dense LU with partial pivoting for systems of some tens of
// rows (no blocking for cache, no allocation per set: per-thread buffers grow to the largest set
// and are then reused), the solves it gives, and the reciprocal condition number.
class SetSystem {
public:
  // Room for a size × size system; returns its storage, column j at [j ld(), j ld() + size),
  // the columns padded with zeros to ld() entries.
  double *reset(std::int64_t size) {
    n_ = size;
    ld_ = (size + 3) / 4 * 4; // whole 32-byte vectors per column
    if (cap_ < ld_ * n_) {
      cap_ = ld_ * n_;
      a_.reset(new (std::align_val_t(64)) double[static_cast<std::size_t>(cap_)]);
      l_.reset(new (std::align_val_t(64)) double[static_cast<std::size_t>(4 * ld_)]);
      piv_.resize(n_);
      perm_.resize(n_);
      x_.resize(3 * ld_);
      y_.resize(3 * ld_);
      sign_.resize(ld_);
      old_sign_.resize(ld_);
    }
    for (std::int64_t j = 0; j < n_; ++j)
      std::fill(a_.get() + j * ld_ + n_, a_.get() + (j + 1) * ld_, 0.0);
    return a_.get();
  }
  std::int64_t ld() const { return ld_; }

  // PA = LU in place: L (unit diagonal) below the diagonal, U on and above it; rows k and
  // piv_[k] ≥ k were exchanged at step k (the first of the largest magnitudes in column k).
  // False when a pivot is 0 (A singular) or NaN. Also takes ‖A‖₁ for solve_e0_and_rcond().
  bool factor() {
    const std::int64_t n = n_, ld = ld_;
    double *a = static_cast<double *>(__builtin_assume_aligned(a_.get(), 32));
    double *l = static_cast<double *>(__builtin_assume_aligned(l_.get(), 32));
    // ‖A‖₁, the largest column sum; A is symmetric, so the row sums are taken instead (which
    // vectorises).
    double *rs = x_.data();
    std::fill(rs, rs + ld, 0.0);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < ld; ++i)
        rs[i] += std::abs(a[j * ld + i]);
    norm1_ = 0;
    for (std::int64_t i = 0; i < n; ++i)
      norm1_ = std::max(norm1_, rs[i]);
    // Panels of four columns: within a panel, step by step (pivot, row exchange, the rank-1
    // update of the panel's later columns); then the columns to the right of the panel receive
    // the panel's four updates in one pass (delayed updates, in the same order and with the same
    // operations as four rank-1 updates, so the factors are those of the unblocked algorithm).
    std::iota(perm_.begin(), perm_.begin() + n, std::int64_t{0});
    constexpr std::int64_t bw = 4;
    for (std::int64_t kb = 0; kb < n; kb += bw) {
      const std::int64_t ke = std::min(kb + bw, n);
      for (std::int64_t k = kb; k < ke; ++k) {
        double *ak = a + k * ld;
        // The pivot: the largest magnitude (in four interleaved maxima, a vector of them), then
        // the first row that has it.
        double lane[4] = {0, 0, 0, 0};
        std::int64_t i = k;
        for (; i + 4 <= n; i += 4)
          for (int t = 0; t < 4; ++t)
            lane[t] = std::max(lane[t], std::abs(ak[i + t]));
        for (; i < n; ++i)
          lane[0] = std::max(lane[0], std::abs(ak[i]));
        const double big = std::max(std::max(lane[0], lane[1]), std::max(lane[2], lane[3]));
        std::int64_t p = k;
        while (p < n && std::abs(ak[p]) != big)
          ++p;
        piv_[k] = p;
        if (!(big > 0) || p == n) // singular, or NaN
          return false;
        std::swap(perm_[k], perm_[p]);
        if (p != k)
          for (std::int64_t j = 0; j < n; ++j)
            std::swap(a[j * ld + k], a[j * ld + p]);
        const double pivot = ak[k];
        for (std::int64_t i = k + 1; i < n; ++i)
          ak[i] /= pivot;
        for (std::int64_t j = k + 1; j < ke; ++j) {
          double *aj = a + j * ld;
          const double u = aj[k];
          for (std::int64_t i = k + 1; i < n; ++i)
            aj[i] = fnma(ak[i], u, aj[i]);
        }
      }
      if (ke == n)
        break;
      // The panel's columns of L, zero on and above the diagonal, rows kb … ld − 1 (kb is a
      // multiple of 4, so whole aligned vectors).
      const std::int64_t w = ke - kb, rows = ld - kb;
      for (std::int64_t r = 0; r < w; ++r)
        for (std::int64_t i = 0; i < rows; ++i)
          l[r * ld + i] = i > r ? a[(kb + r) * ld + kb + i] : 0.0;
      for (std::int64_t j = ke; j < n; ++j) {
        double *aj = static_cast<double *>(__builtin_assume_aligned(a + j * ld + kb, 32));
        // U's entries of the panel's rows in column j (forward substitution with the panel's
        // unit lower triangle), the multipliers of the four updates.
        double u[bw] = {0, 0, 0, 0};
        for (std::int64_t r = 0; r < w; ++r) {
          double v = aj[r];
          for (std::int64_t t = 0; t < r; ++t)
            v = fnma(l[t * ld + r], u[t], v);
          u[r] = v;
        }
        if (w == bw) {
          const double *l0 = l, *l1 = l + ld, *l2 = l + 2 * ld, *l3 = l + 3 * ld;
          for (std::int64_t i = 0; i < rows; ++i)
            aj[i] =
                fnma(l3[i], u[3], fnma(l2[i], u[2], fnma(l1[i], u[1], fnma(l0[i], u[0], aj[i]))));
        } else {
          for (std::int64_t r = 0; r < w; ++r)
            for (std::int64_t i = 0; i < rows; ++i)
              aj[i] = fnma(l[r * ld + i], u[r], aj[i]);
        }
      }
    }
    return true;
  }

  // X ← A⁻¹ X for R vectors (X + r ld(), r < R): P, then L Y = P X forward and U X = Y
  // backward, by columns of the factors.
  template <int R> void solve(double *X) {
    const std::int64_t n = n_, ld = ld_;
    const double *a = a_.get();
    double *Y = y_.data();
    for (int r = 0; r < R; ++r)
      for (std::int64_t i = 0; i < n; ++i)
        Y[r * ld + i] = X[r * ld + perm_[i]];
    for (std::int64_t j = 0; j < n; ++j) {
      const double *aj = a + j * ld;
      double y[R];
      bool zero = true;
      for (int r = 0; r < R; ++r) {
        y[r] = Y[r * ld + j];
        zero = zero && y[r] == 0;
      }
      if (!zero) // (the unit vectors of rcond() stay zero for a while)
        for (std::int64_t i = j + 1; i < n; ++i)
          for (int r = 0; r < R; ++r)
            Y[r * ld + i] = fnma(aj[i], y[r], Y[r * ld + i]);
    }
    for (std::int64_t j = n - 1; j >= 0; --j) {
      const double *aj = a + j * ld;
      double y[R];
      for (int r = 0; r < R; ++r)
        y[r] = Y[r * ld + j] /= aj[j];
      for (std::int64_t i = 0; i < j; ++i)
        for (int r = 0; r < R; ++r)
          Y[r * ld + i] = fnma(aj[i], y[r], Y[r * ld + i]);
    }
    for (int r = 0; r < R; ++r)
      std::copy(Y + r * ld, Y + r * ld + n, X + r * ld);
  }

  // The first `count` entries of A⁻¹ e_0 (into col) and the reciprocal condition number in the
  // 1-norm, 1 / (‖A‖₁ ‖A⁻¹‖₁), with ‖A⁻¹‖₁ estimated from a few solves (Hager's method with
  // Higham's refinements): a lower bound of ‖A⁻¹‖₁, so an upper bound of the reciprocal condition
  // number, which in practice is within a small factor of it (Higham, "Accuracy and Stability of
  // Numerical Algorithms", §15.3). Call after factor() returned true.
  double solve_e0_and_rcond(double *col, std::int64_t count) {
    const std::int64_t n = n_, ld = ld_;
    double *X = x_.data(), *sign = sign_.data(), *old_sign = old_sign_.data();
    // Three independent solves at once: Hager's start 1/n, Higham's alternating vector
    // (−1)^i (1 + i / (n − 1)), which catches what cancellation may hide from Hager's steps, and
    // e_0.
    for (std::int64_t i = 0; i < n; ++i) {
      X[i] = 1.0 / static_cast<double>(n);
      X[ld + i] =
          n > 1 ? (i % 2 ? -1.0 : 1.0) * (1.0 + static_cast<double>(i) / static_cast<double>(n - 1))
                : 1.0;
      X[2 * ld + i] = i == 0 ? 1.0 : 0.0;
    }
    solve<3>(X);
    std::copy(X + 2 * ld, X + 2 * ld + count, col);
    if (norm1_ == 0)
      return 0;
    if (n == 1)
      return 1;
    const double alternate = 2 * norm1(X + ld) / (3 * static_cast<double>(n));
    // Hager: ascend ‖A⁻¹ x‖₁ over ‖x‖₁ = 1 along subgradients (A⁻ᵀ sign(A⁻¹ x)), through
    // vertices e_j.
    double *x = X;
    double est = norm1(x);
    std::int64_t old_j = -1;
    for (int it = 0; it < 4; ++it) {
      for (std::int64_t i = 0; i < n; ++i)
        sign[i] = x[i] >= 0 ? 1.0 : -1.0;
      if (it > 0 && std::equal(sign, sign + n, old_sign))
        break; // the same vertex again
      std::copy(sign, sign + n, x);
      solve<1>(x); // A⁻ᵀ = A⁻¹: A is symmetric
      std::int64_t j = 0;
      for (std::int64_t i = 1; i < n; ++i)
        if (std::abs(x[i]) > std::abs(x[j]))
          j = i;
      if (j == old_j)
        break;
      std::fill(x, x + n, 0.0);
      x[j] = 1;
      solve<1>(x);
      const double e = norm1(x);
      if (!(e > est))
        break; // no ascent: a local maximum
      est = e;
      std::copy(sign, sign + n, old_sign);
      old_j = j;
    }
    est = std::max(est, alternate);
    if (std::isnan(est))
      return 0;
    return est == 0 ? 1.0 : (1.0 / est) / norm1_;
  }

private:
  double norm1(const double *x) const {
    double s = 0;
    for (std::int64_t i = 0; i < n_; ++i)
      s += std::abs(x[i]);
    return s;
  }
  struct AlignedDelete {
    void operator()(double *p) const { ::operator delete[](p, std::align_val_t(64)); }
  };

  std::int64_t n_ = 0, ld_ = 0, cap_ = 0;
  double norm1_ = 0;
  std::unique_ptr<double[], AlignedDelete> a_, l_;
  std::vector<double> x_, y_, sign_, old_sign_;
  std::vector<std::int64_t> piv_, perm_; // perm_[i]: the row of A that is row i of PA
};

// ζ of one set: solve [Φ_L Π_L; Π_Lᵀ 0] [ζ; a] = [e_0; 0]. False when the system is singular or
// ill-conditioned. pc: the members' coordinates, coordinate k of member i at pc[k stride + i];
// basis: the polynomial's terms about the origin with scale 1 (the set's own centre and scale
// are applied here, with the operations PolyBasis would use); sq: scratch of n values.
template <class K>
bool local_lagrange(const K &kf, double c2, const double *pc, std::int64_t stride, std::int64_t n,
                    std::int64_t d, const PolyBasis &basis, double *sq, SetSystem &sys,
                    double *zeta, double diag) {
  constexpr double p0 = kdef::p_offset<K>();
  const std::int64_t m = basis.terms(), size = n + m;
  double *B = sys.reset(size);
  const std::int64_t ld = sys.ld();
  // Φ_L by columns, the lower triangle computed and mirrored. Squared distances as
  // (e_0² + e_1²) + …, every square rounded: the squares go through memory (`sq`) in loops of
  // their own, so that no compiler fuses a multiply into the add. Then the kernel.
  double r2 = 0; // the largest squared distance from the set's own point
  for (std::int64_t j = 0; j < n; ++j) {
    double *bj = B + j * ld;
    for (std::int64_t k = 0; k < d; ++k) {
      const double *xk = pc + k * stride, xj = xk[j];
      double *dst = k == 0 ? bj : sq;
      for (std::int64_t i = j; i < n; ++i) {
        const double e = xk[i] - xj;
        dst[i] = e * e;
      }
      if (k > 0)
        for (std::int64_t i = j; i < n; ++i)
          bj[i] += sq[i];
    }
    if (d == 0)
      for (std::int64_t i = j; i < n; ++i)
        bj[i] = 0;
    if (j == 0)
      for (std::int64_t i = 0; i < n; ++i)
        r2 = std::max(r2, bj[i]);
    for (std::int64_t i = j; i < n; ++i)
      bj[i] = static_cast<double>(kf.value(p0 + c2 * bj[i]));
    for (std::int64_t i = j + 1; i < n; ++i)
      B[i * ld + j] = bj[i];
    bj[j] += diag;
  }
  if (m > 0) {
    // The polynomial in coordinates relative to the set's own point, scaled by the set's radius.
    const double radius = std::sqrt(r2), inv = 1.0 / (radius > 0 ? radius : 1.0);
    double z[PolyBasis::max_dim], v[PolyBasis::max_terms];
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t k = 0; k < d; ++k)
        z[k] = (pc[k * stride + i] - pc[k * stride]) * inv;
      basis.eval(z, 1, v);
      for (std::int64_t t = 0; t < m; ++t)
        B[(n + t) * ld + i] = B[i * ld + n + t] = v[t];
    }
    for (std::int64_t t = 0; t < m; ++t)
      std::fill(B + (n + t) * ld + n, B + (n + t) * ld + size, 0.0);
  }
  if (!sys.factor() || !(sys.solve_e0_and_rcond(zeta, n) > 1e-15))
    return false;
  for (std::int64_t i = 0; i < n; ++i)
    if (!std::isfinite(zeta[i]))
      return false;
  return zeta[0] != 0.0;
}

// One thread's means of forming sets: the members' coordinates go to coords() (coordinate k of
// member i at coords()[k q + i], the set's own point first), then form() solves the local system
// into ζ, or leaves ζ = 0 and returns false when it is singular.
class SetFormer {
public:
  SetFormer(const LSetConfig &cfg, std::int64_t d)
      : cfg_(cfg), d_(d), qmax_(std::max<std::int64_t>(cfg.q, 1)),
        pc_(static_cast<std::size_t>(qmax_ * d)), sq_(static_cast<std::size_t>(qmax_)),
        basis_(cfg.poly_degree, d, std::vector<double>(d, 0.0), 1.0) {
    const double cs = kdef::coord_scale(cfg.kernel, cfg.eps);
    c2_ = cs * cs;
  }
  double *coords() { return pc_.data(); }
  template <class K> bool form(const K &kf, std::int64_t size, double *zeta) {
    if (local_lagrange(kf, c2_, pc_.data(), qmax_, size, d_, basis_, sq_.data(), sys_, zeta,
                       cfg_.diag))
      return true;
    std::fill(zeta, zeta + size, 0.0);
    return false;
  }

private:
  const LSetConfig &cfg_;
  std::int64_t d_, qmax_;
  std::vector<double> pc_, sq_;
  PolyBasis basis_;
  SetSystem sys_;
  double c2_ = 0;
};

// The transpose of the sets (point → the sets containing it, in increasing order), for a gather
// without atomics in apply(). Entries are written through buckets of a few hundred points, whose
// part of the transpose fits in cache, rather than one by one at random places: per chunk of sets,
// the entries are first grouped by bucket (in the order of the sets), then each bucket's are put in
// place. Parts of the sets run in parallel, each writing after the parts before it, so the result
// is that of a serial pass.
void transpose(LSets &s, std::int64_t nsets, int nt) {
  const std::int64_t n = s.n, total = s.ptr[nsets];
  // (At most 16 parts: each holds a count per point.)
  const int parts =
      static_cast<int>(std::clamp<std::int64_t>(nt, 1, std::clamp<std::int64_t>(nsets, 1, 16)));
  constexpr int bucket_bits = 9;
  const std::int64_t buckets = (n >> bucket_bits) + 1;
  const std::int64_t chunk_entries = std::int64_t{1} << 22; // the chunk's scratch: 64 MiB
  struct Entry {
    std::uint32_t j, l;
    double zeta;
  };
  // (Sets shrink along the order; a distributed build leaves some empty.)
  std::int64_t largest = 0;
  for (std::int64_t l = 0; l < nsets && largest == 0; ++l)
    largest = s.ptr[l + 1] - s.ptr[l];
  const auto scratch = std::make_unique_for_overwrite<Entry[]>(
      static_cast<std::size_t>(std::min(total, std::max(chunk_entries, largest))));
  std::vector<std::vector<std::uint32_t>> count(parts); // per part and point
  std::vector<std::int64_t> cnt(parts * buckets), start(buckets + 1), fill(n);
  s.tptr.assign(n + 1, 0);
  s.tset.resize(total);
  s.tzeta.resize(total);
#pragma omp parallel num_threads(nt)
  {
    // The number of sets of each point, and tptr.
#pragma omp for schedule(static, 1)
    for (int p = 0; p < parts; ++p) {
      count[p].assign(n, 0);
      for (std::int64_t k = s.ptr[nsets * p / parts]; k < s.ptr[nsets * (p + 1) / parts]; ++k)
        ++count[p][s.idx[k]];
    }
#pragma omp for schedule(static)
    for (std::int64_t j = 0; j < n; ++j)
      for (int p = 0; p < parts; ++p)
        s.tptr[j + 1] += count[p][j];
#pragma omp single
    {
      for (std::int64_t j = 0; j < n; ++j)
        s.tptr[j + 1] += s.tptr[j];
      std::copy(s.tptr.begin(), s.tptr.end() - 1, fill.begin());
    }
    // Chunks of sets [l0, l1) of at most chunk_entries entries (whole sets).
    for (std::int64_t l0 = 0; l0 < nsets;) {
      std::int64_t l1 = l0;
      while (l1 < nsets && s.ptr[l1 + 1] - s.ptr[l0] <= chunk_entries)
        ++l1;
      l1 = std::max(l1, l0 + 1); // a set larger than a chunk: the scratch holds it
#pragma omp for schedule(static, 1)
      for (int p = 0; p < parts; ++p) {
        std::int64_t *c = &cnt[p * buckets];
        std::fill(c, c + buckets, 0);
        for (std::int64_t k = s.ptr[l0 + (l1 - l0) * p / parts];
             k < s.ptr[l0 + (l1 - l0) * (p + 1) / parts]; ++k)
          ++c[s.idx[k] >> bucket_bits];
      }
#pragma omp single
      {
        std::int64_t e = 0;
        for (std::int64_t b = 0; b < buckets; ++b) {
          start[b] = e;
          for (int p = 0; p < parts; ++p)
            e += std::exchange(cnt[p * buckets + b], e);
        }
        start[buckets] = e;
      }
#pragma omp for schedule(static, 1)
      for (int p = 0; p < parts; ++p) {
        std::int64_t *at = &cnt[p * buckets];
        for (std::int64_t l = l0 + (l1 - l0) * p / parts; l < l0 + (l1 - l0) * (p + 1) / parts; ++l)
          for (std::int64_t k = s.ptr[l]; k < s.ptr[l + 1]; ++k) {
            const std::uint32_t j = s.idx[k];
            scratch[at[j >> bucket_bits]++] = {j, static_cast<std::uint32_t>(l), s.zeta[k]};
          }
      }
#pragma omp for schedule(dynamic, 16)
      for (std::int64_t b = 0; b < buckets; ++b)
        for (std::int64_t e = start[b]; e < start[b + 1]; ++e) {
          const Entry &en = scratch[e];
          const std::int64_t t = fill[en.j]++;
          s.tset[t] = en.l;
          s.tzeta[t] = en.zeta;
        }
      l0 = l1;
    }
  }
}

} // namespace

std::uint64_t lset_key(std::uint64_t seed, std::int64_t j) {
  auto mix = [](std::uint64_t z) { // splitmix64's step
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  return mix(mix(seed) + static_cast<std::uint64_t>(j));
}

LSets build_lsets(const Table<double> &x, const LSetConfig &cfg) {
  const std::int64_t n = x.rows(), d = x.cols();
  if (n >= (std::int64_t{1} << 32))
    throw Error(ErrorCode::unsupported,
                fmt::format("L-sets index points with 32 bits: {} points is too many", n));
  const std::int64_t m_terms = static_cast<std::int64_t>(PolyBasis::count(cfg.poly_degree, d));
  LSets s;
  s.n = n;
  // Seed 000 step 3: a random permutation σ (the points sorted by their keys); rank[i] is i's
  // position in it.
  std::vector<std::int64_t> order(n), rank(n);
  {
    std::vector<std::pair<std::uint64_t, std::int64_t>> keyed(n);
    for (std::int64_t j = 0; j < n; ++j)
      keyed[j] = {lset_key(cfg.seed, j), j};
    std::sort(keyed.begin(), keyed.end());
    for (std::int64_t m = 0; m < n; ++m)
      order[m] = keyed[m].second;
  }
  for (std::int64_t m = 0; m < n; ++m)
    rank[order[m]] = m;
  // Sets while more points remain than there are polynomial terms.
  const std::int64_t nsets = std::max<std::int64_t>(0, n - m_terms);
  const int nt = thread_count(cfg.threads);
  const spatial::KdTree tree(x, rank, 32, nt);
  s.ptr.resize(nsets + 1);
  s.ptr[0] = 0;
  for (std::int64_t m = 0; m < nsets; ++m)
    s.ptr[m + 1] = s.ptr[m] + std::min<std::int64_t>(cfg.q, n - m);
  s.formed = nsets;
  s.idx.resize(s.ptr[nsets]); // (written below, every entry)
  s.zeta.resize(s.ptr[nsets]);
  std::int64_t skipped = 0;
  const std::int64_t qmax = std::max<std::int64_t>(cfg.q, 1);
  // The sets are independent: they are made in the tree's leaf order, so that consecutive sets
  // (of one thread) lie close together and find the tree and the points in cache.
  const std::vector<std::int64_t> &leaves = tree.leaf_order();
  kdef::visit<double>(cfg.kernel, [&](auto kf) {
#pragma omp parallel num_threads(nt) reduction(+ : skipped)
    {
      std::vector<std::pair<double, std::int64_t>> nb;
      std::vector<double> nbx;
      SetFormer former(cfg, d);
      double *pc = former.coords();
      double xl[PolyBasis::max_dim];
#pragma omp for schedule(dynamic, 256)
      for (std::int64_t t = 0; t < n; ++t) {
        const std::int64_t l = leaves[t], m = tree.leaf_rank(t);
        if (m >= nsets)
          continue;
        const std::int64_t size = s.ptr[m + 1] - s.ptr[m];
        for (std::int64_t k = 0; k < d; ++k)
          xl[k] = tree.leaf_coord(t, k);
        // Seed 000 step 4: the q nearest among σ(m), …, σ(N), with their coordinates.
        tree.nearest(xl, static_cast<int>(size), m, nb, &nbx);
        std::uint32_t *mem = &s.idx[s.ptr[m]];
        mem[0] = static_cast<std::uint32_t>(l);
        for (std::int64_t k = 0; k < d; ++k)
          pc[k * qmax] = xl[k];
        std::int64_t c = 1;
        for (std::size_t e = 0; e < nb.size() && c < size; ++e)
          if (nb[e].second != l) {
            mem[c] = static_cast<std::uint32_t>(nb[e].second);
            for (std::int64_t k = 0; k < d; ++k)
              pc[k * qmax + c] = nbx[e * d + k];
            ++c;
          }
        // Seed 000 step 5: the local Lagrange function of x_l on L_l.
        skipped += !former.form(kf, size, &s.zeta[s.ptr[m]]);
      }
    }
  });
  s.skipped = skipped;
  transpose(s, nsets, nt);
  return s;
}

std::int64_t form_lsets(const LSetConfig &cfg, std::int64_t d, const std::vector<std::int64_t> &ptr,
                        const double *coords, double *zeta) {
  const std::int64_t nsets = static_cast<std::int64_t>(ptr.size()) - 1;
  const std::int64_t qmax = std::max<std::int64_t>(cfg.q, 1);
  for (std::int64_t s = 0; s < nsets; ++s)
    if (ptr[s + 1] - ptr[s] > qmax)
      throw Error(ErrorCode::internal, fmt::format("form_lsets: set {} has {} members, q = {}", s,
                                                   ptr[s + 1] - ptr[s], cfg.q));
  std::int64_t skipped = 0;
  kdef::visit<double>(cfg.kernel, [&](auto kf) {
#pragma omp parallel num_threads(thread_count(cfg.threads)) reduction(+ : skipped)
    {
      SetFormer former(cfg, d);
      double *pc = former.coords();
#pragma omp for schedule(dynamic, 256)
      for (std::int64_t s = 0; s < nsets; ++s) {
        const std::int64_t b = ptr[s], size = ptr[s + 1] - b;
        for (std::int64_t i = 0; i < size; ++i)
          for (std::int64_t k = 0; k < d; ++k)
            pc[k * qmax + i] = coords[(b + i) * d + k];
        skipped += !former.form(kf, size, zeta + b);
      }
    }
  });
  return skipped;
}

void LSets::apply(const double *r, double *tau, std::vector<double> &mu, int threads) const {
  const std::int64_t nsets = count();
  mu.resize(nsets);
  const int nt = thread_count(threads);
#pragma omp parallel num_threads(nt)
  {
    // Seed 000 step 6: μ_l = Σ_{i∈L_l} ζ_li r_i / ζ_ll …
#pragma omp for schedule(static)
    for (std::int64_t l = 0; l < nsets; ++l) {
      const std::int64_t b = ptr[l], e = ptr[l + 1];
      if (b == e || zeta[b] == 0.0) {
        mu[l] = 0.0;
        continue;
      }
      double acc = 0;
      for (std::int64_t k = b; k < e; ++k)
        acc += zeta[k] * r[idx[k]];
      mu[l] = acc / zeta[b];
    }
    // … and τ_j = Σ_l μ_l ζ_lj over the sets containing j.
#pragma omp for schedule(static)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t e = tptr[j]; e < tptr[j + 1]; ++e)
        acc += mu[tset[e]] * tzeta[e];
      tau[j] = acc;
    }
  }
}

} // namespace ksum::rbf
