// The GPU FMM's host engine (fmm_gpu.hpp): uploads, work lists, and the passes in order on one
// stream; M2L per level and symmetry class as gather → cuBLAS GEMM (two, U (W X), for a class in
// low rank) → scatter, in column chunks that fit the GPU's free memory.
#include "fmm/fmm3d/fmm_gpu.hpp"
#include "fmm/fmm3d/chebyshev.hpp"
#include "fmm/fmm3d/fmm_launch.hpp"
#include "fmm/fmm3d/octree.hpp"
#include "runtime/cuda_array.hpp"

#include <ksum/error.hpp>
#include <ksum/table.hpp>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cublas_v2.h>
#include <exception>
#include <fmt/format.h>
#include <thread>
#include <type_traits>

namespace ksum::fmm {
namespace {

using detail::cuda_check;
using detail::DeviceArray;

void cublas_check(cublasStatus_t s, int dev, const char *what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(ErrorCode::device, fmt::format("GPU {}: cuBLAS {} failed (status {})", dev, what,
                                               static_cast<int>(s)));
}

template <class T, class U> void upload_as(DeviceArray<T> &d, const std::vector<U> &h) {
  std::vector<T> c(h.begin(), h.end());
  d.upload(c.data(), static_cast<std::int64_t>(c.size()));
}

// Page-locked host memory (DMA at the link's speed, where pageable memory goes through the driver's
// staging copies), kept between applies; grows, never shrinks.
template <class T> class Pinned {
public:
  Pinned() = default;
  Pinned(const Pinned &) = delete;
  Pinned &operator=(const Pinned &) = delete;
  ~Pinned() { release(); }
  // At least n values, or nullptr where the pages cannot be locked (the caller then copies
  // through pageable memory). The current device's context allocates them.
  T *try_reserve(std::int64_t n) {
    if (n > size_) {
      release();
      void *p = nullptr;
      if (cudaHostAlloc(&p, sizeof(T) * static_cast<std::size_t>(n), cudaHostAllocPortable) !=
          cudaSuccess) {
        cudaGetLastError(); // not sticky: clear it
        return nullptr;
      }
      ptr_ = static_cast<T *>(p);
      size_ = n;
    }
    return ptr_;
  }

private:
  void release() {
    if (ptr_)
      cudaFreeHost(ptr_);
    ptr_ = nullptr;
    size_ = 0;
  }
  T *ptr_ = nullptr;
  std::int64_t size_ = 0;
};

// Pinned buffers from an engine's fourth apply on (pin_after earlier ones) and for at least
// pin_from values: locking the pages of 10^8 weights and results (1.6 GB) cost ~0.5 s once on the
// H200 host (inferred from the execute that allocated them, not timed apart), more than a few
// applies save by the faster copies; a solver's tens of products amortise it.
constexpr std::int64_t pin_from = std::int64_t{1} << 20;
constexpr std::int64_t pin_after = 3;

// dst[k] = src[k], k < n, on the host's threads.
template <class D, class S> void parallel_copy(D *dst, const S *src, std::int64_t n) {
#pragma omp parallel for schedule(static) if (n > 100000)
  for (std::int64_t k = 0; k < n; ++k)
    dst[k] = static_cast<D>(src[k]);
}

template <class T> class FmmGpuImpl final : public FmmGpu {
public:
  // Targets [t0, t1) of the sorted order only (t1 < 0: all of them): the upward pass runs over
  // every source, the far and near fields only for the boxes that hold some of those targets.
  FmmGpuImpl(const GpuSetup &s, int device, std::int64_t t0 = 0, std::int64_t t1 = -1)
      : dev_(device), kernel_(s.kernel) {
    cuda_check(cudaSetDevice(dev_), dev_, "cudaSetDevice");
    const FmmTree &t = *s.tree;
    tree_ = &t;
    all_ = t1 < 0;
    t0_ = all_ ? 0 : t0;
    t1_ = all_ ? t.m : t1;
    const auto mine = [&](std::int32_t b) {
      const FmmBox &B = t.boxes[static_cast<std::size_t>(b)];
      return all_ || (B.te > B.tb && B.tb < t1_ && B.te > t0_);
    };
    p_ = s.p;
    P_ = p_ * p_ * p_;
    nb_ = static_cast<std::int64_t>(t.boxes.size());
    cuda_check(cudaStreamCreate(&stream_), dev_, "cudaStreamCreate");
    cublas_check(cublasCreate(&blas_), dev_, "cublasCreate");
    cublas_check(cublasSetStream(blas_, stream_), dev_, "cublasSetStream");

    std::vector<detail::GpuBox<T>> boxes(static_cast<std::size_t>(nb_));
    for (std::int64_t b = 0; b < nb_; ++b) {
      const FmmBox &B = t.boxes[static_cast<std::size_t>(b)];
      auto &g = boxes[static_cast<std::size_t>(b)];
      double c[3];
      t.centre(B, c);
      for (int a = 0; a < 3; ++a)
        g.centre[a] = static_cast<T>(c[a]);
      g.half = static_cast<T>(t.half_side(B.level));
      g.sb = B.sb;
      g.se = B.se;
      g.tb = B.tb;
      g.te = B.te;
      g.parent = B.parent;
      g.first_child = B.first_child;
      g.children = B.children;
      g.octant = B.octant;
      g.coincident = B.coincident ? 1 : 0;
      g.has_local = (*s.has_local)[static_cast<std::size_t>(b)] ? 1 : 0;
    }
    boxes_.upload(boxes.data(), nb_);
    upload_as(src_, t.src);
    src_order_.upload(t.src_order.data(), std::ssize(t.src_order));
    if (!t.self) {
      upload_as(tgt_, t.tgt);
      tgt_order_.upload(t.tgt_order.data(), std::ssize(t.tgt_order));
    }
    upload_as(nodes_, *s.nodes);
    upload_as(tn_, *s.tn);
    upload_as(m2m_, *s.m2m);
    perm_.upload(s.perm->data(), static_cast<std::int64_t>(s.perm->size()));
    pinv_.upload(s.pinv->data(), static_cast<std::int64_t>(s.pinv->size()));

    // Work lists.
    std::vector<std::int32_t> src_leaves, l2p_leaves, u_t, w_t, x_t;
    const auto depth = static_cast<std::size_t>(t.depth);
    std::vector<std::vector<std::int32_t>> parents(depth + 1), children(depth + 1);
    for (std::int32_t b = 0; b < static_cast<std::int32_t>(nb_); ++b) {
      const FmmBox &B = t.boxes[static_cast<std::size_t>(b)];
      const auto l = static_cast<std::size_t>(B.level);
      if (B.leaf() && B.sources() > 0)
        src_leaves.push_back(b);
      if (!B.leaf() && B.sources() > 0)
        parents[l].push_back(b);
      if (!mine(b))
        continue;
      if (B.parent >= 0 && B.targets() > 0 && (*s.has_local)[static_cast<std::size_t>(B.parent)])
        children[l].push_back(b);
      if (B.leaf() && B.targets() > 0 && (*s.has_local)[static_cast<std::size_t>(b)])
        l2p_leaves.push_back(b);
      if (t.u.size(b) > 0)
        u_t.push_back(b);
      if (t.w.size(b) > 0)
        w_t.push_back(b);
      if (t.x.size(b) > 0)
        x_t.push_back(b);
    }
    src_leaves_.upload(src_leaves.data(), n_src_leaves_ = std::ssize(src_leaves));
    l2p_leaves_.upload(l2p_leaves.data(), n_l2p_leaves_ = std::ssize(l2p_leaves));
    auto concat = [&](std::vector<std::vector<std::int32_t>> &per_level, Levels &out) {
      std::vector<std::int32_t> all;
      out.offsets = {0};
      for (auto &v : per_level) {
        all.insert(all.end(), v.begin(), v.end());
        out.offsets.push_back(std::ssize(all));
      }
      out.boxes.upload(all.data(), std::ssize(all));
    };
    concat(parents, parents_);
    concat(children, children_);
    auto list = [&](const BoxLists &l, const std::vector<std::int32_t> &targets, List &out) {
      out.count = std::ssize(targets);
      out.targets.upload(targets.data(), out.count);
      out.offsets.upload(l.offsets.data(), std::ssize(l.offsets));
      out.boxes.upload(l.boxes.data(), std::ssize(l.boxes));
    };
    list(t.u, u_t, u_);
    list(t.w, w_t, w_);
    list(t.x, x_t, x_);
    for (std::int32_t b = 0; b < static_cast<std::int32_t>(nb_); ++b)
      if (t.boxes[static_cast<std::size_t>(b)].coincident)
        coincident_.push_back(b);

    // M2L groups by (level, class): pairs in one array, host offsets.
    std::vector<std::int32_t> ga, gb, gt;
    groups_.clear();
    for (std::int32_t l = 0; l <= t.depth; ++l) {
      if (!s.level_ops[static_cast<std::size_t>(l)])
        continue;
      for (int c = 0; c < 16; ++c) {
        Group g{l, c, std::ssize(ga), 0};
        for (std::int32_t a = t.level_begin[static_cast<std::size_t>(l)];
             a < t.level_begin[static_cast<std::size_t>(l) + 1]; ++a)
          if (mine(a))
            for (auto e = t.v.offsets[static_cast<std::size_t>(a)];
                 e < t.v.offsets[static_cast<std::size_t>(a) + 1]; ++e)
              if (t.v_class[static_cast<std::size_t>(e)] == c) {
                ga.push_back(a);
                gb.push_back(t.v.boxes[static_cast<std::size_t>(e)]);
                gt.push_back(t.v_transform[static_cast<std::size_t>(e)]);
              }
        g.end = std::ssize(ga);
        if (g.end > g.begin)
          groups_.push_back(g);
      }
    }
    ga_.upload(ga.data(), std::ssize(ga));
    gb_.upload(gb.data(), std::ssize(gb));
    gt_.upload(gt.data(), std::ssize(gt));
    // Operators: one device copy per distinct host set.
    const std::size_t set_size = static_cast<std::size_t>(16) * P_ * P_;
    level_op_.assign(depth + 1, -1);
    level_scale_ = s.level_scale;
    std::vector<const double *> seen;
    for (std::size_t l = 0; l <= depth; ++l) {
      const double *h = s.level_ops[l];
      if (!h)
        continue;
      auto it = std::find(seen.begin(), seen.end(), h);
      if (it == seen.end()) {
        seen.push_back(h);
        ops_.emplace_back(std::make_unique<DeviceArray<T>>());
        std::vector<T> c(h, h + set_size);
        ops_.back()->upload(c.data(), static_cast<std::int64_t>(set_size));
        low_.emplace_back();
        if (l < s.level_low.size() && s.level_low[l]) {
          const auto &v = *s.level_low[l];
          auto lr = std::make_unique<LowRank>();
          std::vector<T> d;
          for (int k = 0; k < 16; ++k) {
            lr->rank[k] = v.rank[k];
            if (v.rank[k] < 0)
              continue;
            const auto size = static_cast<std::size_t>(P_) * static_cast<std::size_t>(v.rank[k]);
            lr->u[k] = std::ssize(d);
            d.insert(d.end(), v.u[k], v.u[k] + size);
            lr->w[k] = std::ssize(d);
            d.insert(d.end(), v.w[k], v.w[k] + size);
            max_rank_ = std::max(max_rank_, v.rank[k]);
          }
          lr->data.upload(d.data(), std::ssize(d));
          low_.back() = std::move(lr);
        }
        it = seen.end() - 1;
      }
      level_op_[l] = static_cast<int>(it - seen.begin());
    }
  }

  ~FmmGpuImpl() override {
    cudaSetDevice(dev_); // the handle and stream belong to this GPU, whichever thread frees them
    if (blas_)
      cublasDestroy(blas_);
    if (stream_)
      cudaStreamDestroy(stream_);
  }

  void apply(const double *w, std::int64_t nrhs, double *out, GpuTimes &times) override {
    run(w, nrhs, out, times);
  }
  void apply(const float *w, std::int64_t nrhs, float *out, GpuTimes &times) override {
    run(w, nrhs, out, times);
  }
  void near_in_float(bool on) override { near_float_ = on && sizeof(T) == 8; }

  // out_in: the results in the input order; or, with `sorted` given, this engine's targets
  // [t0, t1) of each right-hand side into sorted[r m + t0 …] (tree order), out_in unused.
  // staged: the weights already converted to T in pinned memory (several GPUs share one copy).
  template <class U>
  void run(const U *w_in, std::int64_t nrhs, U *out_in, GpuTimes &times, T *sorted = nullptr,
           const T *staged = nullptr) {
    using Clock = std::chrono::steady_clock;
    const auto t_in = Clock::now();
    cuda_check(cudaSetDevice(dev_), dev_, "cudaSetDevice");
    const FmmTree &t = *tree_;
    const std::int64_t n = t.n, m = t.m;
    const std::int64_t exp_size = nb_ * nrhs * P_;
    bool pin = ++applies_ > pin_after && std::max(n, m) * nrhs >= pin_from && !sorted;
    T *pinned_in = nullptr, *pinned_out = nullptr;
    if (pin) {
      pinned_in = staged ? nullptr : pin_in_.try_reserve(n * nrhs);
      pinned_out = pin_out_.try_reserve(m * nrhs);
      pin = pinned_out && (staged || pinned_in);
    }
    {
      if (staged) {
        raw_.upload(staged, n * nrhs);
      } else if (pin) {
        parallel_copy(pinned_in, w_in, n * nrhs);
        raw_.upload(pinned_in, n * nrhs);
      } else if constexpr (std::is_same_v<U, T>) {
        raw_.upload(w_in, n * nrhs);
      } else {
        std::vector<T> c(w_in, w_in + n * nrhs);
        raw_.upload(c.data(), n * nrhs);
      }
      ws_.reserve(std::max<std::int64_t>(n * nrhs, 1));
      detail::launch_permute(raw_.ptr, src_order_.ptr, n, nrhs, false, ws_.ptr, stream_);
      std::vector<T> bw(static_cast<std::size_t>(nb_ * nrhs), T(0));
      for (const auto b : coincident_) {
        const FmmBox &B = t.boxes[static_cast<std::size_t>(b)];
        for (std::int64_t r = 0; r < nrhs; ++r) {
          double s = 0;
          for (std::int64_t j = B.sb; j < B.se; ++j)
            s += static_cast<double>(w_in[r * n + t.src_order[static_cast<std::size_t>(j)]]);
          bw[static_cast<std::size_t>(b * nrhs + r)] = static_cast<T>(s);
        }
      }
      box_weight_.upload(bw.data(), nb_ * nrhs);
    }
    mult_.reserve(exp_size);
    loc_.reserve(exp_size);
    us_.reserve(std::max<std::int64_t>(m * nrhs, 1));
    cuda_check(cudaMemsetAsync(mult_.ptr, 0, sizeof(T) * exp_size, stream_), dev_, "memset");
    cuda_check(cudaMemsetAsync(loc_.ptr, 0, sizeof(T) * exp_size, stream_), dev_, "memset");
    cuda_check(
        cudaMemsetAsync(us_.ptr, 0, sizeof(T) * std::max<std::int64_t>(m * nrhs, 1), stream_), dev_,
        "memset");
    detail::GpuTree<T> g;
    g.boxes = boxes_.ptr;
    g.src = src_.ptr;
    g.tgt = t.self ? src_.ptr : tgt_.ptr;
    g.n = n;
    g.m = m;
    g.p = p_;
    g.P = P_;
    g.nrhs = static_cast<int>(nrhs);
    g.nodes = nodes_.ptr;
    g.tn = tn_.ptr;
    g.m2m = m2m_.ptr;
    void *st = stream_;
    auto sync = [&] { cuda_check(cudaStreamSynchronize(stream_), dev_, "the FMM passes"); };
    sync();
    auto t0 = Clock::now();
    times.transfer = std::chrono::duration<double>(t0 - t_in).count();
    auto lap = [&](double &into) {
      sync();
      const auto now = Clock::now();
      into = std::chrono::duration<double>(now - t0).count();
      t0 = now;
    };

    detail::launch_p2m(g, src_leaves_.ptr, n_src_leaves_, ws_.ptr, mult_.ptr, st);
    for (std::int32_t l = t.depth; l >= 0; --l) {
      const auto k = static_cast<std::size_t>(l);
      detail::launch_m2m(g, parents_.boxes.ptr + parents_.offsets[k],
                         parents_.offsets[k + 1] - parents_.offsets[k], mult_.ptr, st);
    }
    lap(times.upward);

    // M2L: columns in chunks of at most `cols` (X, Y and Z together within a quarter of free
    // memory, at most 2 GiB).
    std::size_t free_b = 0, total_b = 0;
    cuda_check(cudaMemGetInfo(&free_b, &total_b), dev_, "cudaMemGetInfo");
    const double budget = std::min(0.25 * static_cast<double>(free_b), 2.0 * (1u << 30));
    const std::int64_t max_pairs = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(budget / ((2.0 * P_ + max_rank_) * sizeof(T) * nrhs)));
    std::int64_t biggest = 0;
    for (const auto &gr : groups_)
      biggest = std::max(biggest, gr.end - gr.begin);
    const std::int64_t chunk = std::min(max_pairs, biggest);
    X_.reserve(chunk * nrhs * P_);
    Y_.reserve(chunk * nrhs * P_);
    if (max_rank_ > 0)
      Z_.reserve(chunk * nrhs * max_rank_);
    const T one = 1, zero = 0;
    // Y = A B (column-major; A: rows × inner, B: inner × cols).
    auto gemm = [&](int rows, int cols, int inner, const T *A, const T *B, T *C) {
      if constexpr (sizeof(T) == 8)
        cublas_check(cublasDgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, rows, cols, inner, &one, A, rows,
                                 B, inner, &zero, C, rows),
                     dev_, "DGEMM");
      else
        cublas_check(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, rows, cols, inner, &one, A, rows,
                                 B, inner, &zero, C, rows),
                     dev_, "SGEMM");
    };
    for (const auto &gr : groups_) {
      const auto set = static_cast<std::size_t>(level_op_[static_cast<std::size_t>(gr.level)]);
      const T *K = ops_[set]->ptr + static_cast<std::int64_t>(gr.cls) * P_ * P_;
      const LowRank *lr = low_[set] && low_[set]->rank[gr.cls] >= 0 ? low_[set].get() : nullptr;
      const T scale = static_cast<T>(level_scale_[static_cast<std::size_t>(gr.level)]);
      for (std::int64_t k0 = gr.begin; k0 < gr.end; k0 += chunk) {
        const std::int64_t np = std::min(chunk, gr.end - k0);
        detail::launch_m2l_gather(g, gb_.ptr + k0, gt_.ptr + k0, np, pinv_.ptr, mult_.ptr, X_.ptr,
                                  st);
        const int cols = static_cast<int>(np * nrhs);
        if (lr) { // U (W X): 4 P r flops per column for 2 P²
          const int r = lr->rank[gr.cls];
          gemm(r, cols, P_, lr->data.ptr + lr->w[gr.cls], X_.ptr, Z_.ptr);
          gemm(P_, cols, r, lr->data.ptr + lr->u[gr.cls], Z_.ptr, Y_.ptr);
        } else {
          gemm(P_, cols, P_, K, X_.ptr, Y_.ptr);
        }
        detail::launch_m2l_scatter(g, ga_.ptr + k0, gt_.ptr + k0, np, perm_.ptr, scale, Y_.ptr,
                                   loc_.ptr, st);
      }
    }
    lap(times.m2l);

