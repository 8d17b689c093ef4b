// CUDA kernels of seed 003 §4: the multi-vectors/matrix product of Full-Blocking (figure 7) and
// Contiguous-Blocking (figure 9) blocks, s[g·n + i] += Σ_c V(r, c) · P_j(k0 + c − 1 − g), and the
// shift of the device history by one time step. Both products are memory bound (2·n_g flops per
// stored value against sizeof(T) bytes); a thread owns one block row, keeps its n_g results in
// registers and slides its n_g past values through registers (one shared-memory load and n_g
// FMAs per stored value, §3.3's shared past-values vector). Contiguous-Blocking rows of up to
// kGpuShortBc columns (the real cases: b_c = d_max) have a kernel of their own that keeps the
// loads of a thread in flight across slices and rows.
#include "bem/blocking_launch.hpp"

#include <algorithm>
#include <cuda_runtime.h>

namespace ksum::bem {
namespace {

constexpr int kBatch = 8; // block values loaded ahead per thread: the loads in flight

// Resident thread blocks per multiprocessor that the registers are cut for (__launch_bounds__):
// a thread holds n_g accumulators, n_g window values and two batches of block values. In float,
// four blocks of 256 threads (64 registers) up to n_g = 8: the Contiguous-Blocking kernel then
// spills 8 bytes, and still ran 1–11 % faster on the H100 than three blocks without spilling (more
// loads in flight). In double, three blocks (85 registers) up to n_g = 2 and two up to 8 keep
// everything in registers.
template <class T, int NG> constexpr int min_blocks() {
  if constexpr (sizeof(T) == 4)
    return NG <= 8 ? 4 : 2;
  else
    return NG <= 2 ? 3 : NG <= 8 ? 2 : 1;
}

// One column: acc[g] += V(r, c) · x[g], then the window moves on by one column (x[g] = w[c − g]
// → w[c + 1 − g]; `next` is w[c + 1]).
template <class T, int NG>
__device__ __forceinline__ void column(T vc, T next, T (&x)[NG], T (&acc)[NG]) {
#pragma unroll
  for (int g = 0; g < NG; ++g)
    acc[g] += vc * x[g];
#pragma unroll
  for (int g = NG - 1; g > 0; --g)
    x[g] = x[g - 1];
  x[0] = next;
}

template <class T>
__device__ __forceinline__ void load_batch(const T *__restrict__ v, int c, int br,
                                           T (&vv)[kBatch]) {
#pragma unroll
  for (int u = 0; u < kBatch; ++u)
    vv[u] = __ldcs(v + static_cast<std::ptrdiff_t>(c + u) * br); // read once: stream past L2
}

// acc[g] += Σ_c V(r, c) · w[c − g] for c < bc, where v[c·br] = V(r, c) and w[c − g] =
// P(k0 + c − 1 − g). x[g] holds w[c − g] for the current column; the next column shifts one value
// in (w[c + 1]) — the last shift reads w[bc], inside the padded window. The block values come in
// batches of kBatch columns, the next batch requested before the current one is used, so that a
// thread has loads in flight while it computes (the kernel is bound by memory latency × the
// loads in flight, not by its arithmetic).
template <class T, int NG>
__device__ __forceinline__ void row_product(const T *__restrict__ v, int br, int bc, const T *w,
                                            T (&acc)[NG]) {
  const int full = bc - bc % kBatch;
  T vv[kBatch];
  if (full > 0)
    load_batch(v, 0, br, vv);
  T x[NG];
#pragma unroll
  for (int g = 0; g < NG; ++g)
    x[g] = w[-g];
  for (int c = 0; c < full; c += kBatch) {
    T nx[kBatch];
    const bool more = c + kBatch < full;
    if (more)
      load_batch(v, c + kBatch, br, nx);
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
      column(vv[u], w[c + u + 1], x, acc);
    if (more)
#pragma unroll
      for (int u = 0; u < kBatch; ++u)
        vv[u] = nx[u];
  }
  for (int c = full; c < bc; ++c)
    column(__ldcs(v + static_cast<std::ptrdiff_t>(c) * br), w[c + 1], x, acc);
}

template <class T, int NG>
__device__ __forceinline__ void store(T *s, std::int64_t n, std::int64_t i, int ng,
                                      const T (&acc)[NG]) {
#pragma unroll
  for (int g = 0; g < NG; ++g)
    if (g < ng)
      atomicAdd(s + g * n + i, acc[g]);
}

// Contiguous-Blocking, seed 003 §4.2 / figure 9: for each chunk of slices its work items touch,
// the thread block stages the chunk's past values in shared memory once (c-I); then each thread
// takes block rows i and runs over the chunk's slices with the row's own k0 (c-II), accumulating
// across the chunk in registers, so that results go to memory once per row and chunk (c-III)
// instead of once per row and slice.
template <class T, int NG>
__global__ void __launch_bounds__(kGpuThreads, (min_blocks<T, NG>()))
    contiguous_kernel(const ContiguousLaunch<T> a) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T *win = reinterpret_cast<T *>(smem_raw);
  const std::int64_t rows = a.nb * a.br; // per slice
  const std::int64_t u_end = min(a.items, (blockIdx.x + 1) * a.per_block);
  for (std::int64_t seg = blockIdx.x * a.per_block; seg < u_end;) {
    const std::int64_t chunk = seg / a.n, seg_end = min(u_end, (chunk + 1) * a.n);
    const std::int64_t js0 = a.js_begin + chunk * a.chunk;
    const int nj = static_cast<int>(min(static_cast<std::int64_t>(a.chunk), a.js_end - js0));
    // P_j(1 − NG) of the chunk's first slice: its window's first value.
    const T *hist0 = a.past.data + (a.hist_j0 + js0) * a.past.stride + a.past.lead - (NG - 1);
    if (a.staged) {
      __syncthreads(); // the previous chunk's window is no longer read
      for (int s = 0; s < nj; ++s)
        for (int t = threadIdx.x; t < a.window; t += blockDim.x)
          win[s * a.window + t] = hist0[s * a.past.stride + t];
      __syncthreads();
    }
    for (std::int64_t i = seg - chunk * a.n + threadIdx.x; i < seg_end - chunk * a.n;
         i += blockDim.x) {
      const std::int64_t b = i / a.br;
      const int r = static_cast<int>(i - b * a.br);
      T acc[NG];
#pragma unroll
      for (int g = 0; g < NG; ++g)
        acc[g] = T(0);
      for (int s = 0; s < nj; ++s) {
        const std::int64_t js = js0 + s;
        const int k0 = __ldcs(a.k0 + js * rows + i);
        const T *v = a.values + ((js * a.nb + b) * a.bc) * a.br + r;
        // w[c − g] = P(k0 + c − 1 − g) is window value k0 + c − g + NG − 2.
        if (a.staged)
          row_product<T, NG>(v, a.br, a.bc, win + s * a.window + k0 + NG - 2, acc);
        else
          row_product<T, NG>(v, a.br, a.bc, hist0 + s * a.past.stride + k0 + NG - 2, acc);
      }
      store<T, NG>(a.s, a.n, i, a.ng, acc);
    }
    seg = seg_end;
  }
}

// Short rows (b_c ≤ BC): the k0 and the values of one row of one slice, loaded ahead.
template <class T, int BC> struct ShortRow {
  int k0;
  T v[BC];
};

template <class T, int BC>
__device__ __forceinline__ void load_short(const std::int32_t *k0, const T *v, int br, int bc,
                                           ShortRow<T, BC> &row) {
  row.k0 = __ldcs(k0);
#pragma unroll
  for (int c = 0; c < BC; ++c)
    if (c < bc)
      row.v[c] = __ldcs(v + c * br);
}

// acc[g] += Σ_{c < bc} v[c] · w[c − g]: x[g] = w[c − g], the window shifted in column by column.
template <class T, int NG, int BC>
__device__ __forceinline__ void short_product(const T (&v)[BC], int bc, const T *w, T (&acc)[NG]) {
  T x[NG];
#pragma unroll
  for (int g = 0; g < NG; ++g)
    x[g] = w[-g];
#pragma unroll
  for (int c = 0; c < BC; ++c) {
    if (c >= bc)
      break;
    if (c > 0) {
#pragma unroll
      for (int g = NG - 1; g > 0; --g)
        x[g] = x[g - 1];
      x[0] = w[c];
    }
#pragma unroll
    for (int g = 0; g < NG; ++g)
      acc[g] += v[c] * x[g];
  }
}

// Registers for the short-row kernel: two steps of G pairs (k0 and BC values each), NG
// accumulators and NG window values, about 24 for addresses and counters; as many resident
// thread blocks as that leaves room for (an H100 multiprocessor has 64 Ki registers).
template <class T, int NG, int BC, int G> constexpr int short_min_blocks() {
  constexpr int words = (2 * G * (BC + 1) + 2 * NG) * static_cast<int>(sizeof(T) / 4) + 24;
  return words <= 64 ? 4 : words <= 80 ? 3 : words <= 128 ? 2 : 1;
}

// Where a thread's walk over (row, slice) pairs stands: row i = b·br + r, slice s of the chunk.
struct Walk {
  int i, b, r, s;
};

// Contiguous-Blocking for b_c ≤ BC, as contiguous_kernel but pipelined across slices and rows:
// there a thread has at most b_c loads in flight per slice and none while it computes the slice,
// and the columns past the last batch of kBatch go one load at a time, so short rows leave the
// memory idle. Here a thread walks its (row, slice) pairs of a chunk as one stream, slices
// fastest, G pairs per step, and requests the next step's k0 and values before it computes the
// current step; the first step's loads fly while the windows are staged. The walk is the same
// for all threads of a thread block (rows i = first + q·blockDim.x + threadIdx.x, q < rounds), so
// its counters stay uniform; offsets within a slice fit in 32 bits (the caller checks). On the
// H100 at 2048 slices × 10,048 rows (kmax 185, n_g = 8, b_r = 128) it moved b_c = 6 from 41 to
// 83 % of the HBM roofline in fp32 (48 to 87 % in fp64) and b_c = 15 from 65 to 87 % (72 to 90 %).
template <class T, int NG, int BC, int G>
__global__ void __launch_bounds__(kGpuThreads, (short_min_blocks<T, NG, BC, G>()))
    contiguous_short_kernel(const ContiguousLaunch<T> a) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T *win = reinterpret_cast<T *>(smem_raw);
  const std::int64_t rows = a.nb * a.br, slice_values = rows * a.bc; // per slice
  const int threads = static_cast<int>(blockDim.x);
  const int step_b = threads / a.br, step_r = threads % a.br;
  const std::int64_t u_end = min(a.items, (blockIdx.x + 1) * a.per_block);
  for (std::int64_t seg = blockIdx.x * a.per_block; seg < u_end;) {
    const std::int64_t chunk = seg / a.n, seg_end = min(u_end, (chunk + 1) * a.n);
    const std::int64_t js0 = a.js_begin + chunk * a.chunk;
    const int nj = static_cast<int>(min(static_cast<std::int64_t>(a.chunk), a.js_end - js0));
    const T *hist0 = a.past.data + (a.hist_j0 + js0) * a.past.stride + a.past.lead - (NG - 1);
    const int first = static_cast<int>(seg - chunk * a.n);
    const int end = static_cast<int>(seg_end - chunk * a.n);
    const int pairs = (end - first + threads - 1) / threads * nj;
    // Pair (i, s) reads its k0 at kp[s·rows + i] and its values at vp[s·slice_values + b·bc·br
    // + r + c·br].
    const std::int32_t *kp = a.k0 + js0 * rows;
    const T *vp = a.values + js0 * slice_values;
    Walk at{first + static_cast<int>(threadIdx.x), 0, 0, 0};
    at.b = at.i / a.br;
    at.r = at.i - at.b * a.br;
    ShortRow<T, BC> next[G] = {};
    int next_row[G], next_js[G];
    bool next_last[G];
    int loaded = 0; // pairs requested so far
    auto request = [&] {
#pragma unroll
      for (int g = 0; g < G; ++g) {
        next_row[g] = at.i;
        next_js[g] = at.s;
        if (loaded < pairs && at.i < end)
          load_short(kp + (at.s * rows + at.i),
                     vp + (at.s * slice_values + at.b * a.bc * a.br + at.r), a.br, a.bc, next[g]);
        ++loaded;
        next_last[g] = ++at.s == nj; // the row's last slice: the same for all threads
        if (next_last[g]) {
          at.s = 0;
          at.i += threads;
          at.b += step_b;
          at.r += step_r;
          if (at.r >= a.br) {
            at.r -= a.br;
            ++at.b;
          }
        }
      }
    };
    request();
    if (a.staged) {
      __syncthreads(); // the previous chunk's window is no longer read
      // One loop over the chunk's windows, unrolled so that a thread has several loads in flight
      // (nj windows of a few hundred values each).
      const int staged = nj * a.window;
#pragma unroll 4
      for (int q = threadIdx.x; q < staged; q += threads) {
        const int s = q / a.window;
        win[q] = hist0[s * a.past.stride + (q - s * a.window)];
      }
      __syncthreads();
    }
    T acc[NG];
#pragma unroll
    for (int g = 0; g < NG; ++g)
      acc[g] = T(0);
    for (int p = 0; p < pairs; p += G) {
      ShortRow<T, BC> cur[G];
      int row[G], js[G];
      bool last[G];
#pragma unroll
      for (int g = 0; g < G; ++g) {
        cur[g] = next[g];
        row[g] = next_row[g];
        js[g] = next_js[g];
        last[g] = next_last[g];
      }
      request();
#pragma unroll
      for (int g = 0; g < G; ++g)
        if (p + g < pairs && row[g] < end) {
          // w[c − g] = P(k0 + c − 1 − g) is window value k0 + c − g + NG − 2.
          const int at_w = cur[g].k0 + NG - 2;
          if (a.staged)
            short_product<T, NG, BC>(cur[g].v, a.bc, win + js[g] * a.window + at_w, acc);
          else
            short_product<T, NG, BC>(cur[g].v, a.bc, hist0 + js[g] * a.past.stride + at_w, acc);
          if (last[g]) {
            store<T, NG>(a.s, a.n, row[g], a.ng, acc);
#pragma unroll
            for (int q = 0; q < NG; ++q)
              acc[q] = T(0);
          }
        }
    }
    seg = seg_end;
  }
}

