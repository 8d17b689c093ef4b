#pragma once
// Philox4x32-10 (Salmon, Moraes, Dror & Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC'11):
// a counter-based generator, random = bijection(counter, key), so that move t of a run draws the
// same numbers on the CPU and on the GPU, in any batch, and after a restart. Written from the
// paper's definition: 10 rounds of two 32×32→64 multiplications with the Weyl key schedule.
#include "kernels/hd.hpp"

#include <cstdint>

namespace ksum::mc {

struct Philox4 {
  std::uint32_t v[4];
};

KSUM_HD void philox_mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t &hi, std::uint32_t &lo) {
  const std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(p >> 32);
  lo = static_cast<std::uint32_t>(p);
}

// counter (c0, c1, c2, c3), key (k0, k1).
KSUM_HD Philox4 philox4x32_10(Philox4 c, std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  constexpr std::uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(m0, c.v[0], hi0, lo0);
    philox_mulhilo(m1, c.v[2], hi1, lo1);
    c = Philox4{{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
    k0 += w0;
    k1 += w1;
  }
  return c;
}

// The four draws of event `t` in stream `stream` of a run seeded `seed`.
KSUM_HD Philox4 draw(std::uint64_t seed, std::uint64_t t, std::uint32_t stream) {
  return philox4x32_10(Philox4{{static_cast<std::uint32_t>(t), static_cast<std::uint32_t>(t >> 32),
                                stream, 0u}},
                       static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

// A uniform double in [0, 1) from 32 bits (2^-32 resolution), and in (0, 1) for logs.
KSUM_HD double uniform01(std::uint32_t u) {
  return static_cast<double>(u) * 2.3283064365386963e-10;
}
KSUM_HD double uniform_open(std::uint32_t u) {
  return (static_cast<double>(u) + 0.5) * 2.3283064365386963e-10;
}

// Streams of a run: one per kind of event, so that adding a move kind does not shift the others.
inline constexpr std::uint32_t stream_translate = 1;  // particle, displacement
inline constexpr std::uint32_t stream_accept = 2;     // Metropolis uniform of a translation
inline constexpr std::uint32_t stream_cluster = 3;    // pivot / crankshaft proposals
inline constexpr std::uint32_t stream_cluster_acc = 4;
inline constexpr std::uint32_t stream_init = 5;       // initial configuration

} // namespace ksum::mc
