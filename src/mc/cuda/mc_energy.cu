// CUDA kernels of the Monte Carlo engine's energies (seed 004 Paper I, its GPU library of
// section 3.1.1): U by the nbody tiling of Paper I (sources staged in shared memory; every pair
// once, or every ordered pair as the paper computed it), and the O(N·m) energy change of a move
// against the resident particles with the move's own terms. Sums are accumulated in double (per
// thread; per tile of 128 terms in float) and reduced in a fixed order, so that results do not
// depend on the scheduling of blocks. translate()'s kernels are in mc_batch.cu.
#include "mc/mc_device.cuh"

namespace ksum::mc::detail {
namespace {

using namespace dev;

constexpr int kReduceThreads = 256; // single-block reductions and the bond/wall kernel

// One thread per particle i of the block's tile; the sources come in tiles of kThreads through
// shared memory (seed 004 Paper I: the nbody scheme). half: the tiles j ≥ the block's own, pairs
// j > i; otherwise every tile and j ≠ i (each pair twice, as the paper computed it).
template <class T, bool kFast>
__global__ void __launch_bounds__(kThreads) k_total(GpuTotalArgs<T> a) {
  __shared__ Src<T> tile[kThreads];
  const GpuParticles<T> &s = a.sys;
  const PairParams<T> &pp = a.pp;
  const int n = s.n, tid = threadIdx.x;
  const int base = blockIdx.x * kThreads;
  const int i = base + tid;
  const int ic = i < n ? i : n - 1;
  const bool hs = pp.short_range == 1;
  const T xi = s.x[ic], yi = s.y[ic], zi = s.z[ic];
  const T qi = kFast ? pp.lb * s.q[ic] : s.q[ic];
  const T ri = kFast && !hs ? T(0) : s.r[ic];
  double acc = 0;
  int ov = 0;
  for (int j0 = a.half ? base : 0; j0 < n; j0 += kThreads) {
    __syncthreads();
    const int jl = j0 + tid;
    if (jl < n)
      tile[tid] = Src<T>{s.x[jl], s.y[jl], s.z[jl], s.q[jl], kFast && !hs ? T(0) : s.r[jl]};
    __syncthreads();
    const int cnt = min(kThreads, n - j0);
    T tacc = 0;
    if (j0 == base || cnt < kThreads) {
      // The diagonal tile (pairs with j ≤ i, or j = i, left out) or the last, partial one.
      for (int jj = 0; jj < cnt; ++jj) {
        const Src<T> c = tile[jj];
        const int j = j0 + jj;
        int o = 0;
        const T e = pair_u<T, kFast>(pp, xi - c.x, yi - c.y, zi - c.z, qi, c.q, ri, c.r, o);
        const bool keep = a.half ? j > i : j != i;
        tacc += keep ? e : T(0);
        ov += keep ? o : 0;
      }
    } else {
#pragma unroll 4
      for (int jj = 0; jj < kThreads; ++jj) {
        const Src<T> c = tile[jj];
        tacc += pair_u<T, kFast>(pp, xi - c.x, yi - c.y, zi - c.z, qi, c.q, ri, c.r, ov);
      }
    }
    acc += static_cast<double>(tacc);
  }
  long long ovl = ov;
  if (i >= n) {
    acc = 0;
    ovl = 0;
  }
  block_sum<kThreads>(acc, ovl);
  if (tid == 0) {
    a.part.e[blockIdx.x] = acc;
    a.part.ov[blockIdx.x] = ovl;
  }
}

// Bonds (listed once) and centres outside the spherical cell; partials from slot `offset` on.
template <class T>
__global__ void __launch_bounds__(kReduceThreads) k_extra(GpuTotalArgs<T> a, int offset) {
  const GpuParticles<T> &s = a.sys;
  double e = 0;
  long long ov = 0;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (a.pp.bond != 0)
    for (std::int64_t k = first; k < s.bonds; k += stride) {
      const int i = s.bond_pairs[2 * k], j = s.bond_pairs[2 * k + 1];
      int o = 0;
      e += bond_u(a.pp, s.x[i] - s.x[j], s.y[i] - s.y[j], s.z[i] - s.z[j], o);
      ov += o;
    }
  if (a.pp.cell_radius > T(0))
    for (std::int64_t i = first; i < s.n; i += stride)
      ov += outside_cell(a.pp, s.x[i], s.y[i], s.z[i]);
  block_sum<kReduceThreads>(e, ov);
  if (threadIdx.x == 0) {
    a.part.e[offset + blockIdx.x] = e;
    a.part.ov[offset + blockIdx.x] = ov;
  }
}

// Partials [0, pairs) are pair sums (halved unless `half`), [pairs, pairs + extra) the rest.
__global__ void __launch_bounds__(kReduceThreads)
    k_final(GpuPartials part, int pairs, int extra, bool half, GpuResult *out) {
  double e = 0, ex = 0;
  long long ov = 0, ovx = 0;
  for (int k = threadIdx.x; k < pairs; k += blockDim.x) {
    e += part.e[k];
    ov += part.ov[k];
  }
  for (int k = threadIdx.x; k < extra; k += blockDim.x) {
    ex += part.e[pairs + k];
    ovx += part.ov[pairs + k];
  }
  block_sum<kReduceThreads>(e, ov);
  __syncthreads();
  block_sum<kReduceThreads>(ex, ovx);
  if (threadIdx.x == 0) {
    // The full sum holds every pair twice, both u_ij and u_ji (equal to rounding; the overlap
    // tests are symmetric, so the count is even).
    out->value = (half ? e : 0.5 * e) + ex;
    out->overlaps = (half ? ov : ov / 2) + ovx;
  }
}

// Stages moved particles c0 … c0 + kThreads − 1 (new and old positions) in shared memory.
template <class T, bool kFast>
__device__ __forceinline__ void stage_moved(const GpuMoveArgs<T> &a, int c0, Moved<T> *mv,
                                            int *mp) {
  const int k = c0 + threadIdx.x;
  if (k < a.m) {
    const GpuParticles<T> &s = a.sys;
    const int p = a.idx[k];
    const bool hs = a.pp.short_range == 1;
    mv[threadIdx.x] = Moved<T>{a.nxyz[k],
                               a.nxyz[a.m + k],
                               a.nxyz[2 * a.m + k],
                               s.x[p],
                               s.y[p],
                               s.z[p],
                               kFast ? a.pp.lb * s.q[p] : s.q[p],
                               kFast && !hs ? T(0) : s.r[p]};
    mp[threadIdx.x] = p;
  }
}

// Σ over unmoved j of Σ over moved i of u(new_i, x_j) − u(old_i, x_j): a thread per j (a
// grid-stride over tiles of j), the moved particles in shared memory; j is recognised as moved
// while its sums run, and those sums are then dropped.
template <class T, bool kFast>
__global__ void __launch_bounds__(kThreads) k_move(GpuMoveArgs<T> a) {
  __shared__ Moved<T> mv[kThreads];
  __shared__ int mp[kThreads];
  const GpuParticles<T> &s = a.sys;
  const PairParams<T> &pp = a.pp;
  const int n = s.n, m = a.m, tid = threadIdx.x;
  const bool single = m <= kThreads;
  const bool hs = pp.short_range == 1;
  if (single)
    stage_moved<T, kFast>(a, 0, mv, mp);
  __syncthreads();
  double acc = 0;
  long long ov = 0;
  for (int j0 = blockIdx.x * kThreads; j0 < n; j0 += gridDim.x * kThreads) {
    const int j = j0 + tid;
    const int jc = j < n ? j : n - 1;
    const T xj = s.x[jc], yj = s.y[jc], zj = s.z[jc], qj = s.q[jc];
    const T rj = kFast && !hs ? T(0) : s.r[jc];
    double le = 0;
    int lo = 0;
    bool moved = false;
    for (int c0 = 0; c0 < m; c0 += kThreads) {
      if (!single) {
        __syncthreads();
        stage_moved<T, kFast>(a, c0, mv, mp);
        __syncthreads();
      }
      const int cnt = min(kThreads, m - c0);
      for (int k = 0; k < cnt; ++k) {
        const Moved<T> c = mv[k];
        moved |= mp[k] == j;
        int dummy = 0;
        const T en = pair_u<T, kFast>(pp, c.nx - xj, c.ny - yj, c.nz - zj, c.q, qj, c.r, rj, lo);
        const T eo = pair_u<T, kFast>(pp, c.ox - xj, c.oy - yj, c.oz - zj, c.q, qj, c.r, rj, dummy);
        le += static_cast<double>(en) - static_cast<double>(eo);
      }
    }
    if (j < n && !moved) {
      acc += le;
      ov += lo;
    }
  }
  block_sum<kThreads>(acc, ov);
  if (tid == 0) {
    a.part.e[blockIdx.x] = acc;
    a.part.ov[blockIdx.x] = ov;
  }
}

// One block: the partial sums of k_move in order, the mutual terms of the moved particles (unless
// rigid), their bonds (a bond between two moved particles once, and not at all when rigid: its
// length is unchanged) and the wall of the spherical cell at their new positions.
template <class T>
__global__ void __launch_bounds__(kReduceThreads) k_move_local(GpuMoveArgs<T> a) {
  const GpuParticles<T> &s = a.sys;
  const PairParams<T> &pp = a.pp;
  const int m = a.m, tid = threadIdx.x;
  const T *nx = a.nxyz, *ny = a.nxyz + m, *nz = a.nxyz + 2 * m;
  double e = 0;
  long long ov = 0;
  for (int k = tid; k < a.blocks; k += blockDim.x) {
    e += a.part.e[k];
    ov += a.part.ov[k];
  }
  for (int k = tid; k < m; k += blockDim.x) {
    a.mark[a.idx[k]] = a.generation;
    a.slot[a.idx[k]] = k;
  }
  __syncthreads(); // the marks are read below by other threads of this block
  if (!a.rigid) {
    const std::int64_t mm = static_cast<std::int64_t>(m) * m;
    for (std::int64_t k = tid; k < mm; k += blockDim.x) {
      const int ia = static_cast<int>(k / m), ib = static_cast<int>(k % m);
      if (ia >= ib)
        continue;
      const int pa = a.idx[ia], pb = a.idx[ib];
      int o = 0, dummy = 0;
      const T un = pair_u<T, false>(pp, nx[ia] - nx[ib], ny[ia] - ny[ib], nz[ia] - nz[ib], s.q[pa],
                                    s.q[pb], s.r[pa], s.r[pb], o);
      const T uo = pair_u<T, false>(pp, s.x[pa] - s.x[pb], s.y[pa] - s.y[pb], s.z[pa] - s.z[pb],
                                    s.q[pa], s.q[pb], s.r[pa], s.r[pb], dummy);
      e += static_cast<double>(un) - static_cast<double>(uo);
      ov += o;
    }
  }
  for (int ia = tid; ia < m; ia += blockDim.x) {
    const int pa = a.idx[ia];
    if (pp.bond != 0 && s.bond_begin)
      for (int k = s.bond_begin[pa]; k < s.bond_begin[pa + 1]; ++k) {
        const int j = s.bond_nbr[k];
        int o = 0, dummy = 0;
        T un, uo;
        if (a.mark[j] == a.generation) {
          const int ib = a.slot[j];
          if (a.rigid || ib <= ia)
            continue;
          un = bond_u(pp, nx[ia] - nx[ib], ny[ia] - ny[ib], nz[ia] - nz[ib], o);
          uo = bond_u(pp, s.x[pa] - s.x[j], s.y[pa] - s.y[j], s.z[pa] - s.z[j], dummy);
        } else {
          un = bond_u(pp, nx[ia] - s.x[j], ny[ia] - s.y[j], nz[ia] - s.z[j], o);
          uo = bond_u(pp, s.x[pa] - s.x[j], s.y[pa] - s.y[j], s.z[pa] - s.z[j], dummy);
        }
        e += static_cast<double>(un) - static_cast<double>(uo);
        ov += o;
      }
    ov += outside_cell(pp, nx[ia], ny[ia], nz[ia]);
  }
  block_sum<kReduceThreads>(e, ov);
  if (tid == 0) {
    a.result->value = e;
    a.result->overlaps = ov;
  }
}

template <class T> __global__ void k_apply(GpuMoveArgs<T> a) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < a.m) {
    const int p = a.idx[k];
    a.sys.x[p] = a.nxyz[k];
    a.sys.y[p] = a.nxyz[a.m + k];
    a.sys.z[p] = a.nxyz[2 * a.m + k];
  }
}

} // namespace

