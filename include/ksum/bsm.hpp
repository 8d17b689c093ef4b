#pragma once
// Dense inverses through the Sherman–Morrison–Woodbury formula (seed 004 Paper III, He, Holm &
// Neytcheva): a matrix written as A = A0 + X Yᵀ, A0 easy to invert and X, Y of size n × m, has
//
//   A⁻¹ = A0⁻¹ − A0⁻¹ U R⁻¹ Vᵀ A0⁻¹                                    (Paper III eq. (3), (10))
//
// with U, V (n × m) and R block diagonal, built column by column (SVSM, Algorithm 1), block by
// block of width s with level-3 BLAS only (BSM, Algorithm 2), or accumulating H = U R⁻¹ Vᵀ
// (n × n) instead of U and V (RMBSM, Algorithm 3: less memory when m is close to n). Any matrix
// has such a form: A0 = diag(A), X = A − A0, Y = I (the standard case, m = n). There X and Y are
// never formed: Yᵀ Z is a selection of rows, A0⁻¹ a row scaling, and Y = I makes V unit upper
// triangular (and H's columns past the current block zero), so the counted flops are 8/3 n³ for
// SVSM and BSM and 2 n³ + O(n² s) for RMBSM, against 2 n³ for LAPACK getrf + getri (BsmStats::flops
// counts what is done).
//
// Breakdown: the recursion needs every block R_k = I_s + Y_kᵀ A_{k−1}⁻¹ X_k nonsingular (Paper III
// §2.2 and Remark 1), a stronger condition than A being nonsingular. Each R_k is LU-factored with
// partial pivoting; its pivot measure is
//
//   ρ_k = min_i |(U_Rk)_ii| / (1 + ‖Y_k‖_F ‖A0⁻¹ U_k‖_F)
//
// (SVSM, s = 1, forms the same number as |1 + v_kᵀA0⁻¹x_k| / (1 + ‖v_k‖ ‖A0⁻¹x_k‖)), i.e. how
// much cancellation produced the pivot. In the standard case (Y = I) the k-th SVSM pivot is
// det(A(1:k,1:k)) / (det(A(1:k−1,1:k−1)) a_kk): a singular leading block breaks the recursion even
// when A is nonsingular, as in Gaussian elimination without pivoting. ρ_k ≤ pivot_threshold is a
// breakdown at step k; then the options' fallback either throws (the message names k, its columns
// and ρ_k) or finishes with LU.
//
// The update use case (InverseUpdate): A⁻¹ known, A ← A + X Yᵀ costs O(n²m) through the
// Woodbury formula with a partial-pivoted LU of the m × m capacitance matrix I + Yᵀ A⁻¹ X, which
// needs only that matrix nonsingular (the paper's condition for formula (2)).
//
// Storage is column-major (Table<T>, or a pointer with a leading dimension). Backend::cuda (CUDA
// builds) runs inverse() and inverse_update() on the current GPU through cuBLAS/cuSOLVER with the
// matrices resident on the device: A (or A0⁻¹, X, Y) uploaded once, the inverse downloaded once;
// the same variants (one templated code for both backends), breakdown steps, errors and fallback
// (lu: cuSOLVER getrf + getrs with I); an operator A0⁻¹ runs on the host on columns copied off
// and back. InverseUpdate runs on the CPU
// only (Error unsupported for cuda). automatic runs on the CPU.
#include <ksum/direct.hpp>
#include <ksum/table.hpp>

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

