"""RBFInterpolator (SciPy parity), PUMInterpolator, deform_mesh, Simulation."""
import warnings

import numpy as np
import pytest

import ksum
from conftest import rel_l2

si = pytest.importorskip("scipy.interpolate")

# Shape parameters keep the 300-point systems well conditioned (cond < ~1e8): flatter kernels
# make two correct dense solvers differ by cond x rounding, which is not what parity tests.
CASES = [  # kernel, epsilon, degree, smoothing
    ("thin_plate_spline", None, None, 0.0),
    ("thin_plate_spline", None, 2, 1e-3),
    ("cubic", None, None, 0.0),
    ("linear", None, None, 0.0),
    ("quintic", None, None, 0.0),
    ("multiquadric", 6.0, None, 0.0),
    ("multiquadric", 3.0, 1, 0.1),
    ("inverse_multiquadric", 3.0, None, 0.0),
    ("inverse_quadratic", 4.0, -1, 0.0),
    ("gaussian", 12.0, None, 0.0),
    ("gaussian", 4.0, -1, 1e-2),
]


def field(y):
    return np.sin(3 * y[:, 0]) * np.cos(2 * y[:, 1]) + y[:, 0] ** 2


@pytest.mark.parametrize("kernel,epsilon,degree,smoothing", CASES)
@pytest.mark.parametrize("ndim", [2, 3])
def test_scipy_parity(rng, kernel, epsilon, degree, smoothing, ndim):
    y = rng.random((300, ndim))
    d = field(y)
    x = rng.random((200, ndim))
    kw = dict(kernel=kernel, epsilon=epsilon, degree=degree, smoothing=smoothing)
    ours = ksum.RBFInterpolator(y, d, **kw)(x)
    theirs = si.RBFInterpolator(y, d, **kw)(x)
    assert ours.shape == theirs.shape
    assert np.max(np.abs(ours - theirs)) <= 1e-8 * np.max(np.abs(theirs))


def test_scipy_parity_shapes_and_complex(rng):
    y = rng.random((150, 2))
    d = np.stack([field(y), np.cos(y[:, 1])], axis=1).reshape(150, 2, 1)
    x = rng.random((40, 2))
    ours = ksum.RBFInterpolator(y, d)(x)
    theirs = si.RBFInterpolator(y, d)(x)
    assert ours.shape == theirs.shape == (40, 2, 1)
    assert np.max(np.abs(ours - theirs)) <= 1e-8 * np.max(np.abs(theirs))
    dc = field(y) + 1j * np.cos(y[:, 0])
    oc = ksum.RBFInterpolator(y, dc, kernel="cubic")(x)
    tc = si.RBFInterpolator(y, dc, kernel="cubic")(x)
    assert oc.dtype.kind == "c" and np.max(np.abs(oc - tc)) <= 1e-8 * np.max(np.abs(tc))


def test_scipy_errors_are_scipys(rng):
    y = rng.random((20, 2))
    d = field(y)
    with pytest.raises(ValueError, match="`epsilon` must be specified"):
        ksum.RBFInterpolator(y, d, kernel="gaussian")
    with pytest.raises(ValueError, match="first axis of `d`"):
        ksum.RBFInterpolator(y, d[:10])
    with pytest.raises(ValueError, match="At least 6 data points"):
        ksum.RBFInterpolator(y[:4], d[:4], degree=2)
    with pytest.raises(ValueError, match="second axis of `x`"):
        ksum.RBFInterpolator(y, d)(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="kernel"):
        ksum.RBFInterpolator(y, d, kernel="spline")
    with pytest.warns(UserWarning, match="degree"):  # the neighbors path solves it, as SciPy
        ksum.RBFInterpolator(y, d, kernel="quintic", degree=1, neighbors=15)


@pytest.mark.parametrize("centre_update", ["auto", "update", "refit"])
def test_move_centres_equals_a_fit_of_the_moved_set(rng, centre_update):
    # The Woodbury update of the held inverse (or a refit) against SciPy's and ksum's fits of the
    # moved set from scratch; ε h ≈ 0.7 keeps the system well conditioned (cond ~ 1e5), the
    # C++ tests' 1e-9 relative tolerance.
    y = rng.random((300, 2))
    d = np.stack([field(y), np.cos(3 * y[:, 1])], axis=1)
    kw = dict(kernel="gaussian", epsilon=12.0)
    f = ksum.RBFInterpolator(y, d, solver="dense", centre_update=centre_update, **kw)
    y2, d2 = y.copy(), d.copy()
    for k, m in enumerate((1, 7, 2)):
        index = rng.choice(300, m, replace=False)
        y2[index] = np.clip(y2[index] + rng.uniform(-0.02, 0.02, (m, 2)), 0, 1)
        if k == 1:
            d2[index] += 0.3
            f.move_centres(index, y2[index], d2[index])
        else:
            f.move_centres(list(index), y2[index])
    x = rng.random((100, 2))
    fresh = ksum.RBFInterpolator(y2, d2, solver="dense", **kw)(x)
    theirs = si.RBFInterpolator(y2, d2, **kw)(x)
    assert np.max(np.abs(f(x) - fresh)) <= 1e-9 * np.max(np.abs(fresh))
    assert np.max(np.abs(f(x) - theirs)) <= 1e-8 * np.max(np.abs(theirs))
    np.testing.assert_array_equal(f.y, y2)
    np.testing.assert_array_equal(f.d, d2)
    st = f.stats
    assert st["moves"] == 3 and st["update_fallbacks"] == 0
    assert st["updates"] == {"auto": 2, "update": 2, "refit": 0}[centre_update]
    assert st["inverse_held"] == (centre_update != "refit")


