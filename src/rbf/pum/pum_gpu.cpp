// Host side of the GPU PUM: the index and the fits (pum_gpu_fit), the device copy of a fit made
// on the CPU (make_pum_gpu), and evaluation in chunks of points sorted by cell.
#include "rbf/pum/pum_gpu.hpp"
#include "runtime/cuda_array.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <fmt/format.h>
#include <vector>

#include "kernels/kernel_defs.hpp"

namespace ksum::detail {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void sync(const char *what) {
  cuda_check(cudaDeviceSynchronize(), 0, what);
}

int key_bits(std::int64_t ncells) {
  int bits = 1;
  while (bits < 32 && (std::int64_t{1} << bits) < ncells)
    ++bits;
  return bits;
}

class Engine final : public PumGpuFit {
public:
  Engine(const PumGrid &g, Kernel kernel, int ncols) : grid_(g), kernel_(kernel), ncols_(ncols) {}

  // Uploads a fit made on the CPU.
  void adopt(const PumHostPacked &h) {
    counts_ = h.cnt;
    eps_ = h.eps;
    radius_h_ = h.radius;
    reg_ = h.regularised;
    total_ = static_cast<std::int64_t>(h.px.size()) / grid_.s;
    off_.upload(h.off.data(), grid_.ncells);
    cnt_.upload(h.cnt.data(), grid_.ncells);
    radius_.upload(h.radius.data(), grid_.ncells);
    scale_.upload(h.scale.data(), grid_.ncells);
    px_.upload(h.px.data(), static_cast<std::int64_t>(h.px.size()));
    coef_.upload(h.coef.data(), static_cast<std::int64_t>(h.coef.size()));
    grown_.upload(h.grown.data(), static_cast<std::int64_t>(h.grown.size()));
    ngrown_ = static_cast<std::int64_t>(h.grown.size());
  }

  // Seed 001 §4.1 on the GPU, then the local fits. Returns false to decline (see pum_gpu_fit).
  bool fit(const Table<double> &pts, const Table<double> &vals, const PumOptions &st,
           std::int64_t min_pts);

  bool evaluate(const double *y, std::int64_t m, double *out) override;

  PumHostPacked download() const override {
    PumHostPacked h;
    h.kernel = kernel_;
    h.grid = grid_;
    h.ncols = ncols_;
    h.cnt = counts_;
    h.eps = eps_;
    h.regularised = reg_;
    h.off.resize(grid_.ncells);
    off_.download(h.off.data(), grid_.ncells);
    h.radius.resize(grid_.ncells);
    radius_.download(h.radius.data(), grid_.ncells);
    h.scale.resize(grid_.ncells);
    scale_.download(h.scale.data(), grid_.ncells);
    h.px.resize(total_ * grid_.s);
    px_.download(h.px.data(), total_ * grid_.s);
    h.coef.resize(total_ * ncols_);
    coef_.download(h.coef.data(), total_ * ncols_);
    h.grown.resize(ngrown_);
    grown_.download(h.grown.data(), ngrown_);
    return h;
  }
  const std::vector<int> &counts() const override { return counts_; }
  const std::vector<double> &eps() const override { return eps_; }
  const std::vector<int> &regularised() const override { return reg_; }
  const std::vector<double> &radius() const override { return radius_h_; }

private:
  PumPacked packed() const {
    PumPacked p;
    p.kernel = kernel_;
    p.ncols = ncols_;
    p.total = total_;
    p.off = off_.ptr;
    p.cnt = cnt_.ptr;
    p.radius = radius_.ptr;
    p.scale = scale_.ptr;
    p.px = px_.ptr;
    p.coef = coef_.ptr;
    p.grown = grown_.ptr;
    p.ngrown = ngrown_;
    return p;
  }
  // Sorts n points (device, column-major) by cell: order_b_ holds them in cell order.
  void sort_by_cell(const double *pts, std::int64_t n) {
    keys_a_.reserve(n);
    keys_b_.reserve(n);
    order_a_.reserve(n);
    order_b_.reserve(n);
    launch_pum_hash(grid_, pts, n, keys_a_.ptr, order_a_.ptr, nullptr);
    const int bits = key_bits(grid_.ncells);
    const std::size_t bytes = pum_sort_pairs(nullptr, 0, keys_a_.ptr, keys_b_.ptr, order_a_.ptr,
                                             order_b_.ptr, n, bits, nullptr);
    temp_.reserve(static_cast<std::int64_t>(bytes));
    pum_sort_pairs(temp_.ptr, bytes, keys_a_.ptr, keys_b_.ptr, order_a_.ptr, order_b_.ptr, n, bits,
                   nullptr);
  }

