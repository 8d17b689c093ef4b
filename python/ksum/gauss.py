"""The Gauss transform (direct, FGT, IFGT) and kernel density estimation, including a
``scipy.stats.gaussian_kde`` drop-in."""
from __future__ import annotations

import math
import threading

import numpy as np
from numpy.typing import ArrayLike

from . import _arrays as A
from . import _ksum
from ._errors import InputError

__all__ = ["GaussTransform", "gauss_transform", "KDE", "gaussian_kde"]


class GaussTransform:
    """G(y_i) = sum_j q_j exp(-|y_i - x_j|^2 / h^2), exactly or fast with the guarantee
    |G^ - G| <= tol * sum_j |q_j| for every target.

    method: 'auto' (the cheapest by a cost model), 'direct', 'fgt' (Greengard–Strain, low
    dimensions), 'ifgt' (higher dimensions). h is the bandwidth as written above (SciPy's and
    seed 002's sigma is h / sqrt(2)). Arrays as in :class:`ksum.DirectSum`.

    Example
    -------
    >>> import numpy as np, ksum
    >>> x = np.random.default_rng(0).random((20000, 3))
    >>> gt = ksum.GaussTransform(h=0.1, tol=1e-8, backend="cpu").set_points(x)
    >>> g = gt(np.ones(20000))
    """

    def __init__(self, h=1.0, *, tol=1e-6, method="auto", backend="auto", precision="auto",
                 threads=0, device=0, order=0):
        self._args = (float(h), float(tol), str(method), str(backend), int(threads), int(device),
                      int(order))
        self.precision = precision
        self._plan = None
        self._lock = threading.Lock()

    def set_points(self, sources: ArrayLike,
                   targets: ArrayLike | None = None) -> "GaussTransform":
        with self._lock:
            dtype = A.resolve_precision(self.precision, sources)
            src = A.host_matrix(sources, "sources", dtype)
            tgt = None if targets is None else A.host_matrix(targets, "targets", dtype,
                                                             cols=src.shape[1])
            cls = _ksum.GaussTransformF32 if dtype == np.float32 else _ksum.GaussTransformF64
            plan = cls(*self._args)
            plan.set_points(src, tgt)
            self._plan, self._dtype = plan, dtype
            return self

    def __call__(self, weights: ArrayLike) -> np.ndarray:
        """weights (n,) or (n, r) -> (m,) or (m, r)."""
        if self._plan is None:
            raise InputError("set_points() must be called before summing", "invalid_argument")
        with self._lock:
            w = A.host_matrix(weights, "weights", self._dtype, vector_ok=True)
            out = self._plan.execute(w)
            return out[:, 0] if np.ndim(weights) == 1 else out

    @property
    def stats(self):
        return self._plan.stats if self._plan is not None else {}


def gauss_transform(sources: ArrayLike, weights: ArrayLike, targets: ArrayLike | None = None,
                    h: float = 1.0, tol: float = 1e-6, *, method: str = "auto",
                    backend: str = "auto", precision: str = "auto",
                    threads: int = 0) -> np.ndarray:
    """One-shot :class:`GaussTransform`: sum_j w_j exp(-|y_i - x_j|^2 / h^2) at the targets
    (the sources when targets is None; every pair counts, i = j included).

    Example
    -------
    >>> import numpy as np, ksum
    >>> x = np.random.default_rng(0).random((5000, 2))
    >>> g = ksum.gauss_transform(x, np.ones(5000), h=0.05, tol=1e-10, backend="cpu")
    """
    gt = GaussTransform(h, tol=tol, method=method, backend=backend, precision=precision,
                        threads=threads)
    return gt.set_points(sources, targets)(weights)


