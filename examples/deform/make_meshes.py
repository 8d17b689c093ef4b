#!/usr/bin/env python3
"""Generates the mesh-deformation example meshes with Gmsh's Python API.

  naca0012.msh    2D: a NACA 0012 airfoil (chord 1) in a 10 x 8 box; triangles.
                  Physical groups: curve "airfoil", curve "farfield", surface "fluid".
  sphere_box.msh  3D: a sphere of radius 0.5 in the box [-2, 2]^3; tetrahedra.
                  Physical groups: surface "sphere", surface "box", volume "fluid".

Usage:
  python3 examples/deform/make_meshes.py [--out DIR] [--only naca|sphere] [--nodes N] [--binary]

--nodes N refines the sphere-in-box mesh until it has about N nodes (the 1,000,000-node benchmark
mesh: --only sphere --nodes 1000000 --binary). Needs Gmsh's Python module: `pip install gmsh`, or
Debian's python3-gmsh (found even from another Python 3).
"""
import argparse
import math
import os
import sys

try:
    import gmsh
except ImportError:  # Debian's python3-gmsh lives outside a pyenv/venv interpreter's path
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import gmsh
    except ImportError:
        sys.exit("make_meshes.py: needs Gmsh's Python module (pip install gmsh, or apt-get install "
                 "python3-gmsh)")


def naca0012(t=0.12, n=120):
    """Upper and lower surface points, leading edge to trailing edge, cosine spacing.

    The last coefficient is -0.1036 (not -0.1015) so that the trailing edge closes at (1, 0)."""
    xs = [0.5 * (1.0 - math.cos(math.pi * i / n)) for i in range(n + 1)]
    half = [5 * t * (0.2969 * math.sqrt(x) - 0.1260 * x - 0.3516 * x**2 + 0.2843 * x**3
                     - 0.1036 * x**4) for x in xs]
    upper = [(x, y) for x, y in zip(xs, half)]
    lower = [(x, -y) for x, y in zip(xs, half)]
    return upper, lower


def set_sampling(field, n):
    """Points per curve of a Distance field: "Sampling" since Gmsh 4.11, "NumPointsPerCurve" before."""
    try:
        gmsh.model.mesh.field.setNumber(field, "Sampling", n)
    except Exception:
        gmsh.model.mesh.field.setNumber(field, "NumPointsPerCurve", n)


def graded_size(entity_list, entities, sampling, h_min, h_max, d_min, d_max):
    """Mesh size h_min within d_min of the entities, growing linearly to h_max at d_max."""
    f = gmsh.model.mesh.field
    dist = f.add("Distance")
    f.setNumbers(dist, entity_list, entities)
    set_sampling(dist, sampling)
    thr = f.add("Threshold")
    f.setNumber(thr, "InField", dist)
    f.setNumber(thr, "SizeMin", h_min)
    f.setNumber(thr, "SizeMax", h_max)
    f.setNumber(thr, "DistMin", d_min)
    f.setNumber(thr, "DistMax", d_max)
    f.setAsBackgroundMesh(thr)
    gmsh.option.setNumber("Mesh.MeshSizeExtendFromBoundary", 0)


def physical_groups(*groups):
    """(dim, entity tags, name) triples, numbered 1, 2, ... in order."""
    for tag, (dim, entities, name) in enumerate(groups, start=1):
        gmsh.model.addPhysicalGroup(dim, entities, tag)
        gmsh.model.setPhysicalName(dim, tag, name)


