"""Bad input raises a clear Python exception naming the argument, never a crash."""
import numpy as np
import pytest

import ksum


def plan():
    return ksum.DirectSum("laplace", backend="cpu")


def test_wrong_shape():
    with pytest.raises(ValueError, match="sources: expected a 2-D array"):
        plan().set_points(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="targets: expected shape \\(n, 3\\)"):
        plan().set_points(np.random.rand(10, 3), np.random.rand(10, 2))


def test_mismatched_lengths():
    p = plan().set_points(np.random.rand(10, 3))
    with pytest.raises(ksum.InputError) as e:
        p(np.ones(9))
    assert e.value.code == "shape_mismatch"
    assert "9" in str(e.value) and "10" in str(e.value)
    x = np.random.rand(10, 3)
    x[2, 2] = np.nan
    with pytest.raises(ksum.InputError) as e:
        plan().set_points(x)
    assert e.value.code == "non_finite"


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.complex128, bool])
def test_wrong_dtype(dtype):
    with pytest.raises(TypeError, match="sources: expected a real floating-point array"):
        plan().set_points(np.ones((10, 3), dtype=dtype))
    p = plan().set_points(np.random.rand(10, 3))
    with pytest.raises(TypeError, match="weights"):
        p(np.ones(10, dtype=dtype))


def test_nan_is_named():
    x = np.random.rand(20, 3)
    x[7, 1] = np.nan
    with pytest.raises(ValueError) as e:
        plan().set_points(x)
    assert isinstance(e.value, ksum.Error)
    assert "7" in str(e.value)
    p = plan().set_points(np.random.rand(20, 3))
    w = np.ones(20)
    w[3] = np.inf
    with pytest.raises(ValueError, match="3"):
        p(w)


def test_non_contiguous_works_with_a_copy():
    big = np.random.rand(40, 6)
    x = big[::2, ::2]  # strided view
    u = plan().set_points(x)(np.ones(20))
    ref = plan().set_points(np.array(x))(np.ones(20))
    assert np.array_equal(u, ref)


def test_empty_and_scalar():
    # no sources is a valid (zero) sum; no coordinates or no right-hand sides is not
    u = plan().set_points(np.empty((0, 3)), np.random.rand(4, 3))(np.ones(0))
    assert np.array_equal(u, np.zeros(4))
    with pytest.raises(ValueError, match="dimension must be at least 1"):
        plan().set_points(np.empty((10, 0)))
    with pytest.raises(ValueError, match="at least one column"):
        plan().set_points(np.random.rand(5, 3))(np.empty((5, 0)))
    with pytest.raises(ValueError, match="0-d"):
        plan().set_points(np.float64(1.0))
    with pytest.raises(ValueError, match="set_points"):
        plan()(np.ones(3))


def test_bad_options():
    with pytest.raises(ValueError, match="unknown kernel 'lapalce'"):
        ksum.DirectSum("lapalce")
    with pytest.raises(ValueError, match="precision"):
        ksum.DirectSum(precision="float16").set_points(np.random.rand(5, 3))
    with pytest.raises(ValueError):
        ksum.FMM3D(tol=-1, backend="cpu").set_points(np.random.rand(50, 3))


class FakeGpuArray:
    """Looks like a CUDA array to ksum (no GPU needed)."""
    __cuda_array_interface__ = {"shape": (10, 3), "typestr": "<f8", "data": (0, False),
                                "version": 3}
    dtype = np.dtype(np.float64)
    ndim = 2
    shape = (10, 3)


def test_gpu_array_where_host_is_needed():
    g = FakeGpuArray()
    y = np.random.rand(10, 3)
    calls = [lambda: ksum.gauss_transform(g, np.ones(10)),
             lambda: ksum.lfmm3d(eps=1e-6, sources=g, charges=np.ones(10)),
             lambda: ksum.lfmm3d(eps=1e-6, sources=y.T, charges=g),
             lambda: ksum.cfmm2d(eps=1e-6, sources=np.random.rand(2, 10), charges=g),
             lambda: ksum.RBFInterpolator(g, np.ones(10)),
             lambda: ksum.RBFInterpolator(y, g),
             lambda: ksum.gaussian_kde(g),
             lambda: ksum.PUMInterpolator(y, g),
             lambda: ksum.KDE(g),
             lambda: ksum.deform_mesh(g, [0], translate=(1, 0, 0))]
    for call in calls:
        with pytest.raises(ksum.UnsupportedError, match="GPU memory"):
            call()


def test_gpu_array_with_cpu_backend():
    with pytest.raises(ValueError, match="backend='cpu'"):
        ksum.DirectSum(backend="cpu").set_points(FakeGpuArray())


@pytest.mark.skipif(ksum.info()["cuda_built"], reason="build has CUDA")
def test_gpu_backend_without_cuda_is_refused():
    with pytest.raises(ksum.UnsupportedError, match="CUDA"):
        ksum.DirectSum(backend="gpu").set_points(np.random.rand(10, 3))


def test_error_hierarchy():
    assert issubclass(ksum.InputError, ValueError) and issubclass(ksum.InputError, ksum.Error)
    assert issubclass(ksum.UnsupportedError, NotImplementedError)
    assert issubclass(ksum.DeviceError, RuntimeError)
    assert issubclass(ksum.FileError, OSError)
