// Host side of the GPU direct sum. Targets are split evenly over the devices (one host thread
// each). On each device the sources and its targets stay resident between executions when they fit
// in the memory budget; otherwise targets and sources are streamed in chunks, the output of a
// target chunk accumulating over the source chunks.
#include "direct/direct_launch.hpp"
#include "direct/direct_problem.hpp"
#include "runtime/cuda_array.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>

#include <algorithm>
#include <cuda_runtime.h>
#include <exception>
#include <fmt/format.h>
#include <thread>

namespace ksum::detail {
namespace {

void check(cudaError_t e, int dev, const char *what) {
  cuda_check(e, dev, what);
}

// Copies `rows` rows of `cols` columns between column-major arrays with leading dimensions dst_ld
// and src_ld, one contiguous column at a time (cudaMemcpy2D's pitch is limited to 2^31 bytes,
// which N > 2.7e8 doubles exceed).
template <class T>
void copy_block(T *dst, std::int64_t dst_ld, const T *src, std::int64_t src_ld, std::int64_t rows,
                std::int64_t cols, cudaMemcpyKind kind, cudaStream_t s, int dev) {
  for (std::int64_t c = 0; c < cols && rows > 0; ++c)
    check(cudaMemcpyAsync(dst + c * dst_ld, src + c * src_ld, rows * sizeof(T), kind, s), dev,
          "cudaMemcpyAsync");
}

// All right-hand sides of one block of sources against one block of targets, tile_max_rhs per
// launch; pointers are device memory with the given leading dimensions.
template <class T>
void launch_all_rhs(const DirectProblem<T> &p, const T *src, std::int64_t n, std::int64_t src_ld,
                    const T *w, std::int64_t w_ld, const T *tgt, std::int64_t m,
                    std::int64_t tgt_ld, T *out, std::int64_t out_ld, bool accumulate,
                    std::int64_t self_offset, cudaStream_t stream) {
  const std::int64_t cpr = p.cols_per_rhs();
  for (std::int64_t r0 = 0; r0 < p.nrhs; r0 += tile_max_rhs) {
    TileArgs<T> a;
    a.src = src;
    a.n = n;
    a.src_ld = src_ld;
    a.w = w + r0 * w_ld;
    a.w_ld = w_ld;
    a.tgt = tgt;
    a.m = m;
    a.tgt_ld = tgt_ld;
    a.out = out + r0 * cpr * out_ld;
    a.out_ld = out_ld;
    a.d = static_cast<int>(p.d);
    a.nrhs = static_cast<int>(std::min<std::int64_t>(tile_max_rhs, p.nrhs - r0));
    a.gradient = p.gradient;
    a.accumulate = accumulate;
    a.self = p.self;
    a.self_offset = self_offset;
    a.grad_scale = p.grad_scale;
    launch_direct_tiles<T>(p.kernel, a, stream);
  }
}

template <class T> class CudaDirectImpl final : public CudaDirect<T> {
public:
  CudaDirectImpl(std::vector<int> ids, std::int64_t limit) {
    for (int id : ids) {
      // Entries that share a GPU (devices = {0, 0}) share its memory budget.
      const auto sharing = std::count(ids.begin(), ids.end(), id);
      auto d = std::make_unique<Device>();
      d->id = id;
      check(cudaSetDevice(id), id, "cudaSetDevice");
      check(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking), id, "cudaStreamCreate");
      std::size_t free_b = 0, total_b = 0;
      check(cudaMemGetInfo(&free_b, &total_b), id, "cudaMemGetInfo");
      d->budget =
          (limit > 0 ? limit : static_cast<std::int64_t>(0.9 * static_cast<double>(free_b))) /
          sharing;
      devs_.push_back(std::move(d));
    }
  }
  ~CudaDirectImpl() override {
    for (auto &d : devs_) {
      cudaSetDevice(d->id);
      d->src.release();
      d->tgt.release();
      d->w.release();
      d->out.release();
      cudaStreamDestroy(d->stream);
    }
  }

  void set_geometry(const DirectProblem<T> &p) override {
    ++generation_;
    const auto nd = static_cast<std::int64_t>(devs_.size());
    for (std::int64_t g = 0; g < nd; ++g) {
      auto &d = *devs_[g];
      d.t0 = p.m * g / nd;
      d.t1 = p.m * (g + 1) / nd;
    }
    // Upload now what will stay resident, so execute() moves only weights and results.
    run_all([&](Device &d) {
      d.resident_generation = -1;
      plan_chunks(d, p, 1, p.cols_per_rhs());
      upload_resident(d, p);
    });
  }

