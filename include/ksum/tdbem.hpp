#pragma once
// Time-domain boundary elements for the 3D wave equation (seed 003, Bramas, Coulaud & Sylvand):
// sound-soft scattering by a closed triangulated surface Γ, written as the retarded single-layer
// potential
//
//   u_s(x, t) = ∫_Γ σ(y, t − |x − y| / c) / (4π |x − y|) dS_y,   u_s = −u_inc on Γ,
//
// discretised with σ piecewise constant on the triangles (one unknown per element, collocated at
// its centroid) and, in time, piecewise constant (TimeBasis::constant, the default: a^n is σ on
// ((n−1)Δt, nΔt]) or piecewise linear (TimeBasis::linear: hat functions, a^n = σ(nΔt)).
// Collocation at the centroids x_i and times nΔt gives the marching-on-in-time system of the
// seed's eq. (1):
//
//   Σ_{k=0}^{Kmax} M^k a^{n−k} = l^n,   M^k(i, j) = ∫_{Δ_j} T(k − |x_i − y| / (cΔt)) / (4π|x_i −
//   y|) dS_y
//
// with T the temporal basis: M^k(i, j) ≠ 0 only while the wave from element j passes over x_i
// in the k-th time shell (§2.2), so Kmax ≈ 1 + ℓ_max / (cΔt) (2 + ℓ_max / (cΔt) with the hat, the
// seed's bound) and every (i, j) has one contiguous interval of k (the slice row vectors of §3.2).
// Why constant by default: both are second order (measured on the pulsating sphere, comparing
// the box's a^n with σ((n − ½)Δt)), but the hat's marching has a double root at z = −1 (its M^0
// carries half a hat: the trapezoidal rule of a first-kind Volterra equation) and grows a
// sawtooth after a few transits of the surface; the box's stays bounded (400 steps measured). Each
// step solves eq. (2)–(5): s^n = Σ_{k≥1} M^k a^{n−k} (the summation stage, in slices, Full- or
// Contiguous-Blocking, CPU and GPU workers balanced by §5.2's algorithm, MPI ranks owning slice
// intervals), then M^0 a^n = l^n − s^n with a sparse LU factored once (Eigen's SparseLU).
//
// Why elements rather than vertices: P0 collocation makes M^0 a square, almost diagonal matrix
// (the self term dominates) and keeps every unknown's support inside one triangle, so the exact
// integrals below need no basis-function overlap.
#include <ksum/direct.hpp>
#include <ksum/mesh.hpp>
#include <ksum/table.hpp>

#include <array>
#include <concepts>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ksum {

// A closed triangulated surface: nodes (n × 3) and triangles (3 node rows each).
struct TriangleSurface {
  Table<double> nodes;
  std::vector<std::int64_t> triangles; // 3 per element
  std::vector<std::int64_t> tags;      // element tags for messages (Gmsh's, or 1-based rows)
  std::vector<std::int64_t> node_tags; // node tags for messages
  std::int64_t elements() const { return static_cast<std::int64_t>(tags.size()); }
};

// The triangles of a surface mesh (read with io::read_mesh(path, true)), checked: closed (every
// edge shared by exactly two triangles), no degenerate triangle, no two nodes at one place, no
// NaN. Errors name the element or node tags.
TriangleSurface surface_from_mesh(const Mesh &mesh);
// Checks a surface (as surface_from_mesh does); the message names `what` (a file name).
void check_surface(const TriangleSurface &surface, const std::string &what);
// A sphere of radius r: the icosahedron refined `refinements` times (20·4^refinements triangles)
// with its nodes projected onto the sphere.
TriangleSurface sphere_surface(double radius, int refinements);
// The mean edge length (the default cΔt of the solver).
double mean_edge_length(const TriangleSurface &surface);

enum class TdbemKernel { scalar, full, contiguous };
enum class TimeBasis { constant, linear };
enum class TdbemOrdering { natural, morton, hilbert };
TdbemKernel parse_tdbem_kernel(std::string_view name);
TdbemOrdering parse_tdbem_ordering(std::string_view name);
std::string_view to_string(TdbemKernel k);
std::string_view to_string(TdbemOrdering o);

