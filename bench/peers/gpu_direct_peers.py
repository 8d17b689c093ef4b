#!/usr/bin/env python3
"""GPU direct-sum peers on the same problem as `direct_bench --gpu`: N = M points uniform in the unit
cube (3D), laplace / gaussian (eps = 2) / multiquadric (eps = 2), float32 and float64.

Peers: KeOps (pykeops LazyTensor reductions, brute force on the GPU) and PyTorch (dense blocks of
the kernel matrix times the weights, the code a user writes with a GPU framework). Rates are pair
interactions per second (median of 3 after a warm-up, CUDA-synchronised); with --ksum-json the ratio
ksum / peer is printed against ksum's rates measured in the same device check.
"""
import argparse
import json
import statistics
import time

import torch


def timed(fn, reps=3):
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def torch_sum(kernel, x, w, eps, block=8192):
    out = torch.empty_like(w)
    for i0 in range(0, x.shape[0], block):
        d2 = torch.cdist(x[i0:i0 + block], x).square_()
        if kernel == "laplace":
            k = d2.rsqrt_().nan_to_num_(posinf=0.0)
        elif kernel == "gaussian":
            k = d2.mul_(-eps * eps).exp_()
        else:
            k = d2.mul_(eps * eps).add_(1.0).sqrt_()
        out[i0:i0 + block] = k @ w
    return out


def keops_sum(kernel, x, w, eps):
    from pykeops.torch import LazyTensor
    xi, xj = LazyTensor(x[:, None, :]), LazyTensor(x[None, :, :])
    d2 = ((xi - xj) ** 2).sum(-1)
    if kernel == "laplace":
        k = d2.rsqrt()  # KeOps defines rsqrt(0) = 0: the self term drops out
    elif kernel == "gaussian":
        k = (-(eps * eps) * d2).exp()
    else:
        k = (1 + (eps * eps) * d2).sqrt()
    return k @ w


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1 << 20)
    ap.add_argument("--torch-n", type=int, default=1 << 18, help="smaller N for the slow dense peer")
    ap.add_argument("--ksum-json", help="bench_gpu.json of direct_bench from the same run")
    ap.add_argument("--peers", nargs="+", default=["keops", "torch"], choices=["keops", "torch"])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    ksum = {}
    if a.ksum_json:
        for r in json.load(open(a.ksum_json)).get("gpu", []):
            ksum[(r["kernel"], r["precision"])] = r["pairs_per_second"]
    have_keops = "keops" in a.peers
    if have_keops:
        try:
            import pykeops  # noqa: F401
        except Exception as e:  # a missing or broken install is reported, not fatal
            print(f"KeOps unavailable: {e}")
            have_keops = False
    rows = []
    for kernel in ["laplace", "gaussian", "multiquadric"]:
        eps = 1.0 if kernel == "laplace" else 2.0
        for prec, dtype in [(32, torch.float32), (64, torch.float64)]:
            g = torch.Generator(device="cuda").manual_seed(1)
            for peer, n in [("keops", a.n), ("torch", a.torch_n)]:
                if peer not in a.peers or (peer == "keops" and not have_keops):
                    continue
                x = torch.rand(n, 3, device="cuda", dtype=dtype, generator=g)
                w = torch.rand(n, 1, device="cuda", dtype=dtype, generator=g) * 2 - 1
                fn = (lambda: keops_sum(kernel, x, w, eps)) if peer == "keops" else \
                     (lambda: torch_sum(kernel, x, w, eps))
                try:
                    t = timed(fn)
                except Exception as e:
                    print(f"{peer} {kernel} f{prec} failed: {e}")
                    continue
                rate = n * n / t
                ours = ksum.get((kernel, prec))
                rows.append((kernel, prec, peer, n, t, rate, ours / rate if ours else None))
                print(rows[-1], flush=True)
    with open(a.out, "w") as f:
        f.write(f"GPU peers ({', '.join(a.peers)}), {torch.cuda.get_device_name(0)} (uniform cube, 3D; ksum rates from "
                "direct_bench at N = 2^20 in the same run)\n\n"
                "| kernel | precision | peer | N | time [s] | peer pairs/s | ksum / peer |\n"
                "|---|---|---|---|---|---|---|\n")
        for k, p, peer, n, t, r, ratio in rows:
            f.write(f"| {k} | f{p} | {peer} | {n} | {t:.4f} | {r:.3e} | "
                    f"{'' if ratio is None else f'{ratio:.2f}'} |\n")
    print(open(a.out).read())


if __name__ == "__main__":
    main()
