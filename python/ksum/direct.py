"""Kernel sums: the direct sum (CPU, GPU, and GPU arrays in place), the 3D FMM, and fmm3dpy's
``lfmm3d`` call."""
from __future__ import annotations

import math
import threading
import warnings

import numpy as np
from numpy.typing import ArrayLike

from . import _arrays as A
from . import _ksum
from ._errors import InputError, UnsupportedError

__all__ = ["DirectSum", "FMM3D", "kernel_sum", "lfmm3d", "FMMOutput"]


def _format(raw, nrhs, d, gradient, vector):
    """raw: (nrhs·(1+d·gradient), m) C-ordered (NumPy, CuPy or PyTorch) -> u (m,) / (m, r) and,
    with the gradient, grad (m, d) / (m, r, d). Views, no copies."""
    m = raw.shape[1]
    if not gradient:
        u = raw.T
        return u[:, 0] if vector else u
    r3 = raw.reshape(nrhs, 1 + d, m)
    u = r3[:, 0, :].T
    g = A.permute(r3[:, 1:, :], (2, 0, 1))  # (m, r, d)
    if vector:
        return u[:, 0], g[:, 0, :]
    return u, g


class DirectSum:
    """u_r(x_i) = sum_j w_{j,r} K(|x_i - y_j|), K = phi(eps r), and optionally its gradient.

    A plan: ``set_points`` does the geometry work once (sorting, trees, uploads), calling the plan
    with weights is cheap and repeatable.

    Parameters
    ----------
    kernel : str
        A name of the catalogue (``ksum.info()['kernels']``): 'laplace' (1/r), 'gaussian',
        'multiquadric', 'matern4', 'tps', 'log' (2D), ...
    eps : float
        Shape parameter: K(r) = phi(eps r).
    backend : 'auto' | 'cpu' | 'gpu'
        'auto' runs on a GPU when one is visible.
    precision : 'auto' | 'float32' | 'float64'
        'auto' follows the sources' dtype.
    method : 'direct' | 'fmm' | 'fgt' | 'auto'
        direct: every pair (exact to rounding); fmm: the 3D fast multipole method to relative
        error ``tol``; fgt: the fast Gauss transform (gaussian kernel); auto: the fastest of
        direct, fmm (3D) and, for the gaussian kernel, fgt, predicted from rates timed on this
        machine (``stats['note']`` says what it chose and why).
    tol : float
        FMM: relative l2 error of u; fgt: absolute error relative to sum |w|.
    force_method : bool
        fgt: run the fast Gauss transform even where its cost model predicts the direct sum
        cheaper; otherwise such a plan runs the direct sum and ``stats['note']`` says why.
    threads : int
        CPU threads (0: OpenMP's default).

    Arrays: sources (n, d), targets (m, d), weights (n,) or (n, r). NumPy arrays that are
    Fortran-ordered (or transposes of C-ordered (d, n) arrays) in the plan's precision are read
    in place; others are copied once (``ksum.config.warn_on_copy`` reports it). CuPy arrays and
    PyTorch CUDA tensors are summed on their GPU (method 'direct') with no host round trip, and
    the result comes back as the same kind of array on the same device (JAX arrays too, through
    DLPack with CuPy or PyTorch holding ksum's buffers). The computation releases
    the GIL. One plan object may be used from several threads (calls are serialised).

    Example
    -------
    >>> import numpy as np, ksum
    >>> x = np.random.default_rng(0).random((1000, 3))
    >>> plan = ksum.DirectSum("laplace", backend="cpu").set_points(x)
    >>> u = plan(np.ones(1000))          # sum over j != i of 1 / |x_i - x_j|
    >>> u.shape
    (1000,)
    """

    _method = "direct"

    def __init__(self, kernel: str = "laplace", eps: float = 1.0, *, backend: str = "auto",
                 precision: str = "auto", method: str | None = None, tol: float = 1e-6,
                 threads: int = 0, devices: list[int] | None = None, fmm_order: int = 0,
                 leaf_size: int = 0, device_memory_limit: int = 0,
                 force_method: bool = False) -> None:
        self.kernel = str(kernel)
        self.eps = float(eps)
        self.backend = str(backend)
        self.precision = precision
        self.method = str(method if method is not None else self._method)
        self.tol = float(tol)
        self.threads = int(threads)
        self.devices = list(devices or [])
        self._extra = (int(fmm_order), int(leaf_size), int(device_memory_limit))
        self.force_method = bool(force_method)
        self._lock = threading.Lock()
        self._plan = None
        self._points = None
        self._jax = False
        _ksum.coord_scale(self.kernel, self.eps)  # validates the kernel name now

    def _make(self, dtype):
        cls = _ksum.DirectSumF32 if dtype == np.float32 else _ksum.DirectSumF64
        return cls(self.kernel, self.eps, False, self.backend, self.method, self.tol,
                   self.threads, self.devices, *self._extra, force_method=self.force_method)

    def set_points(self, sources: ArrayLike, targets: ArrayLike | None = None) -> "DirectSum":
        """Sets the sources (n, d) and the targets (m, d); without targets the targets are the
        sources and the self term j = i is left out. Returns the plan."""
        with self._lock:
            self._plan = None
            if A.is_gpu_array(sources):
                self._set_device(sources, targets)
                return self
            dtype = A.resolve_precision(self.precision, sources)
            src = A.host_matrix(sources, "sources", dtype)
            tgt = None if targets is None else A.host_matrix(targets, "targets", dtype,
                                                             cols=src.shape[1])
            plan = self._make(dtype)
            plan.set_points(src, tgt)  # the plan keeps its own (scaled) copy of the geometry
            self._points = ("host", dtype, src.shape[1])
            self._plan = plan
            return self

    def _set_device(self, sources, targets):
        if self.method != "direct":
            # The FMM and the FGT plans read host memory: the points go through the host once,
            # here; each call then moves only the weights and the result.
            warnings.warn(f"method '{self.method}' reads host arrays: the GPU arrays are copied "
                          "to the host and the results back (method 'direct' sums GPU arrays in "
                          "place)", A.CopyWarning, stacklevel=3)
            host = DirectSum(self.kernel, self.eps, backend=self.backend,
                             precision=self.precision, method=self.method, tol=self.tol,
                             threads=self.threads, devices=self.devices,
                             force_method=self.force_method)
            host.set_points(A.to_host(sources), None if targets is None else A.to_host(targets))
            self._points = ("device-staged", host)
            return
        if self.backend == "cpu":
            raise InputError("backend='cpu' with sources in GPU memory: use backend 'auto' or "
                             "'gpu', or pass NumPy arrays", "invalid_argument")
        self._jax = A.framework(sources) == "jax"
        if self._jax:  # JAX arrays: viewed as CuPy/PyTorch arrays through DLPack, no copy
            sources = A.from_jax(sources)
            targets = None if targets is None else A.from_jax(targets)
        dtype = np.float32 if str(sources.dtype).endswith("float32") else np.float64
        c = _ksum.coord_scale(self.kernel, self.eps)
        src = A.device_columns(sources, "sources", dtype, c)
        tgt = None
        if targets is not None:
            if not A.is_gpu_array(targets):
                raise InputError("targets: sources are in GPU memory, targets are not; pass both "
                                 "on the same device", "invalid_argument")
            tgt = A.device_columns(targets, "targets", dtype, c, cols=src.shape[0])
        self._points = ("device", dtype, src, tgt)

    @property
    def stats(self):
        """What the plan did: method, FMM order, tree, leaf size, mean M2L rank (0: full
        operators), timings (seconds; ``seconds_transfer``: the GPU FMM's weights in and results
        out)."""
        if self._points and self._points[0] == "device-staged":
            return self._points[1].stats
        return self._plan.stats if self._plan is not None else {}

    @property
    def backend_in_use(self):
        if self._plan is not None:
            return self._plan.backend
        if self._points and self._points[0] == "device-staged":
            return self._points[1].backend_in_use
        return "gpu" if self._points else None

    def __call__(self, weights: ArrayLike, gradient: bool = False):
        """Sums with weights (n,) or (n, r). Returns u of shape (m,) or (m, r); with
        ``gradient=True`` the pair (u, grad) with grad (m, d) or (m, r, d), the gradient with
        respect to the target point."""
        if self._points is None:
            raise InputError("set_points() must be called before summing", "invalid_argument")
        if not isinstance(gradient, (bool, np.bool_)):
            raise TypeError(f"gradient: expected True or False, got {gradient!r}")
        gradient = bool(gradient)
        with self._lock:
            kind = self._points[0]
            if kind == "device":
                return self._call_device(weights, gradient)
            if kind == "device-staged":
                return self._call_staged(weights, gradient)
            _, dtype, d = self._points
            w = A.host_matrix(weights, "weights", dtype, vector_ok=True)
            vector = np.ndim(weights) == 1
            raw = self._plan.execute(w, gradient).T
            return _format(raw, w.shape[1], d, gradient, vector)

    def _call_device(self, weights, gradient):
        _, dtype, src, tgt = self._points
        if not A.is_gpu_array(weights):
            raise InputError("weights: the points are in GPU memory, the weights are not; pass "
                             "them on the same device", "invalid_argument")
        vector = weights.ndim == 1
        if self._jax:
            weights = A.from_jax(weights)
        w = A.device_columns(weights, "weights", dtype, vector_ok=True)
        d, m = src.shape[0], (tgt if tgt is not None else src).shape[1]
        nrhs = w.shape[0]
        out = A.device_empty(src, (nrhs * (1 + d * gradient), m), dtype)
        fn = _ksum.device_sum_f32 if dtype == np.float32 else _ksum.device_sum_f64
        A.sync_current_stream(out)  # our copies above were queued on the caller's stream
        fn(self.kernel, self.eps, gradient, src, tgt, w, out)
        res = _format(out, nrhs, d, gradient, vector)
        if self._jax:  # back to JAX through DLPack (a device copy makes the views contiguous)
            return tuple(A.to_jax(r) for r in res) if gradient else A.to_jax(res)
        return res

    def _call_staged(self, weights, gradient):
        host = self._points[1]
        res = host(A.to_host(weights), gradient)
        if gradient:
            return tuple(A.to_device_like(np.ascontiguousarray(r), weights) for r in res)
        return A.to_device_like(np.ascontiguousarray(res), weights)


