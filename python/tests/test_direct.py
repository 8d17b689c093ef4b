"""DirectSum / kernel_sum / FMM3D / lfmm3d against float64 references."""
import math
import threading
import warnings

import numpy as np
import pytest

import ksum
from conftest import direct_reference, rel_l2


@pytest.mark.parametrize("kernel,eps", [("laplace", 1.0), ("gaussian", 2.5),
                                        ("multiquadric", 0.7), ("matern4", 3.0)])
@pytest.mark.parametrize("d", [2, 3])
def test_direct_matches_reference(rng, kernel, eps, d):
    x = rng.random((300, d))
    w = rng.standard_normal(300)
    u = ksum.DirectSum(kernel, eps, backend="cpu").set_points(x)(w)
    ref = direct_reference(kernel, eps, x, None, w)[:, 0]
    assert u.shape == (300,)
    assert rel_l2(u, ref) < 1e-12


def test_targets_and_several_rhs(rng):
    x, y = rng.random((250, 3)), rng.random((170, 3))
    w = rng.standard_normal((250, 3))
    u = ksum.kernel_sum(x, w, y, kernel="gaussian", eps=2.0, backend="cpu")
    assert u.shape == (170, 3)
    assert rel_l2(u, direct_reference("gaussian", 2.0, x, y, w)) < 1e-12


def test_gradient(rng):
    x = rng.random((200, 3))
    w = rng.standard_normal((200, 2))
    plan = ksum.DirectSum("gaussian", 1.5, backend="cpu").set_points(x)
    u, g = plan(w, gradient=True)
    ru, rg = direct_reference("gaussian", 1.5, x, None, w, gradient=True)
    assert g.shape == (200, 2, 3)
    assert rel_l2(u, ru) < 1e-12
    assert rel_l2(g, rg) < 1e-7  # the reference's central differences
    u1, g1 = plan(w[:, 0], gradient=True)
    assert g1.shape == (200, 3) and np.allclose(g1, g[:, 0, :], rtol=0, atol=1e-12)
    assert np.allclose(plan(w), u)  # the value plan is still there


def test_gradient_uses_the_geometry_of_set_points(rng):
    # the plan keeps its geometry: changing the caller's (zero-copy) array afterwards changes
    # neither the values nor the gradients
    x = np.asfortranarray(rng.random((200, 3)))
    keep = x.copy()
    w = rng.standard_normal(200)
    plan = ksum.DirectSum("gaussian", 2.0, backend="cpu").set_points(x)
    u0 = plan(w)
    x[:] = 0.0
    u, g = plan(w, gradient=True)
    ru, rg = direct_reference("gaussian", 2.0, keep, None, w, gradient=True)
    assert rel_l2(u, u0) < 1e-14 and rel_l2(u, ru[:, 0]) < 1e-12
    assert rel_l2(g, rg[:, 0, :]) < 1e-7
    with pytest.raises(TypeError, match="gradient"):
        plan(w, gradient="no")


def test_fmm_plan_refuses_the_gradient(rng):
    plan = ksum.FMM3D(tol=1e-6, backend="cpu").set_points(rng.random((3000, 3)))
    with pytest.raises(ksum.UnsupportedError, match="values only"):
        plan(np.ones(3000), gradient=True)


def test_laplace_gradient_sign(rng):
    # grad of sum_j 1/|x - x_j| points towards the sources: check against the analytic form
    x = rng.random((150, 3))
    w = np.ones(150)
    _, g = ksum.DirectSum("laplace", backend="cpu").set_points(x)(w, gradient=True)
    diff = x[:, None, :] - x[None, :, :]
    r = np.sqrt((diff ** 2).sum(-1))
    np.fill_diagonal(r, np.inf)
    ref = -(diff / r[..., None] ** 3).sum(1)
    assert rel_l2(g, ref) < 1e-12


