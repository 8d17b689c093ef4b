#!/usr/bin/env python3
"""An airplane-like closed surface for the TD-BEM benchmarks (seed 003 §6.4: an airplane of
23,962 unknowns; ours has one unknown per triangle).

The OpenCASCADE kernel of Gmsh builds a fuselage (a cylinder with a half-ellipsoid nose and a tail
cone, 40 units long), two swept, tapered main wings and a horizontal stabiliser (lofts through
elliptic sections, 12 % thick), and a vertical fin; `occ.fuse` makes them one solid, whose boundary
is meshed with triangles of one size, chosen so that the count is close to --triangles. The
triangles are oriented consistently and outwards (the TD-BEM takes its normals from the corner
order), checked closed and manifold (every edge in exactly two triangles, once each way) and
non-degenerate, then written as

  --out-msh PATH.msh      Gmsh 4.1 text: the nodes and triangles exactly as in the .npy files
  --out-prefix PREFIX     PREFIX_nodes.npy (float64, n x 3) and PREFIX_triangles.npy (m x 3,
                          0-based node rows, stored as float64: ksum::io::read_table reads only
                          float32/float64 .npy; the values are exact integers)

Needs numpy and Gmsh's Python API (python3-gmsh 4.8; Debian puts gmsh.py in
/usr/lib/python3/dist-packages, which is tried when `import gmsh` fails).
"""
import argparse
import math
import sys

import numpy as np

try:
    import gmsh
except ImportError:
    sys.path.append("/usr/lib/python3/dist-packages")
    import gmsh

# Dimensions (units ~ metres): fuselage radius R from x = 0 (nose tip) to x = 40 (tail end).
R = 2.0
NOSE, BODY_END, TAIL_END, TAIL_R = 6.0, 30.0, 40.0, 0.35
THICKNESS = 0.12  # section thickness / chord


def elliptic_halves(x, y, z, chord):
    """The two halves of an ellipse of axes chord and THICKNESS·chord, split at the ends of the
    chord: the lofts then get the leading and trailing edges as CAD edges and an upper and a lower
    face each, which Gmsh meshes reliably (a whole thin ellipse makes one face whose parametric
    mesh around the sharp ends keeps failing at coarse sizes)."""
    occ = gmsh.model.occ
    a, b = chord / 2, THICKNESS * chord / 2
    return [occ.addEllipse(x, y, z, a, b, angle1=0, angle2=math.pi),
            occ.addEllipse(x, y, z, a, b, angle1=math.pi, angle2=2 * math.pi)]


def section_xz(x_le, y, z, chord):
    """A closed elliptic wire in the plane y = const: chord along x from x_le, thickness along z."""
    occ = gmsh.model.occ
    arcs = [(1, t) for t in elliptic_halves(0, 0, 0, chord)]
    occ.rotate(arcs, 0, 0, 0, 1, 0, 0, math.pi / 2)  # the ellipse's y axis turns into z
    occ.translate(arcs, x_le + chord / 2, y, z)
    return occ.addWire([t for _, t in arcs])


def section_xy(x_le, z, chord):
    """A closed elliptic wire in the plane z = const: chord along x, thickness along y."""
    return gmsh.model.occ.addWire(elliptic_halves(x_le + chord / 2, 0, z, chord))


def lifting_pair(root, tip):
    """A surface from y = 0 to y = ±span through two sections (x_le, y, z, chord), both sides."""
    occ = gmsh.model.occ
    right = occ.addThruSections([section_xz(*root), section_xz(*tip)], makeSolid=True)
    left = occ.copy(right)
    occ.mirror(left, 0, 1, 0, 0)
    return right + left