def test_move_centres_errors(rng):
    y = rng.random((40, 2))
    f = ksum.RBFInterpolator(y, field(y), kernel="gaussian", epsilon=6.0)
    with pytest.raises(ValueError, match=r"index\[1\] = 40 is out of range"):
        f.move_centres([3, 40], y[:2])
    with pytest.raises(ValueError, match="centre 3 is listed twice"):
        f.move_centres([3, 3], y[:2] + 0.01)
    with pytest.raises(ValueError, match="would move onto centre 9"):
        f.move_centres([3], y[[9]])
    with pytest.raises(ValueError, match="non-finite value nan at row 0"):
        f.move_centres([3], np.array([[np.nan, 0.5]]))
    with pytest.raises(ValueError, match="`d` must have shape"):
        f.move_centres([3], y[[3]] + 0.01, [1.0, 2.0])
    with pytest.raises(ValueError, match="must hold integers"):
        f.move_centres([3.0], y[[3]])
    with pytest.raises(ValueError, match=r"expected shape \(n, 2\)"):
        f.move_centres([3], np.zeros((1, 3)))
    assert f.stats["moves"] == 0
    local = ksum.RBFInterpolator(y, field(y), kernel="gaussian", epsilon=6.0, neighbors=10)
    with pytest.raises(NotImplementedError, match="method 'global'"):
        local.move_centres([3], y[[3]])


def test_large_problem_goes_iterative(rng):
    # beyond dense_max_n ksum solves iteratively in O(n) memory (SciPy would go dense)
    y = rng.random((3000, 2))
    d = np.exp(y[:, 0]) * np.sin(2 * y[:, 1])
    f = ksum.RBFInterpolator(y, d, kernel="multiquadric", epsilon=30.0, dense_max_n=1000,
                             tol=1e-10, backend="cpu")
    assert f.stats["solver"] in ("fgp", "krylov")
    assert f.stats["residual_rel"] < 1e-9
    dense = ksum.RBFInterpolator(y, d, kernel="multiquadric", epsilon=30.0, solver="dense",
                                 backend="cpu")
    x = rng.random((100, 2))
    assert np.max(np.abs(f(x) - dense(x))) < 1e-6


@pytest.mark.parametrize("kernel,epsilon,degree,smoothing", [
    ("thin_plate_spline", None, None, 0.0), ("cubic", None, None, 1e-3),
    ("multiquadric", 8.0, None, 0.0), ("gaussian", 15.0, -1, 0.0), ("quintic", None, None, 0.0)])
@pytest.mark.parametrize("ndim", [2, 3])
def test_neighbors_scipy_parity(rng, kernel, epsilon, degree, smoothing, ndim):
    y = rng.random((2000, ndim))
    d = np.stack([field(y), y[:, 1]], axis=1)
    x = rng.random((300, ndim))
    kw = dict(neighbors=30, kernel=kernel, epsilon=epsilon, degree=degree, smoothing=smoothing)
    f = ksum.RBFInterpolator(y, d, **kw)
    assert f.method == "local"
    theirs = si.RBFInterpolator(y, d, **kw)(x)
    assert np.max(np.abs(f(x) - theirs)) <= 1e-8 * np.max(np.abs(theirs))


def test_neighbors_errors(rng):
    y = rng.random((50, 2))
    with pytest.raises(ValueError, match="At least 6 data points"):
        ksum.RBFInterpolator(y, field(y), neighbors=4, degree=2)
    dup = np.r_[y, y[:1]]
    f = ksum.RBFInterpolator(dup, field(dup), neighbors=10)
    with pytest.raises(ValueError, match="singular"):
        f(y[:1] + 1e-9)


def test_neighbors_pum_option(rng):
    y = rng.random((4000, 2))
    d = field(y)
    f = ksum.RBFInterpolator(y, d, neighbors=30, method="pum")
    x = 0.1 + 0.8 * rng.random((50, 2))
    assert f.method == "pum"
    assert np.max(np.abs(f(x) - field(x))) < 1e-3


