#pragma once
// The chain moves of the polyelectrolyte simulation (seed 004 Paper I, Program 1's pivot_move):
// pivots (the part of a chain beyond a monomer rotated about it) and crankshafts (the monomers
// between i and i + k rotated about the axis through them), proposed from counter-based draws.
// Both proposals are symmetric (a rotation and its inverse are equally likely), so Metropolis on
// ΔU alone satisfies detailed balance.
#include <ksum/mc.hpp>

#include "mc/philox.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace ksum::mc {

using Vec3 = std::array<double, 3>;

struct Rotation {
  double m[3][3];
  Vec3 operator()(const Vec3 &v) const {
    return {m[0][0] * v[0] + m[0][1] * v[1] + m[0][2] * v[2],
            m[1][0] * v[0] + m[1][1] * v[1] + m[1][2] * v[2],
            m[2][0] * v[0] + m[2][1] * v[1] + m[2][2] * v[2]};
  }
};

// The rotation of the unit quaternion (w, x, y, z) (normalised here).
Rotation quaternion_rotation(double w, double x, double y, double z);
// A uniformly (Haar) distributed rotation from three uniforms in [0, 1) (Shoemake, Graphics Gems
// III, "Uniform random rotations").
Rotation uniform_rotation(double u1, double u2, double u3);
// The rotation by `angle` about the unit vector `axis` (as a quaternion).
Rotation axis_angle_rotation(const Vec3 &axis, double angle);
// A uniform direction from two uniforms in [0, 1) (Archimedes: z uniform in [−1, 1]).
Vec3 uniform_axis(double u1, double u2);

// Positions of monomers first … first + n − 1 of a chain, unwrapped along it in a periodic box
// (each bond by its minimum image from the previous monomer; monomer `first` as stored).
void unwrapped_chain(const System &s, const Cell &cell, std::int64_t first, std::int64_t n,
                     std::vector<Vec3> &out);

// The proposals. `draws` is the event's stream_cluster draw and `side` one more random bit (the
// pivot's side). The Move holds the new positions (wrapped into a periodic box) and is rigid
// outside periodic boxes. Returns false when the proposal cannot be accepted whatever ΔU (a moved
// centre leaves the spherical cell, a crankshaft axis of zero length, or a chain too short): no
// Move then.
bool propose_pivot(const System &s, const Cell &cell, std::int64_t first, std::int64_t n,
                   const Philox4 &draws, bool side, double max_angle, Move &move);
bool propose_crankshaft(const System &s, const Cell &cell, std::int64_t first, std::int64_t n,
                        std::int64_t span, const Philox4 &draws, double max_angle, Move &move);

} // namespace ksum::mc
