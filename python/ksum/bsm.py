"""Dense inverses by the block Sherman–Morrison algorithms (seed 004 Paper III, ``ksum bsm`` from
Python): :func:`inv`, and :class:`InverseUpdate`, an inverse kept up to date under low-rank
changes A ← A + X Yᵀ by the Woodbury formula.

A matrix written A = A0 + X Yᵀ (A0 = diag(A) or I, X = A − A0, Y = I) has

    A⁻¹ = A0⁻¹ − A0⁻¹ U R⁻¹ Vᵀ A0⁻¹

with U, V built column by column ('svsm'), in blocks of ``block`` columns with level-3 BLAS only
('bsm') or accumulating H = U R⁻¹ Vᵀ ('rmbsm', less memory when m ≈ n); 'lu' is LAPACK
getrf + getri. The recursion needs every block R_k = I + Y_kᵀ A_(k−1)⁻¹ X_k nonsingular, which is
more than A being nonsingular; a pivot measure ρ_k ≤ ``pivot_threshold`` (default 100 u) is a
breakdown: ``fallback='lu'`` finishes with LU and says so in the statistics, ``fallback='error'``
raises :class:`ksum.InputError` naming the step. For one full inverse LU is usually the better
choice; the Woodbury formula pays for low-rank updates (docs/bsm.md).
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from numpy.typing import ArrayLike

from . import _arrays as A
from . import _ksum
from ._errors import InputError

__all__ = ["inv", "InverseUpdate"]


def _square(a, name, dtype):
    m = A.host_matrix(a, name, dtype)
    if m.shape[0] != m.shape[1]:
        raise InputError(f"{name}: expected a square matrix, got shape {m.shape}",
                         "shape_mismatch")
    return m


def _stats(d):
    d = dict(d)
    d["fallback_step"] = None if d["fallback_step"] < 0 else d["fallback_step"]
    d["gflops"] = d["flops"] / d["seconds"] / 1e9 if d["seconds"] > 0 else 0.0
    return d


def inv(a: ArrayLike, method: str = "bsm", *, block: int = 0, a0: str = "diagonal",
        fallback: str = "lu", pivot_threshold: float = 0.0, backend: str = "auto",
        threads: int = 0, precision: str = "auto") -> tuple[np.ndarray, dict]:
    """The inverse of the square matrix ``a`` and the run's statistics.

    method: 'svsm', 'bsm' (default), 'rmbsm' or 'lu'. block: the block size s of bsm and rmbsm
    (0: automatic, the library's choice, include/ksum/bsm.hpp). a0: the splitting's A0,
    'diagonal' (diag(a); a zero diagonal entry is refused) or 'identity'. fallback: 'lu' or
    'error' on a breakdown. pivot_threshold: the breakdown threshold on ρ_k (0: 100 u; negative:
    only exact zeros). backend: 'auto' or 'cpu' (the CPU), or 'gpu' (cuBLAS/cuSOLVER; a build with
    CUDA and a visible GPU). threads: BLAS threads (0: the library's default). precision: 'auto' (float32 stays float32, else float64),
    'float32' or 'float64'.

    Returns ``(a_inv, stats)``: a_inv a Fortran-ordered array of the computation's precision,
    stats a dict with method (the one that produced the result: 'lu' after a fallback),
    requested, block, fallback (bool), fallback_step (1-based, or None), min_pivot (the smallest
    ρ_k; for 'lu' the reciprocal condition estimate), seconds, flops (counted from the
    algorithm) and gflops.

    Errors: :class:`ksum.InputError` for a non-square matrix, NaN/Inf (naming row and column), a
    singular matrix, or a breakdown with fallback='error'.

    Example
    -------
    >>> import numpy as np
    >>> from ksum import bsm
    >>> a = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    >>> a_inv, stats = bsm.inv(a, method="bsm", block=2)
    >>> bool(np.allclose(a @ a_inv, np.eye(3))), stats["method"], stats["block"]
    (True, 'bsm', 2)
    """
    dtype = A.resolve_precision(precision, a)
    m = _square(a, "a", dtype)
    fn = _ksum.bsm_inverse_f32 if dtype == np.float32 else _ksum.bsm_inverse_f64
    out, st = fn(m, str(method), int(block), str(a0), str(fallback), float(pivot_threshold),
                 str(backend), int(threads))
    return out, _stats(st)


class InverseUpdate:
    """A⁻¹ kept up to date under rank-m changes A ← A + X Yᵀ, each in O(n²m) by the Woodbury
    formula (A + XYᵀ)⁻¹ = A⁻¹ − A⁻¹X (I + YᵀA⁻¹X)⁻¹ YᵀA⁻¹ instead of the O(n³) of refactoring.

    Give the matrix (``a``: factored once by LU) or its inverse (``inverse=``). A capacitance
    matrix I + YᵀA⁻¹X whose pivot measure or reciprocal condition estimate is ≤
    ``pivot_threshold`` (0: 100 u) is a breakdown: with fallback='lu' A + XYᵀ is refactored
    (``stats()['fallback']`` says so), with 'error' :meth:`update` raises and leaves the inverse
    unchanged. precision: 'auto' follows ``a`` (or ``inverse``). backend='gpu' keeps A⁻¹ in GPU
    memory: an update moves only x and y there, :meth:`solve` only b and the solution, and
    :attr:`inverse` brings the n × n inverse back when read.

    Example
    -------
    >>> import numpy as np
    >>> from ksum import bsm
    >>> a = np.diag([2.0, 3.0, 4.0])
    >>> up = bsm.InverseUpdate(a)
    >>> x, y = np.array([[1.0], [0.0], [1.0]]), np.array([[0.5], [1.0], [0.0]])
    >>> up.update(x, y)
    >>> bool(np.allclose(up.inverse, np.linalg.inv(a + x @ y.T)))
    True
    >>> np.round(up.solve(np.ones(3)), 6).tolist()
    [0.266667, 0.333333, 0.133333]
    """

    def __init__(self, a: Optional[ArrayLike] = None, *, inverse: Optional[ArrayLike] = None,
                 fallback: str = "lu", pivot_threshold: float = 0.0, backend: str = "auto",
                 threads: int = 0, precision: str = "auto"):
        if (a is None) == (inverse is None):
            raise InputError("InverseUpdate: give the matrix a or its inverse=, one of them",
                             "invalid_argument")
        self._dtype = A.resolve_precision(precision, a if a is not None else inverse)
        cls = _ksum.BsmInverseUpdate32 if self._dtype == np.float32 else _ksum.BsmInverseUpdate64
        self._impl = cls(str(fallback), float(pivot_threshold), str(backend), int(threads))
        if a is not None:
            self._impl.set_matrix(_square(a, "a", self._dtype))
        else:
            self._impl.set_inverse(_square(inverse, "inverse", self._dtype))

    @property
    def size(self) -> int:
        """n, the matrix's order."""
        return self._impl.size

    @property
    def inverse(self) -> np.ndarray:
        """The current inverse (a copy, Fortran-ordered)."""
        return self._impl.inverse()

    def update(self, x: ArrayLike, y: ArrayLike) -> None:
        """A ← A + x yᵀ with x, y of shape (n, m) (or (n,) for a rank-one change)."""
        n = self.size
        xm = A.host_matrix(x, "x", self._dtype, vector_ok=True)
        ym = A.host_matrix(y, "y", self._dtype, vector_ok=True)
        if xm.shape[0] != n or ym.shape != xm.shape:
            raise InputError(f"x {np.shape(x)} and y {np.shape(y)}: both must be (n, m) with "
                             f"n = {n}", "shape_mismatch")
        self._impl.update(xm, ym)

    def solve(self, b: ArrayLike) -> np.ndarray:
        """A⁻¹ b for b of shape (n,) or (n, k); the result has b's shape."""
        bm = A.host_matrix(b, "b", self._dtype, vector_ok=True)
        x = self._impl.solve(bm)
        return x[:, 0] if np.ndim(b) == 1 else x

    def stats(self) -> dict:
        """Statistics of the last factorisation or update, as :func:`inv` returns them."""
        return _stats(self._impl.stats())