def build_geometry():
    occ = gmsh.model.occ
    # Fuselage: half-ellipsoid nose (semi-axes NOSE, R, R) on a cylinder, then a cone; the pieces
    # meet on flat circular faces (a whole ellipsoid would touch the cylinder tangentially, which
    # the boolean operations handle badly).
    ball = occ.addSphere(NOSE, 0, 0, R)
    occ.dilate([(3, ball)], NOSE, 0, 0, NOSE / R, 1, 1)
    cutter = occ.addBox(NOSE, -2 * R, -2 * R, 2 * NOSE, 4 * R, 4 * R)
    nose, _ = occ.cut([(3, ball)], [(3, cutter)])
    body = occ.addCylinder(NOSE, 0, 0, BODY_END - NOSE, 0, 0, R)
    tail = occ.addCone(BODY_END, 0, 0, TAIL_END - BODY_END, 0, 0, R, TAIL_R)
    # Main wings: low wing, root chord 7 inside the fuselage, tip chord 2.5 at y = ±17, swept
    # back 8 units at the leading edge, 1.2 units of dihedral.
    wings = lifting_pair((14.0, 0.0, -0.8, 7.0), (22.0, 17.0, 0.4, 2.5))
    # Horizontal stabiliser: root chord 3.5 inside the tail cone, tip chord 1.5 at y = ±6.5.
    stab = lifting_pair((33.5, 0.0, 0.3, 3.5), (36.5, 6.5, 0.6, 1.5))
    # Vertical fin: root chord 5 inside the tail cone, tip chord 2 at z = 7.
    fin = occ.addThruSections([section_xy(32.0, 0.0, 5.0), section_xy(37.0, 7.0, 2.0)],
                              makeSolid=True)
    tools = [(3, body), (3, tail)] + wings + stab + fin
    solid, _ = occ.fuse(nose, tools)
    occ.synchronize()
    volumes = gmsh.model.getEntities(3)
    if len(solid) != 1 or len(volumes) != 1:
        raise SystemExit(f"make_airplane: the fusion gave {len(solid)} solids ({volumes}), not 1")
    return volumes[0][1]


def mesh_surface(h):
    gmsh.model.mesh.clear()
    gmsh.option.setNumber("Mesh.MeshSizeMin", h)
    gmsh.option.setNumber("Mesh.MeshSizeMax", h)
    gmsh.model.mesh.generate(2)
    gmsh.model.mesh.removeDuplicateNodes()
    types, _, _ = gmsh.model.mesh.getElements(2)
    if list(types) != [2]:
        raise SystemExit(f"make_airplane: element types {list(types)} on the surface, not only 3-node "
                         f"triangles (2)")
    _, conn = gmsh.model.mesh.getElementsByType(2)
    return len(conn) // 3


def check_folds():
    """Every triangle faces the same way as the CAD surface under it: the normal of its corners'
    order against the surface normal at its centroid's projection; on each face all signs must
    agree (a triangle folded over in the parametric mesh breaks that). Returns the smallest
    |cos| of the angle between the two normals."""
    tags, coords, _ = gmsh.model.mesh.getNodes()
    where = np.full(int(tags.max()) + 1, -1, dtype=np.int64)
    where[np.asarray(tags, dtype=np.int64)] = np.arange(len(tags))
    coords = np.asarray(coords).reshape(-1, 3)
    worst = 1.0
    for _, face in gmsh.model.getEntities(2):
        _, conn = gmsh.model.mesh.getElementsByType(2, face)
        if len(conn) == 0:
            continue
        x = coords[where[np.asarray(conn, dtype=np.int64).reshape(-1, 3)]]
        n = np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0])
        n /= np.linalg.norm(n, axis=1)[:, None]
        uv = gmsh.model.getParametrization(2, face, x.mean(axis=1).ravel())
        cad = np.asarray(gmsh.model.getNormal(face, uv)).reshape(-1, 3)
        cos = np.einsum("ij,ij->i", n, cad)
        side = np.sign(np.sum(np.sign(cos)))
        folded = np.count_nonzero(np.sign(cos) != side)
        if folded:
            raise SystemExit(f"make_airplane: {folded} of {len(cos)} triangle(s) on CAD face {face} "
                             f"are folded over (normal against the surface's)")
        worst = min(worst, float(np.min(np.abs(cos))))
    return worst


def extract():
    """Nodes (only those used by triangles) and 0-based triangles."""
    tags, coords, _ = gmsh.model.mesh.getNodes()
    coords = np.asarray(coords, dtype=np.float64).reshape(-1, 3)
    _, conn = gmsh.model.mesh.getElementsByType(2)
    conn = np.asarray(conn, dtype=np.int64).reshape(-1, 3)
    row = np.full(int(tags.max()) + 1, -1, dtype=np.int64)
    row[np.asarray(tags, dtype=np.int64)] = np.arange(len(tags))
    tri = row[conn]
    used = np.unique(tri)
    new = np.full(len(tags), -1, dtype=np.int64)
    new[used] = np.arange(len(used))
    return coords[used], new[tri]


