#!/usr/bin/env python3
"""KeOps peer of `fgt_bench e2e` and `fgt_bench crossover`: the Gauss transform
G(y_i) = sum_j q_j exp(-|y_i - x_j|^2 / h^2) with N sources and M = N targets, separate sets
uniform in the unit cube, weights uniform in [0, 1), float32 on the GPU, by a pykeops LazyTensor
sum reduction ((-D2 / h^2).exp() @ q: brute force, every pair, exact to float rounding).

The points are drawn here with the same distributions as fgt_bench (not the same numbers): the
times of a brute-force sum do not depend on where the points are. Times: one warm-up call (it
includes KeOps' compilation), then the median of --reps calls, CUDA-synchronised. Above
--max-targets targets KeOps is timed on the first --max-targets targets and scaled by M / K: a
brute-force sum is exactly linear in M (said in the table). error: max |G_keops - G| / sum|q| on a
few targets against a float64 PyTorch sum.

With --ksum-json (fgt_bench e2e or crossover JSON from the same device check) it prints the
ratios KeOps time / ksum time for the matching (d, N).
"""
import argparse
import json
import os
import sys

# KeOps 2.3's JIT compiler library crashes (SIGSEGV in its first nvrtc compile) in the PyTorch 2.11
# / CUDA 13 image unless the system libstdc++ is loaded first (seen on the H100 image): re-run
# with it preloaded.
_LIBSTDCXX = "/lib/x86_64-linux-gnu/libstdc++.so.6"
if os.path.exists(_LIBSTDCXX) and _LIBSTDCXX not in os.environ.get("LD_PRELOAD", ""):
    os.environ["LD_PRELOAD"] = ":".join(filter(None, [_LIBSTDCXX, os.environ.get("LD_PRELOAD")]))
    xopts = [f"-X{k}" if v is True else f"-X{k}={v}" for k, v in sys._xoptions.items()]
    os.execv(sys.executable, [sys.executable] + xopts + sys.argv)

import torch  # noqa: E402

from gpu_direct_peers import timed  # noqa: E402  (warm-up, then the synchronised median)


def keops_gauss(y, x, q, h):
    from pykeops.torch import LazyTensor
    yi, xj = LazyTensor(y[:, None, :]), LazyTensor(x[None, :, :])
    # 1/h^2 as a KeOps parameter (a tensor), so one compiled formula serves every bandwidth.
    g = LazyTensor(torch.tensor([1.0 / (h * h)], device=y.device, dtype=y.dtype))
    d2 = ((yi - xj) ** 2).sum(-1)
    return (-g * d2).exp() @ q


def reference(y, x, q, h, block=1 << 22):
    y, x, q = y.double(), x.double(), q.double()
    out = torch.zeros(y.shape[0], 1, device=y.device, dtype=torch.float64)
    for j0 in range(0, x.shape[0], block):
        d2 = torch.cdist(y, x[j0:j0 + block]).square_()
        out += d2.mul_(-1.0 / (h * h)).exp_() @ q[j0:j0 + block]
    return out


def run_case(d, n, h, reps, max_targets, seed=1):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.rand(n, d, device="cuda", dtype=torch.float32, generator=gen)
    y = torch.rand(n, d, device="cuda", dtype=torch.float32, generator=gen)
    q = torch.rand(n, 1, device="cuda", dtype=torch.float32, generator=gen)
    k = min(n, max_targets)
    yk = y[:k].contiguous()
    t = timed(lambda: keops_gauss(yk, x, q, h), reps)
    g = keops_gauss(yk[:16].contiguous(), x, q, h)
    ref = reference(yk[:16], x, q, h)
    err = ((g.double() - ref).abs().max() / q.double().abs().sum()).item()
    scaled = t * n / k
    del x, y, q, yk
    torch.cuda.empty_cache()
    return {"d": d, "n": n, "h": h, "targets_timed": k, "seconds": t, "seconds_scaled": scaled,
            "pairs_per_second": n * k / t, "error": err}


