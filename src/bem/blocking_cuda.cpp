// The GPU worker of seed 003 §5.2: blocks of one slice interval and the past values of all
// unknowns resident on one device, the kernels of cuda/blocking.cu launched on them; see
// blocking_cuda.hpp.
#include "bem/blocking_cuda.hpp"
#include "bem/blocking_launch.hpp"
#include "runtime/cuda_array.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <limits>
#include <vector>

namespace ksum::bem {

using detail::cuda_check;
using detail::DeviceArray;

namespace {

// Shared memory a thread block stages at most by default: four resident blocks of 256 threads
// still fit an H100 multiprocessor (228 KiB), enough to keep its memory requests in flight.
constexpr std::size_t kSmemBudget = 48 * 1024;
// Slices a Contiguous-Blocking thread block takes at once. The results of a row go to memory once
// per chunk (n_g atomic additions per J·b_c values read); beyond 16 that share is below 1/16 of
// the traffic at b_c = 16, n_g = 8, and larger chunks only cost parallelism.
constexpr int kMaxChunk = 16;
// Rows a Contiguous-Blocking thread owns per chunk, on average (see plan_contiguous).
constexpr std::int64_t kRowsPerThread = 4;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

void check_launch(const char *err, int dev, const char *what) {
  if (err && *err)
    throw Error(ErrorCode::device, fmt::format("GPU {}: {} failed: {}", dev, what, err));
}

std::string mib(std::int64_t bytes) {
  return fmt::format("{} bytes ({:.1f} MiB)", bytes, static_cast<double>(bytes) / (1 << 20));
}

} // namespace

template <class T> struct GpuSlices<T>::Impl {
  int dev = 0;
  bool contiguous = true;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  int sms = 0;
  std::size_t smem_optin = 0;

  std::int64_t n = 0, j0 = 0, j1 = 0, nb = 0;
  int br = 0, bc = 0, ng_max = 1;
  std::int32_t kmax = 0, lead = 0, tail = 0;
  std::int64_t stride = 0;

  DeviceArray<T> values;
  DeviceArray<std::int32_t> k0;                // Contiguous-Blocking
  DeviceArray<std::int32_t> row0, col0, slice; // Full-Blocking
  std::vector<std::int64_t> slice_ptr;         // Full-Blocking, on the host: the block range
  DeviceArray<T> hist[2];                      // push() writes the other one (no in-place race)
  int cur = 0;
  DeviceArray<T> a_dev, acc;
  std::vector<T> host_acc;
  std::int64_t bytes = 0;

  // One planned launch: kernel arguments and geometry (computed once per sum / time_kernel).
  struct Plan {
    ContiguousLaunch<T> cb;
    FullLaunch<T> fb;
    int ngc = 1, threads = kGpuThreads;
    std::int64_t grid = 0;
    std::size_t smem = 0;
  };

  Impl(int device, bool cb, std::int64_t n_, std::int64_t j0_, std::int64_t j1_, int br_, int bc_,
       std::int32_t kmax_, int ng_max_)
      : dev(device), contiguous(cb), n(n_), j0(j0_), j1(j1_), br(br_), bc(bc_), ng_max(ng_max_),
        kmax(kmax_) {
    if (ng_max < 1 || ng_max > kGpuMaxNg)
      throw Error(ErrorCode::unsupported,
                  fmt::format("ng_max = {}: the GPU kernels compute 1 … {} summation vectors at "
                              "once",
                              ng_max, kGpuMaxNg));
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      cudaGetLastError();
      throw Error(ErrorCode::unsupported,
                  fmt::format("GPU {}: no CUDA GPU is visible to this process", device));
    }
    if (device < 0 || device >= count)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("GPU {}: this process sees GPUs 0 … {}", device, count - 1));
    cuda_check(cudaSetDevice(dev), dev, "cudaSetDevice");
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, dev), dev, "cudaGetDeviceProperties");
    sms = prop.multiProcessorCount;
    smem_optin = prop.sharedMemPerBlockOptin;
    // The history as the CPU kernels read it: lead ≥ n_g − 1 for the compiled n_g (the kernels
    // run the next compiled n_g, blocking_launch.hpp), tail ≥ b_c plus the one value the sliding
    // window reads past a row's last column; depth ≥ 1 keeps that value inside the row when
    // kmax = 0.
    lead = gpu_ng_compiled(ng_max) - 1;
    tail = bc + 1;
    stride = lead + std::max<std::int32_t>(kmax, 1) + tail;
    cuda_check(cudaStreamCreate(&stream), dev, "cudaStreamCreate");
    cuda_check(cudaEventCreate(&start), dev, "cudaEventCreate");
    cuda_check(cudaEventCreate(&stop), dev, "cudaEventCreate");
  }

  ~Impl() {
    cudaSetDevice(dev);
    if (start)
      cudaEventDestroy(start);
    if (stop)
      cudaEventDestroy(stop);
    if (stream)
      cudaStreamDestroy(stream);
  }

  // Checks the room on the device before allocating anything, so that a slice interval too large
  // for this GPU is refused with its size (§5.2: the balancer must not give a GPU more than fits).
  void reserve(std::int64_t block_bytes, const std::string &what) {
    const std::int64_t hist_bytes = 2 * n * stride * static_cast<std::int64_t>(sizeof(T));
    const std::int64_t other = (1 + ng_max) * n * static_cast<std::int64_t>(sizeof(T));
    bytes = block_bytes + hist_bytes + other;
    std::size_t free_b = 0, total_b = 0;
    cuda_check(cudaMemGetInfo(&free_b, &total_b), dev, "cudaMemGetInfo");
    if (bytes > static_cast<std::int64_t>(free_b))
      throw Error(ErrorCode::unsupported,
                  fmt::format("GPU {}: the blocks of slices [{}, {}) need {} ({}) plus {} of "
                              "history and results; {} are free",
                              dev, j0, j1, mib(block_bytes), what, mib(hist_bytes + other),
                              mib(static_cast<std::int64_t>(free_b))));
    hist[0].reserve(n * stride, dev);
    hist[1].reserve(n * stride, dev);
    const std::size_t hb = static_cast<std::size_t>(n * stride) * sizeof(T);
    cuda_check(cudaMemset(hist[0].ptr, 0, hb), dev, "cudaMemset");
    cuda_check(cudaMemset(hist[1].ptr, 0, hb), dev, "cudaMemset");
    a_dev.reserve(n, dev);
    acc.reserve(static_cast<std::int64_t>(ng_max) * n, dev);
    host_acc.resize(static_cast<std::size_t>(ng_max * n));
  }

  void check_call(int ng, std::int64_t cj0, std::int64_t cj1) const {
    if (ng < 1 || ng > ng_max)
      throw Error(
          ErrorCode::invalid_argument,
          fmt::format("ng = {}: this GPU worker was set up for 1 … ng_max = {}", ng, ng_max));
    check_blocked_call(n, j0, j1, bc, ng, cj0, cj1, n, kmax, kmax, lead, tail);
  }

  GpuHistory<T> past() const { return {hist[cur].ptr, stride, lead}; }

  Plan plan_contiguous(int ng, std::int64_t cj0, std::int64_t cj1) const {
    Plan p;
    p.ngc = gpu_ng_compiled(ng);
    auto &a = p.cb;
    a.values = values.ptr;
    a.k0 = k0.ptr;
    a.past = past();
    a.n = n;
    a.nb = nb;
    a.br = br;
    a.bc = bc;
    a.hist_j0 = j0;
    a.js_begin = cj0 - j0;
    a.js_end = cj1 - j0;
    a.ng = ng;
    a.s = acc.ptr;
    // Seed 003 §4.2: the past values of a slice, P_j(1 − n_g) … P_j(kmax + b_c − 1), staged once
    // per thread block and slice; a window larger than a thread block's shared memory (kmax in
    // the tens of thousands) is read from the history instead (L1/L2 serve the reuse).
    a.window = std::max<std::int32_t>(kmax, 1) + bc + p.ngc - 1;
    const std::size_t win_bytes = static_cast<std::size_t>(a.window) * sizeof(T);
    a.staged = win_bytes <= smem_optin;
    const std::int64_t slices = cj1 - cj0;
    const int chunk_max = static_cast<int>(std::min<std::int64_t>(
        a.staged ? std::clamp<std::size_t>(kSmemBudget / win_bytes, 1, kMaxChunk) : kMaxChunk,
        slices));
    const int per_sm = contiguous_blocks_per_sm<T>(
        a, p.ngc, a.staged ? static_cast<std::size_t>(chunk_max) * win_bytes : std::size_t(0));
    if (per_sm < 1)
      throw Error(ErrorCode::device,
                  fmt::format("GPU {}: the Contiguous-Blocking kernel cannot run with {} of "
                              "shared memory (windows of {} values)",
                              dev, mib(static_cast<std::int64_t>(chunk_max * win_bytes)),
                              a.window));
    // One resident wave of thread blocks with equal shares of the work items. A chunk of J
    // slices costs a row n_g atomic additions per J·b_c values read: J·b_c ≥ 4·n_g keeps them
    // under a quarter of the loads, and longer chunks only stage more windows per thread block
    // (measured on the H100 at 256 slices × 6400 rows: J = 1 best from b_c = 32 on, J = 2 at
    // b_c = 16 with n_g = 8; for the short-row kernel at 2048 slices × 10,048 rows, b_c = 6 and
    // 15, J·b_c ≥ 8·n_g and 16·n_g ran 1–3 % slower than 4·n_g). Each thread should still own
    // about kRowsPerThread rows of a chunk, so that a staging serves several rows and the last,
    // partial round of rows stays a small part of a thread block's time (2 and 8 were no better
    // at 256 slices × 6400 rows).
    const std::int64_t resident = static_cast<std::int64_t>(per_sm) * sms;
    a.chunk = static_cast<int>(std::clamp<std::int64_t>(
        std::min<std::int64_t>(ceil_div(4 * p.ngc, bc),
                               slices * n / (resident * kGpuThreads * kRowsPerThread)),
        1, chunk_max));
    a.items = ceil_div(slices, a.chunk) * n;
    a.per_block = ceil_div(ceil_div(a.items, resident), 32) * 32; // whole warps of rows
    p.grid = ceil_div(a.items, a.per_block);
    p.smem = a.staged ? static_cast<std::size_t>(a.chunk) * win_bytes : 0;
    return p;
  }

  Plan plan_full(int ng, std::int64_t cj0, std::int64_t cj1) const {
    Plan p;
    p.ngc = gpu_ng_compiled(ng);
    auto &a = p.fb;
    a.values = values.ptr;
    a.row0 = row0.ptr;
    a.col0 = col0.ptr;
    a.slice = slice.ptr;
    a.past = past();
    a.n = n;
    a.br = br;
    a.bc = bc;
    a.hist_j0 = j0;
    a.b_begin = slice_ptr[static_cast<std::size_t>(cj0 - j0)];
    a.b_end = slice_ptr[static_cast<std::size_t>(cj1 - j0)];
    a.ng = ng;
    a.s = acc.ptr;
    // Seed 003 §4.1: b_c + n_g − 1 past values per block (one more for the sliding window's last
    // shift); teams of b_r threads, as many per thread block as 256 threads hold.
    const std::size_t wb = static_cast<std::size_t>(bc + p.ngc) * sizeof(T);
    if (wb > smem_optin)
      throw Error(ErrorCode::unsupported,
                  fmt::format("GPU {}: a block's past-values window needs {} bytes of shared "
                              "memory; the GPU has {} per thread block",
                              dev, wb, smem_optin));
    int group = std::max(1, kGpuThreads / br);
    group =
        static_cast<int>(std::min<std::size_t>(group, std::max<std::size_t>(kSmemBudget / wb, 1)));
    a.group = group;
    p.threads =
        br >= kGpuThreads
            ? kGpuThreads
            : static_cast<int>(std::min<std::int64_t>(ceil_div(group * br, 32) * 32, kGpuThreads));
    p.grid = ceil_div(a.b_end - a.b_begin, group);
    p.smem = static_cast<std::size_t>(group) * wb;
    return p;
  }

  Plan plan(int ng, std::int64_t cj0, std::int64_t cj1) const {
    Plan p = contiguous ? plan_contiguous(ng, cj0, cj1) : plan_full(ng, cj0, cj1);
    if (p.grid > std::numeric_limits<std::int32_t>::max())
      throw Error(ErrorCode::unsupported,
                  fmt::format("GPU {}: slices [{}, {}) need {} thread blocks (at most 2^31 − 1)",
                              dev, cj0, cj1, p.grid));
    return p;
  }

  void launch(const Plan &p) {
    if (p.grid == 0)
      return;
    const char *err = contiguous ? launch_contiguous(p.cb, p.ngc, p.grid, p.smem, stream)
                                 : launch_full(p.fb, p.ngc, p.grid, p.threads, p.smem, stream);
    check_launch(err, dev,
                 contiguous ? "the Contiguous-Blocking kernel" : "the Full-Blocking kernel");
  }

  // One launch between CUDA events; returns its seconds.
  double timed(const Plan &p) {
    cuda_check(cudaEventRecord(start, stream), dev, "cudaEventRecord");
    launch(p);
    cuda_check(cudaEventRecord(stop, stream), dev, "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop), dev, "the blocked kernel");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), dev, "cudaEventElapsedTime");
    return ms * 1e-3;
  }

  void zero_acc(int ng) {
    cuda_check(cudaMemsetAsync(acc.ptr, 0, static_cast<std::size_t>(ng * n) * sizeof(T), stream),
               dev, "cudaMemsetAsync");
  }
};