    detail::PairPass<T> x{x_.targets.ptr, x_.count, x_.offsets.ptr, x_.boxes.ptr};
    x.target_nodes = true;
    x.ws = ws_.ptr;
    x.box_weight = box_weight_.ptr;
    x.loc = loc_.ptr;
    detail::launch_pairs(kernel_, g, x, st);
    for (std::int32_t l = 1; l <= t.depth; ++l) {
      const auto k = static_cast<std::size_t>(l);
      detail::launch_l2l(g, children_.boxes.ptr + children_.offsets[k],
                         children_.offsets[k + 1] - children_.offsets[k], loc_.ptr, st);
    }
    detail::launch_l2p(g, l2p_leaves_.ptr, n_l2p_leaves_, loc_.ptr, us_.ptr, st);
    lap(times.downward);

    detail::PairPass<T> w{w_.targets.ptr, w_.count, w_.offsets.ptr, w_.boxes.ptr};
    w.source_nodes = true;
    w.mult = mult_.ptr;
    w.us = us_.ptr;
    detail::launch_pairs(kernel_, g, w, st);
    detail::PairPass<T> u{u_.targets.ptr, u_.count, u_.offsets.ptr, u_.boxes.ptr};
    u.self = t.self;
    u.mixed = near_float_;
    u.ws = ws_.ptr;
    u.box_weight = box_weight_.ptr;
    u.us = us_.ptr;
    detail::launch_pairs(kernel_, g, u, st);
    lap(times.near);

