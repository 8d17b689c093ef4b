#!/usr/bin/env python3
"""FMM2D (Flatiron's fmm2dpy, PyPI) on the points that fmm2d_bench saved: time, error, ratio.

  fmm2d_peer.py FILE.npz [--json OUT.json] [--repeat 3] [--threads T] [--check 500] [--header]
  fmm2d_peer.py --self-test [--n 20000] [--eps 1e-6] [--threads T]

FILE.npz (written by bench/fmm2d_bench):
  sources          (n,2) float64   source points z_j = x + iy
  strengths        (n,)  complex128 q_j
  kernel           'harmonic' or 'log'
  eps              float, the tolerance both codes were asked for
  ksum_seconds     float, ksum's execute time on the same points
  targets          (m,2) float64, optional: evaluate there instead of at the sources
  reference_index  int64 (k,), optional: indices into the outputs (targets, else sources)
  reference        complex128 (k,), optional: exact values of the same kernel at those outputs
  ksum_error       float, optional: ksum's error, copied into the row and the JSON

Kernels (conventions checked numerically against a direct sum, see --self-test):
  harmonic  u(z_i) = sum_j q_j / (z_i - z_j)  = FMM2D cfmm2d's gradient (pg=2 / pgt=2)
  log       u(z_i) = sum_j q_j log|z_i - z_j| = real part of FMM2D cfmm2d's potential (pg=1 /
            pgt=1) for real q_j. FMM2D's imaginary part depends on the branches of its
            expansions, so the log kernel takes real strengths only and compares real parts.
At the sources (no `targets`) the self term j = i is left out, as in ksum.

Runs cfmm2d once as warm-up, then --repeat times, and reports the median. Error (ksum's
definition): max_i |u_i - ref_i| / max_i |ref_i| over the reference outputs; without `reference`
in the file, over --check outputs against a direct float64 sum here ("direct-sample").
Prints one Markdown row (--header: the header line before it) and writes --json.

fmm2dpy 0.0.5 (the last release) has Linux wheels up to CPython 3.11, built against NumPy 1.x,
so `import fmm2dpy` fails under NumPy 2 or CPython 3.12. This script therefore calls the same
compiled FMM2D routines that fmm2dpy.cfmm2d calls (cfmm2d_s_c_p, cfmm2d_s_c_g, cfmm2d_t_c_p,
cfmm2d_t_c_g in the wheel's lfmm2d_fortran extension, Fortran calling convention) through ctypes,
which works with any CPython 3 and NumPy. --api fmm2dpy uses fmm2dpy.cfmm2d itself where it
imports (CPython <= 3.11 with NumPy < 2); both give the same numbers.
Install: here `pip install fmm2dpy==0.0.5`; on the GPU machine (no network, Python 3.12) from the
carried wheel: pip install --no-deps --target /tmp/ksum-peers --python-version 3.11
--only-binary=:all: .bench-data/wheels/fmm2dpy-*.whl, then PYTHONPATH=/tmp/ksum-peers.
FMM2D runs on OpenMP threads: --threads T sets OMP_NUM_THREADS before the library loads.
"""
import argparse
import ctypes
import glob
import importlib.util
import json
import os
import sys
import time

import numpy as np

PROG = "fmm2d_peer"
INSTALL_HINT = (
    "install it with `python3 -m pip install fmm2dpy==0.0.5`, or from the carried wheel: "
    "`python3 -m pip install --no-deps --target /tmp/ksum-peers --python-version 3.11 "
    "--only-binary=:all: .bench-data/wheels/fmm2dpy-*.whl` and PYTHONPATH=/tmp/ksum-peers, "
    "or name the library with --lib")


class PeerError(Exception):
    pass


def threads_in_use():
    v = os.environ.get("OMP_NUM_THREADS", "")
    if v.strip().isdigit() and int(v) > 0:
        return int(v)
    return len(os.sched_getaffinity(0))  # libgomp's default: every CPU this process may use


def fmm2dpy_version():
    try:
        from importlib.metadata import version
        return version("fmm2dpy")
    except Exception:
        return "unknown"


