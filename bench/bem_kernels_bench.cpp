// The TD-BEM blocked summation kernels (seed 003 §6.3, tables 2 and 3):
//   bem_kernels_bench [--kernel full,contiguous] [--precision f32,f64] [--br LIST] [--bc LIST]
//                     [--slices 256] [--rows 6400] [--kmax 256] [--ng 8] [--reps 20]
//                     [--no-gpu] [--no-cpu] [--cpu-slices 32] [--cpu-reps 3] [--json FILE]
//   As the seed: `slices` slices of `rows` rows, every row a dense row vector of b_c values
//   (Contiguous-Blocking: a random k0 per row; Full-Blocking: one random k0 per block of b_r rows,
//   so each block is full), b_r ∈ {16, 32, 64, 128} (and 256 for Contiguous-Blocking) × b_c ∈
//   {16, 32, 64, 128} by default. GPU: GpuSlices::time_kernel (median of --reps after warm-up);
//   CPU: sum_full_cpu / sum_contiguous_cpu on one thread over the first --cpu-slices slices
//   (the rate does not depend on the slice count; median of --cpu-reps).
//   Counted as the seed counts: 2·n_g flops per stored value (padding included); bytes = the
//   stored values plus their int32 row starts (Contiguous-Blocking) or block origins
//   (Full-Blocking). The roofline is the H100 SXM's HBM3 peak, 3.35 TB/s; a device-to-device
//   cudaMemcpy (read + write bytes) is measured in the same run and reported too. The seed does not
//   state its n_g; ours is --ng (default 8).
#include "bem/blocking.hpp"
#include "bem/blocking_cuda.hpp"
#include "bench_common.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#ifdef KSUM_USE_CUDA
#include <cuda_runtime.h>
#endif

using namespace ksum;
using namespace ksum::bem;
using nlohmann::json;

