#!/usr/bin/env python3
"""Table 6 at N = 16641 with other Halton-to-sphere maps (see pum_repro_investigation.md, section 8).
Run from this folder: python3 pum_sphere_maps.py"""
import math, sys, numpy as np
sys.path.insert(0, '.')
import pum_geometry_ref as R
y = R.spiral_sphere(100000); fy = R.franke3(y)
seed = {('matern2',30):6.04e-4, ('matern2',5):2.83e-5, ('matern4',5):2.05e-6, ('matern4',30):1.15e-4, ('matern2',10):6.75e-5,('matern4',10):5.40e-6}
def pts(n, mode):
    uv = R.halton(n, 2, 1)
    if mode == 'swap': uv = uv[:, ::-1]
    if mode == 'theta':  # theta uniform (not area preserving)
        th = math.pi * uv[:, 0]; ph = 2 * math.pi * uv[:, 1]
        return np.stack([np.sin(th)*np.cos(ph), np.sin(th)*np.sin(ph), np.cos(th)], 1)
    z, ph = 2 * uv[:, 0] - 1, 2 * math.pi * uv[:, 1]; r = np.sqrt(1 - z*z)
    return np.stack([r*np.cos(ph), r*np.sin(ph), z], 1)
for mode in ['ksum', 'swap', 'theta']:
    x = pts(16641, mode); f = R.franke3(x)
    for (k, e), sv in seed.items():
        for rf in [1.41421356, 1.0]:
            rm = R.pum_rmse(x, f, y, fy, k, float(e), rf)[0]
            print(mode, k, e, rf, f"{rm:.2e}", f"{rm/sv:.2f}", flush=True)