template <class T>
GpuSlices<T>::GpuSlices(int device, const ContiguousBlocks<T> &b, int ng_max)
    : impl_(std::make_unique<Impl>(device, true, b.n, b.j0, b.j1, b.br, b.bc, b.kmax, ng_max)) {
  Impl &m = *impl_;
  const std::int64_t slices = b.j1 - b.j0;
  if (b.n < 0 || b.br < 1 || b.bc < 1 || b.kmax < 0 || slices < 0 || b.nb != ceil_div(b.n, b.br) ||
      static_cast<std::int64_t>(b.k0.size()) != slices * b.nb * b.br ||
      static_cast<std::int64_t>(b.values.size()) != slices * b.nb * b.br * b.bc)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("contiguous blocks of n = {}, {} x {}, slices [{}, {}), nb = {}: {} "
                            "row starts and {} values do not match",
                            b.n, b.br, b.bc, b.j0, b.j1, b.nb, b.k0.size(), b.values.size()));
  // The kernels read P_j(k0 − n_g) … P_j(k0 + b_c − 1) unchecked: every k0 must lie in the
  // history's rows.
  const std::int32_t kcap = std::max<std::int32_t>(b.kmax, 1);
  for (std::size_t q = 0; q < b.k0.size(); ++q)
    if (b.k0[q] < 1 || b.k0[q] > kcap)
      throw Error(
          ErrorCode::invalid_argument,
          fmt::format("contiguous blocks: slice {}, row {} starts at k0 = {} outside 1 … {}",
                      b.j0 + static_cast<std::int64_t>(q) / (b.nb * b.br),
                      static_cast<std::int64_t>(q) % (b.nb * b.br), b.k0[q], kcap));
  m.nb = b.nb;
  const std::int64_t vb = static_cast<std::int64_t>(b.values.size() * sizeof(T));
  const std::int64_t kb = static_cast<std::int64_t>(b.k0.size() * sizeof(std::int32_t));
  m.reserve(vb + kb, fmt::format("values {}, row starts {}", vb, kb));
  m.values.upload(b.values.data(), static_cast<std::int64_t>(b.values.size()));
  m.k0.upload(b.k0.data(), static_cast<std::int64_t>(b.k0.size()));
}

