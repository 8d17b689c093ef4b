// CUDA kernels of translate() (seed 004 Paper I, going past its one-move-per-transfer Program 2):
// a batch of single-particle trials is evaluated against the current state in one launch (each
// particle loaded once per group of kTrialGroup trials), with the pair corrections between the
// trials of the batch in the same launch, and the trials are then accepted in order by one warp
// on the device — the same Markov chain as one move at a time. Reductions run in a fixed order.
#include "mc/mc_device.cuh"
#include "mc/proposal.hpp"

#include <climits>

namespace ksum::mc::detail {
namespace {

using namespace dev;

// Float trial sums are moved into their double accumulators every kFlush particles per thread.
constexpr int kFlush = 8;

__global__ void k_draws(std::uint64_t seed, std::uint64_t t0, std::int64_t n,
                        const std::int32_t *movable, std::int64_t n_movable, const double *step,
                        double max_step, GpuDraw *out) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += stride) {
    const Trial tr = translation_trial(seed, t0 + static_cast<std::uint64_t>(k), n_movable);
    const int p = movable ? movable[tr.slot] : static_cast<int>(tr.slot);
    GpuDraw d;
    d.step = step ? step[p] : max_step;
    d.ux = tr.ux;
    d.uy = tr.uy;
    d.uz = tr.uz;
    d.u = tr.u_accept;
    d.lnu = -log(tr.u_accept);
    d.p = p;
    d.pad = 0;
    out[k] = d;
  }
}

// Trial b of the batch: its particle, old position and new one (wrapped into the box).
template <class T> struct TrialPos {
  T nx, ny, nz, ox, oy, oz;
  int p;
};
template <class T>
__device__ TrialPos<T> make_trial(const GpuBatchArgs<T> &a, const GpuChainState &st, int b) {
  const GpuDraw d = a.draws[st.t_next + static_cast<std::uint64_t>(b) - st.window_t0];
  TrialPos<T> tr;
  tr.p = d.p;
  tr.ox = a.sys.x[d.p];
  tr.oy = a.sys.y[d.p];
  tr.oz = a.sys.z[d.p];
  // x + step·u in double with one rounding (fma), as the host compiler contracts it on the CPU.
  double nx = fma(d.step, d.ux, static_cast<double>(tr.ox));
  double ny = fma(d.step, d.uy, static_cast<double>(tr.oy));
  double nz = fma(d.step, d.uz, static_cast<double>(tr.oz));
  if (a.pp.periodic) {
    nx = wrap(nx, static_cast<double>(a.pp.box[0]));
    ny = wrap(ny, static_cast<double>(a.pp.box[1]));
    nz = wrap(nz, static_cast<double>(a.pp.box[2]));
  }
  tr.nx = static_cast<T>(nx);
  tr.ny = static_cast<T>(ny);
  tr.nz = static_cast<T>(nz);
  return tr;
}

template <class T>
__device__ __forceinline__ int batch_count(const GpuBatchArgs<T> &a, const GpuChainState &st) {
  const std::uint64_t left = st.t_end - st.t_next;
  return left < static_cast<std::uint64_t>(a.batch) ? static_cast<int>(left) : a.batch;
}

// Accumulates the trials' u(new, x_j) − u(old, x_j) over NJ particles j (j = p left out).
template <class T, bool kFast, int NJ>
__device__ __forceinline__ void
trial_terms(const PairParams<T> &pp, const Moved<T> *tr, const int *tp, const int (&j)[NJ],
            const T (&xj)[NJ], const T (&yj)[NJ], const T (&zj)[NJ], const T (&qj)[NJ],
            const T (&rj)[NJ], T (&tacc)[kTrialGroup], int (&ov)[kTrialGroup]) {
#pragma unroll
  for (int t = 0; t < kTrialGroup; ++t) {
    const Moved<T> c = tr[t];
    const int p = tp[t];
#pragma unroll
    for (int u = 0; u < NJ; ++u) {
      int o = 0, dummy = 0;
      const T en =
          pair_u<T, kFast>(pp, c.nx - xj[u], c.ny - yj[u], c.nz - zj[u], c.q, qj[u], c.r, rj[u], o);
      const T eo = pair_u<T, kFast>(pp, c.ox - xj[u], c.oy - yj[u], c.oz - zj[u], c.q, qj[u], c.r,
                                    rj[u], dummy);
      const bool keep = j[u] != p;
      tacc[t] += keep ? en - eo : T(0);
      ov[t] += keep ? o : 0;
    }
  }
}

