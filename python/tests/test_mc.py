"""ksum.mc (seed 004 Paper I): the engine's U against a NumPy float64 reference written here from
the formulas of docs/mc.md, ΔU against U(after) − U(before), batched translations against the
running sum, the polyelectrolyte's reproducibility and restart, the errors, and the module's
docstring examples. CPU only, small systems."""
import doctest
import math

import numpy as np
import pytest

import ksum
from ksum import mc

WCA_CUT2 = 2.0 ** (1.0 / 3.0)  # (2^(1/6))²


def reference_total(x, q, r, bonds=(), *, bjerrum=7.14, debye_length=None,
                    short_range="hard-sphere", lj_epsilon=1.0, bond="none", bond_k=0.0,
                    bond_r0=0.0, bond_rmax=0.0, box=None, cell_radius=None):
    """U in float64: every pair i < j (minimum image in a box) plus the bonds; inf on overlap."""
    x, q, r = (np.asarray(a, dtype=np.float64) for a in (x, q, r))
    n = len(x)
    i, j = np.triu_indices(n, 1)
    d = x[i] - x[j]
    if box is not None:
        d -= box * np.round(d / box)
    r2 = (d * d).sum(1)
    dist = np.sqrt(r2)
    sigma = r[i] + r[j]
    if np.any(r2 == 0):
        return math.inf
    u = bjerrum * q[i] * q[j] / dist
    if debye_length is not None:
        u *= np.exp(-dist / debye_length)
    if short_range == "hard-sphere" and np.any(r2 < sigma ** 2):
        return math.inf
    if short_range in ("lj", "wca"):
        x6 = (sigma ** 2 / r2) ** 3
        lj = 4 * lj_epsilon * (x6 * x6 - x6)
        if short_range == "wca":
            lj = np.where(r2 < WCA_CUT2 * sigma ** 2, lj + lj_epsilon, 0.0)
        u = u + np.where(sigma > 0, lj, 0.0)
    total = float(u.sum())
    for a, b in bonds:
        db = x[a] - x[b]
        if box is not None:
            db -= box * np.round(db / box)
        lb = float(np.sqrt(db @ db))
        if bond == "harmonic":
            total += 0.5 * bond_k * (lb - bond_r0) ** 2
        elif bond == "fene":
            if lb >= bond_rmax:
                return math.inf
            total += -0.5 * bond_k * bond_rmax ** 2 * math.log1p(-(lb / bond_rmax) ** 2)
    if cell_radius is not None and np.any((x * x).sum(1) > cell_radius ** 2):
        return math.inf
    return total


def chain_system(rng, n=60, chain=12, spacing=6.0, box=80.0):
    """A chain of `chain` beads along a jagged line, then free ions on a lattice, no overlaps:
    positions in [0, box)³, charges ±1 and 0, radii 1 … 1.5."""
    k = np.arange(chain)
    x = np.c_[10 + 4.5 * k, 20 + 1.5 * (k % 2), 30 + 0.0 * k]
    grid = np.stack(np.meshgrid(*[np.arange(8, box, 13.0)] * 3, indexing="ij"), -1).reshape(-1, 3)
    far = grid[np.min(np.linalg.norm(grid[:, None] - x[None], axis=2), axis=1) > 5]
    x = np.r_[x, far[rng.choice(len(far), n - chain, replace=False)]]
    x += rng.uniform(-0.4, 0.4, x.shape)
    q = rng.choice([-1.0, 0.0, 1.0, 2.0], n)
    r = rng.uniform(1.0, 1.5, n)
    bonds = [(a, a + 1) for a in range(chain - 1)]
    return x, q, r, bonds


POTENTIALS = [
    dict(),
    dict(debye_length=8.0),
    dict(short_range="lj", lj_epsilon=0.7),
    dict(short_range="wca", lj_epsilon=1.3, debye_length=20.0),
    dict(bond="harmonic", bond_k=2.0, bond_r0=4.0),
    dict(bond="fene", bond_k=1.5, bond_rmax=7.0, short_range="wca"),
    dict(short_range="none", bjerrum=3.0),
]


def _name(pot):
    return ",".join(f"{k}={v}" for k, v in pot.items()) or "coulomb"


@pytest.mark.parametrize("cell", ["open", "periodic", "sphere"])
@pytest.mark.parametrize("pot", POTENTIALS, ids=_name)
def test_total_matches_the_float64_reference(rng, pot, cell):
    x, q, r, bonds = chain_system(rng)
    geo = {}
    if cell == "periodic":
        geo = dict(box=80.0)
    elif cell == "sphere":
        x = x - 40.0
        geo = dict(cell_radius=80.0)
    ref = reference_total(x, q, r, bonds, **pot, **geo)
    assert np.isfinite(ref)
    for precision, tol in (("float64", 1e-12), ("float32", 2e-5)):
        e = mc.Engine(x, q, r, bonds=bonds, precision=precision, backend="cpu", **pot, **geo)
        assert e.total() == pytest.approx(ref, rel=tol, abs=tol)
        assert e.total_full_recompute() == pytest.approx(ref, rel=tol, abs=tol)


@pytest.mark.parametrize("pot", POTENTIALS[:6], ids=_name)
def test_delta_is_u_after_minus_u_before(rng, pot):
    x, q, r, bonds = chain_system(rng)
    e = mc.Engine(x, q, r, bonds=bonds, box=80.0, backend="cpu", **pot)
    u = e.total()
    checked = 0
    for _ in range(200):
        m = int(rng.integers(1, 4))
        idx = rng.choice(len(x), m, replace=False)
        new = e.positions[idx] + rng.uniform(-1.5, 1.5, (m, 3))
        du = e.delta(idx, new)
        after = e.positions
        after[idx] = new
        ref = reference_total(after, q, r, bonds, box=80.0, **pot)
        if not np.isfinite(ref):
            assert du == math.inf
            continue
        assert du == pytest.approx(ref - u, rel=1e-9, abs=1e-10 * max(1.0, abs(u)))
        if rng.random() < 0.5:
            e.apply(idx, new)
            u = e.total()
            assert u == pytest.approx(ref, rel=1e-12, abs=1e-12)
        checked += 1
    assert checked > 100


