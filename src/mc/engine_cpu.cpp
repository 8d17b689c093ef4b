// The CPU backend of the Monte Carlo energy engine: total U (every pair once), the
// all-ordered-pairs recompute of seed 004 Paper I (Program 2's calculate_U), and the O(N·m) energy
// differences that replace it per move, all from the formulas of mc/pair.hpp in precision T,
// accumulated in double.
#include "mc/engine_cpu.hpp"

#include "mc/proposal.hpp"

#include <omp.h>

#include <algorithm>

namespace ksum::mc::detail {

namespace {

// Below this many pair evaluations a ΔU runs on one thread: a parallel region costs microseconds,
// more than a few thousand pairs.
constexpr std::int64_t parallel_pairs = 20000;
// Particles j per block of the ΔU loop: the moved particles sweep a block while it is in L1.
constexpr std::int64_t block = 2048;

template <class T> struct Soa { const T *x, *y, *z, *q, *r; };

// Σ_{j ∈ [j0, j1), mask_j = 0} u(new, x_j) − u(old, x_j) and the new position's infinite terms.
template <class T>
inline void sweep(const PairParams<T> &p, const Soa<T> &a, const T *mask, std::int64_t j0,
                  std::int64_t j1, T xn, T yn, T zn, T xo, T yo, T zo, T qi, T ri, double &e,
                  std::int64_t &ov) {
  double es = 0;
  std::int64_t os = 0;
#pragma omp simd reduction(+ : es, os)
  for (std::int64_t j = j0; j < j1; ++j) {
    int on = 0, oo = 0;
    const T qq = qi * a.q[j], s = ri + a.r[j];
    const T un = pair_energy(p, distance2(p, xn - a.x[j], yn - a.y[j], zn - a.z[j]), qq, s, on);
    const T uo = pair_energy(p, distance2(p, xo - a.x[j], yo - a.y[j], zo - a.z[j]), qq, s, oo);
    const bool moved = mask[j] != T(0);
    es += moved ? 0.0 : static_cast<double>(un) - static_cast<double>(uo);
    os += moved ? 0 : on;
  }
  e += es;
  ov += os;
}

// Σ_{j ∈ [j0, j1)} u(x_i, x_j) (the caller keeps i out of the range).
template <class T>
inline void row(const PairParams<T> &p, const Soa<T> &a, std::int64_t j0, std::int64_t j1, T xi,
                T yi, T zi, T qi, T ri, double &e, std::int64_t &ov) {
  double es = 0;
  std::int64_t os = 0;
#pragma omp simd reduction(+ : es, os)
  for (std::int64_t j = j0; j < j1; ++j) {
    int o = 0;
    const T u = pair_energy(p, distance2(p, xi - a.x[j], yi - a.y[j], zi - a.z[j]), qi * a.q[j],
                            ri + a.r[j], o);
    es += static_cast<double>(u);
    os += o;
  }
  e += es;
  ov += os;
}

template <class T> T bond_at(const PairParams<T> &p, T dx, T dy, T dz, std::int64_t &ov) {
  int o = 0;
  const T u = bond_energy(p, distance2(p, dx, dy, dz), o);
  ov += o;
  return u;
}

} // namespace

template <class T>
CpuEngine<T>::CpuEngine(const PairParams<T> &params, const std::array<double, 3> &box, int threads)
    : p_(params), box_(box), threads_(threads) {}

template <class T> int CpuEngine<T>::thread_count() const {
  return threads_ > 0 ? threads_ : omp_get_max_threads();
}

template <class T> void CpuEngine<T>::upload(const System &s) {
  n_ = s.size();
  const auto cast = [](const std::vector<double> &v, std::vector<T> &out) {
    out.assign(v.begin(), v.end());
  };
  cast(s.x, x_);
  cast(s.y, y_);
  cast(s.z, z_);
  cast(s.charge, q_);
  cast(s.radius, r_);
  bonds_ = s.bonds;
  bond_start_.assign(n_ + 1, 0);
  for (const auto &b : bonds_) {
    ++bond_start_[b[0] + 1];
    ++bond_start_[b[1] + 1];
  }
  for (std::int64_t i = 0; i < n_; ++i)
    bond_start_[i + 1] += bond_start_[i];
  bond_partner_.resize(bond_start_[n_]);
  std::vector<std::int64_t> fill(bond_start_.begin(), bond_start_.end() - 1);
  for (const auto &b : bonds_) {
    bond_partner_[fill[b[0]]++] = b[1];
    bond_partner_[fill[b[1]]++] = b[0];
  }
  slot_.assign(n_, -1);
  moved_mask_.assign(n_, T(0));
}

template <class T> Energy CpuEngine<T>::total() const {
  const PairParams<T> p = p_;
  const Soa<T> a{x_.data(), y_.data(), z_.data(), q_.data(), r_.data()};
  const std::int64_t n = n_;
  // Per-row sums added in row order afterwards: the same bits whatever the threads (an OpenMP
  // reduction combines the threads' partial sums in the order they finish).
  std::vector<double> er(static_cast<std::size_t>(n), 0.0);
  std::vector<std::int64_t> orow(static_cast<std::size_t>(n), 0);
  // Triangle rows shrink with i: dynamic scheduling keeps the threads even.
#pragma omp parallel for if (n * n / 2 >= parallel_pairs) num_threads(thread_count())            \
    schedule(dynamic, 16)
  for (std::int64_t i = 0; i < n; ++i)
    row(p, a, i + 1, n, a.x[i], a.y[i], a.z[i], a.q[i], a.r[i], er[i], orow[i]);
  double e = 0;
  std::int64_t ov = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    e += er[i];
    ov += orow[i];
  }
  for (const auto &b : bonds_)
    e += bond_at(p, x_[b[0]] - x_[b[1]], y_[b[0]] - y_[b[1]], z_[b[0]] - z_[b[1]], ov);
  for (std::int64_t i = 0; i < n; ++i)
    ov += outside_cell(p, x_[i], y_[i], z_[i]) ? 1 : 0;
  return Energy{e, ov};
}

