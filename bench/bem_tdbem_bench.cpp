// The TD-BEM test case (seed 003 §6.4): table 4 (Full-Blocking blocks NBB, their fill NNZ% and
// the time E of one summation call, per ordering × block size, beside Contiguous-Blocking) and
// the whole time step (summation + solve) on the CPU worker, one GPU, and both balanced (§5.2,
// figure 15).
//   bem_tdbem_bench (--nodes N.npy --triangles T.npy | --mesh S.msh | --refine L)
//                   [--dt-ratio 1] [--ng 8] [--sample 64] [--orderings natural,morton,hilbert]
//                   [--no-table4] [--no-step] [--steps 40] [--balance-csv F] [--balance-png F]
//                   [--json F] [--convergence MAX_REFINE] [--figure2]
// --figure2: the three orders of the summation of figure 2 (outer loop over k: K_max SpMVs in
// CSR; over i: row by row through the transposed slices; over j: slice by slice, one past vector
// per slice), scalar code on all threads, n_g = 1, the same 2·nnz flops; time and GFlop/s.
// --convergence L: the validation of docs/tdbem.md instead: the uniformly pulsating unit sphere
// (u = exp(−((t − 1.5)/0.4)²) on it, analytic σ(t) = 2 Σ_m g'(t − 2m)) on icospheres refined 1 … L,
// cΔt = h/2, the max error over t ≤ 4 relative to max |σ|, both time bases.
// dt = dt-ratio × mean edge / c (c = 1). E is measured, not estimated: the kernel is timed on the
// blocks of --sample slices in the middle of the numbering (GPU 0 when present, else the CPU on all
// threads) and scaled by the block count; the seed's E≈ scaled its table 2 rates the same way.
#include "bench_common.hpp"
#include "bem/assembly.hpp"
#include "bem/blocking.hpp"
#include "bem/blocking_cuda.hpp"

#include <ksum/device.hpp>
#include <ksum/error.hpp>
#include <ksum/io.hpp>
#include <ksum/tdbem.hpp>

#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace ksum;
using nlohmann::json;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Args {
  std::string nodes, triangles, mesh, orderings = "natural,morton,hilbert", json, balance_csv,
                                      balance_png;
  int refine = 4, ng = 8, sample = 64, steps = 40;
  double dt_ratio = 1.0;
  bool table4 = true, step = true;
  int convergence = 0;
  bool figure2 = false;
};

