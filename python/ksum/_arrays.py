"""How arrays cross into ksum.

The C++ plans read a point set as a matrix stored column by column: a Fortran-ordered ``(n, d)``
array, which is the same memory as a C-ordered ``(d, n)`` one (fmm3dpy's layout). Such arrays of
the plan's precision are passed without a copy. Anything else (a C-ordered ``(n, d)`` array, a
strided view, another precision, a list) is copied once into that layout; with
``ksum.config.warn_on_copy = True`` every such copy emits a :class:`CopyWarning` saying which
argument was copied and why.

Arrays in GPU memory (CuPy, PyTorch, anything with ``__cuda_array_interface__`` or a CUDA
``__dlpack_device__``) are recognised here and routed to the GPU paths.
"""
import warnings

import numpy as np

from ._errors import InputError, UnsupportedError


class CopyWarning(UserWarning):
    """An input array was copied to reach the layout or precision the plan needs."""


class _Config:
    """Package-wide switches: ``warn_on_copy`` (default False)."""

    def __init__(self):
        self.warn_on_copy = False


config = _Config()

_DTYPES = {"float32": np.float32, "f32": np.float32, "single": np.float32,
           "float64": np.float64, "f64": np.float64, "double": np.float64}


def is_gpu_array(a):
    """True for an array in CUDA device memory (CuPy, PyTorch on cuda, ...)."""
    if isinstance(a, np.ndarray):
        return False
    if hasattr(a, "__cuda_array_interface__"):
        return True
    dev = getattr(a, "__dlpack_device__", None)
    if dev is not None:
        try:
            kind, _ = dev()
        except Exception:
            return False
        return int(kind) in (2, 13)  # kDLCUDA, kDLCUDAManaged
    return False


def framework(a):
    """'cupy', 'torch' or 'jax' for a GPU array (the kind the result comes back as)."""
    root = type(a).__module__.split(".")[0]
    if root in ("cupy", "torch"):
        return root
    if root in ("jax", "jaxlib"):
        return "jax"
    return root


def resolve_precision(precision, *arrays):
    """'auto' follows the first array given: float32 stays float32, everything else float64."""
    if precision in (None, "auto"):
        for a in arrays:
            if a is None:
                continue
            dt = getattr(a, "dtype", None)
            if dt is not None and str(dt).endswith("float32"):
                return np.float32
            return np.float64
        return np.float64
    try:
        return _DTYPES[str(precision)]
    except KeyError:
        raise InputError(f"precision '{precision}': expected 'auto', 'float32' or 'float64'",
                         "invalid_argument") from None


def _check_dtype(a, name, allow_int):
    kind = a.dtype.kind
    if kind == "f":
        return
    if kind in "iub" and allow_int:
        return
    what = {"c": "complex", "i": "integer", "u": "unsigned integer", "b": "boolean",
            "O": "object", "U": "string", "S": "bytes"}.get(kind, str(a.dtype))
    raise TypeError(f"{name}: expected a real floating-point array (float32 or float64), got "
                    f"{what} dtype {a.dtype}")


def _note_copy(name, why):
    if config.warn_on_copy:
        warnings.warn(f"ksum copied {name}: {why}", CopyWarning, stacklevel=4)