namespace ksum {

// svsm: Algorithm 1 (level-1/2 BLAS). bsm: Algorithm 2 with block size s (level-3 BLAS). rmbsm:
// Algorithm 3 (reduced memory). lu: LAPACK getrf + getri of A; in the general case, the Woodbury
// formula with getrf of the capacitance matrix (the reference, and the fallback).
enum class BsmMethod { svsm, bsm, rmbsm, lu };
BsmMethod parse_bsm_method(std::string_view name); // "svsm", "bsm", "rmbsm" or "lu"
std::string_view to_string(BsmMethod m);

// What to do on a breakdown (a pivot measure ρ_k ≤ pivot_threshold): throw Error
// (invalid_argument, naming the step), or compute the inverse by the method lu instead.
enum class BsmFallback { error, lu };
BsmFallback parse_bsm_fallback(std::string_view name); // "error" or "lu"
std::string_view to_string(BsmFallback f);

// The splitting of the standard case A = A0 + (A − A0) I: A0 = diag(A) (refuses a zero diagonal
// entry) or A0 = I.
enum class BsmA0 { diagonal, identity };
BsmA0 parse_bsm_a0(std::string_view name); // "diagonal" or "identity"
std::string_view to_string(BsmA0 a);

struct BsmOptions {
  BsmMethod method = BsmMethod::bsm;
  // Block size s of bsm and rmbsm (1 … m; a last short block takes m mod s columns). 0: automatic.
  // Standard case (inverse(A), m = n): min(n, n / 8 clamped to [128, 256]), from bsm_bench on
  // this project's CPU (times within ~5–10 % of the best for s = 96 … 384 at n = 1024 … 4096).
  // General case (inverse_update): m when m ≤ 256, else m / 20 clamped to [64, 256] (Paper III §4.1
  // finds s = m best for m ≤ n/2 and 0.02 m … 0.2 m above).
  std::int64_t block = 0;
  Backend backend = Backend::automatic; // automatic: the CPU; cuda: the GPU (see the top)
  int threads = 0;                      // BLAS threads; 0: the BLAS library's default
  // Breakdown threshold on the pivot measure ρ_k (see the top of this file); 0: automatic,
  // 100 · u (u the unit roundoff of T: 1.1e-14 in double, 6.0e-6 in float): a pivot that small
  // has lost all but about two digits to cancellation. Negative: never break down (only an
  // exactly singular R_k stops the recursion).
  double pivot_threshold = 0;
  BsmFallback fallback = BsmFallback::lu;
  BsmA0 a0 = BsmA0::diagonal; // the standard case's splitting (inverse(A) only)
};

struct BsmStats {
  BsmMethod method = BsmMethod::bsm; // the method that produced the result (lu after a fallback)
  BsmMethod requested = BsmMethod::bsm;
  std::int64_t block = 0;          // the block size s used (1 for svsm, 0 for lu)
  bool fallback = false;           // a breakdown happened and the lu fallback produced the result
  std::int64_t fallback_step = -1; // the 1-based step k that broke down (-1: none)
  // The smallest pivot measure ρ_k seen (before any fallback); for the method lu the reciprocal
  // 1-norm condition estimate of the factored matrix (A, or the capacitance matrix); for
  // InverseUpdate::update the smaller of the capacitance matrix's pivot measure and estimate.
  double min_pivot = 0;
  double seconds = 0;
  double flops = 0; // floating-point operations counted from the algorithm (not measured)
};

// A0⁻¹ (transpose = false) or A0⁻ᵀ (transpose = true) applied to `cols` columns: out = op(A0⁻¹) in,
// both n × cols, column-major with leading dimensions ld_in and ld_out (≥ n).
template <std::floating_point T>
using ApplyInverse = std::function<void(bool transpose, const T *in, std::int64_t ld_in, T *out,
                                        std::int64_t ld_out, std::int64_t cols)>;

// The standard case: A (n × n, leading dimension lda ≥ n) split as A0 + X Yᵀ with A0 = diag(A) or
// I (options.a0), X = A − A0, Y = I. Errors: n ≤ 0 or lda < n (invalid_argument), NaN/Inf
// (non_finite, naming row, column and value), a zero diagonal with a0 = diagonal
// (invalid_argument), a singular A (invalid_argument), a breakdown with fallback = error.
template <std::floating_point T>
Table<T> inverse(const T *A, std::int64_t n, std::int64_t lda, const BsmOptions &options = {},
                 BsmStats *stats = nullptr);
template <std::floating_point T>
Table<T> inverse(const Table<T> &A, const BsmOptions &options = {}, BsmStats *stats = nullptr);

// The general case (A0 + X Yᵀ)⁻¹ from a dense A0⁻¹ (n × n) and X, Y (n × m, m ≥ 1). The lu method
// (and fallback) is the Woodbury formula with a pivoted LU of I + Yᵀ A0⁻¹ X.
template <std::floating_point T>
Table<T> inverse_update(const Table<T> &a0_inverse, const Table<T> &X, const Table<T> &Y,
                        const BsmOptions &options = {}, BsmStats *stats = nullptr);
// The same with A0⁻¹ given as an operator on n-vectors (applied to the n columns of I once for
// the result's first term).
template <std::floating_point T>
Table<T> inverse_update(const ApplyInverse<T> &a0_inverse, std::int64_t n, const Table<T> &X,
                        const Table<T> &Y, const BsmOptions &options = {},
                        BsmStats *stats = nullptr);

// A⁻¹ kept up to date under low-rank changes: set_matrix (LU: getrf + getri; on the GPU getrf +
// getrs with I) or set_inverse, then
// update(X, Y) replaces A by A + X Yᵀ and A⁻¹ by the Woodbury formula in O(n²m) (m = X.cols()).
// A capacitance matrix C whose pivot measure (min |LU pivot of C| / (1 + ‖Y‖_F ‖A⁻¹X‖_F)) or
// reciprocal condition estimate is ≤ pivot_threshold is a breakdown (stats().min_pivot: the
// smaller of the two):
// with fallback = error, update throws and leaves the state unchanged; with fallback = lu, A + XYᵀ
// is refactored (A itself is kept when set_matrix gave it, else recovered by inverting A⁻¹).
// options.method, block and a0 are not used. options.backend = cuda keeps A⁻¹ (and A) in GPU
// memory (cuBLAS, cuSOLVER): an update moves only X and Y to the device and the m × m capacitance
// matrix back (the breakdown test runs on the host, as on the CPU), solve moves b and x, and
// inverse() copies the n × n inverse to the host only when it changed since the last call. The
// reference inverse() returns is valid until the next set_matrix, set_inverse or update (call it
// again after those); solve and inverse may be called from several threads at once.
template <std::floating_point T> class InverseUpdate {
public:
  explicit InverseUpdate(BsmOptions options = {});
  ~InverseUpdate();
  InverseUpdate(InverseUpdate &&) noexcept;
  InverseUpdate &operator=(InverseUpdate &&) noexcept;

  void set_matrix(const T *A, std::int64_t n, std::int64_t lda);
  void set_matrix(const Table<T> &A);
  void set_inverse(const Table<T> &A_inverse);
  void update(const Table<T> &X, const Table<T> &Y);

  Table<T> solve(const Table<T> &b) const; // A⁻¹ b, b with n rows and any number of columns
  const Table<T> &inverse() const;
  std::int64_t size() const;
  const BsmOptions &options() const;
  const BsmStats &stats() const; // of the last set_matrix / update

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template Table<float> inverse(const float *, std::int64_t, std::int64_t, const BsmOptions &,
                                     BsmStats *);
extern template Table<double> inverse(const double *, std::int64_t, std::int64_t,
                                      const BsmOptions &, BsmStats *);
extern template Table<float> inverse(const Table<float> &, const BsmOptions &, BsmStats *);
extern template Table<double> inverse(const Table<double> &, const BsmOptions &, BsmStats *);
extern template Table<float> inverse_update(const Table<float> &, const Table<float> &,
                                            const Table<float> &, const BsmOptions &, BsmStats *);
extern template Table<double> inverse_update(const Table<double> &, const Table<double> &,
                                             const Table<double> &, const BsmOptions &, BsmStats *);
extern template Table<float> inverse_update(const ApplyInverse<float> &, std::int64_t,
                                            const Table<float> &, const Table<float> &,
                                            const BsmOptions &, BsmStats *);
extern template Table<double> inverse_update(const ApplyInverse<double> &, std::int64_t,
                                             const Table<double> &, const Table<double> &,
                                             const BsmOptions &, BsmStats *);
extern template class InverseUpdate<float>;
extern template class InverseUpdate<double>;

} // namespace ksum
