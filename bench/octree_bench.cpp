// The 3D FMM's octree (issue 5, first piece): build time per point for growing N, uniform and
// Plummer-clustered, and the sizes of the interaction lists (near points and far boxes per point),
// to show the O(N log N) construction and the O(N) lists. Internal API (src/fmm).
#include "fmm/fmm3d/octree.hpp"

#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <random>
#include <string>

int main(int argc, char **argv) {
  const std::int64_t max_n = argc > 1 ? std::stoll(argv[1]) : 4000000;
  fmt::print("| distribution | N | build [s] | ns per point | boxes | depth | near points per "
             "point | far boxes per leaf |\n|---|---|---|---|---|---|---|---|\n");
  for (const std::string kind : {"uniform", "plummer"}) {
    for (std::int64_t n = 62500; n <= max_n; n *= 4) {
      std::mt19937_64 rng(5);
      std::uniform_real_distribution<double> u(0, 1);
      std::normal_distribution<double> g(0, 1);
      ksum::Table<double> p(n, 3);
      for (std::int64_t i = 0; i < n; ++i) {
        if (kind == "uniform") {
          for (int a = 0; a < 3; ++a)
            p(i, a) = u(rng);
        } else {
          const double r = 1 / std::sqrt(std::pow(std::max(u(rng), 1e-12), -2.0 / 3.0) - 1);
          double v[3], len = 0;
          for (auto &x : v) {
            x = g(rng);
            len += x * x;
          }
          for (int a = 0; a < 3; ++a)
            p(i, a) = v[a] * r / std::sqrt(len);
        }
      }
      const auto t0 = std::chrono::steady_clock::now();
      const auto t = ksum::fmm::build_octree(p, {.leaf_size = 64, .theta = 0.5});
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      double near_pts = 0, far_boxes = 0;
      for (const auto l : t.leaves) {
        const auto &leaf = t.boxes[static_cast<std::size_t>(l)];
        for (auto k = t.near_offsets[static_cast<std::size_t>(l)];
             k < t.near_offsets[static_cast<std::size_t>(l) + 1]; ++k)
          near_pts +=
              static_cast<double>(leaf.size()) *
              static_cast<double>(
                  t.boxes[static_cast<std::size_t>(t.near[static_cast<std::size_t>(k)])].size());
      }
      far_boxes = static_cast<double>(t.far.size()) / static_cast<double>(t.leaves.size());
      fmt::print("| {} | {} | {:.3f} | {:.0f} | {} | {} | {:.0f} | {:.1f} |\n", kind, n, secs,
                 secs / static_cast<double>(n) * 1e9, t.boxes.size(), t.depth,
                 near_pts / static_cast<double>(n), far_boxes);
    }
  }
}