// The uniform loops count overlaps of two trials per int (16 bits each: the registers of 16
// counts cost the kernel a resident block): a thread meets fewer than 2^16 particles of its slice,
// as the host ensures (kUniformMaxSlice).
__device__ __forceinline__ constexpr int ov_unit(int t) { return t % 2 ? 1 << 16 : 1; }

// The same with one contact distance for all pairs (GpuBatchArgs::uniform): the charges are
// factored out, tacc[t] = Σ_j q_j (1/r_new − 1/r_old) (a term inside the contact distance counts 0,
// and as an overlap at the new position), the trial's l_B q multiplies the sum afterwards.
// kLean: for particles j that are none of the trials' own (j ≠ p for every trial of the group,
// which the caller guarantees for the whole iteration), without the self test; and the old
// position, which has no overlaps in a valid state, without its contact test: its distance is only
// clamped to the contact distance (a touching pair rounded below it then counts 1/σ, not 0). The
// new position keeps the test and its convention (0 and one overlap, as the corrections assume).
// ~20 instructions per ΔU pair against ~30.
template <class T, int NJ, bool kLean>
__device__ __forceinline__ void
trial_terms_uniform(T contact2, const Moved<T> *tr, const int *tp, const int (&j)[NJ],
                    const T (&xj)[NJ], const T (&yj)[NJ], const T (&zj)[NJ], const T (&qj)[NJ],
                    T (&tacc)[kTrialGroup], int (&ovp)[kTrialGroup / 2]) {
#pragma unroll
  for (int t = 0; t < kTrialGroup; ++t) {
    const Moved<T> c = tr[t];
    const int p = tp[t];
#pragma unroll
    for (int u = 0; u < NJ; ++u) {
      const T ax = c.nx - xj[u], ay = c.ny - yj[u], az = c.nz - zj[u];
      const T bx = c.ox - xj[u], by = c.oy - yj[u], bz = c.oz - zj[u];
      const T rn2 = ax * ax + ay * ay + az * az;
      const T ro2 = bx * bx + by * by + bz * bz;
      const bool bad_n = rn2 < contact2;
      const T in = bad_n ? T(0) : rsqrt_t(rn2);
      const T io = kLean ? rsqrt_t(fmax(ro2, contact2)) : ro2 < contact2 ? T(0) : rsqrt_t(ro2);
      const bool keep = kLean || j[u] != p;
      tacc[t] += keep ? qj[u] * (in - io) : T(0);
      ovp[t / 2] += (keep && bad_n) ? ov_unit(t) : 0;
    }
  }
}