class FMM3D(DirectSum):
    """The 3D fast multipole method as a plan: ``DirectSum`` with ``method='fmm'``.

    Any kernel of the catalogue (Chebyshev interpolation); the relative l2 error of u is at most
    ``tol`` (1e-11 ... 0.1 in float64, 1e-6 ... 0.1 in float32). Sources (n, 3).

    Example
    -------
    >>> import numpy as np, ksum
    >>> x = np.random.default_rng(1).random((20000, 3))
    >>> fmm = ksum.FMM3D("laplace", tol=1e-6, backend="cpu").set_points(x)
    >>> u = fmm(np.ones(20000))
    """

    _method = "fmm"

    def __init__(self, kernel: str = "laplace", eps: float = 1.0, *, tol: float = 1e-6,
                 **kwargs) -> None:
        super().__init__(kernel, eps, tol=tol, **kwargs)


def kernel_sum(sources: ArrayLike, weights: ArrayLike, targets: ArrayLike | None = None, *,
               kernel: str = "laplace", eps: float = 1.0, gradient: bool = False, **options):
    """One-shot ``DirectSum(kernel, eps, **options).set_points(sources, targets)(weights,
    gradient)``.

    Example
    -------
    >>> import numpy as np, ksum
    >>> x = np.random.default_rng(0).random((500, 2))
    >>> u = ksum.kernel_sum(x, np.ones(500), kernel="gaussian", eps=3.0, backend="cpu")
    """
    return DirectSum(kernel, eps, **options).set_points(sources, targets)(weights, gradient)