template <class T> Energy CpuEngine<T>::total_full_recompute(const System &s) const {
  const PairParams<T> p = p_;
  const std::vector<T> x(s.x.begin(), s.x.end()), y(s.y.begin(), s.y.end()),
      z(s.z.begin(), s.z.end()), q(s.charge.begin(), s.charge.end()),
      r(s.radius.begin(), s.radius.end());
  const Soa<T> a{x.data(), y.data(), z.data(), q.data(), r.data()};
  const std::int64_t n = s.size();
  std::vector<double> er(static_cast<std::size_t>(n), 0.0);
  std::vector<std::int64_t> orow(static_cast<std::size_t>(n), 0);
#pragma omp parallel for if (n * n >= parallel_pairs) num_threads(thread_count()) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    row(p, a, 0, i, a.x[i], a.y[i], a.z[i], a.q[i], a.r[i], er[i], orow[i]);
    row(p, a, i + 1, n, a.x[i], a.y[i], a.z[i], a.q[i], a.r[i], er[i], orow[i]);
  }
  double e = 0;
  std::int64_t ov = 0;
  for (std::int64_t i = 0; i < n; ++i) { // in row order: reproducible bits (as total())
    e += er[i];
    ov += orow[i];
  }
  // Each pair was seen from both ends (its two terms are the same numbers: (−d)² = d²).
  e *= 0.5;
  ov /= 2;
  for (const auto &b : s.bonds)
    e += bond_at(p, x[b[0]] - x[b[1]], y[b[0]] - y[b[1]], z[b[0]] - z[b[1]], ov);
  for (std::int64_t i = 0; i < n; ++i)
    ov += outside_cell(p, x[i], y[i], z[i]) ? 1 : 0;
  return Energy{e, ov};
}