def host_matrix(a, name, dtype, *, layout="rows", cols=None, allow_int=False, vector_ok=False):
    """``a`` as a Fortran-ordered (rows, cols) array of ``dtype``, copied only when needed.

    layout 'rows': one point (or weight row) per row, e.g. (n, d); 'columns': one per column,
    e.g. fmm3dpy's (3, n). vector_ok: a 1-D array is one column (weights). cols: the number of
    columns required (None: any)."""
    if is_gpu_array(a):
        raise UnsupportedError(f"{name} is in GPU memory, but this call runs on host arrays "
                               "(pass NumPy arrays, or use a plan that accepts GPU arrays)",
                               "unsupported")
    src = a
    arr = np.asarray(a)
    _check_dtype(arr, name, allow_int)
    if arr.ndim == 0:
        raise InputError(f"{name}: expected an array, got a scalar (0-d)", "invalid_argument")
    if arr.ndim == 1:
        if not vector_ok and not (cols == 1):
            if cols is not None and layout == "rows" and arr.shape[0] == cols:
                arr = arr.reshape(1, cols)
            else:
                raise InputError(f"{name}: expected a 2-D array, got shape {arr.shape}",
                                 "shape_mismatch")
        else:
            arr = arr.reshape(-1, 1) if layout == "rows" else arr.reshape(1, -1)
    if arr.ndim != 2:
        raise InputError(f"{name}: expected a 2-D array, got shape {arr.shape}",
                         "shape_mismatch")
    mat = arr if layout == "rows" else arr.T
    if cols is not None and mat.shape[1] != cols:
        expect = f"(n, {cols})" if layout == "rows" else f"({cols}, n)"
        raise InputError(f"{name}: expected shape {expect}, got {arr.shape}", "shape_mismatch")
    out = np.asfortranarray(mat, dtype=dtype)
    if out is not mat and not np.may_share_memory(out, mat):
        why = []
        if mat.dtype != dtype:
            why.append(f"dtype {mat.dtype} -> {np.dtype(dtype).name}")
        if not mat.flags.f_contiguous:
            why.append("layout: the plan reads coordinates column by column (pass a "
                       "Fortran-ordered (n, d) array or the transpose of a C-ordered (d, n) one "
                       "to avoid this copy)")
        if not isinstance(src, np.ndarray):
            why.append(f"converted from {type(src).__name__}")
        _note_copy(name, "; ".join(why) or "layout")
    return out


def reject_gpu(**arrays):
    """Host-only calls: a clear error for GPU arrays before NumPy tries to convert them."""
    for name, a in arrays.items():
        if a is not None and is_gpu_array(a):
            raise UnsupportedError(f"{name} is in GPU memory, but this call runs on host arrays "
                                   "(copy it to the host, e.g. a.get() or a.cpu().numpy())",
                                   "unsupported")


def host_complex(a, name, dtype, layout="rows", points=True):
    """Complex points or strengths: a 1-D complex array (copied if not complex of the plan's
    precision); points also as real coordinates combined into x + iy (a copy): (n, 2) with
    layout 'rows', (2, n) with 'columns' (fmm2dpy's). Real strengths: 1-D only."""
    if is_gpu_array(a):
        raise UnsupportedError(f"{name} is in GPU memory; the 2D FMM runs on host arrays "
                               "(its near field still runs on the GPU with backend='gpu')",
                               "unsupported")
    ctype = np.complex64 if dtype == np.float32 else np.complex128
    arr = np.asarray(a)
    if arr.ndim == 0:
        raise InputError(f"{name}: expected an array, got a scalar (0-d)", "invalid_argument")
    if arr.dtype.kind == "c":
        if arr.ndim != 1:
            raise InputError(f"{name}: complex input must be 1-D, got shape {arr.shape}",
                             "shape_mismatch")
        out = np.ascontiguousarray(arr, dtype=ctype)
        if out is not arr:
            _note_copy(name, f"dtype {arr.dtype} -> {np.dtype(ctype).name} or layout")
        return out
    _check_dtype(arr, name, allow_int=True)
    if arr.ndim == 1:
        return np.ascontiguousarray(arr, dtype=ctype)  # real strengths
    want = "(n, 2)" if layout == "rows" else "(2, n)"
    if points and arr.ndim == 2 and arr.shape[1 if layout == "rows" else 0] == 2:
        xy = arr.T if layout == "rows" else arr
        _note_copy(name, "real coordinates combined into complex x + iy")
        return (xy[0] + 1j * xy[1]).astype(ctype)
    if not points:
        raise InputError(f"{name}: expected a 1-D array (one strength per source), got shape "
                         f"{arr.shape}", "shape_mismatch")
    raise InputError(f"{name}: expected complex (n,) or real {want} coordinates, got shape "
                     f"{arr.shape}", "shape_mismatch")


def host_index(a, name):
    """A 1-D int64 array of row indices."""
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise InputError(f"{name}: expected a 1-D array of node indices, got shape {arr.shape}",
                         "shape_mismatch")
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected integer node indices, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.int64)


# --- GPU arrays (CuPy, PyTorch) -----------------------------------------------------------------

