#!/usr/bin/env python3
"""Draws a 2D Gmsh mesh before and after `ksum deform`, side by side, as a PNG.

  python3 examples/deform/plot_mesh.py BEFORE.msh AFTER.msh OUT.png [--box x0,x1,y0,y1]

Needs Gmsh's Python module (pip install gmsh, or Debian's python3-gmsh) and matplotlib.
"""
import argparse
import sys

try:
    import gmsh
except ImportError:
    sys.path.append("/usr/lib/python3/dist-packages")
    import gmsh
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402


def polygons(path):
    """The 2D elements of a mesh as lists of corner coordinates."""
    gmsh.clear()
    gmsh.open(path)
    tags, xyz, _ = gmsh.model.mesh.getNodes()
    where = {int(t): (xyz[3 * i], xyz[3 * i + 1]) for i, t in enumerate(tags)}
    polys = []
    types, _, nodes = gmsh.model.mesh.getElements(2)
    for t, ns in zip(types, nodes):
        _, _, _, n, _, corners = gmsh.model.mesh.getElementProperties(t)
        for e in range(len(ns) // n):
            polys.append([where[int(ns[e * n + k])] for k in range(corners)])
    return polys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("out")
    ap.add_argument("--box", default="-0.4,1.4,-0.6,0.6", help="x0,x1,y0,y1 of the view")
    args = ap.parse_args()
    x0, x1, y0, y1 = (float(v) for v in args.box.split(","))
    gmsh.initialize(readConfigFiles=False)
    gmsh.option.setNumber("General.Terminal", 0)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    for ax, path, title in zip(axes, [args.before, args.after], ["before", "after"]):
        ax.add_collection(PolyCollection(polygons(path), facecolors="none", edgecolors="k",
                                         linewidths=0.3))
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        ax.set_aspect("equal")
        ax.set_title(f"{title}: {path.split('/')[-1]}")
    gmsh.finalize()
    fig.tight_layout()
    fig.savefig(args.out, dpi=90)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