def load_ksum(paths):
    """(d, n) -> list of (label, seconds) from fgt_bench JSON files."""
    out = {}
    for p in paths or []:
        try:
            j = json.load(open(p))
        except (OSError, ValueError) as e:
            print(f"cannot read {p}: {e}")
            continue
        if j.get("mode") == "e2e":
            key = (j["d"], j["n"], j["h"])
            out.setdefault(key, []).append((f"ksum fgt ({j['backend']}, {j['precision']})",
                                            j["fgt_total"]))
            out[key].append((f"ksum direct ({j['backend']}, scaled)", j["direct_seconds_scaled"]))
        elif j.get("mode") == "crossover":
            for c in j["cells"]:
                best = min(t for t in [c["auto_seconds"], c.get("fgt_seconds"),
                                       c.get("ifgt_seconds")] if t is not None)
                key = (c["d"], c["n"], c["h"])
                out.setdefault(key, []).append(
                    (f"ksum best fast ({j['backend']}, {j['precision']}, auto: {c['auto_method']})",
                     best))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--d", type=int, default=3)
    ap.add_argument("--h", type=float, default=0.1)
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e5, 1e6, 1e7])
    ap.add_argument("--max-targets", type=float, default=1e6,
                    help="time on at most this many targets and scale linearly to M")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ksum-json", action="append",
                    help="fgt_bench e2e / crossover JSON (repeatable)")
    ap.add_argument("--crossover", action="store_true",
                    help="also run every (d, N, h) cell of the crossover JSON given by --ksum-json")
    ap.add_argument("--out", required=True, help="markdown output")
    ap.add_argument("--json", help="JSON output")
    a = ap.parse_args()
    import pykeops  # noqa: F401  (fails here, visibly, when KeOps is missing)

    cases = [(a.d, int(n), a.h) for n in a.sizes]
    ksum = load_ksum(a.ksum_json)
    if a.crossover:
        cases += sorted(k for k in ksum if k not in cases)
    rows = []
    for d, n, h in cases:
        try:
            r = run_case(d, n, h, a.reps, int(a.max_targets))
        except Exception as e:  # one failed size is reported, the others still run
            print(f"KeOps d={d} N={n} h={h} failed: {e}", flush=True)
            continue
        r["ksum"] = [{"label": lab, "seconds": s, "keops_over_ksum": r["seconds_scaled"] / s}
                     for lab, s in ksum.get((d, n, h), [])]
        rows.append(r)
        print(json.dumps(r), flush=True)
    name = torch.cuda.get_device_name(0)
    version = getattr(pykeops, "__version__", "?")
    with open(a.out, "w") as f:
        f.write(f"KeOps {version} Gauss transform (brute force, float32), {name}: N = M, "
                f"uniform unit cube, exp(-|y-x|^2/h^2); warm-up then median of {a.reps}. Times "
                f"marked * are measured on {int(a.max_targets)} targets and scaled linearly to M "
                "(a brute-force sum is exactly linear in M).\n\n"
                "| d | N = M | h | KeOps [s] | pairs/s | error / sum q | ksum | ksum [s] | "
                "KeOps / ksum |\n|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            star = "*" if r["targets_timed"] < r["n"] else ""
            base = (f"| {r['d']} | {r['n']:.0e} | {r['h']} | {r['seconds_scaled']:.4g}{star} | "
                    f"{r['pairs_per_second']:.3e} | {r['error']:.1e} |")
            if not r["ksum"]:
                f.write(base + " | | |\n")
            for k in r["ksum"]:
                f.write(base + f" {k['label']} | {k['seconds']:.4g} | "
                        f"{k['keops_over_ksum']:.3g} |\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"peer": "keops", "device": name, "rows": rows}, f, indent=1)
    print(open(a.out).read())


if __name__ == "__main__":
    main()
