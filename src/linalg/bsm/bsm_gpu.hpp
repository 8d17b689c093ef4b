#pragma once
// Backend::cuda of inverse() and inverse_update() (seed 004 Paper III on cuBLAS/cuSOLVER): the
// same variants (sm_impl.hpp, one code for both), pivot measure, breakdown step and LU fallback as
// the CPU path of bsm.cpp, with the matrices resident on the device (bsm_gpu.cpp). Builds without
// CUDA (bsm_gpu_none.cpp) throw Error(unsupported).
#include "linalg/bsm/sm.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace ksum::bsm {

// The standard case A = A0 + (A − A0) I, A0 = diag(A) or I (options.a0): A (n × n, leading
// dimension lda, already checked finite) is uploaded once and the Y = I recursions of sm_impl.hpp
// run on it (X and Y not formed), the inverse comes back once. `block`: the resolved block size s
// of bsm and rmbsm. Fills *stats (seconds from t0) when stats is not null.
template <std::floating_point T>
Table<T> gpu_inverse(const T *A, std::int64_t n, std::int64_t lda, std::int64_t block,
                     const BsmOptions &options, std::chrono::steady_clock::time_point t0,
                     BsmStats *stats);

// The general case A0 + X Yᵀ, X and Y n × m with leading dimension n. A dense A0⁻¹ is uploaded
// once; an operator A0⁻¹ runs on the host on columns copied from and back to the device.
template <std::floating_point T>
Table<T> gpu_inverse_update(const A0Inverse<T> &a0, const T *X, const T *Y, std::int64_t m,
                            std::int64_t block, const BsmOptions &options,
                            std::chrono::steady_clock::time_point t0, BsmStats *stats);

// InverseUpdate's state with Backend::cuda (update.cpp): A⁻¹, and A when set_matrix gave it, stay
// in GPU memory between calls; an update moves only X, Y (n × m) to the device and the m × m
// capacitance matrix to the host, a solve only b and x, and the n × n inverse comes to the host
// only when asked for (download). The decisions (singularity, breakdown, fallback) are made by
// update.cpp on the host with LAPACK, as on the CPU path. Builds without CUDA: the constructor
// throws Error(unsupported).
template <std::floating_point T> class GpuInverse {
public:
  GpuInverse(); // throws unsupported without CUDA or without a visible GPU
  ~GpuInverse();
  GpuInverse(const GpuInverse &) = delete;
  GpuInverse &operator=(const GpuInverse &) = delete;

  // A⁻¹ of A (host, n × n, leading dimension lda, finite) by getrf + getrs with I on the device;
  // the LU comes to the host once for LAPACK's condition estimate (f.rcond, with ‖A‖₁ = anorm).
  // On a singular A (lu_singular(f)) the state is left as it was; otherwise A is kept.
  LuFactor<T> set_matrix(const T *A, std::int64_t n, std::int64_t lda, double anorm);
  void set_inverse(const T *inverse, std::int64_t n); // host, n × n, leading dimension n
  // W = A⁻¹X and C = I + Yᵀ W (X, Y host n × m): C (m × m) to the host; returns ‖W‖_F.
  double prepare(const T *X, const T *Y, std::int64_t m, std::vector<T> &C);
  // After prepare, with the host's LU of C (m × m, LAPACK's pivots): A⁻¹ ← A⁻¹ − W C⁻¹ Yᵀ A⁻¹,
  // A ← A + X Yᵀ.
  void apply(const T *LU, const lapack_int *ipiv);
  // After prepare: A + X Yᵀ refactored (A recovered by inverting A⁻¹ when it was not kept). The
  // LU's zero pivot and condition estimate; on a singular result the state is left as it was.
  LuFactor<T> refactor();
  void solve(const T *b, std::int64_t nrhs, T *x); // x = A⁻¹ b, host n × nrhs
  void download(T *inverse);                       // host, n × n
  double take_flops();                             // flops counted since the last call

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace ksum::bsm