def edge_table(tri):
    """Directed edges (a, b) of every triangle, in the order of the corners."""
    return np.stack([tri, np.roll(tri, -1, axis=1)], axis=2).reshape(-1, 2)


def check_closed(nodes, tri):
    """Every undirected edge in exactly two triangles; no degenerate triangle. Fails loudly."""
    a, b, c = nodes[tri[:, 0]], nodes[tri[:, 1]], nodes[tri[:, 2]]
    longest = np.max(np.stack([np.linalg.norm(b - a, axis=1), np.linalg.norm(c - b, axis=1),
                               np.linalg.norm(a - c, axis=1)]), axis=0)
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    bad = np.flatnonzero(~(area > 1e-10 * longest ** 2))
    if len(bad):
        raise SystemExit(f"make_airplane: {len(bad)} degenerate triangle(s), first {bad[0]} "
                         f"(area {area[bad[0]]:.3g}, longest edge {longest[bad[0]]:.3g})")
    e = np.sort(edge_table(tri), axis=1)
    _, counts = np.unique(e, axis=0, return_counts=True)
    if np.any(counts != 2):
        raise SystemExit(f"make_airplane: not closed/manifold: {np.count_nonzero(counts == 1)} "
                         f"boundary edge(s), {np.count_nonzero(counts > 2)} edge(s) in > 2 triangles")
    return area, len(counts), float(np.min(area / longest ** 2))


def orient_outwards(nodes, tri):
    """Consistent orientation by a breadth-first walk over shared edges (a neighbour must use the
    shared edge the other way round), then all flipped if the enclosed volume is negative."""
    m = len(tri)
    directed = edge_table(tri)
    key = np.minimum(directed[:, 0], directed[:, 1]) * (len(nodes) + 1) + np.maximum(
        directed[:, 0], directed[:, 1])
    order = np.argsort(key, kind="stable")
    pair = order.reshape(-1, 2)  # each undirected edge twice (checked closed before)
    owner = pair // 3
    neighbours = [[] for _ in range(m)]
    for (p, q), (tp, tq) in zip(pair, owner):
        same = directed[p, 0] == directed[q, 0]  # same direction: the two disagree
        neighbours[tp].append((tq, same))
        neighbours[tq].append((tp, same))
    flip = np.full(m, -1, dtype=np.int8)
    components = 0
    for start in range(m):
        if flip[start] >= 0:
            continue
        components += 1
        flip[start] = 0
        queue = [start]
        while queue:
            t = queue.pop()
            for u, same in neighbours[t]:
                want = flip[t] ^ int(same)
                if flip[u] < 0:
                    flip[u] = want
                    queue.append(u)
                elif flip[u] != want:
                    raise SystemExit("make_airplane: the surface is not orientable")
    tri = tri.copy()
    tri[flip == 1] = tri[flip == 1][:, ::-1]
    a, b, c = nodes[tri[:, 0]], nodes[tri[:, 1]], nodes[tri[:, 2]]
    volume = np.sum(np.einsum("ij,ij->i", a, np.cross(b, c))) / 6
    if volume < 0:
        tri = tri[:, ::-1].copy()
        volume = -volume
    _, counts = np.unique(edge_table(tri), axis=0, return_counts=True)
    if np.any(counts != 1):
        raise SystemExit("make_airplane: orientation not consistent after the walk")
    return tri, volume, components


