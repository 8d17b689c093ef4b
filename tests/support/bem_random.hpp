#pragma once
// Random TD-BEM slices for the tests (seed 003 §3.2): every pair (i, j) holds with probability p
// a row vector of 1 … dmax values over a random k interval inside 1 … kmax, so rows and whole
// slices are empty at random; values are exact in float, so float and double runs see the same
// matrices. far > 0 adds one row vector at k = far (row n − 1, slice 0): a large kmax without
// touching the others.
#include "bem/slices.hpp"

#include <cstdint>
#include <random>
#include <vector>

namespace ksum::test {

template <class T = double>
std::vector<bem::Triplet<T>> random_triplets(std::int64_t n, int kmax, int dmax, double p,
                                             std::mt19937_64 &g, int far = 0) {
  std::uniform_real_distribution<double> u(-1, 1), coin(0, 1);
  std::vector<bem::Triplet<T>> e;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      if (coin(g) > p || (far > 0 && i == n - 1 && j == 0))
        continue;
      const int len = 1 + static_cast<int>(g() % static_cast<unsigned>(dmax));
      const int k0 = 1 + static_cast<int>(g() % static_cast<unsigned>(kmax - len + 1));
      for (int t = 0; t < len; ++t)
        e.push_back({i, j, k0 + t, static_cast<T>(static_cast<float>(u(g)))});
    }
  if (far > 0)
    e.push_back({n - 1, 0, far, T(0.5)});
  return e;
}

template <class T = double>
std::vector<bem::Triplet<T>> random_triplets(std::int64_t n, int kmax, int dmax, double p,
                                             unsigned seed) {
  std::mt19937_64 g(seed);
  return random_triplets<T>(n, kmax, dmax, p, g);
}

} // namespace ksum::test
