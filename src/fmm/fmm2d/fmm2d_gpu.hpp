#pragma once
// The GPU parts of the 2D FMM (seed 004 Paper IV §3.1, seed 002 §4.1): the near field (P2P) runs
// on the GPU while the CPU does the downward pass, and optionally the M2L translations of every
// level run on the GPU in seed 002's row traversal. No CUDA types here: a build without CUDA links
// fmm2d_gpu_none.cpp, whose factory throws.
#include "fmm/fmm2d/expansions2d.hpp"
#include "fmm/fmm2d/pyramid.hpp"

#include <cstdint>
#include <memory>

namespace ksum::fmm2d {

struct NearSpec {
  bool harmonic = true; // else the log kernel (real strengths)
  double core = 0;      // Gaussian core δ of the harmonic kernel; 0: none
};

template <class T> class Fmm2dGpu {
public:
  virtual ~Fmm2dGpu() = default;
  // Uploads the sorted points, leaf ranges and finest strong lists (once per set_points: call
  // with a new generation number) and the sorted strengths, and launches the P2P asynchronously.
  virtual void start_near(const Pyramid<T> &pyr, std::uint64_t generation, const cx<T> *q,
                          NearSpec spec) = 0;
  // Waits for the P2P, adds its result (sorted targets) to out; returns the GPU's seconds
  // (upload, kernel, download), measured with events.
  virtual double finish_near(cx<T> *out) = 0;
  // M2L of every level on the GPU: multipoles in (scaled, p per box, every box), locals out
  // (overwritten, p per box). Returns the kernel's seconds (events) and the transfer seconds.
  struct M2lTimes {
    double kernel = 0, upload = 0, download = 0;
  };
  virtual M2lTimes m2l(const Pyramid<T> &pyr, std::uint64_t generation, int p, const cx<T> *mult,
                       cx<T> *local) = 0;
};

// Throws Error(unsupported) in a build without CUDA or when no GPU is visible.
template <class T> std::unique_ptr<Fmm2dGpu<T>> make_fmm2d_gpu(int device);

// The seed 002 table 2–3 experiment: `translations` M2L translations of p terms (p ≤ 32) between
// random boxes, each target box receiving `per_target` of them; times the kernel with events
// (median of `repeat`), the reduction folded into the kernel. Returns kernel seconds, and writes
// the max relative difference to the CPU m2l() on a sample into *err.
struct M2lBenchResult {
  double kernel = 0, upload = 0, download = 0, max_rel_diff = 0;
};
template <class T>
M2lBenchResult m2l_gpu_benchmark(int p, std::int64_t translations, int per_target, int repeat,
                                 int device);

} // namespace ksum::fmm2d