def make_naca(path, binary):
    gmsh.model.add("naca0012")
    geo = gmsh.model.geo
    upper, lower = naca0012()
    h_wall, h_far = 0.01, 0.4
    le = geo.addPoint(0, 0, 0, h_wall)
    te = geo.addPoint(1, 0, 0, h_wall)
    up = [le] + [geo.addPoint(x, y, 0, h_wall) for x, y in upper[1:-1]] + [te]
    lo = [le] + [geo.addPoint(x, y, 0, h_wall) for x, y in lower[1:-1]] + [te]
    s_up = geo.addSpline(up)
    s_lo = geo.addSpline(lo)
    wing = geo.addCurveLoop([s_up, -s_lo])
    corners = [geo.addPoint(x, y, 0, h_far) for x, y in [(-4, -4), (6, -4), (6, 4), (-4, 4)]]
    box = [geo.addLine(corners[i], corners[(i + 1) % 4]) for i in range(4)]
    outer = geo.addCurveLoop(box)
    fluid = geo.addPlaneSurface([outer, wing])
    geo.synchronize()
    # Fine at the airfoil, coarse far away.
    graded_size("CurvesList", [s_up, s_lo], 200, h_wall, h_far, 0.02, 2.5)
    physical_groups((1, [s_up, s_lo], "airfoil"), (1, box, "farfield"), (2, [fluid], "fluid"))
    gmsh.model.mesh.generate(2)
    write(path, binary)


def make_sphere(path, binary, nodes):
    gmsh.model.add("sphere_box")
    occ = gmsh.model.occ
    box = occ.addBox(-2, -2, -2, 4, 4, 4)
    ball = occ.addSphere(0, 0, 0, 0.5)
    out, _ = occ.cut([(3, box)], [(3, ball)])
    occ.synchronize()
    vol = out[0][1]
    surfaces = [s for _, s in gmsh.model.getBoundary([(3, vol)], oriented=False)]
    sphere = [s for s in surfaces
              if abs(gmsh.model.occ.getMass(2, s) - 4 * math.pi * 0.25) < 1e-6 * 4 * math.pi]
    walls = [s for s in surfaces if s not in sphere]
    # The default mesh has 6,633 nodes; the count grows as (1 / scale)^2.78 (measured: the
    # surface-graded part grows slower than the volume's cube).
    scale = 1.0 if nodes <= 0 else (6633.0 / nodes) ** (1.0 / 2.78)
    h_wall, h_far = 0.06 * scale, 0.35 * scale
    graded_size("SurfacesList", sphere, 100, h_wall, h_far, 0.05, 1.5)
    gmsh.option.setNumber("Mesh.MeshSizeFromPoints", 0)
    gmsh.option.setNumber("Mesh.MeshSizeFromCurvature", 0)
    if nodes > 200000:
        gmsh.option.setNumber("Mesh.Algorithm3D", 10)  # HXT: parallel, for the large meshes
        gmsh.option.setNumber("General.NumThreads", os.cpu_count() or 1)
    physical_groups((2, sphere, "sphere"), (2, walls, "box"), (3, [vol], "fluid"))
    gmsh.model.mesh.generate(3)
    write(path, binary)


def write(path, binary):
    gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
    gmsh.option.setNumber("Mesh.Binary", 1 if binary else 0)
    gmsh.write(path)
    gmsh.clear()
    gmsh.open(path)  # count what was written (nodes of the physical groups' elements)
    tags, _, _ = gmsh.model.mesh.getNodes()
    print(f"{path}: {len(tags)} nodes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--only", choices=["naca", "sphere"])
    ap.add_argument("--nodes", type=int, default=0, help="about this many nodes (sphere mesh)")
    ap.add_argument("--binary", action="store_true", help="binary MSH 4.1")
    args = ap.parse_args()
    gmsh.initialize(readConfigFiles=False)
    gmsh.option.setNumber("General.Terminal", 0)
    try:
        if args.only in (None, "naca"):
            make_naca(os.path.join(args.out, "naca0012.msh"), args.binary)
        if args.only in (None, "sphere"):
            name = "sphere_box.msh" if args.nodes <= 0 else f"sphere_box_{args.nodes}.msh"
            make_sphere(os.path.join(args.out, name), args.binary, args.nodes)
    finally:
        gmsh.finalize()


if __name__ == "__main__":
    main()
