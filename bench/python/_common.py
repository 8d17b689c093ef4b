"""Helpers shared by the Python benchmarks: timing, tables, JSON, what this machine has."""
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import time


def median_time(fn, reps, warmup=1, sync=None):
    """Median wall time of fn() over reps calls after warmup calls; sync() (e.g. a CUDA
    synchronise) runs inside the timed region after each call."""
    for _ in range(warmup):
        fn()
        if sync:
            sync()
    ts = []
    for _ in range(max(1, reps)):
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), ts


def have_module(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def gpu_name():
    """The first GPU's name from nvidia-smi, or None."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        name = out.stdout.strip().splitlines()
        return name[0] if out.returncode == 0 and name else None
    except (OSError, subprocess.SubprocessError):
        return None


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine():
    return {"cpu": cpu_name(), "cores": len(os.sched_getaffinity(0)), "gpu": gpu_name(),
            "python": platform.python_version(), "date_utc": time.strftime("%Y-%m-%d %H:%M:%S",
                                                                            time.gmtime())}


def ksum_gpu_available(ksum):
    try:
        info = ksum.info()
        return bool(info["cuda_built"] and info["gpus"])
    except Exception:
        return False


def table(header, rows):
    """A Markdown table; None cells print empty."""
    def cell(v):
        return "" if v is None else str(v)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def fmt_s(t):
    """Seconds with 4 significant digits, or empty."""
    return "" if t is None else f"{t:.4g}"


def write_json(path, obj):
    if path:
        with open(path, "w") as f:
            json.dump(obj, f, indent=1, default=float)
