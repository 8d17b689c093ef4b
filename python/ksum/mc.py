"""Monte Carlo electrostatics (seed 004 Paper I, ``ksum mc`` from Python): :class:`Engine`, the
all-pairs energy of charged spheres with O(N) energy differences for trial moves, and
:class:`Polyelectrolyte`, the Metropolis simulation of bead-spring chains with their counter-ions.

Units: energies in kT, lengths in Å (any unit, with the Bjerrum length in it), charges in e.
The pair energy of particles i, j at distance r (minimum image in a periodic box) is

    u_ij = l_B q_i q_j exp(−r/λ_D) / r          (λ_D = ∞ unless ``debye_length``)
         + short range at contact σ = R_i + R_j: hard spheres (r < σ: infinite),
           'lj' 4ε[(σ/r)¹² − (σ/r)⁶], 'wca' the same cut and shifted at 2^(1/6)σ
         + bonds: 'harmonic' k/2 (r − r0)², 'fene' −k r_max²/2 ln(1 − (r/r_max)²)

An infinite energy (overlap, broken bond, a centre outside a spherical cell) is ``math.inf``:
``exp(−inf) = 0`` rejects such a move in a Metropolis test.
"""
from __future__ import annotations

import math
import os
import threading
from typing import Callable, Optional

import numpy as np
from numpy.typing import ArrayLike

from . import _arrays as A
from . import _ksum
from ._errors import InputError

__all__ = ["Engine", "Polyelectrolyte", "simulate", "bjerrum_length"]


def bjerrum_length(relative_permittivity: float = 78.4, temperature: float = 298.15) -> float:
    """l_B = e² / (4π ε0 εr kB T) in Å (water at 25 °C: 7.14 Å).

    Example
    -------
    >>> from ksum import mc
    >>> round(mc.bjerrum_length(78.4, 298.15), 2)
    7.15
    """
    return _ksum.mc_bjerrum_length(float(relative_permittivity), float(temperature))


def _energy(pair):
    value, overlaps = pair
    return math.inf if overlaps > 0 else value


def _potential(electrostatics, bjerrum, debye_length, short_range, lj_epsilon, bond, bond_k,
               bond_r0, bond_rmax):
    p = _ksum.McPotential()
    if electrostatics is None:
        electrostatics = "coulomb" if debye_length is None else "debye-huckel"
    p.electrostatics = str(electrostatics)
    p.bjerrum = float(bjerrum)
    if debye_length is not None:
        if p.electrostatics != "debye-huckel":
            raise InputError(f"debye_length screens the Coulomb term: it needs electrostatics="
                             f"'debye-huckel', not '{electrostatics}'", "invalid_argument")
        p.debye_length = float(debye_length)
    p.short_range = str(short_range)
    p.lj_epsilon = float(lj_epsilon)
    p.bond = str(bond)
    p.bond_k, p.bond_r0, p.bond_rmax = float(bond_k), float(bond_r0), float(bond_rmax)
    return p


def _cell(cell_radius, box):
    if cell_radius is not None and box is not None:
        raise InputError("give cell_radius (a sphere) or box (periodic), not both",
                         "invalid_argument")
    if cell_radius is not None:
        return _ksum.McCell("sphere", float(cell_radius), (0.0, 0.0, 0.0))
    if box is not None:
        b = np.broadcast_to(np.asarray(box, dtype=float).ravel(), (3,))
        return _ksum.McCell("periodic", 0.0, tuple(float(v) for v in b))
    return _ksum.McCell("open", 0.0, (0.0, 0.0, 0.0))


def _rows3(a, name, n=None):
    A.reject_gpu(**{name: a})
    x = np.asarray(a, dtype=np.float64)
    if x.ndim == 1 and x.size == 3:
        x = x.reshape(1, 3)
    if x.ndim != 2 or x.shape[1] != 3 or (n is not None and x.shape[0] != n):
        want = f"({n}, 3)" if n is not None else "(n, 3)"
        raise InputError(f"{name}: expected shape {want}, got {x.shape}", "shape_mismatch")
    return np.ascontiguousarray(x)


