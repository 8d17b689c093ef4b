set -x
b=build/exp; t0=$(date +%s)
cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release -DKSUM_USE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DKSUM_BUILD_PYTHON=OFF > $OUT/cfg.log 2>&1
cmake --build $b -j16 --target fmm3d_bench ksum_fmm3d_gpu_test > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build $(( $(date +%s)-t0 )) s
for rep in 1 2; do for v in 0 1; do for c in "laplace uniform 1e-3" "laplace uniform 1e-4" "laplace plummer 1e-3" "multiquadric uniform 1e-3" "gaussian uniform 1e-3"; do set -- $c
KSUM_FMM_GPU_MIXED_BRANCHLESS=$v $b/bench/fmm3d_bench time --kernel $1 --dist $2 --n 1000000 --tol $3 --backend gpu --reps 7 --warmup 3 --eps 3 2>&1 | tail -1 | sed "s/^/| bl=$v /"
done; done; done > $OUT/ab.md
$b/bench/fmm3d_bench time --kernel laplace --n 1000000 --tol 1e-6 --backend gpu --reps 7 --warmup 3 | tail -1 >> $OUT/ab.md
cat $OUT/ab.md
timeout 300 $b/tests/ksum_fmm3d_gpu_test > $OUT/gputest.log 2>&1; echo test rc=$?; tail -5 $OUT/gputest.log
grep -i "mixed\|fail" $OUT/gputest.log | head -20