    const auto t_out = Clock::now();
    const auto add_out = [&] {
      times.transfer += std::chrono::duration<double>(Clock::now() - t_out).count();
    };
    if (sorted) {
      for (std::int64_t r = 0; r < nrhs; ++r)
        if (t1_ > t0_)
          cuda_check(cudaMemcpyAsync(sorted + r * m + t0_, us_.ptr + r * m + t0_,
                                     sizeof(T) * static_cast<std::size_t>(t1_ - t0_),
                                     cudaMemcpyDeviceToHost, stream_),
                     dev_, "cudaMemcpy from the GPU");
      sync();
      add_out();
      return;
    }
    raw_.reserve(std::max<std::int64_t>(m * nrhs, 1));
    detail::launch_permute(us_.ptr, (t.self ? src_order_ : tgt_order_).ptr, m, nrhs, true, raw_.ptr,
                           stream_);
    if (pin) {
      raw_.download(pinned_out, m * nrhs);
      parallel_copy(out_in, pinned_out, m * nrhs);
    } else if constexpr (std::is_same_v<U, T>) {
      raw_.download(out_in, m * nrhs);
    } else {
      std::vector<T> c(static_cast<std::size_t>(m * nrhs));
      raw_.download(c.data(), m * nrhs);
      std::copy(c.begin(), c.end(), out_in);
    }
    add_out();
  }