class KDE:
    """Kernel density estimate with a diagonal Gaussian bandwidth (ksum's ``ksum kde``):
    sigma_k per axis by Scott's or Silverman's rule on each column, or a fixed sigma.

    data (n, d); bandwidth 'scott' | 'silverman' | a number (sigma); weights (n,) optional.
    Every density value is within ``tol`` times the peak of one kernel of the exact sum.
    For SciPy's full-covariance estimator use :class:`gaussian_kde`.

    Example
    -------
    >>> import numpy as np, ksum
    >>> data = np.random.default_rng(0).normal(size=(10000, 2))
    >>> kde = ksum.KDE(data, bandwidth="scott", backend="cpu")
    >>> f = kde(np.zeros((1, 2)))
    """

    def __init__(self, data, bandwidth="scott", weights=None, *, tol=1e-6, method="auto",
                 backend="auto", precision="float64", threads=0):
        dtype = A.resolve_precision(precision, data)
        self._dtype = dtype
        self.data = A.host_matrix(data, "data", dtype, allow_int=True)
        self.weights = None if weights is None else A.host_matrix(weights, "weights", dtype,
                                                                  vector_ok=True,
                                                                  allow_int=True)
        if isinstance(bandwidth, str):
            self._rule, self._sigma = bandwidth, 0.0
        else:
            self._rule, self._sigma = "fixed", float(bandwidth)
        self._opts = (float(tol), str(method), str(backend), int(threads))
        self.info = None

    def __call__(self, points: ArrayLike) -> np.ndarray:
        """points (m, d) -> densities (m,)."""
        pts = A.host_matrix(points, "points", self._dtype, cols=self.data.shape[1],
                            allow_int=True)
        fn = _ksum.kde_f32 if self._dtype == np.float32 else _ksum.kde_f64
        out, self.info = fn(self.data, self.weights, pts, self._rule, self._sigma, *self._opts)
        return out[:, 0]

    @property
    def sigma(self):
        """The kernel standard deviations per axis (after the first evaluation)."""
        return None if self.info is None else np.array(self.info["sigma"])


