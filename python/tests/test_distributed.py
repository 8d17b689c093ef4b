"""ksum.DistributedSum (docs/distributed.md) against ksum.DirectSum over all the points: in this
process (one rank), and under ``mpirun -n 3`` in subprocesses (uneven slices, one rank without
sources, the same results to 1e-12, an error on one rank raised on all), with mpi4py's
communicator too where mpi4py is installed; ksum.PUMInterpolator with its fits shared over
the processes and with its data partitioned over them (the one-process interpolant's bits);
ksum.RBFInterpolator fitted over the processes (comm=, each its own rows) against one process's
fit; DistributedSum(method='fmm') against the direct sum. Every mpirun runs under a timeout: a
hang fails."""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ksum


def _data(n=900, m=400, r=2, seed=3):
    rng = np.random.default_rng(seed)
    return rng.random((n, 3)), rng.random((m, 3)) * 2 - 0.5, rng.random((n, r)) - 0.5


@pytest.mark.parametrize("comm", [None, "self"])
def test_one_process_equals_the_direct_sum(comm):
    x, y, w = _data()
    plan = ksum.DistributedSum("laplace", comm=comm, backend="cpu")
    assert (plan.rank, plan.size) == (0, 1)
    got = plan.set_points(x)(w)
    want = ksum.DirectSum("laplace", backend="cpu").set_points(x)(w)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())
    # Separate targets, the gradient, one right-hand side as a vector, float32.
    g = ksum.DistributedSum("gaussian", 3.0, comm=comm, backend="cpu", gradient=True,
                            precision="float32")
    u, grad = g.set_points(x.astype(np.float32), y.astype(np.float32))(w[:, 0].astype(np.float32))
    ref_u, ref_g = ksum.DirectSum("gaussian", 3.0, backend="cpu").set_points(x, y)(
        w[:, 0], gradient=True)
    assert u.shape == (len(y),) and grad.shape == (len(y), 3)
    np.testing.assert_allclose(u, ref_u, rtol=0, atol=2e-5 * np.abs(ref_u).max())
    np.testing.assert_allclose(grad, ref_g, rtol=0, atol=2e-5 * np.abs(ref_g).max())
    assert g.stats["total_targets"] == len(y) and g.stats["ranks"] == 1


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ksum.InputError, match="comm"):
        ksum.DistributedSum("laplace", comm=42)
    with pytest.raises(ksum.InputError, match="precision"):
        ksum.DistributedSum("laplace", precision="float16")
    plan = ksum.DistributedSum("laplace", backend="cpu")
    with pytest.raises(ksum.InputError, match="set_points"):
        plan(np.ones(3))
    x = np.random.default_rng(1).random((10, 3))
    x[4, 2] = np.nan
    with pytest.raises(ksum.InputError, match="row 4, column 2"):
        plan.set_points(x)
    plan.set_points(np.zeros((10, 3)) + np.arange(10)[:, None])
    with pytest.raises(ksum.InputError, match="9 rows but its slice has 10"):
        plan(np.ones(9))


