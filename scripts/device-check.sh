#!/usr/bin/env bash
# The GPU check, for the lent GPU machine, in one call: configure with CUDA for sm_90, build, run the
# GPU tests (and the rest of the suite), the benchmarks and the demo; write summary.md and logs
# under $OUT (default: ./device-out).
#   KSUM_CHECK_QUICK=1 skips the slow end-to-end CLI benchmark at N = 1e6 on the CPU.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
jobs=$(nproc)
build=build/device
summary=$OUT/summary.md
t_start=$(date +%s)
step() { echo "== $(date +%T) $*" | tee -a "$OUT/steps.log"; }

{
  echo "# ksum device check"
  echo
  echo "- date: $(date -u +%F' '%T) UTC; commit: $(git rev-parse --short HEAD 2>/dev/null || echo n/a)$(git diff --quiet 2>/dev/null || echo ' (+ uncommitted changes)')"
  echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n1)"
  echo "- CPU: $(nproc) cores; nvcc $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
} > "$summary"

step "configure + build (CUDA, sm_90, $jobs jobs)"
if ! { cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKSUM_USE_CUDA=ON \
         -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build $build -j "$jobs"; } > "$OUT/build.log" 2>&1; then
  echo "- **build FAILED** (build.log)" >> "$summary"
  tail -n 40 "$OUT/build.log"
  exit 1
fi
echo "- build: $(( $(date +%s) - t_start )) s" >> "$summary"

step "GPU tests (ctest -L gpu)"
ctest --test-dir $build -L gpu -j 4 --output-on-failure > "$OUT/ctest_gpu.log" 2>&1
gpu_rc=$?
step "all other tests"
ctest --test-dir $build -LE gpu -j "$jobs" --output-on-failure > "$OUT/ctest_cpu.log" 2>&1
cpu_rc=$?
skipped=$(grep -c "Skipped" "$OUT/ctest_gpu.log")
{
  echo "- GPU tests: $(grep -E 'tests passed|tests failed' "$OUT/ctest_gpu.log") (skipped: $skipped)"
  echo "- other tests: $(grep -E 'tests passed|tests failed' "$OUT/ctest_cpu.log")"
} >> "$summary"
grep -E "\(Failed\)|\*\*\*Failed|Timeout" "$OUT/ctest_gpu.log" "$OUT/ctest_cpu.log" | head -n 20 >> "$summary"

step "demo"
$build/apps/ksum/ksum demo --n 200000 > "$OUT/demo.log" 2>&1
{ echo; echo '```'; cat "$OUT/demo.log"; echo '```'; } >> "$summary"

step "GPU benchmark + seed 000 table"
$build/bench/direct_bench --gpu --seed000 --json "$OUT/bench_gpu.json" > "$OUT/bench_gpu.md" 2>&1
step "CPU benchmark (1 thread: per core; all threads)"
$build/bench/direct_bench --cpu --threads 1 --cpu-n 16384 --reps 3 --json "$OUT/bench_cpu1.json" \
  > "$OUT/bench_cpu1.md" 2>&1
$build/bench/direct_bench --cpu --threads "$jobs" --cpu-n 65536 --reps 3 \
  --json "$OUT/bench_cpu_all.json" > "$OUT/bench_cpu_all.md" 2>&1
{ echo; cat "$OUT/bench_gpu.md"; echo; cat "$OUT/bench_cpu1.md"; echo; cat "$OUT/bench_cpu_all.md"; } >> "$summary"

step "end-to-end ksum sum (time, memory)"
sizes="100000 1000000"
PYTHONUNBUFFERED=1 python3 bench/cli_bench.py --ksum $build/apps/ksum/ksum --sizes $sizes \
  --backends cpu gpu ${KSUM_CHECK_QUICK:+--skip-cpu-above 100000} --out "$OUT/cli_bench.md" \
  > "$OUT/cli_bench.log" 2>&1
{ echo; cat "$OUT/cli_bench.md" 2>/dev/null || echo "cli benchmark failed (cli_bench.log)"; } >> "$summary"

echo "- total: $(( $(date +%s) - t_start )) s" >> "$summary"
cat "$summary"
[ $gpu_rc -eq 0 ] && [ $cpu_rc -eq 0 ]