// Figure 2's three loop orders over the same non-zeros (float, n_g = 1, all threads).
json figure2(const TriangleSurface &surface, double h) {
  const auto c = bem::centroid_table(bem::make_geometry(surface));
  const auto geo = bem::make_geometry(surface, bem::order_unknowns(c, TdbemOrdering::morton));
  bem::Assembled m0;
  const auto sl = bem::assemble<float>(geo, h, TimeBasis::constant, 0, geo.n, m0);
  const std::int64_t n = sl.n;
  const int kmax = sl.kmax;
  bem::History<float> past(n, kmax);
  for (int t = 0; t < kmax; ++t) {
    std::vector<float> a(static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j)
      a[static_cast<std::size_t>(j)] = std::sin(0.01f * static_cast<float>(j + 7 * t));
    past.push(a);
  }
  // (a) outer k: M^k in CSR (rows i, columns j), s += M^k a^{n−k}.
  std::vector<std::vector<std::int64_t>> ptr(static_cast<std::size_t>(kmax) + 1);
  std::vector<std::vector<std::int32_t>> col(ptr.size());
  std::vector<std::vector<float>> val(ptr.size());
  {
    std::vector<std::vector<std::int64_t>> count(
        ptr.size(), std::vector<std::int64_t>(static_cast<std::size_t>(n) + 1, 0));
    for (std::int64_t j = 0; j < n; ++j)
      for (auto r = sl.ptr[j]; r < sl.ptr[j + 1]; ++r) {
        const auto &row = sl.rows[static_cast<std::size_t>(r)];
        for (int k = row.k0; k < row.k0 + row.length; ++k)
          ++count[static_cast<std::size_t>(k)][static_cast<std::size_t>(row.row) + 1];
      }
    for (std::size_t k = 1; k < ptr.size(); ++k) {
      for (std::int64_t i = 0; i < n; ++i)
        count[k][static_cast<std::size_t>(i) + 1] += count[k][static_cast<std::size_t>(i)];
      ptr[k] = count[k];
      col[k].resize(static_cast<std::size_t>(ptr[k].back()));
      val[k].resize(col[k].size());
    }
    for (std::int64_t j = 0; j < n; ++j)
      for (auto r = sl.ptr[j]; r < sl.ptr[j + 1]; ++r) {
        const auto &row = sl.rows[static_cast<std::size_t>(r)];
        for (int k = row.k0; k < row.k0 + row.length; ++k) {
          auto &at = count[static_cast<std::size_t>(k)][static_cast<std::size_t>(row.row)];
          col[static_cast<std::size_t>(k)][static_cast<std::size_t>(at)] =
              static_cast<std::int32_t>(j);
          val[static_cast<std::size_t>(k)][static_cast<std::size_t>(at++)] =
              sl.values[static_cast<std::size_t>(row.offset + k - row.k0)];
        }
      }
  }
  // (b) outer i: the slices transposed, rows i listing (j, k0, length, offset).
  std::vector<std::int64_t> tptr(static_cast<std::size_t>(n) + 1, 0);
  for (const auto &row : sl.rows)
    ++tptr[static_cast<std::size_t>(row.row) + 1];
  for (std::int64_t i = 0; i < n; ++i)
    tptr[static_cast<std::size_t>(i) + 1] += tptr[static_cast<std::size_t>(i)];
  std::vector<std::pair<std::int64_t, bem::SliceRow>> trows(sl.rows.size());
  {
    auto fill = tptr;
    for (std::int64_t j = 0; j < n; ++j)
      for (auto r = sl.ptr[j]; r < sl.ptr[j + 1]; ++r) {
        const auto &row = sl.rows[static_cast<std::size_t>(r)];
        trows[static_cast<std::size_t>(fill[static_cast<std::size_t>(row.row)]++)] = {j, row};
      }
  }
  std::vector<float> s(static_cast<std::size_t>(n));
  auto time = [&](auto body) {
    double best = 1e300;
    for (int rep = 0; rep < 3; ++rep) {
      std::fill(s.begin(), s.end(), 0.0f);
      const double t0 = now();
      body();
      best = std::min(best, now() - t0);
    }
    return best;
  };
  const double ta = time([&] {
    for (int k = 1; k <= kmax; ++k) {
      const auto &p = ptr[static_cast<std::size_t>(k)];
      const auto &cc = col[static_cast<std::size_t>(k)];
      const auto &vv = val[static_cast<std::size_t>(k)];
#pragma omp parallel for schedule(static)
      for (std::int64_t i = 0; i < n; ++i) {
        float acc = 0;
        for (auto q = p[static_cast<std::size_t>(i)]; q < p[static_cast<std::size_t>(i) + 1]; ++q)
          acc += vv[static_cast<std::size_t>(q)] *
                 past.at(cc[static_cast<std::size_t>(q)])[static_cast<std::size_t>(k - 1)];
        s[static_cast<std::size_t>(i)] += acc;
      }
    }
  });
  std::vector<float> sa = s;
  const double tb = time([&] {
#pragma omp parallel for schedule(dynamic, 64)
    for (std::int64_t i = 0; i < n; ++i) {
      float acc = 0;
      for (auto q = tptr[static_cast<std::size_t>(i)]; q < tptr[static_cast<std::size_t>(i) + 1];
           ++q) {
        const auto &[j, row] = trows[static_cast<std::size_t>(q)];
        const float *a = past.at(j).data();
        const float *v = sl.values.data() + row.offset;
        for (int t = 0; t < row.length; ++t)
          acc += v[t] * a[row.k0 - 1 + t];
      }
      s[static_cast<std::size_t>(i)] = acc;
    }
  });
  std::vector<float> sb = s;
  const double tc = time([&] {
#pragma omp parallel
    {
      std::vector<float> mine(static_cast<std::size_t>(n), 0.0f);
#pragma omp for schedule(dynamic, 16) nowait
      for (std::int64_t j = 0; j < n; ++j)
        bem::sum_slices_scalar(sl, past, 1, j, j + 1, mine.data());
#pragma omp critical
      for (std::int64_t i = 0; i < n; ++i)
        s[static_cast<std::size_t>(i)] += mine[static_cast<std::size_t>(i)];
    }
  });
  double diff = 0, scale = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    diff = std::max({diff, std::abs(double(sa[i]) - s[i]), std::abs(double(sb[i]) - s[i])});
    scale = std::max(scale, std::abs(double(s[i])));
  }
  const double flops = 2.0 * static_cast<double>(sl.nnz());
  fmt::print("### figure 2: the three summation orders, {} unknowns, K_max {}, {:.3g} non-zeros, "
             "n_g = 1, f32 (results agree to {:.1e} relative)\n\n",
             n, kmax, static_cast<double>(sl.nnz()), diff / scale);
  fmt::print(
      "| outer loop | what it reads per step | threads | ms | GFlop/s |\n|---|---|--:|--:|--:|\n");
  fmt::print("| k (K_max SpMVs, CSR) | every M^k once, a^{{n−k}} gathered by column | {} | {:.2f} "
             "| {:.2f} |\n",
             max_threads(), 1e3 * ta, flops / ta / 1e9);
  fmt::print("| i (rows of the transposed slices) | row vectors, past values of every j gathered | "
             "{} | {:.2f} | {:.2f} |\n",
             max_threads(), 1e3 * tb, flops / tb / 1e9);
  fmt::print("| j (slices, §3.2) | row vectors, one contiguous past vector per slice | {} | {:.2f} "
             "| {:.2f} |\n",
             max_threads(), 1e3 * tc, flops / tc / 1e9);
  return {{"unknowns", n},           {"kmax", kmax},          {"nnz", sl.nnz()},
          {"k_outer_seconds", ta},   {"i_outer_seconds", tb}, {"j_outer_seconds", tc},
          {"threads", max_threads()}};
}

