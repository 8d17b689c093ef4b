#!/usr/bin/env bash
# Times bench/cuda_exit_probe.cpp's modes from outside (best and median of 7 processes each) and
# prints the in-process parts of the last run. Usage: bench/cuda_exit_probe.sh [cuda-root]
set -euo pipefail
cuda=${1:-/usr/local/cuda}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
g++ -O2 -std=c++17 "$here/cuda_exit_probe.cpp" -I"$cuda/include" -L"$cuda/lib64" \
  -Wl,-rpath,"$cuda/lib64" -lcudart -o "$tmp/probe"
echo "| mode | best wall [ms] | median wall [ms] | inside the process (last run) [s] |"
echo "|---|---|---|---|"
for mode in none init ctx ctx-reset ctx-exit; do
  python3 - "$tmp/probe" "$mode" <<'PY'
import statistics, subprocess, sys, time
walls, inside = [], ""
for _ in range(7):
    t0 = time.perf_counter()
    r = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    walls.append(time.perf_counter() - t0)
    inside = r.stderr.strip()
print(f"| {sys.argv[2]} | {min(walls) * 1e3:.1f} | {statistics.median(walls) * 1e3:.1f} | {inside} |")
PY
done
