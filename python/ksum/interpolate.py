"""RBF interpolation: a drop-in for ``scipy.interpolate.RBFInterpolator`` on ksum's global
solvers (dense, FGP, GMRES), and the partition-of-unity interpolant with LOOCV shapes."""
from __future__ import annotations

import functools
import math
import threading
import warnings

import numpy as np
from numpy.typing import ArrayLike

from . import _arrays as A
from . import _ksum
from ._errors import Error, InputError, UnsupportedError
from .distributed import _comm_args

__all__ = ["RBFInterpolator", "PUMInterpolator"]

# SciPy's kernel names -> ksum's catalogue. SciPy's signs (-r, -sqrt(1 + r^2), -r^5) differ from
# ksum's (r, sqrt(1 + r^2), r^5); the interpolant is the same, and smoothing enters both with the
# sign that keeps the system definite, so SciPy's smoothing means the same here.
_SCIPY_KERNELS = {"linear": "linear", "thin_plate_spline": "tps", "cubic": "cubic",
                  "quintic": "quintic", "multiquadric": "multiquadric",
                  "inverse_multiquadric": "inverse-multiquadric",
                  "inverse_quadratic": "inverse-quadratic", "gaussian": "gaussian"}
_SCALE_INVARIANT = {"linear", "thin_plate_spline", "cubic", "quintic"}
_MIN_DEGREE = {"multiquadric": 0, "linear": 0, "thin_plate_spline": 1, "cubic": 1, "quintic": 2}


@functools.lru_cache(maxsize=1)
def _catalogue():
    """The kernel catalogue, name -> minimum polynomial degree (read once)."""
    return {k["name"]: k["min_degree"] for k in _ksum.info()["kernels"]}


def _ksum_kernel(kernel):
    if kernel in _SCIPY_KERNELS:
        return _SCIPY_KERNELS[kernel]
    names = list(_catalogue())
    if kernel in names:
        return kernel
    raise InputError(f"`kernel` must be one of {sorted(_SCIPY_KERNELS)} (SciPy's names) or a "
                     f"ksum kernel ({', '.join(names)}); got '{kernel}'", "invalid_argument")


def _min_degree(kernel, kk):
    if kernel in _MIN_DEGREE:
        return _MIN_DEGREE[kernel]
    return _catalogue()[kk]


def _monomials(ndim, degree):
    return 0 if degree < 0 else math.comb(degree + ndim, ndim)