def _vector(a, name, n, dtype=np.float64):
    A.reject_gpu(**{name: a})
    v = np.asarray(a, dtype=dtype)
    if v.ndim == 0:
        v = np.full(n, v, dtype=dtype)
    if v.shape != (n,):
        raise InputError(f"{name}: expected {n} values (one per particle), got shape {v.shape}",
                         "shape_mismatch")
    return np.ascontiguousarray(v)


def _indices(a, n_rows):
    i = np.atleast_1d(np.asarray(a))
    if i.ndim != 1 or (i.size and i.dtype.kind not in "iu"):
        raise InputError(f"particles: expected integer indices, got {i.dtype} of shape {i.shape}",
                         "invalid_argument")
    if i.size != n_rows:
        raise InputError(f"particles: {i.size} indices for {n_rows} new positions",
                         "shape_mismatch")
    return np.ascontiguousarray(i, dtype=np.int64)


class Engine:
    """The energy engine of Paper I: charged spheres with positions (n, 3), ``charges`` (n,) in
    e and ``radii`` (n,) in Å (contact distance R_i + R_j), resident on the chosen backend.

    ``bonds`` (m, 2) pairs of particle indices take the bond potential; ``species`` (n,) int
    is carried along. Potential: ``electrostatics`` 'coulomb' | 'debye-huckel' | 'none' (default
    'coulomb', or 'debye-huckel' when ``debye_length`` is given), ``bjerrum`` l_B in Å,
    ``short_range`` 'hard-sphere' | 'lj' | 'wca' | 'none', ``lj_epsilon`` (kT), ``bond``
    'none' | 'harmonic' | 'fene' with ``bond_k`` (kT/Å²), ``bond_r0``, ``bond_rmax`` (Å).
    Cell: ``cell_radius`` (centres stay within it), ``box`` (periodic, an edge or three), or
    neither (open). ``precision`` of the pair arithmetic ('float64' or 'float32'; sums in
    double), ``backend`` 'auto' | 'cpu' | 'gpu'.

    Errors (:class:`ksum.InputError`) name the particle: NaN or Inf, negative radii, overlapping
    hard spheres or broken bonds at the start, particles outside the cell.

    Example
    -------
    >>> import numpy as np
    >>> from ksum import mc
    >>> x = np.array([[0.0, 0, 0], [10.0, 0, 0]])
    >>> e = mc.Engine(x, charges=[1.0, -1.0], radii=[2.0, 2.0], bjerrum=7.0, backend="cpu")
    >>> e.total()                                   # -l_B / 10
    -0.7
    >>> round(e.delta([1], [[5.0, 0, 0]]), 12)     # -7/5 + 7/10
    -0.7
    >>> e.delta([1], [[3.0, 0, 0]])                # closer than contact: rejected
    inf
    """

    def __init__(self, positions: ArrayLike, charges: ArrayLike, radii: ArrayLike = 0.0, *,
                 bonds: Optional[ArrayLike] = None, species: Optional[ArrayLike] = None,
                 electrostatics: Optional[str] = None, bjerrum: float = 7.14,
                 debye_length: Optional[float] = None, short_range: str = "hard-sphere",
                 lj_epsilon: float = 1.0, bond: str = "none", bond_k: float = 0.0,
                 bond_r0: float = 0.0, bond_rmax: float = 0.0,
                 cell_radius: Optional[float] = None, box=None, precision: str = "float64",
                 backend: str = "auto", threads: int = 0, device: int = 0, batch: int = 0):
        x = _rows3(positions, "positions")
        n = len(x)
        q = _vector(charges, "charges", n)
        r = _vector(radii, "radii", n)
        b = np.zeros((0, 2), dtype=np.int64) if bonds is None else np.asarray(bonds)
        if b.size and b.dtype.kind not in "iu":
            raise InputError(f"bonds: expected integer particle indices, got dtype {b.dtype}",
                             "invalid_argument")
        b = np.ascontiguousarray(b.reshape(-1, 2) if b.size else np.zeros((0, 2)),
                                 dtype=np.int64)
        s = None if species is None else _vector(species, "species", n, np.int32)
        pot = _potential(electrostatics, bjerrum, debye_length, short_range, lj_epsilon, bond,
                         bond_k, bond_r0, bond_rmax)
        dtype = A.resolve_precision(precision)
        cls = _ksum.McEngineF32 if dtype == np.float32 else _ksum.McEngineF64
        self._engine = cls(pot, _cell(cell_radius, box), str(backend), int(threads),
                           int(device), int(batch))
        self._engine.set_system(x, q, r, b, s)
        self.precision = np.dtype(dtype).name
        self._lock = threading.Lock()

    def __len__(self):
        return self._engine.size

    @property
    def size(self) -> int:
        """The number of particles n."""
        return self._engine.size

    @property
    def backend(self) -> str:
        """'cpu' or 'cuda': where the particles live."""
        return self._engine.backend

    @property
    def positions(self) -> np.ndarray:
        """The positions now, (n, 3) float64 (a copy; periodic ones wrapped into the box)."""
        with self._lock:
            return self._engine.positions()

    def total(self) -> float:
        """U of the system: every pair once plus the bonds (kT); ``inf`` with an overlap.

        Example
        -------
        >>> from ksum import mc
        >>> mc.Engine([[0, 0, 0], [0, 0, 5.0]], [1, 1], backend="cpu", bjerrum=5).total()
        1.0
        """
        with self._lock:
            return _energy(self._engine.total())

    def total_full_recompute(self) -> float:
        """U by the paper's path (Program 2): all particles copied to the device and all N²
        ordered pairs summed, halved. Equal to :meth:`total` up to rounding.

        Example
        -------
        >>> from ksum import mc
        >>> e = mc.Engine([[0, 0, 0], [0, 0, 5.0]], [1, 1], backend="cpu", bjerrum=5)
        >>> e.total_full_recompute()
        1.0
        """
        with self._lock:
            return _energy(self._engine.total_full_recompute())

    def delta(self, particles: ArrayLike, xyz: ArrayLike, rigid: bool = False) -> float:
        """ΔU = U(after) − U(before) of moving ``particles`` (indices) to ``xyz`` (one row of 3
        per particle), in O(N·m); ``inf`` when the new configuration has an overlap. The system
        is unchanged. ``rigid``: the moved particles keep their mutual distances (their mutual
        terms are skipped).

        Example
        -------
        >>> from ksum import mc
        >>> e = mc.Engine([[0, 0, 0], [0, 0, 5.0]], [1, -1], backend="cpu", bjerrum=5)
        >>> e.delta(1, [0, 0, 10.0])
        0.5
        """
        x = _rows3(xyz, "xyz")
        i = _indices(particles, len(x))
        with self._lock:
            return _energy(self._engine.delta(i, x, bool(rigid)))

    def apply(self, particles: ArrayLike, xyz: ArrayLike, rigid: bool = False) -> "Engine":
        """Makes the move (after an accepted :meth:`delta`). Returns self.

        Example
        -------
        >>> from ksum import mc
        >>> e = mc.Engine([[0, 0, 0], [0, 0, 5.0]], [1, -1], backend="cpu", bjerrum=5)
        >>> e.apply(1, [0, 0, 10.0]).total()
        -0.5
        """
        x = _rows3(xyz, "xyz")
        i = _indices(particles, len(x))
        with self._lock:
            self._engine.apply(i, x, bool(rigid))
        return self

    def translate(self, count: int, max_step: float = 1.0, *, seed: int = 1, first: int = 0,
                  movable: Optional[ArrayLike] = None, step: Optional[ArrayLike] = None) -> dict:
        """Metropolis with ``count`` single-particle translations, accepted moves applied.
        Move t (t = first … first + count − 1) draws from the counter-based stream (seed, t) a
        particle among ``movable`` (default all), a displacement uniform in
        [−s, s]³ (s = ``step[p]`` if given, else ``max_step``) and the acceptance uniform: the
        same chain whatever the backend or batch. Returns a dict: attempted, accepted,
        rejected_overlap, delta_u (sum of the accepted ΔU), launches.

        Example
        -------
        >>> import numpy as np
        >>> from ksum import mc
        >>> x = 6.0 * np.indices((4, 4, 3)).reshape(3, -1).T - 9   # 48 ions on a lattice
        >>> e = mc.Engine(x, np.tile([1.0, -1.0], 24), 1.0, cell_radius=30.0, backend="cpu")
        >>> u0 = e.total(); r = e.translate(1000, max_step=2.0, seed=3)
        >>> r["attempted"], abs(u0 + r["delta_u"] - e.total()) < 1e-9
        (1000, True)
        """
        mv = [] if movable is None else [int(i) for i in np.atleast_1d(movable)]
        st = [] if step is None else [float(s) for s in np.atleast_1d(step)]
        with self._lock:
            return self._engine.translate(int(seed), int(first), int(count), float(max_step),
                                          mv, st)

    def __repr__(self):
        return f"Engine({self.size} particles, {self.precision}, {self.backend})"