template <class T> const char *launch_total(const GpuTotalArgs<T> &a, void *stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  const int n = a.sys.n;
  const int pair_blocks = (n + kThreads - 1) / kThreads;
  if (n > 0) {
    if (a.fast)
      k_total<T, true><<<pair_blocks, kThreads, 0, s>>>(a);
    else
      k_total<T, false><<<pair_blocks, kThreads, 0, s>>>(a);
  }
  k_extra<T><<<kExtraBlocks, kReduceThreads, 0, s>>>(a, pair_blocks);
  k_final<<<1, kReduceThreads, 0, s>>>(a.part, pair_blocks, kExtraBlocks, a.half, a.result);
  return last_error();
}

template <class T> const char *launch_delta(const GpuMoveArgs<T> &a, void *stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  if (a.sys.n > 0 && a.m > 0) {
    if (a.fast)
      k_move<T, true><<<a.blocks, kThreads, 0, s>>>(a);
    else
      k_move<T, false><<<a.blocks, kThreads, 0, s>>>(a);
  }
  GpuMoveArgs<T> b = a;
  if (a.sys.n == 0 || a.m == 0)
    b.blocks = 0; // no partial sums to add
  k_move_local<T><<<1, kReduceThreads, 0, s>>>(b);
  return last_error();
}

template <class T> const char *launch_apply(const GpuMoveArgs<T> &a, void *stream) {
  if (a.m > 0)
    k_apply<T><<<(a.m + 255) / 256, 256, 0, static_cast<cudaStream_t>(stream)>>>(a);
  return last_error();
}

template const char *launch_total<float>(const GpuTotalArgs<float> &, void *);
template const char *launch_total<double>(const GpuTotalArgs<double> &, void *);
template const char *launch_delta<float>(const GpuMoveArgs<float> &, void *);
template const char *launch_delta<double>(const GpuMoveArgs<double> &, void *);
template const char *launch_apply<float>(const GpuMoveArgs<float> &, void *);
template const char *launch_apply<double>(const GpuMoveArgs<double> &, void *);

} // namespace ksum::mc::detail
