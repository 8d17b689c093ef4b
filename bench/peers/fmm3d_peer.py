#!/usr/bin/env python3
"""FMM3D (fmm3dpy, pip) on the points that fmm3d_bench saved, for the ratio in issue 5.

Usage: fmm3d_peer.py DIR --eps 1e-6 [--ksum-json FILE]... [--reps 3] [--check 500]
DIR holds points.npy (N x 3), weights.npy (N x 1) and ksum_u.npy (ksum's u, self term left out).
Runs lfmm3d (potentials at the sources, Laplace 1/(4 pi r), pg=1) with every core OpenMP gives it,
times the median of --reps calls after one warm-up, measures both codes' relative l2 error on
--check sampled targets against a direct float64 sum, and prints one Markdown row (and the ratio
FMM3D time / ksum execute time when --ksum-json names fmm3d_bench's JSON).
"""
import argparse
import json
import os
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--ksum-json", action="append", default=[],
                    help="fmm3d_bench --json output (repeatable): one ratio each")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--check", type=int, default=500)
    a = ap.parse_args()
    import fmm3dpy

    pts = np.load(os.path.join(a.dir, "points.npy"))
    w = np.load(os.path.join(a.dir, "weights.npy")).reshape(-1)
    uk = np.load(os.path.join(a.dir, "ksum_u.npy")).reshape(-1)
    n = pts.shape[0]
    src = np.ascontiguousarray(pts.T)
    out = fmm3dpy.lfmm3d(eps=a.eps, sources=src, charges=w, pg=1)  # warm-up
    times = []
    for _ in range(a.reps):
        t0 = time.perf_counter()
        out = fmm3dpy.lfmm3d(eps=a.eps, sources=src, charges=w, pg=1)
        times.append(time.perf_counter() - t0)
    t_fmm3d = float(np.median(times))
    uf = out.pot.real * 4 * np.pi  # FMM3D's kernel is 1/(4 pi r)
    rows = np.linspace(0, n - 1, min(n, a.check)).astype(np.int64)
    ref = np.empty(len(rows))
    for k, i in enumerate(rows):
        r = np.linalg.norm(pts - pts[i], axis=1)
        r[i] = np.inf
        ref[k] = np.sum(w / r)
    err = lambda u: float(np.linalg.norm(u[rows] - ref) / np.linalg.norm(ref))
    res = {"n": n, "eps": a.eps, "threads": os.environ.get("OMP_NUM_THREADS", "all"),
           "fmm3d_s": t_fmm3d, "fmm3d_error": err(uf), "ksum_error": err(uk)}
    line = f"| FMM3D lfmm3d | {n} | {a.eps:.0e} | {res['threads']} | {t_fmm3d:.3f} | {res['fmm3d_error']:.2e} |"
    res["ksum"] = []
    for path in a.ksum_json:
        k = json.load(open(path))
        ratio = t_fmm3d / k["execute_s"]
        res["ksum"].append({"backend": k["backend"], "execute_s": k["execute_s"], "ratio": ratio})
        line += f" ksum {k['backend']} {k['execute_s']:.3f} s: **{ratio:.1f}x** |"
    line += f" ksum error {res['ksum_error']:.2e} |"
    print(line)
    print("JSON " + json.dumps(res))


if __name__ == "__main__":
    main()