  PumGrid grid_;
  Kernel kernel_;
  int ncols_;
  std::int64_t total_ = 0, ngrown_ = 0;
  std::vector<int> counts_, reg_;
  std::vector<double> eps_, radius_h_;
  DeviceArray<std::int64_t> off_;
  DeviceArray<int> cnt_, grown_;
  DeviceArray<double> radius_, scale_, px_, coef_;
  // scratch
  DeviceArray<unsigned> keys_a_, keys_b_;
  DeviceArray<int> order_a_, order_b_, flag_;
  DeviceArray<char> temp_;
  DeviceArray<double> y_, out_;
};

bool Engine::fit(const Table<double> &pts, const Table<double> &vals, const PumOptions &st,
                 std::int64_t min_pts) {
  const auto t0 = Clock::now();
  const std::int64_t n = pts.rows(), s = grid_.s, ncells = grid_.ncells;
  if (n >= INT_MAX / 2 || ncells >= (std::int64_t{1} << 32) - 1) {
    return false;
  }
  {
    DeviceArray<double> pin, vin, ps, vs;
    DeviceArray<std::int64_t> cell_ptr;
    pin.upload(pts.data(), n * s);
    vin.upload(vals.data(), n * ncols_);
    sort_by_cell(pin.ptr, n);
    keys_a_.release();
    order_a_.release();
    cell_ptr.reserve(ncells + 1);
    launch_pum_cell_ptr(keys_b_.ptr, n, ncells, cell_ptr.ptr, nullptr);
    ps.reserve(n * s);
    vs.reserve(n * ncols_);
    launch_pum_gather(pin.ptr, n, static_cast<int>(s), order_b_.ptr, ps.ptr, nullptr);
    launch_pum_gather(vin.ptr, n, ncols_, order_b_.ptr, vs.ptr, nullptr);
    pin.release();
    vin.release();
    flag_.reserve(1);
    cuda_check(cudaMemset(flag_.ptr, 0, sizeof(int)), flag_.dev, "cudaMemset");
    launch_pum_duplicates(grid_, ps.ptr, n, cell_ptr.ptr, flag_.ptr, nullptr);
    int dup = 0;
    flag_.download(&dup, 1);
    if (dup) {
      return false;
    }
    cnt_.reserve(ncells);
    radius_.reserve(ncells);
    launch_pum_count(grid_, ps.ptr, n, cell_ptr.ptr, min_pts, cnt_.ptr, radius_.ptr, nullptr);
    counts_.resize(ncells);
    cnt_.download(counts_.data(), ncells);
    std::vector<std::int64_t> off(ncells);
    std::int64_t largest = 0;
    total_ = 0;
    for (std::int64_t c = 0; c < ncells; ++c) {
      off[c] = total_;
      total_ += counts_[c];
      largest = std::max<std::int64_t>(largest, counts_[c]);
    }
    int dev = 0, limit = 0;
    cuda_check(cudaGetDevice(&dev), 0, "cudaGetDevice");
    cuda_check(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), dev,
               "cudaDeviceGetAttribute");
    if (pum_fit_smem_bytes(largest, static_cast<int>(s), ncols_, st.loocv, false) >
        static_cast<std::size_t>(limit)) {
      return false;
    }
    off_.upload(off.data(), ncells);
    px_.reserve(total_ * s);
    DeviceArray<double> pv;
    pv.reserve(total_ * ncols_);
    launch_pum_fill(grid_, ps.ptr, vs.ptr, n, ncols_, cell_ptr.ptr, off_.ptr, radius_.ptr, total_,
                    px_.ptr, pv.ptr, nullptr);
    sync("PUM GPU index");
    seconds_index = since(t0);
    const auto t1 = Clock::now();

    // The fits: patches grouped by size (32-point classes) so that each launch sizes its shared
    // memory and block for its largest patch.
    coef_.reserve(total_ * ncols_);
    DeviceArray<double> eps_d;
    DeviceArray<int> reg_d, list_d;
    DeviceArray<double> work;
    eps_d.reserve(ncells);
    reg_d.reserve(ncells);
    cuda_check(cudaMemset(eps_d.ptr, 0, ncells * sizeof(double)), dev, "cudaMemset");
    cuda_check(cudaMemset(reg_d.ptr, 0, ncells * sizeof(int)), dev, "cudaMemset");
    std::vector<std::vector<int>> classes((largest + 31) / 32 + 1);
    for (std::int64_t c = 0; c < ncells; ++c)
      if (counts_[c] > 0)
        classes[(counts_[c] - 1) / 32].push_back(static_cast<int>(c));
    std::vector<int> list;
    for (const auto &cl : classes)
      list.insert(list.end(), cl.begin(), cl.end());
    list_d.upload(list.data(), static_cast<std::int64_t>(list.size()));
    PumFitArgs a;
    a.kernel = kernel_;
    a.grid = grid_;
    a.ncols = ncols_;
    a.off = off_.ptr;
    a.cnt = cnt_.ptr;
    a.px = px_.ptr;
    a.pv = pv.ptr;
    a.total = total_;
    a.eps = st.eps;
    a.loocv = st.loocv;
    a.log_eps_min = std::log(st.eps_min);
    a.log_eps_max = std::log(st.eps_max);
    a.eps_max = st.eps_max;
    a.loocv_iterations = st.loocv_iterations;
    a.coef = coef_.ptr;
    a.eps_out = eps_d.ptr;
    a.regularised = reg_d.ptr;
    // Launches of at most `chunk` patches, so that long LOOCV runs report progress.
    const std::int64_t chunk = st.progress ? (st.loocv ? 8192 : 65536) : INT_MAX;
    const auto nonempty = static_cast<double>(list.size());
    std::int64_t at = 0;
    for (std::size_t k = 0; k < classes.size(); ++k) {
      const auto count = static_cast<std::int64_t>(classes[k].size());
      const std::int64_t nmax = 32 * static_cast<std::int64_t>(k + 1);
      // Large patches get one block per SM (shared memory): many warps hide the latencies.
      const int threads = nmax <= 64 ? 64 : nmax <= 128 ? 128 : 512;
      const std::int64_t nclass = std::min(nmax, largest);
      const bool in_smem = pum_fit_smem_bytes(nclass, static_cast<int>(s), ncols_, st.loocv) <=
                           static_cast<std::size_t>(limit);
      const std::size_t smem =
          pum_fit_smem_bytes(nclass, static_cast<int>(s), ncols_, st.loocv, in_smem);
      // Larger patches (rare: clustered data) keep their matrices in global memory.
      std::int64_t step = chunk;
      if (!in_smem) {
        step = std::min<std::int64_t>(chunk, 4096);
        a.work_stride = pum_fit_matrix_doubles(nclass, ncols_, st.loocv);
        work.reserve(std::min(step, count) * a.work_stride);
        a.work = work.ptr;
      }
      for (std::int64_t b = 0; b < count; b += step) {
        a.list = list_d.ptr + at + b;
        a.count = std::min(step, count - b);
        launch_pum_fit(a, threads, smem, nullptr);
        if (st.progress) {
          sync("PUM GPU fit");
          st.progress(static_cast<double>(at + b + a.count) / nonempty);
        }
      }
      at += count;
      a.work = nullptr;
    }
    sync("PUM GPU fit");
    eps_.resize(ncells);
    reg_.resize(ncells);
    eps_d.download(eps_.data(), ncells);
    reg_d.download(reg_.data(), ncells);
    std::vector<double> scale(ncells, 0.0);
    std::vector<double> &radius = radius_h_;
    radius.resize(ncells);
    radius_.download(radius.data(), ncells);
    std::vector<int> grown;
    for (std::int64_t c = 0; c < ncells; ++c)
      if (counts_[c] > 0) {
        scale[c] = kdef::coord_scale(kernel_, eps_[c]);
        if (radius[c] > grid_.delta)
          grown.push_back(static_cast<int>(c));
      }
    scale_.upload(scale.data(), ncells);
    grown_.upload(grown.data(), static_cast<std::int64_t>(grown.size()));
    ngrown_ = static_cast<std::int64_t>(grown.size());
    seconds_fit = since(t1);
  }
  keys_b_.release();
  order_b_.release();
  temp_.release();
  return true;
}

