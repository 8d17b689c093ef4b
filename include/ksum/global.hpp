#pragma once
// Global RBF interpolation (seed 000 §2.2, eq. (2)–(4)):
//   s(x) = Σ_i λ_i φ(ε|x − x_i|) + p(x),   p of total degree ≤ k,   Πᵀλ = 0,
// solved densely (LAPACK on the CPU, cuSOLVER on the GPU), by the FGP Krylov method of seed 000
// §3.1 (the multiquadric and other kernels with a constant), or by GMRES preconditioned with the
// same L-set operator (any kernel and degree). Every iterative solver reaches the kernel matrix
// only through a KernelMatVec: the direct sum on the CPU or GPU, or one supplied by the caller.
#include <ksum/direct.hpp>
#include <ksum/distributed.hpp>
#include <ksum/kernels.hpp>
#include <ksum/table.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ksum {

enum class GlobalSolver { automatic, dense, fgp, krylov };
GlobalSolver parse_global_solver(std::string_view name); // "auto", "dense", "fgp", "krylov"
std::string_view to_string(GlobalSolver s);

// How GlobalRbfInterpolant::move_centres changes a dense CPU fit (other solvers always refit):
// automatic, the Woodbury update of the held inverse where it is predicted faster than
// refitting, else a refit; update, always the update (the first call forms the inverse); refit,
// always a refit of the moved set.
enum class CentreUpdate { automatic, update, refit };
CentreUpdate parse_centre_update(std::string_view name); // "auto", "update", "refit"
std::string_view to_string(CentreUpdate u);
// CentreUpdate::automatic's prediction that moving `moved` of `centres` centres by the update
// (rank 2 · moved) is faster than refitting: 2 · moved ≤ centres / 16 (see move_centres).
bool centre_update_pays(std::int64_t centres, std::int64_t moved);

// y = (Φ + ρ I) x for one fixed set of centres, Φ_ij = φ(ε |x_i − x_j|): the only access the
// iterative solvers have to the kernel matrix. Columns of x are independent right-hand sides.
class KernelMatVec {
public:
  virtual ~KernelMatVec() = default;
  virtual std::int64_t size() const = 0;                            // N
  virtual void apply(const Table<double> &x, Table<double> &y) = 0; // x, y: N × c
  virtual std::string describe() const = 0;                         // e.g. "direct (GPU)"
};

// The product by DirectSum<double> plus the diagonal φ(0) + ρ: exact with method direct; with
// method fmm (3D) the fast multipole product to the relative tolerance fmm_tolerance.
std::unique_ptr<KernelMatVec> make_direct_matvec(const Table<double> &centres, Kernel kernel,
                                                 double eps, double smoothing = 0.0,
                                                 Backend backend = Backend::automatic,
                                                 int threads = 0, Method method = Method::direct,
                                                 double fmm_tolerance = 1e-8);

struct GlobalRbfOptions {
  Kernel kernel = Kernel::multiquadric;
  double eps = 1.0; // shape parameter: φ(ε r); multiquadric sqrt(1 + (ε r)²), c = 1/ε in seed 000
  // Total degree of the polynomial part: −1 none; the default (kernel_default_degree) is the
  // kernel's minimum degree (seed 000 table 1), or none for strictly positive definite kernels.
  int degree = kernel_default_degree;
  // ρ ≥ 0: smoothing instead of interpolation. It enters as Φ + σρI with σ the sign under which
  // the kernel is conditionally positive definite, (−1)^(min degree + 1): −1 for multiquadric,
  // linear and quintic, +1 otherwise; so f − s(x_i) = σρλ_i and the system stays definite.
  double smoothing = 0.0;
  GlobalSolver solver = GlobalSolver::automatic;
  // FGP stops when ‖r‖∞ ≤ tolerance · ‖f‖∞ (seed 000 eq. (7) relative to the data), GMRES when
  // ‖r‖₂ ≤ tolerance · ‖f‖₂, per value column; r = f − s at the centres.
  double tolerance = 1e-8;
  int max_iterations = 300;
  int lset_size = 40; // q of seed 000 step 1 (30–50 typical)
  // Krylov basis size before GMRES restarts (memory: restart · N · columns doubles).
  int gmres_restart = 100;
  std::uint64_t seed = 1; // the random permutation of FGP step 3
  // automatic: dense up to dense_max_n centres, else FGP where it applies (degree 0 and a
  // kernel for which a constant suffices), else preconditioned GMRES.
  std::int64_t dense_max_n = 6000;
  Backend backend = Backend::automatic; // where the matvecs and the dense solve run
  int threads = 0;                      // CPU threads; 0: OpenMP's default
  // Called with the iteration count and the current relative residual after every iteration.
  std::function<void(int, double)> progress{};
  // How the iterative solvers multiply by Φ (and evaluate() sums): direct (exact), fmm (3D: the
  // fast multipole method) or automatic (the FMM where its cost model predicts it faster).
  Method matvec_method = Method::direct;
  // The FMM's relative tolerance; 0 couples it to the solver's: tolerance / 10 (at least 1e-11),
  // so the product's error stays below what the stopping test measures.
  double matvec_tolerance = 0;
  // Replaces the built-in matvec entirely: called once with the centres.
  std::function<std::unique_ptr<KernelMatVec>(const Table<double> &centres)> matvec{};
  // How move_centres serves a dense CPU fit (see CentreUpdate and move_centres).
  CentreUpdate centre_update = CentreUpdate::automatic;