@pytest.mark.parametrize("kernel,epsilon", [("multiquadric", 30.0), ("thin_plate_spline", None)])
@pytest.mark.parametrize("smoothing", [1e-3, 0.1, 1.0])
def test_iterative_solvers_with_smoothing(rng, kernel, epsilon, smoothing):
    # the L-set preconditioner carries the smoothing too: the iteration converges and agrees
    # with the dense solve (which is SciPy's)
    y = rng.random((2500, 2))
    d = field(y)
    x = rng.random((200, 2))
    kw = dict(kernel=kernel, epsilon=epsilon, smoothing=smoothing, backend="cpu")
    it = ksum.RBFInterpolator(y, d, dense_max_n=500, tol=1e-11, **kw)
    assert it.stats["solver"] in ("fgp", "krylov")
    dense = ksum.RBFInterpolator(y, d, solver="dense", **kw)
    assert np.max(np.abs(it(x) - dense(x))) <= 1e-7 * np.max(np.abs(dense(x)))


def test_degree_below_minimum_is_refused(rng):
    y = rng.random((30, 2))
    with pytest.raises(ValueError, match="below 1"):
        ksum.RBFInterpolator(y, field(y), kernel="thin_plate_spline", degree=0)
    with pytest.raises(ValueError, match="at least one dimension"):
        ksum.RBFInterpolator(y, 1.0)


def test_pum_interpolator(rng):
    x = rng.random((20000, 2))
    f = np.exp(x[:, 0]) * np.cos(3 * x[:, 1])
    pum = ksum.PUMInterpolator(x, f, kernel="matern4", eps="loocv", backend="cpu")
    t = rng.random((500, 2))
    ref = np.exp(t[:, 0]) * np.cos(3 * t[:, 1])
    assert np.max(np.abs(pum(t) - ref)) < 1e-4
    assert pum.stats["patches"] > 0 and pum.stats["eps_min"] > 0
    with pytest.raises(ValueError, match="outside"):
        pum(np.array([[2.0, 2.0]]))
    ext = ksum.PUMInterpolator(x, f, eps=3.0, extrapolate=True, backend="cpu")
    assert np.isfinite(ext(np.array([[1.05, 0.5]]))).all()
    with pytest.raises(ValueError, match="loocv"):
        ksum.PUMInterpolator(x, f, eps="auto")


def grid_mesh():
    g = np.linspace(-1, 1, 31)
    X, Y = np.meshgrid(g, g)
    xy = np.c_[X.ravel(), Y.ravel()]
    r = np.hypot(xy[:, 0], xy[:, 1])
    inner = np.flatnonzero(r < 0.3)
    outer = np.flatnonzero(np.abs(xy).max(1) == 1)
    return xy, inner, outer


def test_deform_translation_is_reproduced_exactly():
    xy, inner, outer = grid_mesh()
    new, stats = ksum.deform_mesh(xy, np.r_[inner, outer], (), translate=(0.1, -0.05),
                                  backend="cpu")
    assert np.allclose(new, xy + [0.1, -0.05], atol=1e-9)
    assert stats["moving"] == len(inner) + len(outer)


def test_deform_rotation(rng):
    xy, inner, outer = grid_mesh()
    new, stats = ksum.deform_mesh(xy, inner, outer, rotate=10.0, backend="cpu")
    c, s = np.cos(np.radians(10)), np.sin(np.radians(10))
    rot = xy[inner] @ np.array([[c, s], [-s, c]])
    assert np.allclose(new[inner], rot, atol=1e-12)
    assert np.allclose(new[outer], xy[outer], atol=1e-12)
    moved = np.setdiff1d(np.arange(len(xy)), np.r_[inner, outer])
    assert np.all(np.isfinite(new[moved])) and stats["boundary_residual"] < 1e-8
    with pytest.raises(ValueError, match="exactly one motion"):
        ksum.deform_mesh(xy, inner, outer)
    with pytest.raises(ValueError):
        ksum.deform_mesh(xy, [len(xy) + 5], outer, translate=(1, 0))


def test_simulation_shared_between_threads():
    import threading
    sim = ksum.Simulation("kh", n=1000)
    errors = []

    def work():
        try:
            for _ in range(3):
                sim.step(1)
                sim.snapshot()
        except Exception as e:  # reported below
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(3)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert not errors and sim.time == pytest.approx(9 * sim.dt)
    with pytest.raises(ValueError, match="step count"):
        sim.step(2 ** 40)


def test_simulation_kh_conserves_circulation():
    sim = ksum.Simulation("kh", n=2000, tol=1e-8)
    g0 = sim.snapshot()["strength"].sum()
    sim.step(3)
    snap = sim.snapshot()
    assert sim.time == pytest.approx(3 * sim.dt)
    assert snap["z"].shape == (sim.size,) and np.all(np.isfinite(snap["velocity"]))
    assert snap["strength"].sum() == pytest.approx(g0, abs=1e-12)
    assert sim.picture().ndim == 2
    with pytest.raises(ValueError):
        ksum.Simulation("tornado")
