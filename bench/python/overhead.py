#!/usr/bin/env python3
"""Python-call overhead of ksum against the C++ call it wraps, and a zero-copy check.

For each N (points uniform in the unit cube, 3D, DirectSum('laplace'), targets = sources): the
wall time of the Python call ``plan(w)`` (median over reps after a warm-up) beside the time the
C++ plan measured inside its execute (``plan.stats['seconds_execute']``, read after each call),
their difference in µs and in % of the call (median of the per-call differences). Then the fixed
overhead: the same on a tiny problem (N = 16, many reps). Goals (the Python issue): overhead
<= 5 % of the call at N = 1e6 and <= 50 µs fixed.

Zero copy: a Fortran-ordered float64 (N, 3) array (and the weights) must reach C++ without a
copy. Checked two ways with ``ksum.config.warn_on_copy = True``: no ``ksum.CopyWarning`` is
raised, and tracemalloc (which sees NumPy's buffers, not ksum's C++ ones) records fewer bytes
during set_points + call than one copy of the points would take. A C-ordered array must raise the
warning (the check's positive control).

With a GPU and CuPy or PyTorch, the same sums on GPU arrays (summed in place, no host round trip)
are timed too: their wall time only, since that path has no C++ plan statistics.

  overhead.py [--backend auto|cpu|gpu] [--sizes 1e3 1e4 1e5 1e6] [--json FILE] [--out FILE.md]
"""
import argparse
import gc
import os
import statistics
import sys
import time
import tracemalloc
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import fmt_s, ksum_gpu_available, machine, table, write_json  # noqa: E402

GOAL_PERCENT = 5.0
GOAL_FIXED_US = 50.0