template <class T>
GpuSlices<T>::GpuSlices(int device, const FullBlocks<T> &b, int ng_max)
    : impl_(std::make_unique<Impl>(device, false, b.n, b.j0, b.j1, b.br, b.bc, b.kmax, ng_max)) {
  Impl &m = *impl_;
  const std::int64_t slices = b.j1 - b.j0, nblk = b.blocks();
  bool ok = b.n >= 0 && b.br >= 1 && b.bc >= 1 && b.kmax >= 0 && slices >= 0 &&
            static_cast<std::int64_t>(b.slice_ptr.size()) == slices + 1 &&
            static_cast<std::int64_t>(b.col0.size()) == nblk &&
            static_cast<std::int64_t>(b.values.size()) == nblk * b.br * b.bc;
  for (std::size_t q = 0; ok && q + 1 < b.slice_ptr.size(); ++q)
    ok = b.slice_ptr[q] <= b.slice_ptr[q + 1];
  ok = ok && b.slice_ptr.front() == 0 && b.slice_ptr.back() == nblk;
  if (!ok)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("full blocks of n = {}, {} x {}, slices [{}, {}): {} slice pointers, "
                            "{} blocks, {} column origins and {} values do not match",
                            b.n, b.br, b.bc, b.j0, b.j1, b.slice_ptr.size(), nblk, b.col0.size(),
                            b.values.size()));
  const std::int32_t kcap = std::max<std::int32_t>(b.kmax, 1);
  std::vector<std::int32_t> slice(static_cast<std::size_t>(nblk));
  for (std::int64_t js = 0; js < slices; ++js)
    for (std::int64_t q = b.slice_ptr[js]; q < b.slice_ptr[js + 1]; ++q) {
      const auto u = static_cast<std::size_t>(q);
      if (b.row0[u] < 0 || b.row0[u] >= b.n || b.col0[u] < 1 || b.col0[u] > kcap)
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("full blocks: block {} of slice {} at row {}, column {} outside "
                                "rows 0 … {} and columns 1 … {}",
                                q, b.j0 + js, b.row0[u], b.col0[u], b.n - 1, kcap));
      slice[u] = static_cast<std::int32_t>(js);
    }
  m.slice_ptr = b.slice_ptr;
  const std::int64_t vb = static_cast<std::int64_t>(b.values.size() * sizeof(T));
  const std::int64_t ib = 3 * nblk * static_cast<std::int64_t>(sizeof(std::int32_t));
  m.reserve(vb + ib, fmt::format("values {}, block origins {}", vb, ib));
  m.values.upload(b.values.data(), static_cast<std::int64_t>(b.values.size()));
  m.row0.upload(b.row0.data(), nblk);
  m.col0.upload(b.col0.data(), nblk);
  m.slice.upload(slice.data(), nblk);
}

