"""GPU arrays (CuPy, PyTorch) summed in place on the GPU, and the GPU backends from NumPy.
Marked `gpu`: skipped where no GPU is visible (CI); run by scripts/device-check.sh."""
import math

import numpy as np
import pytest

import ksum
from conftest import direct_reference, rel_l2

pytestmark = pytest.mark.gpu


def frameworks():
    out = []
    try:
        import cupy  # noqa: F401
        out.append("cupy")
    except Exception:
        pass
    try:
        import torch
        if torch.cuda.is_available():
            out.append("torch")
    except Exception:
        pass
    return out


def to_gpu(fw, a):
    if fw == "cupy":
        import cupy
        return cupy.asarray(a)
    import torch
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def to_np(fw, a):
    return a.get() if fw == "cupy" else a.cpu().numpy()


@pytest.fixture(params=["cupy", "torch"])
def fw(request):
    if request.param not in frameworks():
        pytest.skip(f"{request.param} with CUDA not available")
    return request.param


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 1e-5)])
@pytest.mark.parametrize("kernel,eps", [("laplace", 1.0), ("gaussian", 2.0)])
def test_gpu_arrays_in_place(rng, fw, dtype, tol, kernel, eps):
    x = rng.random((3000, 3)).astype(dtype)
    w = rng.standard_normal((3000, 2)).astype(dtype)
    gx, gw = to_gpu(fw, x), to_gpu(fw, w)
    u = ksum.DirectSum(kernel, eps).set_points(gx)(gw)
    assert type(u).__module__.split(".")[0] == fw  # same kind of array
    if fw == "torch":
        assert u.device == gx.device and u.dtype == gx.dtype
    else:
        assert u.device == gx.device and u.dtype == gx.dtype
    assert tuple(u.shape) == (3000, 2)
    assert rel_l2(to_np(fw, u), direct_reference(kernel, eps, x, None, w)) < tol


def test_gpu_arrays_targets_gradient(rng, fw):
    x, y = rng.random((2000, 3)), rng.random((700, 3))
    w = rng.standard_normal(2000)
    u, g = ksum.DirectSum("gaussian", 1.5).set_points(to_gpu(fw, x), to_gpu(fw, y))(
        to_gpu(fw, w), gradient=True)
    ru, rg = direct_reference("gaussian", 1.5, x, y, w, gradient=True)
    assert tuple(u.shape) == (700,) and tuple(g.shape) == (700, 3)
    assert rel_l2(to_np(fw, u), ru[:, 0]) < 1e-12
    assert rel_l2(to_np(fw, g), rg[:, 0, :]) < 1e-7


def test_gpu_arrays_user_memory_untouched(rng, fw):
    x = rng.random((500, 3))
    gx = to_gpu(fw, x)
    ksum.DirectSum("gaussian", 3.0).set_points(gx)(to_gpu(fw, np.ones(500)))
    assert np.array_equal(to_np(fw, gx), x)  # coordinates were scaled in ksum's own copy


def test_gpu_array_mixed_with_host_is_refused(rng, fw):
    p = ksum.DirectSum().set_points(to_gpu(fw, rng.random((50, 3))))
    with pytest.raises(ValueError, match="GPU memory"):
        p(np.ones(50))
    with pytest.raises(TypeError, match="dtype"):
        p(to_gpu(fw, np.ones(50, dtype=np.float32)))


def test_gpu_arrays_fmm_go_through_the_host_with_a_warning(rng, fw):
    x = rng.random((3000, 3))
    w = rng.standard_normal(3000)
    with pytest.warns(ksum.CopyWarning, match="host"):
        plan = ksum.FMM3D(tol=1e-8).set_points(to_gpu(fw, x))
    u = plan(to_gpu(fw, w))
    ref = direct_reference("laplace", 1.0, x, None, w)[:, 0]
    assert rel_l2(to_np(fw, u), ref) < 1e-7


@pytest.mark.parametrize("precision,tol", [("float64", 1e-12), ("float32", 1e-5)])
def test_gpu_backend_from_numpy(rng, precision, tol):
    x = rng.random((5000, 3))
    w = rng.standard_normal(5000)
    plan = ksum.DirectSum("laplace", backend="gpu", precision=precision).set_points(x)
    assert plan.backend_in_use == "gpu"
    assert rel_l2(plan(w), direct_reference("laplace", 1.0, x, None, w)[:, 0]) < tol


def test_lfmm3d_on_gpu(rng):
    src = rng.random((3, 20000))
    q = rng.standard_normal(20000)
    out = ksum.lfmm3d(eps=1e-6, sources=src, charges=q, pg=1, backend="gpu")
    ref = ksum.DirectSum("laplace", backend="gpu").set_points(src.T)(q) / (4 * math.pi)
    assert rel_l2(out.pot, ref) < 1e-5


def test_gauss_transform_on_gpu(rng):
    x = rng.random((20000, 3))
    w = rng.random(20000)
    g = ksum.gauss_transform(x, w, h=0.1, tol=1e-6, backend="gpu", precision="float32")
    idx = rng.choice(20000, 200, replace=False)
    r2 = ((x[idx, None, :] - x[None]) ** 2).sum(-1)
    ref = np.exp(-r2 / 0.01) @ w
    assert np.max(np.abs(g[idx] - ref)) <= 1e-6 * w.sum() * 2


def test_pum_and_global_on_gpu(rng):
    x = rng.random((20000, 2))
    f = np.exp(x[:, 0]) * np.cos(3 * x[:, 1])
    pum = ksum.PUMInterpolator(x, f, eps=3.0, backend="gpu")
    t = rng.random((300, 2))
    assert np.max(np.abs(pum(t) - np.exp(t[:, 0]) * np.cos(3 * t[:, 1]))) < 1e-4
    y = x[:2000]
    a = ksum.RBFInterpolator(y, f[:2000], kernel="gaussian", epsilon=20.0, backend="gpu")
    b = ksum.RBFInterpolator(y, f[:2000], kernel="gaussian", epsilon=20.0, backend="cpu")
    # cuSOLVER and LAPACK agree to cond(A) x rounding (cond ~1e9 for this Gaussian system)
    assert np.max(np.abs(a(t) - b(t))) < 1e-6


def test_jax_arrays_in_place(rng):
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX sees no GPU")
    if not (frameworks()):
        pytest.skip("needs CuPy or PyTorch to hold ksum's GPU buffers")
    x = rng.random((2000, 3))
    w = rng.standard_normal(2000)
    gx = jax.device_put(jnp.asarray(x), jax.devices("gpu")[0])
    gw = jax.device_put(jnp.asarray(w), jax.devices("gpu")[0])
    u = ksum.DirectSum("gaussian", 2.0).set_points(gx)(gw)
    assert type(u).__module__.split(".")[0] in ("jax", "jaxlib")
    assert rel_l2(np.asarray(u), direct_reference("gaussian", 2.0, x, None, w)[:, 0]) < 1e-12