struct TdbemOptions {
  double c = 1.0;  // wave speed
  double dt = 0.0; // time step; 0: the mean edge length / c
  TimeBasis time_basis = TimeBasis::constant;
  TdbemKernel kernel = TdbemKernel::contiguous;
  TdbemOrdering ordering = TdbemOrdering::morton; // numbering of the unknowns (table 4)
  int block_rows = 0; // b_r; 0: 128 (contiguous) or chosen from measured rates (full)
  int block_cols = 0; // b_c; 0: d_max (contiguous) or chosen from measured rates (full)
  int ng = 4;         // summation vectors computed at once (§3.3), 1 … 16
  Backend backend = Backend::automatic; // automatic: CPU worker + one worker per GPU
  std::vector<int> devices;             // GPUs (empty: all)
  int threads = 0;                      // CPU worker threads (0: all cores not driving a GPU)
  bool balance = true;                  // §5.2 dynamic balancing between the workers
  int balance_iterations = 40;          // then the best assignment is kept
  bool mpi = true; // under mpirun with several ranks: each rank owns a slice interval (§5.1)
  // Called during the assembly (the long part of the set-up) with (columns done, n), from one
  // thread.
  std::function<void(std::int64_t, std::int64_t)> assembly_progress;
};

// The incident field u_inc(x, t) (the right-hand side is l^n_i = −u_inc(x_i, nΔt)).
using IncidentField = std::function<double(const std::array<double, 3> &x, double t)>;
// A plane-wave pulse travelling along `direction` (unit vector taken): u_inc(x, t) =
// amplitude · exp(−((t − t0 − d·x / c) / width)²).
IncidentField plane_wave_pulse(std::array<double, 3> direction, double c, double t0, double width,
                               double amplitude = 1.0);

struct TdbemWorkerStats {
  std::string name;        // "cpu (14 threads)", "gpu 0"
  std::int64_t slices = 0; // its slice interval after the last balancing
  double seconds = 0;      // summation time, all steps
  double gflops = 0;       // stored values × 2·ng per call / its time
};

struct TdbemStats {
  std::int64_t unknowns = 0;
  std::int32_t kmax = 0, dmax = 0;
  double dav = 0;          // mean row-vector length
  std::int64_t nnz = 0;    // non-zeros of M^1 … M^Kmax
  std::int64_t nnz_m0 = 0; // of M^0
  std::int64_t blocks = 0; // blocks of this rank's slice interval
  double fill = 1;         // non-zeros / stored values
  int block_rows = 0, block_cols = 0, ng = 0;
  double ordering_quality = 0; // §6.4.1's score: mean squared overlap of consecutive rows
  double assembly_seconds = 0, factor_seconds = 0, blocking_seconds = 0;
  double summation_seconds = 0, solve_seconds = 0, exchange_seconds = 0;
  std::int64_t steps = 0;
  int ranks = 1, rank = 0;
  std::int64_t slice_begin = 0, slice_end = 0; // this rank's slices
  std::vector<TdbemWorkerStats> workers;
  // Per summation call: every worker's share of the summed time, in %, (figure 15) and its slices.
  std::vector<std::vector<double>> balance_percent;
  std::vector<std::vector<std::int64_t>> balance_slices;
};

template <std::floating_point T> class TdbemSolver {
public:
  // Assembles M^0 … M^Kmax on `surface` (every rank the same: the geometry is replicated, the
  // slices are cut per rank), factors M^0, cuts this rank's slices into blocks and starts the
  // workers. Errors: dt ≤ 0 or c ≤ 0; a time step so large that M^0 couples every element
  // (the summation would be empty: cΔt ≥ the surface's diameter).
  TdbemSolver(const TriangleSurface &surface, const TdbemOptions &options);
  ~TdbemSolver();
  TdbemSolver(TdbemSolver &&) noexcept;
  TdbemSolver &operator=(TdbemSolver &&) noexcept;

  void set_incident(IncidentField field);
  // Points where the scattered field u_s(x, nΔt) is recorded at every step (m × 3).
  void set_probes(const Table<double> &points);

  // Advances `steps` time steps (n_g at a time inside). progress(step, steps) after each.
  void run(std::int64_t steps,
           const std::function<void(std::int64_t, std::int64_t)> &progress = nullptr);

  std::int64_t step() const; // time steps done
  double dt() const;
  std::int64_t unknowns() const;
  // a^n, element by element in the surface's order (the density σ at the centroids).
  std::vector<T> density() const;
  // The scattered field at the probes, one row per step done, one column per probe.
  const std::vector<std::vector<double>> &probe_history() const;
  // Centroids of the elements (surface order), n × 3.
  const Table<double> &centroids() const;
  const TdbemStats &stats() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace ksum