def test_translate_keeps_the_running_energy_and_is_reproducible(rng):
    x, q, r, bonds = chain_system(rng)
    kw = dict(bonds=bonds, box=80.0, backend="cpu", bond="harmonic", bond_k=1.0, bond_r0=4.5)
    a, b = mc.Engine(x, q, r, **kw), mc.Engine(x, q, r, **kw)
    u = a.total()
    for first in (0, 500):
        res = a.translate(500, max_step=2.0, seed=11, first=first)
        u += res["delta_u"]
        assert res["attempted"] == 500
        assert 0 < res["accepted"] < 500
    assert a.total() == pytest.approx(u, rel=1e-11)
    b.translate(1000, max_step=2.0, seed=11)  # one call of 1000 = two of 500: the same chain
    np.testing.assert_array_equal(a.positions, b.positions)
    assert reference_total(a.positions, q, r, bonds, box=80.0, bond="harmonic", bond_k=1.0,
                           bond_r0=4.5) == pytest.approx(a.total(), rel=1e-12)


def test_polyelectrolyte_is_reproducible_and_restarts_exactly(tmp_path):
    kw = dict(chains=2, monomers=8, salt=2, concentration=0.05, seed=4, backend="cpu",
              threads=1, recompute_every=7)
    one = ksum.Polyelectrolyte(**kw).run(30)
    two = ksum.Polyelectrolyte(**kw).run(15).save(tmp_path / "a.ck")
    cont = ksum.Polyelectrolyte.load(tmp_path / "a.ck", backend="cpu", threads=1).run(15)
    s1, s2 = one.samples(), cont.samples()
    assert list(s1) == ["sweep", "energy", "ree", "rg", "ree_0", "rg_0", "ree_1", "rg_1"]
    for k in s1:
        np.testing.assert_array_equal(s1[k], s2[k])
    np.testing.assert_array_equal(one.positions, cont.positions)
    assert one.energy == cont.energy and one.sweeps == cont.sweeps == 30
    assert two.sweeps == 15
    # The model: 16 monomers, 16 counter-ions, 2 salt pairs; charge neutral.
    assert len(one.charges) == 36 and one.charges.sum() == 0
    assert list(np.bincount(one.species)) == [16, 0, 16, 2, 2]
    # The running U is the full recompute's, and the samples agree with the summary.
    u = one.energy
    assert one.recompute() == pytest.approx(u, rel=1e-12)
    sm = one.summary()
    assert sm["samples"] == 30 and sm["recomputes"] == 5
    assert sm["ree"]["mean"] == pytest.approx(s1["ree"].mean())
    assert 0 < sm["acceptance"]["translate"]["ratio"] < 1
    rad = one.radial()
    assert rad["count"].sum() == 30 * 16  # every counter-ion of every sample
    assert one.gyration_radius(1) == pytest.approx(s1["rg_1"][-1])
    with pytest.raises(ksum.FileError, match="exists"):
        two.save(tmp_path / "a.ck")


def test_simulate_returns_numpy_samples():
    s = mc.simulate(12, chains=1, monomers=6, concentration=0.05, backend="cpu",
                    bond="fene", short_range="wca", box=None)
    assert s["sweep"].dtype == np.float64 and s["sweep"].tolist() == list(range(1, 13))
    assert np.all(np.isfinite(s["energy"])) and np.all(s["rg"] > 0)


def test_errors_name_the_input():
    x = np.array([[0.0, 0, 0], [5.0, 0, 0]])
    with pytest.raises(ksum.InputError, match="particle 1: .*not finite"):
        mc.Engine([[0.0, 0, 0], [np.nan, 0, 0]], [1.0, -1.0], backend="cpu")
    with pytest.raises(ksum.InputError, match="not finite"):
        mc.Engine(x, [1.0, np.nan], backend="cpu")
    with pytest.raises(ksum.InputError, match="overlap"):
        mc.Engine(x, [1.0, -1.0], [3.0, 3.0], backend="cpu")
    with pytest.raises(ksum.InputError, match="shape"):
        mc.Engine(x, [1.0, -1.0, 1.0], backend="cpu")
    e = mc.Engine(x, [1.0, -1.0], [1.0, 1.0], backend="cpu")
    with pytest.raises(ksum.InputError, match="not finite"):
        e.delta(0, [np.nan, 0, 0])
    with pytest.raises(ksum.InputError, match="outside"):
        e.delta(5, [1.0, 0, 0])
    with pytest.raises(ksum.InputError, match="debye"):
        mc.Engine(x, [1.0, -1.0], electrostatics="coulomb", debye_length=5.0, backend="cpu")
    with pytest.raises(ksum.InputError, match="volume fraction"):
        ksum.Polyelectrolyte(chains=2, monomers=8, cell_radius=8.0, backend="cpu")
    with pytest.raises(ksum.InputError, match="short-range"):
        ksum.Polyelectrolyte(short_range="soft", backend="cpu")
    with pytest.raises(ksum.FileError, match="missing.ck"):
        ksum.Polyelectrolyte.load("missing.ck")


def test_docstring_examples():
    res = doctest.testmod(mc, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0
