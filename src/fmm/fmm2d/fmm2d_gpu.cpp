// The 2D FMM's GPU host engine: uploads through pinned buffers on its own streams so the near field
// runs while the CPU does the downward pass (seed 004 Paper IV §3.1), and the seed 002 M2L
// experiment (tables 2–3).
#include "fmm/fmm2d/fmm2d_gpu.hpp"
#include "fmm/fmm2d/fmm2d_launch.hpp"
#include "runtime/cuda_array.hpp"

#include <ksum/device.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace ksum::fmm2d {
namespace {

using detail::cuda_check;
using detail::DeviceArray;

// Page-locked host memory: asynchronous copies from it do not block the CPU.
template <class T> struct Pinned {
  T *ptr = nullptr;
  std::int64_t size = 0;
  Pinned() = default;
  Pinned(const Pinned &) = delete;
  Pinned &operator=(const Pinned &) = delete;
  ~Pinned() {
    if (ptr)
      cudaFreeHost(ptr);
  }
  void reserve(std::int64_t n, int dev) {
    if (n <= size)
      return;
    if (ptr)
      cudaFreeHost(ptr);
    ptr = nullptr;
    size = 0;
    cuda_check(cudaMallocHost(&ptr, static_cast<std::size_t>(std::max<std::int64_t>(n, 1)) *
                                         sizeof(T)),
               dev, "cudaMallocHost");
    size = n;
  }
};

template <class U>
void upload_async(DeviceArray<U> &d, Pinned<U> &h, const U *src, std::int64_t n, int dev,
                  cudaStream_t s) {
  d.reserve(n, dev);
  h.reserve(n, dev);
  if (n == 0)
    return;
  // Into the pinned buffer on all threads: one thread copies 16 MB in milliseconds, which would
  // delay the near field's start by as much.
  const std::int64_t chunk = 1 << 16;
#pragma omp parallel for schedule(static) if (n > 4 * chunk)
  for (std::int64_t c = 0; c < n; c += chunk)
    std::memcpy(h.ptr + c, src + c, static_cast<std::size_t>(std::min(chunk, n - c)) * sizeof(U));
  cuda_check(cudaMemcpyAsync(d.ptr, h.ptr, static_cast<std::size_t>(n) * sizeof(U),
                             cudaMemcpyHostToDevice, s),
             dev, "cudaMemcpyAsync to the GPU");
}

std::vector<double> binomial_table() {
  std::vector<double> t(64 * 64, 0.0), row(64, 0.0);
  for (int n = 0; n < 64; ++n) {
    for (int k = n; k >= 1; --k)
      row[k] += row[k - 1];
    row[0] = 1;
    for (int k = 0; k <= n; ++k)
      t[n * 64 + k] = row[k];
  }
  return t;
}

void check_launch(const char *e, int dev, const char *what) {
  if (e && *e)
    throw Error(ErrorCode::device, fmt::format("GPU {}: {} failed: {}", dev, what, e));
}

template <class T> class Engine final : public Fmm2dGpu<T> {
public:
  explicit Engine(int dev) : dev_(dev) {
    cuda_check(cudaSetDevice(dev_), dev_, "cudaSetDevice");
    cuda_check(cudaStreamCreate(&near_), dev_, "cudaStreamCreate");
    cuda_check(cudaStreamCreate(&m2l_), dev_, "cudaStreamCreate");
    for (auto *ev : {&e0_, &e1_})
      cuda_check(cudaEventCreate(ev), dev_, "cudaEventCreate");
    const auto b = binomial_table();
    std::vector<T> bt(b.begin(), b.end());
    binom_.upload(bt.data(), static_cast<std::int64_t>(bt.size()));
  }
  ~Engine() override {
    cudaSetDevice(dev_);
    cudaEventDestroy(e0_);
    cudaEventDestroy(e1_);
    cudaStreamDestroy(near_);
    cudaStreamDestroy(m2l_);
  }

  void start_near(const Pyramid<T> &pyr, std::uint64_t generation, const cx<T> *q,
                  NearSpec spec) override {
    cuda_check(cudaSetDevice(dev_), dev_, "cudaSetDevice");
    const int lf = pyr.levels - 1;
    const std::int64_t n = static_cast<std::int64_t>(pyr.src.size());
    const std::int64_t m = pyr.self ? n : static_cast<std::int64_t>(pyr.tgt.size());
    cuda_check(cudaEventRecord(e0_, near_), dev_, "cudaEventRecord");
    if (generation != near_gen_) {
      upload_async(src_, hsrc_, reinterpret_cast<const cx<T> *>(pyr.src.data()), n, dev_, near_);
      if (!pyr.self)
        upload_async(tgt_, htgt_, reinterpret_cast<const cx<T> *>(pyr.tgt.data()), m, dev_, near_);
      upload_async(soff_, hsoff_, pyr.src_off.data(),
                   static_cast<std::int64_t>(pyr.src_off.size()), dev_, near_);
      upload_async(toff_, htoff_, pyr.target_offsets(),
                   static_cast<std::int64_t>(pyr.src_off.size()), dev_, near_);
      upload_async(loff_, hloff_, pyr.strong_off[lf].data(),
                   static_cast<std::int64_t>(pyr.strong_off[lf].size()), dev_, near_);
      upload_async(list_, hlist_, pyr.strong[lf].data(),
                   static_cast<std::int64_t>(pyr.strong[lf].size()), dev_, near_);
      near_gen_ = generation;
    }
    upload_async(q_, hq_, q, n, dev_, near_);
    out_.reserve(m, dev_);
    hout_.reserve(m, dev_);
    NearArgs<T> a;
    a.src = src_.ptr;
    a.tgt = pyr.self ? src_.ptr : tgt_.ptr;
    a.q = q_.ptr;
    a.src_off = soff_.ptr;
    a.tgt_off = toff_.ptr;
    a.list_off = loff_.ptr;
    a.list = list_.ptr;
    a.leaves = level_size(lf);
    a.self = pyr.self;
    a.harmonic = spec.harmonic;
    a.inv_core2 = spec.core > 0 ? static_cast<T>(1 / (spec.core * spec.core)) : T(0);
    a.out = out_.ptr;
    check_launch(launch_near(a, near_), dev_, "the near-field kernel");
    if (m > 0)
      cuda_check(cudaMemcpyAsync(hout_.ptr, out_.ptr, static_cast<std::size_t>(m) * sizeof(cx<T>),
                                 cudaMemcpyDeviceToHost, near_),
                 dev_, "cudaMemcpyAsync from the GPU");
    cuda_check(cudaEventRecord(e1_, near_), dev_, "cudaEventRecord");
    m_ = m;
  }

  double finish_near(cx<T> *out) override {
    cuda_check(cudaStreamSynchronize(near_), dev_, "the near field");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, e0_, e1_), dev_, "cudaEventElapsedTime");
#pragma omp parallel for schedule(static) if (m_ > 100000)
    for (std::int64_t i = 0; i < m_; ++i)
      out[i] = out[i] + hout_.ptr[i];
    return ms * 1e-3;
  }

  typename Fmm2dGpu<T>::M2lTimes m2l(const Pyramid<T> &pyr, std::uint64_t generation, int p,
                                     const cx<T> *mult, cx<T> *local) override {
    if (p > kGpuMaxTerms)
      throw Error(ErrorCode::unsupported,
                  fmt::format("fmm2d: the GPU M2L takes at most {} terms, this tolerance and θ "
                              "need {} (use the CPU M2L, or a smaller θ)",
                              kGpuMaxTerms, p));
    cuda_check(cudaSetDevice(dev_), dev_, "cudaSetDevice");
    const std::int64_t nbox = pyr.num_boxes();
    if (generation != m2l_gen_) {
      std::vector<std::int32_t> boxes, list;
      std::vector<std::int64_t> off{0};
      for (int l = 1; l < pyr.levels; ++l) {
        const std::int64_t f = level_first(l);
        for (std::int64_t k = 0; k < level_size(l); ++k) {
          const std::int64_t e0 = pyr.weak_off[l][k], e1 = pyr.weak_off[l][k + 1];
          if (e1 == e0)
            continue;
          boxes.push_back(static_cast<std::int32_t>(f + k));
          for (std::int64_t e = e0; e < e1; ++e)
            list.push_back(static_cast<std::int32_t>(f + pyr.weak[l][e]));
          off.push_back(static_cast<std::int64_t>(list.size()));
        }
      }
      boxes_.upload(boxes.data(), static_cast<std::int64_t>(boxes.size()));
      moff_.upload(off.data(), static_cast<std::int64_t>(off.size()));
      mlist_.upload(list.data(), static_cast<std::int64_t>(list.size()));
      sc_.upload(reinterpret_cast<const cx<T> *>(pyr.src_centre.data()), nbox);
      tc_.upload(reinterpret_cast<const cx<T> *>(pyr.tgt_centre.data()), nbox);
      ss_.upload(pyr.src_scale.data(), nbox);
      ts_.upload(pyr.tgt_scale.data(), nbox);
      nboxes_ = static_cast<std::int64_t>(boxes.size());
      m2l_gen_ = generation;
    }
    typename Fmm2dGpu<T>::M2lTimes times;
    cudaEvent_t a0, a1, a2, a3;
    for (auto *ev : {&a0, &a1, &a2, &a3})
      cuda_check(cudaEventCreate(ev), dev_, "cudaEventCreate");
    cuda_check(cudaEventRecord(a0, m2l_), dev_, "cudaEventRecord");
    upload_async(mult_, hmult_, mult, nbox * p, dev_, m2l_);
    local_.reserve(nbox * p, dev_);
    hlocal_.reserve(nbox * p, dev_);
    cuda_check(cudaMemsetAsync(local_.ptr, 0, static_cast<std::size_t>(nbox * p) * sizeof(cx<T>),
                               m2l_),
               dev_, "cudaMemsetAsync");
    cuda_check(cudaEventRecord(a1, m2l_), dev_, "cudaEventRecord");
    M2lArgs<T> args;
    args.mult = mult_.ptr;
    args.local = local_.ptr;
    args.src_centre = sc_.ptr;
    args.tgt_centre = tc_.ptr;
    args.src_scale = ss_.ptr;
    args.tgt_scale = ts_.ptr;
    args.boxes = boxes_.ptr;
    args.off = moff_.ptr;
    args.list = mlist_.ptr;
    args.count = nboxes_;
    args.p = p;
    args.binom = binom_.ptr;
    check_launch(launch_m2l(args, m2l_), dev_, "the M2L kernel");
    cuda_check(cudaEventRecord(a2, m2l_), dev_, "cudaEventRecord");
    cuda_check(cudaMemcpyAsync(hlocal_.ptr, local_.ptr,
                               static_cast<std::size_t>(nbox * p) * sizeof(cx<T>),
                               cudaMemcpyDeviceToHost, m2l_),
               dev_, "cudaMemcpyAsync from the GPU");
    cuda_check(cudaEventRecord(a3, m2l_), dev_, "cudaEventRecord");
    cuda_check(cudaStreamSynchronize(m2l_), dev_, "the M2L");
    std::memcpy(local, hlocal_.ptr, static_cast<std::size_t>(nbox * p) * sizeof(cx<T>));
    float ms = 0;
    cudaEventElapsedTime(&ms, a0, a1);
    times.upload = ms * 1e-3;
    cudaEventElapsedTime(&ms, a1, a2);
    times.kernel = ms * 1e-3;
    cudaEventElapsedTime(&ms, a2, a3);
    times.download = ms * 1e-3;
    for (auto ev : {a0, a1, a2, a3})
      cudaEventDestroy(ev);
    return times;
  }

