// Block Sherman–Morrison inverse benchmark (issue 23; seed 004 Paper III) through the public API
// (include/ksum/bsm.hpp), with LAPACK getrf + getri (LAPACKE, all cores) in the same run.
//   bsm_bench [--max-n 4096] [--sizes 256,512,...] [--precision f64,f32] [--svsm-max-n 1024]
//             [--block-n 2048] [--blocks 16,32,...] [--update-sizes 1024,2048,4096]
//             [--ranks 1,8,64] [--paper-n 2048] [--reps 3] [--budget 20] [--time-limit S]
//             [--threads T] [--json FILE] [--png FILE]
// (a) inverse(A) in the standard case (A0 = diag(A), X = A − A0, Y = I) vs n for every method and
//     every backend the API accepts (one that is not built is skipped with its message), and
//     LAPACK's getrf + getri on the same matrix; A = I + G / (2√n), G standard normal.
// (b) BSM and RMBSM vs the block size s at n = --block-n.
// (c) InverseUpdate::update of rank m vs refactoring (forming A + XYᵀ, getrf + getri).
// (d) the paper's own set-up, A0 = I and random X, Y of n × m (σ = m/n ≤ 1/2, s = m, the paper's
//     best block there), through inverse_update with A0⁻¹ as an operator, vs LAPACK.
// Every row carries the residual ‖A·A⁻¹ − I‖_F / √n, computed in fp64 (dgemm). Timing: host wall
// clock around the whole call, median of the timed calls (at least one, up to --reps while their
// sum stays under 2 s). A size whose predicted time (the last size's, scaled by n³) exceeds
// --budget is skipped, and so is every measurement once --time-limit seconds have passed (the
// tables of what was measured are still printed and written).
#include "bench_common.hpp"
#include "log_plot.hpp"

#include <ksum/bsm.hpp>
#include <ksum/device.hpp>
#include <ksum/error.hpp>

#include <algorithm>
#include <cblas.h>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <functional>
#include <lapacke.h>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace ksum;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// Seed 004 Paper III: CPU runs on an eight-core Intel Xeon X6550 with the Sun Performance Library
// (Fortran codes); GPU runs on a Tesla M2050 (CUBLAS 3.2, gemm only) beside two 8-core AMD Opteron
// 6220 at 3 GHz (ACML, 8 threads). Its numbers, read from its text (the figures carry no tables):
// BSM with the best block about 12× faster than the direct inverse (small σ = m/n), close to
// linear speed-up on 8 cores, the GPU up to 1.2× the CPU; best s = m for σ ≤ 1/2 and
// 0.02 m … 0.2 m above. Its Table 1 counts BSM as 4σ²n³ + 2σ(1 + σs − s)n² + 3σs²n flops
// (general Y, without the last product A0⁻¹ U R Vᵀ A0⁻¹).
constexpr const char *kPaperHardware =
    "CPU: 8-core Intel Xeon X6550, Sun Performance Library; GPU: Tesla M2050 (CUBLAS 3.2) vs 2 x "
    "8-core Opteron 6220 @ 3 GHz (ACML, 8 threads)";
constexpr double kPaperSpeedupVsDirect = 12, kPaperGpuOverCpu = 1.2;

double paper_bsm_flops(double n, double m, double s) {
  const double sigma = m / n;
  return 4 * sigma * sigma * n * n * n + 2 * sigma * (1 + sigma * s - s) * n * n +
         3 * sigma * s * s * n;
}

struct Args {
  std::int64_t max_n = 4096;
  std::vector<std::int64_t> sizes{256, 512, 1024, 2048, 4096, 8192, 16384};
  std::vector<int> precisions{64, 32};
  std::int64_t svsm_max_n = 1024, block_n = 2048, paper_n = 2048;
  std::vector<std::int64_t> blocks{16, 32, 64, 128, 256, 512, 1024};
  std::vector<std::int64_t> update_sizes{1024, 2048, 4096}, ranks{1, 8, 64};
  int reps = 3, threads = 0;
  double budget = 20, time_limit = 0; // time_limit 0: none
  std::string json, png;
};

std::vector<std::int64_t> parse_list(const std::string &s) {
  std::vector<std::int64_t> out;
  for (const std::string &v : bench::split(s))
    out.push_back(static_cast<std::int64_t>(std::stod(v)));
  return out;
}

