#!/usr/bin/env python3
"""Independent NumPy/SciPy RBF-PUM (fixed eps or LOOCV) to test patch geometries against seed 001.

Written for docs/reproduction-pum.md ("Why our errors are lower"). It does not use ksum: the
cells follow seed 001's d_PU formula, d_k = floor(ceil(0.5 (N/2)^(1/s)) * range_k / min range)
over the data's bounding box, with centres at the cell centres; a patch holds the data within
radius r = rfac * w of its centre (w the cell width; the seed's eq. (10) is rfac = sqrt(2)); the
Shepard weights are Wendland C2 of |x - centre| / r; local M2/M4 interpolants phi(eps r) with the
seed's table 1 definitions; eps "opt" chooses eps per patch by LOOCV as ksum does (Rippa's
formula, max norm, bounded Brent over log eps in [0.1, 100], rcond < 1e-13 rejected). No patch
growth, no regularisation. Halton points as in ksum (bases 2, 3, 5; index 1 onwards, i.e. the
origin skipped) unless --skip says otherwise; on the sphere ksum's halton_sphere and spiral points.

  python3 pum_geometry_ref.py --table 3 --n 289 1089 4225 --rfac 1.4142 0.75 --eps 10 opt

Prints N, kernel, eps, rfac, cells per axis, points per patch (median), holes (evaluation points
that no patch covers, left out of the RMSE), RMSE, and the ratio to the seed's value (tables 3,
4, 5 (g2, g3) and 6).
"""
import argparse
import warnings
import math
import sys
import time

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import minimize_scalar
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist

M2, M4 = "matern2", "matern4"
# Seed 001 tables 3-6: {table: (dim, function, Ns, {(kernel, eps): RMSEs})}; eps "opt" is LOOCV.
SEED = {
    "3": (2, "f2", [289, 1089, 4225, 16641, 66049], {
        (M2, "10"): [1.00e-2, 2.60e-3, 6.01e-4, 1.15e-4, 3.58e-5],
        (M2, "15"): [2.05e-2, 5.73e-3, 1.33e-3, 3.23e-4, 7.79e-5],
        (M2, "20"): [3.41e-2, 1.01e-2, 2.36e-3, 5.74e-4, 1.38e-4],
        (M2, "opt"): [3.02e-3, 6.14e-4, 1.31e-4, 3.20e-5, 7.38e-6],
        (M4, "10"): [3.40e-3, 4.73e-4, 5.98e-5, 7.70e-6, 9.25e-7],
        (M4, "15"): [8.30e-3, 1.36e-3, 1.80e-4, 2.27e-5, 2.83e-6],
        (M4, "20"): [1.59e-2, 2.96e-3, 4.09e-4, 5.21e-5, 6.58e-6],
        (M4, "opt"): [1.95e-3, 1.75e-4, 2.00e-5, 2.34e-6, 1.97e-7]}),
    "4": (3, "f3", [4913, 35937, 274625, 2146689, 16974593], {
        (M4, "10"): [6.68e-4, 6.93e-5, 7.03e-6, 7.98e-7, 9.38e-8],
        (M4, "15"): [1.52e-3, 1.76e-4, 1.87e-5, 2.12e-6, 2.47e-7],
        (M4, "20"): [2.97e-3, 3.81e-4, 4.19e-5, 4.77e-6, 5.53e-7],
        (M4, "opt"): [3.02e-4, 2.99e-5, 2.83e-6, 3.36e-7, float("nan")]}),
    "5g2": (2, "g2", [9216, 250000, 1000000], {
        (M4, "10"): [2.63e-5, 1.50e-7, 1.93e-8], (M4, "opt"): [3.78e-6, 1.53e-7, 1.36e-9]}),
    "5g3": (3, "g3", [19683, 110592, 884736], {
        (M4, "10"): [3.94e-4, 6.56e-5, 7.43e-6], (M4, "opt"): [8.18e-5, 1.08e-5, 1.11e-6]}),
    "6": (3, "sphere", [16641, 66049, 263169, 1050625], {
        (M2, "5"): [2.83e-5, 5.76e-6, 1.00e-6, 1.88e-7],
        (M2, "10"): [6.75e-5, 1.32e-5, 2.23e-6, 4.21e-7],
        (M2, "15"): [1.43e-4, 2.70e-5, 4.48e-6, 8.46e-7],
        (M2, "20"): [2.56e-4, 4.76e-5, 7.79e-6, 1.47e-6],
        (M2, "25"): [4.10e-4, 7.54e-5, 1.22e-5, 2.29e-6],
        (M2, "30"): [6.04e-4, 1.11e-4, 1.79e-5, 3.33e-6],
        (M4, "5"): [2.05e-6, 2.42e-7, 1.76e-8, 1.20e-5],
        (M4, "10"): [5.40e-6, 6.77e-7, 4.84e-8, 7.37e-9],
        (M4, "15"): [1.51e-5, 1.88e-6, 1.27e-7, 1.57e-8],
        (M4, "20"): [3.46e-5, 4.08e-6, 2.81e-7, 3.10e-8],
        (M4, "25"): [6.68e-5, 7.55e-6, 5.37e-7, 5.59e-8],
        (M4, "30"): [1.15e-4, 1.26e-5, 9.26e-7, 9.33e-8]}),
}
DEFAULT_GRID = {"3": 300, "4": 97, "5g2": 1500, "5g3": 150, "6": 100000}


