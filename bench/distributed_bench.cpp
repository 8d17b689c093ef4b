// The distributed direct sum's scaling (issue 25): run it under `mpirun -n P` for each P (and alone
// for P = 1). Strong scaling: N points in all (--n), each rank a slice of N / P; weak scaling: N_r
// points per rank (--n-per-rank), N = P · N_r. Laplace self-sum in 3D, one right-hand side,
// uniform points in the unit cube (each rank draws its own slice from its own seed). Each time is
// the slowest rank's execute(), the fastest of --reps calls. Rank 0 prints one markdown row per
// case (with the pairs per second and the longest wait for a block) and appends the JSON record
// to --json; the device check gathers the rows of all P into the efficiency tables.
//   mpirun -n P distributed_bench [--n 200000] [--n-per-rank 100000] [--backend cpu|gpu]
//                                 [--precision f64|f32] [--reps 3] [--json FILE]
//                                 [--warmup 1] (0: the direct sum's first execute is timed)
//                                 [--gpus-per-rank 1] [--rbf-n N] [--rbf-n-per-rank N_r]
//                                 [--rbf-solver krylov|fgp] [--rbf-tol 1e-8]
//                                 [--rbf-matvec direct|fmm]
//                                 [--fmm-n N] [--fmm-n-per-rank N_r] [--fmm-tol 1e-6]
//                                 [--fmm-points uniform|plummer] [--fmm-rebalance]
//                                 [--fmm-warmup 1] (0: the FMM's first execute is the timed
//                                 one, for runs of minutes per execute)
//                                 [--tau-n-per-rank N_r] [--tau-points slabs|scattered]
//                                 [--pum-n-per-rank N_r]
// On the GPU each rank uses --gpus-per-rank GPUs of its host, from local rank × that count on
// (default 1, so one rank alone is measured on one GPU, the baseline of the multi-GPU scaling;
// DirectSum alone would take every GPU of the host).
// (--n 0 or --n-per-rank 0 leaves that case out.)
// The distributed global RBF fit (--rbf-n N strong, --rbf-n-per-rank N_r weak; 0: left out):
// GlobalRbfInterpolant::set_data over the ranks, GMRES (--rbf-solver krylov, or fgp) to
// --rbf-tol 1e-8 with the L-set preconditioner, multiquadric with a constant on uniform points in
// the unit cube (each rank its own draws), f = Franke's 3D function, ε = 0.5 N^{1/3} (the same
// shape relative to the spacing at every N, so that the iteration counts stay comparable); each
// product by Φ is the distributed direct sum. Rows: setup (L-sets), solve, iterations, seconds
// per iteration, the relative residual; the slowest rank's times.
// The fit's L-set operator τ alone (--tau-n-per-rank N_r, weak; 0: left out): N_r points per rank
// in the slab [r/P, (r+1)/P) × [0, 1)² (--tau-points slabs: rows partitioned in space) or
// anywhere in the unit cube (scattered: rows in no spatial order), multiquadric with a constant,
// ε = 0.5 N^{1/3}, the fit's default set size; each call of τ as the fit makes it (the halo
// exchange, rbf/global/distributed_global.hpp) against the first version's (every row gathered to
// every rank, its sets' pass over all N rows, a reduce-scatter of N values), the same sets, best
// of --reps calls, the slowest rank's; the halo rows (most on one rank) and the largest
// difference between the two results.
// The PUM over the ranks (--pum-n-per-rank N_r, weak; 0: left out): N = P · N_r points of the 2D
// Halton sequence, rank r passing rows r·N_r … (scattered over the square: nearly every row moves
// to the rank owning its cell), f = Franke's function, matern4 with LOOCV shapes, N_r evaluation
// points per rank (uniform in [0.01, 0.99]²). set_data_partitioned (the data partitioned by cells
// with halos) against set_data with every rank passing all N rows (the replicated fit); the
// slowest rank's set-up and evaluation (the best of --reps rounds, the two alternating), the most
// points a rank holds, and whether the two give the same bits.
#include "bench_common.hpp"
#include "rbf/global/distributed_global.hpp"
#include "rbf/global/lsets.hpp"

#include <ksum/datasets.hpp>
#include <ksum/device.hpp>
#include <ksum/distributed.hpp>
#include <ksum/error.hpp>
#include <ksum/global.hpp>
#include <ksum/pum.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <omp.h>
#include <random>
#include <string>