private:
  struct List {
    DeviceArray<std::int32_t> targets, boxes;
    DeviceArray<std::int64_t> offsets;
    std::int64_t count = 0;
  };
  struct Group {
    std::int32_t level;
    int cls;
    std::int64_t begin, end;
  };
  int dev_;
  Kernel kernel_;
  const FmmTree *tree_ = nullptr;
  bool all_ = true;              // every target; else only [t0_, t1_)
  bool near_float_ = false;      // near_in_float()
  std::int64_t t0_ = 0, t1_ = 0; // in the sorted order
  std::int64_t applies_ = 0;
  Pinned<T> pin_in_, pin_out_; // the weights' and results' host copies (pin_after)
  int p_ = 0, P_ = 0;
  std::int64_t nb_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  DeviceArray<detail::GpuBox<T>> boxes_;
  DeviceArray<T> src_, tgt_, nodes_, tn_, m2m_, raw_, ws_, box_weight_, mult_, loc_, us_, X_, Y_;
  DeviceArray<std::int64_t> src_order_, tgt_order_;
  DeviceArray<std::int32_t> perm_, pinv_, src_leaves_, l2p_leaves_, ga_, gb_, gt_;
  std::int64_t n_src_leaves_ = 0, n_l2p_leaves_ = 0;
  struct Levels { // boxes per level, concatenated
    DeviceArray<std::int32_t> boxes;
    std::vector<std::int64_t> offsets;
  };
  Levels parents_, children_; // M2M targets; L2L targets
  List u_, w_, x_;
  std::vector<std::int32_t> coincident_;
  std::vector<Group> groups_;
  std::vector<std::unique_ptr<DeviceArray<T>>> ops_;
  // Per device set: its low-rank classes (rank < 0: in full), U then W of each class in one array.
  struct LowRank {
    int rank[16];
    std::int64_t u[16], w[16]; // offsets into data
    DeviceArray<T> data;
  };
  std::vector<std::unique_ptr<LowRank>> low_; // parallel to ops_; null: every class in full
  int max_rank_ = 0;
  DeviceArray<T> Z_;
  std::vector<int> level_op_;
  std::vector<double> level_scale_;
};

} // namespace