template <class T> GpuSlices<T>::~GpuSlices() = default;
template <class T> GpuSlices<T>::GpuSlices(GpuSlices &&) noexcept = default;
template <class T> GpuSlices<T> &GpuSlices<T>::operator=(GpuSlices &&) noexcept = default;

template <class T> void GpuSlices<T>::push(std::span<const T> a) {
  Impl &m = *impl_;
  if (static_cast<std::int64_t>(a.size()) != m.n)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("a^n has {} values for {} unknowns", a.size(), m.n));
  if (m.kmax == 0 || m.n == 0)
    return;
  cuda_check(cudaSetDevice(m.dev), m.dev, "cudaSetDevice");
  cuda_check(cudaMemcpyAsync(m.a_dev.ptr, a.data(), a.size() * sizeof(T), cudaMemcpyHostToDevice,
                             m.stream),
             m.dev, "cudaMemcpyAsync to the GPU");
  check_launch(launch_shift(m.hist[m.cur].ptr, m.hist[1 - m.cur].ptr, m.a_dev.ptr, m.n, m.kmax,
                            m.stride, m.lead, m.stream),
               m.dev, "the history shift");
  cuda_check(cudaStreamSynchronize(m.stream), m.dev, "the history shift");
  m.cur = 1 - m.cur;
}

