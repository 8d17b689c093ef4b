#pragma once
// The L-sets of seed 000 §3.1 (steps 3–5) and the operator they define (step 6).
// A random order σ visits the points; the m-th set L_l, l = σ(m), holds the q points nearest x_l
// among σ(m), …, σ(N) (or all of them when fewer are left). Its local Lagrange function
//   ẑ_l(x) = Σ_{j∈L_l} ζ_lj φ(ε|x − x_j|) + p_l(x),  ẑ_l(x_j) = δ_lj (j ∈ L_l),  Σ_j ζ_lj π(x_j) =
//   0
// for the polynomials π of the interpolant's degree (seed 000: constants; here any degree). The
// operator τ = Σ_l ζ_l (ζ_lᵀ r) / ζ_ll maps residuals to coefficients that satisfy Πᵀτ = 0; it
// is FGP's preconditioner and the right preconditioner of GMRES (krylov.cpp). Sets continue while
// more points remain than polynomial terms (seed 000: m ≤ N − 2 for a constant).
#include "rbf/global/polynomial.hpp"

#include <ksum/kernels.hpp>
#include <ksum/table.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace ksum::rbf {

// The four long arrays are filled by parallel loops, which also touch them first (they are not
// zeroed beforehand).
struct LSets {
  std::int64_t n = 0;                       // points
  std::int64_t skipped = 0;                 // sets whose local system was singular (ζ left 0)
  std::int64_t formed = 0;                  // sets formed (all but those LSetConfig left out)
  std::vector<std::int64_t> ptr;            // set l's members are idx[ptr[l] .. ptr[l + 1])
  detail::uninit_vector<std::uint32_t> idx; // members, the set's own point first
  detail::uninit_vector<double> zeta;       // ζ_lj aligned with idx
  std::vector<std::int64_t> tptr;           // point j appears in sets tset[tptr[j] .. tptr[j + 1])
  detail::uninit_vector<std::uint32_t> tset;
  detail::uninit_vector<double> tzeta; // … with coefficient tzeta

  std::int64_t count() const { return static_cast<std::int64_t>(ptr.size()) - 1; }
  // τ = Σ_l ζ_l (ζ_lᵀ r) / ζ_ll for one column; mu: scratch of count() entries.
  void apply(const double *r, double *tau, std::vector<double> &mu, int threads) const;
};

struct LSetConfig {
  Kernel kernel;
  double eps;
  int q;           // set size
  int poly_degree; // −1: no side conditions
  std::uint64_t seed;
  int threads;
  // σρ added to the diagonal of every local system, as the smoothed matrix Φ + σρI has it: the
  // local Lagrange functions then approximate the inverse of the matrix the Krylov solver sees.
  double diag = 0;
  // Only the sets led by points [own_begin, own_end) are formed (the others are left empty), as
  // a rank of a distributed fit does for its own rows; own_end < 0: every set. The formed sets
  // equal those of the whole build, bit for bit.
  std::int64_t own_begin = 0, own_end = -1;
};

LSets build_lsets(const Table<double> &x, const LSetConfig &cfg);

} // namespace ksum::rbf
