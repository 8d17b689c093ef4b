#pragma once
// The summation stage on one node (seed 003 §5.2, figure 10): one CPU worker (the cores not
// driving a GPU) and one worker per GPU, each computing a contiguous interval of this rank's
// slices with its kernel, the intervals moved after every call by the dynamic balancing of
// figure 11 (runtime/slice_balancer) from the measured times.
#include "bem/blocking.hpp"
#include "bem/blocking_cuda.hpp"
#include "runtime/slice_balancer.hpp"

#include <ksum/tdbem.hpp>

#include <memory>
#include <optional>
#include <vector>

namespace ksum::bem {

template <class T> class Workers {
public:
  // slices [j0, j1) of `slices` (kept by reference: it must outlive the workers).
  Workers(const Slices<T> &slices, std::int64_t j0, std::int64_t j1, const TdbemOptions &options,
          int ng);
  ~Workers();

  // The padding every history given to sum() must have.
  std::int32_t lead() const { return ng_ - 1; }
  std::int32_t tail() const { return std::max(bc_, 1); }

  // s (ng·n values) += the terms of slices [j0, j1) with the past values `past`.
  void sum(const History<T> &past, T *s);
  // a^n to the GPU workers' history mirrors (the CPU worker reads `past` itself).
  void push(std::span<const T> a);

  int block_rows() const { return br_; }
  int block_cols() const { return bc_; }
  std::int64_t blocks() const { return blocks_; }
  std::int64_t stored_values() const { return stored_; }
  void fill_stats(TdbemStats &stats) const;

private:
  void choose_full_block(const TdbemOptions &options);
  const Slices<T> &slices_;
  std::int64_t j0_, j1_;
  int ng_, br_ = 0, bc_ = 0, cpu_threads_ = 0;
  TdbemKernel kernel_;
  bool cpu_worker_ = true, balance_ = true;
  std::optional<FullBlocks<T>> full_;
  std::optional<ContiguousBlocks<T>> contiguous_;
  std::vector<GpuSlices<T>> gpus_;
  std::vector<int> gpu_ids_;
  std::unique_ptr<runtime::SliceBalancer> balancer_;
  std::vector<double> seconds_, flops_;
  std::vector<std::vector<double>> balance_percent_;
  std::vector<std::vector<std::int64_t>> balance_slices_;
  std::vector<std::int64_t> prefix_; // stored values before slice j (for flop counts)
  std::int64_t blocks_ = 0, stored_ = 0;
};

} // namespace ksum::bem
