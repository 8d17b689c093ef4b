#!/usr/bin/env python3
"""Writes src/fmm/fmm3d/order_calibration.hpp from `fmm3d_bench orders --json` output.

For each kernel and order p the table holds R(p): the measured relative l2 error divided by the
order choice's estimate (BbFmm's sampled interpolation error), the largest over the calibration's
distributions and shape parameters, then the largest over p − 1 … p + 1 (the ratios jump between
neighbouring orders) and at least kFloor, so that one lucky measurement never loosens the order
by more than 1 / kFloor. Rows whose error is below 1e-13 (the fp64 floor of the sums) are left
out. Orders past the table use the largest ratio of its last four.

usage: scripts/fmm_order_calibration.py orders.json [--source DESCRIPTION] > order_calibration.hpp
"""
import json
import sys
from collections import defaultdict

KERNELS = ["gaussian", "multiquadric", "inverse-multiquadric", "inverse-quadratic", "matern0",
           "matern2", "matern4", "matern6", "wendland2", "wendland4", "wendland6", "tps", "cubic",
           "linear", "quintic", "laplace", "log"]  # the order of ksum::Kernel
P_MIN, P_MAX, FLOOR, ERROR_FLOOR = 2, 11, 0.05, 1e-13


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    source = "fmm3d_bench orders"
    if "--source" in args:
        i = args.index("--source")
        source = args[i + 1]
        del args[i:i + 2]
    rows = json.load(open(args[0]))
    raw = defaultdict(dict)
    n = set()
    for r in rows:
        if r["estimate"] <= 0 or r["error"] < ERROR_FLOOR:
            continue
        k, p = r["kernel"], r["order"]
        n.add(r["n"])
        raw[k][p] = max(raw[k].get(p, 0.0), r["error"] / r["estimate"])
    lines = []
    for k in KERNELS:
        vals = []
        for p in range(P_MIN, P_MAX + 1):
            window = [raw[k][q] for q in (p - 1, p, p + 1) if q in raw[k]]
            vals.append(max([FLOOR] + window) if raw[k] else 1.0)
        lines.append("    {" + ", ".join(f"{v:.3g}" for v in vals) + "}, // " + k)
    print(f"""#pragma once
// The 3D FMM's order choice, calibrated (issue 26): R[kernel][p − {P_MIN}] = the measured relative l2
// error over the choice's estimate (BbFmm::interpolation_error, the largest over the levels with
// far interactions) at order p, the largest over uniform and Plummer points and ε ∈ {{1, 3}}, then
// over p − 1 … p + 1, and at least {FLOOR}. A kernel without measurements has 1 (the estimate
// itself). Written by scripts/fmm_order_calibration.py from {source}
// (N = {", ".join(str(x) for x in sorted(n))}, signed weights, fp64); regenerate it after changing
// the estimate or the operators.
namespace ksum::fmm::detail {{

inline constexpr int kCalibratedMinOrder = {P_MIN}, kCalibratedMaxOrder = {P_MAX};
inline constexpr double kOrderErrorRatio[{len(KERNELS)}][{P_MAX - P_MIN + 1}] = {{
{chr(10).join(lines)}
}};

}} // namespace ksum::fmm::detail""")


if __name__ == "__main__":
    main()
