#!/usr/bin/env python3
"""Time against tolerance for the whole `ksum sum` run (issue 26, item 4).

For each case (3D FMM, 2D FMM, fast Gauss transform; CPU and GPU) and each tolerance 1e-2 … 1e-10,
runs `ksum sum --timing` on N random points (unit cube or square, weights uniform in [-1, 1]) and
measures the process's wall time, the CLI's own breakdown (read, GPU start, set-up, sum, write)
and the achieved error on --check sampled targets against an independent float64 direct sum
computed here with NumPy:

  fmm (3D laplace 1/r, 2D log -log r):  max_i |u_i - ref_i| / max_i |ref_i|  (the FMM's --tol)
  fgt (gaussian exp(-(eps r)^2)):        max_i |u_i - ref_i| / sum_j |w_j|    (the FGT's --tol)

The FGT cases use positive weights in [0, 1] (a density estimate, where the errors add up
coherently: the case its bound is written for); the FMM cases weights in [-1, 1].

The direct sums of the same data are timed once per case as the baseline. Writes tolerance.md
(tables) and tolerance.json under --out.
"""
import argparse
import json
import os
import re
import subprocess
import tempfile
import time

import numpy as np

CASES = {
    # name: (dimension, kernel, method, backend, eps)
    "fmm3d-cpu": (3, "laplace", "fmm", "cpu", 1.0),
    "fmm3d-gpu": (3, "laplace", "fmm", "gpu", 1.0),
    "fmm2d-cpu": (2, "log", "fmm", "cpu", 1.0),
    "fmm2d-gpu": (2, "log", "fmm", "gpu", 1.0),
    "fgt-cpu": (3, "gaussian", "fgt", "cpu", 10.0),
    "fgt-gpu": (3, "gaussian", "fgt", "gpu", 10.0),
    # --method auto: the method a cost model timed on the running device picks (its timing counted)
    "auto-gauss-gpu": (3, "gaussian", "auto", "gpu", 10.0),
    "auto-laplace-gpu": (3, "laplace", "auto", "gpu", 1.0),
}


def reference(kernel, eps, pts, w, at):
    """float64 direct sum at the sampled targets (sources = targets, self term left out)."""
    ref = np.empty(len(at))
    for k, i in enumerate(at):
        r2 = np.sum((pts - pts[i]) ** 2, axis=1)
        r2[i] = np.inf  # the self term
        if kernel == "laplace":
            v = 1.0 / np.sqrt(r2 * eps * eps)
        elif kernel == "log":
            with np.errstate(divide="ignore"):
                v = -0.5 * np.log(r2 * eps * eps)
            v[i] = 0.0
        else:
            v = np.exp(-r2 * eps * eps)
        ref[k] = v @ w
    return ref