def _columns(pair) -> dict:
    names, table = pair
    return {name: np.ascontiguousarray(table[:, k]) for k, name in enumerate(names)}


class Polyelectrolyte:
    """The polyelectrolyte Monte Carlo simulation of ``ksum mc``: ``chains`` bead-spring chains
    of ``monomers`` hard spheres (every ``charge_every``-th monomer charged
    ``monomer_charge``), as many counter-ions of valence ``valence`` as neutralise them, and
    ``salt`` pairs of ±1 ions, in a spherical cell (``cell_radius``) or a periodic box
    (``box``), or sized from the monomer ``concentration`` (mol/L) with ``boundary`` 'sphere'
    or 'periodic'.

    Potential as :class:`Engine` (``bond`` 'harmonic' by default with ``bond_k`` 2 kT/Å² and
    ``bond_r0`` = ``bond_length``; 'fene' defaults to k = 30/b², r_max = 1.5 b). A sweep is
    ``translations`` single-particle translations (−1: one per particle; largest steps
    ``monomer_step``, ``ion_step``) and per chain ``pivots`` pivots and ``crankshafts``
    crankshafts. Samples every ``sample_every`` sweeps; a full recompute of U every
    ``recompute_every`` (the drift check). Every draw is keyed by (seed, move number): a run is
    reproducible, and :meth:`save` / :meth:`load` continue it exactly.

    Example
    -------
    >>> import ksum
    >>> pe = ksum.Polyelectrolyte(chains=2, monomers=8, concentration=0.05, backend="cpu")
    >>> s = pe.run(20).samples()
    >>> sorted(s)[:4], s["energy"].shape, pe.sweeps
    (['energy', 'ree', 'ree_0', 'ree_1'], (20,), 20)
    """

    def __init__(self, chains: int = 4, monomers: int = 32, *, charge_every: int = 1,
                 monomer_charge: float = -1.0, valence: float = 1.0, salt: int = 0,
                 monomer_radius: float = 2.0, counterion_radius: float = 2.0,
                 salt_radius: float = 2.0, bond_length: float = 5.0,
                 concentration: Optional[float] = 0.01, cell_radius: Optional[float] = None,
                 box: Optional[float] = None, boundary: str = "sphere", bjerrum: float = 7.14,
                 debye_length: Optional[float] = None, electrostatics: Optional[str] = None,
                 short_range: str = "hard-sphere", lj_epsilon: float = 1.0,
                 bond: str = "harmonic", bond_k: Optional[float] = None,
                 bond_r0: Optional[float] = None, bond_rmax: Optional[float] = None,
                 monomer_step: float = 1.0, ion_step: float = 4.0, translations: int = -1,
                 pivots: int = 1, crankshafts: int = 1, sample_every: int = 1,
                 recompute_every: int = 100, radial_bins: int = 50, radial_max: float = 0.0,
                 seed: int = 1, precision: str = "float64", backend: str = "auto",
                 threads: int = 0, device: int = 0, batch: int = 0, _sim=None):
        if _sim is not None:
            self._sim = _sim
            self._lock = threading.RLock()
            return
        m = _ksum.McModelOptions()
        m.chains, m.monomers, m.charge_every = int(chains), int(monomers), int(charge_every)
        m.monomer_charge, m.counterion_valence = float(monomer_charge), float(valence)
        m.salt_pairs = int(salt)
        m.monomer_radius, m.counterion_radius = float(monomer_radius), float(counterion_radius)
        m.salt_radius, m.bond_length = float(salt_radius), float(bond_length)
        m.seed = int(seed)
        if cell_radius is not None and box is not None:
            raise InputError("give cell_radius (a sphere), box (periodic) or concentration",
                             "invalid_argument")
        if cell_radius is not None:
            m.boundary, m.cell_radius = "sphere", float(cell_radius)
        elif box is not None:
            m.boundary, m.box = "periodic", float(box)
        else:
            if concentration is None:
                raise InputError("give cell_radius, box or concentration", "invalid_argument")
            m.boundary = str(boundary)
            m.monomer_density = float(concentration) * 6.02214076e-4  # mol/L -> Å^-3
        b = float(bond_length)
        if bond == "harmonic":
            k, r0, rmax = 2.0 if bond_k is None else bond_k, b if bond_r0 is None else bond_r0, 0
        elif bond == "fene":
            k = 30.0 / (b * b) if bond_k is None else bond_k
            r0, rmax = 0.0, 1.5 * b if bond_rmax is None else bond_rmax
        else:
            k, r0, rmax = (bond_k or 0.0), (bond_r0 or 0.0), (bond_rmax or 0.0)
        o = _ksum.McSimulationOptions()
        o.potential = _potential(electrostatics, bjerrum, debye_length, short_range, lj_epsilon,
                                 bond, k, r0, rmax)
        mv = _ksum.McMoveOptions()
        mv.monomer_step, mv.ion_step = float(monomer_step), float(ion_step)
        mv.translations, mv.pivots = int(translations), int(pivots)
        mv.crankshafts = int(crankshafts)
        o.moves = mv
        sm = _ksum.McSampleOptions()
        sm.every, sm.recompute_every = int(sample_every), int(recompute_every)
        sm.radial_bins, sm.radial_max = int(radial_bins), float(radial_max)
        o.sample = sm
        o.seed = int(seed)
        prec = np.dtype(A.resolve_precision(precision)).name
        self._sim = _ksum.McSimulation(m, o, str(backend), prec, int(threads), int(device),
                                       int(batch))
        self._lock = threading.RLock()

    @classmethod
    def load(cls, path, *, precision: str = "float64", backend: str = "auto", threads: int = 0,
             device: int = 0, batch: int = 0) -> "Polyelectrolyte":
        """Continues the run saved by :meth:`save` (model, potential, moves, samples, move
        counter), executed as given: bit-identical on the CPU with the same precision and
        threads. Errors name the file (missing, truncated, corrupt, another version).

        Example
        -------
        >>> import os, tempfile, ksum
        >>> pe = ksum.Polyelectrolyte(chains=1, monomers=6, concentration=0.05, backend="cpu")
        >>> path = os.path.join(tempfile.mkdtemp(), "run.ck")
        >>> pe.run(5).save(path).run(5).energy == ksum.Polyelectrolyte.load(
        ...     path, backend="cpu").run(5).energy
        True
        """
        prec = np.dtype(A.resolve_precision(precision)).name
        sim = _ksum.McSimulation.load(os.fspath(path), str(backend), prec, int(threads),
                                      int(device), int(batch))
        return cls(_sim=sim)

    def run(self, sweeps: int, progress: Optional[Callable[[int, float, dict], object]] = None,
            progress_every: int = 1) -> "Polyelectrolyte":
        """Runs ``sweeps`` sweeps. ``progress(sweep, energy, acceptance)`` is called every
        ``progress_every`` sweeps (acceptance: ratio per move kind); returning False stops after
        that sweep. Ctrl-C stops between sweeps. Returns self.

        Example
        -------
        >>> import ksum
        >>> pe = ksum.Polyelectrolyte(chains=1, monomers=6, concentration=0.05, backend="cpu")
        >>> pe.run(10, progress=lambda sweep, u, acc: sweep < 4).sweeps
        4
        """
        if progress is not None and not callable(progress):
            raise TypeError("progress: expected a callable progress(sweep, energy, acceptance)")
        with self._lock:
            self._sim.run(int(sweeps), progress, max(1, int(progress_every)))
        return self

    def save(self, path, overwrite: bool = False) -> "Polyelectrolyte":
        """Writes the whole state to a checkpoint (an existing file only with ``overwrite``).
        Returns self."""
        with self._lock:
            self._sim.save(os.fspath(path), bool(overwrite))
        return self

    def samples(self) -> dict:
        """The samples as numpy arrays: 'sweep', 'energy' (running U, kT), with chains 'ree',
        'rg' (means over the chains, Å) and 'ree_<c>', 'rg_<c>' of the first 16 chains."""
        with self._lock:
            return _columns(self._sim.samples())

    def radial(self) -> dict:
        """The counter-ions' radial distribution: 'r' (bin centres), 'density' (n(r) around the
        cell centre, Å⁻³) in a sphere or 'g' (g(r) around monomers) in a box, 'count'."""
        with self._lock:
            return _columns(self._sim.radial())

    def summary(self) -> dict:
        """sweeps, moves, samples, energy (running U), block-averaged estimates (dicts of mean,
        error, samples) energy_mean, ree, ree2, rg, rg2, acceptance per move kind, recomputes,
        max_drift, last_drift."""
        with self._lock:
            return self._sim.summary()

    def recompute(self) -> float:
        """U by a full recompute now (the running U restarts from it; the drift is recorded)."""
        with self._lock:
            return _energy(self._sim.recompute())

    @property
    def energy(self) -> float:
        """The running U (kT)."""
        return self._sim.energy

    @property
    def sweeps(self) -> int:
        """Sweeps done in total (those of a loaded checkpoint included)."""
        return self._sim.sweeps

    @property
    def positions(self) -> np.ndarray:
        """(n, 3) positions now: the chains' monomers, then counter-ions, salt cations, anions."""
        with self._lock:
            return self._sim.positions()

    @property
    def charges(self) -> np.ndarray:
        """(n,) charges in e."""
        return self._sim.charges()

    @property
    def radii(self) -> np.ndarray:
        """(n,) radii in Å."""
        return self._sim.radii()

    @property
    def species(self) -> np.ndarray:
        """(n,) species: 0 charged monomer, 1 neutral monomer, 2 counter-ion, 3 / 4 salt ±."""
        return self._sim.species()

    @property
    def chains(self) -> int:
        return self._sim.chains

    @property
    def monomers(self) -> int:
        return self._sim.monomers

    @property
    def backend(self) -> str:
        return self._sim.backend

    def end_to_end(self, chain: int = 0) -> float:
        """R_ee of one chain now (Å)."""
        with self._lock:
            return self._sim.end_to_end(int(chain))

    def gyration_radius(self, chain: int = 0) -> float:
        """R_g of one chain now (Å)."""
        with self._lock:
            return self._sim.gyration_radius(int(chain))

    def __repr__(self):
        return (f"Polyelectrolyte({self.chains} x {self.monomers} monomers, {len(self.charges)} "
                f"particles, {self.sweeps} sweeps, U = {self.energy:.6g} kT)")


def simulate(sweeps: int = 1000, **options) -> dict:
    """Runs a :class:`Polyelectrolyte` (keyword ``options`` as its constructor) for ``sweeps``
    sweeps and returns its samples (a dict of numpy arrays: sweep, energy, ree, rg, …).

    Example
    -------
    >>> from ksum import mc
    >>> s = mc.simulate(30, chains=1, monomers=8, concentration=0.05, backend="cpu")
    >>> int(s["sweep"][-1]), bool((s["rg"] > 0).all())
    (30, True)
    """
    return Polyelectrolyte(**options).run(sweeps).samples()
