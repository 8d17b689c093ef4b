"""The direct sum over MPI ranks (docs/distributed.md): each process holds a slice of the sources
and of the targets and gets its targets' sums over all sources of all processes."""
from __future__ import annotations

import sys

import numpy as np
from numpy.typing import ArrayLike

from . import _arrays as A
from . import _ksum
from ._errors import Error, InputError

__all__ = ["DistributedSum", "mpi_built"]


def mpi_built() -> bool:
    """Whether this build runs over MPI ranks (without MPI every communicator is one process).

    >>> import ksum
    >>> ksum.mpi_built() in (True, False)
    True
    """
    return bool(_ksum.mpi_built())


_hooked = False


def _abort_on_uncaught():
    """An exception that ends one process of an MPI job would leave the others waiting (and that
    process in MPI_Finalize): after the traceback, every process of the job is ended."""
    global _hooked
    if _hooked:
        return
    _hooked = True
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        _ksum.mpi_abort(1)

    sys.excepthook = hook


def _comm_args(comm):
    if comm is None or comm == "world":
        return "world", 0
    if comm == "self":
        return "self", 0
    py2f = getattr(comm, "py2f", None)
    if callable(py2f):  # an mpi4py communicator
        return "handle", int(py2f())
    raise InputError(f"comm: None or 'world' (MPI_COMM_WORLD), 'self', or an mpi4py "
                     f"communicator; got {comm!r}", "invalid_argument")


class DistributedSum:
    """u_r(x_i) = sum_j w_{j,r} K(|x_i - y_j|) with the points spread over MPI processes.

    Every process of the communicator creates the plan and calls ``set_points`` and the plan with
    its own slice (any number of rows, zero included; the same number of columns everywhere). The
    source slices travel around a ring of processes; each sums on its CPU cores or its GPU (one
    GPU per process by default). Results equal ``DirectSum`` over all the points in one process to
    rounding. The calls are collective: an error on any process is raised on every process.

    Parameters
    ----------
    kernel, eps, backend, threads, devices :
        As for ``DirectSum``.
    method : 'direct' | 'fmm'
        'direct': every pair (the sources go around the processes); 'fmm': the 3D fast
        multipole method over the processes (potentials at the points themselves or at separate
        targets, no gradient; sources and targets are partitioned by Morton key, each process
        receives the essential tree of the others; docs/distributed.md), to the relative
        tolerance ``tol``.
    comm : None | 'world' | 'self' | mpi4py communicator
        None: MPI_COMM_WORLD when started by mpirun (MPI is initialised if needed), else this
        process alone. An mpi4py communicator is passed by its Fortran handle.
    precision : 'float64' | 'float32'
    gradient : bool
        Also the gradient with respect to the target point.

    Example (run with ``mpirun -n 4 python script.py``)
    -------
    >>> import numpy as np, ksum
    >>> plan = ksum.DistributedSum("laplace", backend="cpu")
    >>> rng = np.random.default_rng(plan.rank)
    >>> u = plan.set_points(rng.random((1000, 3)))(np.ones(1000))  # this rank's 1000 targets
    >>> u.shape
    (1000,)
    """

    def __init__(self, kernel: str = "laplace", eps: float = 1.0, *, comm=None,
                 backend: str = "auto", precision: str = "float64", gradient: bool = False,
                 threads: int = 0, devices: list[int] | None = None, method: str = "direct",
                 tol: float = 1e-6) -> None:
        if precision not in ("float64", "float32"):
            raise InputError(f"precision: 'float64' or 'float32', got {precision!r}",
                             "invalid_argument")
        self._dtype = np.float64 if precision == "float64" else np.float32
        cls = _ksum.DistributedSumF64 if precision == "float64" else _ksum.DistributedSumF32
        which, handle = _comm_args(comm)
        self.gradient = bool(gradient)
        self._plan = cls(which, handle, str(kernel), float(eps), self.gradient, str(backend),
                         int(threads), list(devices or []), str(method), float(tol))
        self._d = None
        if self._plan.size > 1:
            _abort_on_uncaught()

    @property
    def rank(self) -> int:
        """This process's rank in the communicator."""
        return self._plan.rank

    @property
    def size(self) -> int:
        """The number of processes."""
        return self._plan.size

    @property
    def stats(self) -> dict:
        """This process's part of the last call: compute and wait seconds, bytes sent, sizes."""
        return self._plan.stats

    def set_points(self, sources: ArrayLike, targets: ArrayLike | None = None) -> "DistributedSum":
        """This process's sources (n_r, d) and targets (m_r, d); without targets the targets are
        the sources on every process and the self term j = i is left out. Returns the plan."""
        try:
            src = A.host_matrix(sources, "sources", self._dtype)
            tgt = None if targets is None else A.host_matrix(targets, "targets", self._dtype,
                                                             cols=src.shape[1])
        except Error as e:  # raised on every process (the others are in set_points)
            self._plan.fail(str(e))
        self._plan.set_points(src, tgt)
        self._d = src.shape[1]
        return self

    def rebalance(self, threshold: float = 1.1) -> float:
        """method='fmm', after a sum: when the last sum's measured imbalance (the slowest
        process's cost over the mean) exceeds ``threshold``, partition the points again by the
        cost each process measured, so that costly regions spread over more processes. Returns
        that imbalance (0 when no sum ran since the points were set or last repartitioned, and for
        method='direct'). Collective; call it after the second sum (the first learns task sizes)."""
        return self._plan.rebalance(float(threshold))

    def __call__(self, weights: ArrayLike):
        """This process's weights (n_r,) or (n_r, r). Returns u (m_r,) or (m_r, r); with the
        gradient the pair (u, grad), grad (m_r, d) or (m_r, r, d)."""
        if self._d is None:
            raise InputError("set_points() must be called before summing", "invalid_argument")
        try:
            w = A.host_matrix(weights, "weights", self._dtype, vector_ok=True)
        except Error as e:  # raised on every process (the others are in the call)
            self._plan.fail(str(e))
        vector = np.ndim(weights) == 1
        out = self._plan.execute(w)
        nrhs, d = w.shape[1], self._d
        if not self.gradient:
            return out[:, 0] if vector else out
        u = out.reshape(out.shape[0], nrhs, 1 + d)
        g = u[:, :, 1:]
        return (u[:, 0, 0], g[:, 0, :]) if vector else (u[:, :, 0], g)
