#pragma once
// One single-particle translation trial, drawn from the counter-based stream (seed, t): the same on
// the CPU and the GPU (include/ksum/mc.hpp, TranslateParams), and the Metropolis test.
#include "kernels/hd.hpp"
#include "mc/philox.hpp"

#include <cmath>
#include <cstdint>

namespace ksum::mc {

struct Trial {
  std::int64_t slot = 0;  // index into the movable list
  double ux = 0, uy = 0, uz = 0; // displacement / step, each uniform in [−1, 1)
  double u_accept = 0.5;  // the Metropolis uniform in (0, 1)
};

KSUM_HD Trial translation_trial(std::uint64_t seed, std::uint64_t t, std::int64_t n_movable) {
  const Philox4 r = draw(seed, t, stream_translate);
  const Philox4 a = draw(seed, t, stream_accept);
  Trial trial;
  // (32-bit uniform × n) >> 32: unbiased enough for n ≪ 2^32 (bias < n / 2^32).
  trial.slot = static_cast<std::int64_t>((static_cast<std::uint64_t>(r.v[0]) *
                                          static_cast<std::uint64_t>(n_movable)) >> 32);
  trial.ux = 2 * uniform01(r.v[1]) - 1;
  trial.uy = 2 * uniform01(r.v[2]) - 1;
  trial.uz = 2 * uniform01(r.v[3]) - 1;
  trial.u_accept = uniform_open(a.v[0]);
  return trial;
}

// Metropolis at β = 1 (energies in kT): accept a finite ΔU with probability min(1, e^{−ΔU}).
KSUM_HD bool metropolis(double du, std::int64_t overlaps, double u) {
  return overlaps == 0 && (du <= 0 || u < std::exp(-du));
}

// Wraps a coordinate into [0, L) (periodic boxes).
KSUM_HD double wrap(double x, double L) {
  double w = x - L * std::floor(x / L);
  return w >= L ? w - L : w;
}

} // namespace ksum::mc