class gaussian_kde:
    """A drop-in for ``scipy.stats.gaussian_kde`` evaluated by ksum's fast Gauss transform.

    Same constructor (dataset (d, n), bw_method None | 'scott' | 'silverman' | scalar | callable,
    weights), attributes (dataset, d, n, neff, factor, covariance, inv_cov, weights) and methods
    (evaluate / __call__ / pdf, logpdf, set_bandwidth, scotts_factor, silverman_factor,
    resample). The full covariance is used as in SciPy: points are whitened by its Cholesky
    factor and the Gauss transform sums in the whitened coordinates. Every value is within
    ``tol`` times the peak of one kernel, 1 / sqrt(det(2 pi covariance)), of the exact density
    (``tol`` default 1e-10); extra keywords: tol, method, backend.

    Example
    -------
    >>> import numpy as np, ksum
    >>> data = np.random.default_rng(0).normal(size=(2, 5000))
    >>> kde = ksum.gaussian_kde(data)             # scipy.stats.gaussian_kde(data)
    >>> kde(np.zeros((2, 3))).shape
    (3,)
    """

    def __init__(self, dataset, bw_method=None, weights=None, *, tol=1e-10, method="auto",
                 backend="auto"):
        A.reject_gpu(dataset=dataset, weights=weights)
        self.dataset = np.atleast_2d(np.asarray(dataset, dtype=float))
        if self.dataset.size <= 1:
            raise InputError("`dataset` input should have multiple elements.", "empty_input")
        self.d, self.n = self.dataset.shape
        if weights is not None:
            w = np.atleast_1d(np.asarray(weights, dtype=float))
            if w.ndim != 1:
                raise InputError("`weights` input should be one-dimensional.", "shape_mismatch")
            if len(w) != self.n:
                raise InputError("`weights` input should be of length n", "shape_mismatch")
            if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
                raise InputError("`weights` must be finite, non-negative and not all zero",
                                 "invalid_argument")
            self._weights = w / w.sum()
            self._neff = 1.0 / np.sum(self._weights ** 2)
        if not np.all(np.isfinite(self.dataset)):
            bad = np.argwhere(~np.isfinite(self.dataset))[0]
            raise InputError(f"dataset[{bad[0]}, {bad[1]}] is {self.dataset[tuple(bad)]}",
                             "non_finite")
        self._tol, self._method, self._backend = float(tol), str(method), str(backend)
        self.set_bandwidth(bw_method)

    @property
    def weights(self):
        try:
            return self._weights
        except AttributeError:
            self._weights = np.full(self.n, 1.0 / self.n)
            return self._weights

    @property
    def neff(self):
        try:
            return self._neff
        except AttributeError:
            self._neff = 1.0 / np.sum(self.weights ** 2)
            return self._neff

    def scotts_factor(self):
        return np.power(self.neff, -1.0 / (self.d + 4))

    def silverman_factor(self):
        return np.power(self.neff * (self.d + 2.0) / 4.0, -1.0 / (self.d + 4))

    covariance_factor = scotts_factor

    def set_bandwidth(self, bw_method=None):
        if bw_method is None:
            pass
        elif bw_method == "scott":
            self.covariance_factor = self.scotts_factor
        elif bw_method == "silverman":
            self.covariance_factor = self.silverman_factor
        elif np.isscalar(bw_method) and not isinstance(bw_method, str):
            self._bw_method = "use constant"
            self.covariance_factor = lambda: bw_method
        elif callable(bw_method):
            self._bw_method = bw_method
            self.covariance_factor = lambda: self._bw_method(self)
        else:
            raise InputError("`bw_method` should be 'scott', 'silverman', a scalar or a callable.",
                             "invalid_argument")
        self._compute_covariance()

    def _compute_covariance(self):
        self.factor = self.covariance_factor()
        if not hasattr(self, "_data_cho_cov"):
            self._data_covariance = np.atleast_2d(
                np.cov(self.dataset, rowvar=1, bias=False, aweights=self.weights))
            try:
                self._data_cho_cov = np.linalg.cholesky(self._data_covariance)
            except np.linalg.LinAlgError:
                raise InputError("the data's covariance matrix is singular (the points lie in a "
                                 "lower-dimensional subspace); gaussian_kde needs full rank",
                                 "invalid_argument") from None
        self.covariance = self._data_covariance * self.factor ** 2
        self.cho_cov = (self._data_cho_cov * self.factor).astype(np.float64)
        self.log_det = 2 * np.log(np.diag(self.cho_cov)).sum()

    @property
    def inv_cov(self):
        return np.linalg.inv(self.covariance)

    def _whiten(self, x):
        # L^{-1} x: (x - y)^T C^{-1} (x - y) = |L^{-1} x - L^{-1} y|^2 for C = L L^T.
        from numpy.linalg import solve
        return solve(self.cho_cov, x)

    def evaluate(self, points: ArrayLike) -> np.ndarray:
        A.reject_gpu(points=points)
        points = np.atleast_2d(np.asarray(points))
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                points = np.reshape(points, (self.d, 1))
                m = 1
            else:
                raise InputError(f"points have dimension {d}, dataset has dimension {self.d}",
                                 "shape_mismatch")
        if points.dtype.kind == "c":
            raise TypeError("points: complex values are not supported")
        points = points.astype(float)
        xs = self._whiten(self.dataset)  # (d, n): its transpose is an F-ordered (n, d) table
        ys = self._whiten(points)
        # exp(-|Δ|^2 / 2) = exp(-|Δ|^2 / h^2) with h = sqrt(2)
        g = gauss_transform(xs.T, self.weights, ys.T, h=math.sqrt(2.0), tol=self._tol,
                            method=self._method, backend=self._backend, precision="float64")
        norm = math.exp(-0.5 * self.log_det) / (2 * math.pi) ** (self.d / 2)
        return np.asarray(g) * norm

    __call__ = evaluate
    pdf = evaluate

    def logpdf(self, x):
        """log of the density (the log of the fast sum; -inf where it underflows to 0)."""
        with np.errstate(divide="ignore"):
            return np.log(self.evaluate(x))

    def resample(self, size=None, seed=None):
        """Draws size points (d, size) from the estimate (as SciPy does)."""
        if size is None:
            size = int(self.neff)
        rng = np.random.default_rng(seed) if not isinstance(seed, np.random.Generator) else seed
        norm = rng.multivariate_normal(np.zeros(self.d), self.covariance, size=size).T
        idx = rng.choice(self.n, size=size, p=self.weights)
        return self.dataset[:, idx] + norm
