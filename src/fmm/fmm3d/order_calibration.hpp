#pragma once
// The 3D FMM's order choice, calibrated (issue 26): R[kernel][p − 2] = the measured relative l2
// error over the choice's estimate (BbFmm::interpolation_error, the largest over the levels with
// far interactions) at order p, the largest over uniform and Plummer points and ε ∈ {1, 3}, then
// over p − 1 … p + 1, and at least 0.05. A kernel without measurements has 1 (the estimate
// itself). Written by scripts/fmm_order_calibration.py from bench/results/2026-11-27-fmm-order-calibration/orders_cpu_n20000.json
// (N = 20000, signed weights, fp64); regenerate it after changing
// the estimate or the operators.
namespace ksum::fmm::detail {

inline constexpr int kCalibratedMinOrder = 2, kCalibratedMaxOrder = 11;
inline constexpr double kOrderErrorRatio[17][10] = {
    {1.18, 1.18, 1.18, 1.55, 1.55, 1.55, 1.12, 1.12, 1.22, 1.22}, // gaussian
    {2.7, 2.7, 2.42, 2.2, 2.2, 2.2, 2.06, 2.06, 2.73, 2.73}, // multiquadric
    {2.31, 2.31, 2.31, 1.94, 1.94, 1.94, 1.74, 1.74, 2.02, 2.02}, // inverse-multiquadric
    {1.66, 1.66, 1.66, 1.48, 1.48, 1.48, 1.42, 1.42, 1.53, 1.53}, // inverse-quadratic
    {2.35, 2.35, 2.35, 1.9, 1.9, 1.9, 1.94, 1.94, 2.09, 2.09}, // matern0
    {1.87, 1.87, 1.87, 1.36, 1.36, 1.36, 1.2, 1.2, 1.72, 1.72}, // matern2
    {4.62, 4.62, 4.62, 3.65, 3.65, 2.35, 2.19, 1.47, 1.47, 1.26}, // matern4
    {5.96, 5.96, 6.41, 6.41, 6.41, 5.1, 4.32, 2.17, 1.21, 1.21}, // matern6
    {1.02, 1.02, 1.17, 1.57, 1.57, 1.57, 1.04, 0.911, 0.911, 0.67}, // wendland2
    {1.07, 1.07, 6.37, 6.37, 6.37, 6.22, 3.79, 1.19, 2.04, 2.04}, // wendland4
    {0.895, 0.895, 29.1, 30.6, 30.6, 30.6, 25, 4.08, 2.16, 1.71}, // wendland6
    {1.69, 1.69, 1.05, 0.688, 0.549, 0.549, 0.554, 0.554, 0.619, 0.619}, // tps
    {1.92, 1.92, 1.92, 1.06, 1.06, 0.746, 0.55, 0.55, 0.55, 0.44}, // cubic
    {2.7, 2.7, 1.88, 2.25, 2.25, 2.25, 2.16, 2.16, 2.83, 2.83}, // linear
    {1.79, 1.79, 3.54, 3.54, 3.54, 2.56, 2.04, 1.22, 1.22, 0.366}, // quintic
    {0.371, 0.371, 0.371, 0.215, 0.215, 0.215, 0.21, 0.21, 0.212, 0.212}, // laplace
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, // log
};

} // namespace ksum::fmm::detail
