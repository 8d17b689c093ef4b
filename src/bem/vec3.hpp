#pragma once
// The few 3-vector operations the boundary element geometry needs (surface checks, integrals).
#include <array>
#include <cmath>

namespace ksum::bem {

using V3 = std::array<double, 3>;
inline V3 sub(const V3 &a, const V3 &b) {
  return {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
}
inline double dot(const V3 &a, const V3 &b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
inline V3 cross(const V3 &a, const V3 &b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
inline double norm(const V3 &a) {
  return std::sqrt(dot(a, a));
}

} // namespace ksum::bem