def halton(n, s, skip=1):
    primes = [2, 3, 5, 7, 11]
    out = np.zeros((n, s))
    for k in range(s):
        b = primes[k]
        i = np.arange(skip, n + skip, dtype=np.int64)
        f = np.ones(n)
        r = np.zeros(n)
        while np.any(i > 0):
            f /= b
            r += f * (i % b)
            i //= b
        out[:, k] = r
    return out


def franke2(x):
    x1, x2 = 9 * x[:, 0], 9 * x[:, 1]
    return (0.75 * np.exp(-((x1 - 2) ** 2 + (x2 - 2) ** 2) / 4)
            + 0.75 * np.exp(-(x1 + 1) ** 2 / 49 - (x2 + 1) / 10)
            + 0.5 * np.exp(-((x1 - 7) ** 2 + (x2 - 3) ** 2) / 4)
            - 0.2 * np.exp(-(x1 - 4) ** 2 - (x2 - 7) ** 2))


def franke3(x):
    x1, x2, x3 = 9 * x[:, 0], 9 * x[:, 1], 9 * x[:, 2]
    return (0.75 * np.exp(-((x1 - 2) ** 2 + (x2 - 2) ** 2 + (x3 - 2) ** 2) / 4)
            + 0.75 * np.exp(-(x1 + 1) ** 2 / 49 - (x2 + 1) / 10 - (x3 + 1) / 10)
            + 0.5 * np.exp(-((x1 - 7) ** 2 + (x2 - 3) ** 2 + (x3 - 5) ** 2) / 4)
            - 0.2 * np.exp(-(x1 - 4) ** 2 - (x2 - 7) ** 2 - (x3 - 5) ** 2))


def g_s(x):
    return np.prod(4 * x * (1 - x), axis=1)


def halton_sphere(n, skip=1):  # as ksum's datasets::halton_sphere
    uv = halton(n, 2, skip)
    z, phi = 2 * uv[:, 0] - 1, 2 * math.pi * uv[:, 1]
    r = np.sqrt(1 - z * z)
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], 1)


def spiral_sphere(n):  # as ksum's datasets::spiral_sphere
    out = np.zeros((n, 3))
    phi = 0.0
    for k in range(n):
        z = -1 + 2 * k / (n - 1)
        r = math.sqrt(max(0.0, 1 - z * z))
        phi = 0.0 if k in (0, n - 1) else math.fmod(phi + 3.6 / math.sqrt(n) / r, 2 * math.pi)
        out[k] = (r * math.cos(phi), r * math.sin(phi), z)
    return out


def kernel(name, eps, r):
    t = eps * r
    if name == "matern2":
        return np.exp(-t) * (t + 1)
    if name == "matern4":
        return np.exp(-t) * (t * t + 3 * t + 3)
    raise ValueError(name)


def w2(r):
    r = np.minimum(r, 1.0)
    return (1 - r) ** 4 * (4 * r + 1)


def loocv_eps(kname, dist, fj):
    """Seed 001 section 3: minimise max_k |c_k / (A^-1)_kk| over log eps in [0.1, 100] (Brent);
    badly conditioned systems (rcond < 1e-13, as in ksum) score +inf."""
    def cost(le):
        a = kernel(kname, math.exp(le), dist)
        try:
            ai = np.linalg.inv(a)
        except np.linalg.LinAlgError:
            return np.inf
        if 1.0 / (np.linalg.norm(a, 1) * np.linalg.norm(ai, 1)) < 1e-13:
            return np.inf
        return float(np.max(np.abs((ai @ fj) / np.diag(ai))))
    res = minimize_scalar(cost, bounds=(math.log(0.1), math.log(100.0)), method="bounded",
                          options={"xatol": 1e-3, "maxiter": 40})
    return math.exp(res.x) if np.isfinite(res.fun) else 100.0