_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import ksum
    use_mpi4py = sys.argv[1] == "mpi4py"
    comm = None
    if use_mpi4py:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    plan = ksum.DistributedSum("gaussian", 3.0, comm=comm, backend="cpu", gradient=True)
    P, r = plan.size, plan.rank
    rng = np.random.default_rng(3)
    x, y, w = rng.random((900, 3)), rng.random((400, 3)) * 2 - 0.5, rng.random((900, 2)) - 0.5
    # Uneven slices: sources ~ 1 : 2 : 0 (the last rank none), targets ~ 3 : 1 : 2.
    sc = [0, 300, 900, 900][: P + 1] if P == 3 else np.linspace(0, 900, P + 1).astype(int)
    tc = [0, 200, 267, 400][: P + 1] if P == 3 else np.linspace(0, 400, P + 1).astype(int)
    u, g = plan.set_points(x[sc[r]:sc[r + 1]], y[tc[r]:tc[r + 1]])(w[sc[r]:sc[r + 1]])
    ref_u, ref_g = ksum.DirectSum("gaussian", 3.0, backend="cpu").set_points(x, y)(w, gradient=True)
    assert np.isfinite(u).all() and np.isfinite(g).all(), r
    err = max(np.abs(u - ref_u[tc[r]:tc[r + 1]]).max(initial=0) / np.abs(ref_u).max(),
              np.abs(g - ref_g[tc[r]:tc[r + 1]]).max(initial=0) / np.abs(ref_g).max())
    assert err <= 1e-12, (r, err)
    # Targets of a wrong shape on rank 1 only (checked in Python there): every rank gets the error.
    try:
        plan.set_points(x[:5], np.zeros((5, 2)) if r == 1 else y[:5])
        raise SystemExit(f"rank {r}: no error for rank 1's targets")
    except ksum.InputError as e:
        assert "rank 1:" in str(e) and "targets" in str(e), str(e)
    # The PUM with its fits shared over the processes: the one-process interpolant, the same bits.
    xp = rng.random((2000, 2))
    fp = np.sin(4 * xp[:, 0]) * xp[:, 1]
    yp = rng.random((300, 2)) * 0.9 + 0.05
    alone = ksum.PUMInterpolator(xp, fp, eps="loocv", backend="cpu")
    shared = ksum.PUMInterpolator(xp, fp, eps="loocv", backend="cpu",
                                  comm=comm if use_mpi4py else "world")
    assert np.array_equal(alone(yp), shared(yp)), r
    assert shared.stats["patches"] == alone.stats["patches"]
    # The PUM with the data partitioned over the processes (each its own uneven rows, the last
    # none): the same bits at each process's own points; a process holds a part of the data.
    pc = [0, 1500, 2000, 2000] if P == 3 else np.linspace(0, 2000, P + 1).astype(int)
    qc = [0, 50, 220, 300] if P == 3 else np.linspace(0, 300, P + 1).astype(int)
    parts = ksum.PUMInterpolator(xp[pc[r]:pc[r + 1]], fp[pc[r]:pc[r + 1]], eps="loocv",
                                 backend="cpu", comm=comm if use_mpi4py else "world",
                                 partition=True)
    assert np.array_equal(parts(yp[qc[r]:qc[r + 1]]), alone(yp)[qc[r]:qc[r + 1]]), r
    st = parts.stats
    assert st["patches"] == alone.stats["patches"], st
    assert st["owned_points"] + st["halo_points"] < (2000 if P > 1 else 2001), st
    try:  # points of a wrong shape on rank 0 only, at the (collective) evaluation
        parts(np.zeros((3, 3)) if r == 0 else yp[:3])
        raise SystemExit(f"rank {r}: no error for rank 0's points")
    except ksum.InputError as e:
        assert "rank 0:" in str(e), str(e)
    try:  # a ragged list on rank 1 (NumPy's ValueError there): raised on every process
        parts([[0.5, 0.5], [0.5]] if r == 1 else yp[:3])
        raise SystemExit(f"rank {r}: no error for rank 1's ragged points")
    except ksum.InputError as e:
        assert "rank 1:" in str(e), str(e)
    try:  # values of a wrong shape on rank 2 only: every process gets the error
        ksum.PUMInterpolator(xp, fp[:10] if r == 2 else fp, backend="cpu", comm="world")
        raise SystemExit(f"rank {r}: no error for rank 2's values")
    except ksum.InputError as e:
        assert "rank 2:" in str(e), str(e)
    # The global interpolant fitted over the processes (each its own rows, uneven, one without
    # any): GMRES with a linear polynomial, to 1e-10; the values at each process's own points
    # equal one process's fit to 1e-7 of the data (two solves of one system to 1e-10).
    xg = rng.random((1200, 2))
    fg = np.cos(3 * xg[:, 0]) * xg[:, 1]
    gc = [0, 700, 700, 1200] if P == 3 else np.linspace(0, 1200, P + 1).astype(int)
    kw = dict(kernel="thin_plate_spline", solver="krylov", tol=1e-10, backend="cpu")
    one = ksum.RBFInterpolator(xg, fg, **kw)
    dist = ksum.RBFInterpolator(xg[gc[r]:gc[r + 1]], fg[gc[r]:gc[r + 1]],
                                comm=comm if use_mpi4py else "world", **kw)
    q = rng.random((50 + 30 * r, 2)) * 0.9 + 0.05
    assert np.abs(dist(q) - one(q)).max() <= 1e-7 * np.abs(fg).max(), r
    assert dist.stats["solver"] == "krylov" and dist.stats["residual_rel"] <= 2e-10, dist.stats
    # τ's halo: other processes' rows this process's L-sets touch (none with one process).
    assert dist.stats["ranks"] == P and (dist.stats["lset_halo_rows"] > 0) == (P > 1), dist.stats
    assert dist.stats["lset_halo_rows"] < 1200, dist.stats
    # The L-set search received points from the others (these rows are in no spatial order, so
    # the processes gather them: at most all 1,200, on the process without rows).
    assert (dist.stats["lset_search_received"] > 0) == (P > 1), dist.stats
    assert dist.stats["lset_search_received"] <= 1200, dist.stats
    try:  # points of a wrong shape on rank 1 only, at the (collective) evaluation
        dist(np.zeros((4, 3)) if r == 1 else q)
        raise SystemExit(f"rank {r}: no error for rank 1's points")
    except ksum.InputError as e:
        assert "rank 1:" in str(e) and "second axis" in str(e), str(e)
    try:  # values of a wrong length on rank 0 only, at the fit
        ksum.RBFInterpolator(xg[gc[r]:gc[r + 1]], fg[:3] if r == 0 else fg[gc[r]:gc[r + 1]],
                             comm="world", **kw)
        raise SystemExit(f"rank {r}: no error for rank 0's values")
    except ksum.InputError as e:
        assert "rank 0:" in str(e), str(e)
    # The FMM over the processes (a self-sum to 1e-6) against the direct sum in one process.
    fmm = ksum.DistributedSum("laplace", comm=comm, backend="cpu", method="fmm", tol=1e-6)
    xs = x[sc[r]:sc[r + 1]]
    uf = fmm.set_points(xs)(w[sc[r]:sc[r + 1], 0])
    ref = ksum.DirectSum("laplace", backend="cpu").set_points(x)(w[:, 0])
    assert np.linalg.norm(uf - ref[sc[r]:sc[r + 1]]) <= 1e-6 * np.linalg.norm(ref), r
    # Repartitioned by the measured cost: the next sum meets the same bound.
    assert fmm.rebalance(0.0) >= 1 - 1e-12 and fmm.stats["fmm_imbalance"] >= 1 - 1e-12
    uf = fmm(w[sc[r]:sc[r + 1], 0])
    assert np.linalg.norm(uf - ref[sc[r]:sc[r + 1]]) <= 1e-6 * np.linalg.norm(ref), r
    # The FMM with separate targets (the last rank holds no sources, the targets spread wider).
    ut = fmm.set_points(xs, y[tc[r]:tc[r + 1]])(w[sc[r]:sc[r + 1], 0])
    reft = ksum.DirectSum("laplace", backend="cpu").set_points(x, y)(w[:, 0])
    assert ut.shape == (tc[r + 1] - tc[r],), ut.shape
    assert np.linalg.norm(ut - reft[tc[r]:tc[r + 1]]) <= 1e-6 * np.linalg.norm(reft), r
    if use_mpi4py:  # a sub-communicator: ranks 0 and 2 together, rank 1 alone
        sub = comm.Split(r % 2, r)
        part = ksum.DistributedSum("laplace", comm=sub, backend="cpu")
        assert (part.size, part.rank) == ((2, r // 2) if r % 2 == 0 else (1, 0)), (part.size, r)
        mine = x[r * 100:(r + 1) * 100]
        got = part.set_points(mine)(w[r * 100:(r + 1) * 100, 0])
        group = [0, 2] if r % 2 == 0 else [1]
        xs = np.vstack([x[k * 100:(k + 1) * 100] for k in group])
        ws = np.concatenate([w[k * 100:(k + 1) * 100, 0] for k in group])
        want = ksum.DirectSum("laplace", backend="cpu").set_points(xs)(ws)
        at = group.index(r) * 100
        assert np.abs(got - want[at:at + 100]).max() <= 1e-12 * np.abs(want).max(), r
        sub.Free()  # ksum keeps its own duplicate
        assert np.isfinite(part(w[r * 100:(r + 1) * 100, 0])).all()
    # NaN in the last rank's sources: every rank gets the error.
    bad = x[sc[r]:sc[r + 1]].copy()
    if r == P - 1:
        bad = np.vstack([bad, [[np.nan, 0.0, 0.0]]])
    try:
        plan.set_points(bad)
        raise SystemExit(f"rank {r}: no error")
    except ksum.InputError as e:
        assert f"sources of rank {P - 1}: non-finite value nan at row" in str(e), str(e)
    print(f"rank {r} of {P} ok ({'mpi4py' if use_mpi4py else 'world'}), error {err:.2g}", flush=True)
""")


def _have_mpi4py():
    try:
        import mpi4py  # noqa: F401
        return True
    except ImportError:
        return False


@pytest.mark.parametrize("how", ["world", "mpi4py"])
def test_under_mpirun_equals_the_direct_sum(tmp_path, how):
    mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
    if not ksum.mpi_built() or mpirun is None:
        pytest.skip("this ksum was built without MPI, or mpirun is not installed")
    if how == "mpi4py" and not _have_mpi4py():
        pytest.skip("mpi4py is not installed")
    script = tmp_path / "dist.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    run = subprocess.run([mpirun, "-n", "3", "--oversubscribe", sys.executable, str(script), how],
                         capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    for r in range(3):
        assert f"rank {r} of 3 ok" in run.stdout, run.stdout + run.stderr
