#!/usr/bin/env python3
"""RBF-PUM (ksum) against SciPy's RBFInterpolator(neighbors=50) on the same points and cores (CPU only:
ksum runs with --backend cpu).

2D Franke's function on the first N Halton points (bases 2, 3, skipping the origin: the same points
as ksum::datasets::halton), M evaluation points uniform in [0.001, 0.999]^2 (fixed seed). ksum runs
through its command (`ksum interpolate --method pum`, .npy in and out, so file I/O is included in its
time); SciPy is timed for construction plus evaluation. Prints a markdown table with the RMSEs and the
speed ratio, then times ksum alone at --big-m evaluation points.
"""
import argparse
import os
import subprocess
import tempfile
import time

import numpy as np


def halton(n, base, skip=1):
    i = np.arange(skip, n + skip, dtype=np.int64)
    r, f = np.zeros(n), 1.0
    while np.any(i > 0):
        f /= base
        r += f * (i % base)
        i //= base
    return r


def franke(x, y):
    return (0.75 * np.exp(-((9 * x - 2) ** 2 + (9 * y - 2) ** 2) / 4)
            + 0.75 * np.exp(-(9 * x + 1) ** 2 / 49 - (9 * y + 1) / 10)
            + 0.5 * np.exp(-((9 * x - 7) ** 2 + (9 * y - 3) ** 2) / 4)
            - 0.2 * np.exp(-(9 * x - 4) ** 2 - (9 * y - 7) ** 2))


def run_ksum(ksum, data, ev, out, eps):
    t0 = time.perf_counter()
    p = subprocess.run([ksum, "interpolate", "--method", "pum", "--data", data, "--dim", "2",
                        "--eval", ev, "--kernel", "matern4", "--eps", str(eps), "--backend", "cpu",
                        "--force", "-o", out],
                       capture_output=True, text=True)
    secs = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"ksum failed: {p.stderr}")
    return secs, np.load(out)[:, 2], p.stderr.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ksum", required=True)
    ap.add_argument("--n", type=int, default=1050625)
    ap.add_argument("--m", type=int, default=100000)
    ap.add_argument("--big-m", type=int, default=1000000)
    ap.add_argument("--eps", type=float, default=10.0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    from scipy import __version__ as scipy_version
    from scipy.interpolate import RBFInterpolator

    x = np.c_[halton(a.n, 2), halton(a.n, 3)]
    f = franke(x[:, 0], x[:, 1])
    rng = np.random.default_rng(7)
    y = rng.uniform(0.001, 0.999, (a.m, 2))
    fy = franke(y[:, 0], y[:, 1])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data, ev, out = (os.path.join(tmp, n) for n in ("data.npy", "eval.npy", "out.npy"))
        np.save(data, np.c_[x, f])
        np.save(ev, y)
        secs, u, log = run_ksum(a.ksum, data, ev, out, a.eps)
        print(log, flush=True)
        logs = [log]
        rows.append(("ksum pum (M4, eps=%g)" % a.eps, a.m, secs, np.sqrt(np.mean((u - fy) ** 2))))
        t0 = time.perf_counter()
        interp = RBFInterpolator(x, f, neighbors=50)
        us = interp(y)
        secs_scipy = time.perf_counter() - t0
        rows.append((f"SciPy {scipy_version} RBFInterpolator(neighbors=50)", a.m, secs_scipy,
                     np.sqrt(np.mean((us - fy) ** 2))))
        print(rows, flush=True)
        yb = rng.uniform(0.001, 0.999, (a.big_m, 2))
        np.save(ev, yb)
        secs, u, log = run_ksum(a.ksum, data, ev, out, a.eps)
        logs.append(log)
        rows.append(("ksum pum (M4, eps=%g)" % a.eps, a.big_m, secs,
                     np.sqrt(np.mean((u - franke(yb[:, 0], yb[:, 1])) ** 2))))
    ratio = rows[1][2] / rows[0][2]
    with open(a.out, "w") as fo:
        fo.write(f"2D Franke, N = {a.n} Halton points, {os.cpu_count()} cores, same points for both\n\n"
                 "| method | M | wall [s] | RMSE |\n|---|---|---|---|\n")
        for name, m, s, e in rows:
            fo.write(f"| {name} | {m} | {s:.2f} | {e:.3e} |\n")
        fo.write(f"\nksum / SciPy speed ratio at M = {a.m}: {ratio:.1f}x "
                 f"(RMSE {rows[0][3]:.2e} vs {rows[1][3]:.2e})\n")
        fo.write("\nksum's own report of the two runs (its phases; the wall times above also "
                 "count process start and file I/O):\n\n```\n" + "\n".join(logs) + "\n```\n")
    print(open(a.out).read())


if __name__ == "__main__":
    main()