// ΔU of trials b0 … b0 + 15 against the particles of slice s: a thread per particle j (two at a
// time), the trials in shared memory (broadcast reads), so that each particle loaded from global
// memory serves 16 trials × 2 energies. Partial sums per (slice, trial) go to part_e/part_ov.
// The blocks of slice 0 also write what the accept kernel needs of their trials: the new
// position, the bond-energy change and the overlaps that are not pair terms.
template <class T, bool kFast, bool kUniform>
__device__ void delta_block(const GpuBatchArgs<T> &a, const GpuChainState &st, int count,
                            int block) {
  static_assert(kFast || !kUniform, "the uniform loop is a case of the fast one");
  __shared__ Moved<T> tr[kTrialGroup];
  __shared__ int tp[kTrialGroup];
  // The uniform loop: the group's own particles in this block's slice, ascending, then INT_MAX;
  // iterations whose particles include one take the loop with the self test.
  __shared__ int selfp[kTrialGroup + 1];
  __shared__ double red_e[kThreads / 32][kTrialGroup];
  __shared__ int red_o[kThreads / 32][kTrialGroup];
  const GpuParticles<T> &s = a.sys;
  const PairParams<T> &pp = a.pp;
  const int g = block % a.groups, slice = block / a.groups;
  const int b0 = g * kTrialGroup, tid = threadIdx.x;
  if (b0 >= count)
    return;
  const bool hs = pp.short_range == 1;
  if (tid < kTrialGroup) {
    const int b = b0 + tid;
    if (b < count) {
      const TrialPos<T> t = make_trial(a, st, b);
      const T q = s.q[t.p], r = s.r[t.p];
      tr[tid] = Moved<T>{
          t.nx, t.ny, t.nz, t.ox, t.oy, t.oz, kFast ? pp.lb * q : q, kFast && !hs ? T(0) : r};
      tp[tid] = t.p;
      if (slice == 0) {
        double be = 0;
        int bo = 0;
        if (pp.bond != 0 && s.bond_begin)
          for (int k = s.bond_begin[t.p]; k < s.bond_begin[t.p + 1]; ++k) {
            const int j = s.bond_nbr[k];
            int dummy = 0;
            const T un = bond_u(pp, t.nx - s.x[j], t.ny - s.y[j], t.nz - s.z[j], bo);
            const T uo = bond_u(pp, t.ox - s.x[j], t.oy - s.y[j], t.oz - s.z[j], dummy);
            be += static_cast<double>(un) - static_cast<double>(uo);
          }
        GpuTrialOut<T> out;
        out.nx = t.nx;
        out.ny = t.ny;
        out.nz = t.nz;
        out.p = t.p;
        out.bond_e = be;
        out.extra_ov = bo + (outside_cell(pp, t.nx, t.ny, t.nz) ? 1 : 0);
        out.pad = 0;
        a.trials[b] = out;
      }
    } else {
      // Past the batch's end: a trial that does not move (its sums are not written).
      tr[tid] = Moved<T>{0, 0, 0, 0, 0, 0, 0, 0};
      tp[tid] = -1;
    }
  }
  __syncthreads();

  const int n = s.n;
  const int chunk = (n + a.slices - 1) / a.slices;
  const int jb = min(n, slice * chunk), je = min(n, jb + chunk);
  if constexpr (kUniform) {
    if (tid == 0) {
      int k = 0;
      for (int t = 0; t < kTrialGroup; ++t) {
        const int p = tp[t];
        if (p < jb || p >= je)
          continue;
        int i = k++;
        for (; i > 0 && selfp[i - 1] > p; --i)
          selfp[i] = selfp[i - 1];
        selfp[i] = p;
      }
      selfp[k] = INT_MAX;
    }
    __syncthreads();
  }
  // Float sums of a few particles per thread are added to double accumulators in shared memory
  // (registers would cost the occupancy); double sums stay in registers.
  constexpr bool kSingle = std::is_same_v<T, float>;
  __shared__ double sacc[kSingle ? kTrialGroup : 1][kThreads];
  T tacc[kTrialGroup];
  int ov[kTrialGroup];
  int ovp[kTrialGroup / 2]; // the uniform loops' packed counts
#pragma unroll
  for (int t = 0; t < kTrialGroup / 2; ++t)
    ovp[t] = 0;
#pragma unroll
  for (int t = 0; t < kTrialGroup; ++t) {
    tacc[t] = 0;
    ov[t] = 0;
    if constexpr (kSingle)
      sacc[t][tid] = 0;
  }
  auto load = [&](int j, int &jj, T &x, T &y, T &z, T &q, T &r) {
    jj = j;
    x = s.x[j];
    y = s.y[j];
    z = s.z[j];
    q = s.q[j];
    r = kUniform || (kFast && !hs) ? T(0) : s.r[j];
  };
  auto flush = [&]() {
#pragma unroll
    for (int t = 0; t < kTrialGroup; ++t) {
      sacc[t][tid] += static_cast<double>(tacc[t]);
      tacc[t] = 0;
    }
  };
  // Two particles per thread and iteration in the fast loop (each trial read from shared memory
  // serves both); one in the general loop, whose pair_energy branches need the registers.
  constexpr int NJ = kFast ? 2 : 1;
  int it = 0;
  int j = jb + tid;
  int next_self = 0; // index into selfp of the first own particle at or past this iteration
  for (; j + (NJ - 1) * kThreads < je; j += NJ * kThreads) {
    // The trials are reloaded from shared memory (broadcast) in every iteration rather than
    // hoisted into registers: 16 trials would take ~150 registers and the occupancy with them.
    asm volatile("" ::: "memory");
    int jj[NJ];
    T xj[NJ], yj[NJ], zj[NJ], qj[NJ], rj[NJ];
#pragma unroll
    for (int u = 0; u < NJ; ++u)
      load(j + u * kThreads, jj[u], xj[u], yj[u], zj[u], qj[u], rj[u]);
    if constexpr (kUniform) {
      // This iteration's particles: [j − tid, j − tid + NJ·kThreads), the same for every thread.
      const int span_end = j - tid + NJ * kThreads;
      if (!a.lean || selfp[next_self] < span_end) {
        trial_terms_uniform<T, NJ, false>(a.contact2, tr, tp, jj, xj, yj, zj, qj, tacc, ovp);
        while (selfp[next_self] < span_end)
          ++next_self;
      } else {
        trial_terms_uniform<T, NJ, true>(a.contact2, tr, tp, jj, xj, yj, zj, qj, tacc, ovp);
      }
    } else {
      trial_terms<T, kFast, NJ>(pp, tr, tp, jj, xj, yj, zj, qj, rj, tacc, ov);
    }
    if constexpr (kSingle)
      if ((it += NJ) >= kFlush) {
        it = 0;
        flush();
      }
  }
  if (NJ > 1 && j < je) {
    int jj[1];
    T xj[1], yj[1], zj[1], qj[1], rj[1];
    load(j, jj[0], xj[0], yj[0], zj[0], qj[0], rj[0]);
    if constexpr (kUniform)
      trial_terms_uniform<T, 1, false>(a.contact2, tr, tp, jj, xj, yj, zj, qj, tacc, ovp);
    else
      trial_terms<T, kFast, 1>(pp, tr, tp, jj, xj, yj, zj, qj, rj, tacc, ov);
  }
  if constexpr (kSingle)
    flush();
  if constexpr (kUniform) {
#pragma unroll
    for (int t = 0; t < kTrialGroup; ++t)
      ov[t] = (ovp[t / 2] >> (16 * (t % 2))) & 0xffff;
  }

  const int lane = tid & 31, w = tid >> 5;
#pragma unroll
  for (int t = 0; t < kTrialGroup; ++t) {
    const double e = warp_sum(kSingle ? sacc[t][tid] : static_cast<double>(tacc[t]));
    const long long o = warp_sum(static_cast<long long>(ov[t]));
    if (lane == 0) {
      red_e[w][t] = e;
      red_o[w][t] = static_cast<int>(o);
    }
  }
  __syncthreads();
  if (tid < kTrialGroup && b0 + tid < count) {
    double e = 0;
    int o = 0;
    for (int k = 0; k < kThreads / 32; ++k) {
      e += red_e[k][tid];
      o += red_o[k][tid];
    }
    // The uniform loop summed q_j (1/r_new − 1/r_old): times the trial's l_B q.
    a.part_e[slice * a.ld + b0 + tid] = kUniform ? e * static_cast<double>(tr[tid].q) : e;
    a.part_ov[slice * a.ld + b0 + tid] = o;
  }
}