class RBFInterpolator:
    """A drop-in for ``scipy.interpolate.RBFInterpolator``.

    ``RBFInterpolator(y, d, neighbors=None, smoothing=0.0, kernel='thin_plate_spline',
    epsilon=None, degree=None)`` with SciPy's kernel names, defaults (epsilon 1 for the
    scale-invariant kernels and required otherwise; degree = the kernel's minimum, at least 0),
    epsilon scaling phi(epsilon r) and polynomial rules; ``__call__(x)`` returns SciPy's shapes
    (m,) + d.shape[1:]. Complex data are interpolated as real and imaginary parts.

    ksum's keywords: ``method`` 'auto' | 'global' | 'local' | 'pum'; ``solver`` 'auto' | 'dense' |
    'fgp' | 'krylov'; ``tol`` (iterative solvers' relative residual, default 1e-10);
    ``backend``; ``matvec`` 'direct' | 'fmm' | 'auto': how the iterative solvers and the
    evaluation multiply by the kernel matrix (default exact; 'fmm' for large 3D problems; 'auto'
    lets a cost model choose, which measures this machine once per process, about 3 s);
    ``centre_update`` 'auto' | 'update' | 'refit': how :meth:`move_centres` changes a dense fit.
    ``comm`` 'world' or an mpi4py communicator: the global interpolant fitted over MPI processes
    (each passes its own rows of ``y`` and ``d``; FGP or GMRES with the vectors spread over the
    processes; calling the interpolant is then collective, each process its own points;
    docs/distributed.md); None (default): this process alone. Rows that fill a compact region
    per process (e.g. sorted along a space-filling curve before they are split) keep the
    preconditioner's set-up and exchange small (``stats["lset_search_received"]``,
    ``stats["lset_halo_rows"]``).
    With method 'auto' and no neighbors, ksum solves one global
    interpolant: densely up to ``dense_max_n`` points (6000; what SciPy does), beyond that by the
    FGP Krylov method or preconditioned GMRES with O(n) memory, where SciPy's dense n x n system
    runs out of memory. With ``neighbors`` set, method 'auto' is 'local': SciPy's definition (at
    each evaluation point the interpolant of its k nearest data points), solved in C++ threads;
    method 'pum' is ksum's partition of unity instead (one smooth interpolant, linear cost, values
    that differ from SciPy's by the local approximation error).

    Example
    -------
    >>> import numpy as np, ksum
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random((500, 2)); d = np.sin(6 * y[:, 0]) * y[:, 1]
    >>> f = ksum.RBFInterpolator(y, d)        # scipy.interpolate.RBFInterpolator(y, d)
    >>> f(rng.random((10, 2))).shape
    (10,)
    """

    def __init__(self, y: ArrayLike, d: ArrayLike, neighbors: int | None = None,
                 smoothing: float | ArrayLike = 0.0, kernel: str = "thin_plate_spline",
                 epsilon: float | None = None, degree: int | None = None, *, method="auto", solver="auto", tol=1e-10,
                 backend="auto", matvec="direct", dense_max_n=6000, max_iterations=300,
                 threads=0, eps_loocv=False, centre_update="auto", comm=None):
        shared = None if comm is None else _comm_args(comm)
        self._shared = shared
        try:
            self._setup(y, d, neighbors, smoothing, kernel, epsilon, degree, method, solver, tol,
                        backend, matvec, dense_max_n, max_iterations, threads, eps_loocv,
                        centre_update, shared)
        except Exception as e:  # any argument error (a ragged list too)
            if shared is None:
                raise
            _ksum.mpi_fail(*shared, str(e))  # raised on every process (the others are fitting)
        self._lock = threading.Lock()
        if shared is None:
            self._plan.set_data(self._yy, self._vals)
        else:
            self._plan.set_data_distributed(self._yy, self._vals, *shared)
        del self._yy, self._vals

    def _setup(self, y, d, neighbors, smoothing, kernel, epsilon, degree, method, solver, tol,
               backend, matvec, dense_max_n, max_iterations, threads, eps_loocv, centre_update,
               shared):
        A.reject_gpu(y=y, d=d)
        y = np.asarray(y)
        if y.ndim != 2:
            raise InputError("`y` must be a 2-dimensional array.", "shape_mismatch")
        if y.dtype.kind == "c":
            raise TypeError("`y` must be real")
        ny, ndim = y.shape
        d = np.asarray(d)
        if d.ndim == 0:
            raise InputError("`d` must have at least one dimension (one value per data point)",
                             "shape_mismatch")
        if d.shape[0] != ny:
            raise InputError(f"Expected the first axis of `d` to have length {ny}.",
                             "shape_mismatch")
        self._d_shape = d.shape[1:]
        self._complex = d.dtype.kind == "c"
        dd = d.reshape((ny, int(np.prod(d.shape[1:], dtype=np.int64))))
        if self._complex:
            dd = np.concatenate([dd.real, dd.imag], axis=1)
        kernel = str(kernel)
        kk = _ksum_kernel(kernel)
        min_degree = _min_degree(kernel, kk)
        if epsilon is None:
            if kernel in _SCALE_INVARIANT or kk in ("tps", "linear", "cubic", "quintic"):
                epsilon = 1.0
            else:
                raise InputError("`epsilon` must be specified if `kernel` is not one of "
                                 f"{sorted(_SCALE_INVARIANT)}.", "invalid_argument")
        epsilon = float(epsilon)
        if degree is None:
            degree = max(min_degree, 0)
        else:
            degree = int(degree)
            if degree < -1:
                raise InputError("`degree` must be at least -1.", "invalid_argument")
            if degree < min_degree and neighbors is None and method in ("auto", "global"):
                # SciPy warns and solves a system that may be singular; ksum's global solvers
                # refuse it.
                raise InputError(f"`degree` {degree} is below {min_degree}, the minimum for "
                                 f"`kernel` '{kernel}': ksum's global interpolant needs it for a "
                                 "unique solution (SciPy only warns); use degree >= "
                                 f"{min_degree}", "invalid_argument")
            if -1 < degree < min_degree:
                warnings.warn(f"`degree` should not be below {min_degree} except -1 when "
                              f"`kernel` is '{kernel}'. The interpolant may not be uniquely "
                              "solvable, and the smoothing parameter may have an unintuitive "
                              "effect if `degree` is below the minimum.", UserWarning,
                              stacklevel=2)
        nmonos = _monomials(ndim, degree)
        # (Over MPI processes each holds some of the points: the C++ fit checks them all.)
        if shared is None and nmonos > (ny if neighbors is None else min(int(neighbors), ny)):
            raise InputError(f"At least {nmonos} data points are required when `degree` is "
                             f"{degree} and the number of dimensions is {ndim}.",
                             "invalid_argument")
        sm = np.asarray(smoothing, dtype=float)
        if sm.ndim == 1:
            if sm.shape[0] != ny:
                raise InputError(f"Expected `smoothing` to be a scalar or have shape ({ny},).",
                                 "shape_mismatch")
            if not np.all(sm == sm[0]):
                raise UnsupportedError("a different smoothing per data point is not supported by "
                                       "ksum; pass one scalar", "unsupported")
            sm = sm[0] if ny else np.float64(0)
        smoothing = float(sm)
        if smoothing < 0 or not math.isfinite(smoothing):
            raise InputError(f"`smoothing` must be non-negative and finite, got {smoothing}",
                             "invalid_argument")
        if method == "auto":
            method = "global" if neighbors is None else "local"
        if method == "local" and neighbors is None:
            raise InputError("method 'local' needs `neighbors`", "invalid_argument")
        if shared is not None and method != "global":
            raise UnsupportedError(f"comm: method '{method}' is not distributed; the global "
                                   "interpolant (method 'global', no neighbors) is",
                                   "unsupported")
        self.y, self.d = y, d
        self.neighbors, self.smoothing, self.kernel = neighbors, smoothing, kernel
        self.epsilon, self.powers = epsilon, None
        self.degree, self.method = degree, method
        yy = A.host_matrix(y, "y", np.float64, allow_int=True)
        vals = A.host_matrix(dd, "d", np.float64, allow_int=True)
        if method == "global":
            self._plan = _ksum.GlobalRbf(kk, epsilon, degree, smoothing, str(solver), float(tol),
                                         int(max_iterations), int(dense_max_n), str(backend),
                                         int(threads), str(matvec), 0.0, 40, 100,
                                         str(centre_update))
        elif method == "local":
            self._plan = _ksum.LocalRbf(kk, epsilon, degree, smoothing, int(neighbors),
                                        int(threads))
        elif method == "pum":
            if smoothing:
                raise UnsupportedError("smoothing with method 'pum' is not supported",
                                       "unsupported")
            if degree > 1:
                raise UnsupportedError(f"method 'pum' serves degree -1, 0 or 1, not {degree} "
                                       f"(kernel '{kernel}')", "unsupported")
            self._plan = _ksum.Pum(kk, degree, epsilon, bool(eps_loocv), 0.1, 100.0, 1.0, 0,
                                   False, True, int(threads), str(backend))
        else:
            raise InputError(f"method '{method}': expected 'auto', 'global', 'local' or 'pum'",
                             "invalid_argument")
        self._ndim = ndim
        self._yy, self._vals = yy, vals

    @property
    def stats(self):
        """What the solver did (solver, iterations, residual, timings, moves and updates of
        :meth:`move_centres`); {} for 'local'."""
        return getattr(self._plan, "stats", {})

    def move_centres(self, index: ArrayLike, y: ArrayLike, d: ArrayLike | None = None) -> None:
        """Moves data points ``index`` (m,) to ``y`` (m, ndim), with new values ``d`` (shape
        (m,) + the data's value shape) or keeping theirs, and refits: the interpolant of the
        moved set (not in SciPy; method 'global' only). A dense fit on the CPU does it by a
        Sherman-Morrison-Woodbury update of the kept inverse, O(n^2 m) instead of O(n^3), when
        ``centre_update`` ('auto': when 2m <= n/16) says so; the other solvers refit. ``stats``
        counts ``moves``, ``updates`` and ``update_fallbacks``.

        Example
        -------
        >>> import numpy as np, ksum
        >>> rng = np.random.default_rng(0)
        >>> y = rng.random((400, 2)); d = np.sin(6 * y[:, 0]) * y[:, 1]
        >>> f = ksum.RBFInterpolator(y, d, kernel="gaussian", epsilon=20.0, solver="dense")
        >>> f.move_centres([3, 17], y[[3, 17]] + 0.01)
        >>> f.move_centres([5], y[[5]] - 0.01, [0.5])
        >>> f.stats["moves"], f.stats["updates"]
        (2, 1)
        """
        if self.method != "global":
            raise UnsupportedError(f"move_centres serves method 'global', not '{self.method}'",
                                   "unsupported")
        A.reject_gpu(index=index, y=y, d=d)
        k = np.asarray(index)
        if k.ndim != 1:
            raise InputError(f"`index` must be 1-dimensional, got shape {k.shape}",
                             "shape_mismatch")
        if k.size and k.dtype.kind not in "iu":
            raise InputError(f"`index` must hold integers, got dtype {k.dtype}",
                             "invalid_argument")
        k = np.ascontiguousarray(k, dtype=np.int64)
        yy = A.host_matrix(y, "y", np.float64, cols=self._ndim, allow_int=True)
        vals = None
        if d is not None:
            d = np.asarray(d)
            if d.shape != (k.shape[0],) + self._d_shape:
                raise InputError(f"`d` must have shape {(k.shape[0],) + self._d_shape}, got "
                                 f"{d.shape}", "shape_mismatch")
            dd = d.reshape((k.shape[0], -1))
            if self._complex:
                dd = np.concatenate([dd.real, dd.imag], axis=1)
            elif d.dtype.kind == "c":
                raise InputError("`d` is complex but the data are real", "invalid_argument")
            vals = A.host_matrix(dd, "d", np.float64, allow_int=True)
        with self._lock:
            self._plan.move_centres(k, yy, vals)
            self.y = np.array(self.y, dtype=np.result_type(self.y, yy))
            self.y[k] = yy
            if d is not None:
                self.d = np.array(self.d, dtype=np.result_type(self.d, d))
                self.d[k] = d

    def __call__(self, x: ArrayLike) -> np.ndarray:
        """Values at x (m, ndim): shape (m,) + d.shape[1:]."""
        try:
            A.reject_gpu(x=x)
            x = np.asarray(x)
            if x.ndim != 2:
                raise InputError("`x` must be a 2-dimensional array.", "shape_mismatch")
            if x.shape[1] != self._ndim:
                raise InputError(f"Expected the second axis of `x` to have length {self._ndim}.",
                                 "shape_mismatch")
            xx = A.host_matrix(x, "x", np.float64, allow_int=True)
        except Exception as e:  # any argument error (a ragged list too)
            if self._shared is None:
                raise
            self._plan.fail(str(e))  # the evaluation is collective: raised on every process
        with self._lock:
            out = self._plan.evaluate(xx)
        if self._complex:
            h = out.shape[1] // 2
            out = out[:, :h] + 1j * out[:, h:]
        return out.reshape((x.shape[0],) + self._d_shape)


