// Pivot and crankshaft proposals (src/mc/chain_moves.hpp).
#include "mc/chain_moves.hpp"

#include "mc/proposal.hpp"

#include <cmath>
#include <numbers>

namespace ksum::mc {

Rotation quaternion_rotation(double w, double x, double y, double z) {
  const double n = std::sqrt(w * w + x * x + y * y + z * z);
  w /= n;
  x /= n;
  y /= n;
  z /= n;
  Rotation r;
  r.m[0][0] = 1 - 2 * (y * y + z * z);
  r.m[0][1] = 2 * (x * y - w * z);
  r.m[0][2] = 2 * (x * z + w * y);
  r.m[1][0] = 2 * (x * y + w * z);
  r.m[1][1] = 1 - 2 * (x * x + z * z);
  r.m[1][2] = 2 * (y * z - w * x);
  r.m[2][0] = 2 * (x * z - w * y);
  r.m[2][1] = 2 * (y * z + w * x);
  r.m[2][2] = 1 - 2 * (x * x + y * y);
  return r;
}

Rotation uniform_rotation(double u1, double u2, double u3) {
  const double a = std::sqrt(1 - u1), b = std::sqrt(u1);
  const double t2 = 2 * std::numbers::pi * u2, t3 = 2 * std::numbers::pi * u3;
  return quaternion_rotation(b * std::cos(t3), a * std::sin(t2), a * std::cos(t2),
                             b * std::sin(t3));
}

Rotation axis_angle_rotation(const Vec3 &axis, double angle) {
  const double s = std::sin(angle / 2);
  return quaternion_rotation(std::cos(angle / 2), s * axis[0], s * axis[1], s * axis[2]);
}

Vec3 uniform_axis(double u1, double u2) {
  const double z = 2 * u1 - 1;
  const double phi = 2 * std::numbers::pi * u2;
  const double r = std::sqrt(std::max(0.0, 1 - z * z));
  return {r * std::cos(phi), r * std::sin(phi), z};
}

void unwrapped_chain(const System &s, const Cell &cell, std::int64_t first, std::int64_t n,
                     std::vector<Vec3> &out) {
  out.resize(std::size_t(n));
  const bool periodic = cell.boundary == Boundary::periodic;
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t i = first + k;
    const Vec3 p = {s.x[i], s.y[i], s.z[i]};
    if (k == 0 || !periodic) {
      out[std::size_t(k)] = p;
      continue;
    }
    const Vec3 &prev = out[std::size_t(k - 1)];
    for (int a = 0; a < 3; ++a) {
      double d = p[a] - prev[a];
      d -= cell.box[a] * std::nearbyint(d / cell.box[a]);
      out[std::size_t(k)][a] = prev[a] + d;
    }
  }
}

namespace {

// New positions of monomers [lo, hi] of the unwrapped chain u: centre + R (u − centre), wrapped.
bool rotate_range(const Cell &cell, std::int64_t first, const std::vector<Vec3> &u, std::int64_t lo,
                  std::int64_t hi, const Vec3 &centre, const Rotation &rot, Move &move) {
  move.particles.clear();
  move.xyz.clear();
  move.rigid = cell.boundary != Boundary::periodic;
  const double r2max = cell.radius * cell.radius;
  for (std::int64_t k = lo; k <= hi; ++k) {
    const Vec3 &p = u[std::size_t(k)];
    const Vec3 d = rot({p[0] - centre[0], p[1] - centre[1], p[2] - centre[2]});
    Vec3 q = {centre[0] + d[0], centre[1] + d[1], centre[2] + d[2]};
    if (cell.boundary == Boundary::sphere && q[0] * q[0] + q[1] * q[1] + q[2] * q[2] > r2max)
      return false;
    if (cell.boundary == Boundary::periodic)
      for (int a = 0; a < 3; ++a)
        q[a] = wrap(q[a], cell.box[a]);
    move.particles.push_back(first + k);
    move.xyz.insert(move.xyz.end(), q.begin(), q.end());
  }
  return true;
}

} // namespace

bool propose_pivot(const System &s, const Cell &cell, std::int64_t first, std::int64_t n,
                   const Philox4 &draws, bool side, double max_angle, Move &move) {
  if (n < 2)
    return false;
  // A bond j (between monomers j and j + 1) uniformly; side: rotate the monomers after it about
  // monomer j, or those before it about monomer j + 1.
  const auto j = std::int64_t((std::uint64_t(draws.v[0]) * std::uint64_t(n - 1)) >> 32);
  const double u1 = uniform01(draws.v[1]), u2 = uniform01(draws.v[2]), u3 = uniform01(draws.v[3]);
  const Rotation rot = max_angle >= std::numbers::pi
                           ? uniform_rotation(u1, u2, u3)
                           : axis_angle_rotation(uniform_axis(u1, u2), (2 * u3 - 1) * max_angle);
  std::vector<Vec3> u;
  unwrapped_chain(s, cell, first, n, u);
  if (side)
    return rotate_range(cell, first, u, j + 1, n - 1, u[std::size_t(j)], rot, move);
  return rotate_range(cell, first, u, 0, j, u[std::size_t(j + 1)], rot, move);
}

bool propose_crankshaft(const System &s, const Cell &cell, std::int64_t first, std::int64_t n,
                        std::int64_t span, const Philox4 &draws, double max_angle, Move &move) {
  if (span < 2 || n < span + 1)
    return false;
  const auto i = std::int64_t((std::uint64_t(draws.v[0]) * std::uint64_t(n - span)) >> 32);
  const double angle = (2 * uniform01(draws.v[1]) - 1) * max_angle;
  std::vector<Vec3> u;
  unwrapped_chain(s, cell, first, n, u);
  const Vec3 &a = u[std::size_t(i)], &b = u[std::size_t(i + span)];
  Vec3 axis = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
  const double len = std::sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
  if (!(len > 0))
    return false;
  for (double &c : axis)
    c /= len;
  return rotate_range(cell, first, u, i + 1, i + span - 1, a, axis_angle_rotation(axis, angle),
                      move);
}

} // namespace ksum::mc
