// The Monte Carlo engine's GPU backend (seed 004 Paper I): the particles stay on the device
// (set_system uploads them once; the paper re-sent them for every move and lost the GPU to PCIe
// latency, its table 3.1), a move's ΔU is one O(N·m) launch, and translate() runs batches of
// trial moves, each batch two launches (the ΔU of every trial against the current state with the
// corrections between trials, then the in-order accept on the device). The host waits only for a
// group of batches: the device keeps the chain's position (the next move number) itself, so that
// the batches of a group are queued back to back and one small read-back of their records tells
// how far the chain got. The kernels are in cuda/mc_energy.cu (energies) and cuda/mc_batch.cu
// (translate).
#include "mc/engine_gpu.hpp"
#include "mc/mc_launch.hpp"
#include "runtime/cuda_array.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <string_view>
#include <vector>

namespace ksum::mc::detail {

using ksum::detail::cuda_check;
using ksum::detail::DeviceArray;

bool gpu_available() {
  return gpu_count() > 0;
}

namespace {

// translate(): at most this many moves' draws per window (64 bytes each) and batches per group.
constexpr std::int64_t kMaxWindow = std::int64_t(1) << 18;
constexpr int kMaxGroup = 1024;

// The batch size chosen from N: the batch stops early where a particle comes back after an
// accepted move (expected after ~√(πN / 2a) trials at acceptance a), so B ~ 1.6·√N keeps the work
// thrown away moderate while a batch still has enough pairs to fill the GPU; past 512 the accept
// kernel's 32-trial chunks (~4 µs each) cost more than the larger batch saves. Measured on the
// H200 (bench/results/2026-11-26-h200-mc-accept): B = 512 was the best of 128 … 1024 at
// N = 10^5, 3·10^5 and 10^6.
int auto_batch(std::int64_t n) {
  const auto b = static_cast<int>(1.6 * std::sqrt(static_cast<double>(n)));
  return std::clamp((b + 15) / 16 * 16, 32, 512);
}

template <std::floating_point T> class GpuEngineImpl final : public GpuEngine<T> {
public:
  GpuEngineImpl(const PairParams<T> &params, int device, int batch)
      : dev_(device), batch_opt_(batch), pp_(params) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      cudaGetLastError();
      count = 0;
    }
    if (device < 0 || device >= count)
      throw Error(ErrorCode::device,
                  fmt::format("GPU {}: no such device ({} visible)", device, count));
    if (batch < 0 || batch > kMaxBatch)
      throw Error(
          ErrorCode::invalid_argument,
          fmt::format("translate batch {} is outside 0 … {} (0: chosen from N)", batch, kMaxBatch));
    cuda_check(cudaSetDevice(dev_), dev_, "cudaSetDevice");
    cuda_check(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, dev_), dev_,
               "cudaDeviceGetAttribute");
    cuda_check(cudaStreamCreate(&stream_), dev_, "cudaStreamCreate");
    cuda_check(cudaMallocHost(&host_result_, sizeof(GpuResult)), dev_, "cudaMallocHost");
    cuda_check(cudaMallocHost(&host_records_, sizeof(GpuBatchRecord) * kMaxGroup), dev_,
               "cudaMallocHost");
    fast_ = pp_.kappa == T(0) && (pp_.short_range == 0 || pp_.short_range == 1) && !pp_.periodic;
    result_.reserve(1, dev_);
    state_.reserve(1, dev_);
    // KSUM_MC_PROFILE=1: translate() times its two kernels with events, waiting for each batch
    // (so the wall time is not the unprofiled one), and the totals are printed at destruction.
    if (const char *e = std::getenv("KSUM_MC_PROFILE"); e && *e && std::string_view(e) != "0") {
      profile_ = true;
      for (auto &ev : events_)
        cuda_check(cudaEventCreate(&ev), dev_, "cudaEventCreate");
    }
    if (const char *e = std::getenv("KSUM_MC_LEAN"); e && std::string_view(e) == "0")
      lean_ = false;
  }

  ~GpuEngineImpl() override {
    cudaSetDevice(dev_);
    cudaStreamSynchronize(stream_);
    if (profile_) {
      if (prof_batches_ > 0)
        fmt::print(stderr,
                   "ksum mc profile (GPU {}, N = {}, batch {}): {} batches, {} trials; ΔU + "
                   "corrections kernel {:.3f} ms ({:.1f} us/batch), accept kernel {:.3f} ms ({:.1f} "
                   "us/batch)\n",
                   dev_, n_, batch_, prof_batches_, prof_trials_, prof_ms_[0],
                   1e3 * prof_ms_[0] / prof_batches_, prof_ms_[1],
                   1e3 * prof_ms_[1] / prof_batches_);
      for (auto ev : events_)
        cudaEventDestroy(ev);
    }
    cudaFreeHost(host_result_);
    cudaFreeHost(host_records_);
    cudaStreamDestroy(stream_);
  }

  void upload(const System &system) override {
    enter();
    sync("the previous GPU work");
    const std::int64_t n = system.size();
    if (n > std::numeric_limits<std::int32_t>::max() / 2)
      throw Error(ErrorCode::unsupported,
                  fmt::format("the GPU Monte Carlo engine holds < 2^30 particles; got {}", n));
    n_ = static_cast<std::int32_t>(n);
    put_particles(system, x_, y_, z_, q_, r_);
    // One contact distance for every pair (no short range, or hard spheres of one radius, as T):
    // translate()'s ΔU kernel then takes its uniform loop (mc_launch.hpp).
    uniform_ = fast_;
    T radius = 0;
    if (pp_.short_range == 1 && n > 0) {
      radius = static_cast<T>(system.radius[0]);
      for (std::int64_t i = 1; uniform_ && i < n; ++i)
        uniform_ = static_cast<T>(system.radius[static_cast<std::size_t>(i)]) == radius;
    }
    const T contact = radius + radius;
    contact2_ = std::max(contact * contact, std::numeric_limits<T>::min());
    // Bonds: CSR in both directions (ΔU of a moved particle) and the list (totals).
    std::vector<std::int32_t> begin(static_cast<std::size_t>(n) + 1, 0), nbr, pairs;
    for (const auto &bd : system.bonds) {
      ++begin[static_cast<std::size_t>(bd[0]) + 1];
      ++begin[static_cast<std::size_t>(bd[1]) + 1];
    }
    for (std::int64_t i = 0; i < n; ++i)
      begin[i + 1] += begin[i];
    nbr.resize(static_cast<std::size_t>(begin[n]));
    std::vector<std::int32_t> fill(begin.begin(), begin.end() - 1);
    pairs.reserve(2 * system.bonds.size());
    for (const auto &bd : system.bonds) {
      const auto i = static_cast<std::int32_t>(bd[0]), j = static_cast<std::int32_t>(bd[1]);
      nbr[fill[i]++] = j;
      nbr[fill[j]++] = i;
      pairs.push_back(i);
      pairs.push_back(j);
    }
    bonds_ = static_cast<std::int64_t>(system.bonds.size());
    bond_begin_.upload(begin.data(), n + 1);
    bond_nbr_.reserve(std::max<std::int64_t>(1, begin[n]), dev_);
    bond_nbr_.upload(nbr.data(), begin[n]);
    bond_pairs_.reserve(std::max<std::int64_t>(1, 2 * bonds_), dev_);
    bond_pairs_.upload(pairs.data(), 2 * bonds_);
    mark_.reserve(std::max<std::int64_t>(1, n), dev_);
    cuda_check(cudaMemset(mark_.ptr, 0, sizeof(std::uint32_t) * static_cast<std::size_t>(n)), dev_,
               "cudaMemset");
    generation_ = 0;
    slot_.reserve(std::max<std::int64_t>(1, n), dev_);
    batch_ = batch_opt_ > 0 ? batch_opt_ : auto_batch(n);
  }

  void download(System &system) override {
    enter();
    sync("the Monte Carlo kernels");
    std::vector<T> h(static_cast<std::size_t>(n_));
    auto get = [&](const DeviceArray<T> &d, std::vector<double> &out) {
      d.download(h.data(), n_);
      for (std::int32_t i = 0; i < n_; ++i)
        out[i] = static_cast<double>(h[i]);
    };
    get(x_, system.x);
    get(y_, system.y);
    get(z_, system.z);
  }

  Energy total() override {
    enter();
    GpuTotalArgs<T> a;
    a.sys = resident();
    a.pp = pp_;
    a.half = true;
    a.fast = fast_;
    return run_total(a);
  }

  Energy total_full_recompute(const System &system) override {
    enter();
    // The paper's path: every particle crosses PCIe for every call.
    sync("the previous GPU work");
    put_particles(system, fx_, fy_, fz_, fq_, fr_);
    std::vector<std::int32_t> pairs;
    pairs.reserve(2 * system.bonds.size());
    for (const auto &bd : system.bonds) {
      pairs.push_back(static_cast<std::int32_t>(bd[0]));
      pairs.push_back(static_cast<std::int32_t>(bd[1]));
    }
    const auto nb = static_cast<std::int64_t>(system.bonds.size());
    fpairs_.reserve(std::max<std::int64_t>(1, 2 * nb), dev_);
    fpairs_.upload(pairs.data(), 2 * nb);
    GpuTotalArgs<T> a;
    a.sys.x = fx_.ptr;
    a.sys.y = fy_.ptr;
    a.sys.z = fz_.ptr;
    a.sys.q = fq_.ptr;
    a.sys.r = fr_.ptr;
    a.sys.n = static_cast<std::int32_t>(system.size());
    a.sys.bond_pairs = fpairs_.ptr;
    a.sys.bonds = nb;
    a.pp = pp_;
    a.half = false;
    a.fast = fast_;
    return run_total(a);
  }

  Energy delta(const Move &move) override {
    enter();
    GpuMoveArgs<T> a = move_args(move);
    a.blocks = static_cast<int>(
        std::clamp<std::int64_t>((n_ + kTileThreads - 1) / kTileThreads, 1, 8 * sms_));
    reserve_partials(a.blocks);
    a.part = partials();
    a.result = result_.ptr;
    check(launch_delta(a, stream_), "the Monte Carlo ΔU kernels");
    return read_result("the Monte Carlo ΔU kernels");
  }

  void apply(const Move &move) override {
    enter();
    const GpuMoveArgs<T> a = move_args(move);
    check(launch_apply(a, stream_), "the Monte Carlo apply kernel");
  }

  TranslateResult translate(const TranslateParams &params,
                            const std::vector<std::int64_t> &movable) override {
    enter();
    TranslateResult res;
    if (params.count <= 0 || n_ == 0)
      return res;
    const int B = batch_;
    GpuBatchArgs<T> a;
    a.sys = resident();
    a.pp = pp_;
    a.fast = fast_;
    a.uniform = uniform_;
    a.contact2 = contact2_;
    a.lean = lean_;
    a.batch = B;
    a.ld = (B + 31) / 32 * 32;
    a.groups = (B + kTrialGroup - 1) / kTrialGroup;
    a.slices = slices_for(a);
    if (a.uniform && (n_ + a.slices - 1) / a.slices >= kUniformMaxSlice) {
      a.uniform = false; // past ~8·10^6 particles a slice: the general fast loop
      a.slices = slices_for(a);
    }

    // The movable list (null: every particle, in order) and the per-particle steps, sent only
    // when they differ from what the last call sent (at N = 10^6 the steps are 8 MB: re-sending
    // them took a third of a 10-batch call).
    bool identity = static_cast<std::int64_t>(movable.size()) == n_;
    for (std::size_t k = 0; identity && k < movable.size(); ++k)
      identity = movable[k] == static_cast<std::int64_t>(k);
    const std::int32_t *mov = nullptr;
    if (!identity) {
      if (movable_sent_.size() != movable.size() ||
          !std::equal(movable.begin(), movable.end(), movable_sent_.begin(),
                      [](std::int64_t a, std::int32_t b) { return a == b; })) {
        movable_sent_.assign(movable.begin(), movable.end());
        put_async(movable_, movable_sent_.data(), static_cast<std::int64_t>(movable_sent_.size()));
      }
      mov = movable_.ptr;
    }
    const double *step = nullptr;
    if (!params.step.empty()) {
      if (step_sent_ != params.step) {
        step_sent_ = params.step;
        put_async(step_, step_sent_.data(), static_cast<std::int64_t>(step_sent_.size()));
      }
      step = step_.ptr;
    }

    const std::int64_t window_cap = std::min<std::int64_t>(params.count, kMaxWindow);
    grow(draws_, window_cap);
    grow(trials_, a.ld);
    grow(part_e_, std::int64_t(a.slices) * a.ld);
    grow(part_ov_, std::int64_t(a.slices) * a.ld);
    grow(corr_e_, std::int64_t(a.ld) * a.ld);
    grow(corr_ov_, std::int64_t(a.ld) * a.ld);
    grow(records_, kMaxGroup);
    a.draws = draws_.ptr;
    a.state = state_.ptr;
    a.trials = trials_.ptr;
    a.part_e = part_e_.ptr;
    a.part_ov = part_ov_.ptr;
    a.corr_e = corr_e_.ptr;
    a.corr_ov = corr_ov_.ptr;
    a.records = records_.ptr;

    std::int64_t done = 0;
    double per_batch = B; // moves a batch gets through, as measured so far
    while (done < params.count) {
      const std::int64_t window = std::min(params.count - done, window_cap);
      const int group = static_cast<int>(std::clamp<std::int64_t>(
          static_cast<std::int64_t>(std::ceil(static_cast<double>(window) / per_batch)), 1,
          kMaxGroup));
      const std::uint64_t t0 = params.first + static_cast<std::uint64_t>(done);
      check(launch_draws(params.seed, t0, window, mov, static_cast<std::int64_t>(movable.size()),
                         step, params.max_step, draws_.ptr, stream_),
            "the Monte Carlo draw kernel");
      state_host_ = GpuChainState{t0, t0 + static_cast<std::uint64_t>(window), t0};
      cuda_check(cudaMemcpyAsync(state_.ptr, &state_host_, sizeof(GpuChainState),
                                 cudaMemcpyHostToDevice, stream_),
                 dev_, "cudaMemcpyAsync of the chain state");
      for (int k = 0; k < group; ++k) {
        a.record = k;
        if (!profile_) {
          check(launch_batch(a, stream_), "the Monte Carlo batch kernels");
          continue;
        }
        cuda_check(cudaEventRecord(events_[0], stream_), dev_, "cudaEventRecord");
        check(launch_batch(a, stream_, events_[1]), "the Monte Carlo batch kernels");
        cuda_check(cudaEventRecord(events_[2], stream_), dev_, "cudaEventRecord");
        cuda_check(cudaEventSynchronize(events_[2]), dev_, "cudaEventSynchronize");
        for (int i = 0; i < 2; ++i) {
          float ms = 0;
          cuda_check(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]), dev_,
                     "cudaEventElapsedTime");
          prof_ms_[i] += ms;
        }
        ++prof_batches_;
      }
      cuda_check(cudaMemcpyAsync(host_records_, records_.ptr, sizeof(GpuBatchRecord) * group,
                                 cudaMemcpyDeviceToHost, stream_),
                 dev_, "cudaMemcpyAsync of the batch records");
      sync("the Monte Carlo batch kernels");
      std::int64_t processed = 0, batches = 0;
      for (int k = 0; k < group; ++k) {
        const GpuBatchRecord &r = host_records_[k];
        if (r.processed == 0)
          continue;
        processed += r.processed;
        ++batches;
        res.accepted += r.accepted;
        res.rejected_overlap += r.rejected_overlap;
        res.delta_u += r.delta_u;
      }
      if (processed <= 0)
        throw Error(ErrorCode::internal,
                    fmt::format("GPU {}: a group of {} Monte Carlo batches made no progress at "
                                "move {}",
                                dev_, group, t0));
      res.launches += batches;
      prof_trials_ += processed;
      done += processed;
      per_batch = std::max(1.0, static_cast<double>(processed) / static_cast<double>(batches));
    }
    res.attempted = done;
    return res;
  }