json convergence(int max_refine) {
  json out = json::array();
  fmt::print("### pulsating sphere: max_n max_i |a^n_i − σ| / max |σ| over t ≤ 4, cΔt = h / 2\n\n");
  fmt::print(
      "| triangles | h (mean edge) | dt | constant basis | linear basis | assembly + run s |\n"
      "|--:|--:|--:|--:|--:|--:|\n");
  auto g = [](double t) { return std::exp(-std::pow((t - 1.5) / 0.4, 2)); };
  auto dg = [&](double t) { return -2 * (t - 1.5) / 0.16 * g(t); };
  for (int ref = 1; ref <= max_refine; ++ref) {
    const auto s = sphere_surface(1.0, ref);
    const double edge = mean_edge_length(s);
    double err[2] = {0, 0}, dt = 0;
    const double t0 = now();
    for (int b = 0; b < 2; ++b) {
      TdbemOptions o;
      o.time_basis = b == 0 ? TimeBasis::constant : TimeBasis::linear;
      o.backend = Backend::cpu;
      o.ng = 1;
      o.dt = dt = edge / 2;
      TdbemSolver<double> solver(s, o);
      solver.set_incident([&](const std::array<double, 3> &, double t) { return -g(t); });
      double e = 0, scale = 0;
      for (std::int64_t n = 0; n * dt <= 4.0; ++n) {
        solver.run(1);
        const double t = (static_cast<double>(n) - (b == 0 ? 0.5 : 0.0)) * dt;
        double exact = 0;
        for (int m = 0; m < 4; ++m)
          exact += 2 * dg(t - 2 * m);
        for (double a : solver.density())
          e = std::max(e, std::abs(a - exact));
        scale = std::max(scale, std::abs(exact));
      }
      err[b] = e / scale;
    }
    fmt::print("| {} | {:.4f} | {:.4f} | {:.3g} | {:.3g} | {:.1f} |\n", s.elements(), edge, dt,
               err[0], err[1], now() - t0);
    out.push_back({{"triangles", s.elements()},
                   {"h", edge},
                   {"dt", dt},
                   {"constant", err[0]},
                   {"linear", err[1]}});
  }
  return out;
}

