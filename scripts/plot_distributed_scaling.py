#!/usr/bin/env python3
"""The distributed runs' scaling plots for docs/distributed.md (issue 25), from the benchmark
records under bench/results/ (distributed_bench's JSON lines, or its markdown rows where a run's
JSON did not come back from the device).

  python3 scripts/plot_distributed_scaling.py [--results bench/results] [--out docs/img]

Writes distributed_efficiency.png (parallel efficiency against ranks for every measured series)
and distributed_fmm_weak_1e7.png (the FMM at 10^7 points per rank: execute time per rank count,
the old and the new local trees). Needs matplotlib (pip install matplotlib).

Efficiency, as in the docs' tables: strong scaling t1 / (P tP); weak scaling of an O(N) method
(the FMM, GMRES with FMM products) t1 / tP; weak scaling of a direct sum, whose pairs grow as P^2,
pairs per second per rank against one rank's, P t1 / tP.
"""
import argparse
import json
import pathlib
import re
import sys

try:
    import matplotlib
except ImportError:
    sys.exit("plot_distributed_scaling.py needs matplotlib: pip install matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def records(path):
    """Every record of a distributed_bench JSON-lines file (a line holds a list or one object)."""
    out = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line:
            d = json.loads(line)
            out.extend(d if isinstance(d, list) else [d])
    return out


def md_fmm_rows(folder):
    """(ranks, execute seconds) of the '| fmm uniform weak |' rows of a folder's markdown files."""
    rows = {}
    for f in sorted(folder.glob("*.md")):
        for line in f.read_text().splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) > 5 and re.fullmatch(r"fmm \w+ weak", cells[0]):
                rows[int(cells[1])] = float(cells[5])
    return sorted(rows.items())


def pick(recs, **want):
    """{ranks: seconds or seconds_per_matvec} of the records that match every key of want."""
    key = want.pop("_value", "seconds")
    out = {}
    for r in recs:
        if all(r.get(k) == v for k, v in want.items()):
            out[int(r["ranks"])] = float(r[key])
    return sorted(out.items())


def efficiency(series, how):
    """[(P, efficiency)] of [(P, seconds)] with P = 1 in it."""
    t = dict(series)
    if 1 not in t:
        raise SystemExit(f"a series without its one-rank run: {series}")
    f = {"strong": lambda p, s: t[1] / (p * s),
         "weak": lambda p, s: t[1] / s,
         "weak-direct": lambda p, s: p * t[1] / s}[how]
    return [(p, f(p, s)) for p, s in series]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default="bench/results", type=pathlib.Path)
    ap.add_argument("--out", default="docs/img", type=pathlib.Path)
    a = ap.parse_args()
    R = a.results
    need = ["2026-11-26-h200x2-distributed", "2026-11-26-h200x2-distributed-fmm-gpu",
            "2026-11-27-h200-fmm-cpu-1e7", "2026-11-28-h200-fmm-cpu-weak-1e7-side-by-side",
            "2026-11-28-h200-fmm-cpu-weak-1e7-new-code",
            "2026-11-28-h200x2-device-check-and-gpu-direct-weak"]
    for n in need:
        if not (R / n).is_dir():
            raise SystemExit(f"{R / n}: not found (run from the repository root or pass --results)")
    d0 = records(R / need[0] / "distributed_bench.jsonl")
    fmm0 = records(R / need[0] / "fmm_bench.jsonl")
    rbf0 = records(R / need[0] / "rbf_bench.jsonl")
    rbff = records(R / need[1] / "rbf_fmm-c55e5b7.jsonl")
    f7 = records(R / need[2] / "fmm_cpu_1e7.jsonl") + records(R / need[2] / "fmm_cpu_1e7_b.jsonl")
    gw = records(R / need[5] / "gpu_weak.jsonl")

    panels = [
        ("Direct sum (Laplace f64)", [
            ("CPU strong, N = 2·10⁵", efficiency(pick(d0, kind="strong", backend="cpu"), "strong")),
            ("CPU weak, 5·10⁴ per rank", efficiency(pick(d0, kind="weak", backend="cpu"), "weak-direct")),
            ("GPU weak, 10⁶ per rank", efficiency(pick(gw, n_per_rank=1000000), "weak-direct")),
            ("GPU weak, 10⁷ per rank", efficiency(pick(gw, n_per_rank=10000000), "weak-direct")),
        ]),
        ("3D FMM on the CPU (Laplace, 1e-6, 1 core per rank)", [
            ("strong, N = 10⁶", efficiency(pick(fmm0, kind="fmm-strong", backend="cpu"), "strong")),
            ("strong, N = 10⁷", efficiency(pick(f7, kind="fmm-strong"), "strong")),
            ("weak, 10⁵ per rank", efficiency(pick(fmm0, kind="fmm-weak", backend="cpu"), "weak")),
            ("weak, 10⁷ per rank (old trees)", efficiency(md_fmm_rows(R / need[3]), "weak")),
            ("weak, 10⁷ per rank (new trees)", efficiency(md_fmm_rows(R / need[4]), "weak")),
        ]),
        ("GMRES to 1e-8, per product", [
            ("CPU direct products, strong N = 4·10⁴",
             efficiency(pick(rbf0, kind="rbf-strong", backend="cpu", _value="seconds_per_matvec"),
                        "strong")),
            ("CPU direct products, weak 5,000 per rank",
             efficiency(pick(rbf0, kind="rbf-weak", backend="cpu", _value="seconds_per_matvec"),
                        "weak-direct")),
            ("CPU FMM products, weak 2·10⁴ per rank",
             efficiency(pick(rbff, kind="rbf-weak", backend="cpu", _value="seconds_per_matvec"),
                        "weak")),
            ("GPU FMM products, weak 10⁶ per rank",
             efficiency(pick(rbff, kind="rbf-weak", backend="gpu", _value="seconds_per_matvec"),
                        "weak")),
        ]),
    ]
    a.out.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8), sharey=True)
    for ax, (title, series) in zip(axes, panels):
        for label, pts in series:
            ax.plot([p for p, _ in pts], [e for _, e in pts], "o-", label=label)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 2, 4, 8, 16])
        ax.set_xticklabels(["1", "2", "4", "8", "16"])
        ax.set_xlabel("MPI ranks")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8, loc="lower left")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("parallel efficiency")
    axes[0].set_ylim(0, 1.45)
    fig.suptitle("ksum over MPI ranks: 16-core H200 host (CPU), 2 × H200 (GPU)", fontsize=11)
    fig.tight_layout()
    p1 = a.out / "distributed_efficiency.png"
    fig.savefig(p1, dpi=110)

    old, new = md_fmm_rows(R / need[3]), md_fmm_rows(R / need[4])
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    ax.plot([p for p, _ in old], [s for _, s in old], "s--", label="old local trees (session 44)")
    ax.plot([p for p, _ in new], [s for _, s in new], "o-", label="wider root, whole tolerance (session 45)")
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 2, 4, 8, 16])
    ax.set_xticklabels(["1", "2", "4", "8", "16"])
    ax.set_ylim(0, None)
    ax.set_xlabel("MPI ranks (10⁷ points each)")
    ax.set_ylabel("execute [s], slowest rank")
    ax.set_title("Distributed 3D FMM, weak scaling at 10⁷ points per rank\n"
                 "Laplace 1e-6, one core per rank (P = 16: 1.6·10⁸ points)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9, loc="lower right")
    fig.tight_layout()
    p2 = a.out / "distributed_fmm_weak_1e7.png"
    fig.savefig(p2, dpi=110)
    print(f"wrote {p1} and {p2}")


if __name__ == "__main__":
    main()