// The corrections between trials a < b of the batch, in a tile of 32 × 32 (tile rows ≤ tile
// columns): if trial a is accepted first, trial b's ΔU (computed against the batch's starting
// state) changes by C[a][b] = [u(new_b, new_a) − u(new_b, old_a)] − [u(old_b, new_a) −
// u(old_b, old_a)] (and the same for a bond between them); the overlap count by the new-b terms.
// Trials of the same particle get 0: the accept kernel stops the batch before using them.
template <class T>
__device__ void corr_block(const GpuBatchArgs<T> &a, const GpuChainState &st, int count, int tile) {
  __shared__ Moved<T> tt[64];
  __shared__ int tpp[64];
  const GpuParticles<T> &s = a.sys;
  const PairParams<T> &pp = a.pp;
  // tile → (ta, tb), ta ≤ tb, in the order tb = 0, 1, …
  int tb = static_cast<int>((sqrt(8.0 * tile + 1.0) - 1.0) * 0.5);
  while (tb * (tb + 1) / 2 > tile)
    --tb;
  while ((tb + 1) * (tb + 2) / 2 <= tile)
    ++tb;
  const int ta = tile - tb * (tb + 1) / 2;
  const int a0 = ta * 32, b0 = tb * 32, tid = threadIdx.x;
  if (b0 >= count)
    return;
  if (tid < 64) {
    const int b = (tid < 32 ? a0 : b0 - 32) + tid;
    if (b < count) {
      const TrialPos<T> t = make_trial(a, st, b);
      tt[tid] = Moved<T>{t.nx, t.ny, t.nz, t.ox, t.oy, t.oz, s.q[t.p], s.r[t.p]};
      tpp[tid] = t.p;
    } else {
      tpp[tid] = -1;
    }
  }
  __syncthreads();
  for (int k = tid; k < 32 * 32; k += blockDim.x) {
    const int ia = k >> 5, ib = k & 31;
    const int ea = a0 + ia, eb = b0 + ib;
    if (ea >= eb || eb >= count)
      continue;
    double e = 0;
    int o = 0;
    const int pa = tpp[ia], pb = tpp[32 + ib];
    if (pa != pb) {
      const Moved<T> A = tt[ia], B = tt[32 + ib];
      int o1 = 0, o2 = 0, dummy = 0;
      const T nn =
          pair_u<T, false>(pp, B.nx - A.nx, B.ny - A.ny, B.nz - A.nz, B.q, A.q, B.r, A.r, o1);
      const T no =
          pair_u<T, false>(pp, B.nx - A.ox, B.ny - A.oy, B.nz - A.oz, B.q, A.q, B.r, A.r, o2);
      const T on =
          pair_u<T, false>(pp, B.ox - A.nx, B.oy - A.ny, B.oz - A.nz, B.q, A.q, B.r, A.r, dummy);
      const T oo =
          pair_u<T, false>(pp, B.ox - A.ox, B.oy - A.oy, B.oz - A.oz, B.q, A.q, B.r, A.r, dummy);
      e = (static_cast<double>(nn) - static_cast<double>(no)) -
          (static_cast<double>(on) - static_cast<double>(oo));
      o = o1 - o2;
      if (pp.bond != 0 && s.bond_begin)
        for (int q = s.bond_begin[pb]; q < s.bond_begin[pb + 1]; ++q) {
          if (s.bond_nbr[q] != pa)
            continue;
          int b1 = 0, b2 = 0;
          const T bnn = bond_u(pp, B.nx - A.nx, B.ny - A.ny, B.nz - A.nz, b1);
          const T bno = bond_u(pp, B.nx - A.ox, B.ny - A.oy, B.nz - A.oz, b2);
          const T bon = bond_u(pp, B.ox - A.nx, B.oy - A.ny, B.oz - A.nz, dummy);
          const T boo = bond_u(pp, B.ox - A.ox, B.oy - A.oy, B.oz - A.oz, dummy);
          e += (static_cast<double>(bnn) - static_cast<double>(bno)) -
               (static_cast<double>(bon) - static_cast<double>(boo));
          o += b1 - b2;
        }
    }
    a.corr_e[ea * a.ld + eb] = e;
    a.corr_ov[ea * a.ld + eb] = o;
  }
}

