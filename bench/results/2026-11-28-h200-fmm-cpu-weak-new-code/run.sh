#!/usr/bin/env bash
# Session 44, last device call: the distributed FMM's GPU case (local FMM at the whole tolerance)
# under mpirun, then weak scaling P = 1, 2 at 5e6 points per rank side by side (CPU, new code).
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PATH=/usr/local/cuda/bin:$PATH
t0=$(date +%s)
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DKSUM_USE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 > $OUT/build.log 2>&1
cmake --build build/device -j 16 --target ksum_distributed_sum_mpi_test distributed_bench >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
for P in 2 1; do
  OMP_NUM_THREADS=4 timeout 120 mpirun -n $P --oversubscribe --bind-to none build/device/tests/ksum_distributed_sum_mpi_test > $OUT/mpi_test_p$P.log 2>&1
  echo "distributed_sum_mpi_test P=$P rc=$? ($(grep -c . $OUT/mpi_test_p$P.log) lines)"; grep -iE "gpu|fail" $OUT/mpi_test_p$P.log | head -5
done
echo "tests done $(( $(date +%s) - t0 )) s"
export OMP_NUM_THREADS=1
run() {
  local P=$1 cores=$2 nr=$3
  ( s=$(date +%s); taskset -c $cores timeout 100 mpirun -n $P --oversubscribe --bind-to none \
      build/device/bench/distributed_bench --n 0 --n-per-rank 0 --fmm-n-per-rank $nr \
      --fmm-warmup 0 --reps 1 --json $OUT/weak_${nr}_p$P.jsonl > $OUT/weak_${nr}_p$P.md 2>&1; \
    echo "P=$P rc=$? wall $(( $(date +%s) - s )) s" >> $OUT/weak_${nr}_p$P.md ) &
}
for nr in 1000000 2000000; do
  run 1 0 $nr; run 2 1-2 $nr; run 4 3-6 $nr
  wait
  for P in 1 2 4; do tail -2 $OUT/weak_${nr}_p$P.md; done
done
echo "total $(( $(date +%s) - t0 )) s"