template <class T> Table<T> random_matrix(std::int64_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  Table<T> A(n, n, Uninitialized{});
  const double scale = 1 / (2 * std::sqrt(double(n)));
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i)
      A(i, j) = T((i == j ? 1.0 : 0.0) + g(rng) * scale);
  return A;
}

template <class T> Table<T> random_factor(std::int64_t n, std::int64_t m, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  Table<T> X(n, m, Uninitialized{});
  for (std::int64_t j = 0; j < m; ++j)
    for (std::int64_t i = 0; i < n; ++i)
      X(i, j) = T(g(rng) / std::sqrt(double(n)));
  return X;
}

// ‖A·B − I‖_F / √n in fp64.
template <class T> double residual(const Table<T> &A, const Table<T> &B) {
  const std::int64_t n = A.rows();
  const Table<double> Ad = A.template cast<double>(), Bd = B.template cast<double>();
  Table<double> C(n, n, Uninitialized{});
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0, Ad.data(),
              int(n), Bd.data(), int(n), 0.0, C.data(), int(n));
  double s = 0;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      const double e = C(i, j) - (i == j ? 1.0 : 0.0);
      s += e * e;
    }
  return std::sqrt(s / double(n));
}

// LAPACK getrf + getri in place; returns false when A is singular.
template <class T> bool lapack_inverse(Table<T> &A) {
  const int n = int(A.rows());
  std::vector<lapack_int> ipiv(static_cast<std::size_t>(n));
  if constexpr (std::same_as<T, double>)
    return LAPACKE_dgetrf(LAPACK_COL_MAJOR, n, n, A.data(), n, ipiv.data()) == 0 &&
           LAPACKE_dgetri(LAPACK_COL_MAJOR, n, A.data(), n, ipiv.data()) == 0;
  else
    return LAPACKE_sgetrf(LAPACK_COL_MAJOR, n, n, A.data(), n, ipiv.data()) == 0 &&
           LAPACKE_sgetri(LAPACK_COL_MAJOR, n, A.data(), n, ipiv.data()) == 0;
}