  void execute(const DirectProblem<T> &p, T *out, const Progress &progress) override {
    run_all(
        [&](Device &d) { run_device(d, p, out, &d == devs_.front().get() ? progress : nullptr); });
    if (progress)
      progress(1.0);
  }

private:
  struct Device {
    int id = 0;
    cudaStream_t stream = nullptr;
    std::int64_t budget = 0, t0 = 0, t1 = 0;
    std::int64_t tchunk = 0, schunk = 0;
    DeviceArray<T> src, tgt, w, out;
    std::int64_t resident_generation =
        -1; // geometry generation whose coordinates are on the device
  };

  template <class F> void run_all(F &&f) {
    std::vector<std::exception_ptr> errors(devs_.size());
    std::vector<std::thread> workers;
    for (std::size_t g = 1; g < devs_.size(); ++g)
      workers.emplace_back([&, g] {
        try {
          check(cudaSetDevice(devs_[g]->id), devs_[g]->id, "cudaSetDevice");
          f(*devs_[g]);
        } catch (...) {
          errors[g] = std::current_exception();
        }
      });
    try {
      check(cudaSetDevice(devs_[0]->id), devs_[0]->id, "cudaSetDevice");
      f(*devs_[0]);
    } catch (...) {
      errors[0] = std::current_exception();
    }
    for (auto &w : workers)
      w.join();
    for (auto &e : errors)
      if (e)
        std::rethrow_exception(e);
  }

  // Chunk sizes for this device's share under its budget: everything at once when it fits.
  void plan_chunks(Device &d, const DirectProblem<T> &p, std::int64_t nrhs, std::int64_t ncols) {
    const std::int64_t mg = d.t1 - d.t0, sz = sizeof(T);
    const std::int64_t per_target = (p.d + ncols) * sz, per_source = (p.d + nrhs) * sz;
    if (per_target + per_source > d.budget)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("GPU {}: device memory limit of {} bytes cannot hold one target "
                              "and one source ({} bytes)",
                              d.id, d.budget, per_target + per_source));
    if (mg * per_target + p.n * per_source <= d.budget) {
      d.tchunk = std::max<std::int64_t>(mg, 1);
      d.schunk = std::max<std::int64_t>(p.n, 1);
      return;
    }
    d.tchunk =
        std::clamp<std::int64_t>(d.budget / 2 / per_target, 1, std::max<std::int64_t>(mg, 1));
    d.schunk = std::clamp<std::int64_t>((d.budget - d.tchunk * per_target) / per_source, 1,
                                        std::max<std::int64_t>(p.n, 1));
  }

  bool single_chunk(const Device &d, const DirectProblem<T> &p) const {
    return d.tchunk >= d.t1 - d.t0 && d.schunk >= p.n;
  }

  void upload_resident(Device &d, const DirectProblem<T> &p) {
    if (!single_chunk(d, p))
      return;
    const std::int64_t mg = d.t1 - d.t0;
    d.src.reserve(d.schunk * p.d, d.id);
    copy_block(d.src.ptr, d.schunk, p.src, p.n, p.n, p.d, cudaMemcpyHostToDevice, d.stream, d.id);
    if (!p.self) {
      d.tgt.reserve(d.tchunk * p.d, d.id);
      copy_block(d.tgt.ptr, d.tchunk, p.tgt + d.t0, p.m, mg, p.d, cudaMemcpyHostToDevice, d.stream,
                 d.id);
    }
    check(cudaStreamSynchronize(d.stream), d.id, "upload of the points");
    d.resident_generation = generation_;
  }