template <class T>
Energy CpuEngine<T>::delta_moved(const std::int64_t *idx, const T *nx, const T *ny, const T *nz,
                                 std::int64_t m, bool rigid) const {
  const PairParams<T> p = p_;
  const Soa<T> a{x_.data(), y_.data(), z_.data(), q_.data(), r_.data()};
  for (std::int64_t k = 0; k < m; ++k) {
    moved_mask_[idx[k]] = T(1);
    slot_[idx[k]] = k;
  }
  const T *mask = moved_mask_.data();
  const std::int64_t n = n_, blocks = (n + block - 1) / block;
  double e = 0;
  std::int64_t ov = 0;
  // The moved particles against every particle that stays: Σ_i Σ_{j not moved} [u(new_i, x_j) −
  // u(old_i, x_j)]; the old configuration has no infinite terms, so only the new ones count.
  const auto sweep_block = [&](std::int64_t b, double &eb, std::int64_t &ob) {
    const std::int64_t j0 = b * block, j1 = std::min(n, j0 + block);
    for (std::int64_t k = 0; k < m; ++k) {
      const std::int64_t i = idx[k];
      sweep(p, a, mask, j0, j1, nx[k], ny[k], nz[k], a.x[i], a.y[i], a.z[i], a.q[i], a.r[i], eb,
            ob);
    }
  };
  if (n * m >= parallel_pairs && thread_count() > 1) {
    // Per-block sums added in block order: ΔU, hence every Metropolis decision, has the same bits
    // on any number of threads (blocks are fixed-size), unlike an OpenMP reduction.
    block_e_.assign(static_cast<std::size_t>(blocks), 0.0);
    block_ov_.assign(static_cast<std::size_t>(blocks), 0);
#pragma omp parallel for num_threads(thread_count()) schedule(static)
    for (std::int64_t b = 0; b < blocks; ++b)
      sweep_block(b, block_e_[b], block_ov_[b]);
    for (std::int64_t b = 0; b < blocks; ++b) {
      e += block_e_[b];
      ov += block_ov_[b];
    }
  } else {
    for (std::int64_t b = 0; b < blocks; ++b) {
      double eb = 0;
      std::int64_t ob = 0;
      sweep_block(b, eb, ob);
      e += eb;
      ov += ob;
    }
  }
  // The mutual terms of the moved particles (unchanged, hence skipped, for a rigid move).
  if (!rigid)
    for (std::int64_t k = 0; k < m; ++k)
      for (std::int64_t l = k + 1; l < m; ++l) {
        const std::int64_t i = idx[k], j = idx[l];
        const T qq = a.q[i] * a.q[j], s = a.r[i] + a.r[j];
        int on = 0, oo = 0;
        const T un =
            pair_energy(p, distance2(p, nx[k] - nx[l], ny[k] - ny[l], nz[k] - nz[l]), qq, s, on);
        const T uo = pair_energy(p, distance2(p, a.x[i] - a.x[j], a.y[i] - a.y[j], a.z[i] - a.z[j]),
                                 qq, s, oo);
        e += static_cast<double>(un) - static_cast<double>(uo);
        ov += on;
      }
  // Bonds: to a particle that stays, or (once, from its lower slot) to another moved one.
  if (p.bond != 0)
    for (std::int64_t k = 0; k < m; ++k) {
      const std::int64_t i = idx[k];
      for (std::int64_t b = bond_start_[i]; b < bond_start_[i + 1]; ++b) {
        const std::int64_t j = bond_partner_[b], l = slot_[j];
        std::int64_t ignored = 0;
        const T uo = bond_at(p, a.x[i] - a.x[j], a.y[i] - a.y[j], a.z[i] - a.z[j], ignored);
        if (l < 0)
          e += static_cast<double>(bond_at(p, nx[k] - a.x[j], ny[k] - a.y[j], nz[k] - a.z[j], ov)) -
               static_cast<double>(uo);
        else if (!rigid && l > k)
          e += static_cast<double>(bond_at(p, nx[k] - nx[l], ny[k] - ny[l], nz[k] - nz[l], ov)) -
               static_cast<double>(uo);
      }
    }
  for (std::int64_t k = 0; k < m; ++k)
    ov += outside_cell(p, nx[k], ny[k], nz[k]) ? 1 : 0;
  for (std::int64_t k = 0; k < m; ++k) {
    moved_mask_[idx[k]] = T(0);
    slot_[idx[k]] = -1;
  }
  return Energy{e, ov};
}

template <class T> Energy CpuEngine<T>::delta(const Move &move) const {
  const auto m = static_cast<std::int64_t>(move.particles.size());
  mx_.resize(m);
  my_.resize(m);
  mz_.resize(m);
  for (std::int64_t k = 0; k < m; ++k) {
    mx_[k] = static_cast<T>(move.xyz[3 * k]);
    my_[k] = static_cast<T>(move.xyz[3 * k + 1]);
    mz_[k] = static_cast<T>(move.xyz[3 * k + 2]);
  }
  return delta_moved(move.particles.data(), mx_.data(), my_.data(), mz_.data(), m, move.rigid);
}

template <class T> void CpuEngine<T>::apply(const Move &move) {
  for (std::size_t k = 0; k < move.particles.size(); ++k) {
    const std::int64_t i = move.particles[k];
    x_[i] = static_cast<T>(move.xyz[3 * k]);
    y_[i] = static_cast<T>(move.xyz[3 * k + 1]);
    z_[i] = static_cast<T>(move.xyz[3 * k + 2]);
  }
}

template <class T>
TranslateResult CpuEngine<T>::translate(const TranslateParams &params,
                                        const std::vector<std::int64_t> &movable, System &host) {
  TranslateResult res;
  res.attempted = params.count;
  const auto n_movable = static_cast<std::int64_t>(movable.size());
  const bool periodic = p_.periodic != 0;
  const bool per_particle = !params.step.empty();
  for (std::int64_t c = 0; c < params.count; ++c) {
    const std::uint64_t t = params.first + static_cast<std::uint64_t>(c);
    const Trial trial = translation_trial(params.seed, t, n_movable);
    const std::int64_t i = movable[trial.slot];
    const double step = per_particle ? params.step[i] : params.max_step;
    double x = host.x[i] + step * trial.ux, y = host.y[i] + step * trial.uy,
           z = host.z[i] + step * trial.uz;
    if (periodic) {
      x = wrap(x, box_[0]);
      y = wrap(y, box_[1]);
      z = wrap(z, box_[2]);
    }
    const T xt = static_cast<T>(x), yt = static_cast<T>(y), zt = static_cast<T>(z);
    const Energy d = delta_moved(&i, &xt, &yt, &zt, 1, false);
    if (metropolis(d.value, d.overlaps, trial.u_accept)) {
      host.x[i] = x;
      host.y[i] = y;
      host.z[i] = z;
      x_[i] = xt;
      y_[i] = yt;
      z_[i] = zt;
      ++res.accepted;
      res.delta_u += d.value;
    } else if (d.overlaps > 0) {
      ++res.rejected_overlap;
    }
  }
  return res;
}

template class CpuEngine<float>;
template class CpuEngine<double>;

} // namespace ksum::mc::detail