// Times f (which returns what it computed) as described at the top; `first` keeps the first
// result.
template <class R> double time_median(int reps, const std::function<R()> &f, R *first) {
  std::vector<double> ts;
  double sum = 0;
  for (int r = 0; r < std::max(reps, 1); ++r) {
    const auto t0 = Clock::now();
    R out = f();
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r == 0 && first)
      *first = std::move(out);
    ts.push_back(t);
    sum += t;
    if (sum > 2.0)
      break;
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

std::string fmt_t(double t) {
  return t > 0 ? fmt::format("{:.4g}", t) : "—";
}

struct Bench {
  Args a;
  json out = json::object();
  std::vector<json> rows, block_rows, update_rows, gpu_update_rows, paper_rows;
  std::vector<std::string> notes;
  std::vector<Backend> backends; // those the API accepts, probed once

  void probe_backends() {
    Table<double> warm = random_matrix<double>(64, 2); // BLAS threads started before any timing
    lapack_inverse(warm);
    for (Backend b : {Backend::cpu, Backend::cuda}) {
      BsmOptions o;
      o.backend = b;
      try {
        (void)inverse(random_matrix<double>(2, 1), o);
        backends.push_back(b);
      } catch (const Error &e) {
        notes.push_back(fmt::format("backend {}: skipped ({})", to_string(b), e.what()));
      }
    }
  }

  Clock::time_point start = Clock::now();
  bool stopped = false;

  // Past --time-limit: no more measurements (noted once).
  bool out_of_time() {
    if (a.time_limit > 0 && !stopped &&
        std::chrono::duration<double>(Clock::now() - start).count() > a.time_limit) {
      stopped = true;
      notes.push_back(fmt::format("time limit {} s reached: the remaining measurements were "
                                  "skipped",
                                  a.time_limit));
    }
    return stopped;
  }

  // A budget check: the predicted time of n from the last measured (n0, t0) by n³, or the time
  // limit.
  bool over_budget(std::int64_t n, std::int64_t n0, double t0) {
    return out_of_time() || (t0 > 0 && t0 * std::pow(double(n) / double(n0), 3) > a.budget);
  }

  template <class T> void versus_n() {
    const int prec = sizeof(T) == 4 ? 32 : 64;
    std::map<std::string, std::pair<std::int64_t, double>> last; // series → (n, t)
    for (std::int64_t n : a.sizes) {
      const Table<T> A = random_matrix<T>(n, 100 + unsigned(n));
      double t_lapack = 0;
      {
        auto &l = last["lapack"];
        if (!over_budget(n, l.first, l.second)) {
          Table<T> inv;
          t_lapack = time_median<Table<T>>(
              a.reps,
              [&] {
                Table<T> B = A;
                if (!lapack_inverse(B))
                  throw Error(ErrorCode::internal, "LAPACK: the test matrix is singular");
                return B;
              },
              &inv);
          l = {n, t_lapack};
          rows.push_back({{"precision", prec},
                          {"backend", "cpu"},
                          {"n", n},
                          {"method", "lapack getrf+getri"},
                          {"block", 0},
                          {"seconds", t_lapack},
                          {"flops", 2.0 * double(n) * double(n) * double(n)},
                          {"residual", residual(A, inv)}});
        }
      }
      for (Backend b : backends)
        for (BsmMethod m : {BsmMethod::svsm, BsmMethod::bsm, BsmMethod::rmbsm, BsmMethod::lu}) {
          if (m == BsmMethod::svsm && n > a.svsm_max_n)
            continue;
          const std::string key = fmt::format("{}/{}", to_string(b), to_string(m));
          auto &l = last[key];
          if (over_budget(n, l.first, l.second))
            continue;
          BsmOptions o;
          o.method = m;
          o.backend = b;
          o.threads = a.threads;
          o.fallback = BsmFallback::error;
          BsmStats st;
          Table<T> inv;
          json row{
              {"precision", prec}, {"backend", to_string(b)}, {"n", n}, {"method", to_string(m)}};
          try {
            const double t = time_median<Table<T>>(
                a.reps, [&] { return inverse(A, o, &st); }, &inv);
            l = {n, t};
            row["block"] = st.block;
            row["seconds"] = t;
            row["flops"] = st.flops;
            row["min_pivot"] = st.min_pivot;
            row["residual"] = residual(A, inv);
            if (t_lapack > 0)
              row["vs_lapack"] = t / t_lapack;
          } catch (const Error &e) {
            row["error"] = e.what();
          }
          rows.push_back(row);
        }
    }
  }

  template <class T> void versus_block() {
    const int prec = sizeof(T) == 4 ? 32 : 64;
    const std::int64_t n = a.block_n;
    if (out_of_time())
      return;
    const Table<T> A = random_matrix<T>(n, 7);
    Table<T> inv;
    const double t_lapack = time_median<Table<T>>(
        a.reps,
        [&] {
          Table<T> B = A;
          lapack_inverse(B);
          return B;
        },
        &inv);
    block_rows.push_back({{"precision", prec},
                          {"n", n},
                          {"method", "lapack getrf+getri"},
                          {"block", 0},
                          {"seconds", t_lapack}});
    std::vector<std::int64_t> blocks = a.blocks;
    blocks.push_back(0);
    for (BsmMethod m : {BsmMethod::bsm, BsmMethod::rmbsm})
      for (std::int64_t s : blocks) {
        if (s > n || out_of_time())
          continue;
        BsmOptions o;
        o.method = m;
        o.block = s;
        o.threads = a.threads;
        o.fallback = BsmFallback::error;
        BsmStats st;
        const double t = time_median<Table<T>>(
            a.reps, [&] { return inverse(A, o, &st); }, nullptr);
        block_rows.push_back({{"precision", prec},
                              {"n", n},
                              {"method", to_string(m)},
                              {"block", st.block},
                              {"automatic", s == 0},
                              {"seconds", t},
                              {"flops", st.flops},
                              {"vs_lapack", t / t_lapack}});
      }
  }

  template <class T> void updates() {
    const int prec = sizeof(T) == 4 ? 32 : 64;
    std::pair<std::int64_t, double> last{0, 0};
    for (std::int64_t n : a.update_sizes) {
      if (over_budget(n, last.first, last.second))
        continue;
      const Table<T> A = random_matrix<T>(n, 300 + unsigned(n));
      InverseUpdate<T> up(BsmOptions{.threads = a.threads});
      up.set_matrix(A);
      // The GPU-resident state (InverseUpdate with Backend::cuda): A⁻¹ stays on the device.
      const bool gpu = std::find(backends.begin(), backends.end(), Backend::cuda) != backends.end();
      std::optional<InverseUpdate<T>> resident;
      if (gpu) {
        resident.emplace(BsmOptions{.backend = Backend::cuda});
        resident->set_matrix(A);
      }
      for (std::int64_t m : a.ranks) {
        if (out_of_time())
          break;
        const Table<T> X = random_factor<T>(n, m, 11 + unsigned(m)),
                       Y = random_factor<T>(n, m, 13 + unsigned(m));
        Table<T> negX = X;
        for (std::int64_t i = 0; i < n * m; ++i)
          negX.data()[i] = -negX.data()[i];
        // A + XYᵀ, then its inverse by refactoring (forming it is part of what refactoring costs).
        Table<T> Anew, ref;
        const double t_ref = time_median<Table<T>>(
            a.reps,
            [&] {
              Table<T> B = A;
              if constexpr (std::same_as<T, double>)
                cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, int(n), int(n), int(m), 1.0,
                            X.data(), int(n), Y.data(), int(n), 1.0, B.data(), int(n));
              else
                cblas_sgemm(CblasColMajor, CblasNoTrans, CblasTrans, int(n), int(n), int(m), 1.0f,
                            X.data(), int(n), Y.data(), int(n), 1.0f, B.data(), int(n));
              Anew = B;
              lapack_inverse(B);
              return B;
            },
            &ref);
        last = {n, t_ref};
        // On the GPU: the update through inverse_update (A⁻¹ dense, the Woodbury formula with the
        // capacitance LU, method lu) against cuSOLVER's inverse of A + XYᵀ (getrf + getrs with I),
        // both with their host–device transfers (A⁻¹ or A up, the inverse down).
        if (gpu) {
          const BsmOptions og{.method = BsmMethod::lu, .backend = Backend::cuda};
          const Table<T> Ainv = up.inverse();
          Table<T> g_up, g_ref;
          const double t_gu = time_median<Table<T>>(
              a.reps, [&] { return inverse_update(Ainv, X, Y, og); }, &g_up);
          const double t_gr = time_median<Table<T>>(
              a.reps, [&] { return inverse(Anew, og); }, &g_ref);
          // Resident: update to A + XYᵀ and back (−X), each timed (the state never leaves the
          // device); the residual from one download at the end.
          std::vector<double> tr;
          for (int r = 0; r < 2 * std::max(a.reps, 1); ++r) {
            const auto t0 = Clock::now();
            resident->update(r % 2 == 0 ? X : negX, Y);
            tr.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
          }
          resident->update(X, Y);
          const double res_resident = residual(Anew, resident->inverse());
          resident->update(negX, Y);
          std::sort(tr.begin(), tr.end());
          const double t_res = tr[tr.size() / 2];
          gpu_update_rows.push_back({{"precision", prec},
                                     {"n", n},
                                     {"rank", m},
                                     {"update_seconds", t_gu},
                                     {"resident_update_seconds", t_res},
                                     {"refactor_seconds", t_gr},
                                     {"speedup", t_gr / t_gu},
                                     {"resident_speedup", t_gr / t_res},
                                     {"residual_update", residual(Anew, g_up)},
                                     {"residual_resident", res_resident},
                                     {"residual_refactor", residual(Anew, g_ref)}});
        }
        // Rank-m update to A + XYᵀ, then alternately back (−X) and forth, each timed.
        std::vector<double> ts;
        double sum = 0;
        for (int r = 0; r < 2 * std::max(a.reps, 1) - 1 && (r == 0 || sum < 2.0); ++r) {
          const auto t0 = Clock::now();
          up.update(r % 2 == 0 ? X : negX, Y);
          ts.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
          sum += ts.back();
        }
        if (ts.size() % 2 == 0)
          up.update(X, Y); // end on A + XYᵀ
        const double flops = up.stats().flops;
        std::sort(ts.begin(), ts.end());
        const double t_up = ts[ts.size() / 2];
        update_rows.push_back({{"precision", prec},
                               {"n", n},
                               {"rank", m},
                               {"update_seconds", t_up},
                               {"update_flops", flops},
                               {"refactor_seconds", t_ref},
                               {"speedup", t_ref / t_up},
                               {"residual_update", residual(Anew, up.inverse())},
                               {"residual_refactor", residual(Anew, ref)}});
        up.update(negX, Y); // back to A for the next rank
      }
    }
  }

  void paper_setup() {
    const std::int64_t n = a.paper_n;
    const ApplyInverse<double> identity = [n](bool, const double *in, std::int64_t ldi, double *o,
                                              std::int64_t ldo, std::int64_t cols) {
      for (std::int64_t j = 0; j < cols; ++j)
        std::copy(in + j * ldi, in + j * ldi + n, o + j * ldo);
    };
    for (std::int64_t m : {n / 8, n / 4, n / 2}) {
      if (out_of_time())
        break;
      const Table<double> X = random_factor<double>(n, m, 21), Y = random_factor<double>(n, m, 23);
      Table<double> A(n, n);
      for (std::int64_t i = 0; i < n; ++i)
        A(i, i) = 1;
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, int(n), int(n), int(m), 1.0, X.data(),
                  int(n), Y.data(), int(n), 1.0, A.data(), int(n));
      const double t_lapack = time_median<Table<double>>(
          a.reps,
          [&] {
            Table<double> B = A;
            lapack_inverse(B);
            return B;
          },
          nullptr);
      for (BsmMethod meth : {BsmMethod::bsm, BsmMethod::rmbsm}) {
        BsmOptions o;
        o.method = meth;
        o.block = m;
        o.threads = a.threads;
        Table<double> inv;
        const double t = time_median<Table<double>>(
            a.reps, [&] { return inverse_update(identity, n, X, Y, o); }, &inv);
        paper_rows.push_back({{"n", n},
                              {"m", m},
                              {"sigma", double(m) / double(n)},
                              {"method", to_string(meth)},
                              {"block", m},
                              {"seconds", t},
                              {"lapack_seconds", t_lapack},
                              {"speedup_vs_lapack", t_lapack / t},
                              {"paper_bsm_flops", paper_bsm_flops(double(n), double(m), double(m))},
                              {"residual", residual(A, inv)}});
      }
    }
  }

  void print() const {
    for (int prec : a.precisions) {
      fmt::print("\n## Inverse vs n, fp{} (standard case A0 = diag(A), Y = I; LAPACK on all "
                 "cores)\n\n",
                 prec);
      fmt::print("| n | backend | method | s | time [s] | GFlop/s | counted flops / n³ | time / "
                 "LAPACK | ‖A·A⁻¹ − I‖_F/√n |\n|---|---|---|---|---|---|---|---|---|\n");
      for (const json &r : rows) {
        if (r["precision"] != prec)
          continue;
        const double n = r["n"].get<double>();
        if (r.contains("error")) {
          fmt::print("| {} | {} | {} | | error: {} | | | | |\n", r["n"].get<std::int64_t>(),
                     r["backend"].get<std::string>(), r["method"].get<std::string>(),
                     r["error"].get<std::string>());
          continue;
        }
        const double t = r["seconds"], f = r["flops"];
        fmt::print("| {} | {} | {} | {} | {} | {:.1f} | {:.2f} | {} | {:.2e} |\n",
                   r["n"].get<std::int64_t>(), r["backend"].get<std::string>(),
                   r["method"].get<std::string>(), r["block"].get<std::int64_t>(), fmt_t(t),
                   f / t * 1e-9, f / (n * n * n),
                   r.contains("vs_lapack") ? fmt::format("{:.2f}", r["vs_lapack"].get<double>())
                                           : "1",
                   r["residual"].get<double>());
      }
    }
    if (!block_rows.empty()) {
      fmt::print("\n## Time vs block size s at n = {} (standard case)\n\n", a.block_n);
      fmt::print("| precision | method | s | time [s] | counted flops / n³ | time / LAPACK "
                 "|\n|---|---|---|---|---|---|\n");
      for (const json &r : block_rows) {
        const double n = r["n"].get<double>();
        const bool ref = r["block"] == 0;
        fmt::print("| fp{} | {} | {}{} | {} | {} | {} |\n", r["precision"].get<int>(),
                   r["method"].get<std::string>(), ref ? "" : std::to_string(r["block"].get<int>()),
                   r.value("automatic", false) ? " (auto)" : "", fmt_t(r["seconds"]),
                   ref ? "2.00" : fmt::format("{:.2f}", r["flops"].get<double>() / (n * n * n)),
                   ref ? "1" : fmt::format("{:.2f}", r["vs_lapack"].get<double>()));
      }
    }
    if (!update_rows.empty()) {
      fmt::print("\n## Rank-m update (InverseUpdate::update) vs refactoring A + XYᵀ (form + "
                 "getrf + getri)\n\n");
      fmt::print("| precision | n | m | update [s] | refactor [s] | speedup | update GFlop/s | "
                 "residual update | residual refactor |\n|---|---|---|---|---|---|---|---|---|\n");
      for (const json &r : update_rows)
        fmt::print("| fp{} | {} | {} | {} | {} | {:.1f} | {:.1f} | {:.2e} | {:.2e} |\n",
                   r["precision"].get<int>(), r["n"].get<std::int64_t>(),
                   r["rank"].get<std::int64_t>(), fmt_t(r["update_seconds"]),
                   fmt_t(r["refactor_seconds"]), r["speedup"].get<double>(),
                   r["update_flops"].get<double>() / r["update_seconds"].get<double>() * 1e-9,
                   r["residual_update"].get<double>(), r["residual_refactor"].get<double>());
    }
    if (!gpu_update_rows.empty()) {
      fmt::print("\n## Rank-m update on the GPU vs cuSOLVER's inverse of A + XYᵀ (getrf + getrs "
                 "with I; A up, inverse down)\n\n"
                 "one-shot: inverse_update (A⁻¹ up, Woodbury, the inverse down); resident: "
                 "InverseUpdate with backend cuda (A⁻¹ stays on the GPU; X, Y up, the m × m "
                 "capacitance matrix down)\n\n");
      fmt::print("| precision | n | m | one-shot [s] | resident [s] | cuSOLVER inverse [s] | "
                 "speedup one-shot | speedup resident | residual one-shot | residual resident | "
                 "residual cuSOLVER |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
      for (const json &r : gpu_update_rows)
        fmt::print(
            "| fp{} | {} | {} | {} | {} | {} | {:.1f} | {:.0f} | {:.2e} | {:.2e} | {:.2e} |\n",
            r["precision"].get<int>(), r["n"].get<std::int64_t>(), r["rank"].get<std::int64_t>(),
            fmt_t(r["update_seconds"]), fmt_t(r["resident_update_seconds"]),
            fmt_t(r["refactor_seconds"]), r["speedup"].get<double>(),
            r["resident_speedup"].get<double>(), r["residual_update"].get<double>(),
            r["residual_resident"].get<double>(), r["residual_refactor"].get<double>());
    }
    if (!paper_rows.empty()) {
      fmt::print("\n## The paper's set-up: A0 = I, random X, Y (n × m), s = m, fp64\n\nPaper III "
                 "({}): BSM with the best block about {:g}× faster than the direct inverse; "
                 "GPU up to {:g}× its CPU.\n\n",
                 kPaperHardware, kPaperSpeedupVsDirect, kPaperGpuOverCpu);
      fmt::print("| n | σ = m/n | method | time [s] | LAPACK [s] | speedup vs LAPACK | paper "
                 "Table 1 flops / n³ | ‖A·A⁻¹ − I‖_F/√n |\n|---|---|---|---|---|---|---|---|\n");
      for (const json &r : paper_rows) {
        const double n = r["n"].get<double>();
        fmt::print("| {} | {:.3f} | {} | {} | {} | {:.2f} | {:.3f} | {:.2e} |\n",
                   r["n"].get<std::int64_t>(), r["sigma"].get<double>(),
                   r["method"].get<std::string>(), fmt_t(r["seconds"]), fmt_t(r["lapack_seconds"]),
                   r["speedup_vs_lapack"].get<double>(),
                   r["paper_bsm_flops"].get<double>() / (n * n * n), r["residual"].get<double>());
      }
    }
    for (const std::string &s : notes)
      fmt::print("\nnote: {}\n", s);
  }

  void plot(const std::string &path, int prec) const {
    std::map<std::string, bench::Curve> cs;
    std::vector<std::string> order;
    for (const json &r : rows) {
      if (r["precision"] != prec || r.contains("error"))
        continue;
      const std::string label =
          r["method"] == "lapack getrf+getri"
              ? std::string("LAPACK getrf+getri")
              : r["backend"].get<std::string>() + " " + r["method"].get<std::string>();
      if (!cs.count(label)) {
        order.push_back(label);
        cs[label].label = label;
      }
      cs[label].x.push_back(std::log10(r["n"].get<double>()));
      cs[label].y.push_back(std::log10(r["seconds"].get<double>()));
    }
    std::vector<bench::Curve> v;
    for (const std::string &l : order)
      if (cs[l].x.size() > 1)
        v.push_back(cs[l]);
    const std::string what = bench::write_log_plot(path, v);
    if (!what.empty())
      fmt::print("\nplot {}: n across, seconds up; {}\n", path, what);
  }
};

} // namespace