class FMMOutput:
    """Results in fmm3dpy's/fmm2dpy's layout: ``pot``, ``grad`` at the sources, ``pottarg``,
    ``gradtarg`` at the targets (None where not asked for), ``ier`` = 0."""

    def __init__(self):
        self.pot = self.grad = self.hess = None
        self.pottarg = self.gradtarg = self.hesstarg = None
        self.ier = 0

    def __repr__(self):
        have = [k for k in ("pot", "grad", "pottarg", "gradtarg") if getattr(self, k) is not None]
        return f"FMMOutput({', '.join(have)})"


def _fmm_call_checks(fn, charges, dipoles, sources, targets, pg, pgt):
    """The argument rules fmm3dpy's and fmm2dpy's calls share; returns (pg, pgt)."""
    if dipoles:
        raise UnsupportedError(f"{fn}: dipoles are not supported by ksum; charges only",
                               "unsupported")
    if charges is None:
        raise InputError(f"{fn}: charges are required (ksum has no dipole-only mode)",
                         "invalid_argument")
    A.reject_gpu(sources=sources, charges=charges, targets=targets)
    if pg is None:
        pg = 0 if pgt else 1
    for name, v in (("pg", pg), ("pgt", pgt)):
        if v not in (0, 1, 2, 3):
            raise InputError(f"{fn}: {name} = {v}: expected 0, 1 or 2", "invalid_argument")
        if v == 3:
            raise UnsupportedError(f"{fn}: {name} = 3 (Hessians) is not supported; use 1 or 2",
                                   "unsupported")
    if pg == 0 and pgt == 0:
        raise InputError(f"{fn}: pg and pgt are both 0: nothing to compute", "invalid_argument")
    if pgt and targets is None:
        raise InputError(f"{fn}: pgt = {pgt} needs targets", "invalid_argument")
    return pg, pgt


_INV_4PI = 1.0 / (4.0 * math.pi)
_FMM_TOL = (1e-11, 0.1)


def _fmm_tol(eps, dtype):
    lo = 1e-6 if dtype == np.float32 else _FMM_TOL[0]
    tol = float(eps)
    if not (tol > 0 and math.isfinite(tol)):
        raise InputError(f"eps = {eps}: the precision must be a positive number",
                         "invalid_argument")
    if tol < lo:
        warnings.warn(f"eps = {eps:g} is below what ksum's FMM guarantees in this precision; "
                      f"using {lo:g}", RuntimeWarning, stacklevel=3)
        tol = lo
    return min(tol, _FMM_TOL[1])