TriangleSurface load(const Args &a) {
  if (!a.mesh.empty())
    return surface_from_mesh(io::read_mesh(a.mesh, true));
  if (!a.nodes.empty()) {
    TriangleSurface s;
    s.nodes = io::read_table(a.nodes, {.expect_cols = 3});
    const auto t = io::read_table(a.triangles, {.expect_cols = 3});
    for (std::int64_t e = 0; e < t.rows(); ++e) {
      for (int k = 0; k < 3; ++k)
        s.triangles.push_back(static_cast<std::int64_t>(t(e, k)));
      s.tags.push_back(e + 1);
    }
    check_surface(s, a.nodes);
    return s;
  }
  return sphere_surface(1.0, a.refine);
}

// Seconds of one summation call (ng vectors) over all slices, from the blocks of a sample.
template <class Blocks>
double measure(const Blocks &sample, const bem::Slices<float> &slices, int ng, double total_values,
               double sample_values) {
  if (!gpus().empty()) {
    bem::GpuSlices<float> gpu(0, sample, ng);
    return gpu.time_kernel(ng, sample.j0, sample.j1, 5) * total_values / sample_values;
  }
  bem::History<float> past(slices.n, slices.kmax, ng - 1, sample.bc);
  std::vector<float> s(static_cast<std::size_t>(ng) * slices.n);
  double best = 1e300;
  for (int r = 0; r < 3; ++r) {
    const double t0 = now();
    if constexpr (std::is_same_v<Blocks, bem::FullBlocks<float>>)
      bem::sum_full_cpu(sample, past, ng, sample.j0, sample.j1, s.data());
    else
      bem::sum_contiguous_cpu(sample, past, ng, sample.j0, sample.j1, s.data());
    best = std::min(best, now() - t0);
  }
  return best * total_values / sample_values;
}

json table4(const TriangleSurface &surface, const Args &a, double h) {
  json out = json::array();
  const auto n = surface.elements();
  const auto centroids = bem::centroid_table(bem::make_geometry(surface));
  const char *device = gpus().empty() ? "CPU, all threads" : "GPU 0";
  std::stringstream list(a.orderings);
  std::string name;
  while (std::getline(list, name, ',')) {
    const auto ordering = parse_tdbem_ordering(name);
    const auto geo = bem::make_geometry(surface, bem::order_unknowns(centroids, ordering));
    double t0 = now();
    bem::Assembled m0;
    const auto slices = bem::assemble<float>(geo, h, TimeBasis::constant, 0, n, m0);
    const double t_asm = now() - t0;
    const double nnz = static_cast<double>(slices.nnz());
    const int dmax = slices.dmax();
    const double quality = bem::ordering_quality(slices);
    fmt::print("\n### ordering {}: {} unknowns, Kmax {}, d_max {}, d_av {:.2f}, {:.3g} non-zeros, "
               "quality {:.1f} (assembly {:.1f} s); E on {}, ng = {}\n\n",
               name, n, slices.kmax, dmax, nnz / static_cast<double>(slices.rows.size()), nnz,
               quality, t_asm, device, a.ng);
    fmt::print(
        "| b_r × b_c | NBB | NNZ% | E (ms / call) | E (ms / step) |\n|---|--:|--:|--:|--:|\n");
    const std::int64_t sample = std::min<std::int64_t>(a.sample, n);
    const std::int64_t s0 = (n - sample) / 2;
    json rows = json::array();
    for (int br : {16, 32, 64, 128})
      for (int bc : {16, 32, 64, 128}) {
        if (bc < dmax) {
          fmt::print("| {} × {} | — (b_c < d_max) | | | |\n", br, bc);
          continue;
        }
        const auto nbb = bem::FullBlocks<float>::count(slices, br, bc, 0, n);
        const auto part = bem::FullBlocks<float>::build(slices, br, bc, s0, s0 + sample);
        const double values = static_cast<double>(nbb) * br * bc;
        const double e =
            measure(part, slices, a.ng, values, static_cast<double>(part.blocks()) * br * bc);
        fmt::print("| {} × {} | {:.3g} | {:.1f}% | {:.2f} | {:.3f} |\n", br, bc,
                   static_cast<double>(nbb), 100 * nnz / values, 1e3 * e, 1e3 * e / a.ng);
        rows.push_back({{"br", br},
                        {"bc", bc},
                        {"nbb", nbb},
                        {"fill", nnz / values},
                        {"seconds_per_call", e}});
      }
    // Contiguous-Blocking: b_c = d_max, b_r = 128 (§4.2).
    const int br = 128;
    const auto part = bem::ContiguousBlocks<float>::build(slices, br, 0, s0, s0 + sample);
    const double values = static_cast<double>(n) * static_cast<double>(part.nb) * br * part.bc;
    const double e =
        measure(part, slices, a.ng, values,
                static_cast<double>(sample) * static_cast<double>(part.nb) * br * part.bc);
    fmt::print("| CB {} × {} | {} | {:.1f}% | {:.2f} | {:.3f} |\n", br, part.bc,
               static_cast<double>(n) * part.nb, 100 * nnz / values, 1e3 * e, 1e3 * e / a.ng);
    out.push_back(
        {{"ordering", name},
         {"unknowns", n},
         {"kmax", slices.kmax},
         {"dmax", dmax},
         {"nnz", nnz},
         {"quality", quality},
         {"assembly_seconds", t_asm},
         {"device", device},
         {"full", rows},
         {"contiguous",
          {{"br", br}, {"bc", part.bc}, {"fill", nnz / values}, {"seconds_per_call", e}}}});
  }
  return out;
}