// Full-Blocking, seed 003 §4.1 / figure 7: a team of br threads per block (group blocks per thread
// block); the bc + NG past values of each block are staged in shared memory (c-I), each thread
// computes its row (c-II) and adds its n_g results (c-III).
template <class T, int NG>
__global__ void __launch_bounds__(kGpuThreads, (min_blocks<T, NG>()))
    full_kernel(const FullLaunch<T> a) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T *win = reinterpret_cast<T *>(smem_raw);
  const std::int64_t g0 = a.b_begin + static_cast<std::int64_t>(blockIdx.x) * a.group;
  const int count = static_cast<int>(min(static_cast<std::int64_t>(a.group), a.b_end - g0));
  const int width = a.bc + NG; // P(col0 − NG) … P(col0 + bc − 1)
  for (int q = threadIdx.x; q < count * width; q += blockDim.x) {
    const int bl = q / width, u = q - bl * width;
    const std::int64_t blk = g0 + bl;
    win[q] =
        a.past
            .data[(a.hist_j0 + a.slice[blk]) * a.past.stride + a.past.lead + a.col0[blk] - NG + u];
  }
  __syncthreads();
  for (int q = threadIdx.x; q < count * a.br; q += blockDim.x) {
    const int bl = q / a.br, r = q - bl * a.br;
    const std::int64_t blk = g0 + bl;
    const std::int64_t row = a.row0[blk] + static_cast<std::int64_t>(r);
    if (row >= a.n)
      continue;
    T acc[NG];
#pragma unroll
    for (int g = 0; g < NG; ++g)
      acc[g] = T(0);
    row_product<T, NG>(a.values + blk * a.bc * a.br + r, a.br, a.bc, win + bl * width + NG - 1,
                       acc);
    store<T, NG>(a.s, a.n, row, a.ng, acc);
  }
}

