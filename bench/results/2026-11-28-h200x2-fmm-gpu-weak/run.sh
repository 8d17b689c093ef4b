#!/usr/bin/env bash
# Session 45 device call: the distributed FMM's weak scaling on the GPUs (one GPU per rank),
# 1e6 and 1e7 points per rank, P = 1, 2, Laplace 1e-6 (issue 25).
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PATH=/usr/local/cuda/bin:$PATH
t0=$(date +%s)
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DKSUM_USE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 > $OUT/build.log 2>&1
cmake --build build/device -j $(nproc) --target distributed_bench >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"; nvidia-smi -L
for nr in 1000000 10000000; do
  for P in 1 2; do
    s=$(date +%s)
    OMP_NUM_THREADS=16 timeout 100 mpirun -n $P --oversubscribe --bind-to none \
      build/device/bench/distributed_bench --backend gpu --gpus-per-rank 1 --n 0 --n-per-rank 0 \
      --fmm-n-per-rank $nr --reps 3 --json $OUT/fmm_gpu_weak.jsonl >> $OUT/fmm_gpu_weak.md 2>&1
    echo "nr=$nr P=$P rc=$? wall $(( $(date +%s) - s )) s" | tee -a $OUT/fmm_gpu_weak.md
  done
done
grep "fmm" $OUT/fmm_gpu_weak.md
echo "total $(( $(date +%s) - t0 )) s"