def test_float32(rng):
    x = rng.random((400, 3)).astype(np.float32)
    w = rng.random(400).astype(np.float32)
    u = ksum.DirectSum("laplace", backend="cpu").set_points(x)(w)
    assert u.dtype == np.float32
    assert rel_l2(u, direct_reference("laplace", 1.0, x, None, w)[:, 0]) < 1e-5
    u64 = ksum.DirectSum("laplace", backend="cpu", precision="float64").set_points(x)(w)
    assert u64.dtype == np.float64


def test_fortran_and_transposed_inputs_are_not_copied(rng):
    ksum.config.warn_on_copy = True
    try:
        xf = np.asfortranarray(rng.random((100, 3)))
        xt = np.ascontiguousarray(rng.random((3, 100))).T  # fmm3dpy layout, transposed
        with warnings.catch_warnings():
            warnings.simplefilter("error", ksum.CopyWarning)
            ksum.DirectSum(backend="cpu").set_points(xf)(np.ones(100))
            ksum.DirectSum(backend="cpu").set_points(xt)(np.ones(100))
        with pytest.warns(ksum.CopyWarning, match="layout"):
            ksum.DirectSum(backend="cpu").set_points(np.ascontiguousarray(xf))
        with pytest.warns(ksum.CopyWarning, match="float32 -> float64"):
            ksum.DirectSum(backend="cpu", precision="float64").set_points(xf.astype(np.float32))
    finally:
        ksum.config.warn_on_copy = False


def test_input_view_is_the_callers_memory(rng):
    from ksum import _arrays
    xf = np.asfortranarray(rng.random((50, 3)))
    assert _arrays.host_matrix(xf, "x", np.float64) is xf
    xt = np.ascontiguousarray(rng.random((3, 50)))
    v = _arrays.host_matrix(xt, "x", np.float64, layout="columns")
    assert np.shares_memory(v, xt)


def test_result_owns_its_memory_and_is_writeable(rng):
    x = rng.random((64, 3))
    u = ksum.DirectSum(backend="cpu").set_points(x)(np.ones((64, 2)))
    assert u.flags.writeable and u.flags.f_contiguous
    keep = u.copy()
    del x
    u += 1  # the capsule keeps the C++ table alive
    assert np.allclose(u, keep + 1)


def test_gil_released(rng):
    x = rng.random((12000, 3))
    plan = ksum.DirectSum("gaussian", backend="cpu", threads=1).set_points(x)
    done = threading.Event()
    counter = 0

    def work():
        plan(np.ones((12000, 4)))
        done.set()

    t = threading.Thread(target=work)
    t.start()
    while not done.is_set():
        counter += 1
    t.join()
    assert counter > 1000  # the main thread ran while the sum was in C++


def test_plan_shared_between_threads(rng):
    x = rng.random((500, 3))
    plan = ksum.DirectSum("laplace", backend="cpu").set_points(x)
    ref = plan(np.ones(500))
    out = [None] * 4

    def work(k):
        out[k] = plan(np.ones(500) * (k + 1))

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    for k in range(4):
        assert np.allclose(out[k], ref * (k + 1), rtol=1e-13)


# --- the 3D FMM -----------------------------------------------------------------------------

@pytest.mark.parametrize("tol", [1e-4, 1e-8])
def test_fmm3d_plan(rng, tol):
    x = rng.random((4000, 3))
    w = rng.standard_normal(4000)
    fmm = ksum.FMM3D("laplace", tol=tol, backend="cpu").set_points(x)
    u = fmm(w)
    ref = ksum.DirectSum("laplace", backend="cpu").set_points(x)(w)
    assert fmm.stats["method"] == "fmm"
    assert rel_l2(u, ref) < 10 * tol
    # The tree's leaf size is reported; on the CPU no GPU transfers are timed.
    assert fmm.stats["fmm_leaf_size"] > 0
    assert fmm.stats["fmm_m2l_rank"] >= 0
    assert fmm.stats["seconds_transfer"] == 0