// Throws unless `device` is a visible GPU; `without` says what runs when none is visible.
static void require_gpu(int device, const char *without) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    throw Error(ErrorCode::unsupported, fmt::format("no GPU is visible: {}", without));
  if (device < 0 || device >= count)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("GPU {} does not exist ({} visible)", device, count));
}

namespace {

// Runs `work(k)` for k < count on threads of their own (one per GPU), rethrowing the first
// failure after every thread has finished.
template <class F> void on_each(std::size_t count, F &&work) {
  std::vector<std::exception_ptr> failed(count);
  std::vector<std::thread> threads;
  threads.reserve(count);
  const auto join = [&] {
    for (auto &th : threads)
      if (th.joinable())
        th.join();
  };
  try {
    for (std::size_t k = 0; k < count; ++k)
      threads.emplace_back([&, k] {
        try {
          work(k);
        } catch (...) {
          failed[k] = std::current_exception();
        }
      });
  } catch (...) { // a thread that could not start: the started ones finish first
    join();
    throw;
  }
  join();
  for (auto &e : failed)
    if (e)
      std::rethrow_exception(e);
}

// Several GPUs (an id listed twice: two engines sharing that GPU, as the tests do on one GPU):
// each holds the whole tree and every source, runs the upward pass over all of
// them, and the far and near fields of its own range of the sorted targets (split_targets, at
// leaf boundaries, of about equal estimated work). The ranges come back in tree order and the host
// puts them in the input order.
template <class T> class MultiFmmGpu final : public FmmGpu {
public:
  MultiFmmGpu(const GpuSetup &s, const std::vector<int> &devices)
      : tree_(s.tree), dev0_(devices.front()) {
    const auto bounds =
        split_targets(*s.tree, std::int64_t{s.p} * s.p * s.p, static_cast<int>(devices.size()));
    parts_.resize(devices.size());
    on_each(devices.size(), [&](std::size_t k) {
      if (bounds[k + 1] > bounds[k])
        parts_[k] = std::make_unique<FmmGpuImpl<T>>(s, devices[k], bounds[k], bounds[k + 1]);
    });
    std::erase(parts_, nullptr);
  }
  void apply(const double *w, std::int64_t nrhs, double *out, GpuTimes &times) override {
    run(w, nrhs, out, times);
  }
  void apply(const float *w, std::int64_t nrhs, float *out, GpuTimes &times) override {
    run(w, nrhs, out, times);
  }
  void near_in_float(bool on) override {
    for (auto &e : parts_)
      e->near_in_float(on);
  }

private:
  template <class U> void run(const U *w, std::int64_t nrhs, U *out, GpuTimes &times) {
    using Clock = std::chrono::steady_clock;
    const auto t_in = Clock::now();
    const FmmTree &t = *tree_;
    const std::int64_t n = t.n, m = t.m;
    // From the fourth apply on, one pinned copy of the weights for every GPU and pinned results.
    bool pin = ++applies_ > pin_after && std::max(n, m) * nrhs >= pin_from;
    const T *staged = nullptr;
    T *sorted = nullptr;
    if (pin) {
      cuda_check(cudaSetDevice(dev0_), dev0_, "cudaSetDevice"); // the context that locks the pages
      T *h = in_.try_reserve(n * nrhs);
      sorted = out_.try_reserve(m * nrhs);
      pin = h && sorted;
      if (pin) {
        parallel_copy(h, w, n * nrhs);
        staged = h;
        detail::uninit_vector<T>().swap(sorted_); // the pageable results are not needed again
      }
    }
    if (!pin) {
      sorted_.resize(static_cast<std::size_t>(m * nrhs));
      sorted = sorted_.data();
    }
    const double staging = std::chrono::duration<double>(Clock::now() - t_in).count();
    std::vector<GpuTimes> each(parts_.size());
    on_each(parts_.size(), [&](std::size_t k) {
      parts_[k]->run(w, nrhs, static_cast<U *>(nullptr), each[k], sorted, staged);
    });
    const auto t_out = Clock::now();
    const auto &order = t.self ? t.src_order : t.tgt_order;
    for (std::int64_t r = 0; r < nrhs; ++r)
#pragma omp parallel for schedule(static) if (m > 100000)
      for (std::int64_t k = 0; k < m; ++k)
        out[r * m + order[static_cast<std::size_t>(k)]] = static_cast<U>(sorted[r * m + k]);
    times = GpuTimes{};
    for (const auto &g : each) { // the slowest GPU's phases
      times.upward = std::max(times.upward, g.upward);
      times.m2l = std::max(times.m2l, g.m2l);
      times.downward = std::max(times.downward, g.downward);
      times.near = std::max(times.near, g.near);
      times.transfer = std::max(times.transfer, g.transfer);
    }
    times.transfer += staging + std::chrono::duration<double>(Clock::now() - t_out).count();
  }
  const FmmTree *tree_;
  int dev0_;
  std::vector<std::unique_ptr<FmmGpuImpl<T>>> parts_;
  std::int64_t applies_ = 0;
  detail::uninit_vector<T> sorted_; // the results in tree order, every part's range (unpinned)
  Pinned<T> in_, out_;              // the weights for every GPU and the results (pin_after)
};

} // namespace

