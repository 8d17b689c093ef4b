#!/usr/bin/env python3
"""ksum's Python package beside its peers, in one process on the same points, with ratios.

Parts, run in the order fmm3d, rbf, kde, keops (--only picks; a peer or a GPU that is missing
gives a line saying what did not run and why, never a crash; the Markdown and JSON are rewritten
after every part, so a time limit keeps the parts done):
  keops  sum_j w_j K(x_i, x_j), Gaussian (eps = 2: exp(-4 r^2)) and Laplace (1/r, 0 at r = 0),
         N = M = 1e5, 1e6, uniform unit cube, float32 on the GPU: ksum.DirectSum on PyTorch
         CUDA tensors (summed in place) vs a pykeops LazyTensor reduction. Times CUDA-synchronised,
         warm-up (KeOps compiles) then the median; error: relative l2 on 64 sampled targets
         against a float64 PyTorch sum.
  fmm3d  ksum.lfmm3d vs FMM3D's lfmm3d (Laplace 1/(4 pi r), charges, potentials at the sources,
         pg = 1), eps 1e-6, N = 1e5, 1e6: the fmm3dpy PyPI wheel, and each FMM3D library built
         from source (bench/python/build_fmm3d.sh; --fmm3d-lib, default .bench-data/fmm3d/
         libfmm3d.so when present) called through ctypes. Relative l2 error of every code
         against a float64 direct sum on --fmm3d-check sampled targets. ksum runs on the GPU
         when it sees one, and on the CPU with the same thread counts as FMM3D.
  rbf    ksum.RBFInterpolator vs scipy.interpolate.RBFInterpolator (thin_plate_spline, degree 1)
         in 2D and 3D at N = 1e3, 2e3, 5e3 data points: fit and evaluation (1e4 points) times
         and max |difference|; then larger N for ksum alone (scipy's dense (N+p)^2 system would
         not fit: its size is printed).
  kde    ksum.gaussian_kde vs scipy.stats.gaussian_kde, d = 2 (a mixture of three Gaussians),
         n = 1e4 and 1e5 data points, m = 1e4 evaluation points: times (construction +
         evaluation), max |difference| relative to the peak and pointwise.

  peers.py [--only keops,fmm3d,rbf,kde] [--quick] [--json FILE] [--out FILE.md]

KeOps 2.3 crashes in its first compile on the GPU image unless the system libstdc++ is loaded
first: when the keops part runs and pykeops is installed, this script re-executes itself with
LD_PRELOAD set (as bench/peers/keops_gauss.py does).
"""
import argparse
import os
import sys
import time

import numpy as np

PARTS = ["fmm3d", "rbf", "kde", "keops"]  # KeOps last: a crash in its compiler loses only it
_LIBSTDCXX = "/lib/x86_64-linux-gnu/libstdc++.so.6"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def parse():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=",".join(PARTS), help="comma-separated parts")
    ap.add_argument("--quick", action="store_true",
                    help="small sizes everywhere (a smoke test on a CPU machine)")
    ap.add_argument("--keops-sizes", type=float, nargs="+", default=[1e5, 1e6])
    ap.add_argument("--keops-reps", type=int, default=5)
    ap.add_argument("--fmm3d-sizes", type=float, nargs="+", default=[1e5, 1e6])
    ap.add_argument("--fmm3d-eps", type=float, default=1e-6)
    ap.add_argument("--fmm3d-threads", default="all",
                    help="comma-separated CPU thread counts for the OpenMP codes ('all': every "
                         "core this process may use)")
    ap.add_argument("--fmm3d-lib", action="append", default=None, metavar="[LABEL=]PATH",
                    help="an FMM3D library built from source (repeatable)")
    ap.add_argument("--fmm3d-wheel-max-n", type=float, default=1e6,
                    help="skip the (single-threaded) wheel above this N")
    ap.add_argument("--fmm3d-check", type=int, default=500)
    ap.add_argument("--fmm3d-reps", type=int, default=3, help="timed calls below N = 5e5")
    ap.add_argument("--rbf-sizes", type=float, nargs="+", default=[1e3, 2e3, 5e3])
    ap.add_argument("--rbf-big", type=float, nargs="+",
                    help="ksum alone (default 2e4 1e5 with a GPU, 2e4 without)")
    ap.add_argument("--rbf-dims", type=int, nargs="+", default=[2, 3])
    ap.add_argument("--rbf-eval", type=float, default=1e4)
    ap.add_argument("--kde-n", type=float, nargs="+", default=[1e4, 1e5])
    ap.add_argument("--kde-m", type=float, default=1e4)
    ap.add_argument("--json", help="write every result as JSON")
    ap.add_argument("--out", help="also write the Markdown to this file")
    a = ap.parse_args()
    a.parts = [p for p in a.only.split(",") if p]
    bad = [p for p in a.parts if p not in PARTS]
    if bad:
        ap.error(f"--only: unknown part(s) {bad}; choose from {PARTS}")
    if a.quick:
        a.keops_sizes, a.fmm3d_sizes, a.fmm3d_check = [2e4], [2e4], 200
        a.rbf_sizes, a.rbf_big, a.rbf_eval = [500, 1000], [3000], 2000
        a.kde_n, a.kde_m = [3000], 2000
    return a