def run(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return time.perf_counter() - t0, p.returncode, p.stdout


def timing_parts(log):
    """The seconds of the `--timing` line: read, gpu (the driver and context on their own thread,
    overlapped with reading and the plan's host work), setup, sum, write, total (since main())."""
    parts = {}
    line = next((l for l in log.splitlines() if l.startswith("ksum sum timing:")), "")
    for key, pattern in (("read", r"read ([0-9.]+) s"), ("gpu", r"GPU context ([0-9.]+) s"),
                         ("setup", r"plan set-up ([0-9.]+) s"), ("sum", r"; sum ([0-9.]+) s"),
                         ("write", r"write ([0-9.]+) s"), ("total", r"total ([0-9.]+) s since")):
        m = re.search(pattern, line)
        if m:
            parts[key] = float(m.group(1))
    return parts


def note(row):
    """The table's note: a hand-over to the direct sum, or the method auto chose."""
    if row.get("handed_over"):
        return "handed over to direct"
    return f"auto chose {row['chose']}" if row.get("chose") else ""


def render(n, check, cases, baselines, rows):
    """The markdown tables of one run."""
    lines = [f"# Time against tolerance, whole `ksum sum` run, N = {n:,} (errors on {check} sampled targets)\n"]
    for c in cases:
        d, kernel, method, backend, eps = CASES[c]
        b = baselines[c]
        lines.append(f"\n## {c}: {d}D {kernel}" + (f", eps {eps:g}" if kernel == "gaussian" else "") +
                     (", --method auto" if method == "auto" else "") +
                     f", backend {backend}; " + (f"direct sum: wall {b['wall']:.3f} s, sum {b.get('sum', float('nan')):.3f} s\n"
                                         if b["rc"] == 0 else "direct sum not timed (O(N²) on the CPU)\n"))
        lines.append("| tol | p | wall [s] | set-up [s] | sum [s] | error | error / tol | direct wall / wall | note |")
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            if r["case"] != c:
                continue
            if r["rc"] != 0:
                lines.append(f"| {r['tol']:.0e} | | failed | | | | | | {r.get('message', '')} |")
                continue
            lines.append(f"| {r['tol']:.0e} | {r.get('p', '')} | {r['wall']:.3f} | {r.get('setup', float('nan')):.3f} | "
                         f"{r.get('sum', float('nan')):.3f} | {r['error']:.2e} | {r['error'] / r['tol']:.2g} | "
                         f"{(format(b['wall'] / r['wall'], '.2f') if b['rc'] == 0 else '—')} | {note(r)} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ksum", help="the ksum binary (required unless --render)")
    ap.add_argument("--render", help="only print the tables of an earlier run's tolerance.json")
    ap.add_argument("--n", type=int, default=1000000)
    ap.add_argument("--tols", default="1e-2,1e-3,1e-4,1e-5,1e-6,1e-7,1e-8,1e-9,1e-10")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--check", type=int, default=1000, help="sampled targets for the error")
    ap.add_argument("--cpu-direct-max", type=int, default=200000,
                    help="time the CPU cases' direct baseline only up to this N (it is O(N^2))")
    ap.add_argument("--out", help="the folder for tolerance.md and tolerance.json (required unless --render)")
    a = ap.parse_args()
    if a.render:
        with open(a.render) as f:
            j = json.load(f)
        cases = j.get("cases") or list(dict.fromkeys(r["case"] for r in j["rows"]))
        print(render(j["n"], j["check"], cases, j["baselines"], j["rows"]), end="")
        return
    if not a.ksum or not a.out:
        raise SystemExit("--ksum and --out are required (or --render)")
    os.makedirs(a.out, exist_ok=True)
    tols = [float(t) for t in a.tols.split(",")]
    cases = [c for c in a.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            raise SystemExit(f"--cases: unknown case '{c}' (valid: {', '.join(CASES)})")
    rng = np.random.default_rng(2026)
    weights = {"signed": rng.uniform(-1, 1, a.n), "positive": rng.uniform(0, 1, a.n)}
    at = np.sort(rng.choice(a.n, size=min(a.check, a.n), replace=False))
    rows, baselines = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        data, refs = {}, {}
        for d in (2, 3):
            if any(CASES[c][0] == d for c in cases):
                pts = np.random.default_rng(d).random((a.n, d))
                data[d] = os.path.join(tmp, f"p{d}.npy")
                np.save(data[d], pts)
                data[(d, "pts")] = pts
        wfiles = {}
        for name, w in weights.items():
            wfiles[name] = os.path.join(tmp, f"w_{name}.npy")
            np.save(wfiles[name], w.reshape(-1, 1))
        out = os.path.join(tmp, "u.npy")
        for c in cases:
            d, kernel, method, backend, eps = CASES[c]
            wname = "positive" if kernel == "gaussian" else "signed"
            w, wfile = weights[wname], wfiles[wname]
            key = (kernel, eps, wname)
            if key not in refs:
                t0 = time.perf_counter()
                refs[key] = reference(kernel, eps, data[(d, "pts")], w, at)
                print(f"reference {kernel} eps {eps}: {time.perf_counter() - t0:.1f} s", flush=True)
            ref = refs[key]
            scale = np.abs(w).sum() if kernel == "gaussian" else np.abs(ref).max()
            base = [a.ksum, "sum", "--kernel", kernel, "--eps", str(eps), "--sources", data[d],
                    "--weights", wfile, "--backend", backend, "-o", out, "-f", "--timing"]
            if backend == "cpu" and a.n > a.cpu_direct_max:
                baselines[c] = {"wall": float("nan"), "rc": -1}
            else:
                secs, rc, log = run(base + ["--method", "direct"])
                print(log, flush=True)
                baselines[c] = {"wall": secs, "rc": rc, **timing_parts(log)}
            for tol in tols:
                extra = ["--method", method, "--tol", f"{tol:g}"]
                secs, rc, log = run(base + extra)
                print(f"{c} tol {tol:g}: {secs:.3f} s\n{log}", flush=True)
                row = {"case": c, "tol": tol, "wall": secs, "rc": rc, **timing_parts(log),
                       "handed_over": "so the direct sum ran" in log}
                chose = re.search(r"method auto chose (\w+)", log)
                if chose:
                    row["chose"] = chose.group(1)
                if rc == 0:
                    u = np.load(out).reshape(-1)
                    row["error"] = float(np.abs(u[at] - ref).max() / scale)
                else:
                    row["message"] = log.strip().splitlines()[-1] if log.strip() else ""
                m = re.search(r"\b(?:p|order)=(\d+)", log)
                if m:
                    row["p"] = int(m.group(1))
                rows.append(row)
    with open(os.path.join(a.out, "tolerance.json"), "w") as f:
        json.dump({"n": a.n, "check": len(at), "cases": cases, "baselines": baselines, "rows": rows}, f, indent=1)
    text = render(a.n, len(at), cases, baselines, rows)
    with open(os.path.join(a.out, "tolerance.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
