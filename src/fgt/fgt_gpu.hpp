#pragma once
// The GPU engine of the uniform-box FGT: the plan's boxes and routes are built on the CPU
// (fgt_cpu.cpp); the four interactions run on the GPU (fgt_gpu.cpp, cuda/fgt.cu).
#include "fgt/fgt_cpu.hpp"
#include "fgt/fgt_launch.hpp"

#include <ksum/device.hpp>
#include <ksum/direct.hpp>

#include <concepts>
#include <memory>
#include <vector>

namespace ksum::fgt {

// A CUDA build with a visible GPU.
bool gpu_available();

// The fixed cost model counts CPU work; the GPU runs the direct sum and the FGT's kernels about
// this many times faster than the CPU's threads (H100 against 16 cores, measured on the direct
// sum).
inline constexpr double kGpuSpeedup = 50;

// Whether a plan on `backend` (resolved: cpu or cuda) with dimension d and order option `order`
// runs its FGT on the GPU (d ≤ 4, p ≤ 16; larger plans run on the CPU). It asks the build, not
// the device: a query of the device would wait for the CUDA driver's start, which the CLI
// overlaps with this host work; the plan checks the device when it makes its GPU engine.
inline bool runs_on_gpu(Backend backend, int d, int order) {
  return backend == Backend::cuda && d <= kGpuMaxDim && order <= kGpuMaxOrder && cuda_enabled();
}
// choose_fgt within the limits of the engine that will run it.
inline FgtGrid choose_fgt_for(const Extent &e, double eps, int order, bool on_gpu) {
  return on_gpu ? choose_fgt(e, eps, order, kGpuMaxOrder, kGpuMaxTerms) : choose_fgt(e, eps, order);
}

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

namespace ksum::fgt {

// Seed 002 tables 4–5: the Hermite evaluation alone. n targets uniform in a cube of side 4 (in
// units of h) against `clusters` tensor Hermite expansions of order p in d dimensions with random
// coefficients, every target against every cluster. Reports the evaluation time (median of reps;
// on the GPU by CUDA events, without transfers, as the seed times it) and the largest difference
// to a double-precision CPU evaluation of sampled targets, relative to Σ|A|.
struct HermiteBench {
  double seconds = 0;
  double max_error = 0;
  double flops_per_pair = 0; // flops of one target–cluster evaluation (an FMA counts 2)
};
// The benchmark's inputs (fixed seed): targets n × d and centres clusters × d point-major,
// coefficients p^d per cluster with magnitude 0.5^{|α|}/α! (those of a box of half-side 0.5).
void hermite_bench_data(int d, int p, std::int64_t n, std::int64_t clusters,
                        std::vector<double> &targets, std::vector<double> &centres,
                        std::vector<double> &coef);
// out[i] = Σ_c Σ_α A_cα h_α(y_i − s_c) in double on the CPU, for the listed targets.
void hermite_eval_cpu(int d, int p, const std::vector<double> &targets,
                      const std::vector<double> &centres, const std::vector<double> &coef,
                      const std::vector<std::int64_t> &rows, double *out, int threads);
// Flops of one target–cluster evaluation: the contraction's multiply-adds (2 each) and the
// recurrences per axis (3p − 2), exp not counted.
double hermite_flops(int d, int p);
HermiteBench hermite_bench_cpu(int d, int p, std::int64_t n, std::int64_t clusters, int threads,
                               int reps);
// single: float (the seed's precision), else double. Throws Error(unsupported) without CUDA.
HermiteBench hermite_bench_gpu(int d, int p, std::int64_t n, std::int64_t clusters, int reps,
                               bool single);

} // namespace ksum::fgt
