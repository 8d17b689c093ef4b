#pragma once
// The balanced pyramid of seed 004 Paper IV §2.2 and its connectivity (§2.1).
//
// Level 0 is one box holding every point; each box is split into four children holding a quarter
// of its sources each: first at the median along the longer side of the box, then each half at
// its median along the other side. Boxes are shrunk to their points. Box k of level l has index
// first(l) + k with first(l) = (4^l − 1)/3, and children 4k … 4k+3 on level l+1; the boxes of a
// level cover the sorted points left to right, so every box is a contiguous range.
//
// Targets (evaluation points) are split at the sources' split values, so a box's targets lie in
// the same half-planes as its sources; the source and target boxes are shrunk separately (the
// multipole lives on the sources, the local expansion on the targets).
//
// Connectivity: a box is strongly coupled to itself; the candidates of box b are the children of
// the boxes strongly coupled to b's parent; a candidate c is weakly coupled (one M2L) when the
// θ-criterion R + θ r ≤ θ d holds, with R, r the larger and smaller of the target radius of b and
// the source radius of c and d the distance of their centres, otherwise strongly coupled. On the
// finest level the strong lists are the near field (P2P).
#include <complex>
#include <cstdint>
#include <vector>

namespace ksum::fmm2d {

inline std::int64_t level_first(int l) { return ((std::int64_t(1) << (2 * l)) - 1) / 3; }
inline std::int64_t level_size(int l) { return std::int64_t(1) << (2 * l); }

// A point during the partition: coordinates and its input index.
template <class T> struct PyrPoint {
  T c[2];
  std::int32_t i;
};

template <class T> struct Pyramid {
  int levels = 0;
  bool self = false; // targets are the sources
  // Sorted points and their input indices.
  std::vector<std::complex<T>> src, tgt; // tgt empty when self
  std::vector<std::int32_t> src_index, tgt_index;
  // Finest-level ranges: leaf k holds sources [src_off[k], src_off[k+1]) (same for targets).
  std::vector<std::int64_t> src_off, tgt_off;
  // Per box (all levels): shrunk source and target boxes as centre and radius (half diagonal).
  std::vector<std::complex<T>> src_centre, tgt_centre;
  std::vector<T> src_radius, tgt_radius;
  // The expansions' length scale per box: its radius, or for a box of zero size (identical
  // points) a small fraction of its parent's (see build_pyramid), so no power of a scale ratio
  // overflows (the coefficients of such a box beyond the first are zero anyway).
  std::vector<T> src_scale, tgt_scale;
  std::vector<std::int64_t> src_count, tgt_count;
  // Per level l: CSR lists of box indices within the level (weak: M2L sources of each target box,
  // strong: near boxes). weak_off[l] has level_size(l) + 1 entries.
  std::vector<std::vector<std::int64_t>> weak_off, strong_off;
  std::vector<std::vector<std::int32_t>> weak, strong;
  std::int64_t m2l_count = 0, p2p_pairs = 0;
  // Smallest gap d − R − r over all weakly coupled pairs (inf without any): the smoothing check.
  double min_weak_gap = 0;
  // Seconds of the last build: copy in, median splits, copy out + shrunk boxes, connectivity.
  double seconds_copy = 0, seconds_split = 0, seconds_boxes = 0, seconds_connect = 0;
  // The partition's scratch, kept between builds so a time step's rebuild reuses memory that is
  // already mapped: sources and targets, each with a second array the splits write into.
  std::vector<PyrPoint<T>> work[4];

  const std::complex<T> *targets() const { return self ? src.data() : tgt.data(); }
  const std::int64_t *target_offsets() const { return self ? src_off.data() : tgt_off.data(); }
  std::int64_t num_boxes() const { return level_first(levels); }
};

// Builds the pyramid on `levels` levels (≥ 1) with threads (0: OpenMP's default). targets may be
// null (then the targets are the sources). Throws Error(invalid_argument) for more than 2^31 − 1
// points or levels outside 1 … 15.
template <class T>
void build_pyramid(Pyramid<T> &pyr, const std::complex<T> *sources, std::int64_t n,
                   const std::complex<T> *targets, std::int64_t m, int levels, double theta,
                   int threads);

extern template void build_pyramid(Pyramid<float> &, const std::complex<float> *, std::int64_t,
                                   const std::complex<float> *, std::int64_t, int, double, int);
extern template void build_pyramid(Pyramid<double> &, const std::complex<double> *, std::int64_t,
                                   const std::complex<double> *, std::int64_t, int, double, int);

} // namespace ksum::fmm2d