bool Engine::evaluate(const double *y, std::int64_t m, double *out) {
  // Chunks bound the device memory and keep point indices in int.
  const std::int64_t chunk = std::int64_t{1} << 25;
  const std::int64_t s = grid_.s;
  flag_.reserve(1);
  for (std::int64_t b = 0; b < m; b += chunk) {
    const std::int64_t mc = std::min(chunk, m - b);
    y_.reserve(mc * s);
    out_.reserve(mc * ncols_);
    for (std::int64_t k = 0; k < s; ++k)
      cuda_check(
          cudaMemcpy(y_.ptr + k * mc, y + k * m + b, mc * sizeof(double), cudaMemcpyHostToDevice),
          y_.dev, "cudaMemcpy of the evaluation points");
    sort_by_cell(y_.ptr, mc);
    cuda_check(cudaMemset(flag_.ptr, 0, sizeof(int)), flag_.dev, "cudaMemset");
    PumEvalArgs a;
    a.grid = grid_;
    a.pk = packed();
    a.m = mc;
    a.y = y_.ptr;
    a.order = order_b_.ptr;
    a.out = out_.ptr;
    a.needs_cpu = flag_.ptr;
    launch_pum_eval(a, nullptr);
    int needs_cpu = 0;
    flag_.download(&needs_cpu, 1);
    if (needs_cpu)
      return false;
    for (std::int64_t c = 0; c < ncols_; ++c)
      cuda_check(cudaMemcpy(out + c * m + b, out_.ptr + c * mc, mc * sizeof(double),
                            cudaMemcpyDeviceToHost),
                 out_.dev, "cudaMemcpy of the results");
  }
  return true;
}