def from_jax(a):
    """A JAX GPU array as a CuPy array (or PyTorch tensor) on the same memory, through DLPack:
    ksum computes on that and hands the result back to JAX the same way (to_jax)."""
    try:
        import cupy
        return cupy.from_dlpack(a)
    except ImportError:
        pass
    try:
        import torch
        return torch.from_dlpack(a)
    except ImportError:
        raise UnsupportedError("JAX arrays: ksum needs CuPy or PyTorch installed to hold its GPU "
                               "buffers", "unsupported") from None


def to_jax(a):
    import jax.dlpack
    if framework(a) == "torch":
        return jax.dlpack.from_dlpack(a.contiguous())
    import cupy
    return jax.dlpack.from_dlpack(cupy.ascontiguousarray(a))


def device_id(a):
    fw = framework(a)
    if fw == "torch":
        return a.device.index or 0
    if fw == "cupy":
        return a.device.id
    raise UnsupportedError(f"GPU arrays of {type(a).__module__}.{type(a).__name__}: ksum returns "
                           "results as CuPy arrays or PyTorch tensors; pass one of those "
                           "(e.g. cupy.from_dlpack(x) or torch.from_dlpack(x), no copy)",
                           "unsupported")


def device_columns(a, name, dtype, scale=1.0, *, cols=None, vector_ok=False):
    """A GPU array (n, k) as the C-ordered (k, n) array the device kernels read (column-major
    (n, k)), multiplied by ``scale``: a new device array (never the user's), made on the device."""
    fw = framework(a)
    device_id(a)
    if str(a.dtype).split(".")[-1] != np.dtype(dtype).name:
        raise TypeError(f"{name}: GPU array of dtype {a.dtype}, expected {np.dtype(dtype).name} "
                        "like the other arrays of this call")
    if a.ndim == 1:
        if not vector_ok:
            raise InputError(f"{name}: expected a 2-D array, got shape {tuple(a.shape)}",
                             "shape_mismatch")
        a = a.reshape(-1, 1)
    if a.ndim != 2:
        raise InputError(f"{name}: expected a 2-D array, got shape {tuple(a.shape)}",
                         "shape_mismatch")
    if cols is not None and a.shape[1] != cols:
        raise InputError(f"{name}: expected shape (n, {cols}), got {tuple(a.shape)}",
                         "shape_mismatch")
    if fw == "torch":
        a = a.detach()
    finite = bool(_all_finite(a))
    if not finite:
        raise InputError(f"{name}: non-finite value (NaN or Inf) in the GPU array", "non_finite")
    t = a.T * scale if scale != 1.0 else a.T
    if fw == "torch":
        t = t.contiguous()
        if t.data_ptr() == a.data_ptr():
            t = t.clone()
        return t
    import cupy
    t = cupy.ascontiguousarray(t)
    if t.data.ptr == a.data.ptr:
        t = t.copy()
    return t


def _all_finite(a):
    """All entries finite: one reduction on the device (and one sync)."""
    if framework(a) == "torch":
        import torch
        return torch.isfinite(a).all().item()
    import cupy
    return bool(cupy.isfinite(a).all())


def sync_current_stream(like):
    """Waits for the work queued on the caller's current stream (ksum launches on the legacy
    default stream, which does not wait for non-blocking streams)."""
    if framework(like) == "torch":
        import torch
        torch.cuda.current_stream(like.device).synchronize()
    else:
        import cupy
        cupy.cuda.get_current_stream().synchronize()


def device_empty(like, shape, dtype):
    fw = framework(like)
    if fw == "torch":
        import torch
        tdt = torch.float32 if dtype == np.float32 else torch.float64
        return torch.empty(shape, dtype=tdt, device=like.device)
    import cupy
    with cupy.cuda.Device(like.device.id):
        return cupy.empty(shape, dtype=dtype)


def to_device_like(host, like):
    """A host array copied to the device and framework of ``like``."""
    fw = framework(like)
    if fw == "jax":
        import jax
        return jax.device_put(host, next(iter(like.devices())))
    if fw == "torch":
        import torch
        return torch.from_numpy(np.ascontiguousarray(host)).to(like.device)
    import cupy
    with cupy.cuda.Device(like.device.id):
        return cupy.asarray(host)


def to_host(a):
    fw = framework(a)
    if fw == "torch":
        return a.detach().cpu().numpy()
    if fw == "cupy":
        return a.get()
    return np.asarray(a)


def permute(a, axes):
    if framework(a) == "torch":
        return a.permute(*axes)
    return a.transpose(axes)