def maybe_reexec(a):
    """Re-runs this script with the system libstdc++ preloaded when KeOps will be used."""
    from importlib.util import find_spec
    if "keops" not in a.parts or not os.path.exists(_LIBSTDCXX):
        return
    if _LIBSTDCXX in os.environ.get("LD_PRELOAD", "") or find_spec("pykeops") is None:
        return
    os.environ["LD_PRELOAD"] = ":".join(filter(None, [_LIBSTDCXX, os.environ.get("LD_PRELOAD")]))
    if os.path.isdir("/usr/local/cuda"):
        os.environ.setdefault("CUDA_PATH", "/usr/local/cuda")
    xopts = [f"-X{k}" if v is True else f"-X{k}={v}" for k, v in sys._xoptions.items()]
    os.execv(sys.executable, [sys.executable] + xopts + sys.argv)


class NotRun(Exception):
    """A peer or a device this part needs is missing: reported, not fatal."""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --- keops --------------------------------------------------------------------------------------

def part_keops(a, ksum, C):
    if not C.ksum_gpu_available(ksum):
        raise NotRun("ksum sees no GPU (CUDA backend not built or no GPU visible)")
    try:
        import torch
        if not torch.cuda.is_available():
            raise NotRun("PyTorch sees no CUDA device")
    except ImportError as e:
        raise NotRun(f"PyTorch not importable ({e})")
    try:
        import pykeops
        from pykeops.torch import LazyTensor
    except Exception as e:
        raise NotRun(f"pykeops not importable ({type(e).__name__}: {e}); carry its wheels in "
                     ".whl/ (pykeops, keopscore)")
    eps = {"gaussian": 2.0, "laplace": 1.0}

    def keops_sum(kernel, x, y, w):
        xi, xj = LazyTensor(y[:, None, :]), LazyTensor(x[None, :, :])
        d2 = ((xi - xj) ** 2).sum(-1)
        k = d2.rsqrt() if kernel == "laplace" else (-(eps[kernel] ** 2) * d2).exp()
        return k @ w

    def reference(kernel, x, y, w, idx):
        xd, yd, wd = x.double(), y.double(), w.double().reshape(-1)
        out = []
        for b in range(0, len(idx), 8):
            # cdist's matrix-product formula loses the small distances: the direct one
            r = torch.cdist(yd[idx[b:b + 8]], xd, compute_mode="donot_use_mm_for_euclid_dist")
            if kernel == "laplace":
                k = torch.where(r > 0, 1.0 / r, torch.zeros_like(r))
            else:
                k = torch.exp(-(eps[kernel] * r) ** 2)
            out.append(k @ wd)
        return torch.cat(out)

    sync = torch.cuda.synchronize
    rows = []
    for n in [int(s) for s in a.keops_sizes]:
        g = torch.Generator(device="cuda").manual_seed(n)
        x = torch.rand(n, 3, device="cuda", dtype=torch.float32, generator=g)
        y = torch.rand(n, 3, device="cuda", dtype=torch.float32, generator=g)
        w = torch.rand(n, 1, device="cuda", dtype=torch.float32, generator=g) - 0.5
        idx = torch.randint(0, n, (64,), device="cuda", generator=g)
        for kernel in ("gaussian", "laplace"):
            # Separate targets y (independent uniform points, N = M): every pair counts in both
            # codes. (Targets equal to the sources would put a 1/0 pair in every laplace row:
            # KeOps then returns inf and ksum's GPU fast path falls back to a checked sum.)
            plan = ksum.DirectSum(kernel, eps[kernel], backend="gpu")
            t_one, _ = C.median_time(lambda: plan.set_points(x, y)(w[:, 0]), a.keops_reps,
                                     sync=sync)
            plan.set_points(x, y)
            t_call, _ = C.median_time(lambda: plan(w[:, 0]), a.keops_reps, sync=sync)
            uk = plan(w[:, 0])
            row = {"n": n, "kernel": kernel, "ksum_s": t_one, "ksum_call_s": t_call}
            ref = reference(kernel, x, y, w, idx)
            rel = lambda u: float(torch.linalg.norm(u.double().reshape(-1)[idx] - ref)
                                  / torch.linalg.norm(ref))
            row["ksum_error"] = rel(uk)
            try:
                t_k, _ = C.median_time(lambda: keops_sum(kernel, x, y, w), a.keops_reps,
                                       sync=sync)
                row.update(keops_s=t_k, keops_error=rel(keops_sum(kernel, x, y, w)),
                           ratio=t_k / t_one)
            except Exception as e:  # one failed case is reported, the others still run
                row["keops_failed"] = f"{type(e).__name__}: {e}"
            rows.append(row)
            log(f"keops {row}")
        del x, y, w
        torch.cuda.empty_cache()
    dev = torch.cuda.get_device_name(0)
    text = (f"KeOps {getattr(pykeops, '__version__', '?')} vs ksum {ksum.__version__} on {dev}: "
            "sum_j w_j K(y_i, x_j), N = M, independent uniform points in the unit cube, float32, "
            "PyTorch CUDA tensors; "
            f"median of {a.keops_reps} after a warm-up; ksum = set_points + call (call alone in "
            "brackets); error: relative l2 on 64 targets vs float64\n\n")
    text += C.table(["kernel", "N", "ksum [s]", "KeOps [s]", "KeOps / ksum", "ksum error",
                     "KeOps error"],
                    [[r["kernel"], f"{r['n']:.0e}",
                      f"{r['ksum_s']:.4g} ({r['ksum_call_s']:.4g})",
                      C.fmt_s(r.get("keops_s")) or f"failed: {r.get('keops_failed')}",
                      f"{r['ratio']:.2f}" if "ratio" in r else "",
                      f"{r['ksum_error']:.1e}",
                      f"{r['keops_error']:.1e}" if "keops_error" in r else ""] for r in rows])
    return text, {"device": dev, "rows": rows}