std::unique_ptr<FmmGpu> make_fmm_gpu(const GpuSetup &setup, bool single, int device) {
  return make_fmm_gpu(setup, single, std::vector<int>{device});
}

std::unique_ptr<FmmGpu> make_fmm_gpu(const GpuSetup &setup, bool single,
                                     const std::vector<int> &devices) {
  if (devices.empty())
    throw Error(ErrorCode::invalid_argument, "the GPU FMM needs at least one device");
  for (const int d : devices)
    require_gpu(d, "the FMM runs on the CPU (backend cpu)");
  if (setup.p > 16)
    throw Error(ErrorCode::unsupported,
                fmt::format("the GPU FMM handles order up to 16, not {}", setup.p));
  if (devices.size() > 1) {
    if (single)
      return std::make_unique<MultiFmmGpu<float>>(setup, devices);
    return std::make_unique<MultiFmmGpu<double>>(setup, devices);
  }
  if (single)
    return std::make_unique<FmmGpuImpl<float>>(setup, devices.front());
  return std::make_unique<FmmGpuImpl<double>>(setup, devices.front());
}

namespace {

class CellMultipolesImpl final : public GpuCellMultipoles {
public:
  CellMultipolesImpl(const double *pts, std::int64_t n, const std::vector<CellRange> &cells,
                     int device)
      : dev_(device), n_(n), ncells_(static_cast<std::int64_t>(cells.size())) {
    cuda_check(cudaSetDevice(dev_), dev_, "cudaSetDevice");
    pts_.reserve(std::max<std::int64_t>(3 * n, 1), dev_);
    pts_.upload(pts, 3 * n);
    // One group per order; each cell cut into chunks of at most `chunk` points (boxes of the P2M
    // kernel, which gives a box one thread block).
    constexpr std::int64_t chunk = 8192;
    for (std::int64_t c = 0; c < ncells_; ++c) {
      const CellRange &cr = cells[static_cast<std::size_t>(c)];
      order_.push_back(cr.p);
      if (cr.p < 2 || cr.p > 16)
        throw Error(ErrorCode::unsupported,
                    fmt::format("the GPU multipoles handle orders 2 to 16, not {}", cr.p));
      auto it =
          std::find_if(groups_.begin(), groups_.end(), [&](const auto &g) { return g->p == cr.p; });
      if (it == groups_.end()) {
        groups_.push_back(std::make_unique<Group>());
        it = groups_.end() - 1;
        (*it)->p = cr.p;
      }
      for (std::int64_t b = cr.begin; b < cr.end; b += chunk) {
        detail::GpuBox<double> box{};
        for (int a = 0; a < 3; ++a)
          box.centre[a] = cr.centre[a];
        box.half = cr.half;
        box.sb = b;
        box.se = std::min(cr.end, b + chunk);
        (*it)->host_boxes.push_back(box);
        (*it)->chunk_cell.push_back(c);
      }
    }
    for (auto &gp : groups_) {
      Group &g = *gp;
      const Chebyshev ch(g.p);
      g.tn.upload(ch.tn.data(), std::ssize(ch.tn));
      const auto nb = std::ssize(g.host_boxes);
      g.boxes.upload(g.host_boxes.data(), nb);
      std::vector<std::int32_t> ids(g.host_boxes.size());
      for (std::int64_t k = 0; k < nb; ++k)
        ids[static_cast<std::size_t>(k)] = static_cast<std::int32_t>(k);
      g.ids.upload(ids.data(), nb);
    }
  }

