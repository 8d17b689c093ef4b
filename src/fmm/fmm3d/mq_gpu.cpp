// The multiquadric treecode's GPU host engine (mq_gpu.hpp): uploads once, then per apply() the
// weights up, the setup and eval kernels (cuda/mq_treecode.cu) on one stream, the results down.
#include "fmm/fmm3d/mq_gpu.hpp"
#include "fmm/fmm3d/mq_launch.hpp"
#include "fmm/series/multiquadric.hpp"
#include "runtime/cuda_array.hpp"

#include <chrono>
#include <cmath>

namespace ksum::fmm {
namespace {

using detail::cuda_check;
using detail::DeviceArray;

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class T> class MqGpuImpl final : public MqGpu {
public:
  MqGpuImpl(const Octree &t, const std::vector<char> &use, int terms, double c, int device)
      : dev_(device) {
    cuda_check(cudaSetDevice(dev_), dev_, "cudaSetDevice");
    cuda_check(cudaStreamCreate(&stream_), dev_, "cudaStreamCreate");
    n_ = t.points.rows();
    const std::size_t nb = t.boxes.size();
    // The boxes some pair expands, each with its slot of coefficients.
    std::vector<std::int32_t> slot(nb, -1);
    for (std::size_t k = 0; k < t.far.size(); ++k)
      if (use[k] && slot[static_cast<std::size_t>(t.far[k])] < 0) {
        slot[static_cast<std::size_t>(t.far[k])] = static_cast<std::int32_t>(expanded_.size());
        expanded_.push_back(t.far[k]);
      }
    std::vector<detail::MqBox<T>> boxes(nb);
    for (std::size_t b = 0; b < nb; ++b) {
      const auto &B = t.boxes[b];
      auto &g = boxes[b];
      for (int a = 0; a < 3; ++a)
        g.centre[a] = static_cast<T>(B.centre[a]);
      const double rho = std::sqrt(B.radius * B.radius + c * c);
      g.rho = static_cast<T>(rho > 0 ? rho : 1.0);
      g.begin = B.begin;
      g.end = B.end;
      g.parent = B.parent;
      g.slot = slot[b];
    }
    std::vector<T> pts(static_cast<std::size_t>(3 * n_));
    for (int a = 0; a < 3; ++a)
      for (std::int64_t i = 0; i < n_; ++i)
        pts[static_cast<std::size_t>(a * n_ + i)] = static_cast<T>(t.points(i, a));
    std::vector<std::uint8_t> use8(use.begin(), use.end());
    boxes_.upload(boxes.data(), static_cast<std::int64_t>(nb));
    points_.upload(pts.data(), static_cast<std::int64_t>(pts.size()));
    far_offsets_.upload(t.far_offsets.data(), static_cast<std::int64_t>(t.far_offsets.size()));
    near_offsets_.upload(t.near_offsets.data(), static_cast<std::int64_t>(t.near_offsets.size()));
    far_.upload(t.far.data(), static_cast<std::int64_t>(t.far.size()));
    near_.upload(t.near.data(), static_cast<std::int64_t>(t.near.size()));
    use_.upload(use8.data(), static_cast<std::int64_t>(use8.size()));
    leaves_.upload(t.leaves.data(), static_cast<std::int64_t>(t.leaves.size()));
    list_.upload(expanded_.data(), static_cast<std::int64_t>(expanded_.size()));
    ncoef_ = mq_offset(terms);
    coef_.reserve(static_cast<std::int64_t>(expanded_.size()) * ncoef_, dev_);
    ws_.reserve(n_, dev_);
    us_.reserve(n_, dev_);
    tree_ = detail::MqTree<T>{.boxes = boxes_.ptr,
                              .points = points_.ptr,
                              .n = n_,
                              .ws = ws_.ptr,
                              .coef = coef_.ptr,
                              .ncoef = ncoef_,
                              .terms = terms,
                              .c2 = static_cast<T>(c * c),
                              .far_offsets = far_offsets_.ptr,
                              .near_offsets = near_offsets_.ptr,
                              .far = far_.ptr,
                              .near = near_.ptr,
                              .use_series = use_.ptr};
  }
  ~MqGpuImpl() override {
    cudaSetDevice(dev_);
    cudaStreamDestroy(stream_);
  }

  void apply(const std::vector<double> &ws, std::vector<double> &us, double &setup_s,
             double &eval_s) override {
    cuda_check(cudaSetDevice(dev_), dev_, "cudaSetDevice");
    const auto t0 = std::chrono::steady_clock::now();
    host_.assign(ws.begin(), ws.end());
    ws_.upload(host_.data(), n_);
    detail::launch_mq_setup(tree_, list_.ptr, static_cast<std::int64_t>(expanded_.size()), stream_);
    cuda_check(cudaStreamSynchronize(stream_), dev_, "the treecode's setup");
    setup_s = since(t0);
    const auto t1 = std::chrono::steady_clock::now();
    detail::launch_mq_eval(tree_, leaves_.ptr, leaves_.size, us_.ptr, stream_);
    cuda_check(cudaStreamSynchronize(stream_), dev_, "the treecode's eval");
    us_.download(host_.data(), n_);
    us.assign(host_.begin(), host_.end());
    eval_s = since(t1);
  }

private:
  int dev_;
  cudaStream_t stream_ = nullptr;
  std::int64_t n_ = 0, ncoef_ = 0;
  std::vector<std::int32_t> expanded_;
  std::vector<T> host_;
  DeviceArray<detail::MqBox<T>> boxes_;
  DeviceArray<T> points_, ws_, us_, coef_;
  DeviceArray<std::int64_t> far_offsets_, near_offsets_;
  DeviceArray<std::int32_t> far_, near_, leaves_, list_;
  DeviceArray<std::uint8_t> use_;
  detail::MqTree<T> tree_;
};

} // namespace

std::unique_ptr<MqGpu> make_mq_gpu(const Octree &tree, const std::vector<char> &use_series,
                                   int terms, double c, bool single, int device) {
  if (single)
    return std::make_unique<MqGpuImpl<float>>(tree, use_series, terms, c, device);
  return std::make_unique<MqGpuImpl<double>>(tree, use_series, terms, c, device);
}

} // namespace ksum::fmm