def points(n, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.random((3, n)).T  # the transpose of a C-ordered (3, n): a Fortran-ordered (n, 3)
    w = rng.random(n) - 0.5
    return x, w


def time_call(plan, w, reps, budget):
    """Per-call wall time and C++ execute time; reps shrink so a size takes about budget s."""
    plan(w)  # warm-up (first-touch allocations, GPU context, thread pool)
    t0 = time.perf_counter()
    plan(w)
    first = time.perf_counter() - t0
    reps = max(3, min(reps, int(budget / max(first, 1e-9))))
    walls, execs = [], []
    gc.collect()
    for _ in range(reps):
        t0 = time.perf_counter()
        u = plan(w)
        walls.append(time.perf_counter() - t0)
        execs.append(plan.stats["seconds_execute"])
        del u  # the result is freed outside the timed region
    diffs = [a - b for a, b in zip(walls, execs)]
    wall, ex, diff = (statistics.median(v) for v in (walls, execs, diffs))
    return {"reps": reps, "call_s": wall, "execute_s": ex, "overhead_s": diff,
            "overhead_percent": 100.0 * diff / wall if wall > 0 else None,
            "call_min_s": min(walls), "execute_min_s": min(execs)}


def device_module():
    """(name, module) of an importable GPU array library with a visible GPU, or (None, None)."""
    try:
        import torch
        if torch.cuda.is_available():
            return "torch", torch
    except Exception:
        pass
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return "cupy", cupy
    except Exception:
        pass
    return None, None


def time_device(ksum, name, mod, x, w, reps, budget, precision):
    dt = np.float32 if precision == "float32" else np.float64
    if name == "torch":
        xd = mod.from_numpy(np.ascontiguousarray(x, dtype=dt)).cuda()
        wd = mod.from_numpy(w.astype(dt)).cuda()
        sync = mod.cuda.synchronize
    else:
        xd, wd = mod.asarray(np.ascontiguousarray(x, dtype=dt)), mod.asarray(w.astype(dt))
        sync = mod.cuda.Device().synchronize
    plan = ksum.DirectSum("laplace", backend="gpu").set_points(xd)
    plan(wd)
    sync()
    t0 = time.perf_counter()
    plan(wd)
    sync()
    first = time.perf_counter() - t0
    reps = max(3, min(reps, int(budget / max(first, 1e-9))))
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        plan(wd)
        sync()
        ts.append(time.perf_counter() - t0)
    return {"framework": name, "reps": reps, "call_s": statistics.median(ts)}


def zero_copy_check(ksum, n, backend, precision):
    """Returns a dict: no CopyWarning for Fortran float64 input, tracemalloc bytes, control."""
    x, w = points(n, seed=7)
    if precision == "float32":
        x, w = np.asfortranarray(x, dtype=np.float32), w.astype(np.float32)
    old = ksum.config.warn_on_copy
    ksum.config.warn_on_copy = True
    try:
        plan = ksum.DirectSum("laplace", backend=backend, precision=precision)
        gc.collect()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tracemalloc.start()
            plan.set_points(x)
            plan(w)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        copies = [str(c.message) for c in caught if issubclass(c.category, ksum.CopyWarning)]
        with warnings.catch_warnings(record=True) as caught2:
            warnings.simplefilter("always")
            ksum.DirectSum("laplace", backend=backend, precision=precision).set_points(
                np.ascontiguousarray(x))(w)
        control = [str(c.message) for c in caught2 if issubclass(c.category, ksum.CopyWarning)]
    finally:
        ksum.config.warn_on_copy = old
    points_bytes = x.nbytes
    ok = not copies and peak < points_bytes // 2 and bool(control)
    return {"n": n, "dtype": str(x.dtype), "fortran_order": bool(x.flags.f_contiguous),
            "copy_warnings": copies, "numpy_peak_bytes": int(peak),
            "points_bytes": int(points_bytes), "control_c_order_warned": bool(control),
            "control_message": control[0] if control else None, "pass": ok}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "gpu"],
                    help="auto: gpu when ksum sees one, else cpu")
    ap.add_argument("--sizes", type=float, nargs="+",
                    help="default 1e3 1e4 1e5 1e6 on the GPU, 1e3 1e4 3e4 on the CPU")
    ap.add_argument("--precision", default="float64", choices=["float32", "float64"])
    ap.add_argument("--reps", type=int, default=30, help="at most this many timed calls per N")
    ap.add_argument("--budget", type=float, default=4.0, help="seconds of timed calls per N")
    ap.add_argument("--tiny", type=int, default=16)
    ap.add_argument("--tiny-reps", type=int, default=2000)
    ap.add_argument("--zero-copy-n", type=int, default=20000)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: OpenMP's default)")
    ap.add_argument("--no-device-arrays", action="store_true",
                    help="skip the CuPy / PyTorch GPU-array timings")
    ap.add_argument("--json", help="write the results as JSON")
    ap.add_argument("--out", help="also write the Markdown to this file")
    a = ap.parse_args()

    import ksum
    gpu = ksum_gpu_available(ksum)
    backend = a.backend if a.backend != "auto" else ("gpu" if gpu else "cpu")
    if backend == "gpu" and not gpu:
        sys.exit("overhead.py: --backend gpu, but ksum sees no GPU (ksum.info())")
    sizes = [int(s) for s in (a.sizes or ([1e3, 1e4, 1e5, 1e6] if backend == "gpu"
                                          else [1e3, 1e4, 3e4]))]
    dt = np.float32 if a.precision == "float32" else np.float64
    res = {"benchmark": "python_overhead", "machine": machine(), "ksum": ksum.__version__,
           "backend": backend, "precision": a.precision, "kernel": "laplace", "rows": []}
    dev_name, dev_mod = (None, None) if (backend != "gpu" or a.no_device_arrays) else \
        device_module()

    for n in sizes + [a.tiny]:
        x, w = points(n)
        if dt == np.float32:
            x, w = np.asfortranarray(x, dtype=dt), w.astype(dt)
        plan = ksum.DirectSum("laplace", backend=backend, precision=a.precision,
                              threads=a.threads).set_points(x)
        tiny = n == a.tiny
        r = time_call(plan, w, a.tiny_reps if tiny else a.reps, 2.0 if tiny else a.budget)
        r.update(n=n, tiny=tiny)
        if dev_mod is not None:
            try:
                r["device_array"] = time_device(ksum, dev_name, dev_mod, x, w,
                                                a.tiny_reps if tiny else a.reps,
                                                2.0 if tiny else a.budget, a.precision)
            except Exception as e:  # reported, not fatal
                r["device_array"] = {"framework": dev_name, "error": f"{type(e).__name__}: {e}"}
        res["rows"].append(r)
        print(f"N={n}: call {r['call_s'] * 1e3:.4g} ms, execute {r['execute_s'] * 1e3:.4g} ms, "
              f"overhead {r['overhead_s'] * 1e6:.1f} us ({r['overhead_percent']:.2f} %)",
              file=sys.stderr, flush=True)

    res["zero_copy"] = zc = zero_copy_check(ksum, a.zero_copy_n, backend, a.precision)

    big = [r for r in res["rows"] if not r["tiny"]]
    top = max(big, key=lambda r: r["n"]) if big else None
    tiny = next(r for r in res["rows"] if r["tiny"])
    goal_big = None
    if top is not None and top["n"] >= 1_000_000:
        goal_big = top["overhead_percent"] <= GOAL_PERCENT
    res["goals"] = {"percent_at_1e6": GOAL_PERCENT, "fixed_us": GOAL_FIXED_US,
                    "percent_at_1e6_pass": goal_big,
                    "fixed_pass": tiny["overhead_s"] * 1e6 <= GOAL_FIXED_US}

    m = res["machine"]
    where = f"{m['gpu']} (GPU)" if backend == "gpu" else f"{m['cpu']}, {m['cores']} cores"
    lines = [f"Python-call overhead of ksum {res['ksum']} (DirectSum laplace, {a.precision}, "
             f"backend {backend}, {where}; NumPy inputs, Fortran-ordered points): call = wall "
             "time of `plan(w)`, execute = C++ `seconds_execute` of the same call, medians "
             "after a warm-up", ""]
    head = ["N", "reps", "call [ms]", "execute [ms]", "overhead [µs]", "overhead [% of call]"]
    if dev_mod is not None:
        head.append(f"GPU-array call ({dev_name}) [ms]")
    rows = []
    for r in res["rows"]:
        row = [f"{r['n']}" + (" (fixed)" if r["tiny"] else ""), r["reps"],
               fmt_s(r["call_s"] * 1e3), fmt_s(r["execute_s"] * 1e3),
               f"{r['overhead_s'] * 1e6:.1f}", f"{r['overhead_percent']:.2f}"]
        if dev_mod is not None:
            d = r.get("device_array", {})
            row.append(fmt_s(d["call_s"] * 1e3) if "call_s" in d else d.get("error", ""))
        rows.append(row)
    lines.append(table(head, rows))
    lines.append("")
    verdict = {True: "PASS", False: "FAIL", None: "not measured"}
    big_txt = (f"{top['overhead_percent']:.2f} % at N = {top['n']}" if top else "no large N")
    lines.append(f"- goal overhead <= {GOAL_PERCENT:g} % at N = 1e6: "
                 f"{verdict[goal_big]} ({big_txt})")
    lines.append(f"- goal fixed overhead <= {GOAL_FIXED_US:g} µs (N = {a.tiny}): "
                 f"{verdict[res['goals']['fixed_pass']]} ({tiny['overhead_s'] * 1e6:.1f} µs; "
                 f"whole call {tiny['call_s'] * 1e6:.1f} µs)")
    lines.append(f"- zero copy (Fortran-ordered {zc['dtype']} ({zc['n']}, 3) points and "
                 f"weights, warn_on_copy on): {'PASS' if zc['pass'] else 'FAIL'}: "
                 f"{len(zc['copy_warnings'])} CopyWarning; NumPy allocated "
                 f"{zc['numpy_peak_bytes']} bytes at peak during set_points + call (one copy of "
                 f"the points: {zc['points_bytes']}); C-ordered control "
                 f"{'warned' if zc['control_c_order_warned'] else 'did NOT warn'}")
    for msg in zc["copy_warnings"][:3]:
        lines.append(f"  - CopyWarning: {msg}")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    write_json(a.json, res)


if __name__ == "__main__":
    main()