  static constexpr int kernel_default_degree = -2;
};

// The degree used for kernel k when the options say kernel_default_degree.
int default_degree(Kernel k);
// σ above: the sign that makes σφ conditionally positive definite of the kernel's order.
int definiteness_sign(Kernel k);

struct GlobalRbfStats {
  GlobalSolver solver = GlobalSolver::dense; // the solver used (resolved from automatic)
  Backend backend = Backend::cpu;            // where the matvecs / dense solve ran
  std::string matvec;                        // describe() of the matvec
  int degree = -1;
  std::int64_t poly_terms = 0;
  int iterations = 0;      // Krylov iterations; 0 for dense
  int matvecs = 0;         // products with Φ, including restarts and the final residual
  double residual_max = 0; // max over columns of ‖f − s‖∞ at the centres, by a final matvec
  double residual_rel = 0; // max over columns of ‖f − s‖₂ / ‖f‖₂
  std::vector<double> history; // per iteration: the largest relative residual over the columns
  std::int64_t lsets = 0, lsets_skipped = 0; // L-sets built; those whose local system was singular
  int ranks = 1;                             // MPI ranks of the fit (set_data with a communicator)
  // Over ranks: the most halo rows one rank's L-sets touch (rows of other ranks whose residuals
  // each application of τ receives, and whose parts of τ it returns); 0 on one rank.
  std::int64_t lset_halo_rows = 0;
  // Over ranks: the most candidate points (with their coordinates) one rank received from the
  // others while searching its L-sets (no rank gathers all points); 0 on one rank.
  std::int64_t lset_search_received = 0;
  double seconds_setup = 0;                  // L-sets and their local solves, or the dense assembly
  double seconds_solve = 0;                  // the iteration or the factorisation
  // move_centres since set_data: calls that moved centres, those served by the Woodbury update
  // of the held inverse, and updates that broke down (a nearly singular capacitance matrix) or
  // missed the residual test and were refitted instead. After an update, seconds_setup is the
  // update of K⁻¹ and seconds_solve the solve; iterations and matvecs are 0.
  std::int64_t moves = 0, updates = 0, update_fallbacks = 0;
  bool inverse_held = false;  // the dense fit holds K and K⁻¹ for updates
  double seconds_move = 0;    // the last move_centres call, all of it
  std::int64_t move_rank = 0; // the rank 2m of the last call's update (0: it refitted)
};

class GlobalRbfInterpolant {
public:
  explicit GlobalRbfInterpolant(GlobalRbfOptions options);
  ~GlobalRbfInterpolant();
  GlobalRbfInterpolant(GlobalRbfInterpolant &&) noexcept;
  GlobalRbfInterpolant &operator=(GlobalRbfInterpolant &&) noexcept;

