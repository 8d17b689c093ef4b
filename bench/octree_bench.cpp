// The 3D FMM's octrees (issue 5): build time per point for growing N, uniform and
// Plummer-clustered.
//   fmm      the interpolation FMM's tree (fmm_tree.hpp): codes, radix sort (CPU threads, or the
//            GPU with --gpu), boxes, U/V/W/X lists, leaf size 729 (order 9), each phase timed;
//   treecode the shrunk-box octree of the multiquadric treecode (octree.hpp), with the sizes of
//            its lists (near points per point, far boxes per leaf).
// ns per point growing like log N, not like N, is the O(N log N) construction. Internal API.
#include "fmm/fmm3d/fmm_tree.hpp"
#include "fmm/fmm3d/octree.hpp"

#include <ksum/datasets.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <omp.h>
#include <string>
#include <vector>

namespace {

ksum::Table<double> points(const std::string &kind, std::int64_t n) {
  return kind == "uniform" ? ksum::datasets::uniform_cube(n, 5) : ksum::datasets::plummer(n, 5);
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void fmm_tree(std::int64_t max_n, bool gpu) {
  fmt::print("FMM tree ({}, {} CPU threads), leaf size 729:\n\n"
             "| distribution | N | build [s] | ns per point | codes / sort / boxes / lists [s] | "
             "boxes | depth | V entries |\n|---|---|---|---|---|---|---|---|\n",
             gpu ? "radix sort on GPU 0" : "radix sort on the CPU", omp_get_max_threads());
  for (const std::string kind : {"uniform", "plummer"}) {
    for (std::int64_t n = 62500; n <= max_n; n *= 4) {
      const auto p = points(kind, n);
      std::vector<double> cols(static_cast<std::size_t>(3 * n));
      for (int a = 0; a < 3; ++a)
        for (std::int64_t i = 0; i < n; ++i)
          cols[static_cast<std::size_t>(a * n + i)] = p(i, a);
      const ksum::fmm::FmmTreeOptions o{
          .leaf_size = 729, .expansion_size = 729, .sort_device = gpu ? 0 : -1};
      if (gpu) // the first GPU call pays for the CUDA context: not part of a tree build
        ksum::fmm::build_fmm_tree(cols.data(), std::min<std::int64_t>(n, 1000), nullptr, 0, o);
      const auto t0 = std::chrono::steady_clock::now();
      const auto t = ksum::fmm::build_fmm_tree(cols.data(), n, nullptr, 0, o);
      const double secs = since(t0);
      fmt::print("| {} | {} | {:.3f} | {:.0f} | {:.3f} / {:.3f} / {:.3f} / {:.3f} | {} | {} | {} "
                 "|\n",
                 kind, n, secs, secs / static_cast<double>(n) * 1e9, t.seconds.codes,
                 t.seconds.sort, t.seconds.split, t.seconds.lists, t.boxes.size(), t.depth,
                 t.v.boxes.size());
      std::fflush(stdout);
    }
  }
}

void treecode_tree(std::int64_t max_n) {
  fmt::print("\nTreecode octree (shrunk boxes, theta 0.5), leaf size 64:\n\n"
             "| distribution | N | build [s] | ns per point | boxes | depth | near points per "
             "point | far boxes per leaf |\n|---|---|---|---|---|---|---|---|\n");
  for (const std::string kind : {"uniform", "plummer"}) {
    for (std::int64_t n = 62500; n <= max_n; n *= 4) {
      const auto p = points(kind, n);
      const auto t0 = std::chrono::steady_clock::now();
      const auto t = ksum::fmm::build_octree(p, {.leaf_size = 64, .theta = 0.5});
      const double secs = since(t0);
      double near_pts = 0;
      for (const auto l : t.leaves) {
        const auto &leaf = t.boxes[static_cast<std::size_t>(l)];
        for (auto k = t.near_offsets[static_cast<std::size_t>(l)];
             k < t.near_offsets[static_cast<std::size_t>(l) + 1]; ++k)
          near_pts +=
              static_cast<double>(leaf.size()) *
              static_cast<double>(
                  t.boxes[static_cast<std::size_t>(t.near[static_cast<std::size_t>(k)])].size());
      }
      const double far_boxes =
          static_cast<double>(t.far.size()) / static_cast<double>(t.leaves.size());
      fmt::print("| {} | {} | {:.3f} | {:.0f} | {} | {} | {:.0f} | {:.1f} |\n", kind, n, secs,
                 secs / static_cast<double>(n) * 1e9, t.boxes.size(), t.depth,
                 near_pts / static_cast<double>(n), far_boxes);
      std::fflush(stdout);
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  std::int64_t max_n = 4000000;
  bool gpu = false, treecode = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--gpu"))
      gpu = true;
    else if (!std::strcmp(argv[i], "--fmm-only"))
      treecode = false;
    else if (!std::strcmp(argv[i], "--help")) {
      fmt::print("usage: octree_bench [MAX_N] [--gpu] [--fmm-only]\n");
      return 0;
    } else
      max_n = std::stoll(argv[i]);
  }
  try {
    fmm_tree(max_n, false);
    if (gpu) {
      fmt::print("\n");
      fmm_tree(max_n, true);
    }
    if (treecode)
      treecode_tree(max_n);
  } catch (const std::exception &e) {
    fmt::print(stderr, "octree_bench: {}\n", e.what());
    return 1;
  }
}