json time_steps(const TriangleSurface &surface, const Args &a, double dt) {
  json out = json::array();
  std::vector<Backend> backends{Backend::cpu};
  if (!gpus().empty()) {
    backends.push_back(Backend::cuda);
    backends.push_back(Backend::automatic);
  }
  fmt::print("\n### whole time step (contiguous, f32, ng = {}, {} steps)\n\n", a.ng, a.steps);
  fmt::print("| workers | summation ms/step | solve ms/step | step ms | worker GFlop/s |\n"
             "|---|--:|--:|--:|---|\n");
  for (auto backend : backends) {
    TdbemOptions o;
    o.dt = dt;
    o.ng = a.ng;
    o.backend = backend;
    TdbemSolver<float> solver(surface, o);
    solver.set_incident(plane_wave_pulse({1, 0, 0}, 1.0, 10 * dt, 3 * dt));
    const double t0 = now();
    solver.run(a.steps);
    const double wall = now() - t0;
    const auto &st = solver.stats();
    std::string workers;
    json wj = json::array();
    for (const auto &w : st.workers) {
      workers += fmt::format("{}: {:.0f} ({} slices); ", w.name, w.gflops, w.slices);
      wj.push_back(
          {{"name", w.name}, {"gflops", w.gflops}, {"slices", w.slices}, {"seconds", w.seconds}});
    }
    const std::string label = backend == Backend::cpu    ? "CPU worker"
                              : backend == Backend::cuda ? "1 GPU"
                                                         : "CPU + GPU, balanced";
    fmt::print("| {} | {:.3f} | {:.3f} | {:.3f} | {}|\n", label,
               1e3 * st.summation_seconds / a.steps, 1e3 * st.solve_seconds / a.steps,
               1e3 * wall / a.steps, workers);
    out.push_back({{"workers", label},
                   {"steps", a.steps},
                   {"wall_seconds", wall},
                   {"summation_seconds", st.summation_seconds},
                   {"solve_seconds", st.solve_seconds},
                   {"assembly_seconds", st.assembly_seconds},
                   {"workers_detail", wj},
                   {"balance_percent", st.balance_percent},
                   {"balance_slices", st.balance_slices}});
    if (backend == Backend::automatic && st.workers.size() == 2) {
      // Figure 15: each worker's share of the summed time per call; the GPU's share drawn.
      std::vector<double> x, y;
      std::string csv = "call,cpu_percent,gpu_percent,cpu_slices,gpu_slices\n";
      for (std::size_t c = 0; c < st.balance_percent.size(); ++c) {
        x.push_back(static_cast<double>(c));
        y.push_back(st.balance_percent[c][1]);
        csv +=
            fmt::format("{},{:.2f},{:.2f},{},{}\n", c, st.balance_percent[c][0],
                        st.balance_percent[c][1], st.balance_slices[c][0], st.balance_slices[c][1]);
      }
      if (!a.balance_csv.empty())
        io::write_text(a.balance_csv, csv, true);
      if (!a.balance_png.empty() && x.size() >= 2)
        io::write_line_plot_png(a.balance_png, x.data(), y.data(),
                                static_cast<std::int64_t>(x.size()), true);
      fmt::print(
          "\nbalance (CPU % / GPU % of the summed time; slices): first {:.1f} / {:.1f} ({} / "
          "{}), last {:.1f} / {:.1f} ({} / {})\n",
          st.balance_percent.front()[0], st.balance_percent.front()[1],
          st.balance_slices.front()[0], st.balance_slices.front()[1], st.balance_percent.back()[0],
          st.balance_percent.back()[1], st.balance_slices.back()[0], st.balance_slices.back()[1]);
    }
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  try {
    Args a;
    for (int i = 1; i < argc; ++i) {
      const std::string k = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc)
          throw Error(ErrorCode::invalid_argument, fmt::format("{} needs a value", k));
        return argv[++i];
      };
      if (k == "--help" || k == "-h")
        return bench::print_header_help(__FILE__);
      if (k == "--nodes")
        a.nodes = value();
      else if (k == "--triangles")
        a.triangles = value();
      else if (k == "--mesh")
        a.mesh = value();
      else if (k == "--refine")
        a.refine = std::stoi(value());
      else if (k == "--dt-ratio")
        a.dt_ratio = std::stod(value());
      else if (k == "--ng")
        a.ng = std::stoi(value());
      else if (k == "--sample")
        a.sample = std::stoi(value());
      else if (k == "--steps")
        a.steps = std::stoi(value());
      else if (k == "--orderings")
        a.orderings = value();
      else if (k == "--no-table4")
        a.table4 = false;
      else if (k == "--no-step")
        a.step = false;
      else if (k == "--balance-csv")
        a.balance_csv = value();
      else if (k == "--balance-png")
        a.balance_png = value();
      else if (k == "--json")
        a.json = value();
      else if (k == "--convergence")
        a.convergence = std::stoi(value());
      else if (k == "--figure2")
        a.figure2 = true;
      else
        throw Error(ErrorCode::invalid_argument, fmt::format("unknown option '{}' (see --help)", k));
    }
    if (a.convergence > 0) {
      const json j = {{"convergence", convergence(a.convergence)}};
      if (!a.json.empty())
        std::ofstream(a.json) << j.dump(1) << "\n";
      return 0;
    }
    const auto surface = load(a);
    const auto g = bem::make_geometry(surface);
    const double dt = a.dt_ratio * g.mean_edge;
    fmt::print("# TD-BEM test case: {} triangles, mean edge {:.4g}, diameter ≤ {:.4g}, c = 1, "
               "dt = {:.4g}; {} threads, GPUs: {}\n",
               surface.elements(), g.mean_edge, g.diameter, dt, max_threads(), gpus().size());
    json j = {{"unknowns", surface.elements()}, {"dt", dt}, {"ng", a.ng}};
    if (a.figure2) {
      j["figure2"] = figure2(surface, dt);
      a.table4 = a.step = false;
    }
    if (a.table4)
      j["table4"] = table4(surface, a, dt);
    if (a.step)
      j["steps"] = time_steps(surface, a, dt);
    if (!a.json.empty())
      std::ofstream(a.json) << j.dump(1) << "\n";
  } catch (const std::exception &e) {
    fmt::print(stderr, "bem_tdbem_bench: {}\n", e.what());
    return 1;
  }
}
