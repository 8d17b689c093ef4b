// Host side of the GPU PUM evaluation: the patch arrays go to the device once, per evaluate() the
// points go up and the values come back.
#include "rbf/pum/pum_gpu.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <vector>

namespace ksum::detail {
namespace {

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw Error(ErrorCode::device,
                fmt::format("PUM GPU evaluation: {} failed: {}", what, cudaGetErrorString(e)));
}

// A device copy of a host array, freed with the engine.
class Buffer {
public:
  Buffer() = default;
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() {
    if (ptr_)
      cudaFree(ptr_);
  }
  template <class T> T *upload(const T *host, std::int64_t count) {
    reserve(count * static_cast<std::int64_t>(sizeof(T)));
    if (count > 0)
      check(cudaMemcpy(ptr_, host, count * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
    return static_cast<T *>(ptr_);
  }
  void reserve(std::int64_t bytes) {
    if (bytes <= bytes_)
      return;
    if (ptr_)
      cudaFree(ptr_);
    ptr_ = nullptr;
    check(cudaMalloc(&ptr_, static_cast<std::size_t>(std::max<std::int64_t>(bytes, 8))),
          "cudaMalloc");
    bytes_ = bytes;
  }
  void *get() const { return ptr_; }

private:
  void *ptr_ = nullptr;
  std::int64_t bytes_ = 0;
};

class PumGpuImpl final : public PumGpu {
public:
  explicit PumGpuImpl(const PumGeometry &g) {
    a_.kernel = g.kernel;
    a_.s = g.s;
    a_.ncols = g.ncols;
    a_.n = g.n;
    for (std::int64_t k = 0; k < g.s; ++k) {
      a_.d[k] = g.cells_per_axis[k];
      a_.lo[k] = g.lo[k];
      a_.hi[k] = g.hi[k];
    }
    a_.delta = g.delta;
    a_.base_ring = g.base_ring;
    a_.radius = radius_.upload(g.radius, g.ncells);
    a_.scale = scale_.upload(g.scale, g.ncells);
    a_.begin = begin_.upload(g.begin, g.ncells);
    a_.end = end_.upload(g.end, g.ncells);
    a_.coef_at = coef_at_.upload(g.coef_at, g.ncells);
    a_.centres = centres_.upload(g.centres, g.ncells * g.s);
    a_.pidx = pidx_.upload(g.pidx, g.npidx);
    a_.coef = coef_.upload(g.coef, g.ncoef);
    a_.pts = pts_.upload(g.pts, g.n * g.s);
    a_.grown = grown_.upload(g.grown, g.ngrown);
    a_.ngrown = g.ngrown;
    flag_.reserve(sizeof(int));
    a_.needs_cpu = static_cast<int *>(flag_.get());
  }

  bool evaluate(const double *y, std::int64_t m, double *out) override {
    a_.m = m;
    a_.y = y_.upload(y, m * a_.s);
    out_.reserve(m * a_.ncols * static_cast<std::int64_t>(sizeof(double)));
    a_.out = static_cast<double *>(out_.get());
    check(cudaMemset(a_.needs_cpu, 0, sizeof(int)), "cudaMemset");
    launch_pum_eval(a_, nullptr);
    int needs_cpu = 0;
    check(cudaMemcpy(&needs_cpu, a_.needs_cpu, sizeof(int), cudaMemcpyDeviceToHost),
          "PUM evaluation kernel");
    if (needs_cpu)
      return false;
    if (m > 0)
      check(cudaMemcpy(out, a_.out, m * a_.ncols * sizeof(double), cudaMemcpyDeviceToHost),
            "cudaMemcpy of the results");
    return true;
  }

private:
  PumEvalArgs a_;
  Buffer radius_, scale_, begin_, end_, coef_at_, centres_, pidx_, coef_, pts_, grown_, flag_, y_,
      out_;
};

} // namespace

std::unique_ptr<PumGpu> make_pum_gpu(const PumGeometry &g) {
  if (gpus().empty())
    throw Error(ErrorCode::unsupported, "PUM on the GPU: no CUDA GPU is visible");
  if (g.s != 2 && g.s != 3)
    throw Error(ErrorCode::unsupported,
                fmt::format("PUM evaluation on the GPU handles dimension 2 and 3, got {}", g.s));
  if (g.ncols > pum_gpu_max_cols)
    throw Error(ErrorCode::unsupported,
                fmt::format("PUM evaluation on the GPU handles up to {} value columns, got {}",
                            pum_gpu_max_cols, g.ncols));
  return std::make_unique<PumGpuImpl>(g);
}

} // namespace ksum::detail