  void compute(const double *w, std::int64_t nrhs, std::vector<std::vector<double>> &out) override {
    cuda_check(cudaSetDevice(dev_), dev_, "cudaSetDevice");
    w_.upload(w, std::max<std::int64_t>(n_ * nrhs, 0));
    out.resize(static_cast<std::size_t>(ncells_));
    for (std::int64_t c = 0; c < ncells_; ++c) { // zeros: a cell without points keeps them
      const std::int64_t p = order_[static_cast<std::size_t>(c)];
      out[static_cast<std::size_t>(c)].assign(static_cast<std::size_t>(p * p * p * nrhs), 0.0);
    }
    std::vector<double> host;
    for (auto &gp : groups_) {
      Group &g = *gp;
      const std::int64_t P = std::int64_t{g.p} * g.p * g.p, nb = std::ssize(g.host_boxes);
      detail::GpuTree<double> t;
      t.boxes = g.boxes.ptr;
      t.src = pts_.ptr;
      t.n = t.m = n_;
      t.p = g.p;
      t.P = static_cast<int>(P);
      t.nrhs = static_cast<int>(nrhs);
      t.tn = g.tn.ptr;
      mult_.reserve(std::max<std::int64_t>(nb * nrhs * P, 1), dev_);
      detail::launch_p2m<double>(t, g.ids.ptr, nb, w_.ptr, mult_.ptr, nullptr);
      host.resize(static_cast<std::size_t>(nb * nrhs * P));
      mult_.download(host.data(), nb * nrhs * P); // synchronises with the default stream
      // The chunks' partial sums into their cells, in chunk order (0 + the first is exact).
      for (std::int64_t k = 0; k < nb; ++k) {
        auto &o = out[static_cast<std::size_t>(g.chunk_cell[static_cast<std::size_t>(k)])];
        const double *part = host.data() + k * nrhs * P;
        for (std::int64_t q = 0; q < nrhs * P; ++q)
          o[static_cast<std::size_t>(q)] += part[q];
      }
    }
  }

private:
  struct Group {
    int p = 0;
    std::vector<detail::GpuBox<double>> host_boxes;
    std::vector<std::int64_t> chunk_cell;
    DeviceArray<detail::GpuBox<double>> boxes;
    DeviceArray<std::int32_t> ids;
    DeviceArray<double> tn;
  };
  int dev_;
  std::int64_t n_, ncells_;
  DeviceArray<double> pts_, w_, mult_;
  std::vector<std::unique_ptr<Group>> groups_;
  std::vector<int> order_; // per cell
};

} // namespace