private:
  // The ΔU kernel's grid is groups × slices blocks of equal work: the slices (of at least 256
  // particles, at most kMaxSlices) are chosen so that the grid fills whole waves of the chip's
  // resident blocks (a last wave a third full would leave two thirds of the chip idle while it
  // runs): the fewest waves, up to 8, whose fill is ≥ 90 %, else the best fill.
  int slices_for(const GpuBatchArgs<T> &a) {
    if (resident_ <= 0 || resident_uniform_ != a.uniform || resident_fast_ != a.fast) {
      resident_ = batch_blocks_per_sm(a) * sms_;
      resident_uniform_ = a.uniform;
      resident_fast_ = a.fast;
    }
    const std::int64_t most = std::clamp<std::int64_t>((n_ + 255) / 256, 1, kMaxSlices);
    int best =
        static_cast<int>(std::min<std::int64_t>(most, (resident_ + a.groups - 1) / a.groups));
    double best_fill = 0;
    for (int waves = 1; waves <= 8; ++waves) {
      const auto sl = static_cast<int>(
          std::clamp<std::int64_t>(std::int64_t(waves) * resident_ / a.groups, 1, most));
      const std::int64_t blocks = std::int64_t(sl) * a.groups;
      const std::int64_t used = (blocks + resident_ - 1) / resident_;
      const double fill = static_cast<double>(blocks) / static_cast<double>(used * resident_);
      if (fill > best_fill + 1e-9) {
        best_fill = fill;
        best = sl;
      }
      if (fill >= 0.9 || sl == most)
        break;
    }
    return best;
  }

  void enter() { cuda_check(cudaSetDevice(dev_), dev_, "cudaSetDevice"); }
  void sync(const char *what) { cuda_check(cudaStreamSynchronize(stream_), dev_, what); }
  void check(const char *err, const char *what) {
    if (err && *err)
      throw Error(ErrorCode::device, fmt::format("GPU {}: {} failed: {}", dev_, what, err));
  }

  // Growing an array frees the old one, which queued kernels may still read: wait for them.
  template <class U> void grow(DeviceArray<U> &d, std::int64_t n) {
    if (n > d.size) {
      sync("the previous GPU work");
      d.reserve(n, dev_);
    }
  }

  template <class U> void put_async(DeviceArray<U> &d, const U *h, std::int64_t n) {
    grow(d, std::max<std::int64_t>(n, 1));
    if (n > 0)
      cuda_check(cudaMemcpyAsync(d.ptr, h, sizeof(U) * static_cast<std::size_t>(n),
                                 cudaMemcpyHostToDevice, stream_),
                 dev_, "cudaMemcpyAsync to the GPU");
  }

  // Positions, charges and radii in precision T (synchronous copies; the stream is idle).
  void put_particles(const System &s, DeviceArray<T> &x, DeviceArray<T> &y, DeviceArray<T> &z,
                     DeviceArray<T> &q, DeviceArray<T> &r) {
    const std::int64_t n = s.size();
    std::vector<T> h(static_cast<std::size_t>(n));
    auto put = [&](DeviceArray<T> &d, const std::vector<double> &v) {
      for (std::int64_t i = 0; i < n; ++i)
        h[i] = static_cast<T>(v[i]);
      d.reserve(std::max<std::int64_t>(n, 1), dev_);
      d.upload(h.data(), n);
    };
    put(x, s.x);
    put(y, s.y);
    put(z, s.z);
    put(q, s.charge);
    put(r, s.radius);
  }

  GpuParticles<T> resident() const {
    GpuParticles<T> p;
    p.x = x_.ptr;
    p.y = y_.ptr;
    p.z = z_.ptr;
    p.q = q_.ptr;
    p.r = r_.ptr;
    p.n = n_;
    p.bond_begin = bond_begin_.ptr;
    p.bond_nbr = bond_nbr_.ptr;
    p.bond_pairs = bond_pairs_.ptr;
    p.bonds = bonds_;
    return p;
  }

  void reserve_partials(std::int64_t n) {
    grow(part_sum_e_, std::max<std::int64_t>(n, 1));
    grow(part_sum_ov_, std::max<std::int64_t>(n, 1));
  }
  GpuPartials partials() const {
    return GpuPartials{part_sum_e_.ptr, part_sum_ov_.ptr,
                       std::min(part_sum_e_.size, part_sum_ov_.size)};
  }

  Energy read_result(const char *what) {
    cuda_check(cudaMemcpyAsync(host_result_, result_.ptr, sizeof(GpuResult), cudaMemcpyDeviceToHost,
                               stream_),
               dev_, "cudaMemcpyAsync of the energy");
    sync(what);
    return Energy{host_result_->value, static_cast<std::int64_t>(host_result_->overlaps)};
  }

  Energy run_total(GpuTotalArgs<T> &a) {
    reserve_partials((a.sys.n + kTileThreads - 1) / kTileThreads + kExtraBlocks);
    a.part = partials();
    a.result = result_.ptr;
    check(launch_total(a, stream_), "the Monte Carlo total-energy kernels");
    return read_result("the Monte Carlo total-energy kernels");
  }

  // The move's particles and new positions on the device (pageable copies: the host vectors
  // may be reused as soon as the call returns).
  GpuMoveArgs<T> move_args(const Move &move) {
    const auto m = static_cast<std::int64_t>(move.particles.size());
    std::vector<std::int32_t> idx(static_cast<std::size_t>(m));
    std::vector<T> xyz(static_cast<std::size_t>(3 * m));
    for (std::int64_t k = 0; k < m; ++k) {
      idx[k] = static_cast<std::int32_t>(move.particles[k]);
      for (int c = 0; c < 3; ++c)
        xyz[c * m + k] = static_cast<T>(move.xyz[3 * k + c]);
    }
    put_async(move_idx_, idx.data(), m);
    put_async(move_xyz_, xyz.data(), 3 * m);
    if (++generation_ == 0) { // the marks wrapped around: clear them
      cuda_check(cudaMemsetAsync(mark_.ptr, 0, sizeof(std::uint32_t) * static_cast<std::size_t>(n_),
                                 stream_),
                 dev_, "cudaMemsetAsync");
      generation_ = 1;
    }
    GpuMoveArgs<T> a;
    a.sys = resident();
    a.pp = pp_;
    a.fast = fast_;
    a.rigid = move.rigid;
    a.idx = move_idx_.ptr;
    a.nxyz = move_xyz_.ptr;
    a.m = static_cast<std::int32_t>(m);
    a.mark = mark_.ptr;
    a.slot = slot_.ptr;
    a.generation = generation_;
    return a;
  }

  int dev_ = 0, sms_ = 1, batch_opt_ = 0, batch_ = 32;
  bool profile_ = false; // KSUM_MC_PROFILE
  bool lean_ = true;     // KSUM_MC_LEAN=0: translate()'s uniform loop always with its self test
  cudaEvent_t events_[3] = {};
  double prof_ms_[2] = {};
  std::int64_t prof_batches_ = 0, prof_trials_ = 0;
  PairParams<T> pp_;
  bool fast_ = false, uniform_ = false;
  T contact2_ = 0;
  int resident_ = 0; // resident ΔU blocks on the chip for the variant below
  bool resident_uniform_ = false, resident_fast_ = false;
  cudaStream_t stream_ = nullptr;
  GpuResult *host_result_ = nullptr;
  GpuBatchRecord *host_records_ = nullptr;
  GpuChainState state_host_{};
  std::int32_t n_ = 0;
  std::int64_t bonds_ = 0;
  std::uint32_t generation_ = 0;
  DeviceArray<T> x_, y_, z_, q_, r_;
  DeviceArray<T> fx_, fy_, fz_, fq_, fr_;
  DeviceArray<std::int32_t> bond_begin_, bond_nbr_, bond_pairs_, fpairs_, slot_;
  DeviceArray<std::uint32_t> mark_;
  DeviceArray<double> part_sum_e_;
  DeviceArray<long long> part_sum_ov_;
  DeviceArray<GpuResult> result_;
  DeviceArray<std::int32_t> move_idx_;
  DeviceArray<T> move_xyz_;
  DeviceArray<std::int32_t> movable_;
  DeviceArray<double> step_;
  std::vector<std::int32_t> movable_sent_; // what movable_ and step_ hold
  std::vector<double> step_sent_;
  DeviceArray<GpuDraw> draws_;
  DeviceArray<GpuChainState> state_;
  DeviceArray<GpuTrialOut<T>> trials_;
  DeviceArray<double> part_e_, corr_e_;
  DeviceArray<std::int32_t> part_ov_, corr_ov_;
  DeviceArray<GpuBatchRecord> records_;
};

} // namespace

template <class T>
std::unique_ptr<GpuEngine<T>> make_gpu_engine(const PairParams<T> &params, int device, int batch) {
  return std::make_unique<GpuEngineImpl<T>>(params, device, batch);
}

template std::unique_ptr<GpuEngine<float>> make_gpu_engine(const PairParams<float> &, int, int);
template std::unique_ptr<GpuEngine<double>> make_gpu_engine(const PairParams<double> &, int, int);

} // namespace ksum::mc::detail
