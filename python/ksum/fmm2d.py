"""The adaptive 2D FMM (complex points and strengths) and fmm2dpy's ``cfmm2d`` call."""
from __future__ import annotations

import threading

import numpy as np
from numpy.typing import ArrayLike

from . import _arrays as A
from . import _ksum
from ._errors import InputError
from .direct import FMMOutput, _fmm_call_checks

__all__ = ["FMM2D", "cfmm2d"]


class FMM2D:
    """The adaptive 2D fast multipole method (seed 004 Paper IV) as a plan.

    kernel 'harmonic': u(z_i) = sum_j q_j / (z_i - z_j); 'log': u(z_i) = sum_j q_j log|z_i - z_j|
    (complex strengths q_j allowed). Points are complex x + iy, (n,) complex arrays (read in place
    when complex of the plan's precision), or real (n, 2) coordinates (combined into complex: a
    copy); strengths (n,) complex or real. The self term is left out.

    tol: max_i |u_i - exact| <= tol * max |exact| (1e-13 ... 0.1 in float64). backend 'gpu' runs
    the near field on the GPU concurrently with the CPU's far field.

    Example
    -------
    >>> import numpy as np, ksum
    >>> rng = np.random.default_rng(0)
    >>> z = rng.random(10000) + 1j * rng.random(10000)
    >>> u = ksum.FMM2D("harmonic", tol=1e-8).set_points(z)(np.ones(10000))
    """

    def __init__(self, kernel: str = "harmonic", *, tol: float = 1e-6, backend: str = "cpu",
                 precision: str = "float64", method: str = "fmm", theta: float = 0.5,
                 levels: int = 0, order: int = 0, threads: int = 0, gpu_m2l: bool = False,
                 core_radius: float = 0.0) -> None:
        dtype = A.resolve_precision(precision)
        cls = _ksum.Fmm2dF32 if dtype == np.float32 else _ksum.Fmm2dF64
        self._dtype = dtype
        self._plan = cls(str(kernel), str(method), float(tol), float(theta), int(levels),
                         int(order), "gpu" if backend == "gpu" else str(backend), bool(gpu_m2l),
                         int(threads), "gaussian" if core_radius else "none", float(core_radius))
        self._lock = threading.Lock()
        self._n = None

    def set_points(self, sources: ArrayLike, targets: ArrayLike | None = None) -> "FMM2D":
        with self._lock:
            s = A.host_complex(sources, "sources", self._dtype)
            t = None if targets is None else A.host_complex(targets, "targets", self._dtype)
            if s.ndim != 1 or (t is not None and t.ndim != 1):
                raise InputError("points: expected complex (n,) or real (n, 2)", "shape_mismatch")
            self._plan.set_points(s, t)
            self._n = s.shape[0]
            return self

    def __call__(self, strengths: ArrayLike) -> np.ndarray:
        """strengths (n,) complex (or real) -> u (m,) complex."""
        if self._n is None:
            raise InputError("set_points() must be called before summing", "invalid_argument")
        with self._lock:
            q = A.host_complex(strengths, "strengths", self._dtype, points=False)
            if q.ndim != 1:
                raise InputError(f"strengths: expected shape ({self._n},), got {q.shape}",
                                 "shape_mismatch")
            return self._plan.execute(q)

    @property
    def stats(self):
        return self._plan.stats


def cfmm2d(eps: float, sources: ArrayLike, charges: ArrayLike | None = None,
           dipstr: ArrayLike | None = None, dipvec: ArrayLike | None = None,
           targets: ArrayLike | None = None, pg: int | None = None, pgt: int = 0, nd: int = 1, *,
           backend: str = "cpu", threads: int = 0) -> FMMOutput:
    """fmm2dpy's ``cfmm2d`` on ksum's 2D FMM (charges only).

    pot(z) = sum_j c_j log|z - z_j| (complex charges c_j), grad = sum_j c_j / (z - z_j) (the
    complex derivative of sum_j c_j log(z - z_j), FMM2D's convention), the self term left out at
    the sources. sources (2, n), charges complex (n,) or (nd, n), targets (2, m); pg / pgt 1: pot,
    2: pot and grad. When pg is not given it is 1, or 0 when pgt asks for targets only.

    Example
    -------
    >>> import numpy as np, ksum
    >>> rng = np.random.default_rng(0)
    >>> src = rng.random((2, 4000))
    >>> out = ksum.cfmm2d(eps=1e-10, sources=src, charges=np.ones(4000) + 0j, pg=2)
    >>> out.grad.shape
    (4000,)
    """
    pg, pgt = _fmm_call_checks("cfmm2d", charges, dipstr is not None or dipvec is not None,
                               sources, targets, pg, pgt)
    src = np.asarray(sources)
    if src.ndim != 2 or src.shape[0] != 2:
        raise InputError(f"cfmm2d: sources must have shape (2, n), got {src.shape}",
                         "shape_mismatch")
    z = A.host_complex(src, "sources", np.float64, layout="columns")
    q = np.asarray(charges)
    nd = int(nd)
    if nd > 1 and (q.ndim != 2 or q.shape[0] != nd):
        raise InputError(f"cfmm2d: nd = {nd} needs charges of shape ({nd}, n), got {q.shape}",
                         "shape_mismatch")
    if nd == 1 and q.ndim != 1:
        raise InputError(f"cfmm2d: charges must have shape (n,) (or (nd, n) with nd > 1), got "
                         f"{q.shape}", "shape_mismatch")
    qs = [q] if nd == 1 else [q[k] for k in range(nd)]
    zt = None
    if pgt:
        t = np.asarray(targets)
        if t.ndim != 2 or t.shape[0] != 2:
            raise InputError(f"cfmm2d: targets must have shape (2, m), got {t.shape}",
                             "shape_mismatch")
        zt = A.host_complex(t, "targets", np.float64, layout="columns")
    tol = min(max(float(eps), 1e-13), 0.1)
    out = FMMOutput()

    def run(tgt, level):
        pots, grads = [], []
        plans = [FMM2D("log", tol=tol, backend=backend, threads=threads).set_points(z, tgt)]
        if level >= 2:
            plans.append(FMM2D("harmonic", tol=tol, backend=backend,
                               threads=threads).set_points(z, tgt))
        for qk in qs:
            pots.append(plans[0](qk))
            if level >= 2:
                grads.append(plans[1](qk))
        pot = pots[0] if nd == 1 else np.stack(pots)
        grad = None if level < 2 else (grads[0] if nd == 1 else np.stack(grads))
        return pot, grad

    if pg:
        out.pot, out.grad = run(None, pg)
    if pgt:
        out.pottarg, out.gradtarg = run(zt, pgt)
    return out