void check_shape(const PumGrid &g, int ncols) {
  if (gpu_count() == 0)
    throw Error(ErrorCode::unsupported, "PUM on the GPU: no CUDA GPU is visible");
  if (g.s != 2 && g.s != 3)
    throw Error(ErrorCode::unsupported,
                fmt::format("PUM on the GPU handles dimension 2 and 3, got {}", g.s));
  if (ncols > pum_gpu_max_cols)
    throw Error(ErrorCode::unsupported,
                fmt::format("PUM on the GPU handles up to {} value columns, got {}",
                            pum_gpu_max_cols, ncols));
}

} // namespace

std::unique_ptr<PumGpu> make_pum_gpu(const PumHostPacked &h) {
  check_shape(h.grid, h.ncols);
  auto e = std::make_unique<Engine>(h.grid, h.kernel, h.ncols);
  e->adopt(h);
  return e;
}

std::unique_ptr<PumGpuFit> pum_gpu_fit(const PumGrid &g, const Table<double> &pts,
                                       const Table<double> &vals, const PumOptions &st,
                                       std::int64_t min_pts) {
  check_shape(g, static_cast<int>(vals.cols()));
  auto e = std::make_unique<Engine>(g, st.kernel, static_cast<int>(vals.cols()));
  if (!e->fit(pts, vals, st, min_pts))
    return nullptr;
  return e;
}

} // namespace ksum::detail
