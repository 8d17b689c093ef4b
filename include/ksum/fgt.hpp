#pragma once
// The Gauss transform G(y_i) = Σ_j q_j exp(−|y_i − x_j|² / h²), exactly (direct) or fast to an
// absolute error |Ĝ(y_i) − G(y_i)| ≤ tolerance · Σ_j |q_j| for every target. Each source reaches
// a target by one route whose error per unit |q_j| is held to tolerance / 2: the cutoff and the
// IFGT by proven bounds, the FGT's series by the largest one-source error of the truncated series
// sampled over box offsets (fgt_params.hpp: Cramér's proven bound sat 10^2 … 10^11 above the
// measured errors and cost most of the FGT's time; issue 26).
//
//   fgt:  the fast Gauss transform of Greengard & Strain (seed 002 §2.2): uniform boxes of side
//         2ρh, Hermite expansions about source-box centres, Taylor expansions about target-box
//         centres and the Hermite→Taylor translation, chosen per pair of boxes by work estimates.
//         Tensor-product series of p^d terms: for low dimensions (d ≤ 4 or so).
//   ifgt: the improved FGT of Yang, Duraiswami et al.: farthest-point clusters and one graded
//         Taylor series per cluster (C(p−1+d, d) terms), for higher dimensions.
//   automatic: the cheapest of direct, fgt and ifgt by a cost model of the work (FIGTree's idea).
//
// Bandwidth convention: h as written above, so K = exp(−r²/h²). Seed 002 writes the kernel as
// exp(−r²/(2σ²)): h = √2 σ. It is the catalogue's gaussian kernel exp(−(ε r)²) with ε = 1/h.
#include <ksum/direct.hpp>
#include <ksum/table.hpp>

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

namespace ksum {

enum class GaussMethod { automatic, direct, fgt, ifgt };
GaussMethod parse_gauss_method(std::string_view name); // "auto", "direct", "fgt" or "ifgt"
std::string_view to_string(GaussMethod m);

struct GaussOptions {
  double bandwidth = 1.0; // h > 0
  // Absolute error per target relative to Σ|q_j|; 1e-12 … 0.5 in double, 1e-6 … 0.5 in float
  // (below that the precision itself is the error: set_points() refuses with a clear message).
  double tolerance = 1e-6;
  GaussMethod method = GaussMethod::automatic;
  Backend backend = Backend::automatic; // automatic: the GPU when one is present
  int threads = 0;                      // CPU threads; 0: OpenMP's default
  int device = 0;                       // the GPU to use
  int order = 0;                        // series terms p per dimension (fgt) or total degree
                                        // (ifgt); 0: the smallest that meets the tolerance
  // method fgt: run the direct sum instead where the cost model predicts it cheaper (stats().method
  // then says direct). The decision comes from the occupied boxes right after the points are
  // sorted into them, before the pairs are listed (most of the set-up), where that estimate is
  // over twice the direct sum's; else from the listed pairs. (method automatic always does this.)
  bool hand_over = false;
  // Seconds per unit of the cost model for the direct sum and for the FGT, timed on the running
  // device (DirectSum's method automatic measures them for the gaussian kernel). Both > 0: the
  // hand-over and the method choice compare these times and stats' predictions are in seconds (the
  // IFGT, whose rate is not measured, is then not a candidate). 0: the fixed model (CPU flop
  // units, the GPU counted 50 times faster).
  double seconds_per_direct_unit = 0, seconds_per_fgt_unit = 0;
  // fgt on the CPU: target boxes per task of the evaluation loop; 0: chosen by the task-size model
  // (include/ksum/tasksize.hpp, dynamic_chunk) from the loop's time in the previous execute (1 in
  // the first). The results do not depend on it.
  std::int64_t box_chunk = 0;
  // fgt on the CPU: source boxes per task of the loop that forms the Hermite expansions; 0: the
  // task-size model from that loop's time in the previous execute (4 in the first). The results do
  // not depend on it.
  std::int64_t hermite_chunk = 0;
  // Called now and then with the fraction done, from the thread that called execute().
  std::function<void(double)> progress{};
};

// What set_points() chose and what execute() did.
struct GaussStats {
  GaussMethod method = GaussMethod::direct; // resolved from automatic
  Backend backend = Backend::cpu;           // resolved from automatic
  int order = 0;                            // p
  std::int64_t terms = 0;                   // coefficients per expansion
  double radius = 0;      // fgt: box half-side / h (ρ); ifgt: largest cluster radius / h
  double cutoff = 0;      // interactions beyond cutoff · h are dropped (e^{−cutoff²} ≤ tol)
  double error_bound = 0; // the bound on |Ĝ − G| / Σ|q| of the series chosen (fgt: sampled)
  std::int64_t boxes = 0; // fgt: occupied boxes (sources and targets); ifgt: clusters
  // fgt: interacting pairs of boxes by kind (seed 002 §2.2's four interactions)
  std::int64_t pairs_direct = 0, pairs_hermite = 0, pairs_taylor = 0, pairs_translate = 0;
  // The cost model's predictions (CPU flop units; divided by 50 where the GPU runs the method:
  // the direct sum and the FGT, not the IFGT; seconds where the options carry measured rates).
  double predicted_direct = 0, predicted_fgt = 0, predicted_ifgt = 0;
  double seconds_setup = 0, seconds_execute = 0;
  std::int64_t box_chunk = 0; // fgt on the CPU: target boxes per task in the last execute
  // fgt on the CPU: source boxes per task of the Hermite expansions in the last execute (0: no
  // source box needed one).
  std::int64_t hermite_chunk = 0;
  double seconds_hermite = 0; // fgt on the CPU: that loop's time in the last execute
};

template <std::floating_point T> class GaussTransform {
public:
  explicit GaussTransform(GaussOptions options);
  ~GaussTransform();
  GaussTransform(GaussTransform &&) noexcept;
  GaussTransform &operator=(GaussTransform &&) noexcept;

  // Targets are the sources; every pair counts, i = j included (exp(0) = 1).
  void set_points(const Table<T> &sources);
  void set_points(const Table<T> &sources, const Table<T> &targets);

  // weights: one row per source, one column per right-hand side; returns one row per target and
  // one column per right-hand side.
  Table<T> execute(const Table<T> &weights);

  std::int64_t dimension() const;
  std::int64_t num_sources() const;
  std::int64_t num_targets() const;
  const GaussOptions &options() const;
  const GaussStats &stats() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class GaussTransform<float>;
extern template class GaussTransform<double>;

} // namespace ksum