int main(int argc, char **argv) {
  Bench b;
  Args &a = b.a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) {
        fmt::print(stderr, "bsm_bench: {} needs a value\n", s);
        std::exit(2);
      }
      return std::string(argv[++i]);
    };
    try {
      if (s == "--max-n")
        a.max_n = static_cast<std::int64_t>(std::stod(next()));
      else if (s == "--sizes")
        a.sizes = parse_list(next());
      else if (s == "--precision") {
        a.precisions.clear();
        for (const std::string &v : bench::split(next()))
          a.precisions.push_back(v == "f32" || v == "float" || v == "32" ? 32 : 64);
      } else if (s == "--svsm-max-n")
        a.svsm_max_n = static_cast<std::int64_t>(std::stod(next()));
      else if (s == "--block-n")
        a.block_n = static_cast<std::int64_t>(std::stod(next()));
      else if (s == "--blocks")
        a.blocks = parse_list(next());
      else if (s == "--update-sizes")
        a.update_sizes = parse_list(next());
      else if (s == "--ranks")
        a.ranks = parse_list(next());
      else if (s == "--paper-n")
        a.paper_n = static_cast<std::int64_t>(std::stod(next()));
      else if (s == "--reps")
        a.reps = std::stoi(next());
      else if (s == "--budget")
        a.budget = std::stod(next());
      else if (s == "--time-limit")
        a.time_limit = std::stod(next());
      else if (s == "--threads")
        a.threads = std::stoi(next());
      else if (s == "--json")
        a.json = next();
      else if (s == "--png")
        a.png = next();
      else
        throw std::invalid_argument("unknown option " + s);
    } catch (const std::exception &e) {
      fmt::print(stderr,
                 "bsm_bench: {}\nusage: bsm_bench [--max-n 4096] [--sizes 256,512,...] "
                 "[--precision f64,f32] [--svsm-max-n N] [--block-n N] [--blocks 16,32,...] "
                 "[--update-sizes 1024,...] [--ranks 1,8,64] [--paper-n N] (0: off) [--reps R] "
                 "[--budget S] [--time-limit S] [--threads T] [--json FILE] [--png FILE]\n",
                 e.what());
      return 2;
    }
  }
  std::erase_if(a.sizes, [&](std::int64_t n) { return n < 1 || n > a.max_n; });
  std::erase_if(a.update_sizes, [&](std::int64_t n) { return n < 1 || n > a.max_n; });
  const unsigned hw = std::thread::hardware_concurrency();
  fmt::print("# bsm_bench: {} hardware threads, BLAS threads {}; sizes {}; budget {} s per "
             "measurement\n",
             hw, a.threads > 0 ? std::to_string(a.threads) : "default (all)",
             fmt::join(a.sizes, ", "), a.budget);
  b.out["ksum_version"] = version();
  b.out["hardware_threads"] = hw;
  b.out["blas_threads"] = a.threads;
  b.out["timing"] = "host std::chrono around whole calls, median of up to --reps calls (their "
                    "sum under 2 s)";
  b.out["paper"] = {{"hardware", kPaperHardware},
                    {"bsm_speedup_vs_direct", kPaperSpeedupVsDirect},
                    {"gpu_over_cpu", kPaperGpuOverCpu}};
  int rc = 0;
  try {
    b.probe_backends();
    for (int prec : a.precisions)
      prec == 32 ? b.versus_n<float>() : b.versus_n<double>();
    if (a.block_n > 0)
      for (int prec : a.precisions)
        prec == 32 ? b.versus_block<float>() : b.versus_block<double>();
    for (int prec : a.precisions)
      prec == 32 ? b.updates<float>() : b.updates<double>();
    if (a.paper_n > 0)
      b.paper_setup();
  } catch (const std::exception &e) {
    fmt::print(stderr, "bsm_bench: {}\n", e.what());
    rc = 1;
  }
  b.print();
  if (!a.png.empty())
    for (int prec : a.precisions)
      b.plot(bench::png_path(a.png, prec), prec);
  b.out["inverse"] = b.rows;
  b.out["block"] = b.block_rows;
  b.out["update"] = b.update_rows;
  b.out["gpu_update"] = b.gpu_update_rows;
  b.out["paper_setup"] = b.paper_rows;
  b.out["notes"] = b.notes;
  if (!a.json.empty())
    std::ofstream(a.json) << b.out.dump(2) << "\n";
  return rc;
}