  // points: N × d centres (distinct), values: N × c. Solves for λ and the polynomial.
  void set_data(const Table<double> &points, const Table<double> &values);
  // The same fit over the ranks of comm (issue 25; docs/distributed.md): each rank passes its
  // own rows of the data (any number, zero included; the same d and c on every rank), and the
  // interpolant is that of all ranks' rows together, in rank order. Collective: every rank calls
  // it, and every error (bad data on one rank, a singular system, no convergence) is thrown on
  // all of them alike (AgreedError). With one rank it is set_data above.
  //   The iterative solvers run with their vectors spread by rows: FGP (degree 0) or GMRES
  // (solver automatic picks them by degree, whatever N; dense is refused); each product by Φ is
  // a DistributedSum on each rank's CPU cores or its GPU: around the ranks (matvec_method direct
  // or automatic) or the distributed FMM (matvec_method fmm, 3D, to matvec_tolerance); each rank
  // forms the L-sets led by its own rows and keeps them over its rows and its halo (the other
  // ranks' rows they touch): τ exchanges only the halo's residuals and parts with their owners.
  // The halo is small where each rank's rows fill a compact region (ksum interpolate sends them in
  // Morton order); rows in no spatial order make it most of the other rows. The L-set search holds
  // every rank's coordinates (N × d doubles) while it runs.
  //   Afterwards coefficients() are this rank's rows of λ, poly_coefficients() and stats() are
  // the whole fit's (the same on every rank), evaluate() is collective (each rank its own
  // evaluation points, summed directly over every rank's centres, whatever the method), and
  // move_centres is refused.
  void set_data(const Table<double> &points, const Table<double> &values, const Communicator &comm);
  // Moves centre index[a] to row a of new_points (m × d) for every a, and gives it row a of
  // *new_values (m × c) when that is given (the other centres keep their values), then solves
  // again: the result is the interpolant set_data would fit to the moved set, except that the
  // polynomial basis keeps the box of set_data's points (poly_coefficients() stay in that basis;
  // λ, the polynomial part as a function and evaluate() are the same; call set_data again to
  // re-centre it after large motion). An empty index changes nothing.
  //
  // A dense fit on the CPU can move by the block Sherman–Morrison–Woodbury update (bsm.hpp): the
  // saddle-point matrix K of (4) changes only in the rows and columns `index`, a symmetric
  // change of rank ≤ 2m, so with K⁻¹ held the new K⁻¹ costs O(N²m) (InverseUpdate) instead of a
  // new factorisation's O(N³); the new solution is the old one plus K⁻¹ times the residual of
  // the old one, refined while a step halves the residual. Holding K⁻¹ costs one getrf + getri
  // (about 3 set_data's) and 2 (N + terms)² doubles. centre_update says when:
  //  - automatic: the update when centre_update_pays(N, m), i.e. 2m ≤ N/16, where
  //    bench/rbf_update_bench measured it 2.5–13 times faster than a refit (N = 500 … 4000, 2
  //    cores; the crossover lies at 2m ≈ N/5.5 for N = 500 … N/10 for N = 4000; docs/bsm.md,
  //    "Using it inside ksum"); the first such call forms K⁻¹ (refitting the moved set that
  //    way: it has paid for itself after 3–5 moves), later ones update; a larger move refits by
  //    dsysv and drops K⁻¹;
  //  - update: always the update (the first call forms K⁻¹); refit: always a refit.
  // An update that breaks down (InverseUpdate: the capacitance matrix I + YᵀK⁻¹X nearly
  // singular) or leaves a relative residual above max(100 r0, 1e-12), r0 that of the LU solve
  // when K⁻¹ was formed, is replaced by a refit of the moved set (stats().update_fallbacks
  // counts them); when that happens on the first update of a fresh K⁻¹, the system is too
  // ill-conditioned for updates and automatic refits from then on (until set_data). FGP, GMRES
  // and the GPU dense solver always refit the moved set.
  //
  // Errors (nothing changes): before set_data; an index out of range or listed twice (naming
  // it); new_points not m × d or new_values not m × c; NaN/Inf (naming the row); a moved centre
  // that would coincide with another centre (naming both); and whatever a refit reports (a
  // singular system, a set no longer unisolvent for the polynomial).
  void move_centres(std::span<const std::int64_t> index, const Table<double> &new_points,
                    const Table<double> *new_values = nullptr);

  // M × d → M × c, summed by the options' matvec_method.
  Table<double> evaluate(const Table<double> &points) const;
  // The same by the given method (e.g. direct, to check an FMM solve exactly).
  Table<double> evaluate(const Table<double> &points, Method method) const;

  const Table<double> &coefficients() const;      // λ: N × c (distributed: this rank's rows)
  const Table<double> &poly_coefficients() const; // terms × c, in the scaled monomial basis
  const GlobalRbfStats &stats() const;
  const GlobalRbfOptions &options() const;
  // A fit over MPI ranks: its communicator (set_data's), for a caller that must agree an error
  // with the ranks' next collective call (evaluate); nullptr for a fit in one process.
  const Communicator *communicator() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The local RBF interpolant of SciPy's RBFInterpolator with `neighbors`: at each evaluation point
// x, the interpolant (kernel, ε, polynomial degree, smoothing as in GlobalRbfOptions) of the k data
// points nearest to x, solved there (one small dense LU per point). Not one global function: it
// jumps where the neighbour set changes. Memory O(n + k²) per thread; time O(m k³).
struct LocalRbfOptions {
  Kernel kernel = Kernel::tps;
  double eps = 1.0;
  int degree = GlobalRbfOptions::kernel_default_degree; // −1 none; default: the kernel's minimum
  double smoothing = 0.0;                               // ρ ≥ 0, entering as in GlobalRbfOptions
  std::int64_t neighbors = 50;                          // k (at most the number of points)
  int threads = 0;                                      // 0: OpenMP's default
};

class LocalRbfInterpolant {
public:
  explicit LocalRbfInterpolant(LocalRbfOptions options);
  ~LocalRbfInterpolant();
  LocalRbfInterpolant(LocalRbfInterpolant &&) noexcept;
  LocalRbfInterpolant &operator=(LocalRbfInterpolant &&) noexcept;

  // points: N × d, values: N × c. Builds the k-d tree. Errors: non-finite input, mismatched rows,
  // fewer neighbours than polynomial terms (as SciPy words it), k < 1.
  void set_data(const Table<double> &points, const Table<double> &values);
  // M × d → M × c. A singular local system is Error(invalid_argument) naming the point.
  Table<double> evaluate(const Table<double> &points) const;
  const LocalRbfOptions &options() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace ksum
