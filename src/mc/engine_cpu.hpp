#pragma once
// The CPU side of ksum::mc::Engine (engine.cpp dispatches to it): the particles in precision T as
// structure of arrays, the pair formulas of mc/pair.hpp, sums accumulated in double, OpenMP.
#include "mc/pair.hpp"

#include <ksum/mc.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace ksum::mc::detail {

template <class T> class CpuEngine {
public:
  // box: the periodic box's edges in double (the trial positions are wrapped in double).
  CpuEngine(const PairParams<T> &params, const std::array<double, 3> &box, int threads);

  // The system is validated (and wrapped into a periodic box) already.
  void upload(const System &system);
  Energy total() const;
  // All N² ordered pairs (each twice, as seed 004 Paper I's one-thread-per-particle kernel),
  // halved.
  Energy total_full_recompute(const System &system) const;
  // The move is validated and its positions wrapped already.
  Energy delta(const Move &move) const;
  void apply(const Move &move);
  // Sequential Metropolis (TranslateParams); `host` holds the fp64 positions the trials start from,
  // and the accepted ones are written to it and to the T arrays.
  TranslateResult translate(const TranslateParams &params, const std::vector<std::int64_t> &movable,
                            System &host);

private:
  // ΔU of moving particles idx[0..m) to (nx, ny, nz)[0..m) (T positions, wrapped).
  Energy delta_moved(const std::int64_t *idx, const T *nx, const T *ny, const T *nz, std::int64_t m,
                     bool rigid) const;
  int thread_count() const;

  PairParams<T> p_;
  std::array<double, 3> box_;
  int threads_;
  std::int64_t n_ = 0;
  std::vector<T> x_, y_, z_, q_, r_;
  std::vector<std::int64_t> bond_start_, bond_partner_; // bonds as adjacency lists (CSR)
  std::vector<std::array<std::int64_t, 2>> bonds_;
  // Scratch of delta(): the moved particles' slot in the move (−1: not moved), their positions in
  // T, and a 0/1 mask (T, so that the inner loop stays one type wide for SIMD).
  mutable std::vector<std::int64_t> slot_;
  mutable std::vector<T> moved_mask_, mx_, my_, mz_;
  mutable std::vector<double> block_e_; // delta(): per-block partial sums, added in order
  mutable std::vector<std::int64_t> block_ov_;
};

extern template class CpuEngine<float>;
extern template class CpuEngine<double>;

} // namespace ksum::mc::detail