# --- fmm3d --------------------------------------------------------------------------------------

def part_fmm3d(a, ksum, C):
    import fmm3d_lib as F
    cores = len(os.sched_getaffinity(0))
    threads = [cores if t == "all" else int(t) for t in a.fmm3d_threads.split(",")]
    notes, codes = [], []
    try:
        wheel = F.wheel()
        codes.append(("wheel", wheel))
    except F.PeerError as e:
        notes.append(f"fmm3dpy wheel did not run: {e}")
    libs = a.fmm3d_lib
    if libs is None:
        default = os.path.join(ROOT, ".bench-data", "fmm3d", "libfmm3d.so")
        libs = [f"FMM3D source build={default}"] if os.path.exists(default) else []
        if not libs:
            notes.append("FMM3D source build did not run: no .bench-data/fmm3d/libfmm3d.so "
                         "(make it with bench/python/build_fmm3d.sh)")
    for spec in libs:
        label, _, path = spec.rpartition("=")
        try:
            codes.append(("source", F.FortranLib(path, label or f"source build ({path})")))
        except F.PeerError as e:
            notes.append(f"FMM3D {label or path} did not run: {e}")
    gpu = C.ksum_gpu_available(ksum)
    eps = a.fmm3d_eps
    rows = []
    warm = np.random.default_rng(0).random((3, 20000))

    def run(label, fn, nthreads, src, q, check, ref, reps):
        k = min(src.shape[1], 20000)
        fn(warm[:, :k], np.ones(k))  # loads the library, starts thread pools, GPU context
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            u = fn(src, q)
            ts.append(time.perf_counter() - t0)
        rows.append({"n": src.shape[1], "code": label, "threads": nthreads,
                     "seconds": float(np.median(ts)), "all_seconds": ts,
                     "error": F.rel_l2(u[check], ref)})
        log(f"fmm3d {rows[-1]}")

    for n in [int(s) for s in a.fmm3d_sizes]:
        rng = np.random.default_rng(n)
        src, q = rng.random((3, n)), rng.random(n) - 0.5
        check = np.linspace(0, n - 1, min(n, a.fmm3d_check)).astype(np.int64)
        ref = F.direct_reference(src, q, check)
        reps = a.fmm3d_reps if n < 500_000 else 1
        case = (src, q, check, ref)
        if gpu:
            run("ksum.lfmm3d (GPU)", lambda s, c: ksum.lfmm3d(eps, s, c, backend="gpu").pot,
                "GPU", *case, max(reps, 3))
        for t in threads:
            run("ksum.lfmm3d (CPU)",
                lambda s, c: ksum.lfmm3d(eps, s, c, backend="cpu", threads=t).pot, t, *case, reps)
            for kind, code in codes:
                if kind != "wheel":
                    code.set_threads(t)
                    run(code.label, lambda s, c: code(eps, s, c), t, *case, reps)
        for kind, code in codes:
            if kind != "wheel":
                continue
            if n > a.fmm3d_wheel_max_n:
                notes.append(f"fmm3dpy wheel not run at N = {n} (--fmm3d-wheel-max-n)")
                continue
            # fmm3dpy 2.1.0's wheel has no OpenMP: one thread, compared with ksum on one
            run(code.label, lambda s, c: code(eps, s, c),
                "OpenMP default" if code.openmp else "1 (no OpenMP)", *case, reps)
    ks = {(r["n"], r["threads"]): r["seconds"] for r in rows if r["code"].startswith("ksum")}
    for r in rows:
        k_gpu = ks.get((r["n"], "GPU"))
        r["over_ksum_gpu"] = r["seconds"] / k_gpu if k_gpu else None
        r["over_ksum_cpu"], r["ksum_cpu_threads"] = None, None
        if r["threads"] == "GPU":
            continue
        # a single-threaded code against ksum on one thread when measured, else on the most
        t = r["threads"] if isinstance(r["threads"], int) else (1 if (r["n"], 1) in ks
                                                                 else max(threads))
        if (r["n"], t) in ks:
            r["over_ksum_cpu"], r["ksum_cpu_threads"] = r["seconds"] / ks[(r["n"], t)], t
    m = C.machine()
    text = (f"FMM3D lfmm3d vs ksum.lfmm3d ({ksum.__version__}): Laplace, charges, potentials at "
            f"the sources (pg = 1), eps {eps:g}, uniform unit cube; {m['cpu']}, {cores} cores"
            f"{', ' + m['gpu'] if gpu else ''}. Each call builds its tree (one-shot calls); "
            "median of the timed calls (1 at N >= 5e5) after a warm-up at N = 2e4; error: "
            f"relative l2 vs a float64 direct sum on {a.fmm3d_check} sampled sources. "
            "'÷ ksum CPU': time over ksum's on the same number of CPU threads.\n\n")
    text += C.table(["N", "code", "threads", "time [s]", "rel. l2 error", "÷ ksum GPU",
                     "÷ ksum CPU"],
                    [[f"{r['n']:.0e}", r["code"], r["threads"], f"{r['seconds']:.4g}",
                      f"{r['error']:.2e}",
                      "" if r["over_ksum_gpu"] is None else f"{r['over_ksum_gpu']:.2f}",
                      "" if r["over_ksum_cpu"] is None else f"{r['over_ksum_cpu']:.2f}"
                      + ("" if r["ksum_cpu_threads"] in (None, r["threads"])
                         else f" (ksum on {r['ksum_cpu_threads']})")]
                     for r in rows])
    for _, code in codes:
        info = F.openmp_info(code.path)
        built = os.path.join(os.path.dirname(code.path), "BUILD.txt")
        how = " ".join(open(built).read().split()) if os.path.exists(built) else ""
        notes.append(f"{code.label}: {code.path}; OpenMP: {'yes' if info.get('openmp') else 'no'}"
                     f"; needs {', '.join(info.get('needed', []))}" + (f"; {how}" if how else ""))
    if notes:
        text += "\n\n" + "\n".join(f"- {s}" for s in notes)
    return text, {"eps": eps, "threads": threads, "rows": rows, "notes": notes}