template <class T>
__global__ void shift_kernel(const T *src, T *dst, const T *a, std::int64_t n, std::int32_t depth,
                             std::int64_t stride, std::int32_t lead) {
  const std::int64_t total = n * depth;
  for (std::int64_t q = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; q < total;
       q += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t j = q / depth;
    const std::int32_t t = static_cast<std::int32_t>(q - j * depth);
    const std::int64_t at = j * stride + lead + t;
    dst[at] = t == 0 ? a[j] : src[at - 1];
  }
}

// The Contiguous-Blocking kernel for a: the short-row one where gpu_short_rows (columns unrolled
// to 8 with two pairs per step, or to kGpuShortBc with one), else the batched one. Two pairs per
// step at b_c ≤ 8 ran 4–5 % faster than one (fp32 and fp64, b_c = 6, 2048 slices × 10,048 rows).
template <class T, int NG> const void *contiguous_ng(const ContiguousLaunch<T> &a) {
  if (!gpu_short_rows(a))
    return reinterpret_cast<const void *>(&contiguous_kernel<T, NG>);
  if (a.bc <= 8)
    return reinterpret_cast<const void *>(&contiguous_short_kernel<T, NG, 8, 2>);
  return reinterpret_cast<const void *>(&contiguous_short_kernel<T, NG, kGpuShortBc, 1>);
}

