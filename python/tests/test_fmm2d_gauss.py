"""FMM2D / cfmm2d, the Gauss transform, KDE and the gaussian_kde drop-in."""
import math

import numpy as np
import pytest

import ksum
from conftest import rel_l2

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")


def pairwise(z, zt=None):
    self_ = zt is None
    zt = z if self_ else zt
    dz = zt[:, None] - z[None, :]
    if self_:
        np.fill_diagonal(dz, np.nan)
    return dz


@pytest.mark.parametrize("tol", [1e-6, 1e-10])
def test_fmm2d_harmonic(rng, tol):
    n = 3000
    z = rng.random(n) + 1j * rng.random(n)
    q = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    u = ksum.FMM2D("harmonic", tol=tol).set_points(z)(q)
    ref = np.nansum(q[None, :] / pairwise(z), axis=1)
    assert np.max(np.abs(u - ref)) <= 10 * tol * np.max(np.abs(ref))


def test_fmm2d_real_coordinates_and_targets(rng):
    xy = rng.random((1500, 2))
    t = rng.random((2, 300))
    q = rng.standard_normal(1500)
    u = ksum.FMM2D("harmonic", tol=1e-10).set_points(xy, t.T)(q)  # (m, 2) rows
    z = xy[:, 0] + 1j * xy[:, 1]
    ref = (q[None, :] / pairwise(z, t[0] + 1j * t[1])).sum(1)
    assert u.shape == (300,)
    assert np.max(np.abs(u - ref)) <= 1e-9 * np.max(np.abs(ref))


def test_cfmm2d_matches_fmm2dpy_formula(rng):
    n, m = 2000, 400
    src = rng.random((2, n))
    c = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    tgt = rng.random((2, m))
    out = ksum.cfmm2d(eps=1e-10, sources=src, charges=c, targets=tgt, pg=2, pgt=2)
    z = src[0] + 1j * src[1]
    dz = pairwise(z)
    # FMM2D's cfmm2d: pot = sum c_j log|z - z_j| (complex charges), grad = sum c_j / (z - z_j)
    ref_pot = np.nansum(c[None, :] * np.log(np.abs(dz)), axis=1)
    ref_grad = np.nansum(c[None, :] / dz, axis=1)
    dzt = pairwise(z, tgt[0] + 1j * tgt[1])
    assert out.pot.shape == (n,) and out.grad.shape == (n,) and out.gradtarg.shape == (m,)
    assert rel_l2(out.pot, ref_pot) < 1e-9
    assert rel_l2(out.grad, ref_grad) < 1e-9
    assert rel_l2(out.pottarg, (c[None, :] * np.log(np.abs(dzt))).sum(1)) < 1e-9
    assert rel_l2(out.gradtarg, (c[None, :] / dzt).sum(1)) < 1e-9
    only = ksum.cfmm2d(eps=1e-10, sources=src, charges=c, targets=tgt, pgt=1)
    assert only.pot is None and only.pottarg.shape == (m,)


