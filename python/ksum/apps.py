"""The applications: RBF mesh deformation of node arrays and the particle simulations of seed
004 Paper IV on the 2D FMM."""
from __future__ import annotations

import threading

import numpy as np
from numpy.typing import ArrayLike

from . import _arrays as A
from . import _ksum
from ._errors import InputError

__all__ = ["deform_mesh", "DeformResult", "Simulation", "simulate"]


class DeformResult:
    """``nodes``: the moved nodes (same shape as given); ``stats``: solver, iterations, the
    largest boundary residual, timings."""

    def __init__(self, nodes, stats):
        self.nodes, self.stats = nodes, stats

    def __iter__(self):
        return iter((self.nodes, self.stats))

    def __repr__(self):
        return f"DeformResult(nodes shape {self.nodes.shape}, stats={self.stats})"


def deform_mesh(nodes: ArrayLike, moving: ArrayLike, fixed: ArrayLike = (), *, displacement=None, translate=None, rotate=None,
                axis=(0.0, 0.0, 1.0), about=(0.0, 0.0, 0.0), scale=None, method="global",
                kernel="tps", eps=1.0, degree=None, solver="auto", tol=1e-10, steps=1,
                backend="auto", threads=0):
    """RBF mesh deformation (seed 000 §2.3): the boundary motion is interpolated and every other
    node moves by the interpolant's value.

    nodes (n, 2) or (n, 3); moving, fixed: node indices (the moving nodes follow the motion, the
    fixed ones stay); every other node is interpolated. The motion is exactly one of:
    ``displacement`` (len(moving), dim) per moving node, ``translate`` (a vector),
    ``rotate`` (degrees, counter-clockwise about ``axis`` through ``about``), ``scale`` (a factor
    about ``about``). ``steps`` applies it in increments. Returns a :class:`DeformResult`
    (unpacks as ``nodes, stats``).

    Example
    -------
    >>> import numpy as np, ksum
    >>> g = np.linspace(-1, 1, 21); X, Y = np.meshgrid(g, g); xy = np.c_[X.ravel(), Y.ravel()]
    >>> r = np.hypot(xy[:, 0], xy[:, 1])
    >>> inner = np.flatnonzero(r < 0.25); outer = np.flatnonzero(np.abs(xy).max(1) == 1)
    >>> new, stats = ksum.deform_mesh(xy, inner, outer, rotate=10.0, backend="cpu")
    """
    A.reject_gpu(nodes=nodes, moving=moving, fixed=fixed, displacement=displacement)
    x = np.asarray(nodes)
    if x.ndim != 2 or x.shape[1] not in (2, 3):
        raise InputError(f"nodes: expected shape (n, 2) or (n, 3), got {x.shape}",
                         "shape_mismatch")
    dim = x.shape[1]
    pts = x if dim == 3 else np.c_[x, np.zeros(len(x))]
    pts = A.host_matrix(pts, "nodes", np.float64, allow_int=True)
    given = [k for k, v in (("displacement", displacement), ("translate", translate),
                            ("rotate", rotate), ("scale", scale)) if v is not None]
    if len(given) != 1:
        raise InputError("deform_mesh: give exactly one motion (displacement, translate, rotate "
                         f"or scale); got {given or 'none'}", "invalid_argument")
    kind = given[0]
    vec = (0.0, 0.0, 0.0)
    disp = None
    if kind == "displacement":
        disp = A.host_matrix(displacement, "displacement", np.float64, cols=dim, allow_int=True)
    elif kind == "translate":
        t = np.asarray(translate, dtype=float).ravel()
        if t.size != dim:
            raise InputError(f"translate: expected {dim} components, got {t.size}",
                             "shape_mismatch")
        vec = tuple(np.r_[t, np.zeros(3 - dim)])
    def three(v, name):
        a = np.asarray(v, dtype=float).ravel()
        if a.size not in (2, 3):
            raise InputError(f"{name}: expected 2 or 3 components", "shape_mismatch")
        return tuple(np.r_[a, np.zeros(3 - a.size)])
    coords, stats = _ksum.deform_nodes(
        pts, dim, A.host_index(moving, "moving"), A.host_index(fixed, "fixed"), kind, disp, vec,
        float(rotate or 0.0), three(axis, "axis"), three(about, "about"),
        float(scale if scale is not None else 1.0), str(method), str(kernel), float(eps), degree,
        str(solver), float(tol), int(steps), str(backend), int(threads))
    return DeformResult(coords[:, :dim], stats)


class Simulation:
    """One of the three particle simulations of seed 004 Paper IV §5 on the 2D FMM with the
    autotuner: 'kh' (Kelvin–Helmholtz vortex sheet), 'galaxy' (a rotating disc in 2D gravity),
    'cylinder' (impulsively started flow around a cylinder).

    ``step(k)`` advances k steps; ``time``, ``size``; ``snapshot()`` gives positions ``z``
    (complex), ``velocity`` and ``strength`` arrays; ``picture()`` a 2D heat map (ny, nx) of
    vorticity or log surface density (NaN where empty); ``diagnostics()`` the conserved
    quantities.

    Example
    -------
    >>> import ksum
    >>> sim = ksum.Simulation("kh", n=4000)     # the grid rounds n: 182 x 22 vortices
    >>> sim = sim.step(5)
    >>> snap = sim.snapshot(); snap["z"].shape
    (4004,)
    """

    def __init__(self, scenario="kh", *, n=0, dt=0.0, core=1.0, reynolds=10000.0, merge_every=10,
                 seed=1, method="fmm", tol=1e-6, backend="cpu", threads=0, autotune="at3b"):
        self._sim = _ksum.make_simulation(str(scenario), int(n), float(dt), float(core),
                                          float(reynolds), int(merge_every), int(seed),
                                          str(method), float(tol), str(backend), int(threads),
                                          str(autotune))
        self.scenario = str(scenario)
        self._lock = threading.Lock()  # calls release the GIL: one at a time on the state

    def step(self, count: int = 1) -> "Simulation":
        count = int(count)
        if not 0 <= count < 2**31:
            raise InputError(f"step count {count}: expected 0 … 2^31 - 1", "invalid_argument")
        with self._lock:
            self._sim.step(count)
        return self

    @property
    def time(self):
        with self._lock:
            return self._sim.time

    @property
    def dt(self):
        return self._sim.dt

    @property
    def size(self):
        with self._lock:
            return self._sim.size

    def snapshot(self):
        with self._lock:
            return self._sim.snapshot()

    def picture(self):
        with self._lock:
            nx, ny, values = self._sim.picture()
        return values.reshape(ny, nx)

    def diagnostics(self):
        with self._lock:
            return self._sim.diagnostics()

    def __repr__(self):
        with self._lock:
            return f"Simulation({self._sim.describe()}, t = {self._sim.time:g})"


def simulate(scenario: str = "kh", steps: int = 10, **options) -> Simulation:
    """Runs ``steps`` steps of :class:`Simulation` (scenario, **options) and returns it."""
    return Simulation(scenario, **options).step(steps)
