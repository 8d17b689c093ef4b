#!/usr/bin/env python3
"""End-to-end time and peak memory of `ksum sum` (file in, file out) for several N and backends.

Writes random points (unit cube, 3D) and weights as .npy, runs `ksum sum --kernel laplace` once per
(size, backend), measures wall time and the child's peak resident memory (os.wait4), and writes a
markdown table.
"""
import argparse
import os
import subprocess
import tempfile
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ksum", required=True)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100000, 1000000])
    ap.add_argument("--backends", nargs="+", default=["cpu", "gpu"])
    ap.add_argument("--precision", default="f64")
    ap.add_argument("--skip-cpu-above", type=int, default=0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in a.sizes:
            rng = np.random.default_rng(n)
            pts, w = os.path.join(tmp, f"p{n}.npy"), os.path.join(tmp, f"w{n}.npy")
            np.save(pts, rng.random((n, 3)))
            np.save(w, rng.uniform(-1, 1, (n, 1)))
            for b in a.backends:
                if b == "cpu" and a.skip_cpu_above and n > a.skip_cpu_above:
                    continue
                out = os.path.join(tmp, f"u{n}{b}.npy")
                cmd = [a.ksum, "sum", "--kernel", "laplace", "--sources", pts, "--weights", w,
                       "--backend", b, "--precision", a.precision, "-o", out]
                t0 = time.perf_counter()
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                _, status, usage = os.wait4(proc.pid, 0)
                secs = time.perf_counter() - t0
                log = proc.stdout.read().decode()
                ok = os.waitstatus_to_exitcode(status) == 0
                print(log, flush=True)
                rows.append((n, b, secs, usage.ru_maxrss / 1024.0, "ok" if ok else "FAILED"))
    with open(a.out, "w") as f:
        f.write(f"End-to-end `ksum sum --kernel laplace --precision {a.precision}` (.npy in and out, "
                "self sum, 3D)\n\n| N | backend | wall [s] | peak RSS [MiB] | status |\n"
                "|---|---|---|---|---|\n")
        for n, b, s, m, st in rows:
            f.write(f"| {n} | {b} | {s:.2f} | {m:.0f} | {st} |\n")
    print(open(a.out).read())


if __name__ == "__main__":
    main()