  void run_device(Device &d, const DirectProblem<T> &p, T *out, const Progress &progress) {
    const std::int64_t mg = d.t1 - d.t0, ncols = p.out_cols();
    if (mg == 0)
      return;
    plan_chunks(d, p, p.nrhs, ncols);
    const bool resident = single_chunk(d, p) && d.resident_generation == generation_;
    if (!resident) {
      // The chunks below overwrite the device arrays: they no longer hold the resident geometry,
      // and what they held beyond this plan's chunk sizes is freed to stay within the budget.
      d.resident_generation = -1;
      d.src.shrink_to(d.schunk * p.d);
      d.tgt.shrink_to(d.tchunk * p.d);
    }
    d.w.shrink_to(d.schunk * p.nrhs);
    d.out.shrink_to(d.tchunk * ncols);
    d.src.reserve(d.schunk * p.d, d.id);
    d.w.reserve(d.schunk * p.nrhs, d.id);
    d.out.reserve(d.tchunk * ncols, d.id);
    if (!p.self || !resident)
      d.tgt.reserve(d.tchunk * p.d, d.id);
    const std::int64_t ntc = (mg + d.tchunk - 1) / d.tchunk;
    for (std::int64_t tc = 0; tc < ntc; ++tc) {
      const std::int64_t i0 = d.t0 + tc * d.tchunk, mi = std::min(d.tchunk, d.t1 - i0);
      // With targets = sources and everything resident, the targets are the device's sources.
      const T *tgt_dev = d.tgt.ptr;
      std::int64_t tgt_ld = d.tchunk;
      if (resident && p.self) {
        tgt_dev = d.src.ptr + i0;
        tgt_ld = d.schunk;
      } else if (!resident) {
        copy_block(d.tgt.ptr, d.tchunk, p.tgt + i0, p.m, mi, p.d, cudaMemcpyHostToDevice, d.stream,
                   d.id);
      }
      for (std::int64_t j0 = 0; j0 < p.n; j0 += d.schunk) {
        const std::int64_t nj = std::min(d.schunk, p.n - j0);
        if (!resident)
          copy_block(d.src.ptr, d.schunk, p.src + j0, p.n, nj, p.d, cudaMemcpyHostToDevice,
                     d.stream, d.id);
        copy_block(d.w.ptr, d.schunk, p.w + j0, p.n, nj, p.nrhs, cudaMemcpyHostToDevice, d.stream,
                   d.id);
        launch_all_rhs(p, d.src.ptr, nj, d.schunk, d.w.ptr, d.schunk, tgt_dev, mi, tgt_ld,
                       d.out.ptr, d.tchunk, j0 > 0, i0 - j0, d.stream);
      }
      copy_block(out + i0, p.m, d.out.ptr, d.tchunk, mi, ncols, cudaMemcpyDeviceToHost, d.stream,
                 d.id);
      check(cudaStreamSynchronize(d.stream), d.id, "direct sum");
      if (progress)
        progress(static_cast<double>(tc + 1) / static_cast<double>(ntc));
    }
  }

  std::int64_t generation_ = 0;
  std::vector<std::unique_ptr<Device>> devs_;
};

} // namespace

template <class T>
std::unique_ptr<CudaDirect<T>> make_cuda_direct(const std::vector<int> &devices,
                                                std::int64_t memory_limit) {
  const int visible = gpu_count(); // no context is started on GPUs the sum does not use
  if (visible == 0)
    throw Error(ErrorCode::unsupported, "backend gpu: no CUDA GPU is visible");
  std::vector<int> ids = devices;
  if (ids.empty())
    for (int id = 0; id < visible; ++id)
      ids.push_back(id);
  for (int id : ids)
    if (id < 0 || id >= visible)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("GPU {} does not exist ({} visible)", id, visible));
  return std::make_unique<CudaDirectImpl<T>>(ids, memory_limit);
}

template std::unique_ptr<CudaDirect<float>> make_cuda_direct<float>(const std::vector<int> &,
                                                                    std::int64_t);
template std::unique_ptr<CudaDirect<double>> make_cuda_direct<double>(const std::vector<int> &,
                                                                      std::int64_t);

template <class T> void device_direct(const DirectProblem<T> &p, T *out, int device) {
  // The caller's current device is theirs (PyTorch and CuPy allocate on it): put it back.
  int previous = 0;
  check(cudaGetDevice(&previous), device, "cudaGetDevice");
  struct RestoreDevice {
    int id;
    ~RestoreDevice() { cudaSetDevice(id); }
  } restore{previous};
  check(cudaSetDevice(device), device, "cudaSetDevice");
  if (p.m == 0)
    return;
  if (p.n == 0) // no sources: zeros
    check(cudaMemsetAsync(out, 0, p.m * p.out_cols() * sizeof(T), nullptr), device, "cudaMemset");
  else
    launch_all_rhs(p, p.src, p.n, p.n, p.w, p.n, p.tgt, p.m, p.m, out, p.m, false, 0,
                   cudaStream_t{nullptr});
  check(cudaStreamSynchronize(nullptr), device, "direct sum on device arrays");
}

template void device_direct<float>(const DirectProblem<float> &, float *, int);
template void device_direct<double>(const DirectProblem<double> &, double *, int);

} // namespace ksum::detail