// The kernel compiled for n_g = ngc (1, 2, 4, 8, 16).
template <class T> const void *contiguous_fn(int ngc, const ContiguousLaunch<T> &a) {
  switch (ngc) {
  case 1:
    return contiguous_ng<T, 1>(a);
  case 2:
    return contiguous_ng<T, 2>(a);
  case 4:
    return contiguous_ng<T, 4>(a);
  case 8:
    return contiguous_ng<T, 8>(a);
  default:
    return contiguous_ng<T, 16>(a);
  }
}

template <class T> const void *full_fn(int ngc) {
  switch (ngc) {
  case 1:
    return reinterpret_cast<const void *>(&full_kernel<T, 1>);
  case 2:
    return reinterpret_cast<const void *>(&full_kernel<T, 2>);
  case 4:
    return reinterpret_cast<const void *>(&full_kernel<T, 4>);
  case 8:
    return reinterpret_cast<const void *>(&full_kernel<T, 8>);
  default:
    return reinterpret_cast<const void *>(&full_kernel<T, 16>);
  }
}

const char *error_text(cudaError_t e) {
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

// Dynamic shared memory beyond 48 KiB must be allowed per kernel first.
cudaError_t allow_smem(const void *fn, std::size_t smem) {
  return smem > 48 * 1024 ? cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(smem))
                          : cudaSuccess;
}