def test_fmm2d_errors(rng):
    with pytest.raises(ValueError, match="harmonic"):
        ksum.FMM2D("coulomb")
    with pytest.raises(ValueError):
        ksum.FMM2D().set_points(rng.random((10, 3)))
    p = ksum.FMM2D().set_points(rng.random(10) + 0j)
    with pytest.raises(ValueError):
        p(np.ones(9))
    with pytest.raises(ValueError, match="1-D"):
        p(np.ones((10, 2)))  # two real right-hand sides are not one complex strength
    two = ksum.FMM2D("log", tol=1e-12).set_points(np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert np.allclose(two(np.ones(2)), np.log(np.sqrt(2)))  # (2, 2) read as two (x, y) rows
    with pytest.raises(ValueError, match="nd = 2"):
        ksum.cfmm2d(eps=1e-6, sources=rng.random((2, 10)), charges=np.ones(10), nd=2)
    with pytest.raises(ksum.UnsupportedError):
        ksum.cfmm2d(eps=1e-6, sources=rng.random((2, 10)), charges=np.ones(10),
                    dipstr=np.ones(10))


# --- Gauss transform and KDE ------------------------------------------------------------

def gauss_reference(x, w, y, h):
    r2 = ((y[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    return np.exp(-r2 / h ** 2) @ w


@pytest.mark.parametrize("method", ["auto", "direct", "fgt", "ifgt"])
@pytest.mark.parametrize("d", [1, 3])
def test_gauss_transform_guarantee(rng, method, d):
    x, y = rng.random((800, d)), rng.random((300, d))
    w = rng.standard_normal(800)
    tol = 1e-8
    g = ksum.gauss_transform(x, w, y, h=0.3, tol=tol, method=method, backend="cpu")
    ref = gauss_reference(x, w, y, 0.3)
    assert np.max(np.abs(g - ref)) <= tol * np.abs(w).sum()


def test_gauss_transform_plan_several_rhs(rng):
    x = rng.random((600, 2))
    w = rng.random((600, 2))
    gt = ksum.GaussTransform(0.2, tol=1e-10, backend="cpu").set_points(x)
    g = gt(w)
    assert g.shape == (600, 2)
    assert np.max(np.abs(g - gauss_reference(x, w, x, 0.2))) <= 1e-10 * np.abs(w).sum(0).max()
    assert gt.stats["method"] in ("direct", "fgt", "ifgt")


def test_kde_diagonal(rng):
    data = rng.normal(size=(3000, 2)) * [1.0, 0.5]
    pts = rng.normal(size=(200, 2))
    kde = ksum.KDE(data, bandwidth=0.2, tol=1e-10, backend="cpu")
    f = kde(pts)
    s = 0.2
    ref = np.exp(-((pts[:, None, :] - data[None]) ** 2).sum(-1) / (2 * s * s)).sum(1)
    ref /= len(data) * 2 * math.pi * s * s
    peak = 1 / (2 * math.pi * s * s)
    assert np.max(np.abs(f - ref)) <= 1e-10 * peak * 1.0001
    assert np.allclose(kde.sigma, [0.2, 0.2])


def scipy_kde_reference(data, pts, cov, weights):
    """SciPy's definition written out: sum_i w_i N(x; x_i, cov)."""
    d = data.shape[0]
    inv = np.linalg.inv(cov)
    diff = pts.T[:, None, :] - data.T[None, :, :]
    q = np.einsum("mnk,kl,mnl->mn", diff, inv, diff)
    return (np.exp(-q / 2) @ weights) / np.sqrt(np.linalg.det(2 * math.pi * cov)) * 1.0


@pytest.mark.parametrize("bw", [None, "silverman", 0.3, "callable"])
def test_gaussian_kde_drop_in(rng, bw):
    a = np.array([[1.0, 0.6], [0.0, 0.8]])
    data = a @ rng.normal(size=(2, 1500))  # correlated: the full covariance matters
    pts = a @ rng.normal(size=(2, 120))
    bw_method = (lambda k: 0.25) if bw == "callable" else bw
    kde = ksum.gaussian_kde(data, bw_method=bw_method, tol=1e-11)
    cov = np.cov(data) * kde.factor ** 2
    ref = scipy_kde_reference(data, pts, cov, np.full(1500, 1 / 1500))
    f = kde(pts)
    assert np.max(np.abs(f - ref)) <= 1e-9 * ref.max()
    assert np.allclose(kde.covariance, cov)
    assert kde.neff == pytest.approx(1500) and kde.d == 2 and kde.n == 1500


def test_gaussian_kde_weights_and_1d(rng):
    data = rng.normal(size=800)
    w = rng.random(800)
    kde = ksum.gaussian_kde(data, weights=w)
    x = np.linspace(-3, 3, 50)
    wn = w / w.sum()
    cov = np.cov(data[None], aweights=wn) * kde.factor ** 2
    ref = scipy_kde_reference(data[None], x[None], np.atleast_2d(cov), wn)
    assert np.max(np.abs(kde(x) - ref)) <= 1e-9 * ref.max()
    assert kde.neff == pytest.approx(1 / np.sum(wn ** 2))
    assert kde.resample(10, seed=1).shape == (1, 10)


def test_gaussian_kde_against_scipy(rng):
    st = pytest.importorskip("scipy.stats")
    data = rng.normal(size=(3, 2000))
    pts = rng.normal(size=(3, 100))
    for bw in (None, "silverman", 0.4):
        ours = ksum.gaussian_kde(data, bw_method=bw)(pts)
        theirs = st.gaussian_kde(data, bw_method=bw)(pts)
        assert np.max(np.abs(ours - theirs)) <= 1e-9 * theirs.max()


def test_gauss_errors(rng):
    with pytest.raises(ValueError):
        ksum.gauss_transform(rng.random((10, 2)), np.ones(10), h=-1.0)
    with pytest.raises(ValueError):
        ksum.gauss_transform(rng.random((10, 2)), np.ones(10), h=1.0, tol=1e-20)
    with pytest.raises(ValueError, match="bw_method"):
        ksum.gaussian_kde(rng.normal(size=(2, 50)), bw_method="wide")
    with pytest.raises(ValueError, match="dimension"):
        ksum.gaussian_kde(rng.normal(size=(2, 50)))(np.zeros((3, 4)))
