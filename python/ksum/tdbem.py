"""The time-domain boundary element method of seed 003 (Bramas, Coulaud & Sylvand): sound-soft
scattering of a wave pulse by a closed triangulated surface, marching on in time with the
summation stage in slices on the CPU and the GPUs (``ksum tdbem`` from Python)."""
from __future__ import annotations

import os
import threading
from typing import Callable, Optional, Sequence

import numpy as np
from numpy.typing import ArrayLike

from . import _arrays as A
from . import _ksum
from ._errors import InputError

__all__ = ["TDBEM", "sphere"]


def sphere(radius: float = 1.0, refinements: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """A sphere of radius ``radius``: the icosahedron refined ``refinements`` times (0 … 9),
    20·4^refinements triangles with their nodes projected onto the sphere.

    Returns ``(nodes, triangles)``: nodes (n, 3) float64, triangles (m, 3) int64 (rows of
    ``nodes``, counter-clockwise seen from outside), ready for :class:`TDBEM`.

    Example
    -------
    >>> import ksum
    >>> nodes, triangles = ksum.sphere(radius=2.0, refinements=1)
    >>> nodes.shape, triangles.shape
    ((42, 3), (80, 3))
    """
    surf = _ksum.tdbem_sphere(float(radius), int(refinements))
    nodes, tri = surf.arrays()
    return nodes, tri.reshape(-1, 3)


def _triangles(triangles) -> np.ndarray:
    A.reject_gpu(triangles=triangles)
    t = np.asarray(triangles)
    if t.ndim != 2 or t.shape[1] != 3:
        raise InputError(f"triangles: expected shape (m, 3) (three node rows per triangle), got "
                         f"{t.shape}", "shape_mismatch")
    if t.size and t.dtype.kind not in "iu":
        raise TypeError(f"triangles: expected integer node rows, got dtype {t.dtype}")
    return np.ascontiguousarray(t, dtype=np.int64)


class TDBEM:
    """The TD-BEM solver for the 3D wave equation on a closed triangulated surface Γ (seed 003).

    The scattered field is the retarded single-layer potential of a density σ on Γ with
    u_s = −u_inc on Γ (sound-soft). σ is piecewise constant on the triangles (one unknown per
    element, collocated at its centroid). Step n (n = 0, 1, …) collocates at t = nΔt and gives
    a^n: with ``time_basis='constant'`` (default) σ is piecewise constant in time and a^n is σ
    on ((n−1)Δt, nΔt] (second order at its midpoint (n − ½)Δt); ``'linear'`` takes hat
    functions, a^n = σ(nΔt), second order too but it grows a sawtooth after a few transits of
    the surface.

    The surface: ``nodes`` (n, 3) and ``triangles`` (m, 3) (node rows), or ``nodes`` a path to a
    Gmsh mesh (any format Gmsh reads; only when this build has the Gmsh SDK) whose triangles
    are taken. It must be closed (every edge shared by two triangles), with no degenerate
    triangle, no duplicate node, no NaN; the error names the offending element / node row.

    Options mirror ``ksum::TdbemOptions``: ``c`` wave speed; ``dt`` time step (None: the mean
    edge length / c); ``kernel`` 'contiguous' | 'full' | 'scalar' (summation kernel, §3);
    ``ordering`` 'natural' | 'morton' | 'hilbert' (numbering of the unknowns, table 4);
    ``block_rows``, ``block_cols`` (0: chosen); ``ng`` summation vectors at once (1 … 16);
    ``backend`` 'auto' | 'cpu' | 'gpu'; ``devices`` GPU ids (None: all); ``threads`` (0: all
    cores not driving a GPU); ``balance``, ``balance_iterations`` (§5.2 balancing between the
    workers); ``mpi`` (False: this process alone even under mpirun). ``precision``: 'float64'
    or 'float32', the precision of the stored matrices and of the summation (the sparse solve
    of M^0 is always float64).

    The incident field: :meth:`set_plane_wave` (a Gaussian pulse, evaluated in C++) or
    :meth:`set_incident` (any Python function of the centroids and t). Then :meth:`run` marches
    on; :meth:`density`, :meth:`probe_history`, :meth:`stats` report. Calls release the GIL while
    they compute; one object serialises concurrent calls.

    Example
    -------
    >>> import numpy as np, ksum
    >>> nodes, triangles = ksum.sphere(refinements=1)
    >>> bem = ksum.TDBEM(nodes, triangles, backend="cpu")
    >>> bem = bem.set_plane_wave(direction=(0, 0, 1), t0=2.0, width=0.5)
    >>> bem = bem.set_probes([[0.0, 0.0, 3.0]]).run(10)
    >>> bem.density().shape, bem.probe_history().shape, bem.step
    ((80,), (10, 1), 10)
    """

    def __init__(self, nodes, triangles: Optional[ArrayLike] = None, *,
                 precision: str = "float64", c: float = 1.0, dt: Optional[float] = None,
                 time_basis: str = "constant", kernel: str = "contiguous",
                 ordering: str = "morton", block_rows: int = 0, block_cols: int = 0, ng: int = 4,
                 backend: str = "auto", devices: Optional[Sequence[int]] = None,
                 threads: int = 0, balance: bool = True, balance_iterations: int = 40,
                 mpi: bool = False):
        if isinstance(nodes, (str, os.PathLike)):
            if triangles is not None:
                raise InputError("TDBEM: give a mesh file or nodes and triangles, not both",
                                 "invalid_argument")
            surface = _ksum.tdbem_read_surface(os.fspath(nodes))
        else:
            if triangles is None:
                raise InputError("TDBEM: triangles missing (nodes (n, 3) and triangles (m, 3), "
                                 "or a mesh file)", "invalid_argument")
            x = A.host_matrix(nodes, "nodes", np.float64, cols=3, allow_int=True)
            surface = _ksum.tdbem_surface(x, _triangles(triangles))
        dtype = A.resolve_precision(precision)
        opts = _ksum.TdbemOptions(
            float(c), float(dt) if dt is not None else 0.0, str(time_basis), str(kernel),
            str(ordering), int(block_rows), int(block_cols), int(ng), str(backend),
            [int(d) for d in (devices or [])], int(threads), bool(balance),
            int(balance_iterations), bool(mpi))
        cls = _ksum.TdbemSolverF32 if dtype == np.float32 else _ksum.TdbemSolverF64
        self._solver = cls(surface, opts)
        self.c = float(c)
        self.precision = np.dtype(dtype).name
        self._lock = threading.RLock()  # RLock: run()'s callbacks may read results
        self._busy = False
        self._probes = 0
        self._centroids = self._solver.centroids()
        self._centroids.flags.writeable = False

    def _enter(self, what):
        if self._busy:
            raise RuntimeError(f"TDBEM.{what}() called from inside run() (a progress or incident "
                               "callback); only the results can be read there")

    @property
    def unknowns(self) -> int:
        """The number of elements (unknowns) m."""
        return self._solver.unknowns

    @property
    def dt(self) -> float:
        """The time step Δt."""
        return self._solver.dt

    @property
    def step(self) -> int:
        """Time steps done."""
        with self._lock:
            return self._solver.step

    @property
    def time(self) -> float:
        """The collocation time of the last step done, (step − 1)·Δt (−Δt before the first)."""
        with self._lock:
            return (self._solver.step - 1) * self._solver.dt

    @property
    def centroids(self) -> np.ndarray:
        """The elements' centroids (m, 3), in the order of ``triangles`` (read-only)."""
        return self._centroids

    def set_plane_wave(self, direction: ArrayLike = (0.0, 0.0, 1.0), t0: float = 0.0,
                       width: float = 1.0, amplitude: float = 1.0) -> "TDBEM":
        """The incident field u_inc(x, t) = amplitude · exp(−((t − t0 − d·x / c) / width)²), a
        Gaussian pulse travelling along the unit vector d = direction / |direction| at the
        solver's speed c. Evaluated in C++ (no Python call while running). Returns self.

        Example
        -------
        >>> import ksum
        >>> bem = ksum.TDBEM(*ksum.sphere(refinements=1), backend="cpu")
        >>> bem.set_plane_wave((1, 0, 0), t0=2.0, width=0.4).run(3).step
        3
        """
        d = np.asarray(direction, dtype=float).ravel()
        if d.size != 3:
            raise InputError(f"direction: expected 3 components, got {d.size}", "shape_mismatch")
        with self._lock:
            self._enter("set_plane_wave")
            self._solver.set_plane_wave(tuple(float(v) for v in d), self.c, float(t0),
                                        float(width), float(amplitude))
        return self

    def set_incident(self, field: Callable[[np.ndarray, float], ArrayLike]) -> "TDBEM":
        """The incident field as a Python function ``field(x, t)``: x the centroids (m, 3)
        (read-only, surface order), t the time; it returns u_inc at every centroid, an (m,)
        array (or anything that broadcasts to it, e.g. a scalar for a uniform field).

        Cost: one Python call per time step on all m centroids (the GIL is taken for it while
        :meth:`run` works), so a vectorised NumPy function adds little; exceptions it raises
        stop :meth:`run` and reach the caller. Returns self.

        Example
        -------
        >>> import numpy as np, ksum
        >>> bem = ksum.TDBEM(*ksum.sphere(refinements=1), backend="cpu")
        >>> pulse = lambda x, t: np.exp(-((t - 2.0 - x[:, 2]) / 0.4) ** 2)
        >>> bem.set_incident(pulse).run(3).density().shape
        (80,)
        """
        if not callable(field):
            raise TypeError(f"field: expected a callable field(x, t), got {type(field).__name__}")
        m = self.unknowns
        x = self._centroids

        def values(t):
            v = np.asarray(field(x, t), dtype=np.float64)
            try:
                v = np.broadcast_to(v, (m,))
            except ValueError:
                raise InputError(f"incident field: returned shape {v.shape} at t = {t}, "
                                 f"expected ({m},) (one value per centroid)",
                                 "shape_mismatch") from None
            return np.ascontiguousarray(v)

        with self._lock:
            self._enter("set_incident")
            self._solver.set_incident_values(values)
        return self

    def set_probes(self, points: ArrayLike) -> "TDBEM":
        """Points (p, 3) where the scattered field u_s(x, t) is recorded at every step (set
        before the first :meth:`run`); :meth:`probe_history` returns it. Returns self.

        Example
        -------
        >>> import ksum
        >>> bem = ksum.TDBEM(*ksum.sphere(refinements=1), backend="cpu")
        >>> bem = bem.set_plane_wave(t0=2.0, width=0.4).set_probes([[0, 0, 2], [0, 0, -2]])
        >>> bem.run(4).probe_history().shape
        (4, 2)
        """
        A.reject_gpu(points=points)
        p = np.asarray(points, dtype=np.float64)
        if p.ndim == 1 and p.size == 3:
            p = p.reshape(1, 3)
        if p.ndim != 2 or (p.size and p.shape[1] != 3):
            raise InputError(f"probes: expected shape (p, 3), got {p.shape}", "shape_mismatch")
        p = np.asfortranarray(p.reshape(-1, 3))
        with self._lock:
            self._enter("set_probes")
            self._solver.set_probes(p)
            self._probes = len(p)
        return self

    def run(self, steps: int, progress: Optional[Callable[[int, int], None]] = None) -> "TDBEM":
        """Advances ``steps`` time steps (after the ones already done). ``progress(done,
        steps)`` is called after each step; Ctrl-C stops between steps (the steps done are
        kept). Returns self.

        Example
        -------
        >>> import ksum
        >>> bem = ksum.TDBEM(*ksum.sphere(refinements=1), backend="cpu")
        >>> seen = []
        >>> bem = bem.set_plane_wave(t0=2.0, width=0.4).run(3, progress=lambda k, n: seen.append(k))
        >>> seen, bem.step
        ([1, 2, 3], 3)
        """
        steps = int(steps)
        if progress is not None and not callable(progress):
            raise TypeError("progress: expected a callable progress(done, steps) or None")
        with self._lock:
            self._enter("run")
            self._busy = True
            try:
                self._solver.run(steps, progress)
            finally:
                self._busy = False
        return self

    def density(self) -> np.ndarray:
        """The density a^n of the last step (n = step − 1) at every element (m,), in the order
        of ``triangles``, in the solver's precision (zeros before the first step).

        Example
        -------
        >>> import ksum
        >>> bem = ksum.TDBEM(*ksum.sphere(refinements=1), backend="cpu", precision="float32")
        >>> bem.set_plane_wave(t0=1.0, width=0.4).run(2).density().dtype
        dtype('float32')
        """
        with self._lock:
            return self._solver.density()

    def probe_history(self) -> np.ndarray:
        """The scattered field at the probes, (steps, p) float64: row n is u_s at t = nΔt
        (0-based n).

        Example
        -------
        >>> import ksum
        >>> bem = ksum.TDBEM(*ksum.sphere(refinements=1), backend="cpu").set_probes([[0, 0, 2]])
        >>> bem.set_plane_wave(t0=2.0, width=0.4).run(5).probe_history().shape
        (5, 1)
        """
        with self._lock:
            h = self._solver.probe_history()
            if h.shape[0] == 0 or self._probes == 0:
                return np.zeros((self._solver.step if self._probes == 0 else 0, self._probes))
            return np.ascontiguousarray(h)

    def stats(self) -> dict:
        """What the solver built and how long each stage took: unknowns, kmax, dmax, dav, nnz,
        nnz_m0, blocks, fill, block_rows, block_cols, ng, ordering_quality, the seconds of
        assembly / factor / blocking / summation / solve / exchange, steps, ranks, rank,
        slice_begin, slice_end, ``workers`` (a list of dicts: name, slices, seconds, gflops),
        ``balance_percent`` (calls × workers: each worker's share of the summed time, %) and
        ``balance_slices`` (calls × workers).

        Example
        -------
        >>> import ksum
        >>> bem = ksum.TDBEM(*ksum.sphere(refinements=1), backend="cpu", threads=1)
        >>> s = bem.set_plane_wave(t0=2.0, width=0.4).run(4).stats()
        >>> s["unknowns"], s["steps"], s["workers"][0]["name"]
        (80, 4, 'cpu...')
        """
        with self._lock:
            d = self._solver.stats()
        w = len(d["workers"])
        d["balance_percent"] = _table(d["balance_percent"], w, np.float64)
        d["balance_slices"] = _table(d["balance_slices"], w, np.int64)
        return d

    def __repr__(self):
        return (f"TDBEM({self.unknowns} elements, dt = {self.dt:g}, {self.precision}, "
                f"{self.step} steps done)")


def _table(rows, cols, dtype):
    """Lists of equal length as a (len(rows), cols) array; ragged ones stay lists."""
    if any(len(r) != cols for r in rows):
        return rows
    return np.array(rows, dtype=dtype).reshape(len(rows), cols)