def write_msh(path, nodes, tri):
    """The oriented mesh as one discrete surface, node tag = row + 1, Gmsh 4.1 text."""
    gmsh.model.add("airplane_surface")
    s = gmsh.model.addDiscreteEntity(2)
    gmsh.model.mesh.addNodes(2, s, np.arange(1, len(nodes) + 1), nodes.ravel())
    gmsh.model.mesh.addElementsByType(s, 2, np.arange(1, len(tri) + 1), (tri + 1).ravel())
    gmsh.model.addPhysicalGroup(2, [s], 1)
    gmsh.model.setPhysicalName(2, 1, "airplane")
    gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
    gmsh.option.setNumber("Mesh.Binary", 0)
    gmsh.option.setNumber("Mesh.SaveAll", 0)
    gmsh.write(path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--triangles", type=int, default=24000, help="target triangle count")
    p.add_argument("--out-msh", help="write the surface as Gmsh 4.1 text")
    p.add_argument("--out-prefix", help="write PREFIX_nodes.npy and PREFIX_triangles.npy")
    p.add_argument("--rounds", type=int, default=3, help="mesh-size corrections after the first")
    p.add_argument("--verbose", action="store_true", help="Gmsh's own messages")
    a = p.parse_args()
    if a.triangles < 500:
        raise SystemExit("make_airplane: --triangles must be >= 500")

    gmsh.initialize()
    gmsh.option.setNumber("General.Terminal", 1 if a.verbose else 0)
    gmsh.model.add("airplane")
    volume_tag = build_geometry()
    surfaces = gmsh.model.getBoundary([(3, volume_tag)], oriented=False)
    area = sum(gmsh.model.occ.getMass(2, abs(t)) for _, t in surfaces)
    gmsh.option.setNumber("Mesh.MeshSizeFromCurvature", 0)
    gmsh.option.setNumber("Mesh.MeshSizeFromPoints", 0)
    gmsh.option.setNumber("Mesh.MeshSizeExtendFromBoundary", 0)
    # An equilateral triangle of edge h has area sqrt(3)/4 h^2; the count scales like 1 / h^2.
    h = math.sqrt(4 * area / (math.sqrt(3) * a.triangles))
    m = mesh_surface(h)
    print(f"surface area {area:.2f}, {len(surfaces)} CAD faces; h = {h:.4f}: {m} triangles")
    for _ in range(a.rounds):
        if abs(m / a.triangles - 1) < 0.01:
            break
        h *= math.sqrt(m / a.triangles)
        m = mesh_surface(h)
        print(f"h = {h:.4f}: {m} triangles")

    folds = check_folds()
    nodes, tri = extract()
    tri_area, edges, worst = check_closed(nodes, tri)
    tri, volume, components = orient_outwards(nodes, tri)
    euler = len(nodes) - edges + len(tri)
    if euler != 2 or components != 1:
        raise SystemExit(f"make_airplane: Euler characteristic {euler}, {components} component(s): "
                         f"not one closed surface of genus 0 (the fusion left a hole or a piece)")
    mean_edge = float(np.mean(np.linalg.norm(
        nodes[edge_table(tri)[:, 0]] - nodes[edge_table(tri)[:, 1]], axis=1)))
    lo, hi = nodes.min(axis=0), nodes.max(axis=0)
    print(f"nodes {len(nodes)}, triangles {len(tri)}, edges {edges}, Euler characteristic {euler} "
          f"(2: one closed surface of genus 0), {components} connected component(s)")
    print(f"closed and manifold: every edge in exactly 2 triangles, oriented consistently "
          f"outwards (enclosed volume {volume:.2f}); smallest area / longest edge^2 {worst:.3g}")
    print(f"no folded triangle: normals within {math.degrees(math.acos(folds)):.1f} degrees of "
          f"the CAD surface's")
    print(f"mean edge {mean_edge:.4f}, triangle area {tri_area.min():.3g} … {tri_area.max():.3g} "
          f"(sum {tri_area.sum():.2f})")
    print(f"bounding box [{lo[0]:.3f}, {hi[0]:.3f}] x [{lo[1]:.3f}, {hi[1]:.3f}] x "
          f"[{lo[2]:.3f}, {hi[2]:.3f}]")

    if a.out_prefix:
        np.save(f"{a.out_prefix}_nodes.npy", np.ascontiguousarray(nodes, dtype=np.float64))
        np.save(f"{a.out_prefix}_triangles.npy", np.ascontiguousarray(tri, dtype=np.float64))
        print(f"wrote {a.out_prefix}_nodes.npy, {a.out_prefix}_triangles.npy")
    if a.out_msh:
        write_msh(a.out_msh, nodes, tri)
        print(f"wrote {a.out_msh}")
    gmsh.finalize()


if __name__ == "__main__":
    main()
