// The CPU and GPU workers of the summation stage (seed 003 §5.2); see workers.hpp.
#include "bem/workers.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <future>
#include <limits>

namespace ksum::bem {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace

template <class T>
Workers<T>::Workers(const Slices<T> &slices, std::int64_t j0, std::int64_t j1,
                    const TdbemOptions &options, int ng)
    : slices_(slices), j0_(j0), j1_(j1), ng_(ng), kernel_(options.kernel),
      balance_(options.balance) {
  if (ng < 1 || ng > 16)
    throw Error(ErrorCode::invalid_argument, fmt::format("ng = {}: must be 1 … 16", ng));
  // Workers: the GPUs asked for (or all, with backend automatic), and the CPU unless cuda only.
  if (options.backend != Backend::cpu && kernel_ != TdbemKernel::scalar) {
    const auto all = gpus();
    if (options.devices.empty()) {
      for (const auto &g : all)
        gpu_ids_.push_back(g.id);
    } else {
      for (int d : options.devices) {
        if (std::none_of(all.begin(), all.end(), [&](const GpuInfo &g) { return g.id == d; }))
          throw Error(ErrorCode::invalid_argument,
                      fmt::format("--devices: GPU {} is not visible ({} GPU(s))", d, all.size()));
        gpu_ids_.push_back(d);
      }
    }
    if (options.backend == Backend::cuda && gpu_ids_.empty())
      throw Error(ErrorCode::unsupported,
                  cuda_enabled() ? "backend cuda: no GPU is visible"
                                 : "backend cuda: this build has no CUDA (KSUM_USE_CUDA=OFF)");
  } else if (options.backend == Backend::cuda) {
    throw Error(ErrorCode::unsupported,
                "kernel scalar is the CPU reference; the GPU runs kernel full or contiguous");
  }
  cpu_worker_ = options.backend != Backend::cuda;
  const int gpus_n = static_cast<int>(gpu_ids_.size());
  cpu_threads_ = options.threads > 0 ? options.threads
                                     : std::max(1, max_threads() - (cpu_worker_ ? gpus_n : 0));

  const std::int64_t n = slices.n;
  prefix_.assign(static_cast<std::size_t>(j1 - j0) + 1, 0);
  switch (kernel_) {
  case TdbemKernel::scalar:
    for (std::int64_t j = j0; j < j1; ++j)
      prefix_[static_cast<std::size_t>(j - j0) + 1] =
          prefix_[static_cast<std::size_t>(j - j0)] + slice_nnz(slices, j, j + 1);
    blocks_ = slices.ptr[j1] - slices.ptr[j0];
    break;
  case TdbemKernel::contiguous: {
    br_ = options.block_rows > 0 ? options.block_rows : 128;
    contiguous_ = ContiguousBlocks<T>::build(slices, br_, options.block_cols, j0, j1);
    bc_ = contiguous_->bc;
    const std::int64_t per = contiguous_->nb * br_ * bc_;
    for (std::int64_t j = j0; j < j1; ++j)
      prefix_[static_cast<std::size_t>(j - j0) + 1] =
          prefix_[static_cast<std::size_t>(j - j0)] + per;
    blocks_ = contiguous_->blocks();
    break;
  }
  case TdbemKernel::full:
    choose_full_block(options);
    for (std::int64_t j = j0; j < j1; ++j)
      prefix_[static_cast<std::size_t>(j - j0) + 1] =
          full_->slice_ptr[static_cast<std::size_t>(j - j0) + 1] * br_ * bc_;
    blocks_ = full_->blocks();
    break;
  }
  stored_ = prefix_.back();
  (void)n;
  for (int id : gpu_ids_)
    gpus_.push_back(contiguous_ ? GpuSlices<T>(id, *contiguous_, ng_)
                                : GpuSlices<T>(id, *full_, ng_));
  const int workers = (cpu_worker_ ? 1 : 0) + gpus_n;
  balancer_ = std::make_unique<runtime::SliceBalancer>(j1 - j0, workers,
                                                       std::max(1, options.balance_iterations));
  seconds_.assign(static_cast<std::size_t>(workers), 0.0);
  flops_.assign(seconds_.size(), 0.0);
}

template <class T> Workers<T>::~Workers() = default;

// Full-Blocking needs a block size, and the best one depends on where the non-zeros fall (table 4):
// as the seed's E≈ column does, estimate the time of every candidate from a measured rate, here
// the CPU kernel timed on a sample of the actual slices, and keep the fastest.
template <class T> void Workers<T>::choose_full_block(const TdbemOptions &options) {
  const int dmax = std::max(1, slices_.dmax());
  std::vector<std::pair<int, int>> candidates;
  for (int br : {16, 32, 64, 128})
    for (int bc : {16, 32, 64, 128})
      if ((options.block_rows <= 0 || br == options.block_rows) &&
          (options.block_cols <= 0 || bc == options.block_cols) && bc >= dmax)
        candidates.emplace_back(br, bc);
  if (options.block_rows > 0 && options.block_cols > 0)
    candidates = {{options.block_rows, options.block_cols}};
  if (candidates.empty()) // only d_max above 128, or a fixed size that is too narrow
    candidates = {{options.block_rows > 0 ? options.block_rows : 32,
                   options.block_cols > 0 ? options.block_cols : dmax}};
  if (candidates.size() > 1) {
    const std::int64_t sample = std::min<std::int64_t>(j1_ - j0_, 24);
    const std::int64_t s0 = j0_ + (j1_ - j0_ - sample) / 2;
    History<T> past(slices_.n, slices_.kmax, ng_ - 1, 128);
    std::vector<T> s(static_cast<std::size_t>(ng_ * slices_.n));
    double best = std::numeric_limits<double>::infinity();
    std::pair<int, int> pick = candidates.front();
    for (auto [br, bc] : candidates) {
      const auto blocks = FullBlocks<T>::build(slices_, br, bc, s0, s0 + sample);
      const double t0 = now();
      sum_full_cpu(blocks, past, ng_, s0, s0 + sample, s.data(), 1);
      const double t = now() - t0;
      if (t < best) {
        best = t;
        pick = {br, bc};
      }
    }
    candidates = {pick};
  }
  br_ = candidates.front().first;
  bc_ = candidates.front().second;
  full_ = FullBlocks<T>::build(slices_, br_, bc_, j0_, j1_);
}

template <class T> void Workers<T>::push(std::span<const T> a) {
  for (auto &g : gpus_)
    g.push(a);
}

template <class T> void Workers<T>::sum(const History<T> &past, T *s) {
  const auto bounds = balancer_->bounds();
  const std::int64_t n = slices_.n;
  const std::size_t len = static_cast<std::size_t>(ng_) * n;
  const int nw = static_cast<int>(seconds_.size());
  std::vector<double> times(static_cast<std::size_t>(nw), 0.0);
  std::vector<std::vector<T>> part(gpus_.size());
  std::vector<std::future<void>> jobs;
  const int first_gpu = cpu_worker_ ? 1 : 0;
  for (std::size_t g = 0; g < gpus_.size(); ++g) {
    const int w = first_gpu + static_cast<int>(g);
    const std::int64_t a = j0_ + bounds[static_cast<std::size_t>(w)],
                       b = j0_ + bounds[static_cast<std::size_t>(w) + 1];
    jobs.push_back(std::async(std::launch::async, [&, g, w, a, b] {
      const double t0 = now();
      part[g].assign(len, T(0));
      if (b > a)
        gpus_[g].sum(ng_, a, b, part[g].data());
      times[static_cast<std::size_t>(w)] = now() - t0;
    }));
  }
  if (cpu_worker_) {
    const std::int64_t a = j0_ + bounds[0], b = j0_ + bounds[1];
    const double t0 = now();
    if (b > a) {
      if (kernel_ == TdbemKernel::scalar)
        sum_slices_scalar(slices_, past, ng_, a, b, s);
      else if (contiguous_)
        sum_contiguous_cpu(*contiguous_, past, ng_, a, b, s, cpu_threads_);
      else
        sum_full_cpu(*full_, past, ng_, a, b, s, cpu_threads_);
    }
    times[0] = now() - t0;
  }
  for (auto &j : jobs)
    j.get(); // rethrows a GPU worker's error
  for (const auto &p : part)
    for (std::size_t q = 0; q < len; ++q)
      s[q] += p[q];
  double total = 0;
  for (int w = 0; w < nw; ++w) {
    const auto a = bounds[static_cast<std::size_t>(w)], b = bounds[static_cast<std::size_t>(w) + 1];
    seconds_[static_cast<std::size_t>(w)] += times[static_cast<std::size_t>(w)];
    flops_[static_cast<std::size_t>(w)] +=
        2.0 * ng_ *
        static_cast<double>(prefix_[static_cast<std::size_t>(b)] -
                            prefix_[static_cast<std::size_t>(a)]);
    total += times[static_cast<std::size_t>(w)];
  }
  std::vector<double> pct(static_cast<std::size_t>(nw));
  std::vector<std::int64_t> counts(static_cast<std::size_t>(nw));
  for (int w = 0; w < nw; ++w) {
    pct[static_cast<std::size_t>(w)] =
        total > 0 ? 100 * times[static_cast<std::size_t>(w)] / total : 0;
    counts[static_cast<std::size_t>(w)] =
        bounds[static_cast<std::size_t>(w) + 1] - bounds[static_cast<std::size_t>(w)];
  }
  balance_percent_.push_back(std::move(pct));
  balance_slices_.push_back(std::move(counts));
  if (balance_ && nw > 1 && !balancer_->frozen())
    balancer_->report(times);
}

template <class T> void Workers<T>::fill_stats(TdbemStats &st) const {
  st.blocks = blocks_;
  st.block_rows = br_;
  st.block_cols = bc_;
  st.fill = stored_ > 0 ? static_cast<double>(slice_nnz(slices_, j0_, j1_)) / stored_ : 1;
  st.workers.clear();
  const auto counts = balancer_->counts();
  for (std::size_t w = 0; w < seconds_.size(); ++w) {
    TdbemWorkerStats ws;
    const bool cpu = cpu_worker_ && w == 0;
    ws.name = cpu ? fmt::format("cpu ({} threads)", cpu_threads_)
                  : fmt::format("gpu {}", gpu_ids_[w - (cpu_worker_ ? 1 : 0)]);
    ws.slices = counts[w];
    ws.seconds = seconds_[w];
    ws.gflops = seconds_[w] > 0 ? flops_[w] / seconds_[w] / 1e9 : 0;
    st.workers.push_back(std::move(ws));
  }
  st.balance_percent = balance_percent_;
  st.balance_slices = balance_slices_;
}

template class Workers<float>;
template class Workers<double>;

} // namespace ksum::bem
