"""ksum: fast kernel summation, fast multipole methods, the fast Gauss transform and RBF
interpolation on CPUs and NVIDIA GPUs.

>>> import numpy as np, ksum
>>> x = np.random.default_rng(0).random((100000, 3))
>>> u = ksum.FMM3D("laplace", tol=1e-6).set_points(x)(np.ones(100000))   # GPU when present
>>> f = ksum.RBFInterpolator(x[:2000], np.sin(x[:2000, 0]))                # SciPy's call

See ``ksum.info()`` for the backends of this build and docs/python.md for the whole API.
"""
from . import _ksum
from ._arrays import CopyWarning, config
from ._errors import (DeviceError, Error, FileError, InputError, InternalError,
                      NotConvergedError, ParseError, UnsupportedError)
from .apps import DeformResult, Simulation, deform_mesh, simulate
from .direct import FMM3D, DirectSum, FMMOutput, kernel_sum, lfmm3d
from .distributed import DistributedSum, mpi_built
from .fmm2d import FMM2D, cfmm2d
from .gauss import KDE, GaussTransform, gauss_transform, gaussian_kde
from .interpolate import PUMInterpolator, RBFInterpolator
from .tdbem import TDBEM, sphere
from . import mc
from .mc import Polyelectrolyte
from . import bsm
from . import tasksize

__version__ = _ksum.info()["version"]


class _Info(dict):
    def __str__(self):
        lines = [f"ksum {self['version']}",
                 f"  CUDA backend : {'built (runtime ' + self['cuda_runtime'] + ')' if self['cuda_built'] else 'not built'}",
                 f"  CPU threads  : {self['threads']}"]
        if not self["gpus"]:
            lines.append("  GPUs         : none visible")
        for g in self["gpus"]:
            lines.append(f"  GPU {g['id']}        : {g['name']}, {g['memory_bytes'] / 2**30:.1f} GiB, "
                         f"compute capability {g['compute_capability'][0]}.{g['compute_capability'][1]}")
        lines.append(f"  backend auto : {'gpu' if self['gpus'] else 'cpu'}")
        lines.append(f"  kernels      : {', '.join(k['name'] for k in self['kernels'])}")
        return "\n".join(lines)


def info():
    """What this build can use: version, CUDA, GPUs, threads, the kernel catalogue (a dict that
    prints as a summary)."""
    return _Info(_ksum.info())


__all__ = ["info", "config", "CopyWarning", "Error", "InputError", "ParseError", "FileError",
           "UnsupportedError", "DeviceError", "NotConvergedError", "InternalError",
           "DirectSum", "FMM3D", "kernel_sum", "lfmm3d", "FMMOutput", "FMM2D", "cfmm2d",
           "GaussTransform", "gauss_transform", "KDE", "gaussian_kde", "RBFInterpolator",
           "PUMInterpolator", "deform_mesh", "DeformResult", "Simulation", "simulate", "TDBEM",
           "sphere", "mc", "Polyelectrolyte", "bsm", "tasksize", "DistributedSum", "mpi_built"]