namespace {

constexpr double kHbmPeak = 3.35e12; // H100 SXM HBM3, bytes/s

struct Args {
  std::string kernels = "full,contiguous", precisions = "f32,f64", br, bc = "16,32,64,128";
  std::int64_t slices = 256, rows = 6400;
  int kmax = 256, ng = 8, reps = 20, cpu_slices = 32, cpu_reps = 3;
  bool gpu = true, cpu = true;
  std::string json;
};

std::vector<std::string> str_list(const std::string &s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string t;
  while (std::getline(ss, t, ','))
    if (!t.empty())
      v.push_back(t);
  if (v.empty())
    throw Error(ErrorCode::invalid_argument, fmt::format("empty list '{}'", s));
  return v;
}

std::vector<int> int_list(const std::string &s) {
  std::vector<int> v;
  for (const auto &t : str_list(s))
    v.push_back(std::stoi(t));
  return v;
}

// Seed 003 tables 2 (Full-Blocking) and 3 (Contiguous-Blocking), GFlop/s on one Tesla M2070 GPU
// and one Xeon X5650 core; rows b_r = 16, 32, 64, 128, 256 (Full-Blocking has no 256 row),
// columns b_c = 16, 32, 64, 128.
struct SeedTable {
  double gpu[5][4], cpu[5][4];
  int rows;
};
constexpr SeedTable kSeedFull[2] = {
    {{{37, 54, 70, 78}, {56, 91, 130, 168}, {70, 114, 169, 222}, {86, 137, 194, 245}},
     {{2.7, 2.7, 2.8, 2.8}, {4.2, 8.2, 8.3, 8.3}, {8.4, 8.5, 8.5, 8.5}, {7.8, 7.9, 7.9, 8}},
     4},
    {{{27, 38, 48, 57}, {35, 54, 75, 93}, {43, 64, 90, 114}, {51, 77, 104, 125}},
     {{2.6, 2.6, 2.6, 2.7}, {4.2, 4.2, 4.3, 4.3}, {3.8, 3.8, 3.9, 3.9}, {3.8, 3.8, 3.8, 3.9}},
     4}};
constexpr SeedTable kSeedContiguous[2] = {{{{39.0, 57.1, 73.6, 85.3},
                                            {57.8, 85.2, 112.8, 134.0},
                                            {84.3, 126.8, 165.8, 201.0},
                                            {106.5, 162.6, 220.0, 267.0},
                                            {103.0, 156.6, 211.6, 257.4}},
                                           {{2.2, 2.3, 2.1, 2.1},
                                            {4.1, 4.7, 4.1, 3.8},
                                            {4.7, 4.8, 4.1, 2.9},
                                            {4.6, 4.4, 2.6, 2.5},
                                            {4.0, 2.4, 2.1, 2.0}},
                                           5},
                                          {{{25.5, 35.6, 44.2, 50.4},
                                            {39.4, 56.3, 71.9, 83.7},
                                            {50.4, 74.3, 98.9, 117.2},
                                            {55.5, 83.1, 110.1, 131.7},
                                            {58.6, 88.5, 118.9, 143.0}},
                                           {{2.6, 1.7, 1.7, 1.6},
                                            {2.6, 2.2, 2.0, 1.6},
                                            {2.4, 2.0, 1.5, 1.5},
                                            {2.2, 1.5, 1.4, 1.3},
                                            {1.4, 1.4, 1.3, 1.2}},
                                           5}};

// The seed's value for (b_r, b_c), if the table has it.
std::optional<double> seed_value(bool contiguous, bool dbl, int br, int bc, bool gpu) {
  const SeedTable &t = contiguous ? kSeedContiguous[dbl] : kSeedFull[dbl];
  int r = -1, c = -1;
  for (int q = 0; q < 5; ++q)
    if (br == (16 << q))
      r = q;
  for (int q = 0; q < 4; ++q)
    if (bc == (16 << q))
      c = q;
  if (r < 0 || r >= t.rows || c < 0)
    return std::nullopt;
  return gpu ? t.gpu[r][c] : t.cpu[r][c];
}

std::string num(std::optional<double> v, const char *spec = "{:.1f}") {
  return v ? fmt::format(fmt::runtime(spec), *v) : std::string("—");
}

// Deterministic values in [−1, 1) and integers from a counter (splitmix64): the blocks of 10^8
// values fill in parallel, and the kernels' speed does not depend on the values.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
template <class T> T value_at(std::uint64_t q) {
  return static_cast<T>(static_cast<double>(mix(q) >> 11) * 0x1.0p-52 - 1.0);
}

template <class T> void fill_values(std::vector<T> &v, std::uint64_t salt) {
  const auto size = static_cast<std::int64_t>(v.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t q = 0; q < size; ++q)
    v[static_cast<std::size_t>(q)] = value_at<T>(static_cast<std::uint64_t>(q) ^ salt);
}

// Seed §6.3's test blocks, built directly (the cut of such regular slices is trivial: one block
// per b_r rows and slice, no padding).
template <class T>
ContiguousBlocks<T> contiguous_blocks(const Args &a, int br, int bc, std::uint64_t salt) {
  ContiguousBlocks<T> b;
  b.n = a.rows;
  b.kmax = a.kmax;
  b.br = br;
  b.bc = bc;
  b.j0 = 0;
  b.j1 = a.slices;
  b.nb = (a.rows + br - 1) / br;
  const std::int64_t rows = b.nb * br;
  b.k0.resize(static_cast<std::size_t>(a.slices * rows));
  for (std::int64_t j = 0; j < a.slices; ++j)
    for (std::int64_t i = 0; i < rows; ++i)
      b.k0[static_cast<std::size_t>(j * rows + i)] =
          i < a.rows
              ? 1 + static_cast<std::int32_t>(mix(salt + static_cast<std::uint64_t>(j * rows + i)) %
                                              static_cast<std::uint64_t>(a.kmax - bc + 1))
              : 1;
  b.values.resize(b.k0.size() * static_cast<std::size_t>(bc));
  fill_values(b.values, salt);
  // Padding rows (past n) hold zeros, as ContiguousBlocks::build leaves them.
  if (rows > a.rows)
    for (std::int64_t j = 0; j < a.slices; ++j)
      for (std::int64_t i = a.rows; i < rows; ++i)
        for (int c = 0; c < bc; ++c)
          b.values[static_cast<std::size_t>(((j * b.nb + i / br) * bc + c) * br + i % br)] = 0;
  return b;
}

template <class T> FullBlocks<T> full_blocks(const Args &a, int br, int bc, std::uint64_t salt) {
  FullBlocks<T> b;
  b.n = a.rows;
  b.kmax = a.kmax;
  b.br = br;
  b.bc = bc;
  b.j0 = 0;
  b.j1 = a.slices;
  const std::int64_t nb = (a.rows + br - 1) / br;
  b.slice_ptr.resize(static_cast<std::size_t>(a.slices) + 1);
  for (std::int64_t j = 0; j <= a.slices; ++j)
    b.slice_ptr[static_cast<std::size_t>(j)] = j * nb;
  for (std::int64_t j = 0; j < a.slices; ++j)
    for (std::int64_t q = 0; q < nb; ++q) {
      b.row0.push_back(static_cast<std::int32_t>(q * br));
      b.col0.push_back(
          1 + static_cast<std::int32_t>(mix(salt + static_cast<std::uint64_t>(j * nb + q)) %
                                        static_cast<std::uint64_t>(a.kmax - bc + 1)));
    }
  b.values.resize(static_cast<std::size_t>(a.slices * nb * br * bc));
  fill_values(b.values, salt);
  return b;
}

template <class T> History<T> make_history(const Args &a, int bc_max) {
  History<T> h(a.rows, a.kmax, a.ng - 1, bc_max);
  std::vector<T> step(static_cast<std::size_t>(a.rows));
  for (int t = 0; t < a.kmax; ++t) {
    for (std::int64_t j = 0; j < a.rows; ++j)
      step[static_cast<std::size_t>(j)] =
          value_at<T>(static_cast<std::uint64_t>(t) * 1000003u + static_cast<std::uint64_t>(j));
    h.push(step);
  }
  return h;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Device-to-device copy bandwidth (read + write bytes per second) of 1 GiB, median of 10.
double measure_d2d() {
#ifdef KSUM_USE_CUDA
  const std::size_t bytes = std::size_t(1) << 30;
  void *src = nullptr, *dst = nullptr;
  if (cudaMalloc(&src, bytes) != cudaSuccess || cudaMalloc(&dst, bytes) != cudaSuccess) {
    cudaFree(src);
    cudaGetLastError();
    return 0;
  }
  cudaMemset(src, 1, bytes);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<double> t;
  for (int r = 0; r < 12; ++r) {
    cudaEventRecord(e0);
    cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (r >= 2)
      t.push_back(ms * 1e-3);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(src);
  cudaFree(dst);
  return 2.0 * static_cast<double>(bytes) / median(t);
#else
  return 0;
#endif
}

struct Row {
  std::string kernel, precision;
  int br = 0, bc = 0;
  double stored = 0, bytes = 0, flops = 0;
  std::optional<double> gpu_s, cpu_s;
};

template <class T>
void run_precision(const Args &a, bool gpu, double d2d, std::vector<Row> &rows, json &out) {
  const bool dbl = std::is_same_v<T, double>;
  const char *prec = dbl ? "f64" : "f32";
  int bc_max = 0;
  for (int bc : int_list(a.bc))
    bc_max = std::max(bc_max, bc);
  if (bc_max > a.kmax)
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("--kmax {} is below b_c = {}: a row vector must fit 1 … kmax", a.kmax, bc_max));
  const auto t_hist = std::chrono::steady_clock::now();
  const History<T> past = make_history<T>(a, bc_max);
  fmt::print(stderr, "{}: history of {} steps in {:.1f} s\n", prec, a.kmax, seconds_since(t_hist));
  const std::int64_t cpu_slices = std::min<std::int64_t>(a.cpu_slices, a.slices);
  for (const auto &kernel : str_list(a.kernels)) {
    const bool contiguous = kernel == "contiguous";
    if (!contiguous && kernel != "full")
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("--kernel {}: valid are full, contiguous", kernel));
    const std::string br_list =
        a.br.empty() ? (contiguous ? "16,32,64,128,256" : "16,32,64,128") : a.br;
    for (int br : int_list(br_list))
      for (int bc : int_list(a.bc)) {
        Row r;
        r.kernel = kernel;
        r.precision = prec;
        r.br = br;
        r.bc = bc;
        const std::uint64_t salt = mix(static_cast<std::uint64_t>(br * 1000 + bc));
        auto measure = [&](const auto &blocks, double index_bytes, auto cpu_kernel) {
          r.stored = static_cast<double>(blocks.values.size());
          r.bytes = r.stored * sizeof(T) + index_bytes;
          r.flops = 2.0 * a.ng * r.stored;
          if (gpu) {
            GpuSlices<T> worker(0, blocks, a.ng);
            worker.set_history(past);
            r.gpu_s = worker.time_kernel(a.ng, 0, a.slices, a.reps);
          }
          if (a.cpu && cpu_slices > 0) {
            std::vector<T> s(static_cast<std::size_t>(a.ng * a.rows), T(0));
            std::vector<double> t;
            for (int rep = 0; rep <= a.cpu_reps; ++rep) { // the first is a warm-up
              const auto t0 = std::chrono::steady_clock::now();
              cpu_kernel(blocks, past, a.ng, 0, cpu_slices, s.data(), 1);
              if (rep > 0)
                t.push_back(seconds_since(t0));
            }
            // Scaled to all slices: every slice holds the same number of values.
            r.cpu_s = median(t) * static_cast<double>(a.slices) / static_cast<double>(cpu_slices);
          }
        };
        if (contiguous) {
          const auto blocks = contiguous_blocks<T>(a, br, bc, salt);
          measure(blocks, 4.0 * static_cast<double>(blocks.k0.size()),
                  [](const auto &b, const auto &p, int ng, std::int64_t j0, std::int64_t j1, T *s,
                     int threads) { sum_contiguous_cpu(b, p, ng, j0, j1, s, threads); });
        } else {
          const auto blocks = full_blocks<T>(a, br, bc, salt);
          measure(blocks, 12.0 * static_cast<double>(blocks.blocks()),
                  [](const auto &b, const auto &p, int ng, std::int64_t j0, std::int64_t j1, T *s,
                     int threads) { sum_full_cpu(b, p, ng, j0, j1, s, threads); });
        }
        const auto seed_gpu = seed_value(contiguous, dbl, br, bc, true);
        const auto seed_cpu = seed_value(contiguous, dbl, br, bc, false);
        json j = {{"kernel", kernel},
                  {"precision", prec},
                  {"br", br},
                  {"bc", bc},
                  {"ng", a.ng},
                  {"slices", a.slices},
                  {"rows", a.rows},
                  {"kmax", a.kmax},
                  {"stored_values", r.stored},
                  {"bytes", r.bytes},
                  {"flops", r.flops},
                  {"seed_gpu_gflops", nullptr},
                  {"seed_cpu_gflops", nullptr}};
        if (seed_gpu)
          j["seed_gpu_gflops"] = *seed_gpu;
        if (seed_cpu)
          j["seed_cpu_gflops"] = *seed_cpu;
        if (r.gpu_s) {
          j["gpu_seconds"] = *r.gpu_s;
          j["gpu_gflops"] = r.flops / *r.gpu_s * 1e-9;
          j["gpu_gbs"] = r.bytes / *r.gpu_s * 1e-9;
          j["gpu_hbm_peak_fraction"] = r.bytes / *r.gpu_s / kHbmPeak;
          if (d2d > 0)
            j["gpu_d2d_fraction"] = r.bytes / *r.gpu_s / d2d;
        }
        if (r.cpu_s) {
          j["cpu_seconds_scaled"] = *r.cpu_s;
          j["cpu_gflops_1core"] = r.flops / *r.cpu_s * 1e-9;
        }
        out["rows"].push_back(j);
        rows.push_back(r);
        fmt::print(stderr, "{} {} {}x{}: {}\n", kernel, prec, br, bc,
                   r.gpu_s ? fmt::format("{:.1f} GFlop/s", r.flops / *r.gpu_s * 1e-9)
                           : std::string("(no GPU)"));
      }
  }
}

void print_table(const Args &a, const std::vector<Row> &rows, double d2d) {
  fmt::print(
      "| kernel | prec | b_r | b_c | GPU GFlop/s | seed GPU | × seed | GB/s | % of 3.35 TB/s "
      "| % of D2D copy | CPU 1 core GFlop/s | seed CPU |\n");
  fmt::print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
  for (const Row &r : rows) {
    const bool contiguous = r.kernel == "contiguous", dbl = r.precision == "f64";
    const auto seed_gpu = seed_value(contiguous, dbl, r.br, r.bc, true);
    std::optional<double> gf, gbs, peak, copy, ratio, cpu;
    if (r.gpu_s) {
      gf = r.flops / *r.gpu_s * 1e-9;
      gbs = r.bytes / *r.gpu_s * 1e-9;
      peak = 100 * r.bytes / *r.gpu_s / kHbmPeak;
      if (d2d > 0)
        copy = 100 * r.bytes / *r.gpu_s / d2d;
      if (seed_gpu)
        ratio = *gf / *seed_gpu;
    }
    if (r.cpu_s)
      cpu = r.flops / *r.cpu_s * 1e-9;
    fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.kernel,
               r.precision, r.br, r.bc, num(gf), num(seed_gpu), num(ratio, "{:.0f}"),
               num(gbs, "{:.0f}"), num(peak, "{:.0f}"), num(copy, "{:.0f}"), num(cpu, "{:.2f}"),
               num(seed_value(contiguous, dbl, r.br, r.bc, false)));
  }
  fmt::print("\n{} slices × {} rows, dense row vectors of b_c values, kmax {}, n_g = {}; flops = "
             "2·n_g per stored value; bytes = values + int32 row starts (contiguous) or block "
             "origins (full); D2D copy {:.0f} GB/s (read + write)\n",
             a.slices, a.rows, a.kmax, a.ng, d2d * 1e-9);
}

} // namespace