class Fortran:
    """fmm2dpy's compiled cfmm2d_* routines (lfmm2d_fortran extension), called through ctypes."""
    name = "fortran"

    def __init__(self, lib=None):
        if lib is None:
            spec = importlib.util.find_spec("fmm2dpy")  # finds the package, imports nothing
            if spec is None or not spec.submodule_search_locations:
                raise PeerError("fmm2dpy is not installed (not on sys.path); " + INSTALL_HINT)
            hits = []
            for d in spec.submodule_search_locations:
                hits += glob.glob(os.path.join(d, "lfmm2d_fortran*.so"))
            if not hits:
                raise PeerError(f"fmm2dpy at {list(spec.submodule_search_locations)} has no "
                                f"lfmm2d_fortran*.so; " + INSTALL_HINT)
            lib = sorted(hits)[0]
        if not os.path.isfile(lib):
            raise PeerError(f"--lib {lib}: no such file")
        try:
            self.dll = ctypes.CDLL(lib)
        except OSError as e:
            raise PeerError(f"cannot load {lib}: {e}")
        self.lib = lib
        p, i, d = ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_double)
        # Fortran signatures (fmm2d src/laplace/cfmm2dwrap.f; fmm2dpy's f2py docstrings agree):
        #   cfmm2d_s_c_p(eps,ns,sources,charge,pot,ier)
        #   cfmm2d_s_c_g(eps,ns,sources,charge,pot,grad,ier)
        #   cfmm2d_t_c_p(eps,ns,sources,charge,nt,targ,pottarg,ier)
        #   cfmm2d_t_c_g(eps,ns,sources,charge,nt,targ,pottarg,gradtarg,ier)
        sig = {"cfmm2d_s_c_p_": [d, i, p, p, p, i], "cfmm2d_s_c_g_": [d, i, p, p, p, p, i],
               "cfmm2d_t_c_p_": [d, i, p, p, i, p, p, i],
               "cfmm2d_t_c_g_": [d, i, p, p, i, p, p, p, i]}
        self.f = {}
        for name, args in sig.items():
            try:
                fn = getattr(self.dll, name)
            except AttributeError:
                raise PeerError(f"{lib} has no routine {name}; is it fmm2dpy's lfmm2d_fortran?")
            fn.argtypes, fn.restype = args, None
            self.f[name] = fn

    def run(self, eps, src, q, tgt, kernel):
        """src (n,2) and tgt (m,2) C-contiguous float64 are Fortran's (2,n) arrays as they lie."""
        n = src.shape[0]
        ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)
        e, ns, ier = ctypes.c_double(eps), ctypes.c_int(n), ctypes.c_int(0)
        if tgt is None:
            pot = np.empty(n, np.complex128)
            if kernel == "log":
                self.f["cfmm2d_s_c_p_"](e, ns, ptr(src), ptr(q), ptr(pot), ier)
                out = pot
            else:
                out = np.empty(n, np.complex128)
                self.f["cfmm2d_s_c_g_"](e, ns, ptr(src), ptr(q), ptr(pot), ptr(out), ier)
        else:
            m = tgt.shape[0]
            nt, pot = ctypes.c_int(m), np.empty(m, np.complex128)
            if kernel == "log":
                self.f["cfmm2d_t_c_p_"](e, ns, ptr(src), ptr(q), nt, ptr(tgt), ptr(pot), ier)
                out = pot
            else:
                out = np.empty(m, np.complex128)
                self.f["cfmm2d_t_c_g_"](e, ns, ptr(src), ptr(q), nt, ptr(tgt), ptr(pot),
                                        ptr(out), ier)
        if ier.value != 0:
            raise PeerError(f"FMM2D returned ier = {ier.value} (out of memory?)")
        return out