// One launch per batch: blocks [0, slices·groups) evaluate ΔU, the rest the corrections.
template <class T, bool kFast, bool kUniform>
__device__ __forceinline__ void batch_body(const GpuBatchArgs<T> &a) {
  const GpuChainState st = *a.state;
  const int count = batch_count(a, st);
  const int delta_blocks = a.slices * a.groups;
  if (static_cast<int>(blockIdx.x) < delta_blocks)
    delta_block<T, kFast, kUniform>(a, st, count, blockIdx.x);
  else
    corr_block<T>(a, st, count, blockIdx.x - delta_blocks);
}
template <class T, bool kFast, bool kUniform>
__global__ void __launch_bounds__(kThreads) k_batch(GpuBatchArgs<T> a) {
  batch_body<T, kFast, kUniform>(a);
}
// The float uniform loop with at least 5 resident blocks per SM stated: ptxas then keeps it in
// ~96 registers without spilling (left to itself it chose 64 registers and spilled).
__global__ void __launch_bounds__(kThreads, 5) k_batch_uniform_f32(GpuBatchArgs<float> a) {
  batch_body<float, true, true>(a);
}

// Metropolis (proposal.hpp's metropolis(du, 0, u)): du < −log u decides without exp() unless the
// two are within 1e-9 (relative to 1 + |log u|), where exp() itself decides; the rounding of log
// and exp is far below that margin, so the decision is metropolis()'s.
__device__ __forceinline__ bool accept_move(double du, double u, double lnu) {
  if (du <= 0)
    return true;
  const double tol = 1e-9 * (1.0 + lnu);
  if (du < lnu - tol)
    return true;
  if (du > lnu + tol)
    return false;
  return metropolis(du, 0, u);
}