class PUMInterpolator:
    """RBF partition-of-unity interpolation (seed 001): local RBF fits on overlapping patches
    glued by Wendland weights; linear cost in n; the shape parameter fixed or chosen per patch by
    leave-one-out cross validation (``eps='loocv'``).

    points (n, s), values (n,) or (n, c); kernel from ksum's catalogue (default 'matern4');
    degree -1 | 0 | 1 (a local polynomial); ``extrapolate``: evaluate outside the data's box
    from the nearest patches instead of raising; ``merge_duplicates``: average repeated points.
    ``comm``: 'world' or an mpi4py communicator shares the patches' fits among the MPI
    processes (every process passes all the data and gets the same interpolant one process
    makes; docs/distributed.md); None (default): this process alone. With ``partition=True``
    each process passes its own rows instead (any split, none allowed): the data are partitioned
    over the processes by cells with halos, no process holds them all, and calling the
    interpolator is collective (every process calls it with its own points); the values are
    still the same bits as one process's.

    Example
    -------
    >>> import numpy as np, ksum
    >>> rng = np.random.default_rng(0)
    >>> x = rng.random((20000, 2)); f = np.exp(x[:, 0]) * np.cos(3 * x[:, 1])
    >>> pum = ksum.PUMInterpolator(x, f, kernel="matern4", eps="loocv", backend="cpu")
    >>> pum(rng.random((5, 2))).shape
    (5,)
    """

    def __init__(self, points: ArrayLike, values: ArrayLike, *, kernel: str = "matern4",
                 eps: float | str = 1.0, degree: int = -1,
                 eps_range=(0.1, 100.0), patch_density=1.0, min_patch_points=0,
                 extrapolate=False, merge_duplicates=False, backend="auto", threads=0,
                 comm=None, partition=False):
        if partition and comm is None:
            raise InputError("partition=True needs comm ('world' or an mpi4py communicator)",
                             "invalid_argument")
        shared = None if comm is None else _comm_args(comm)
        self._shared = shared if partition else None  # then calls are collective
        try:
            A.reject_gpu(points=points, values=values)
            loocv = isinstance(eps, str)
            if loocv and eps != "loocv":
                raise InputError(f"eps '{eps}': expected a number or 'loocv'", "invalid_argument")
            x = A.host_matrix(points, "points", np.float64, allow_int=True)
            v = np.asarray(values)
            self._vector = v.ndim == 1
            f = A.host_matrix(v, "values", np.float64, vector_ok=True, allow_int=True)
        except Exception as e:  # any argument error (a ragged list too)
            if shared is None:
                raise
            _ksum.mpi_fail(*shared, str(e))  # raised on every process (the others are fitting)
        self._plan = _ksum.Pum(str(kernel), int(degree), 1.0 if loocv else float(eps), loocv,
                               float(eps_range[0]), float(eps_range[1]), float(patch_density),
                               int(min_patch_points), bool(merge_duplicates), bool(extrapolate),
                               int(threads), str(backend))
        self._dim = x.shape[1]
        self._lock = threading.Lock()
        if shared is None:
            self._plan.set_data(x, f)
        elif partition:
            self._plan.set_data_partitioned(x, f, *shared)
        else:
            self._plan.set_data_shared(x, f, *shared)

    @property
    def stats(self):
        """Patches, points per patch, the chosen shape parameters, timings."""
        return self._plan.stats

    def __call__(self, x: ArrayLike) -> np.ndarray:
        try:
            xx = A.host_matrix(x, "x", np.float64, cols=self._dim, allow_int=True)
        except Exception as e:  # any argument error (a ragged list too)
            if self._shared is None:
                raise
            self._plan.fail(str(e))  # the others are evaluating: raised on every process
        with self._lock:
            out = self._plan.evaluate(xx)
        return out[:, 0] if self._vector else out
