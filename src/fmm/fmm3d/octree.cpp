// Octree construction (octree.hpp): Morton codes, radix sort, breadth-first splitting of the
// sorted code ranges, bounding boxes bottom-up, and the dual-tree traversal for the lists.
#include "fmm/fmm3d/octree.hpp"

#include <ksum/error.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <omp.h>

namespace ksum::fmm {
namespace {

constexpr int bits_per_axis = morton_bits;
constexpr int max_level = bits_per_axis; // boxes at this level are leaves whatever their size

// The child digit (0–7) of a code at `level` (the root's children are level 1).
int digit(std::uint64_t code, int level) {
  return static_cast<int>(code >> (3 * (bits_per_axis - level)) & 7);
}

bool well_separated(const OctreeBox &a, const OctreeBox &b, double theta) {
  const double dx = a.centre[0] - b.centre[0], dy = a.centre[1] - b.centre[1],
               dz = a.centre[2] - b.centre[2];
  return std::sqrt(dx * dx + dy * dy + dz * dz) * theta >= a.radius + b.radius;
}

} // namespace

void radix_sort(std::vector<std::uint64_t> &keys, std::vector<std::int64_t> &order) {
  // LSD, 8 bits per pass. Each thread counts the digits of its contiguous chunk; a digit's slots
  // go to the chunks in order, so the sort stays stable whatever the thread count.
  const std::size_t n = keys.size();
  order.resize(n);
  std::vector<std::uint64_t> k2(n);
  std::vector<std::int64_t> o2(n);
  const int threads = n < 200000 ? 1 : std::max(1, omp_get_max_threads());
  std::vector<std::array<std::size_t, 256>> count(static_cast<std::size_t>(threads));
  std::uint64_t varying = 0; // the bits where keys differ from the first: passes elsewhere skip
#pragma omp parallel num_threads(threads)
  {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    const std::size_t b = n * t / static_cast<std::size_t>(threads),
                      e = n * (t + 1) / static_cast<std::size_t>(threads);
    std::uint64_t v = 0;
    for (std::size_t i = b; i < e; ++i) {
      order[i] = static_cast<std::int64_t>(i);
      v |= keys[i] ^ keys[0];
    }
#pragma omp critical
    varying |= v;
#pragma omp barrier
    for (int shift = 0; shift < 64; shift += 8) {
      if ((varying >> shift & 0xff) == 0)
        continue; // every key has the same digit here: the pass would not move anything
      auto &c = count[t];
      c.fill(0);
      for (std::size_t i = b; i < e; ++i)
        ++c[keys[i] >> shift & 0xff];
#pragma omp barrier
#pragma omp single
      {
        std::size_t sum = 0;
        for (std::size_t d = 0; d < 256; ++d)
          for (auto &ct : count) {
            const std::size_t x = ct[d];
            ct[d] = sum;
            sum += x;
          }
      }
      for (std::size_t i = b; i < e; ++i) {
        const std::size_t pos = c[keys[i] >> shift & 0xff]++;
        k2[pos] = keys[i];
        o2[pos] = order[i];
      }
#pragma omp barrier
#pragma omp single
      {
        keys.swap(k2);
        order.swap(o2);
      }
    }
  }
}

Octree build_octree(const Table<double> &points, const OctreeOptions &options) {
  if (points.cols() != 3)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("octree: points have {} columns (expected 3)", points.cols()));
  if (options.leaf_size < 1)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("octree: leaf_size {} (expected at least 1)", options.leaf_size));
  if (!(options.theta > 0 && options.theta < 1))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("octree: theta {} (expected 0 < theta < 1)", options.theta));
  const std::int64_t n = points.rows();
  Octree t;
  double lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    lo[a] = std::numeric_limits<double>::infinity();
    hi[a] = -lo[a];
    for (std::int64_t i = 0; i < n; ++i) {
      const double v = points(i, a);
      if (!std::isfinite(v))
        throw Error(ErrorCode::non_finite,
                    fmt::format("octree: point {} has a non-finite coordinate", i));
      lo[a] = std::min(lo[a], v);
      hi[a] = std::max(hi[a], v);
    }
  }
  // One cube around the points, its side split into 2^21 cells per axis.
  double side = 0;
  for (int a = 0; a < 3; ++a)
    side = std::max(side, n > 0 ? hi[a] - lo[a] : 0.0);
  const double cells = static_cast<double>((1u << bits_per_axis) - 1);
  const double scale = side > 0 ? cells / side : 0;
  t.codes.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint64_t c = 0;
    for (int a = 0; a < 3; ++a) {
      const double q = std::clamp(std::floor((points(i, a) - lo[a]) * scale), 0.0, cells);
      c |= morton_spread3(static_cast<std::uint64_t>(q)) << (2 - a);
    }
    t.codes[static_cast<std::size_t>(i)] = c;
  }
  radix_sort(t.codes, t.order);
  t.points = Table<double>(n, 3, Uninitialized{});
  for (int a = 0; a < 3; ++a)
    for (std::int64_t k = 0; k < n; ++k)
      t.points(k, a) = points(t.order[static_cast<std::size_t>(k)], a);

  // Breadth first: a box's children are appended together, after every box of lower level.
  t.boxes.push_back(OctreeBox{.begin = 0, .end = n});
  for (std::size_t b = 0; b < t.boxes.size(); ++b) {
    const OctreeBox box = t.boxes[b];
    if (box.size() <= options.leaf_size || box.level >= max_level)
      continue;
    const int level = box.level + 1;
    std::int64_t start = box.begin;
    const auto first = static_cast<std::int32_t>(t.boxes.size());
    for (int d = 0; d < 8 && start < box.end; ++d) {
      const auto stop = std::partition_point(t.codes.begin() + start, t.codes.begin() + box.end,
                                             [&](std::uint64_t c) { return digit(c, level) <= d; });
      const auto e = static_cast<std::int64_t>(stop - t.codes.begin());
      if (e > start)
        t.boxes.push_back(OctreeBox{
            .begin = start, .end = e, .parent = static_cast<std::int32_t>(b), .level = level});
      start = e;
    }
    t.boxes[b].first_child = first;
    t.boxes[b].children = static_cast<std::int32_t>(t.boxes.size()) - first;
    t.depth = std::max(t.depth, level);
  }

  // Bounding boxes bottom-up: leaves from their points, parents from their children.
  std::vector<std::array<double, 6>> bb(t.boxes.size());
  for (std::size_t b = t.boxes.size(); b-- > 0;) {
    auto &box = t.boxes[b];
    auto &r = bb[b];
    for (int a = 0; a < 3; ++a) {
      r[static_cast<std::size_t>(a)] = std::numeric_limits<double>::infinity();
      r[static_cast<std::size_t>(a) + 3] = -std::numeric_limits<double>::infinity();
    }
    if (box.leaf()) {
      for (int a = 0; a < 3; ++a)
        for (std::int64_t k = box.begin; k < box.end; ++k) {
          r[static_cast<std::size_t>(a)] = std::min(r[static_cast<std::size_t>(a)], t.points(k, a));
          r[static_cast<std::size_t>(a) + 3] =
              std::max(r[static_cast<std::size_t>(a) + 3], t.points(k, a));
        }
    } else {
      for (std::int32_t c = box.first_child; c < box.first_child + box.children; ++c)
        for (std::size_t a = 0; a < 3; ++a) {
          r[a] = std::min(r[a], bb[static_cast<std::size_t>(c)][a]);
          r[a + 3] = std::max(r[a + 3], bb[static_cast<std::size_t>(c)][a + 3]);
        }
    }
    double d2 = 0;
    for (std::size_t a = 0; a < 3; ++a) {
      if (box.size() == 0) { // only the root of an empty set
        r[a] = r[a + 3] = 0;
      }
      box.centre[a] = 0.5 * (r[a] + r[a + 3]);
      d2 += (r[a + 3] - r[a]) * (r[a + 3] - r[a]);
    }
    box.radius = 0.5 * std::sqrt(d2);
    if (box.leaf() && box.size() > 0)
      t.leaves.push_back(static_cast<std::int32_t>(b));
  }
  std::sort(t.leaves.begin(), t.leaves.end(), [&](std::int32_t x, std::int32_t y) {
    return t.boxes[static_cast<std::size_t>(x)].begin < t.boxes[static_cast<std::size_t>(y)].begin;
  });

  // Dual-tree traversal from (root, root): a pair is far when the criterion holds, near when both
  // are leaves, else the larger box (or the one that is not a leaf) is split.
  const std::size_t nb = t.boxes.size();
  std::vector<std::vector<std::int32_t>> far(nb), near(nb);
  if (n > 0) {
    std::vector<std::pair<std::int32_t, std::int32_t>> stack{{0, 0}};
    while (!stack.empty()) {
      const auto [a, b] = stack.back();
      stack.pop_back();
      const OctreeBox &A = t.boxes[static_cast<std::size_t>(a)];
      const OctreeBox &B = t.boxes[static_cast<std::size_t>(b)];
      if (a == b) {
        if (A.leaf()) {
          near[static_cast<std::size_t>(a)].push_back(b);
          continue;
        }
        for (std::int32_t i = A.first_child; i < A.first_child + A.children; ++i)
          for (std::int32_t j = A.first_child; j < A.first_child + A.children; ++j)
            stack.emplace_back(i, j);
      } else if (well_separated(A, B, options.theta)) {
        far[static_cast<std::size_t>(a)].push_back(b);
      } else if (A.leaf() && B.leaf()) {
        near[static_cast<std::size_t>(a)].push_back(b);
      } else if (B.leaf() || (!A.leaf() && A.radius >= B.radius)) {
        for (std::int32_t i = A.first_child; i < A.first_child + A.children; ++i)
          stack.emplace_back(i, b);
      } else {
        for (std::int32_t j = B.first_child; j < B.first_child + B.children; ++j)
          stack.emplace_back(a, j);
      }
    }
  }
  auto csr = [nb](std::vector<std::vector<std::int32_t>> &lists, std::vector<std::int64_t> &off,
                  std::vector<std::int32_t> &flat) {
    off.assign(nb + 1, 0);
    for (std::size_t b = 0; b < nb; ++b) {
      std::sort(lists[b].begin(), lists[b].end());
      off[b + 1] = off[b] + static_cast<std::int64_t>(lists[b].size());
    }
    flat.reserve(static_cast<std::size_t>(off[nb]));
    for (auto &l : lists)
      flat.insert(flat.end(), l.begin(), l.end());
  };
  csr(far, t.far_offsets, t.far);
  csr(near, t.near_offsets, t.near);
  return t;
}

} // namespace ksum::fmm
