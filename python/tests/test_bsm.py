"""ksum.bsm (seed 004 Paper III): inv() of every method against numpy.linalg.inv, InverseUpdate
against the inverse of the updated matrix, breakdown and fallback, the errors, the docstrings.

Tolerance (as tests/linalg/bsm_test.cpp): ‖A⁻¹ − A⁻¹_ref‖_F / ‖A⁻¹_ref‖_F ≤ c κ_F(A) u with
κ_F(A) = ‖A‖_F ‖A⁻¹_ref‖_F, u = 2⁻⁵³ (float64) or 2⁻²⁴ (float32) and c = 10; the C++ test
measured at most 0.31 (fp64) and 0.42 (fp32) for err / (κ u)."""
import doctest

import numpy as np
import pytest

import ksum
from ksum import bsm

C = 10.0
U64 = 2.0 ** -53
U32 = 2.0 ** -24


def random_matrix(rng, n):
    return np.eye(n) + rng.standard_normal((n, n)) / (2 * np.sqrt(n))


def dominant_matrix(rng, n):
    a = rng.uniform(-1, 1, (n, n))
    np.fill_diagonal(a, 0)
    np.fill_diagonal(a, rng.choice([-1.0, 1.0], n) * (1 + np.abs(a).sum(1)))
    return a


def check(a_inv, a, u):
    ref = np.linalg.inv(np.asarray(a, dtype=np.float64))
    kappa = np.linalg.norm(a) * np.linalg.norm(ref)
    err = np.linalg.norm(np.asarray(a_inv, dtype=np.float64) - ref) / np.linalg.norm(ref)
    assert err <= C * kappa * u, (err, kappa)


CASES = [("svsm", 0), ("bsm", 1), ("bsm", 4), ("bsm", 0), ("rmbsm", 5), ("rmbsm", 0), ("lu", 0)]


@pytest.mark.parametrize("n", [1, 5, 64, 200])
@pytest.mark.parametrize("method,block", CASES)
def test_inverse_matches_numpy_in_float64(rng, n, method, block):
    for make in (random_matrix, dominant_matrix):
        a = make(rng, n)
        a_inv, st = bsm.inv(a, method, block=block, fallback="error")
        assert a_inv.dtype == np.float64 and a_inv.shape == (n, n)
        check(a_inv, a, U64)
        assert st["method"] == method and st["requested"] == method
        assert not st["fallback"] and st["fallback_step"] is None
        assert st["flops"] > 0 and st["seconds"] >= 0
        if method in ("bsm", "rmbsm"):
            # automatic: the library's choice (bsm.hpp), within 1 … n
            assert st["block"] == min(block, n) if block else 1 <= st["block"] <= n


@pytest.mark.parametrize("method", ["svsm", "bsm", "rmbsm", "lu"])
def test_float32_and_identity_splitting(rng, method):
    a = random_matrix(rng, 64)
    a_inv, _ = bsm.inv(a.astype(np.float32), method)
    assert a_inv.dtype == np.float32
    check(a_inv, a.astype(np.float32), U32)
    a_inv, _ = bsm.inv(a, method, a0="identity", block=16, precision="float64")
    check(a_inv, a, U64)
    # Any layout and a list are accepted (copied once).
    check(bsm.inv(np.ascontiguousarray(a.T).T)[0], a, U64)
    check(bsm.inv(a.tolist())[0], a, U64)


def leading_minor_singular():
    """Nonsingular, but its leading 3 × 3 block is singular: the recursion with A0 = diag(A)
    breaks down at step 3 (bsm_test.cpp)."""
    a = np.zeros((6, 6))
    a[:3, :3] = [[2, 1, 1], [1, 2, 1], [3, 3, 2]]
    for i in range(3):
        a[i, i + 3] = 1
        a[i + 3, i] = 1 + 0.1 * i
        a[i + 3, i + 3] = 5
    return a


def test_breakdown_raises_or_falls_back_to_lu():
    a = leading_minor_singular()
    with pytest.raises(ksum.InputError, match="svsm broke down at step 3") as e:
        bsm.inv(a, "svsm", fallback="error")
    assert e.value.code == "invalid_argument"
    a_inv, st = bsm.inv(a, "svsm")
    check(a_inv, a, U64)
    assert st["fallback"] and st["fallback_step"] == 3
    assert st["method"] == "lu" and st["requested"] == "svsm"
    assert st["min_pivot"] < 1e-12