def lfmm3d(eps: float, sources: ArrayLike, charges: ArrayLike | None = None,
           dipvec: ArrayLike | None = None, targets: ArrayLike | None = None,
           pg: int | None = None,
           pgt: int = 0, nd: int = 1, *, backend: str = "auto", precision: str = "float64",
           threads: int = 0) -> FMMOutput:
    """fmm3dpy's ``lfmm3d`` on ksum's FMM: same argument names, shapes and outputs.

    pot(x) = sum_j charges_j / (4 pi |x - x_j|) (the self term left out at the sources),
    grad = its gradient. sources (3, n), charges (n,) or (nd, n), targets (3, m). pg / pgt:
    1 potential, 2 potential and gradient, at the sources / targets (pg not given: 1, or 0 when
    pgt asks for targets only, as fmm3dpy). Returns an
    :class:`FMMOutput` with ``pot`` (n,) or (nd, n), ``grad`` (3, n) or (nd, 3, n), ``pottarg``,
    ``gradtarg``. Dipoles and Hessians (pg = 3) are not supported: they raise
    ``ksum.UnsupportedError``.

    Switching from fmm3dpy: ``import ksum as fmm3d`` and the call stays
    ``fmm3d.lfmm3d(eps=1e-6, sources=src, charges=q, pg=2)``; ksum runs on the GPU when one is
    visible (``backend='auto'``).

    Example
    -------
    >>> import numpy as np, ksum
    >>> src = np.random.default_rng(0).random((3, 5000))
    >>> out = ksum.lfmm3d(eps=1e-6, sources=src, charges=np.ones(5000), pg=2, backend="cpu")
    >>> out.pot.shape, out.grad.shape
    ((5000,), (3, 5000))
    """
    pg, pgt = _fmm_call_checks("lfmm3d", charges, dipvec is not None, sources, targets, pg, pgt)
    dtype = A.resolve_precision(precision, sources)
    src = A.host_matrix(sources, "sources", dtype, layout="columns", cols=3)
    q = np.asarray(charges)
    if q.dtype.kind == "c":
        raise UnsupportedError("lfmm3d: complex charges are not supported; sum the real and "
                               "imaginary parts separately", "unsupported")
    nd = int(nd)
    if nd == 1 and q.ndim == 2 and q.shape[0] == 1:
        q = q[0]
    if nd > 1 and (q.ndim != 2 or q.shape[0] != nd):
        raise InputError(f"lfmm3d: nd = {nd} needs charges of shape ({nd}, n), got {q.shape}",
                         "shape_mismatch")
    if nd == 1 and q.ndim != 1:
        raise InputError(f"lfmm3d: charges must have shape (n,) (or (nd, n) with nd > 1), got "
                         f"{q.shape}", "shape_mismatch")
    w = A.host_matrix(q, "charges", dtype, layout="columns" if q.ndim == 2 else "rows",
                      vector_ok=True)
    if w.shape[0] != src.shape[0]:
        raise InputError(f"lfmm3d: {w.shape[0]} charges for {src.shape[0]} sources",
                         "shape_mismatch")
    tol = _fmm_tol(eps, dtype)
    out = FMMOutput()

    plan = _ksum.DirectSumF32 if dtype == np.float32 else _ksum.DirectSumF64

    def run(tgt, level):
        p = plan("laplace", 1.0, False, backend, "fmm", tol, int(threads), [], 0, 0, 0)
        p.set_points(src, tgt)
        pot = p.execute(w).T  # (nd, m), ours: scaled in place
        pot *= _INV_4PI
        g = None
        if level >= 2:
            # ksum's FMM computes potentials only: the gradient is the exact direct sum (the GPU
            # when one is visible), O(n m) work.
            if src.shape[0] * (src.shape[0] if tgt is None else tgt.shape[0]) > 1e11:
                warnings.warn("lfmm3d: the gradient is summed directly (ksum's FMM gives "
                              "potentials only): O(n m) work", RuntimeWarning, stacklevel=3)
            pg_ = plan("laplace", 1.0, True, backend, "direct", tol, int(threads), [], 0, 0, 0)
            pg_.set_points(src, tgt)
            raw = pg_.execute(w).T.reshape(nd, 4, -1)
            g = raw[:, 1:, :]
            g *= _INV_4PI
        if nd == 1:
            pot = pot[0]
            g = g[0] if g is not None else None
        return pot, g

    if pg:
        out.pot, out.grad = run(None, pg)
    if pgt:
        tgt = A.host_matrix(targets, "targets", dtype, layout="columns", cols=3)
        out.pottarg, out.gradtarg = run(tgt, pgt)
    return out