namespace {

struct Args {
  std::int64_t n = 200000, n_per_rank = 100000;
  std::string backend = "cpu", precision = "f64", json;
  int reps = 3;
  int gpus_per_rank = 1;
  std::int64_t rbf_n = 0, rbf_n_per_rank = 0, fmm_n = 0, fmm_n_per_rank = 0;
  double fmm_tol = 1e-6;
  std::string fmm_points = "uniform";
  bool fmm_rebalance = false;
  bool fmm_warmup = true;
  bool warmup = true; // the direct sum's: an execute before the timed ones
  std::string rbf_solver = "krylov";
  double rbf_tol = 1e-8;
  std::string rbf_matvec = "direct"; // the fit's products: direct (the ring) or fmm
  std::int64_t tau_n_per_rank = 0;
  std::int64_t pum_n_per_rank = 0;
  std::string tau_points = "slabs";
};

std::vector<int> rank_devices(const ksum::Communicator &comm, const Args &a) {
  const auto g = ksum::gpus();
  if (g.empty())
    throw ksum::Error(ksum::ErrorCode::unsupported, "--backend gpu: no GPU is visible");
  std::vector<int> ids;
  for (int k = 0; k < a.gpus_per_rank; ++k)
    ids.push_back(
        g[static_cast<std::size_t>(comm.local_rank() * a.gpus_per_rank + k) % g.size()].id);
  return ids;
}

// The distributed FMM: Laplace self-sum to fmm_tol on uniform points in the unit cube or on the
// Plummer sphere (--fmm-points; each rank its own draws); set-up and execute times (the slowest
// rank's, execute best of reps), the imbalance (the slowest rank's compute over the ranks' mean),
// the sources received in the essential trees, and the error at each rank's first 64 points
// against the distributed direct sum at those points (relative 2-norm over all ranks' samples).
// --fmm-rebalance: then DistributedSum::rebalance() (the partition by measured cost), its time,
// and the execute and imbalance again.
nlohmann::json run_fmm(const ksum::Communicator &comm, const Args &a, const char *kind,
                       std::int64_t total) {
  const int P = comm.size(), r = comm.rank();
  const std::int64_t n = comm.even_counts(total)[static_cast<std::size_t>(r)];
  std::mt19937_64 rng(9000 + static_cast<std::uint64_t>(r));
  std::uniform_real_distribution<double> u(0, 1);
  ksum::Table<double> x(n, 3), w(n, 1);
  if (a.fmm_points == "plummer")
    x = ksum::datasets::plummer(n, 9000 + static_cast<std::uint64_t>(r));
  else
    for (std::int64_t k = 0; k < 3 * n; ++k)
      x.data()[k] = u(rng);
  for (std::int64_t i = 0; i < n; ++i)
    w(i, 0) = u(rng) - 0.5;
  ksum::DirectOptions o;
  o.kernel = ksum::Kernel::laplace;
  o.backend = ksum::parse_backend(a.backend);
  if (o.backend == ksum::Backend::cuda)
    o.devices = rank_devices(comm, a);
  o.method = ksum::Method::fmm;
  o.tolerance = a.fmm_tol;
  const auto now = [] { return std::chrono::steady_clock::now(); };
  const auto secs = [](auto t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  ksum::DistributedSum<double> plan(comm, o);
  auto t0 = now();
  plan.set_points(x);
  const double setup = comm.allreduce_max(secs(t0));
  // The set-up's parts, the slowest rank's each: the partition, the essential trees, the local
  // FMM's set-up.
  const double setup_partition = comm.allreduce_max(plan.stats().fmm_seconds_partition),
               setup_let = comm.allreduce_max(plan.stats().fmm_seconds_let),
               setup_local = comm.allreduce_max(plan.stats().fmm_seconds_local_setup);
  ksum::Table<double> got;
  if (a.fmm_warmup)
    got = plan.execute(w);
  // The fastest of reps executes, and that execute's imbalance of compute over the ranks.
  const auto timed = [&](double &imbalance) {
    double best = 1e300;
    for (int k = 0; k < a.reps; ++k) {
      t0 = now();
      got = plan.execute(w);
      const double t = comm.allreduce_max(secs(t0)); // the same on every rank
      if (t < best) {
        best = t;
        const double c = plan.stats().seconds_compute;
        const double mean = comm.allreduce_sum(c) / P;
        imbalance = mean > 0 ? comm.allreduce_max(c) / mean : 1.0;
      }
    }
    return best;
  };
  double imbalance = 1, imbalance_after = 0, seconds_rebalance = 0, best_after = 0;
  const double best = timed(imbalance);
  if (a.fmm_rebalance && P > 1) { // one rank: nothing to move
    t0 = now();
    (void)plan.rebalance();
    seconds_rebalance = comm.allreduce_max(secs(t0));
    got = plan.execute(w); // the first execute of the new partition (the local plans' learning)
    best_after = timed(imbalance_after);
  }
  const auto &st = plan.stats();
  // The last execute's parts on the slowest rank: exchanges and packing, and the computation
  // (the pseudo-particles' weights and the local FMM).
  const double exchange = comm.allreduce_max(st.seconds_wait),
               compute = comm.allreduce_max(st.seconds_compute);
  // The slowest rank's part of each kind (not one rank's parts: each part's largest).
  const auto &ls = st.fmm_local;
  double parts[7] = {
      st.seconds_wait, st.fmm_seconds_multipoles, st.fmm_seconds_local, ls.seconds_upward,
      ls.seconds_m2l,  ls.seconds_downward,       ls.seconds_near};
  for (double &v : parts)
    v = comm.allreduce_max(v);
  // The local trees' shape, the largest over the ranks: order, leaf size, depth and boxes (a
  // rank's local tree holds its points, the received near-field points and the pseudo-particles
  // of far cells).
  double shape[4] = {double(ls.fmm_order), double(ls.fmm_leaf_size), double(ls.tree_depth),
                     double(ls.tree_boxes)};
  for (double &v : shape)
    v = comm.allreduce_max(v);
  double recv[2] = {double(st.fmm_received), double(st.fmm_pseudo_cells_sent)};
  comm.allreduce_sum(recv, 2);
  // The check: each rank's first 64 points against the direct sum over all sources.
  const std::int64_t ns = std::min<std::int64_t>(64, n);
  ksum::Table<double> xs(ns, 3);
  for (std::int64_t i = 0; i < ns; ++i)
    for (int c = 0; c < 3; ++c)
      xs(i, c) = x(i, c);
  ksum::DirectOptions od = o;
  od.method = ksum::Method::direct;
  ksum::DistributedSum<double> exact(comm, od);
  exact.set_points(x, xs);
  const ksum::Table<double> want = exact.execute(w);
  double e[2] = {0, 0};
  for (std::int64_t i = 0; i < ns; ++i) {
    // The direct sum at separate targets includes the point itself only when singular: 0 here.
    const double d = got(i, 0) - want(i, 0);
    e[0] += d * d;
    e[1] += want(i, 0) * want(i, 0);
  }
  comm.allreduce_sum(e, 2);
  const double rel = e[1] > 0 ? std::sqrt(e[0] / e[1]) : 0.0;
  if (r == 0)
    fmt::print("| fmm {} {} | {} | {} | {} | {:.4g} | {:.4g} | {:.3g} | {:.0f} | {:.0f} | {:.2g} | "
               "{:.2f} | {} | {:.3g} / {:.3g} / {:.3g} ({:.3g} / {:.3g} / {:.3g} / {:.3g}) |\n",
               a.fmm_points, kind, P, total, total / P, setup, best, double(total) / best, recv[0],
               recv[1], rel, imbalance,
               a.fmm_rebalance && P > 1
                   ? fmt::format("{:.4g} s ({:.2f}; rebalance {:.3g} s)", best_after,
                                 imbalance_after, seconds_rebalance)
                   : std::string("—"),
               parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], parts[6]);
  return {
      {"kind", std::string("fmm-") + kind + (a.fmm_points == "uniform" ? "" : "-" + a.fmm_points)},
      {"ranks", P},
      {"n", total},
      {"n_per_rank", total / P},
      {"tolerance", a.fmm_tol},
      {"warmup", a.fmm_warmup},
      {"seconds_setup", setup},
      {"seconds_setup_partition", setup_partition},
      {"seconds_setup_let", setup_let},
      {"seconds_setup_local", setup_local},
      {"seconds", best},
      {"points_per_second", double(total) / best},
      {"received", recv[0]},
      {"pseudo_cells", recv[1]},
      {"sampled_error", rel},
      {"seconds_exchange", exchange},
      {"seconds_compute", compute},
      {"seconds_multipoles", parts[1]},
      {"seconds_local", parts[2]},
      {"seconds_local_upward", parts[3]},
      {"seconds_local_m2l", parts[4]},
      {"seconds_local_downward", parts[5]},
      {"seconds_local_near", parts[6]},
      {"local_order", shape[0]},
      {"local_leaf_size", shape[1]},
      {"local_depth", shape[2]},
      {"local_boxes", shape[3]},
      {"points", a.fmm_points},
      {"imbalance", imbalance},
      {"rebalanced_seconds", best_after},
      {"rebalanced_imbalance", imbalance_after},
      {"seconds_rebalance", seconds_rebalance},
      {"backend", a.backend},
      {"gpus_per_rank", o.backend == ksum::Backend::cuda ? a.gpus_per_rank : 0},
      {"threads_per_rank", omp_get_max_threads()}};
}

nlohmann::json run_rbf(const ksum::Communicator &comm, const Args &a, const char *kind,
                       std::int64_t total) {
  const int P = comm.size(), r = comm.rank();
  const std::int64_t n = comm.even_counts(total)[static_cast<std::size_t>(r)];
  std::mt19937_64 rng(5000 + static_cast<std::uint64_t>(r));
  std::uniform_real_distribution<double> u(0, 1);
  ksum::Table<double> x(n, 3), f(n, 1);
  for (std::int64_t k = 0; k < 3 * n; ++k)
    x.data()[k] = u(rng);
  for (std::int64_t i = 0; i < n; ++i)
    f(i, 0) = ksum::datasets::franke3(x(i, 0), x(i, 1), x(i, 2));
  ksum::GlobalRbfOptions o;
  o.kernel = ksum::Kernel::multiquadric;
  o.eps = 0.5 * std::cbrt(static_cast<double>(total));
  o.solver = ksum::parse_global_solver(a.rbf_solver);
  o.tolerance = a.rbf_tol;
  o.matvec_method = ksum::parse_method(a.rbf_matvec); // fmm: its tolerance coupled, tol / 10
  o.max_iterations = 1000;
  o.backend = ksum::parse_backend(a.backend);
  ksum::GlobalRbfInterpolant rbf(o);
  // The GPU of each rank: DistributedSum's default (local rank mod the host's GPUs).
  const auto t0 = std::chrono::steady_clock::now();
  rbf.set_data(x, f, comm);
  const double secs = comm.allreduce_max(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  const auto &st = rbf.stats();
  const double setup = comm.allreduce_max(st.seconds_setup),
               solve = comm.allreduce_max(st.seconds_solve);
  if (r == 0)
    fmt::print("| rbf {} | {} | {} | {} | {} | {:.4g} | {:.4g} | {} | {:.4g} | {:.3g} |\n", kind, P,
               total, total / P,
               fmt::format("{} ({} products)", ksum::to_string(st.solver), a.rbf_matvec), setup,
               solve, st.iterations, solve / std::max(1, st.matvecs), st.residual_rel);
  return {{"kind", std::string("rbf-") + kind},
          {"ranks", P},
          {"n", total},
          {"n_per_rank", total / P},
          {"solver", std::string(ksum::to_string(st.solver))},
          {"eps", o.eps},
          {"tolerance", a.rbf_tol},
          {"matvec", a.rbf_matvec},
          {"iterations", st.iterations},
          {"matvecs", st.matvecs},
          {"seconds_setup", setup},
          {"seconds_solve", solve},
          {"seconds", secs},
          {"seconds_per_matvec", solve / std::max(1, st.matvecs)},
          {"residual_rel", st.residual_rel},
          {"backend", a.backend},
          {"threads_per_rank", omp_get_max_threads()}};
}

nlohmann::json run_tau(const ksum::Communicator &comm, const Args &a) {
  const int P = comm.size(), r = comm.rank();
  const std::int64_t mine = a.tau_n_per_rank, total = mine * P;
  const bool slabs = a.tau_points == "slabs";
  std::mt19937_64 rng(3000 + static_cast<std::uint64_t>(r));
  std::uniform_real_distribution<double> u(0, 1);
  ksum::Table<double> x(mine, 3);
  for (std::int64_t i = 0; i < mine; ++i)
    for (int c = 0; c < 3; ++c)
      x(i, c) = c == 0 && slabs ? (r + u(rng)) / P : u(rng);
  const std::vector<std::int64_t> counts = comm.allgather(mine);
  const ksum::GlobalRbfOptions defaults;
  const ksum::rbf::LSetConfig cfg{.kernel = ksum::Kernel::multiquadric,
                                  .eps = 0.5 * std::cbrt(static_cast<double>(total)),
                                  .q = defaults.lset_size,
                                  .poly_degree = 0,
                                  .seed = 5,
                                  .threads = 0};
  // The sets searched over the ranks (no rank holds the others' points).
  ksum::rbf::DistributedLSetStats ls;
  const auto t0 = std::chrono::steady_clock::now();
  const ksum::rbf::RowSets sets =
      ksum::rbf::build_lsets_over_ranks(comm, x, mine * r, total, cfg, &ls);
  const double t_sets = comm.allreduce_max(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  // The same sets by the first version's way, all points gathered to every rank (forced).
  double t_sets_gather = 0;
  if (P > 1) {
    setenv("KSUM_LSETS_GATHER", "1", 1);
    const auto g0 = std::chrono::steady_clock::now();
    const ksum::rbf::RowSets again =
        ksum::rbf::build_lsets_over_ranks(comm, x, mine * r, total, cfg);
    t_sets_gather = comm.allreduce_max(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count());
    unsetenv("KSUM_LSETS_GATHER");
    const bool same = again.idx == sets.idx && again.zeta == sets.zeta;
    if (comm.allreduce_max(same ? 0.0 : 1.0) > 0)
      throw ksum::Error(ksum::ErrorCode::internal,
                        "the L-sets searched over the ranks differ from the gathered ones");
  }
  ksum::rbf::DistributedTauStats ts;
  const auto t1 = std::chrono::steady_clock::now();
  const ksum::rbf::TauOperator halo = ksum::rbf::distributed_tau(comm, sets, counts, 0, &ts);
  const double t_halo_setup = comm.allreduce_max(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
  // The first version's τ for comparison: the same sets over all N rows, every residual
  // all-gathered, every part of τ reduce-scattered.
  ksum::rbf::LSets global;
  global.n = total;
  global.ptr = sets.ptr;
  global.idx.resize(sets.idx.size());
  global.zeta.resize(sets.idx.size());
  global.tptr.assign(static_cast<std::size_t>(total) + 1, 0);
  for (std::size_t k = 0; k < sets.idx.size(); ++k) {
    global.idx[k] = static_cast<std::uint32_t>(sets.idx[k]);
    global.zeta[k] = sets.zeta[k];
    ++global.tptr[static_cast<std::size_t>(sets.idx[k]) + 1];
  }
  for (std::int64_t j = 0; j < total; ++j)
    global.tptr[j + 1] += global.tptr[j];
  global.tset.resize(sets.idx.size());
  global.tzeta.resize(sets.idx.size());
  {
    std::vector<std::int64_t> next(global.tptr.begin(), global.tptr.end() - 1);
    for (std::int64_t l = 0; l < sets.count(); ++l)
      for (std::int64_t k = sets.ptr[l]; k < sets.ptr[l + 1]; ++k) {
        const std::int64_t e = next[static_cast<std::size_t>(sets.idx[k])]++;
        global.tset[e] = static_cast<std::uint32_t>(l);
        global.tzeta[e] = sets.zeta[k];
      }
  }
  std::vector<double> R(static_cast<std::size_t>(total)), Tall(static_cast<std::size_t>(total)), mu;
  const ksum::rbf::TauOperator gather = [&](const double *res, double *tau) {
    comm.allgatherv(res, mine, R.data(), counts);
    global.apply(R.data(), Tall.data(), mu, 0);
    comm.reduce_scatter_sum(Tall.data(), tau, counts);
  };
  std::vector<double> res(static_cast<std::size_t>(mine)), t_h(res.size()), t_g(res.size());
  for (auto &v : res)
    v = u(rng) - 0.5;
  auto time = [&](const ksum::rbf::TauOperator &op, std::vector<double> &out) {
    op(res.data(), out.data()); // warm-up
    double best = 1e300;
    for (int k = 0; k < a.reps; ++k) {
      const auto s0 = std::chrono::steady_clock::now();
      op(res.data(), out.data());
      best = std::min(
          best, comm.allreduce_max(
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count()));
    }
    return best;
  };
  const double sh = time(halo, t_h), sg = time(gather, t_g);
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < res.size(); ++i) {
    diff = std::max(diff, std::abs(t_h[i] - t_g[i]));
    scale = std::max(scale, std::abs(t_g[i]));
  }
  diff = comm.allreduce_max(diff);
  scale = comm.allreduce_max(scale);
  const double halo_rows = comm.allreduce_max(static_cast<double>(ts.halo_rows));
  const double received = comm.allreduce_max(static_cast<double>(ls.received));
  double phases[6] = {ls.seconds_index,  ls.seconds_twins, ls.seconds_own,
                      ls.seconds_answer, ls.seconds_halo,  ls.seconds_solve};
  comm.allreduce_max(phases, 6);
  if (r == 0)
    fmt::print("L-sets over {} ranks{}, the slowest rank per phase [s]: index {:.3f}, duplicates "
               "{:.3f}, own search {:.3f}, answers {:.3f}, halo search {:.3f}, local solves "
               "{:.3f}; all points gathered (forced): {:.3f} s\n",
               P, ls.gathered ? " (points all-gathered: rows in no spatial order)" : "", phases[0],
               phases[1], phases[2], phases[3], phases[4], phases[5], t_sets_gather);
  if (r == 0)
    fmt::print("| tau {} | {} | {} | {} | {:.3f} ({:.0f} points received) | {:.3f} | {:.0f} "
               "({:.2g} of the others' rows) | {:.4g} | {:.4g} | {:.3g} | {:.2g} |\n",
               a.tau_points, P, total, mine, t_sets, received, t_halo_setup, halo_rows,
               P > 1 ? halo_rows / double(total - mine) : 0.0, sh, sg, sg / sh,
               scale > 0 ? diff / scale : 0.0);
  return {{"kind", "tau-weak"},
          {"points", a.tau_points},
          {"ranks", P},
          {"n", total},
          {"n_per_rank", mine},
          {"q", cfg.q},
          {"seconds_lsets", t_sets},
          {"lset_search_received_max", received},
          {"lsets_gathered", ls.gathered},
          {"seconds_lsets_forced_gather", t_sets_gather},
          {"seconds_lsets_phases_max",
           {{"index", phases[0]},
            {"duplicates", phases[1]},
            {"own_search", phases[2]},
            {"answers", phases[3]},
            {"halo_search", phases[4]},
            {"local_solves", phases[5]}}},
          {"seconds_halo_setup", t_halo_setup},
          {"halo_rows_max", halo_rows},
          {"seconds_tau_halo", sh},
          {"seconds_tau_allgather", sg},
          {"max_rel_difference", scale > 0 ? diff / scale : 0.0},
          {"threads_per_rank", omp_get_max_threads()}};
}

nlohmann::json run_pum(const ksum::Communicator &comm, const Args &a) {
  const int P = comm.size(), r = comm.rank();
  const std::int64_t mine = a.pum_n_per_rank, total = mine * P;
  const ksum::Table<double> all = ksum::datasets::halton(total, 2);
  ksum::Table<double> f(total, 1), x(mine, 2), fx(mine, 1), y(mine, 2);
  for (std::int64_t i = 0; i < total; ++i)
    f(i, 0) = ksum::datasets::franke(all(i, 0), all(i, 1));
  for (std::int64_t i = 0; i < mine; ++i) {
    for (int k = 0; k < 2; ++k)
      x(i, k) = all(r * mine + i, k);
    fx(i, 0) = f(r * mine + i, 0);
  }
  std::mt19937_64 rng(4000 + static_cast<std::uint64_t>(r));
  std::uniform_real_distribution<double> u(0.01, 0.99);
  for (std::int64_t k = 0; k < 2 * mine; ++k)
    y.data()[k] = u(rng);
  ksum::PumOptions o;
  o.loocv = true;
  o.backend = ksum::Backend::cpu;
  const auto since = [](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  // The two alternate, --reps rounds, the best time of each kept: the first fit of a process
  // pays for its warm-up (allocations, pages) whichever it is.
  ksum::PumInterpolant parts(o), shared(o);
  ksum::Table<double> vp, vs;
  double fit_p = 1e300, eval_p = 1e300, fit_s = 1e300, eval_s = 1e300;
  for (int rep = 0; rep < a.reps; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    parts.set_data_partitioned(x, fx, comm);
    fit_p = std::min(fit_p, comm.allreduce_max(since(t0)));
    t0 = std::chrono::steady_clock::now();
    vp = parts.evaluate(y);
    eval_p = std::min(eval_p, comm.allreduce_max(since(t0)));
    t0 = std::chrono::steady_clock::now();
    shared.set_data(all, f, comm);
    fit_s = std::min(fit_s, comm.allreduce_max(since(t0)));
    t0 = std::chrono::steady_clock::now();
    vs = shared.evaluate(y);
    eval_s = std::min(eval_s, comm.allreduce_max(since(t0)));
  }
  double differ = 0;
  for (std::int64_t i = 0; i < mine; ++i)
    differ += !(vp(i, 0) == vs(i, 0));
  differ = comm.allreduce_sum(differ);
  const auto &st = parts.stats();
  const double held = comm.allreduce_max(static_cast<double>(st.owned_points + st.halo_points));
  const double patches_in = comm.allreduce_max(static_cast<double>(st.halo_patches));
  if (r == 0)
    fmt::print("| pum | {} | {} | {} | {:.3f} | {:.3f} | {:.0f} ({:.2g} of N) | {:.0f} | {} | "
               "{:.3f} | {:.3f} | {} | {} |\n",
               P, total, mine, fit_p, eval_p, held, held / double(total), patches_in,
               st.halo_rounds, fit_s, eval_s, total,
               differ == 0 ? "identical" : fmt::format("{:.0f} differ", differ));
  return {{"kind", "pum-weak"},
          {"ranks", P},
          {"n", total},
          {"n_per_rank", mine},
          {"patches", st.patches},
          {"seconds_fit_partitioned", fit_p},
          {"seconds_evaluate_partitioned", eval_p},
          {"points_held_max", held},
          {"patches_received_max", patches_in},
          {"halo_rounds", st.halo_rounds},
          {"seconds_fit_replicated", fit_s},
          {"seconds_evaluate_replicated", eval_s},
          {"values_differing", differ},
          {"threads_per_rank", omp_get_max_threads()}};
}

template <class T>
nlohmann::json run_case(const ksum::Communicator &comm, const Args &a, const char *kind,
                        std::int64_t total) {
  const int P = comm.size(), r = comm.rank();
  const std::int64_t n = comm.even_counts(total)[static_cast<std::size_t>(r)];
  std::mt19937_64 rng(1000 + static_cast<std::uint64_t>(r));
  std::uniform_real_distribution<double> u(0, 1);
  ksum::Table<T> x(n, 3), w(n, 1);
  for (std::int64_t k = 0; k < 3 * n; ++k)
    x.data()[k] = static_cast<T>(u(rng));
  for (std::int64_t k = 0; k < n; ++k)
    w.data()[k] = static_cast<T>(u(rng) - 0.5);
  ksum::DirectOptions o;
  o.kernel = ksum::Kernel::laplace;
  o.backend = ksum::parse_backend(a.backend);
  if (o.backend == ksum::Backend::cuda)
    o.devices = rank_devices(comm, a);
  ksum::DistributedSum<T> plan(comm, o);
  plan.set_points(x);
  if (a.warmup)
    (void)plan.execute(w); // warm-up (GPU context, pages)
  double best = 1e300, wait = 0;
  for (int k = 0; k < a.reps; ++k) {
    (void)plan.execute(w);
    const double t = comm.allreduce_max(plan.stats().seconds_execute);
    if (t < best) {
      best = t;
      wait = comm.allreduce_max(plan.stats().seconds_wait);
    } else
      (void)comm.allreduce_max(0.0); // the same collectives on every rank
  }
  const double pairs = double(total) * double(total - 1);
  if (r == 0)
    fmt::print("| {} | {} | {} | {} | {:.4g} | {:.3g} | {:.4g} |\n", kind, P, total, total / P,
               best, pairs / best, wait);
  return {{"kind", kind},
          {"ranks", P},
          {"n", total},
          {"n_per_rank", total / P},
          {"seconds", best},
          {"pairs_per_second", pairs / best},
          {"max_wait_seconds", wait},
          {"backend", a.backend},
          {"gpus_per_rank", o.backend == ksum::Backend::cuda ? a.gpus_per_rank : 0},
          {"precision", a.precision},
          {"warmup", a.warmup},
          {"threads_per_rank", omp_get_max_threads()}};
}

} // namespace

int main(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Args a;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string k = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc)
          throw ksum::Error(ksum::ErrorCode::invalid_argument, fmt::format("{} needs a value", k));
        return argv[++i];
      };
      if (k == "--help" || k == "-h")
        return bench::print_header_help(__FILE__);
      if (k == "--n")
        a.n = static_cast<std::int64_t>(std::stod(value()));
      else if (k == "--n-per-rank")
        a.n_per_rank = static_cast<std::int64_t>(std::stod(value()));
      else if (k == "--backend")
        a.backend = value();
      else if (k == "--precision")
        a.precision = value();
      else if (k == "--reps")
        a.reps = std::max(1, std::stoi(value()));
      else if (k == "--json")
        a.json = value();
      else if (k == "--rbf-n")
        a.rbf_n = static_cast<std::int64_t>(std::stod(value()));
      else if (k == "--rbf-n-per-rank")
        a.rbf_n_per_rank = static_cast<std::int64_t>(std::stod(value()));
      else if (k == "--fmm-n")
        a.fmm_n = static_cast<std::int64_t>(std::stod(value()));
      else if (k == "--fmm-n-per-rank")
        a.fmm_n_per_rank = static_cast<std::int64_t>(std::stod(value()));
      else if (k == "--warmup")
        a.warmup = value() != "0";
      else if (k == "--fmm-warmup")
        a.fmm_warmup = value() != "0";
      else if (k == "--fmm-tol")
        a.fmm_tol = std::stod(value());
      else if (k == "--fmm-points") {
        a.fmm_points = value();
        if (a.fmm_points != "uniform" && a.fmm_points != "plummer")
          throw ksum::Error(ksum::ErrorCode::invalid_argument,
                            fmt::format("--fmm-points {}: uniform or plummer", a.fmm_points));
      } else if (k == "--fmm-rebalance")
        a.fmm_rebalance = true;
      else if (k == "--rbf-solver")
        a.rbf_solver = value();
      else if (k == "--rbf-tol")
        a.rbf_tol = std::stod(value());
      else if (k == "--rbf-matvec")
        a.rbf_matvec = value();
      else if (k == "--tau-n-per-rank")
        a.tau_n_per_rank = static_cast<std::int64_t>(std::stod(value()));
      else if (k == "--pum-n-per-rank")
        a.pum_n_per_rank = static_cast<std::int64_t>(std::stod(value()));
      else if (k == "--tau-points") {
        a.tau_points = value();
        if (a.tau_points != "slabs" && a.tau_points != "scattered")
          throw ksum::Error(ksum::ErrorCode::invalid_argument,
                            fmt::format("--tau-points {}: slabs or scattered", a.tau_points));
      } else if (k == "--gpus-per-rank") {
        a.gpus_per_rank = std::stoi(value());
        if (a.gpus_per_rank < 1)
          throw ksum::Error(ksum::ErrorCode::invalid_argument,
                            fmt::format("--gpus-per-rank {}: must be ≥ 1", a.gpus_per_rank));
      } else
        throw ksum::Error(ksum::ErrorCode::invalid_argument,
                          fmt::format("unknown option '{}' (see --help)", k));
    }
    if (a.precision != "f64" && a.precision != "f32")
      throw ksum::Error(ksum::ErrorCode::invalid_argument,
                        fmt::format("--precision {}: f64 or f32", a.precision));
    const ksum::Communicator comm = ksum::Communicator::world();
    if (comm.rank() == 0)
      fmt::print("| scaling | ranks | N | N per rank | time [s] | pairs/s | longest wait [s] "
                 "|\n|---|---|---|---|---|---|---|\n");
    nlohmann::json out = nlohmann::json::array();
    const auto run = [&](const char *kind, std::int64_t total) {
      out.push_back(a.precision == "f64" ? run_case<double>(comm, a, kind, total)
                                         : run_case<float>(comm, a, kind, total));
    };
    if (a.n > 0)
      run("strong", a.n);
    if (a.n_per_rank > 0)
      run("weak", a.n_per_rank * comm.size());
    if ((a.fmm_n > 0 || a.fmm_n_per_rank > 0) && comm.rank() == 0)
      fmt::print(
          "\n| FMM | ranks | N | N per rank | set-up [s] | execute [s] | points/s | "
          "received | pseudo cells | sampled error | imbalance | rebalanced: execute (imbalance) "
          "| slowest rank: exchange / multipoles / local FMM (its upward / M2L / downward / near) "
          "[s] |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    if (a.fmm_n > 0)
      out.push_back(run_fmm(comm, a, "strong", a.fmm_n));
    if (a.fmm_n_per_rank > 0)
      out.push_back(run_fmm(comm, a, "weak", a.fmm_n_per_rank * comm.size()));
    if ((a.rbf_n > 0 || a.rbf_n_per_rank > 0) && comm.rank() == 0)
      fmt::print("\n| fit | ranks | N | N per rank | solver | setup [s] | solve [s] | iterations | "
                 "s per product | residual |\n|---|---|---|---|---|---|---|---|---|---|\n");
    if (a.rbf_n > 0)
      out.push_back(run_rbf(comm, a, "strong", a.rbf_n));
    if (a.rbf_n_per_rank > 0)
      out.push_back(run_rbf(comm, a, "weak", a.rbf_n_per_rank * comm.size()));
    if (a.tau_n_per_rank > 0) {
      if (comm.rank() == 0)
        fmt::print("\n| tau | ranks | N | N per rank | L-sets over the ranks [s] (most points a "
                   "rank received) | halo set-up [s] | halo rows "
                   "(most on a rank) | halo [s per call] | all-gather [s per call] | speed-up | "
                   "difference |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
      out.push_back(run_tau(comm, a));
    }
    if (a.pum_n_per_rank > 0) {
      if (comm.rank() == 0)
        fmt::print("\n| PUM | ranks | N | N per rank | partitioned: set-up [s] | evaluate [s] | "
                   "points held (most on a rank) | patches received | halo rounds | replicated: "
                   "set-up [s] | evaluate [s] | points held | values |\n"
                   "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
      out.push_back(run_pum(comm, a));
    }
    if (comm.rank() == 0 && !a.json.empty())
      std::ofstream(a.json, std::ios::app) << out.dump() << "\n";
  } catch (const std::exception &e) {
    fmt::print(stderr, "distributed_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
