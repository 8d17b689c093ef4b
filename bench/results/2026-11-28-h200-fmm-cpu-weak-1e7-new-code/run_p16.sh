#!/usr/bin/env bash
# Session 45 device call 1: the distributed CPU FMM (code of 30d1c1f) at 1e7 points per rank, P = 16 alone.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
t0=$(date +%s)
cmake -S . -B build/mpicpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKSUM_USE_CUDA=OFF -DKSUM_BUILD_PYTHON=OFF > $OUT/build.log 2>&1
cmake --build build/mpicpu -j 16 --target distributed_bench >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"; nproc; lscpu | grep -E "Model name|NUMA node" ; free -g | head -2
( while sleep 30; do echo "$(( $(date +%s) - t0 )) s: $(free -g | awk '/Mem/{print $3}') GiB used, load $(cut -d' ' -f1 /proc/loadavg)"; done ) > $OUT/monitor_p16.log &
mon=$!
s=$(date +%s)
timeout $(( 585 - (s - t0) )) mpirun -n 16 --oversubscribe --bind-to none \
  build/mpicpu/bench/distributed_bench --n 0 --n-per-rank 0 --fmm-n-per-rank 10000000 \
  --fmm-warmup 0 --reps 1 --json $OUT/weak_p16.jsonl > $OUT/weak_p16.md 2>&1
echo "P=16 rc=$? wall $(( $(date +%s) - s )) s" | tee -a $OUT/weak_p16.md
kill $mon
cat $OUT/weak_p16.md; tail -3 $OUT/monitor_p16.log
echo "total $(( $(date +%s) - t0 )) s"
