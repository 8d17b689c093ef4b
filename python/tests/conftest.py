"""Shared fixtures and fp64 references for the Python tests (the C++ tests' tolerances)."""
import os

import numpy as np
import pytest

import ksum

# JAX would otherwise take 75 % of the GPU's memory at its first use, starving CuPy and PyTorch.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def _gpu_count():
    try:
        return len(ksum.info()["gpus"])
    except Exception:
        return 0


HAVE_GPU = _gpu_count() > 0


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU and ksum built with CUDA")
    for item in items:
        if "gpu" in item.keywords and not HAVE_GPU:
            item.add_marker(skip)


@pytest.fixture
def rng():
    return np.random.default_rng(20261125)


# phi(s) in float64 numpy, written from the catalogue's formulas (README's kernel table).
PHI = {
    "laplace": lambda s: 1.0 / s,
    "gaussian": lambda s: np.exp(-s * s),
    "multiquadric": lambda s: np.sqrt(1 + s * s),
    "inverse-multiquadric": lambda s: 1 / np.sqrt(1 + s * s),
    "matern4": lambda s: np.exp(-s) * (s * s + 3 * s + 3),
    "tps": lambda s: np.where(s > 0, s * s * np.log(np.where(s > 0, s, 1)), 0.0),
}


def direct_reference(kernel, eps, src, tgt, w, gradient=False):
    """u_r(y_i) = sum_j w_jr phi(eps |y_i - x_j|) in float64; tgt None: targets = sources with
    the self term left out. With gradient: (u, grad) with grad (m, r, d) by central formulas."""
    src = np.asarray(src, float)
    self_ = tgt is None
    tgt = src if self_ else np.asarray(tgt, float)
    w = np.asarray(w, float).reshape(len(src), -1)
    diff = tgt[:, None, :] - src[None, :, :]
    r = np.sqrt((diff ** 2).sum(-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        k = PHI[kernel](eps * r)
    if kernel == "laplace":
        k[r == 0] = 0
    if self_:
        np.fill_diagonal(k, 0)
    u = k @ w
    if not gradient:
        return u
    h = 1e-6
    with np.errstate(divide="ignore", invalid="ignore"):
        kp = (PHI[kernel](eps * (r + h)) - PHI[kernel](eps * np.abs(r - h))) / (2 * h)
        unit = np.where(r[..., None] > 0, diff / r[..., None], 0)
    if kernel == "laplace":
        with np.errstate(divide="ignore"):
            kp = -1.0 / (eps * r * r)  # d/dr 1/(eps r)
        kp[r == 0] = 0
    if self_:
        np.fill_diagonal(kp, 0)
    g = np.einsum("ij,ijk,jr->irk", kp, unit, w)
    return u, g


def rel_l2(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))