template <class T> void GpuSlices<T>::set_history(const History<T> &past) {
  Impl &m = *impl_;
  if (past.unknowns() != m.n || past.depth() != m.kmax)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("history of {} unknowns and depth {}; this GPU worker holds {} and {}",
                            past.unknowns(), past.depth(), m.n, m.kmax));
  std::vector<T> h(static_cast<std::size_t>(m.n * m.stride), T(0));
  for (std::int64_t j = 0; j < m.n; ++j) {
    const auto row = past.at(j);
    std::copy(row.begin(), row.end(), h.begin() + j * m.stride + m.lead);
  }
  cuda_check(cudaSetDevice(m.dev), m.dev, "cudaSetDevice");
  m.hist[m.cur].upload(h.data(), static_cast<std::int64_t>(h.size()));
}

template <class T> double GpuSlices<T>::sum(int ng, std::int64_t j0, std::int64_t j1, T *s) {
  Impl &m = *impl_;
  m.check_call(ng, j0, j1);
  if (!s && m.n > 0)
    throw Error(ErrorCode::invalid_argument, "sum: s is null");
  if (m.n == 0 || j0 == j1)
    return 0;
  cuda_check(cudaSetDevice(m.dev), m.dev, "cudaSetDevice");
  const auto p = m.plan(ng, j0, j1);
  m.zero_acc(ng);
  const double seconds = m.timed(p);
  const std::int64_t len = ng * m.n;
  cuda_check(cudaMemcpyAsync(m.host_acc.data(), m.acc.ptr,
                             static_cast<std::size_t>(len) * sizeof(T), cudaMemcpyDeviceToHost,
                             m.stream),
             m.dev, "cudaMemcpyAsync from the GPU");
  cuda_check(cudaStreamSynchronize(m.stream), m.dev, "cudaStreamSynchronize");
  for (std::int64_t q = 0; q < len; ++q)
    s[q] += m.host_acc[static_cast<std::size_t>(q)];
  return seconds;
}

template <class T>
double GpuSlices<T>::time_kernel(int ng, std::int64_t j0, std::int64_t j1, int reps) {
  Impl &m = *impl_;
  m.check_call(ng, j0, j1);
  if (reps < 1)
    throw Error(ErrorCode::invalid_argument, fmt::format("reps = {}: must be ≥ 1", reps));
  if (m.n == 0 || j0 == j1)
    return 0;
  cuda_check(cudaSetDevice(m.dev), m.dev, "cudaSetDevice");
  const auto p = m.plan(ng, j0, j1);
  m.zero_acc(ng);
  for (int w = 0; w < 2; ++w) // warm-up: clocks, instruction cache, the first-launch overhead
    m.timed(p);
  std::vector<double> t(static_cast<std::size_t>(reps));
  for (auto &x : t)
    x = m.timed(p);
  std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
  return t[static_cast<std::size_t>(reps / 2)];
}

template <class T> std::int64_t GpuSlices<T>::device_bytes() const {
  return impl_->bytes;
}

template class GpuSlices<float>;
template class GpuSlices<double>;

} // namespace ksum::bem
