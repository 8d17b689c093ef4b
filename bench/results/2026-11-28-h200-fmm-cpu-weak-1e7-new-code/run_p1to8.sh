#!/usr/bin/env bash
# Session 45 device call 2: the same at P = 1, 2, 4, 8 side by side (15 of 16 cores busy), as session 44's old-code table.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
t0=$(date +%s)
cmake --build build/mpicpu -j 16 --target distributed_bench > $OUT/build2.log 2>&1 || { tail -30 $OUT/build2.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
run() { # P cores
  local P=$1 cores=$2
  ( s=$(date +%s); taskset -c $cores timeout 560 mpirun -n $P --oversubscribe --bind-to none \
      build/mpicpu/bench/distributed_bench --n 0 --n-per-rank 0 --fmm-n-per-rank 10000000 \
      --fmm-warmup 0 --reps 1 --json $OUT/weak_p$P.jsonl > $OUT/weak_p$P.md 2>&1; \
    echo "P=$P rc=$? wall $(( $(date +%s) - s )) s" >> $OUT/weak_p$P.md ) &
}
run 1 0
run 2 1-2
run 4 3-6
run 8 7-14
( while sleep 30; do echo "$(( $(date +%s) - t0 )) s: $(free -g | awk '/Mem/{print $3}') GiB used, load $(cut -d' ' -f1 /proc/loadavg)"; done ) > $OUT/monitor.log &
mon=$!
wait %1 %2 %3 %4 2>/dev/null
kill $mon
for P in 1 2 4 8; do echo "== P=$P"; cat $OUT/weak_p$P.md; done
echo "total $(( $(date +%s) - t0 )) s"