class Fmm2dpy:
    """fmm2dpy.cfmm2d itself (needs an fmm2dpy build that imports with this Python and NumPy)."""
    name = "fmm2dpy"

    def __init__(self):
        try:
            import fmm2dpy
        except Exception as e:
            raise PeerError(f"import fmm2dpy failed ({type(e).__name__}: {e}); fmm2dpy 0.0.5 "
                            "imports only on CPython <= 3.11 with NumPy < 2 -- use --api fortran, "
                            "or " + INSTALL_HINT)
        self.m = fmm2dpy
        self.lib = fmm2dpy.__file__

    def run(self, eps, src, q, tgt, kernel):
        pg = 1 if kernel == "log" else 2
        if tgt is None:
            o = self.m.cfmm2d(eps=eps, sources=src.T, charges=q, pg=pg)
            u = o.pot if kernel == "log" else o.grad
        else:
            o = self.m.cfmm2d(eps=eps, sources=src.T, charges=q, targets=tgt.T, pgt=pg)
            u = o.pottarg if kernel == "log" else o.gradtarg
        if getattr(o, "ier", 0):
            raise PeerError(f"FMM2D returned ier = {o.ier}")
        return np.asarray(u).reshape(-1)


def direct(src, q, tgt_pts, kernel):
    """fp64 direct sum at the points tgt_pts (k,2); a source at distance 0 is left out."""
    z = src[:, 0] + 1j * src[:, 1]
    zt = tgt_pts[:, 0] + 1j * tgt_pts[:, 1]
    out = np.empty(len(zt), np.complex128)
    step = max(1, int(4e6 // max(1, len(z))))
    for a in range(0, len(zt), step):
        d = zt[a:a + step, None] - z[None, :]
        self_ = d == 0
        d[self_] = 1
        if kernel == "log":
            k = np.log(np.abs(d))
        else:
            k = 1 / d
        k[self_] = 0
        out[a:a + step] = (k * q).sum(axis=1)  # not k @ q: OpenBLAS threads would spin on the
        # cores FMM2D's OpenMP threads time on next
    return out


def rel_error(u, ref, kernel):
    if kernel == "log":  # only the real part is branch-independent (see the header)
        u, ref = u.real, ref.real
    den = np.max(np.abs(ref))
    return float(np.max(np.abs(u - ref)) / den) if den > 0 else float(np.max(np.abs(u - ref)))


def time_runs(backend, eps, src, q, tgt, kernel, repeat):
    u = backend.run(eps, src, q, tgt, kernel)  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        u = backend.run(eps, src, q, tgt, kernel)
        times.append(time.perf_counter() - t0)
    return u, float(np.median(times)), times


def make_backend(a):
    return Fmm2dpy() if a.api == "fmm2dpy" else Fortran(a.lib)


def load_npz(path):
    if not os.path.isfile(path):
        raise PeerError(f"no such file: {path}")
    try:
        z = np.load(path, allow_pickle=False)
    except Exception as e:
        raise PeerError(f"{path}: not a readable .npz ({e})")
    keys = set(z.files)

    def need(k):
        if k not in keys:
            raise PeerError(f"{path}: missing key '{k}' (has: {', '.join(sorted(keys))})")
        return z[k]

    src = np.ascontiguousarray(need("sources"), dtype=np.float64)
    if src.ndim != 2 or src.shape[1] != 2 or src.shape[0] < 1:
        raise PeerError(f"{path}: 'sources' must be (n,2), is {src.shape}")
    n = src.shape[0]
    if n >= 2**31:
        raise PeerError(f"{path}: n = {n} exceeds FMM2D's 32-bit integers")
    q = np.ascontiguousarray(need("strengths"), dtype=np.complex128).reshape(-1)
    if q.shape[0] != n:
        raise PeerError(f"{path}: 'strengths' has {q.shape[0]} values for {n} sources")
    kernel = str(need("kernel"))
    if kernel not in ("harmonic", "log"):
        raise PeerError(f"{path}: kernel '{kernel}' is neither 'harmonic' nor 'log'")
    eps = float(need("eps"))
    if not 0 < eps < 1:
        raise PeerError(f"{path}: eps = {eps} is outside (0, 1)")
    ksum_s = float(need("ksum_seconds"))
    if kernel == "log" and np.any(q.imag != 0):
        raise PeerError(f"{path}: the log kernel needs real strengths (index "
                        f"{int(np.flatnonzero(q.imag != 0)[0])} is complex): FMM2D's imaginary "
                        "part depends on the log branch")
    tgt = None
    if "targets" in keys:
        tgt = np.ascontiguousarray(z["targets"], dtype=np.float64)
        if tgt.ndim != 2 or tgt.shape[1] != 2 or tgt.shape[0] < 1:
            raise PeerError(f"{path}: 'targets' must be (m,2), is {tgt.shape}")
    nout = n if tgt is None else tgt.shape[0]
    ref_idx = ref = None
    if ("reference_index" in keys) != ("reference" in keys):
        raise PeerError(f"{path}: 'reference_index' and 'reference' come together")
    if "reference" in keys:
        ref_idx = np.asarray(z["reference_index"], dtype=np.int64).reshape(-1)
        ref = np.asarray(z["reference"], dtype=np.complex128).reshape(-1)
        if ref_idx.shape != ref.shape:
            raise PeerError(f"{path}: {ref_idx.size} reference_index but {ref.size} reference")
        bad = (ref_idx < 0) | (ref_idx >= nout)
        if bad.any():
            raise PeerError(f"{path}: reference_index {int(ref_idx[bad][0])} is outside "
                            f"[0, {nout})")
    for name, arr in (("sources", src), ("strengths", q), ("targets", tgt)):
        if arr is not None and not np.all(np.isfinite(arr)):
            raise PeerError(f"{path}: '{name}' has a non-finite value")
    ksum_err = float(z["ksum_error"]) if "ksum_error" in keys else None
    return src, q, tgt, kernel, eps, ksum_s, ref_idx, ref, ksum_err


HEADER = ("| peer | kernel | n | outputs | eps | threads | FMM2D s | FMM2D error | ksum s "
          "| FMM2D / ksum | ksum error |\n|---|---|---|---|---|---|---|---|---|---|---|")


def run_file(a):
    src, q, tgt, kernel, eps, ksum_s, ref_idx, ref, ksum_err = load_npz(a.file)
    backend = make_backend(a)
    u, t, times = time_runs(backend, eps, src, q, tgt, kernel, a.repeat)
    pts = src if tgt is None else tgt
    if ref is not None:
        err, how = rel_error(u[ref_idx], ref, kernel), "npz reference"
    elif a.check > 0:
        idx = np.unique(np.linspace(0, len(pts) - 1, min(len(pts), a.check)).astype(np.int64))
        err = rel_error(u[idx], direct(src, q, pts[idx], kernel), kernel)
        how = f"direct-sample ({len(idx)} outputs)"
    else:
        err, how = None, None
    ratio = t / ksum_s if ksum_s > 0 else None
    res = {"peer": "FMM2D cfmm2d", "fmm2dpy_version": fmm2dpy_version(), "api": backend.name,
           "library": backend.lib, "kernel": kernel, "n": int(src.shape[0]),
           "outputs": int(len(pts)), "at_sources": tgt is None, "eps": eps,
           "threads": threads_in_use(), "repeat": a.repeat, "fmm2d_s": t, "fmm2d_runs_s": times,
           "ksum_s": ksum_s, "ratio_fmm2d_over_ksum": ratio, "fmm2d_error": err,
           "error_reference": how, "ksum_error": ksum_err, "source_file": a.file}
    f = lambda x, spec: "-" if x is None else format(x, spec)
    if a.header:
        print(HEADER)
    print(f"| FMM2D cfmm2d ({backend.name}) | {kernel} | {res['n']} | {res['outputs']} | "
          f"{eps:.0e} | {res['threads']} | {t:.3f} | {f(err, '.2e')} | {ksum_s:.3f} | "
          f"**{f(ratio, '.2f')}x** | {f(ksum_err, '.2e')} |")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(res, fh, indent=2)
            fh.write("\n")
    return 0


def self_test(a):
    n, eps = a.n, a.eps
    rng = np.random.default_rng(20261122)
    src = rng.random((n, 2))
    q = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    tgt = rng.random((500, 2))
    idx = np.unique(np.linspace(0, n - 1, min(n, 500)).astype(np.int64))
    backend = make_backend(a)
    print(f"{PROG} self-test: FMM2D cfmm2d via {backend.name} ({backend.lib}), fmm2dpy "
          f"{fmm2dpy_version()}, n = {n} uniform in the unit square, eps = {eps:g}, "
          f"{threads_in_use()} threads, median of {a.repeat} after a warm-up")
    cases = [("harmonic at sources (sum_j!=i q_j/(z_i-z_j))", "harmonic", q, None),
             ("log at sources (sum_j!=i q_j log|z_i-z_j|, real q)", "log", q.real + 0j, None),
             ("harmonic at 500 other targets", "harmonic", q, tgt)]
    ok, res = True, []
    for label, kernel, qq, tt in cases:
        u, t, _ = time_runs(backend, eps, src, qq, tt, kernel, a.repeat)
        sel = idx if tt is None else np.arange(len(tt))
        err = rel_error(u[sel], direct(src, qq, (src if tt is None else tt)[sel], kernel), kernel)
        good = err <= 10 * eps
        ok &= good
        res.append({"case": label, "kernel": kernel, "fmm2d_s": t, "error": err, "pass": good})
        print(f"  {label:52s} {t:8.3f} s  error {err:.2e} vs direct on {len(sel)} outputs  "
              f"{'ok' if good else 'FAIL (> 10 eps)'}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"self_test": res, "n": n, "eps": eps, "threads": threads_in_use(),
                       "api": backend.name, "pass": bool(ok)}, fh, indent=2)
            fh.write("\n")
    print(f"{PROG} self-test: {'passed' if ok else 'FAILED'}")
    return 0 if ok else 1


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", nargs="?", help=".npz written by fmm2d_bench")
    ap.add_argument("--json", help="write the result as JSON to this path")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs after one warm-up (median)")
    ap.add_argument("--threads", type=int, help="OMP_NUM_THREADS for FMM2D (default: inherited)")
    ap.add_argument("--check", type=int, default=500,
                    help="without a reference in the file: outputs checked against a direct sum "
                         "here (0: none)")
    ap.add_argument("--header", action="store_true", help="print the table header first")
    ap.add_argument("--api", choices=("fortran", "fmm2dpy"), default="fortran",
                    help="fortran: fmm2dpy's compiled routines via ctypes (default); "
                         "fmm2dpy: fmm2dpy.cfmm2d")
    ap.add_argument("--lib", help="path of fmm2dpy's lfmm2d_fortran*.so (default: found on "
                                  "sys.path)")
    ap.add_argument("--self-test", action="store_true",
                    help="random points, cfmm2d against a direct numpy sum; no file needed")
    ap.add_argument("--n", type=int, default=20000, help="--self-test: number of points")
    ap.add_argument("--eps", type=float, default=1e-6, help="--self-test: tolerance")
    a = ap.parse_args(argv)
    if a.repeat < 1:
        ap.error("--repeat must be at least 1")
    if a.threads is not None:
        if a.threads < 1:
            ap.error("--threads must be at least 1")
        os.environ["OMP_NUM_THREADS"] = str(a.threads)  # before libgomp loads with FMM2D
    if a.self_test == (a.file is not None):
        ap.error("give either an .npz file or --self-test")
    if a.self_test and (a.n < 2 or not 0 < a.eps < 1):
        ap.error("--self-test needs --n >= 2 and 0 < --eps < 1")
    # FMM2D's Fortran prints progress notes (" Reallocating") on unit 6 = fd 1, flushed at exit:
    # send fd 1 to stderr and keep the real stdout for the row alone.
    sys.stdout.flush()
    real_stdout = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = os.fdopen(real_stdout, "w", buffering=1)
    try:
        return self_test(a) if a.self_test else run_file(a)
    except PeerError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
