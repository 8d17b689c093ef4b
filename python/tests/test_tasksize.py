"""ksum.tasksize: the model's formulas on hand-computed cases, the choices ksum's loops make, the
calibration and the cache (docs/tasksize.md)."""
import doctest
import math

import pytest

import ksum
import ksum.tasksize as ts


def test_docstring_examples():
    res = doctest.testmod(ts, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0


def test_basic_and_by_kind_on_hand_computed_cases():
    # One kind, 10 tasks of 100 units, all concurrent, on 4 threads: R = (10 O + 1000 C) / 4.
    r = ts.predict(lambda s: [(10, 100, 10)], [1], overhead=1e-6, threads=4, cost=1e-9,
                   parallelism="basic")
    assert r["runtime"][0] == pytest.approx((1e-5 + 1e-6) / 4, rel=1e-14)
    # Two kinds by kind: P = (⌈10/4⌉·4 + ⌈2/2⌉·2) / (3 + 1) = 3.5.
    two = lambda s: [(10, 1000, 10), (2, 64000, 2)]
    work = 1e-9 * (10 * 1000 + 2 * 64000)
    r = ts.predict(two, [1], overhead=1e-6, threads=4, cost=1e-9)
    assert r["runtime"][0] == pytest.approx((12e-6 + work) / 3.5, rel=1e-14)
    # O(w): each kind pays O at its task's work (1 µs → 3 µs, 64 µs → 0.4 µs).
    r = ts.predict(two, [1], overhead=1e-6, threads=4, cost=1e-9,
                   overhead_by_work=[(1e-6, 3e-6), (64e-6, 4e-7)])
    assert r["runtime"][0] == pytest.approx((10 * 3e-6 + 2 * 4e-7 + work) / 3.5, rel=1e-14)
    # The tail on T > 1: + tail · C · (the largest task's work).
    r = ts.predict(two, [1], overhead=1e-6, threads=4, cost=1e-9, tail=0.5)
    assert r["runtime"][0] == pytest.approx((12e-6 + work) / 3.5 + 0.5 * 1e-9 * 64000,
                                            rel=1e-14)


def test_predict_picks_the_smallest_runtime_and_c_of_s_interpolates():
    # C(S) halves from S = 1 to S = 4 (log–log: C(2) = √(1e-3 · 5e-4)); 1000 items on 8 threads.
    def loop(s, n=1000):
        chunks = math.ceil(n / s)
        return [(chunks, s, chunks)]
    r = ts.predict(loop, [1, 2, 4, 8], overhead=1e-6, threads=8, cost=[(1, 1e-3), (4, 5e-4)],
                   tail=0.5)
    c2 = math.sqrt(1e-3 * 5e-4)
    assert r["runtime"][1] == pytest.approx((500 * 1e-6 + c2 * 1000) / 8 + 0.5 * c2 * 2, rel=1e-12)
    assert r["best_size"] == 4
    assert r["best_runtime"] == min(r["runtime"])


def test_the_choices_of_ksums_loops():
    assert ts.dynamic_chunk(1000, 1e-6, threads=4, loop_overhead=1e-7) == 8
    assert ts.dynamic_chunk(1000, 1e-9, threads=4, loop_overhead=1e-3) == 250
    # R(1) = 42.5 µs < R(2) = 67.5 µs when a task costs 10 µs (docs/tasksize.md).
    assert ts.subtree_level(4, 4, 1e-6, threads=4, loop_overhead=1e-5) == 1
    assert ts.subtree_level(4, 4, 1e-6, threads=4, loop_overhead=1e-7) == 2


def test_bad_input_gets_clear_errors():
    with pytest.raises(ksum.InputError, match="parallelism"):
        ts.predict(lambda s: [(1, 1, 1)], [1], overhead=1e-6, threads=2, cost=1e-9,
                   parallelism="fast")
    with pytest.raises(ksum.InputError, match="C"):
        ts.predict(lambda s: [(1, 1, 1)], [1], overhead=1e-6, threads=2, cost=[(1, -1.0)])
    with pytest.raises(ksum.InputError, match="overhead"):
        ts.predict(lambda s: [(1, 1, 1)], [1], overhead=0.0, threads=2, cost=1e-9)
    with pytest.raises(ksum.InputError):
        ts.predict(lambda s: [(-1, 1, 1)], [1], overhead=1e-6, threads=2, cost=1e-9)
    with pytest.raises(ValueError, match="no candidate"):
        ts.predict(lambda s: [(1, 1, 1)], [], overhead=1e-6, threads=2, cost=1e-9)
    with pytest.raises(ksum.InputError, match="levels"):
        ts.subtree_level(0, 4, 1e-6, threads=4, loop_overhead=1e-7)
    with pytest.raises(ksum.InputError):
        ts.dynamic_chunk(10, 0.0, threads=4, loop_overhead=1e-7)


def test_measure_gives_positive_finite_parameters():
    c = ts.measure(2)
    assert c["threads"] == 2
    assert 0 < c["overhead"] < 1e-2 and 0 < c["loop_overhead"] < 1e-2
    for w, o in c["overhead_by_work"]:
        assert w in (1e-6, 4e-6, 16e-6, 64e-6, 256e-6) and 0 < o < 1e-2
    assert len(c["overhead_by_work"]) + sum("O(w)" in f for f in c["fallback"]) == 5


def test_cached_reads_the_cache_or_gives_none(tmp_path, monkeypatch):
    monkeypatch.setenv("KSUM_CACHE_DIR", str(tmp_path))
    assert ts.cache_path() == str(tmp_path / "tasksize.json")
    assert ts.cached(2) is None
    (tmp_path / "tasksize.json").write_text("{ not json")
    assert ts.cached(2) is None  # a corrupt file is no calibration, never an exception