# --- rbf ----------------------------------------------------------------------------------------

def test_function(y):
    return np.sin(2 * np.pi * y[:, 0]) * np.cos(2 * np.pi * y[:, 1]) + y[:, -1] ** 2


def part_rbf(a, ksum, C):
    if a.rbf_big is None:
        a.rbf_big = [2e4, 1e5] if C.ksum_gpu_available(ksum) else [2e4]
    try:
        from scipy.interpolate import RBFInterpolator as Scipy
        import scipy
        scipy_note = None
    except Exception as e:
        Scipy, scipy_note = None, f"scipy not importable ({type(e).__name__}: {e})"
    rows = []
    for d in a.rbf_dims:  # warm-up: thread pools, first-call imports, on 100 points
        yw = np.random.default_rng(0).random((100, d))
        ksum.RBFInterpolator(yw, test_function(yw))(yw)
        if Scipy is not None:
            Scipy(yw, test_function(yw))(yw)
    for d in a.rbf_dims:
        rng = np.random.default_rng(d)
        x = rng.random((int(a.rbf_eval), d))
        fx = test_function(x)
        for n in [int(s) for s in a.rbf_sizes] + [int(s) for s in a.rbf_big]:
            big = n in [int(s) for s in a.rbf_big] and n not in [int(s) for s in a.rbf_sizes]
            y = rng.random((n, d))
            f = test_function(y)
            r = {"d": d, "n": n, "m": len(x)}
            t0 = time.perf_counter()
            ki = ksum.RBFInterpolator(y, f, kernel="thin_plate_spline")
            r["ksum_fit_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            uk = ki(x)
            r["ksum_eval_s"] = time.perf_counter() - t0
            r["ksum_solver"] = str(ki.stats.get("solver", ""))
            r["ksum_error_vs_f"] = float(np.max(np.abs(uk - fx)))
            p = d + 1
            r["scipy_bytes"] = 8 * (n + p) ** 2
            if Scipy is None:
                r["scipy"] = f"not run: {scipy_note}"
            elif big:
                r["scipy"] = (f"not run: n² memory = {r['scipy_bytes'] / 1e9:.3g} GB "
                              f"(dense (N+{p})² float64 system)")
            else:
                t0 = time.perf_counter()
                si = Scipy(y, f, kernel="thin_plate_spline")
                r["scipy_fit_s"] = time.perf_counter() - t0
                t0 = time.perf_counter()
                us = si(x)
                r["scipy_eval_s"] = time.perf_counter() - t0
                r["max_abs_diff"] = float(np.max(np.abs(uk - us)))
                r["scipy_error_vs_f"] = float(np.max(np.abs(us - fx)))
                r["ratio"] = ((r["scipy_fit_s"] + r["scipy_eval_s"])
                              / (r["ksum_fit_s"] + r["ksum_eval_s"]))
            rows.append(r)
            log(f"rbf {r}")
    text = (f"RBFInterpolator: ksum {ksum.__version__} (backend auto) vs scipy"
            f"{' ' + scipy.__version__ if Scipy else ''}, thin_plate_spline, degree 1, N data "
            "points uniform in the unit cube, f = sin(2πx)cos(2πy) + (last coordinate)², "
            f"{int(a.rbf_eval)} evaluation points; times in seconds (fit = constructor)\n\n")
    text += C.table(["d", "N", "ksum fit", "ksum eval", "ksum solver", "scipy fit", "scipy eval",
                     "scipy / ksum", "max |ksum − scipy|", "max |ksum − f|"],
                    [[r["d"], r["n"], f"{r['ksum_fit_s']:.4g}", f"{r['ksum_eval_s']:.4g}",
                      r["ksum_solver"], C.fmt_s(r.get("scipy_fit_s")) or r.get("scipy"),
                      C.fmt_s(r.get("scipy_eval_s")),
                      f"{r['ratio']:.2f}" if "ratio" in r else "",
                      f"{r['max_abs_diff']:.2e}" if "max_abs_diff" in r else "",
                      f"{r['ksum_error_vs_f']:.2e}"] for r in rows])
    return text, {"rows": rows}


# --- kde ----------------------------------------------------------------------------------------

def mixture(rng, n):
    centres = np.array([[0.0, 0.0], [3.0, 1.0], [-1.0, 2.5]])
    scales = np.array([[1.0, 0.5], [0.7, 1.2], [0.4, 0.4]])
    k = rng.integers(0, 3, n)
    return (centres[k] + scales[k] * rng.standard_normal((n, 2))).T  # (2, n) as SciPy takes


def part_kde(a, ksum, C):
    try:
        import scipy
        from scipy.stats import gaussian_kde as Scipy
    except Exception as e:
        Scipy, scipy_note = None, f"scipy not importable ({type(e).__name__}: {e})"
    rows = []
    rng = np.random.default_rng(5)
    pts = mixture(rng, int(a.kde_m))
    ksum.gaussian_kde(mixture(rng, 100))(pts[:, :100])  # warm-up
    if Scipy is not None:
        Scipy(mixture(rng, 100))(pts[:, :100])
    for n in [int(s) for s in a.kde_n]:
        data = mixture(rng, n)
        r = {"n": n, "m": pts.shape[1], "d": 2}
        t0 = time.perf_counter()
        pk = ksum.gaussian_kde(data)(pts)
        r["ksum_s"] = time.perf_counter() - t0
        if Scipy is None:
            r["scipy"] = f"not run: {scipy_note}"
        else:
            t0 = time.perf_counter()
            ps = Scipy(data)(pts)
            r["scipy_s"] = time.perf_counter() - t0
            diff = np.abs(pk - ps)
            r["max_diff_over_peak"] = float(diff.max() / ps.max())
            r["max_rel_diff"] = float(np.max(diff / ps))
            r["ratio"] = r["scipy_s"] / r["ksum_s"]
        rows.append(r)
        log(f"kde {r}")
    text = (f"gaussian_kde: ksum {ksum.__version__} (backend auto, tol 1e-10) vs scipy"
            f"{' ' + scipy.__version__ if Scipy else ''}, d = 2, a mixture of three Gaussians, "
            "Scott's bandwidth, times = construction + evaluation [s]\n\n")
    text += C.table(["n data", "m points", "ksum [s]", "scipy [s]", "scipy / ksum",
                     "max |Δ| / max p", "max |Δ| / p"],
                    [[r["n"], r["m"], f"{r['ksum_s']:.4g}",
                      C.fmt_s(r.get("scipy_s")) or r.get("scipy"),
                      f"{r['ratio']:.2f}" if "ratio" in r else "",
                      f"{r['max_diff_over_peak']:.1e}" if "ratio" in r else "",
                      f"{r['max_rel_diff']:.1e}" if "ratio" in r else ""] for r in rows])
    return text, {"rows": rows}


def main():
    a = parse()
    maybe_reexec(a)
    sys.path.insert(0, HERE)
    import _common as C
    try:
        import ksum
    except Exception as e:
        sys.exit(f"peers.py: import ksum failed ({e}); set PYTHONPATH to <build>/python")
    res = {"benchmark": "python_peers", "machine": C.machine(), "ksum": ksum.__version__,
           "parts": {}}
    out = [f"# ksum Python peers ({', '.join(a.parts)})"]
    fns = {"keops": part_keops, "fmm3d": part_fmm3d, "rbf": part_rbf, "kde": part_kde}
    for part in a.parts:
        t0 = time.perf_counter()
        try:
            text, data = fns[part](a, ksum, C)
            data["seconds"] = time.perf_counter() - t0
        except NotRun as e:
            text, data = f"{part}: did not run: {e}", {"not_run": str(e)}
        except Exception as e:  # a broken peer is reported; the other parts still run
            import traceback
            traceback.print_exc()
            text, data = (f"{part}: failed: {type(e).__name__}: {e}",
                          {"failed": f"{type(e).__name__}: {e}"})
        res["parts"][part] = data
        out.append(text)
        print("\n" + text + "\n", flush=True)
        # after every part: a time limit that stops a later part keeps what is done
        if a.out:
            with open(a.out, "w") as f:
                f.write("\n\n".join(out) + "\n")
        C.write_json(a.json, res)


if __name__ == "__main__":
    main()