def test_lfmm3d_matches_fmm3dpy_formula(rng):
    n, m = 3000, 500
    src = rng.random((3, n))
    q = rng.standard_normal(n)
    tgt = rng.random((3, m))
    out = ksum.lfmm3d(eps=1e-8, sources=src, charges=q, targets=tgt, pg=2, pgt=2,
                      backend="cpu")
    # pot(x) = sum_j q_j / (4 pi |x - x_j|), self term left out; grad its gradient
    ru, rg = direct_reference("laplace", 1.0, src.T, None, q, gradient=True)
    tu, tg = direct_reference("laplace", 1.0, src.T, tgt.T, q, gradient=True)
    c = 1 / (4 * math.pi)
    assert out.pot.shape == (n,) and out.grad.shape == (3, n)
    assert out.pottarg.shape == (m,) and out.gradtarg.shape == (3, m)
    assert rel_l2(out.pot, c * ru[:, 0]) < 1e-7
    assert rel_l2(out.pottarg, c * tu[:, 0]) < 1e-7
    assert rel_l2(out.grad, c * rg[:, 0, :].T) < 1e-6
    assert rel_l2(out.gradtarg, c * tg[:, 0, :].T) < 1e-6
    assert out.hess is None and out.ier == 0


def test_lfmm3d_several_densities(rng):
    src = rng.random((3, 2000))
    q = rng.standard_normal((2, 2000))
    out = ksum.lfmm3d(eps=1e-6, sources=src, charges=q, nd=2, backend="cpu")
    assert out.pot.shape == (2, 2000)
    only = ksum.lfmm3d(eps=1e-6, sources=src, charges=q[0], targets=src[:, :5], pgt=1,
                       backend="cpu")
    assert only.pot is None and only.pottarg.shape == (5,)  # pgt alone: targets only
    for k in range(2):
        ref = direct_reference("laplace", 1.0, src.T, None, q[k])[:, 0] / (4 * math.pi)
        assert rel_l2(out.pot[k], ref) < 1e-5


def test_lfmm3d_rejects_what_it_cannot_do(rng):
    src = rng.random((3, 100))
    with pytest.raises(ksum.UnsupportedError, match="dipoles"):
        ksum.lfmm3d(eps=1e-6, sources=src, charges=np.ones(100), dipvec=np.ones((3, 100)))
    with pytest.raises(ksum.UnsupportedError, match="Hessians"):
        ksum.lfmm3d(eps=1e-6, sources=src, charges=np.ones(100), pg=3)
    with pytest.raises(ValueError, match="needs targets"):
        ksum.lfmm3d(eps=1e-6, sources=src, charges=np.ones(100), pgt=1)
    with pytest.raises(ValueError, match=r"shape \(3, n\)"):
        ksum.lfmm3d(eps=1e-6, sources=src.T, charges=np.ones(100))
    with pytest.raises(ValueError, match="100 sources"):
        ksum.lfmm3d(eps=1e-6, sources=src, charges=np.ones(99))


def test_fgt_hands_over_to_the_direct_sum_where_it_is_predicted_cheaper():
    """method='fgt' on 1,500 3D points at h = 0.1: the cost model predicts the direct sum
    cheaper, so it runs (same sums as method 'direct') and stats['note'] says why;
    force_method=True keeps the FGT, to its tolerance."""
    x = np.random.default_rng(5).random((1500, 3))
    w = np.random.default_rng(6).uniform(-1, 1, 1500)
    exact = ksum.DirectSum("gaussian", 10.0, backend="cpu").set_points(x)(w)
    plan = ksum.DirectSum("gaussian", 10.0, backend="cpu", method="fgt", tol=1e-6).set_points(x)
    assert plan.stats["method"] == "direct"
    assert "predicts the direct sum cheaper" in plan.stats["note"]
    np.testing.assert_allclose(plan(w), exact, rtol=0, atol=1e-13 * np.abs(w).sum())
    forced = ksum.DirectSum("gaussian", 10.0, backend="cpu", method="fgt", tol=1e-6,
                            force_method=True).set_points(x)
    assert forced.stats["method"] == "fgt" and forced.stats["note"] == ""
    assert np.max(np.abs(forced(w) - exact)) <= 1e-6 * np.abs(w).sum()
