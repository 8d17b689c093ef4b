#pragma once
// Potential + Cell (include/ksum/mc.hpp) turned into the PairParams<T> that the shared pair
// formulas (mc/pair.hpp) read on the CPU and the GPU, after validating them.
#include "mc/pair.hpp"

#include <ksum/mc.hpp>

namespace ksum::mc::detail {

// Throws Error(invalid_argument) naming the bad field and value: a Bjerrum length ≤ 0 with
// electrostatics, a Debye length ≤ 0 for debye_huckel, ε < 0 for lennard_jones / wca, a bond
// constant out of its domain, a spherical cell of radius ≤ 0, a periodic box edge ≤ 0 (or any of
// these not finite).
template <class T> PairParams<T> make_pair_params(const Potential &potential, const Cell &cell);

extern template PairParams<float> make_pair_params(const Potential &, const Cell &);
extern template PairParams<double> make_pair_params(const Potential &, const Cell &);

} // namespace ksum::mc::detail
