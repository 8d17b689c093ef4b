#pragma once
// The multiquadric matvec of seed 000 §3.2–3.3 as a treecode: per source box the far-field series
// of multiquadric.hpp ("setup"), then per target the series of every far box and the direct sum
// over the near boxes ("eval"), the boxes and lists from the octree.
//   u_i = Σ_j w_j (|x_i − x_j|² + c²)^{1/2},  targets = sources (the j = i term, c, included)
// Error: each far pair uses the series only where Lemma 3.1 bounds its error per unit weight by
// tolerance · (the pair's smallest distance), i.e. a relative error ≤ tolerance per source; pairs
// that would need more terms are summed directly. So |u_i − ũ_i| ≤ tolerance · Σ_j |w_j| φ_ij.
#include "fmm/fmm3d/octree.hpp"

#include <ksum/table.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace ksum::fmm {

struct MqTreecodeOptions {
  double c = 1;            // the multiquadric's shift (c = 1/ε)
  double tolerance = 1e-6; // per-source relative error of the series
  std::int64_t leaf_size = 64;
  double theta = 0.5;
  bool gpu = false;    // setup and eval on the GPU (mq_gpu.hpp)
  bool single = false; // in float there (tolerance ≥ 1e-6)
  int device = 0;
};

struct MqTreecodeStats {
  int terms = 0;                 // series length (l < terms)
  std::int64_t series_pairs = 0; // (target box, source box) pairs by the series
  std::int64_t direct_pairs = 0; // near pairs, and far pairs the series could not serve
  std::int64_t series_terms = 0; // summed over the series pairs: each uses the fewest it needs
  double seconds_tree = 0, seconds_setup = 0, seconds_eval = 0;
};

class MqGpu;

class MqTreecode {
public:
  MqTreecode(const Table<double> &points, const MqTreecodeOptions &options);
  ~MqTreecode();
  // u (n values, input order) for weights w (n values, input order).
  std::vector<double> apply(const std::vector<double> &w);
  const MqTreecodeStats &stats() const { return stats_; }
  const Octree &tree() const { return tree_; }

private:
  MqTreecodeOptions opt_;
  Octree tree_;
  MqTreecodeStats stats_;
  // Per far pair (in the order of tree_.far): the series terms it uses, 0: summed directly.
  std::vector<char> use_series_;
  std::unique_ptr<MqGpu> gpu_;
};

} // namespace ksum::fmm
