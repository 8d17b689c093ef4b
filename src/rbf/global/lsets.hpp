#pragma once
// The L-sets of seed 000 §3.1 (steps 3–5) and the operator they define (step 6).
// A random order σ visits the points; the m-th set L_l, l = σ(m), holds the q points nearest x_l
// among σ(m), …, σ(N) (or all of them when fewer are left). σ sorts the points by
// (lset_key(seed, j), j): a counter-based draw per point, so that ranks holding parts of the points
// agree on it without storing it (distributed_lsets.hpp). Its local Lagrange function
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
  std::int64_t formed = 0;                  // sets formed
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
};

// Point j's place in σ is that of (lset_key(seed, j), j) among all points' (splitmix64 of the
// seed's and the index's mix: uniform, independent of N and of how the points are split).
std::uint64_t lset_key(std::uint64_t seed, std::int64_t j);

LSets build_lsets(const Table<double> &x, const LSetConfig &cfg);

// ζ of sets whose members were found elsewhere (the distributed search): set s has members
// ptr[s] … ptr[s + 1] − 1 of a flat list (its own point first, at most cfg.q of them), member k's
// coordinates at coords[k d … k d + d − 1]. Writes ζ aligned with the members (0 for a singular
// set) and returns the number of singular sets. The same arithmetic as build_lsets.
std::int64_t form_lsets(const LSetConfig &cfg, std::int64_t d, const std::vector<std::int64_t> &ptr,
                        const double *coords, double *zeta);

} // namespace ksum::rbf
