// The FGT's GPU host engine: uploads the plan built on the CPU (sorted points, boxes, pairs and
// routes) in precision T, runs the kernels of cuda/fgt.cu, and the seed 002 Hermite benchmark.
#include "fgt/fgt_gpu.hpp"
#include "fgt/fgt_launch.hpp"
#include "runtime/cuda_array.hpp"

#include <ksum/table.hpp>

#include <ksum/device.hpp>
#include <ksum/error.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <omp.h>

namespace ksum::fgt {

using detail::cuda_check;
using detail::DeviceArray;

bool gpu_available() {
  return gpu_count() > 0;
}

namespace {

void check_launch(const char *err, int dev, const char *what) {
  if (err && *err)
    throw Error(ErrorCode::device, fmt::format("GPU {}: {} failed: {}", dev, what, err));
}

template <class T, class V> void put(DeviceArray<T> &d, const V &h) {
  const std::int64_t n = std::int64_t(h.size());
  detail::uninit_vector<T> v(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static) if (n > 100000)
  for (std::int64_t i = 0; i < n; ++i)
    v[i] = static_cast<T>(h[i]);
  d.upload(v.data(), n);
}

// The sorted points of a box set relative to their box centres, in precision T.
template <class T> void put_relative(DeviceArray<T> &dst, const BoxSet &b, int d) {
  detail::uninit_vector<T> v(b.pts.size());
#pragma omp parallel for schedule(dynamic, 64) if (b.pts.size() > 100000)
  for (std::int64_t box = 0; box < b.boxes(); ++box)
    for (std::int64_t i = b.begin[box]; i < b.begin[box + 1]; ++i)
      for (int k = 0; k < d; ++k)
        v[i * d + k] = static_cast<T>(b.pts[i * d + k] - b.center[box * d + k]);
  dst.upload(v.data(), std::int64_t(v.size()));
}

template <std::floating_point T> class FgtGpuImpl final : public FgtGpu<T> {
public:
  explicit FgtGpuImpl(int device) : dev_(device) {
    cuda_check(cudaSetDevice(dev_), dev_, "cudaSetDevice");
    cuda_check(cudaStreamCreate(&stream_), dev_, "cudaStreamCreate");
  }
  ~FgtGpuImpl() override {
    cudaSetDevice(dev_);
    cudaStreamDestroy(stream_);
  }

  void set_plan(const FgtPlan &plan) override {
    if (plan.d > kGpuMaxDim || plan.p > kGpuMaxOrder || plan.terms > kGpuMaxTerms)
      throw Error(ErrorCode::unsupported,
                  fmt::format("the GPU FGT handles d ≤ {}, p ≤ {} and p^d ≤ {}; this plan has "
                              "d = {}, p = {}",
                              kGpuMaxDim, kGpuMaxOrder, kGpuMaxTerms, plan.d, plan.p));
    cuda_check(cudaSetDevice(dev_), dev_, "cudaSetDevice");
    const BoxSet &S = plan.src, &Tg = plan.targets();
    n_ = S.begin.back();
    m_ = Tg.begin.back();
    src_order_ = S.order;
    tgt_order_ = Tg.order;
    put_relative(src_, S, plan.d);
    put(scen_, S.center);
    put(sbeg_, S.begin);
    put_relative(tgt_, Tg, plan.d);
    put(tcen_, Tg.center);
    put(tbeg_, Tg.begin);
    put(pbeg_, plan.pair_begin);
    put(psrc_, plan.pair_src);
    std::vector<std::uint8_t> routes(plan.pair_route.size());
    for (std::size_t i = 0; i < routes.size(); ++i)
      routes[i] = std::uint8_t(plan.pair_route[i]);
    put(route_, routes);
    std::vector<std::int32_t> hslot(S.key.size(), -1), tslot(Tg.key.size(), -1), hboxes, tboxes;
    for (std::size_t b = 0; b < hslot.size(); ++b)
      if (plan.hermite_box[b]) {
        hslot[b] = std::int32_t(hboxes.size());
        hboxes.push_back(std::int32_t(b));
      }
    for (std::size_t c = 0; c < tslot.size(); ++c)
      if (plan.taylor_box[c]) {
        tslot[c] = std::int32_t(tboxes.size());
        tboxes.push_back(std::int32_t(c));
      }
    put(hslot_, hslot);
    put(tslot_, tslot);
    put(hboxes_, hboxes);
    put(tboxes_, tboxes);
    std::vector<std::int64_t> tiles;
    for (std::int64_t c = 0; c < Tg.boxes(); ++c)
      for (std::int64_t f = Tg.begin[c]; f < Tg.begin[c + 1]; f += 128)
        tiles.insert(tiles.end(), {c, f, std::min<std::int64_t>(128, Tg.begin[c + 1] - f)});
    put(tiles_, tiles);
    A_.reserve(std::max<std::int64_t>(1, std::int64_t(hboxes.size()) * plan.terms), dev_);
    B_.reserve(std::max<std::int64_t>(1, std::int64_t(tboxes.size()) * plan.terms), dev_);
    q_.reserve(std::max<std::int64_t>(n_, 1), dev_);
    out_.reserve(std::max<std::int64_t>(m_, 1), dev_);
    args_ = GpuFgtArgs<T>{};
    args_.d = plan.d;
    args_.p = plan.p;
    args_.terms = plan.terms;
    args_.src = src_.ptr;
    args_.q = q_.ptr;
    args_.src_center = scen_.ptr;
    args_.src_begin = sbeg_.ptr;
    args_.tgt = tgt_.ptr;
    args_.tgt_center = tcen_.ptr;
    args_.tgt_begin = tbeg_.ptr;
    args_.pair_begin = pbeg_.ptr;
    args_.pair_src = psrc_.ptr;
    args_.route = route_.ptr;
    args_.hermite_slot = hslot_.ptr;
    args_.taylor_slot = tslot_.ptr;
    args_.hermite_boxes = hboxes_.ptr;
    args_.taylor_boxes = tboxes_.ptr;
    args_.hermite_count = std::int32_t(hboxes.size());
    args_.taylor_count = std::int32_t(tboxes.size());
    args_.A = A_.ptr;
    args_.B = B_.ptr;
    args_.tiles = tiles_.ptr;
    args_.tile_count = std::int64_t(tiles.size()) / 3;
    args_.out = out_.ptr;
  }

  void execute(const double *q, double *out) override {
    cuda_check(cudaSetDevice(dev_), dev_, "cudaSetDevice");
    detail::uninit_vector<T> hq(static_cast<std::size_t>(n_)), hout(static_cast<std::size_t>(m_));
#pragma omp parallel for schedule(static) if (n_ > 100000)
    for (std::int64_t i = 0; i < n_; ++i)
      hq[i] = static_cast<T>(q[src_order_[i]]);
    q_.upload(hq.data(), n_);
    check_launch(launch_fgt(args_, stream_), dev_, "the FGT kernels");
    cuda_check(cudaStreamSynchronize(stream_), dev_, "the FGT kernels");
    out_.download(hout.data(), m_);
#pragma omp parallel for schedule(static) if (m_ > 100000)
    for (std::int64_t t = 0; t < m_; ++t)
      out[tgt_order_[t]] = double(hout[t]);
  }

private:
  int dev_ = 0;
  cudaStream_t stream_ = nullptr;
  std::int64_t n_ = 0, m_ = 0;
  detail::uninit_vector<std::int64_t> src_order_, tgt_order_;
  DeviceArray<T> src_, tgt_, q_, A_, B_, out_;
  DeviceArray<double> scen_, tcen_;
  DeviceArray<std::int64_t> sbeg_, tbeg_, pbeg_, psrc_, tiles_;
  DeviceArray<std::uint8_t> route_;
  DeviceArray<std::int32_t> hslot_, tslot_, hboxes_, tboxes_;
  GpuFgtArgs<T> args_;
};

template <class T> HermiteBench run_table(int p, std::int64_t n, std::int64_t clusters, int reps) {
  std::vector<double> tgt, ctr, coef;
  hermite_bench_data(2, p, n, clusters, tgt, ctr, coef);
  DeviceArray<T> dt, dc, dA, dout;
  put(dt, tgt);
  put(dc, ctr);
  put(dA, coef);
  dout.reserve(n);
  cudaEvent_t e0, e1;
  cuda_check(cudaEventCreate(&e0), 0, "cudaEventCreate");
  cuda_check(cudaEventCreate(&e1), 0, "cudaEventCreate");
  std::vector<double> times;
  for (int r = 0; r <= std::max(reps, 1); ++r) { // the first run warms up
    cudaEventRecord(e0);
    check_launch(launch_hermite_table<T>(p, dt.ptr, n, dc.ptr, dA.ptr, clusters, dout.ptr, nullptr),
                 0, "the Hermite table kernel");
    cudaEventRecord(e1);
    cuda_check(cudaEventSynchronize(e1), 0, "the Hermite table kernel");
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (r > 0)
      times.push_back(ms * 1e-3);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(times.begin(), times.end());
  std::vector<T> got(static_cast<std::size_t>(n));
  dout.download(got.data(), n);
  std::vector<std::int64_t> rows;
  for (std::int64_t s = 0; s < 64; ++s)
    rows.push_back(s * (n - 1) / 63);
  std::vector<double> ref(rows.size());
  hermite_eval_cpu(2, p, tgt, ctr, coef, rows, ref.data(), omp_get_max_threads());
  double l1 = 0, worst = 0;
  for (double c : coef)
    l1 += std::abs(c);
  for (std::size_t r = 0; r < rows.size(); ++r)
    worst = std::max(worst, std::abs(double(got[rows[r]]) - ref[r]) / l1);
  return {times[times.size() / 2], worst, hermite_flops(2, p)};
}

} // namespace

template <std::floating_point T> std::unique_ptr<FgtGpu<T>> make_fgt_gpu(int device) {
  return std::make_unique<FgtGpuImpl<T>>(device);
}

template std::unique_ptr<FgtGpu<float>> make_fgt_gpu<float>(int);
template std::unique_ptr<FgtGpu<double>> make_fgt_gpu<double>(int);

HermiteBench hermite_bench_gpu(int d, int p, std::int64_t n, std::int64_t clusters, int reps,
                               bool single) {
  if (d != 2)
    throw Error(ErrorCode::unsupported,
                fmt::format("the Hermite table kernel is 2D (seed 002's); got d = {}", d));
  if (n < 1 || clusters < 1)
    throw Error(ErrorCode::invalid_argument, "the Hermite benchmark needs n, clusters >= 1");
  return single ? run_table<float>(p, n, clusters, reps) : run_table<double>(p, n, clusters, reps);
}

} // namespace ksum::fgt
