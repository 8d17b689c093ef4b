#!/usr/bin/env bash
# Session 45 device call: the distributed direct sum's weak scaling on the GPUs, 1e6 and 1e7 points
# per rank, P = 1 (one GPU) and P = 2 (one GPU each), Laplace f64, one execute each (issue 25).
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PATH=/usr/local/cuda/bin:$PATH
t0=$(date +%s)
b=${KSUM_PREBUILT:-build/device}
nvidia-smi -L; nproc
for nr in 1000000 10000000; do
  for P in 1 2; do
    s=$(date +%s)
    OMP_NUM_THREADS=8 timeout $(( nr > 1000000 ? 250 : 60 )) mpirun -n $P --oversubscribe --bind-to none \
      $b/bench/distributed_bench --backend gpu --gpus-per-rank 1 --n 0 --n-per-rank $nr --reps 1 --warmup $(( nr > 1000000 ? 0 : 1 )) \
      --json $OUT/gpu_weak.jsonl >> $OUT/gpu_weak.md 2>&1
    echo "nr=$nr P=$P rc=$? wall $(( $(date +%s) - s )) s" | tee -a $OUT/gpu_weak.md
  done
done
cat $OUT/gpu_weak.md
echo "total $(( $(date +%s) - t0 )) s"
