// The multiquadric treecode (issue 5, seed 000 §3.2–3.3) at seed 000's sizes beside the seed's
// test system I "CPU setup" / "CPU eval" (fp64, figure 4) and our direct CPU product, with the
// measured error against that direct product. Points: 3D Halton (the seed's mesh nodes are not
// available), c = mean spacing N^(−1/3), tolerance 1e-6 (the seed states none). Internal API.
#include "fmm/fmm3d/mq_treecode.hpp"

#include <ksum/datasets.hpp>
#include <ksum/direct.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  const std::int64_t max_n = argc > 1 ? std::stoll(argv[1]) : 89702;
  const std::int64_t sizes[] = {602, 1562, 3542, 9902, 39802, 89702};
  const double seed_setup[] = {3.71e-3, 6.61e-3, 1.23e-2, 2.97e-2, 1.47e-1, 3.20e-1};
  const double seed_eval[] = {7.12e-3, 1.31e-2, 3.05e-2, 1.06e-1, 6.30e-1, 2.02e0};
  fmt::print("| nodes | seed CPU setup | ksum setup | seed CPU eval | ksum eval | ksum direct "
             "(CPU) | terms | series / direct pairs | max rel. error |\n"
             "|---|---|---|---|---|---|---|---|---|\n");
  for (int s = 0; s < 6; ++s) {
    const std::int64_t n = sizes[s];
    if (n > max_n)
      break;
    const auto p = ksum::datasets::halton(n, 3);
    const double c = std::pow(static_cast<double>(n), -1.0 / 3.0);
    std::vector<double> w(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      w[static_cast<std::size_t>(i)] = std::sin(3.0 * static_cast<double>(i));
    ksum::fmm::MqTreecode tc(p, {.c = c, .tolerance = 1e-6});
    auto u = tc.apply(w); // warm-up
    u = tc.apply(w);
    ksum::DirectSum<double> ds(ksum::DirectOptions{
        .kernel = ksum::Kernel::multiquadric, .eps = 1 / c, .backend = ksum::Backend::cpu});
    ds.set_points(p);
    ksum::Table<double> wt(n, 1);
    for (std::int64_t i = 0; i < n; ++i)
      wt(i, 0) = w[static_cast<std::size_t>(i)];
    const auto t0 = std::chrono::steady_clock::now();
    const auto ref = ds.execute(wt);
    const double direct =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // The direct plan leaves out the self term (φ(0) = 1 in ε units; c here): add it back and
    // scale (the plan's kernel is sqrt(1 + (εr)²) = sqrt(c² + r²) / c).
    double err = 0, norm = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double r = c * ref(i, 0) + c * w[static_cast<std::size_t>(i)];
      err = std::max(err, std::abs(u[static_cast<std::size_t>(i)] - r));
      norm = std::max(norm, std::abs(r));
    }
    const auto &st = tc.stats();
    fmt::print("| {} | {:.2e} | {:.2e} | {:.2e} | {:.2e} | {:.2e} | {} | {} / {} | {:.1e} |\n", n,
               seed_setup[s], st.seconds_setup, seed_eval[s], st.seconds_eval, direct, st.terms,
               st.series_pairs, st.direct_pairs, err / norm);
    std::fflush(stdout);
  }
}
