"""The task-size model of seed 004 Paper II (``ksum tune`` from Python, docs/tasksize.md).

The runtime of a task-parallel program at block size S is predicted as

    R(S) = (O · M(S) + C(S) · Σ_k W_k(S) · M_k(S)) / P(T, M)

with O the task overhead, C(S) the cost of one work unit, M_k tasks of kind k with W_k units each,
and P the parallelism on T threads (``'basic'``: min(T, Σ concurrency); ``'by_kind'``: §4.3).
:func:`predict` evaluates it over candidate sizes for a program described by a callable;
:func:`measure` calibrates O, O(w) and the loop-chunk overhead on this machine; :func:`cached`
reads what ``ksum tune`` stored; :func:`dynamic_chunk` and :func:`subtree_level` are the choices
ksum's own loops make.

>>> import ksum.tasksize as ts
>>> # 1000 items of 1 µs on 4 threads, 0.1 µs per chunk (hand-computed: S = 8)
>>> ts.dynamic_chunk(1000, 1e-6, threads=4, loop_overhead=1e-7)
8
"""
from __future__ import annotations

from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from . import _ksum

__all__ = ["predict", "dynamic_chunk", "subtree_level", "measure", "cached", "cache_path"]

Kind = Tuple[float, float, float]


def predict(describe: Callable[[float], Iterable[Kind]], sizes: Sequence[float], *,
            overhead: float, threads: int, cost, parallelism: str = "by_kind", tail: float = 0.0,
            overhead_by_work: Optional[Sequence[Tuple[float, float]]] = None) -> Dict[str, object]:
    """The predicted runtime R(S) at each size and the best size.

    ``describe(S)`` returns the program at size S as tasks kinds ``(count, work, concurrency)``:
    how many tasks, the work units of each, how many of them can run at once. ``cost`` is C in
    seconds per unit, a number or points ``[(S, C), ...]`` interpolated in log–log. ``tail`` adds
    ``tail · C · (the largest task's work)`` on more than one thread (ksum's methods use 0.5);
    ``overhead_by_work`` gives O as a function of a task's seconds of work (points ``[(w, O)]``).
    Returns ``{'sizes', 'runtime', 'best_size', 'best_runtime'}``.

    >>> import ksum.tasksize as ts
    >>> # all-pairs blocks: n/S diagonal tasks, the rest pairwise; S = 64 or 256 for n = 1024.
    >>> # S = 64: 136 tasks on P = 4, R = 296 µs; S = 256: 10 tasks, but only 2 pairs at once
    >>> # (P = 2.5), R = 423 µs.
    >>> def nbody(S, n=1024):
    ...     b = n // S
    ...     return [(b, S * (S - 1) / 2, b), (b * (b - 1) / 2, S * S, b / 2)]
    >>> r = ts.predict(nbody, [64, 256], overhead=1e-6, threads=4, cost=2e-9)
    >>> r['best_size'], round(r['runtime'][0] * 1e6), round(r['runtime'][1] * 1e6)
    (64, 296, 423)
    """
    sizes = [float(s) for s in sizes]
    if not sizes:
        raise ValueError("predict: no candidate size")
    if isinstance(cost, (int, float)):
        points = [(1.0, float(cost))]
    else:
        points = [(float(s), float(c)) for s, c in cost]
    programs: List[List[Kind]] = []
    for s in sizes:
        kinds = [(float(c), float(w), float(p)) for c, w, p in describe(s)]
        programs.append(kinds)
    by_work = [(float(w), float(o)) for w, o in (overhead_by_work or [])]
    runtime = _ksum.tasksize_predict(float(overhead), int(threads), points, programs, sizes,
                                     parallelism, float(tail), by_work)
    best = min(range(len(sizes)), key=lambda i: (runtime[i], sizes[i]))
    as_int = [int(s) if float(s).is_integer() else s for s in sizes]
    return {"sizes": as_int, "runtime": list(runtime), "best_size": as_int[best],
            "best_runtime": runtime[best]}


def dynamic_chunk(items: int, seconds_per_item: float, *, threads: int,
                  loop_overhead: float) -> int:
    """The chunk S of a ``schedule(dynamic, S)`` loop of ``items`` items that the model chooses
    (ksum's PUM, FMM and FGT loops): every chunk concurrent, tail 0.5, candidates the powers of two
    and the balanced splits ⌈items / (kT)⌉.

    >>> import ksum.tasksize as ts
    >>> ts.dynamic_chunk(1000, 1e-9, threads=4, loop_overhead=1e-3)  # overhead rules: 1 per thread
    250
    """
    return int(_ksum.tasksize_dynamic_chunk(int(items), float(seconds_per_item), int(threads),
                                            float(loop_overhead)))


def subtree_level(levels: int, branching: int, seconds_per_box: float, *, threads: int,
                  loop_overhead: float) -> int:
    """The task level of a pass over a complete tree (the 2D FMM's downward pass): the boxes above
    it run serially, then one task per box of the level does its subtree.

    >>> import ksum.tasksize as ts
    >>> ts.subtree_level(4, 4, 1e-6, threads=4, loop_overhead=1e-7)  # hand-computed: level 2
    2
    """
    return int(_ksum.tasksize_subtree_level(int(levels), int(branching), float(seconds_per_box),
                                            int(threads), float(loop_overhead)))


def measure(threads: int = 0) -> Dict[str, object]:
    """Calibrates on this machine (about 1–3 s): the OpenMP task overhead O, O(w) (points (w, O)
    at w seconds of work per task), the loop-chunk overhead, and what fell back to a default.
    Nothing is written; ``ksum tune`` writes the cache."""
    return _ksum.tasksize_measure(int(threads))


def cached(threads: int = 0) -> Optional[Dict[str, object]]:
    """The calibration ``ksum tune`` stored for this machine and thread count, or None."""
    return _ksum.tasksize_cached(int(threads))


def cache_path() -> str:
    """The cache file ksum reads (KSUM_CACHE_DIR, XDG_CACHE_HOME or ~/.cache/ksum)."""
    return _ksum.tasksize_cache_path()