// The sequential part of a batch, one block of up to kMaxBatch threads (thread c owns trial c).
// Trials are decided in order, 32 at a time by warp 0 (lane l holds trial c0 + l), from the
// chunk's diagonal block C[c0 + s][c0 + l], which the whole block has put in shared memory. Between
// chunks each later trial c adds the accepted rows C[r][c] of the chunk just decided (the sum keeps
// the row order) and is marked when it moves a particle accepted there: reaching such a trial stops
// the batch (its proposal was drawn from the particle's old position); the next batch starts at it,
// so the chain does not depend on B. The loads of those rows and of the next diagonal block are
// issued together, so that a chunk costs one round of memory latency, then a few parallel passes of
// one warp over shared memory (the 32 dependent steps of a lane-by-lane scan, with the draws and
// the accepted positions read in the chunk, took ~10 µs per chunk on the H200). The accepted
// positions are written at the end; then the chain state moves on and the batch's record is
// written.
template <class T> __global__ void __launch_bounds__(kMaxBatch, 1) k_accept(GpuBatchArgs<T> a) {
  __shared__ double corr[kMaxBatch];
  __shared__ int cov[kMaxBatch];
  __shared__ int pid[kMaxBatch];
  __shared__ unsigned char stop[kMaxBatch];
  __shared__ unsigned char accd[kMaxBatch]; // accepted: its new position is written at the end
  __shared__ double us[kMaxBatch], lnus[kMaxBatch]; // the trials' uniform draws u and −log u
  __shared__ double dc[32][33];                     // dc[s][l] = C[c0 + s][c0 + l], s < l
  __shared__ int dov[32][33];
  __shared__ unsigned s_mask;
  __shared__ int s_end;
  const GpuChainState st = *a.state;
  const int count = batch_count(a, st);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nt = blockDim.x;
  if (count <= 0) {
    if (tid == 0)
      a.records[a.record] = GpuBatchRecord{0, 0, 0, 0.0};
    return;
  }
  for (int b = tid; b < count; b += nt) {
    const GpuTrialOut<T> &t = a.trials[b];
    double e = t.bond_e;
    int o = t.extra_ov;
    // Unrolled so that the loads of several slices are in flight at once (the sum keeps its order).
#pragma unroll 8
    for (int sl = 0; sl < a.slices; ++sl) {
      e += a.part_e[sl * a.ld + b];
      o += a.part_ov[sl * a.ld + b];
    }
    corr[b] = e;
    cov[b] = o;
    pid[b] = t.p;
    stop[b] = 0;
    accd[b] = 0;
    const GpuDraw &d = a.draws[st.t_next + static_cast<std::uint64_t>(b) - st.window_t0];
    us[b] = d.u;
    lnus[b] = d.lnu;
  }
  if (tid == 0)
    s_mask = 0;

  long long n_acc = 0, n_rej_ov = 0;
  double sum_du = 0;
  int end = count;
  for (int c0 = 0; c0 < count; c0 += 32) {
    __syncthreads();
    // The previous chunk's accepted rows into the trials from c0 on, and this chunk's diagonal
    // block into shared memory.
    const unsigned mask = s_mask;
    // This chunk's diagonal block: the loads issued first, so that they are in flight with the
    // row updates' (they wait for nothing), and stored to shared memory after them.
    constexpr int kDiagAhead = 4;
    double dv[kDiagAhead];
    int dw[kDiagAhead];
#pragma unroll
    for (int i = 0; i < kDiagAhead; ++i) {
      const int k = tid + i * nt, r = k >> 5, c = k & 31;
      const bool use = k < 32 * 32 && r < c && c0 + c < count;
      dv[i] = use ? a.corr_e[(c0 + r) * a.ld + c0 + c] : 0.0;
      dw[i] = use ? a.corr_ov[(c0 + r) * a.ld + c0 + c] : 0;
    }
    if (mask != 0) {
      const int p0 = c0 - 32;
      for (int c = c0 + tid; c < count; c += nt) {
        double e = 0;
        int o = 0;
        bool st_c = false;
        const int pc = pid[c];
        // The accepted rows kGather at a time: their loads are issued together, then summed in
        // row order (a load under a branch waited for the add before it: ~0.7 µs per row).
        constexpr int kGather = 8;
        for (unsigned m = mask; m != 0;) {
          int rr[kGather];
          double v[kGather];
          int w[kGather];
#pragma unroll
          for (int i = 0; i < kGather; ++i) {
            rr[i] = m != 0 ? __ffs(static_cast<int>(m)) - 1 : -1;
            m &= m - 1;
          }
#pragma unroll
          for (int i = 0; i < kGather; ++i) {
            const int ar = p0 + max(rr[i], 0); // row p0 + 0 stands in for a missing one
            v[i] = a.corr_e[ar * a.ld + c];
            w[i] = a.corr_ov[ar * a.ld + c];
          }
#pragma unroll
          for (int i = 0; i < kGather; ++i)
            if (rr[i] >= 0) {
              e += v[i];
              o += w[i];
              st_c = st_c || pid[p0 + rr[i]] == pc;
            }
        }
        corr[c] += e;
        cov[c] += o;
        if (st_c)
          stop[c] = 1;
      }
    }
#pragma unroll
    for (int i = 0; i < kDiagAhead; ++i) {
      const int k = tid + i * nt;
      if (k < 32 * 32) {
        dc[k >> 5][k & 31] = dv[i];
        dov[k >> 5][k & 31] = dw[i];
      }
    }
    for (int k = tid + kDiagAhead * nt; k < 32 * 32; k += nt) { // blocks of fewer than 256 threads
      const int r = k >> 5, c = k & 31;
      const bool use = r < c && c0 + c < count;
      dc[r][c] = use ? a.corr_e[(c0 + r) * a.ld + c0 + c] : 0.0;
      dov[r][c] = use ? a.corr_ov[(c0 + r) * a.ld + c0 + c] : 0;
    }
    __syncthreads();
    if (warp == 0) {
      const int b = c0 + lane;
      const bool valid = b < count;
      const int n_here = min(32, count - c0);
      const double du0 = valid ? corr[b] : 0.0;
      const int ov0 = valid ? cov[b] : 0;
      const bool stop0 = valid && stop[b] != 0;
      const int my_p = valid ? pid[b] : -1;
      const double u = valid ? us[b] : 0.5, lnu = valid ? lnus[b] : 0.0;
      // The in-order decisions as the fixed point of acc_l = decide(du_l + Σ_{s<l, acc_s} C[s][l]),
      // every lane at once: after iteration k lanes 0 … k hold their sequential decisions, so
      // ≤ 33 iterations reach it, and a fixed point is the sequential solution (the system is
      // triangular). Corrections rarely flip a decision: it usually takes two. Each lane sums its
      // corrections in ascending s, as the one-at-a-time order does, so du is bit-identical.
      unsigned acc = 0, rej = 0;
      int end_l = n_here;
      double du = du0;
      for (int it = 0; it <= 32; ++it) {
        du = du0;
        int ov = ov0;
        bool stp = stop0;
#pragma unroll 8
        for (int s = 0; s < 32; ++s) {
          const double cs = dc[s][lane]; // read unconditionally: the reads are issued together
          const int os = dov[s][lane];
          const bool in = s < lane && ((acc >> s) & 1u);
          if (in) {
            du += cs;
            ov += os;
            stp = stp || pid[c0 + s] == my_p;
          }
        }
        // 0 reject, 1 accept, 2 stop, 3 reject for an overlap
        const int code = !valid ? 0 : stp ? 2 : ov != 0 ? 3 : accept_move(du, u, lnu) ? 1 : 0;
        const unsigned stops = __ballot_sync(kFull, code == 2);
        const int e = stops ? __ffs(stops) - 1 : n_here;
        const unsigned below = e >= 32 ? kFull : (1u << e) - 1u;
        const unsigned nacc = __ballot_sync(kFull, code == 1) & below;
        rej = __ballot_sync(kFull, code == 3) & below;
        const bool same = nacc == acc && e == end_l;
        acc = nacc;
        end_l = e;
        if (same)
          break;
      }
      const bool accepted = (acc >> lane) & 1u;
      if (accepted)
        accd[b] = 1;
      n_acc += __popc(acc);
      n_rej_ov += __popc(rej);
      sum_du += warp_sum(accepted ? du : 0.0); // lane 0's sum is the one used
      if (lane == 0) {
        s_mask = acc;
        s_end = end_l < n_here ? c0 + end_l : -1;
      }
    }
    __syncthreads();
    if (s_end >= 0) {
      end = s_end;
      break;
    }
  }
  // The accepted positions (at most one trial per particle before the end: a second one stops it).
  for (int b = tid; b < end; b += nt)
    if (accd[b]) {
      const GpuTrialOut<T> &t = a.trials[b];
      a.sys.x[t.p] = t.nx;
      a.sys.y[t.p] = t.ny;
      a.sys.z[t.p] = t.nz;
    }
  if (tid == 0) {
    a.records[a.record] = GpuBatchRecord{end, n_acc, n_rej_ov, sum_du};
    a.state->t_next = st.t_next + static_cast<std::uint64_t>(end);
  }
}

} // namespace

