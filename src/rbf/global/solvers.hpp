#pragma once
// The solvers behind GlobalRbfInterpolant (global.cpp): each returns λ and the polynomial's
// coefficients for every value column.
#include "rbf/global/lsets.hpp"
#include "spatial/kdtree.hpp"

#include <ksum/bsm.hpp>
#include <ksum/distributed.hpp>
#include <ksum/global.hpp>
#include <ksum/table.hpp>

#include <functional>
#include <span>
#include <string>
#include <vector>

namespace ksum::rbf {

struct SolveResult {
  Table<double> lambda; // N × c
  Table<double> poly;   // terms × c
  int iterations = 0, matvecs = 0;
  std::vector<double> history;
  bool converged = true;
};

// Where the solvers' vectors live: in one process (comm null), or spread by rows over the ranks
// of comm (each rank its own rows, of any count, zero included): then every sum and maximum over
// the rows goes over all ranks, so that every rank takes the same steps.
struct Rows {
  const Communicator *comm = nullptr;
  double sum(double v) const { return comm ? comm->allreduce_sum(v) : v; }
  void sum(double *v, std::int64_t n) const {
    if (comm)
      comm->allreduce_sum(v, n);
  }
  double max(double v) const { return comm ? comm->allreduce_max(v) : v; }
  void max(double *v, std::int64_t n) const {
    if (comm)
      comm->allreduce_max(v, n);
  }
};

struct IterSettings {
  double tolerance;
  int max_iterations;
  int restart;
  int threads;
  std::function<void(int, double)> progress;
  Rows rows{};
};

// Refuses data with two identical points (the interpolation matrix would be singular), naming the
// first pair by its rows (counted from 0): the smallest row that has a twin and its smallest
// twin. global.cpp's one-process fits call it; so does `ksum interpolate` under mpirun before it
// sends the rows in a new order, so that the rows named are the file's. A distributed fit checks
// the same over the ranks (build_lsets_over_ranks) with the same message.
void check_distinct(const Table<double> &x);
std::string distinct_error_message(std::int64_t i, std::int64_t j);
// For each point i of x, its smallest identical twin among the tree's points, as the row
// row_base + j of the tree's point j, or −1; point i is the tree's point self_base + i (the tree
// orders equal distances by index, so the first twin found is the smallest).
std::vector<std::int64_t> twins_in(const spatial::KdTree &tree, const Table<double> &x,
                                   std::int64_t self_base, std::int64_t row_base, int threads);

// τ(r) of the L-sets (lsets.hpp) for one column of the solver's rows: LSets::apply in one
// process; over the ranks, the distributed fit's exchange (distributed_global.cpp).
using TauOperator = std::function<void(const double *r, double *tau)>;

// Seed 000 §3.1 steps 2 and 6–10 (degree 0: the polynomial is the constant α).
SolveResult solve_fgp(KernelMatVec &A, const TauOperator &tau, const Table<double> &f,
                      const IterSettings &it);

// Restarted GMRES on Q Φ τ(y) = Q f (Q: the projector onto range(Π)^⊥, τ: the L-set operator),
// λ = τ(y); the polynomial is the least-squares fit of f − Φλ.
SolveResult solve_gmres(KernelMatVec &A, const TauOperator &tau, const Table<double> &P,
                        const Table<double> &f, const IterSettings &it);

struct DenseProblem {
  const Table<double> *x, *P, *f;
  Kernel kernel;
  double eps, smoothing;
  int threads;
};
// The saddle-point system (4) assembled and solved by LAPACK (symmetric indefinite, dsysv).
SolveResult solve_dense_cpu(const DenseProblem &p);
// The same by cuSOLVER (LU, getrf/getrs) on the GPU; throws unsupported without CUDA.
SolveResult solve_dense_gpu(const DenseProblem &p);

// The (N + m)² column-major saddle-point matrix of (4) (rows/columns N.. for Π) and its
// right-hand sides [f; 0], one column per value column.
struct SaddleSystem {
  std::vector<double> K, B;
};
SaddleSystem assemble_saddle(const DenseProblem &p);
// λ (the first n rows) and the polynomial (the next m) of each of nc solution columns of (4).
SolveResult split_solution(const double *B, std::int64_t n, std::int64_t m, std::int64_t nc);

// The dense system kept for GlobalRbfInterpolant::move_centres: the assembled saddle-point
// matrix K of (4) (N + terms square) and its explicit inverse, updated in place by the Woodbury
// formula when centres move (update.cpp).
struct HeldInverse {
  std::int64_t n = 0, terms = 0;
  Table<double> K;
  InverseUpdate<double> inverse;
  double residual0 = 0;     // relative residual of the LU solve when the inverse was formed
  std::int64_t updates = 0; // updates applied since
};

// Assembles (4), factors it by LAPACK getrf, solves by getrs (the same λ and polynomial as
// solve_dense_cpu up to rounding) and forms K⁻¹ by getri (2 N³ flops in all, against dsysv's
// N³/3) into `held`.
SolveResult solve_dense_inverse(const DenseProblem &p, HeldInverse &held);

// Centres index[a] of the held system move to row index[a] of `points` (the full moved set,
// N × d) with polynomial row P(index[a], :): K⁻¹ by the rank-2m Woodbury update
// (InverseUpdate, fallback error: a breakdown throws Error and leaves `held` unchanged), then
// K's rows and columns in place.
void move_held(HeldInverse &held, std::span<const std::int64_t> index, const Table<double> &points,
               const Table<double> &P, Kernel kernel, double eps, int threads);

// λ and the polynomial for values f (n × c) from the held inverse: K⁻¹ [f; 0], or, given the
// previous solution `start` ((N + terms) × c, [λ; poly]), start + K⁻¹([f; 0] − K start); then
// refined iteratively on K while a step halves the relative residual and it is above `target`
// (at most 6 steps). residual_rel receives max over columns of ‖f − s‖₂ / ‖f‖₂ at the centres,
// residual_max the largest |f − s|.
SolveResult solve_held(const HeldInverse &held, const Table<double> &f, const Table<double> *start,
                       int threads, double target, double &residual_max, double &residual_rel);

// y += d x: the kernel matrix's diagonal φ(0) + σρ, which the sums (self term j = i left out)
// do not hold.
inline void add_diagonal(double d, const Table<double> &x, Table<double> &y) {
  for (std::int64_t c = 0; c < x.cols(); ++c)
    for (std::int64_t i = 0; i < x.rows(); ++i)
      y(i, c) += d * x(i, c);
}

// x·y over n entries with nt OpenMP threads.
inline double dot(const double *a, const double *b, std::int64_t n, int nt) {
  double s = 0;
#pragma omp parallel for num_threads(nt) reduction(+ : s) schedule(static)
  for (std::int64_t i = 0; i < n; ++i)
    s += a[i] * b[i];
  return s;
}

} // namespace ksum::rbf
