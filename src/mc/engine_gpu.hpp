#pragma once
// The GPU side of ksum::mc::Engine (engine.cpp dispatches to it): the particles resident on one
// device. engine_gpu.cpp + cuda/mc_energy.cu implement it; engine_gpu_none.cpp (builds without
// CUDA) reports that no GPU is available. No CUDA types leak into this header.
#include "mc/pair.hpp"

#include <ksum/mc.hpp>

#include <memory>

namespace ksum::mc::detail {

template <class T> class GpuEngine {
public:
  virtual ~GpuEngine() = default;
  // Uploads positions, charges, radii and the bond adjacency; the system is validated already.
  virtual void upload(const System &system) = 0;
  // Positions of the resident system into system.x/y/z (sizes already right).
  virtual void download(System &system) = 0;
  virtual Energy total() = 0;
  virtual Energy total_full_recompute(const System &system) = 0;
  // The move's positions are already wrapped into a periodic box.
  virtual Energy delta(const Move &move) = 0;
  virtual void apply(const Move &move) = 0;
  // movable: the particle indices (never empty); step: per-particle maximum step (size N) or empty
  // for params.max_step.
  virtual TranslateResult translate(const TranslateParams &params,
                                    const std::vector<std::int64_t> &movable) = 0;
};

bool gpu_available();
// Throws Error(unsupported) in builds without CUDA, Error(device) where the device fails.
template <class T>
std::unique_ptr<GpuEngine<T>> make_gpu_engine(const PairParams<T> &params, int device, int batch);

} // namespace ksum::mc::detail