template <class Args>
const char *launch(const void *fn, const Args &a, std::int64_t grid, int threads, std::size_t smem,
                   void *stream) {
  cudaError_t e = allow_smem(fn, smem);
  if (e == cudaSuccess) {
    void *args[] = {const_cast<Args *>(&a)};
    e = cudaLaunchKernel(fn, dim3(static_cast<unsigned>(grid)), dim3(threads), args, smem,
                         static_cast<cudaStream_t>(stream));
  }
  return error_text(e);
}

} // namespace

template <class T>
int contiguous_blocks_per_sm(const ContiguousLaunch<T> &a, int ngc, std::size_t smem) {
  const void *fn = contiguous_fn<T>(ngc, a);
  int blocks = 0;
  if (allow_smem(fn, smem) != cudaSuccess || cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                                                 &blocks, fn, kGpuThreads, smem) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return blocks;
}

template <class T>
const char *launch_contiguous(const ContiguousLaunch<T> &a, int ngc, std::int64_t grid,
                              std::size_t smem, void *stream) {
  return launch(contiguous_fn<T>(ngc, a), a, grid, kGpuThreads, smem, stream);
}

template <class T>
const char *launch_full(const FullLaunch<T> &a, int ngc, std::int64_t grid, int threads,
                        std::size_t smem, void *stream) {
  return launch(full_fn<T>(ngc), a, grid, threads, smem, stream);
}

template <class T>
const char *launch_shift(const T *src, T *dst, const T *a, std::int64_t n, std::int32_t depth,
                         std::int64_t stride, std::int32_t lead, void *stream) {
  const std::int64_t total = n * depth;
  if (total == 0)
    return "";
  const std::int64_t blocks = std::min<std::int64_t>((total + 255) / 256, 65536);
  shift_kernel<T><<<static_cast<unsigned>(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      src, dst, a, n, depth, stride, lead);
  return error_text(cudaGetLastError());
}

#define KSUM_BEM_INSTANTIATE(T)                                                                    \
  template int contiguous_blocks_per_sm<T>(const ContiguousLaunch<T> &, int, std::size_t);         \
  template const char *launch_contiguous(const ContiguousLaunch<T> &, int, std::int64_t,           \
                                         std::size_t, void *);                                     \
  template const char *launch_full(const FullLaunch<T> &, int, std::int64_t, int, std::size_t,     \
                                   void *);                                                        \
  template const char *launch_shift(const T *, T *, const T *, std::int64_t, std::int32_t,         \
                                    std::int64_t, std::int32_t, void *);
KSUM_BEM_INSTANTIATE(float)
KSUM_BEM_INSTANTIATE(double)
#undef KSUM_BEM_INSTANTIATE

} // namespace ksum::bem
