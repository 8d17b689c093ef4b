"""FMM3D's Laplace FMM (lfmm3d, charges, potentials at the sources) from Python, three ways:

- ``Fmm3dpy``: ``fmm3dpy.lfmm3d`` from the PyPI wheel (when it imports);
- ``FortranLib(path)``: the Fortran routine ``lfmm3d_s_c_p`` of a compiled library through
  ctypes. The path is either a libfmm3d.so built from FMM3D's source
  (bench/python/build_fmm3d.sh) or the wheel's own extension ``fmm3dpy/lfmm3d_fortran*.so``,
  which exports the same routine: that way the wheel runs under any CPython (a cp312 wheel under
  3.11 here, say), the way bench/peers/fmm2d_peer.py calls fmm2dpy.

All give pot(x_i) = sum_{j != i} q_j / (4 pi |x_i - x_j|) for sources (3, n) float64. Fortran
reads source(3, n) column by column (x, y, z of one point together): an array in another order is
copied first, as f2py does for fmm3dpy (inside the timed call for both, ~10 ms at N = 1e6).

Threads: the wheel (2.1.0) is built without OpenMP (one thread whatever OMP_NUM_THREADS says);
a source build with OpenMP takes ``set_threads(k)`` (omp_set_num_threads of the libgomp it
loaded) before each call.
"""
import ctypes
import ctypes.util
import glob
import importlib.util
import os
import re

import numpy as np


class PeerError(Exception):
    pass


def wheel_extension():
    """The path of the installed fmm3dpy's lfmm3d_fortran*.so (without importing fmm3dpy)."""
    spec = importlib.util.find_spec("fmm3dpy")
    if spec is None or not spec.submodule_search_locations:
        return None
    hits = []
    for d in spec.submodule_search_locations:
        hits += glob.glob(os.path.join(d, "lfmm3d_fortran*.so"))
    return sorted(hits)[0] if hits else None


def openmp_info(path):
    """(uses OpenMP, AVX in the code) of a shared library, from its dynamic section and code."""
    import subprocess
    info = {}
    try:
        dyn = subprocess.run(["readelf", "-d", "-W", path], capture_output=True, text=True,
                             timeout=60).stdout
        info["needed"] = [ln.split("[", 1)[1].rstrip("]") for ln in dyn.splitlines()
                          if "(NEEDED)" in ln]
        info["openmp"] = any(re.match(r"lib[gi]?omp", n) for n in info["needed"])
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return info


class Fmm3dpy:
    label = "fmm3dpy wheel (PyPI)"

    def __init__(self):
        try:
            import fmm3dpy
        except Exception as e:
            raise PeerError(f"import fmm3dpy failed ({type(e).__name__}: {e})")
        self.m = fmm3dpy
        self.path = wheel_extension() or fmm3dpy.__file__
        self.openmp = bool(openmp_info(self.path).get("openmp"))

    def set_threads(self, k):
        return self.openmp  # the wheel ignores it when built without OpenMP

    def __call__(self, eps, src, q):
        out = self.m.lfmm3d(eps=eps, sources=src, charges=q, pg=1)
        if getattr(out, "ier", 0):
            raise PeerError(f"fmm3dpy.lfmm3d returned ier = {out.ier}")
        return np.asarray(out.pot)


class FortranLib:
    """lfmm3d_s_c_p_(eps, nsource, source(3,n), charge(n), pot(n), ier): integer*8 sizes
    (FMM3D src/Laplace/lfmm3dwrap.f)."""

    def __init__(self, path, label=None):
        if not os.path.isfile(path):
            raise PeerError(f"{path}: no such file")
        try:
            self.dll = ctypes.CDLL(os.path.abspath(path))
        except OSError as e:
            raise PeerError(f"cannot load {path}: {e}")
        try:
            fn = self.dll.lfmm3d_s_c_p_
        except AttributeError:
            raise PeerError(f"{path} has no routine lfmm3d_s_c_p_ (not FMM3D?)") from None
        d, i8, p = (ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_int64),
                    ctypes.c_void_p)
        fn.argtypes, fn.restype = [d, i8, p, p, p, i8], None
        self.fn, self.path = fn, path
        self.label = label or path
        self.openmp = bool(openmp_info(path).get("openmp"))
        self._omp = None
        if self.openmp:
            try:  # the libgomp this library loaded (same soname: dlopen returns that one)
                self._omp = ctypes.CDLL("libgomp.so.1")
                self._omp.omp_set_num_threads.argtypes = [ctypes.c_int]
            except OSError:
                self._omp = None

    def set_threads(self, k):
        if self._omp is None:
            return False
        self._omp.omp_set_num_threads(int(k))
        return True

    def __call__(self, eps, src, q):
        src = np.asfortranarray(src, dtype=np.float64)  # (3, n) column by column
        q = np.ascontiguousarray(q, dtype=np.float64)
        n = src.shape[1]
        pot = np.empty(n)
        ier = ctypes.c_int64(0)
        self.fn(ctypes.c_double(eps), ctypes.c_int64(n), src.ctypes.data, q.ctypes.data,
                pot.ctypes.data, ctypes.byref(ier))
        if ier.value:
            raise PeerError(f"{self.label}: lfmm3d_s_c_p returned ier = {ier.value}")
        return pot


def wheel(prefer_import=True):
    """The wheel's FMM3D: fmm3dpy.lfmm3d when it imports, else its extension through ctypes."""
    err = None
    if prefer_import:
        try:
            return Fmm3dpy()
        except PeerError as e:
            err = e
    ext = wheel_extension()
    if ext is None:
        raise PeerError("fmm3dpy is not installed (not on sys.path)"
                        + (f"; {err}" if err else ""))
    lib = FortranLib(ext, label="fmm3dpy wheel (PyPI, via ctypes)")
    return lib


def direct_reference(src, q, rows):
    """fp64 sum_{j != i} q_j / (4 pi r_ij) at the sources listed in rows (src (3, n)), one
    coordinate at a time in blocks of rows of about 2e7 pairs; no BLAS (its spinning threads
    would steal cores from the next timed OpenMP code)."""
    x = [np.ascontiguousarray(src[k], dtype=np.float64) for k in range(3)]
    n = src.shape[1]
    out = np.empty(len(rows))
    b = max(1, int(2e7 // n))
    for a in range(0, len(rows), b):
        idx = rows[a:a + b]
        r = (x[0][None, :] - x[0][idx, None]) ** 2
        r += (x[1][None, :] - x[1][idx, None]) ** 2
        r += (x[2][None, :] - x[2][idx, None]) ** 2
        r[np.arange(len(idx)), idx] = np.inf
        np.sqrt(r, out=r)
        out[a:a + b] = (q[None, :] / r).sum(axis=1)
    return out / (4 * np.pi)


def rel_l2(u, ref):
    return float(np.linalg.norm(u - ref) / np.linalg.norm(ref))
