#pragma once
// The GPU engine of the uniform-box FGT: the plan's boxes and routes are built on the CPU
// (fgt_cpu.cpp); the four interactions run on the GPU (fgt_gpu.cpp, cuda/fgt.cu).
#include "fgt/fgt_cpu.hpp"

#include <concepts>
#include <memory>

namespace ksum::fgt {

// A CUDA build with a visible GPU.
bool gpu_available();

template <std::floating_point T> class FgtGpu {
public:
  virtual ~FgtGpu() = default;
  // Uploads the plan's points, boxes and pairs (in precision T).
  virtual void set_plan(const FgtPlan &plan) = 0;
  // q in input source order, out in input target order (both double on the host).
  virtual void execute(const double *q, double *out) = 0;
};

// Throws Error(unsupported) in a build without CUDA.
template <std::floating_point T> std::unique_ptr<FgtGpu<T>> make_fgt_gpu(int device);

} // namespace ksum::fgt
