#pragma once
// The multiquadric treecode on the GPU (mq_treecode.hpp): the octree, its lists and the per-pair
// choice are uploaded once; apply() runs the setup and the eval on the GPU in float or double.
// No CUDA types here: a build without CUDA links fmm_gpu_none.cpp, whose factory throws.
#include "fmm/fmm3d/octree.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace ksum::fmm {

class MqGpu {
public:
  virtual ~MqGpu() = default;
  // ws: weights in the tree's sorted order; us: the results there (overwritten). Seconds of the
  // setup (weights up, expansions) and of the eval (the sums, results down).
  virtual void apply(const std::vector<double> &ws, std::vector<double> &us, double &setup_s,
                     double &eval_s) = 0;
};

// Throws Error(unsupported) in a build without CUDA or with no GPU, Error(device) when the GPU
// fails or runs out of memory (the message names the GPU and the size).
// use_series: per far pair the series terms it uses (0: summed directly).
std::unique_ptr<MqGpu> make_mq_gpu(const Octree &tree, const std::vector<char> &use_series,
                                   int terms, double c, bool single, int device);

} // namespace ksum::fmm