def test_inverse_update_matches_refactoring(rng):
    n = 80
    a = dominant_matrix(rng, n)
    up = bsm.InverseUpdate(a)
    assert up.size == n
    check(up.inverse, a, U64)
    for m in (1, 8, 3):
        x, y = rng.standard_normal((n, m)), rng.standard_normal((n, m))
        a = a + x @ y.T
        up.update(x, y)
        check(up.inverse, a, U64)
        st = up.stats()
        assert not st["fallback"] and st["min_pivot"] > 1e-6
        b = rng.standard_normal(n)
        ref = np.linalg.solve(a, b)
        kappa = np.linalg.cond(a, "fro")
        sol = up.solve(b)
        assert sol.shape == (n,)
        assert np.linalg.norm(sol - ref) <= C * kappa * U64 * np.linalg.norm(ref)
        assert up.solve(np.c_[b, 2 * b]).shape == (n, 2)
    # Rank one with 1-D vectors, from a given inverse.
    a1 = random_matrix(rng, 30)
    up1 = bsm.InverseUpdate(inverse=np.linalg.inv(a1))
    x, y = rng.standard_normal(30) / 10, rng.standard_normal(30) / 10
    up1.update(x, y)
    check(up1.inverse, a1 + np.outer(x, y), U64)


@pytest.mark.gpu
def test_inverse_update_on_the_gpu(rng):
    # The inverse stays on the GPU between updates; each state read back matches refactoring.
    n = 90
    a = dominant_matrix(rng, n)
    up = bsm.InverseUpdate(a, backend="gpu")
    check(up.inverse, a, U64)
    for m in (1, 5, 2):
        x, y = rng.standard_normal((n, m)), rng.standard_normal((n, m))
        a = a + x @ y.T
        up.update(x, y)
        b = rng.standard_normal(n)
        ref = np.linalg.solve(a, b)
        kappa = np.linalg.cond(a, "fro")
        assert np.linalg.norm(up.solve(b) - ref) <= C * kappa * U64 * np.linalg.norm(ref)
    check(up.inverse, a, U64)
    assert not up.stats()["fallback"]


def test_singular_update_is_refused_or_refactored():
    x, y = np.zeros((4, 1)), np.zeros((4, 1))
    x[0, 0], y[0, 0] = -1.0, 1.0  # I + x yᵀ zeroes a_11
    up = bsm.InverseUpdate(np.eye(4), fallback="error")
    with pytest.raises(ksum.InputError, match="capacitance"):
        up.update(x, y)
    assert np.array_equal(up.inverse, np.eye(4))  # unchanged
    half = bsm.InverseUpdate(np.eye(4), pivot_threshold=0.9)
    half.update(x / 2, y)
    assert half.stats()["fallback"]
    assert half.inverse[0, 0] == pytest.approx(2.0)


def test_errors_name_the_input(rng):
    a = dominant_matrix(rng, 5)
    a[2, 1] = np.nan
    with pytest.raises(ksum.InputError, match=r"row 2, column 1 \(0-based\): nan") as e:
        bsm.inv(a)
    assert e.value.code == "non_finite"
    with pytest.raises(ksum.InputError, match=r"expected a square matrix, got shape \(3, 4\)"):
        bsm.inv(np.ones((3, 4)))
    with pytest.raises(ksum.InputError, match="2-D"):
        bsm.inv(np.ones(4))
    with pytest.raises(ksum.InputError, match="the matrix A is singular"):
        bsm.inv(np.array([[1.0, 2.0], [2.0, 4.0]]), "lu")
    with pytest.raises(ksum.InputError, match="unknown method 'qr'"):
        bsm.inv(np.eye(3), "qr")
    with pytest.raises(ksum.InputError, match="one of them"):
        bsm.InverseUpdate()
    up = bsm.InverseUpdate(np.eye(3))
    with pytest.raises(ksum.InputError, match="both must be"):
        up.update(np.ones((3, 2)), np.ones((3, 1)))
    with pytest.raises(ksum.InputError, match="non-finite"):
        up.update(np.full((3, 1), np.inf), np.ones((3, 1)))


def test_docstring_examples():
    res = doctest.testmod(bsm, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0
