#pragma once
// Backend::cuda of inverse() and inverse_update() (seed 004 Paper III on cuBLAS/cuSOLVER): the
// same variants (sm_impl.hpp, one code for both), pivot measure, breakdown step and LU fallback as
// the CPU path of bsm.cpp, with the matrices resident on the device (bsm_gpu.cpp). Builds without
// CUDA (bsm_gpu_none.cpp) throw Error(unsupported).
#include "linalg/bsm/sm.hpp"

#include <chrono>
#include <cstdint>

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

} // namespace ksum::bsm