private:
  int dev_;
  cudaStream_t near_ = nullptr, m2l_ = nullptr;
  cudaEvent_t e0_ = nullptr, e1_ = nullptr;
  std::uint64_t near_gen_ = 0, m2l_gen_ = 0;
  std::int64_t m_ = 0, nboxes_ = 0;
  DeviceArray<cx<T>> src_, tgt_, q_, out_, mult_, local_, sc_, tc_;
  DeviceArray<std::int64_t> soff_, toff_, loff_, moff_;
  DeviceArray<std::int32_t> list_, boxes_, mlist_;
  DeviceArray<T> ss_, ts_, binom_;
  Pinned<cx<T>> hsrc_, htgt_, hq_, hout_, hmult_, hlocal_;
  Pinned<std::int64_t> hsoff_, htoff_, hloff_;
  Pinned<std::int32_t> hlist_;
};

} // namespace

template <class T> std::unique_ptr<Fmm2dGpu<T>> make_fmm2d_gpu(int device) {
  if (gpu_count() == 0)
    throw Error(ErrorCode::unsupported,
                "fmm2d: no GPU is visible; use the CPU backend (backend cpu)");
  return std::make_unique<Engine<T>>(device);
}

template <class T>
M2lBenchResult m2l_gpu_benchmark(int p, std::int64_t translations, int per_target, int repeat,
                                 int device) {
  if (p < 2 || p > kGpuMaxTerms)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("m2l benchmark: p = {} outside 2 … {}", p, kGpuMaxTerms));
  if (gpu_count() == 0)
    throw Error(ErrorCode::unsupported, "m2l benchmark: no GPU is visible");
  cuda_check(cudaSetDevice(device), device, "cudaSetDevice");
  // Target boxes in [0, 1]², source boxes in [2, 3]², radius 0.1: |z0| ≥ 1.4, well separated.
  const std::int64_t ntgt = std::max<std::int64_t>(1, translations / per_target);
  const std::int64_t nsrc = ntgt;
  const std::int64_t nbox = ntgt + nsrc;
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<cx<T>> centre(nbox), mult(nbox * p);
  std::vector<T> scale(nbox, T(0.1));
  for (std::int64_t b = 0; b < nbox; ++b) {
    const double off = b < ntgt ? 0.0 : 2.0;
    centre[b] = {static_cast<T>(off + u(rng)), static_cast<T>(off + u(rng))};
  }
  for (auto &v : mult)
    v = {static_cast<T>(u(rng) - 0.5), static_cast<T>(u(rng) - 0.5)};
  std::vector<std::int32_t> boxes(ntgt), list;
  std::vector<std::int64_t> off{0};
  std::int64_t made = 0;
  for (std::int64_t t = 0; t < ntgt; ++t) {
    boxes[t] = static_cast<std::int32_t>(t);
    const std::int64_t cnt = t + 1 == ntgt ? translations - made : per_target;
    for (std::int64_t k = 0; k < cnt; ++k)
      list.push_back(static_cast<std::int32_t>(ntgt + (t * 7 + k * 13) % nsrc));
    made += cnt;
    off.push_back(static_cast<std::int64_t>(list.size()));
  }
  const auto bt = binomial_table();
  std::vector<T> binom(bt.begin(), bt.end());
  DeviceArray<cx<T>> d_mult, d_local, d_centre;
  DeviceArray<T> d_scale, d_binom;
  DeviceArray<std::int32_t> d_boxes, d_list;
  DeviceArray<std::int64_t> d_off;
  cudaEvent_t a0, a1;
  cudaEventCreate(&a0);
  cudaEventCreate(&a1);
  M2lBenchResult res;
  float ms = 0;
  cudaEventRecord(a0);
  d_mult.upload(mult.data(), nbox * p);
  d_centre.upload(centre.data(), nbox);
  d_scale.upload(scale.data(), nbox);
  d_boxes.upload(boxes.data(), ntgt);
  d_list.upload(list.data(), static_cast<std::int64_t>(list.size()));
  d_off.upload(off.data(), static_cast<std::int64_t>(off.size()));
  cudaEventRecord(a1);
  cudaEventSynchronize(a1);
  cudaEventElapsedTime(&ms, a0, a1);
  res.upload = ms * 1e-3;
  d_binom.upload(binom.data(), static_cast<std::int64_t>(binom.size()));
  d_local.reserve(nbox * p, device);
  M2lArgs<T> args;
  args.mult = d_mult.ptr;
  args.local = d_local.ptr;
  args.src_centre = d_centre.ptr;
  args.tgt_centre = d_centre.ptr;
  args.src_scale = d_scale.ptr;
  args.tgt_scale = d_scale.ptr;
  args.boxes = d_boxes.ptr;
  args.off = d_off.ptr;
  args.list = d_list.ptr;
  args.count = ntgt;
  args.p = p;
  args.binom = d_binom.ptr;
  std::vector<double> times;
  for (int r = 0; r < repeat + 1; ++r) {
    cudaEventRecord(a0);
    check_launch(launch_m2l(args, nullptr), device, "the M2L kernel");
    cudaEventRecord(a1);
    cuda_check(cudaEventSynchronize(a1), device, "the M2L kernel");
    cudaEventElapsedTime(&ms, a0, a1);
    if (r > 0) // the first run is the warm-up
      times.push_back(ms * 1e-3);
  }
  std::sort(times.begin(), times.end());
  res.kernel = times[times.size() / 2];
  std::vector<cx<T>> local(nbox * p);
  cudaEventRecord(a0);
  d_local.download(local.data(), ntgt * p);
  cudaEventRecord(a1);
  cudaEventSynchronize(a1);
  cudaEventElapsedTime(&ms, a0, a1);
  res.download = ms * 1e-3;
  cudaEventDestroy(a0);
  cudaEventDestroy(a1);
  // The CPU's m2l() in double on a sample of target boxes.
  std::vector<double> bd(bt);
  double worst = 0;
  for (std::int64_t t = 0; t < ntgt; t += std::max<std::int64_t>(1, ntgt / 64)) {
    std::vector<cx<double>> ref(p, cx<double>{0, 0});
    for (std::int64_t e = off[t]; e < off[t + 1]; ++e) {
      const std::int64_t c = list[e];
      std::vector<cx<double>> a(p);
      for (int k = 0; k < p; ++k)
        a[k] = {mult[c * p + k].re, mult[c * p + k].im};
      fmm2d::m2l<double>(a.data(), {centre[c].re, centre[c].im}, scale[c],
                         {centre[t].re, centre[t].im}, scale[t], p, bd.data(), 64, ref.data());
    }
    double num = 0, den = 0;
    for (int l = 0; l < p; ++l) {
      const double dr = local[t * p + l].re - ref[l].re, di = local[t * p + l].im - ref[l].im;
      num = std::max(num, std::hypot(dr, di));
      den = std::max(den, std::hypot(ref[l].re, ref[l].im));
    }
    worst = std::max(worst, den > 0 ? num / den : num);
  }
  res.max_rel_diff = worst;
  return res;
}

template std::unique_ptr<Fmm2dGpu<float>> make_fmm2d_gpu(int);
template std::unique_ptr<Fmm2dGpu<double>> make_fmm2d_gpu(int);
template M2lBenchResult m2l_gpu_benchmark<float>(int, std::int64_t, int, int, int);
template M2lBenchResult m2l_gpu_benchmark<double>(int, std::int64_t, int, int, int);

} // namespace ksum::fmm2d
