N=$1; out=$2
for k in harmonic log; do for d in uniform line cluster; do for th in 0.3 0.4 0.5 0.6 0.7; do
 for p in $(python3 -c "import math;th=$th;print(' '.join(str(p) for p in sorted(set(max(2,round(math.log(10**-e)/math.log(th))) for e in range(1,15)))))"); do
  r=$(/work/main/build/py/bench/fmm2d_bench time --n $N --dist $d --kernel $k --theta $th --order $p --tol 1e-13 --check 2000 --reps 0 2>&1 | grep "error" | tail -1)
  e=$(echo "$r" | grep -o "error [0-9.e+-]*" | awk '{print $2}'); echo "$k $d $th $p $e"
 done; done; done; done > $out