const char *launch_draws(std::uint64_t seed, std::uint64_t t0, std::int64_t n,
                         const std::int32_t *movable, std::int64_t n_movable, const double *step,
                         double max_step, GpuDraw *out, void *stream) {
  if (n > 0) {
    const std::int64_t blocks = std::min<std::int64_t>((n + 255) / 256, 4096);
    k_draws<<<static_cast<unsigned>(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(
        seed, t0, n, movable, n_movable, step, max_step, out);
  }
  return last_error();
}

template <class T> auto k_batch_variant(const GpuBatchArgs<T> &a) {
  void (*uniform)(GpuBatchArgs<T>) = nullptr;
  if constexpr (std::is_same_v<T, float>)
    uniform = k_batch_uniform_f32;
  else
    uniform = k_batch<T, true, true>;
  return a.fast ? (a.uniform ? uniform : k_batch<T, true, false>) : k_batch<T, false, false>;
}

template <class T>
const char *launch_batch(const GpuBatchArgs<T> &a, void *stream, void *mid_event) {
  const auto s = static_cast<cudaStream_t>(stream);
  const int tiles = a.ld / 32;
  const int blocks = a.slices * a.groups + tiles * (tiles + 1) / 2;
  k_batch_variant(a)<<<blocks, kThreads, 0, s>>>(a);
  if (mid_event)
    cudaEventRecord(static_cast<cudaEvent_t>(mid_event), s);
  k_accept<T><<<1, a.ld, 0, s>>>(a);
  return last_error();
}

template <class T> int batch_blocks_per_sm(const GpuBatchArgs<T> &a) {
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k_batch_variant(a), kThreads, 0) !=
      cudaSuccess) {
    cudaGetLastError();
    return 1;
  }
  return n > 0 ? n : 1;
}

template const char *launch_batch<float>(const GpuBatchArgs<float> &, void *, void *);
template const char *launch_batch<double>(const GpuBatchArgs<double> &, void *, void *);
template int batch_blocks_per_sm<float>(const GpuBatchArgs<float> &);
template int batch_blocks_per_sm<double>(const GpuBatchArgs<double> &);

} // namespace ksum::mc::detail