int main(int argc, char **argv) {
  Args a;
  auto need = [&](int &i) -> std::string {
    if (i + 1 >= argc)
      throw Error(ErrorCode::invalid_argument, fmt::format("{} needs a value", argv[i]));
    return argv[++i];
  };
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string k = argv[i];
      if (k == "--help" || k == "-h")
        return bench::print_header_help(__FILE__);
      if (k == "--kernel")
        a.kernels = need(i);
      else if (k == "--precision")
        a.precisions = need(i);
      else if (k == "--br")
        a.br = need(i);
      else if (k == "--bc")
        a.bc = need(i);
      else if (k == "--slices")
        a.slices = std::stoll(need(i));
      else if (k == "--rows")
        a.rows = std::stoll(need(i));
      else if (k == "--kmax")
        a.kmax = std::stoi(need(i));
      else if (k == "--ng")
        a.ng = std::stoi(need(i));
      else if (k == "--reps")
        a.reps = std::max(1, std::stoi(need(i)));
      else if (k == "--cpu-slices")
        a.cpu_slices = std::max(1, std::stoi(need(i)));
      else if (k == "--cpu-reps")
        a.cpu_reps = std::max(1, std::stoi(need(i)));
      else if (k == "--no-gpu")
        a.gpu = false;
      else if (k == "--no-cpu")
        a.cpu = false;
      else if (k == "--json")
        a.json = need(i);
      else
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("unknown option '{}' (see --help)", k));
    }
    if (a.slices < 1 || a.rows < 1 || a.ng < 1)
      throw Error(
          ErrorCode::invalid_argument,
          fmt::format("--slices {} --rows {} --ng {}: all must be ≥ 1", a.slices, a.rows, a.ng));
    const auto devices = gpus();
    const bool gpu = a.gpu && !devices.empty();
    if (a.gpu && !gpu)
      fmt::print(stderr, "no CUDA GPU visible: CPU columns only\n");
    const double d2d = gpu ? measure_d2d() : 0;
    json out = {{"bench", "bem_kernels"},
                {"gpu", gpu ? devices.front().name : std::string()},
                {"d2d_copy_bytes_per_s", d2d},
                {"hbm_peak_bytes_per_s", kHbmPeak},
                {"ng", a.ng},
                {"rows", json::array()}};
    std::vector<Row> rows;
    for (const auto &p : str_list(a.precisions)) {
      if (p == "f32")
        run_precision<float>(a, gpu, d2d, rows, out);
      else if (p == "f64")
        run_precision<double>(a, gpu, d2d, rows, out);
      else
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("--precision {}: valid are f32, f64", p));
    }
    print_table(a, rows, d2d);
    if (!a.json.empty()) {
      std::ofstream f(a.json);
      f << out.dump(1) << "\n";
      if (!f)
        throw Error(ErrorCode::io, fmt::format("{}: cannot write the JSON results", a.json));
    }
    return 0;
  } catch (const std::exception &e) {
    fmt::print(stderr, "bem_kernels_bench: {}\n", e.what());
    return 2;
  }
}