std::unique_ptr<GpuCellMultipoles> make_gpu_cell_multipoles(const double *pts, std::int64_t n,
                                                            const std::vector<CellRange> &cells,
                                                            int device) {
  require_gpu(device, "the multipoles are formed on the CPU");
  return std::make_unique<CellMultipolesImpl>(pts, n, cells, device);
}

void gpu_radix_sort(std::vector<std::uint64_t> &keys, std::vector<std::int64_t> &order,
                    int device) {
  const auto n = static_cast<std::int64_t>(keys.size());
  order.resize(keys.size());
  if (n == 0)
    return;
  std::uint64_t any = 0;
  for (const auto k : keys)
    any |= k;
  const int end_bit = std::max(1, static_cast<int>(std::bit_width(any)));
  cuda_check(cudaSetDevice(device), device, "cudaSetDevice");
  DeviceArray<std::uint64_t> k_in, k_out;
  DeviceArray<std::int64_t> v_in, v_out;
  DeviceArray<unsigned char> temp;
  k_in.upload(keys.data(), n);
  k_out.reserve(n, device);
  v_in.reserve(n, device);
  v_out.reserve(n, device);
  const std::size_t bytes = detail::radix_sort_temp_bytes(n, end_bit);
  temp.reserve(static_cast<std::int64_t>(bytes), device);
  detail::launch_radix_sort(temp.ptr, bytes, k_in.ptr, k_out.ptr, v_in.ptr, v_out.ptr, n, end_bit,
                            nullptr);
  k_out.download(keys.data(), n); // synchronises with the default stream
  v_out.download(order.data(), n);
}

} // namespace ksum::fmm