def pum_rmse(x, f, y, fy, kname, eps, rfac, density=1.0, chunk=1 << 20):
    """eps None: LOOCV per patch."""
    n, s = x.shape
    lo, hi = x.min(0), x.max(0)
    rng = hi - lo
    base = math.ceil(density * 0.5 * (n / 2) ** (1 / s))
    d = np.maximum(1, np.floor(base * rng / rng.min())).astype(int)
    w = rng / d
    r = rfac * w.min()
    axes = [lo[k] + (np.arange(d[k]) + 0.5) * w[k] for k in range(s)]
    centres = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, s)
    data_lists = cKDTree(x).query_ball_point(centres, r)
    fits = []  # (patch, its data, coefficients)
    for j in range(len(centres)):
        idx = data_lists[j]
        if not idx:
            continue
        xi = x[idx]
        dist = cdist(xi, xi)
        e = eps if eps is not None else loocv_eps(kname, dist, f[idx])
        a = kernel(kname, e, dist)
        try:
            c = cho_solve(cho_factor(a), f[idx])
        except np.linalg.LinAlgError:
            c = np.linalg.lstsq(a, f[idx], rcond=None)[0]
        fits.append((j, xi, c, e))
    live = np.array([j for j, _, _, _ in fits])
    se, m, holes = 0.0, 0, 0
    for start in range(0, len(y), chunk):  # evaluation in chunks (memory)
        yc, fc = y[start:start + chunk], fy[start:start + chunk]
        eval_lists = cKDTree(yc).query_ball_point(centres[live], r)
        num = np.zeros(len(yc))
        den = np.zeros(len(yc))
        for (j, xi, c, e), ev in zip(fits, eval_lists):
            if not ev:
                continue
            ye = yc[ev]
            wt = w2(np.linalg.norm(ye - centres[j], axis=1) / r)
            num[ev] += wt * (kernel(kname, e, cdist(ye, xi)) @ c)
            den[ev] += wt
        covered = den > 0
        se += float(np.sum((num[covered] / den[covered] - fc[covered]) ** 2))
        m += int(covered.sum())
        holes += int((~covered).sum())
    sizes = [len(xi) for _, xi, _, _ in fits]
    return math.sqrt(se / m), holes, int(d[0]), float(np.median(sizes))


def main():
    warnings.simplefilter("ignore", RuntimeWarning)  # scipy.optimize on +inf costs
    ap = argparse.ArgumentParser()
    ap.add_argument("--table", default="3", choices=sorted(SEED))
    ap.add_argument("--n", type=int, nargs="+", default=None)
    ap.add_argument("--kernel", nargs="+", default=None)
    ap.add_argument("--eps", nargs="+", default=None, help="values or 'opt' (LOOCV)")
    ap.add_argument("--rfac", type=float, nargs="+", default=[math.sqrt(2)])
    ap.add_argument("--density", type=float, default=1.0)
    ap.add_argument("--grid", type=int, default=None,
                    help="evaluation points per axis (table 6: number of spiral points)")
    ap.add_argument("--skip", type=int, default=1)
    a = ap.parse_args()
    s, fname, seed_ns, seed = SEED[a.table]
    ns = a.n or seed_ns[:2]
    kernels = a.kernel or sorted({k for k, _ in seed})
    epss = a.eps or ["10"]
    g = a.grid or DEFAULT_GRID[a.table]
    fun = {"f2": franke2, "f3": franke3, "sphere": franke3, "g2": g_s, "g3": g_s}[fname]
    if fname == "sphere":
        y = spiral_sphere(g)
    else:
        ax = np.linspace(0, 1, g)
        y = np.stack(np.meshgrid(*([ax] * s), indexing="ij"), -1).reshape(-1, s)
    fy = fun(y)
    print(f"# table {a.table} ({fname}, dim {s}), {len(y)} evaluation points, density "
          f"{a.density}, Halton skip {a.skip}")
    print("| N | kernel | eps | r/w | cells/axis | pts/patch (median) | holes | RMSE | seed | ratio "
          "| s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in ns:
        x = halton_sphere(n, a.skip) if fname == "sphere" else halton(n, s, a.skip)
        f = fun(x)
        for kname in kernels:
            for eps in epss:
                for rfac in a.rfac:
                    t0 = time.time()
                    e = None if eps == "opt" else float(eps)
                    rmse, holes, d, med = pum_rmse(x, f, y, fy, kname, e, rfac, a.density)
                    vals = seed.get((kname, eps))
                    sv = vals[seed_ns.index(n)] if vals and n in seed_ns else float("nan")
                    print(f"| {n} | {kname} | {eps} | {rfac:.4f} | {d} | {med:g} | {holes} | "
                          f"{rmse:.2e} | {sv:.2e} | {rmse / sv:.2f} | {time.time() - t0:.1f} |")
                    sys.stdout.flush()


if __name__ == "__main__":
    main()
