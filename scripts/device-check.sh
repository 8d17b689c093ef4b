#!/usr/bin/env bash
# The GPU check, for the lent GPU machine: configure with CUDA for sm_90, build, then the sections
# named in KSUM_CHECK (comma-separated; default all):
#   tests  ctest -L gpu (the GPU tests; ~200 s on an H100) and `ksum demo`
#   cputests  the rest of the suite, ctest -LE gpu (CI runs it too; here the CLI tests' backend
#          auto picks the GPU); ~300 s, so a call of its own: with the 156-s build, both
#          sections overran a 600-s call at 30743d0
#   gpu    GPU direct-sum benchmark (N = 2^20), seed 000's brute-force table, KeOps / PyTorch peers
#   cpu    CPU benchmark: every kernel per core vs the plain loop; 3 kernels on all cores
#   cli    end-to-end `ksum sum` time and memory, N = 1e5 and 1e6, CPU and GPU
#   tolerance  time against tolerance 1e-2 … 1e-10 of the whole `ksum sum` run with the achieved
#          errors (issue 26): 3D FMM (CPU, GPU), 2D FMM (CPU, GPU near field), FGT (GPU), N = 1e6
#          (KSUM_TOL_N, KSUM_TOL_CASES, KSUM_TOL_TOLS; cases auto-gauss-gpu and auto-laplace-gpu
#          run --method auto); bench/tolerance_bench.py; ~3 min
#   pum    RBF-PUM linear-cost benchmark and the comparison with SciPy's RBFInterpolator (CPU)
#   global global RBF (seed 000): matvec table, FGP to 1e-6 at N = 1e4…1e6, GMRES at N = 1e5
#   deform RBF mesh deformation of the 1,006,660-node sphere-in-box mesh (seed 000 §2.3), GPU and
#          CPU: its nodes and boundary rows carried in .bench-data/deform-1m (deform_bench --export)
#   fmm    3D FMM (issue 5): GPU times at N = 1e6 / 1e7 (Laplace) and 1e6 (multiquadric), CPU at
#          1e6, FMM3D (fmm3dpy wheel carried in .bench-data/wheels) on the same points on all
#          cores, seed 000's multipole tables beside ours, FGP with FMM products at 1e5 and 1e6
#   fmmtree the FMM tree build (CPU and GPU radix sort) up to 1.6e7 points; seed 000's
#          multiquadric series (treecode) on CPU and GPU beside the seed's figures 3 and 4
#   fmmacc the FMM's accuracy matrix on the GPU and its crossover against the direct GPU sum
#   fmm2d  2D FMM (issue 6): seed 002's M2L tables on the GPU, N = 1e6 uniform and line-like at
#          tol 1e-6 hybrid (tuned) and CPU-only scaling 1…16 threads, FMM2D (fmm2dpy wheel in
#          .bench-data/wheels) on the same points and cores, the static θ/Nlevels sweep
#   sim    the three simulations of seed 004 Paper IV §5, CPU-only and hybrid (table 6.1)
#   fgt    fast Gauss transform: ctest -R "Fgt|Gauss|Kde" (GPU and CPU), seed 002 tables 4–5
#          (Hermite evaluation, GPU float and CPU 1/2/4 threads up to N = 409600), the end-to-end
#          FGT vs the direct GPU sum (d = 3, N = M = 1e7, h = 0.1, tol 1e-6, float), the GPU
#          crossover map at N = 1e5, and the KeOps peer (pykeops wheels carried in .whl/)
#   python the Python package (built into $build/python when nanobind is found; wheels the image
#          lacks travel in .whl/py): pytest python/tests (GPU tests included), the Python-call
#          overhead (bench/python/overhead.py) and the peers on the same points (bench/python/
#          peers.py: FMM3D wheel and source build in .bench-data, SciPy, KeOps)
#   tdbem  time-domain BEM (seed 003): its tests (GPU included), tables 2-3 (bem_kernels_bench),
#          table 1 (bem_balance_bench), the pulsating-sphere convergence, table 4 and the whole
#          time step on CPU / GPU / both balanced (bem_tdbem_bench, airplane-like surface), and
#          ksum tdbem under mpirun -n 1, 2, 4
#   mc     Monte Carlo electrostatics (seed 004 Paper I): ctest -R "Mc|mc" (GPU tests included),
#          figure 3.1 / table 3.1 beside ours and MC moves/s for N = 1e3 … 1e6 (mc_bench, CPU and
#          GPU, f32 and f64, sizes past a time budget skipped), ksum mc on the GPU and on the CPU
#          (KSUM_MC_ARGS: 8 chains × 64 monomers + counter-ions, 500 sweeps); ~150 s; one archive
#   bsm    block Sherman–Morrison inverse (seed 004 Paper III): ctest -R "Bsm|bsm" (GPU tests
#          included), bsm_bench at device sizes (inverse vs n to 16384 with LAPACK getrf + getri on
#          all cores, vs block size at n = 4096, rank-m updates vs refactoring at n = 2048 … 8192,
#          the paper's A0 = I set-up at n = 4096; f64 and f32; sizes past a time budget skipped);
#          bench ≤ 150 s (n from 1024: at 37f4f54 the small sizes and SVSM on the GPU used the
#          time (c) needed), then the updates (CPU, one-shot GPU and GPU-resident InverseUpdate)
#          in their own ≤ 240 s call; ~7 min in all; one archive bsm.tar.gz
#   tasksize  the task-size model (seed 004 Paper II): its tests, the paper's problems over block
#          size vs the three models on 1, 2 and all threads (tasksize_bench), ksum tune --plot;
#          ≤ 8 min
#   tasksize_methods  the chosen task sizes of the CPU direct sum, the PUM fit and evaluation
#          and the FGT's evaluation and Hermite loops vs exhaustive sweeps on 1, 2 and all threads
#          (tasksize_methods_bench); ≤ 10 min (a call of its own)
#   tasksize_fmm3d  the same for the 3D FMM's near, M2L and upward/X/downward passes (N = 1e5,
#          tasksize_methods_bench --fmm-n; 3 repetitions); ≤ 10 min (a call of its own)
#   tasksize_fmm2d  the 2D FMM's chosen subtree level and near-field leaves per task vs sweeps
#          of both, N = 1e6, on 1, 2 and all threads (tasksize_methods_bench --fmm2d-n)
#   distributed  issue 25 under mpirun -n 1, 2, 4, 8, 16 on the CPU cores (one thread per rank)
#          and one rank per GPU: the direct sum (strong N = 2e5, weak 5e4 per rank; the same
#          cores as 16 OpenMP threads; on the GPU N = 2^22: 1 rank × 1 GPU, 1 × all, 1 rank per
#          GPU) and the global RBF fit by GMRES to 1e-8 (strong N = 4e4, weak 5e3 per rank; GPU
#          N = 5e5) and the FMM to 1e-6 (strong N = 1e6, weak 1e5 per rank; GPU N = 1e7);
#          efficiency tables; KSUM_DISTRIBUTED_CASES=sum,fmm,rbf picks cases (fmmlb, not in the
#          default: the FMM on 1e6 Plummer points before and after DistributedSum::rebalance;
#          fmmgpu, not in the default: the FMM on 1 GPU and one rank per GPU at KSUM_FMM_GPU_N,
#          default 1e7 and 1e8, with the slowest rank's parts; rbffmm, not in the default: GMRES
#          with distributed FMM products, 1e6 per GPU and 2e4 per CPU rank; fmmgpu also runs
#          fmm3d_bench in one process on GPU 0 and on all GPUs, M2L full and low rank; fmmgpu1:
#          only those; fmmgpuweak, not in the default: the FMM's weak scaling at 1e7 per rank on
#          1 GPU and one rank per GPU, with KSUM_FMM_GPU_WIDE_ROOT=0 and 1, ~2 min after the build;
#          tau, not in the default: the global fit's L-sets searched over the ranks and their
#          operator alone, 1e5 rows per CPU rank, halo exchange against all-gather, rows in slabs
#          and scattered; pum, not in the default: the PUM with LOOCV shapes, 1e5 2D rows per CPU
#          rank, the data partitioned by cells with halos against every rank holding all of them);
#          ~5 min per case (one case per call)
# Writes summary.md, logs and JSON under $OUT (default ./device-out); prints the summary last.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
sections=${KSUM_CHECK:-tests,gpu,cpu,cli}
want() { [[ ",$sections," == *",$1,"* ]]; }
jobs=$(nproc)
# KSUM_PREBUILT=DIR: run the sections on binaries built elsewhere (DIR holds tests/, bench/,
# apps/ksum/ as a build tree does), with no configure or build here: for a call too short for the
# 2.5-minute build. Sections that need CTest then run the test executables directly.
build=${KSUM_PREBUILT:-build/device}
summary=$OUT/summary.md
t_start=$(date +%s)
rc=0

{
  echo "# ksum device check ($sections)"
  echo
  if [[ -n "${KSUM_COMMIT:-}" ]]; then
    commit="$KSUM_COMMIT (KSUM_COMMIT)"
  elif git rev-parse --short HEAD >/dev/null 2>&1; then
    commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' + uncommitted changes')"
  else
    commit="${KSUM_COMMIT:-unknown (no git metadata in this copy; set KSUM_COMMIT)}"
  fi
  echo "- date: $(date -u +%F' '%T) UTC; commit: $commit"
  echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n1)"
  echo "- CPU: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)); nvcc $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
} > "$summary"

# Python packages for the python section travel as wheels in .whl/py, installed into
# /tmp/ksum-py before the configure so that CMake's python3 finds nanobind (python/CMakeLists.txt
# asks `python3 -m nanobind --cmake_dir`). nanobind always (the version the module is developed
# with; it is only needed to build); pytest and its needs only where the image lacks them, so
# that the image's pytest plugins keep the pytest they were installed with.
if ls .whl/py/nanobind-*.whl > /dev/null 2>&1; then
  py_need=(.whl/py/nanobind-*.whl)
  for m in pytest iniconfig pluggy packaging pygments; do
    python3 -c "import $m" 2> /dev/null || py_need+=(.whl/py/$m-*.whl)
  done
  if (( ${#py_need[@]} )); then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/ksum-py \
      "${py_need[@]}" > "$OUT/pip-py.log" 2>&1 || echo "pip install of ${py_need[*]} failed" >&2
  fi
  export PYTHONPATH=/tmp/ksum-py${PYTHONPATH:+:$PYTHONPATH}
fi

if [[ -n "${KSUM_PREBUILT:-}" ]]; then
  echo "- build: none, prebuilt binaries in $build (KSUM_PREBUILT)" >> "$summary"
elif ! { cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKSUM_USE_CUDA=ON \
         -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build $build -j "$jobs"; } > "$OUT/build.log" 2>&1; then
  echo "- **build FAILED** (build.log)" >> "$summary"
  tail -n 40 "$OUT/build.log"
  exit 1
else
  echo "- build: $(( $(date +%s) - t_start )) s" >> "$summary"
fi

if want tests; then
  ctest --test-dir $build -L gpu -j 4 --output-on-failure > "$OUT/tests.log" 2>&1 || rc=1
  gpu_line=$(grep -E 'tests passed|tests failed' "$OUT/tests.log" | tail -n1)
  gpu_skipped=$(grep -c "Skipped" "$OUT/tests.log")
  {
    echo "- GPU tests (ctest -L gpu): $gpu_line; skipped: $gpu_skipped"
    grep -E "\(Failed\)|\*\*\*Failed|Timeout" "$OUT/tests.log" | head -n 20
    echo; echo '```'; $build/apps/ksum/ksum info 2>&1 | head -n 8; echo
    $build/apps/ksum/ksum demo --n 200000 2>&1; echo '```'
  } >> "$summary"
fi

if want cputests; then
  ctest --test-dir $build -LE gpu -j "$jobs" --output-on-failure > "$OUT/cputests.log" 2>&1 || rc=1
  {
    echo "- other tests (ctest -LE gpu): $(grep -E 'tests passed|tests failed' "$OUT/cputests.log" | tail -n1)"
    grep -E "\(Failed\)|\*\*\*Failed|Timeout" "$OUT/cputests.log" | head -n 20
  } >> "$summary"
fi

if want gpu; then
  $build/bench/direct_bench --gpu --seed000 --json "$OUT/bench_gpu.json" >> "$summary" 2>&1 || rc=1
  # Peers in the same run: KeOps when its wheels were carried in .whl/ (README: device tool), and
  # PyTorch's dense blocks. A peer that cannot run is reported in peers_gpu.log, not fatal.
  if ls .whl/pykeops-*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/ksum-peers .whl/*.whl \
      && export PYTHONPATH=/tmp/ksum-peers${PYTHONPATH:+:$PYTHONPATH}
  fi
  for peer in torch keops; do # one process each: a crash of one peer does not hide the other
    echo >> "$summary"
    # KeOps 2.3 crashes in its first nvrtc compile on this image unless the system libstdc++
    # is loaded first (bench/peers/keops_gauss.py).
    LD_PRELOAD=/lib/x86_64-linux-gnu/libstdc++.so.6 \
    CUDA_PATH=${CUDA_PATH:-/usr/local/cuda} PYTHONUNBUFFERED=1 timeout 240 \
      python3 -X faulthandler bench/peers/gpu_direct_peers.py --peers $peer \
      --ksum-json "$OUT/bench_gpu.json" --out "$OUT/peers_$peer.md" > "$OUT/peers_$peer.log" 2>&1
    peer_rc=$?
    cat "$OUT/peers_$peer.md" >> "$summary" 2>/dev/null ||
      echo "GPU peer $peer did not run (exit $peer_rc): $(tail -n 3 "$OUT/peers_$peer.log" | tr '\n' ' ')" >> "$summary"
  done
fi

if want cpu; then
  $build/bench/direct_bench --cpu --threads 1 --cpu-n 8192 --reps 3 \
    --json "$OUT/bench_cpu_1thread.json" >> "$summary" 2>&1 || rc=1
  $build/bench/direct_bench --cpu --threads "$jobs" --cpu-n 65536 --reps 3 \
    --kernels laplace,gaussian,multiquadric --json "$OUT/bench_cpu_all.json" >> "$summary" 2>&1 || rc=1
fi

if want cli; then
  echo >> "$summary"
  PYTHONUNBUFFERED=1 python3 bench/cli_bench.py --ksum $build/apps/ksum/ksum \
    --sizes 100000 1000000 --backends gpu cpu --out "$OUT/cli_bench.md" > "$OUT/cli_bench.log" 2>&1 || rc=1
  cat "$OUT/cli_bench.md" >> "$summary" 2>/dev/null || echo "cli benchmark failed (cli_bench.log)" >> "$summary"
fi

if want tolerance; then
  echo >> "$summary"
  PYTHONUNBUFFERED=1 python3 bench/tolerance_bench.py --ksum $build/apps/ksum/ksum \
    --n "${KSUM_TOL_N:-1000000}" --tols "${KSUM_TOL_TOLS:-1e-2,1e-3,1e-4,1e-5,1e-6,1e-7,1e-8,1e-9,1e-10}" --cases "${KSUM_TOL_CASES:-fmm3d-cpu,fmm3d-gpu,fmm2d-cpu,fmm2d-gpu,fgt-gpu}" \
    --out "$OUT/tolerance" > "$OUT/tolerance_bench.log" 2>&1 || rc=1
  cat "$OUT/tolerance/tolerance.md" >> "$summary" 2>/dev/null ||
    echo "tolerance benchmark failed (tolerance_bench.log)" >> "$summary"
fi

if want pum; then
  python3 -c 'import scipy' 2> /dev/null || { ls .whl/scipy-*.whl > /dev/null 2>&1 &&
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/ksum-scipy .whl/scipy-*.whl &&
    export PYTHONPATH=/tmp/ksum-scipy${PYTHONPATH:+:$PYTHONPATH}; }
  echo >> "$summary"
  $build/bench/pum_bench --json "$OUT/pum_scaling.json" >> "$summary" 2>&1 || rc=1
  echo >> "$summary"
  $build/bench/pum_bench --gpu --json "$OUT/pum_gpu.json" >> "$summary" 2>&1 || rc=1
  echo >> "$summary"
  PYTHONUNBUFFERED=1 timeout 400 python3 bench/peers/pum_vs_scipy.py --ksum $build/apps/ksum/ksum \
    --out "$OUT/pum_vs_scipy.md" > "$OUT/pum_vs_scipy.log" 2>&1 || rc=1
  cat "$OUT/pum_vs_scipy.md" >> "$summary" 2>/dev/null || echo "SciPy comparison failed (pum_vs_scipy.log)" >> "$summary"
fi

if want global; then
  echo >> "$summary"
  $build/bench/global_bench --reps 3 --json "$OUT/global.json" >> "$summary" 2>&1 || rc=1
fi

if want deform; then
  echo >> "$summary"
  if [[ -f .bench-data/deform-1m/nodes.npy ]]; then
    for b in gpu cpu; do
      echo "deform_bench --backend $b:" >> "$summary"
      # The GPU's displacement comes back (float32) for the quality check where the mesh is.
      $build/bench/deform_bench --nodes .bench-data/deform-1m --backend $b \
        --json "$OUT/deform_1m_$b.json" --save-displacement "$OUT/deform_1m_${b}_disp.npy" \
        >> "$summary" 2> "$OUT/deform_1m_$b.log" || rc=1
    done
  else
    echo "- deform: .bench-data/deform-1m missing (make it with deform_bench --export)" >> "$summary"
  fi
fi

if want fmm; then
  echo >> "$summary"
  fb=$build/bench/fmm3d_bench
  mkdir -p "$OUT/fmm"
  {
    echo "fmm3d_bench time (GPU; execute = one product, median of 3 after a warm-up):"
    $fb time --kernel laplace --n 1e7 --tol 1e-6 --backend gpu --check 100 \
      --json "$OUT/fmm/laplace_1e7.json"
    $fb time --kernel laplace --n 1e6 --tol 1e-6 --backend gpu --save "$OUT/fmm" \
      --json "$OUT/fmm/laplace_1e6_gpu.json" | tail -n 1
    $fb time --kernel multiquadric --eps 1 --n 1e6 --tol 1e-6 --backend gpu \
      --json "$OUT/fmm/mq_1e6.json" | tail -n 1
    $fb time --kernel laplace --n 1e7 --tol 1e-4 --precision f32 --backend gpu --check 100 | tail -n 1
    $fb time --kernel laplace --n 1e6 --tol 1e-6 --dist plummer --backend gpu | tail -n 1
    $fb time --kernel laplace --n 1e6 --tol 1e-6 --dist shell --backend gpu | tail -n 1
    echo "CPU ($(nproc) cores):"
    $fb time --kernel laplace --n 1e6 --tol 1e-6 --backend cpu --reps 1 \
      --json "$OUT/fmm/laplace_1e6_cpu.json" | tail -n 1
  } >> "$summary" 2> "$OUT/fmm/time.log" || rc=1
  if ls .bench-data/wheels/fmm3dpy-*.whl >/dev/null 2>&1; then
    pip install --no-deps --target /tmp/ksum-peers .bench-data/wheels/fmm3dpy-*.whl > /dev/null 2>&1
    { echo "FMM3D (fmm3dpy wheel) on $(nproc) cores, the same 1e6 points, eps 1e-6:"
      PYTHONPATH=/tmp/ksum-peers python3 bench/peers/fmm3d_peer.py "$OUT/fmm" --eps 1e-6 --reps 1 \
        --ksum-json "$OUT/fmm/laplace_1e6_gpu.json" --ksum-json "$OUT/fmm/laplace_1e6_cpu.json" \
        | tee "$OUT/fmm/fmm3d_peer.txt" | head -n 1; } >> "$summary" 2>> "$OUT/fmm/time.log" || rc=1
  fi
  rm -f "$OUT"/fmm/*.npy
  $build/bench/global_bench --multipole --fgp --fgp-method fmm --fgp-n 100000,1000000 \
    --json "$OUT/fmm/global_fmm.json" >> "$summary" 2>&1 || rc=1
fi

if want fmmtree; then
  mkdir -p "$OUT/fmm"
  { echo; $build/bench/octree_bench 16000000 --gpu --fmm-only; } > "$OUT/fmm/octree.md" 2>&1 || rc=1
  $build/bench/mq_treecode_bench --gpu > "$OUT/fmm/mq_treecode.md" 2>&1 || rc=1
  cat "$OUT/fmm/octree.md" "$OUT/fmm/mq_treecode.md" >> "$summary"
fi

if want fmmacc; then
  mkdir -p "$OUT/fmm"
  $build/bench/fmm3d_bench accuracy --n 30000 --backend gpu --json "$OUT/fmm/accuracy_gpu.json" \
    > "$OUT/fmm/accuracy_gpu.md" 2>&1 || rc=1
  $build/bench/fmm3d_bench crossover --backend gpu --json "$OUT/fmm/crossover_gpu.json" \
    > "$OUT/fmm/crossover_gpu.md" 2>&1 || rc=1
  { echo; echo "accuracy (GPU, N = 30000): largest error / tol:"
    sort -t'|' -k8 -g "$OUT/fmm/accuracy_gpu.md" | tail -n 1
    cat "$OUT/fmm/crossover_gpu.md"; } >> "$summary"
fi

if want fmm2d; then
  mkdir -p "$OUT/fmm2d"
  $build/bench/fmm2d_bench m2l --reps 5 --json "$OUT/fmm2d/m2l.json" > "$OUT/fmm2d/m2l.md" 2>&1 || rc=1
  if ls .bench-data/wheels/fmm2dpy-*.whl >/dev/null 2>&1; then
    # fmm2dpy 0.0.5 has no cp312 wheel; bench/peers/fmm2d_peer.py calls its Fortran via ctypes
    pip install --no-deps --target /tmp/ksum-peers --python-version 3.11 --only-binary=:all: \
      .bench-data/wheels/fmm2dpy-*.whl > /dev/null 2>&1
  fi
  for dist in uniform line; do
    $build/bench/fmm2d_bench scaling --n 1e6 --dist $dist --tol 1e-6 --threads 1,2,4,8,$(nproc) \
      --gpu --reps 3 --json "$OUT/fmm2d/scaling_$dist.json" > "$OUT/fmm2d/scaling_$dist.md" 2>&1 || rc=1
    $build/bench/fmm2d_bench time --n 1e6 --dist $dist --tol 1e-6 --backend cpu --tune \
      --save "$OUT/fmm2d/points_$dist" --json "$OUT/fmm2d/cpu_$dist.json" \
      > "$OUT/fmm2d/cpu_$dist.md" 2>&1 || rc=1
    if [[ -d /tmp/ksum-peers ]]; then
      python3 -c 'import numpy as np, sys
d = sys.argv[1]; q = np.load(d + "/strengths.npy"); r = np.load(d + "/reference.npy")
k = np.load(d + "/ksum.npy")
np.savez(d + ".npz", sources=np.load(d + "/sources.npy"), strengths=q[:, 0] + 1j * q[:, 1],
         kernel="harmonic", eps=k[0, 1], ksum_seconds=k[0, 0], ksum_error=k[0, 2],
         reference_index=np.load(d + "/reference_index.npy")[:, 0].astype(np.int64),
         reference=r[:, 0] + 1j * r[:, 1])' "$OUT/fmm2d/points_$dist"
      PYTHONPATH=/tmp/ksum-peers python3 bench/peers/fmm2d_peer.py "$OUT/fmm2d/points_$dist.npz" \
        --header --threads "$(nproc)" --json "$OUT/fmm2d/fmm2d_peer_$dist.json" \
        > "$OUT/fmm2d/fmm2d_peer_$dist.md" 2>&1 || rc=1
    fi
    rm -rf "$OUT/fmm2d/points_$dist" "$OUT/fmm2d/points_$dist.npz"
  done
  for dist in uniform line; do
    $build/bench/fmm2d_bench sweep --n 1e6 --dist $dist --backend gpu --levels 6,7 \
      --thetas 0.30:0.76:0.05 --reps 3 --csv "$OUT/fmm2d/sweep_$dist.csv" \
      > "$OUT/fmm2d/sweep_$dist.md" 2>&1 || rc=1
  done
  { echo; echo "2D FMM, M2L on the GPU (seed 002 table 2 format), p = 8:"
    grep -E '^\| 8 \| 2359152' "$OUT/fmm2d/m2l.md"
    for dist in uniform line; do
      echo; echo "2D FMM, N = 1e6 $dist, tol 1e-6 (scaling, tuned per row; last row hybrid):"
      grep -E '^\| (cpu|gpu) ' "$OUT/fmm2d/scaling_$dist.md"
      [[ -f "$OUT/fmm2d/fmm2d_peer_$dist.md" ]] && grep -E '^\|' "$OUT/fmm2d/fmm2d_peer_$dist.md"
    done; } >> "$summary"
  # One archive: the device tool fetches a limited number of files.
  tar -C "$OUT" -czf "$OUT/fmm2d.tar.gz" fmm2d && rm -rf "$OUT/fmm2d"
fi

if want fgt; then
  mkdir -p "$OUT/fgt"
  fg=$build/bench/fgt_bench
  ctest --test-dir $build -R "Fgt|Gauss|Kde" -j 4 --output-on-failure > "$OUT/fgt/tests.log" 2>&1 || rc=1
  timeout 150 $fg hermite --d 2 --p 5,9,12 --n 25600,102400,409600,1638400,6553600 \
    --clusters 64 --threads 1,2,4 --cpu-max-n 409600 --cpu-reps 1 --gpu --single --reps 3 \
    --json "$OUT/fgt/hermite.json" > "$OUT/fgt/hermite.md" 2>&1 || rc=1
  timeout 150 $fg e2e --d 3 --n 1e7 --h 0.1 --tol 1e-6 --backend gpu --direct-targets 1e6 \
    --precision f32 --reps 3 --json "$OUT/fgt/e2e.json" > "$OUT/fgt/e2e.md" 2>&1 || rc=1
  # One run per cell (set-up + execute; the IFGT runs on the CPU): the map, not the digits.
  timeout 120 $fg crossover --d 1,2,3,4,5,6 --h 0.01,0.03,0.1,0.3,1 --n 1e5 --tol 1e-6 \
    --backend gpu --precision f32 --reps 1 --json "$OUT/fgt/crossover.json" \
    > "$OUT/fgt/crossover.md" 2>&1 || rc=1
  if ls .whl/pykeops-*.whl > /dev/null 2>&1 && [[ ! -d /tmp/ksum-peers/pykeops ]]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/ksum-peers .whl/*.whl
  fi
  # The KeOps peer: N = M = 1e5, 1e6, 1e7 (above 1e6 targets timed on 1e6 and scaled) and the
  # crossover cells. A peer that cannot run is reported, not fatal.
  ksum_json=()
  for j in e2e crossover; do [[ -f "$OUT/fgt/$j.json" ]] && ksum_json+=(--ksum-json "$OUT/fgt/$j.json"); done
  PYTHONPATH=/tmp/ksum-peers${PYTHONPATH:+:$PYTHONPATH} CUDA_PATH=${CUDA_PATH:-/usr/local/cuda} \
    PYTHONUNBUFFERED=1 timeout 300 python3 -X faulthandler bench/peers/keops_gauss.py --d 3 \
    --h 0.1 --sizes 1e5 1e6 1e7 --max-targets 1e6 "${ksum_json[@]}" --crossover \
    --out "$OUT/fgt/keops.md" --json "$OUT/fgt/keops.json" > "$OUT/fgt/keops.log" 2>&1
  keops_rc=$?
  { echo; echo "fast Gauss transform tests (ctest -R \"Fgt|Gauss|Kde\"): $(grep -E 'tests passed|tests failed' "$OUT/fgt/tests.log" | tail -n1)"
    grep -E "\(Failed\)|\*\*\*Failed|Timeout" "$OUT/fgt/tests.log" | head -n 10
    echo; grep -vE '^(PPS|seed 002 C2050 =)' "$OUT/fgt/hermite.md" | grep -E '^(Hermite|\||GPU not run)'
    echo; grep -E '^(Gauss|\||fp64)' "$OUT/fgt/e2e.md" || tail -n 3 "$OUT/fgt/e2e.md"
    echo; echo "crossover (GPU, f32, N = M = 1e5, tol 1e-6):"
    sed -n '/^speed-up map/,$p' "$OUT/fgt/crossover.md" | grep -E '^\|' || tail -n 3 "$OUT/fgt/crossover.md"
    echo; cat "$OUT/fgt/keops.md" 2>/dev/null ||
      echo "KeOps peer did not run (exit $keops_rc): $(tail -n 3 "$OUT/fgt/keops.log" | tr '\n' ' ')"
  } >> "$summary"
  tar -C "$OUT" -czf "$OUT/fgt.tar.gz" fgt && rm -rf "$OUT/fgt"
fi

if want sim; then
  mkdir -p "$OUT/sim"
  for s in kh galaxy cylinder; do
    for b in cpu gpu; do
      timeout 280 $build/apps/ksum/ksum simulate $s --backend $b --out "$OUT/sim/${s}_$b" --force \
        > "$OUT/sim/${s}_$b.log" 2>&1 || rc=1
    done
  done
  { echo; echo "simulations (default sizes), CPU-only vs hybrid: last lines of each log"
    for s in kh galaxy cylinder; do for b in cpu gpu; do
      echo "- $s $b: $(tail -n 1 "$OUT/sim/${s}_$b.log")"; done; done; } >> "$summary"
  tar -C "$OUT" -czf "$OUT/sim.tar.gz" sim && rm -rf "$OUT/sim"
fi

if want python; then
  mkdir -p "$OUT/python"
  t_py=$(date +%s)
  if ls $build/python/ksum/_ksum*.so > /dev/null 2>&1; then
    # The peers' packages: KeOps from .whl/ (as the gpu and fgt sections), fmm3dpy from
    # .bench-data/wheels (as the fmm section); FMM3D built from source in .bench-data/fmm3d.
    if ls .whl/pykeops-*.whl > /dev/null 2>&1 && [[ ! -d /tmp/ksum-peers/pykeops ]]; then
      python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/ksum-peers \
        .whl/*.whl > "$OUT/python/pip.log" 2>&1
    fi
    if ls .bench-data/wheels/fmm3dpy-*.whl > /dev/null 2>&1 && [[ ! -d /tmp/ksum-peers/fmm3dpy ]]; then
      python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/ksum-peers \
        .bench-data/wheels/fmm3dpy-*.whl >> "$OUT/python/pip.log" 2>&1
    fi
    pyp=$build/python:/tmp/ksum-py:/tmp/ksum-peers${PYTHONPATH:+:$PYTHONPATH}
    # shellcheck disable=SC2086  # KSUM_PYTEST_ARGS / KSUM_PEERS_ARGS: extra words, split
    PYTHONPATH=$pyp PYTHONUNBUFFERED=1 timeout 240 python3 -m pytest -q -p no:cacheprovider \
      ${KSUM_PYTEST_ARGS:-} python/tests > "$OUT/python/pytest.log" 2>&1 || rc=1
    py_line=$(grep -E '(passed|failed|skipped|deselected|error|no tests ran)' \
      "$OUT/python/pytest.log" | tail -n1)
    { echo; echo "- Python tests (pytest python/tests, GPU tests included):" \
        "${py_line:-no summary line: $(tail -n 2 "$OUT/python/pytest.log" | tr '\n' ' ')}"
      grep -E '^(FAILED|ERROR) ' "$OUT/python/pytest.log" | head -n 20; echo; } >> "$summary"
    PYTHONPATH=$pyp PYTHONUNBUFFERED=1 timeout 90 python3 bench/python/overhead.py \
      --json "$OUT/python/overhead.json" --out "$OUT/python/overhead.md" \
      > "$OUT/python/overhead.log" 2>&1 || rc=1
    cat "$OUT/python/overhead.md" >> "$summary" 2> /dev/null ||
      echo "Python overhead benchmark failed: $(tail -n 3 "$OUT/python/overhead.log" | tr '\n' ' ')" >> "$summary"
    echo >> "$summary"
    # The peers in two processes, KeOps alone (peers.py preloads the system libstdc++ for it; a
    # crash in its compiler then loses only its table). Each rewrites its Markdown and JSON after
    # every part, so a time limit keeps the parts done.
    for part in fmm3d,rbf,kde keops; do
      name=peers_${part//,/_}
      PYTHONPATH=$pyp PYTHONUNBUFFERED=1 timeout $([[ $part == keops ]] && echo 150 || echo 270) \
        python3 -X faulthandler bench/python/peers.py --only $part ${KSUM_PEERS_ARGS:-} \
        --json "$OUT/python/$name.json" --out "$OUT/python/$name.md" > "$OUT/python/$name.log" 2>&1
      peers_rc=$?
      { echo; grep -v '^# ksum Python peers' "$OUT/python/$name.md" 2> /dev/null
        (( peers_rc == 0 )) || echo "- peers.py --only $part: exit $peers_rc (124: time limit):" \
          "$(tail -n 3 "$OUT/python/$name.log" | tr '\n' ' ')"; } >> "$summary"
    done
  else
    echo "- python: the module was not built (nanobind not found by CMake: carry" \
         ".whl/py/nanobind-*.whl; build.log)" >> "$summary"
  fi
  echo "- python section: $(( $(date +%s) - t_py )) s" >> "$summary"
  tar -C "$OUT" -czf "$OUT/python.tar.gz" python && rm -rf "$OUT/python"
fi

if want tdbem; then
  mkdir -p "$OUT/tdbem"
  t_bem=$(date +%s)
  bb=$build/bench
  ctest --test-dir $build -R "Blocking|Tdbem|Slices|SliceBalancer|tdbem" -j 4 --output-on-failure \
    > "$OUT/tdbem/tests.log" 2>&1 || rc=1
  timeout 240 $bb/bem_kernels_bench --json "$OUT/tdbem/kernels.json" > "$OUT/tdbem/kernels.md" 2>&1 || rc=1
  timeout 60 $bb/bem_balance_bench --json "$OUT/tdbem/balance.json" > "$OUT/tdbem/balance.md" 2>&1 || rc=1
  timeout 150 $bb/bem_tdbem_bench --convergence 4 --json "$OUT/tdbem/convergence.json" \
    > "$OUT/tdbem/convergence.md" 2>&1 || rc=1
  timeout 120 $bb/bem_tdbem_bench --refine 4 --figure2 --json "$OUT/tdbem/figure2.json" \
    > "$OUT/tdbem/figure2.md" 2>&1 || rc=1
  # The test case: the airplane-like surface of bench/bem/data (Gmsh, make_airplane.py) or, where
  # it is missing, a refined sphere; cΔt from KSUM_TDBEM_DT_RATIO × the mean edge.
  surf=(--refine 4)
  plane=bench/bem/data/airplane_10k
  [[ -f ${plane}_nodes.npy ]] && surf=(--nodes ${plane}_nodes.npy --triangles ${plane}_triangles.npy)
  timeout 420 $bb/bem_tdbem_bench "${surf[@]}" --dt-ratio ${KSUM_TDBEM_DT_RATIO:-0.5} --ng 8 --steps 320 \
    --balance-csv "$OUT/tdbem/balance_steps.csv" --balance-png "$OUT/tdbem/balance_gpu_share.png" \
    --json "$OUT/tdbem/testcase.json" > "$OUT/tdbem/testcase.md" 2>&1 || rc=1
  # MPI ranks on the 16 cores (CPU workers), the same run 1, 2 and 4 ranks.
  for p in 1 2 4; do
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 150 mpirun -n $p \
      --oversubscribe --bind-to none -x OMP_NUM_THREADS=$((jobs / p)) $build/apps/ksum/ksum tdbem \
      --refine 4 --backend cpu --steps 120 --ng 8 --summary "$OUT/tdbem/mpi$p.txt" -f \
      > "$OUT/tdbem/mpi$p.log" 2>&1 || rc=1
  done
  { echo; echo "TD-BEM tests (ctest -R \"Blocking|Tdbem|Slices|SliceBalancer|tdbem\"): $(grep -E 'tests passed|tests failed' "$OUT/tdbem/tests.log" | tail -n1)"
    grep -E "\(Failed\)|\*\*\*Failed|Timeout" "$OUT/tdbem/tests.log" | head -n 10
    echo; grep -E '^(#|\|)' "$OUT/tdbem/kernels.md" || tail -n 5 "$OUT/tdbem/kernels.md"
    echo; grep -E '^(#|\|)' "$OUT/tdbem/balance.md" || tail -n 5 "$OUT/tdbem/balance.md"
    echo; cat "$OUT/tdbem/convergence.md"
    echo; grep -E '^(#|\|)' "$OUT/tdbem/figure2.md" || tail -n 3 "$OUT/tdbem/figure2.md"
    echo; cat "$OUT/tdbem/testcase.md"
    for p in 1 2 4; do echo; echo "mpirun -n $p ksum tdbem --refine 4 --backend cpu (OMP_NUM_THREADS=$((jobs / p))):"
      grep -E '^(time|worker)' "$OUT/tdbem/mpi$p.txt" 2>/dev/null || tail -n 3 "$OUT/tdbem/mpi$p.log"; done
    echo "- tdbem section: $(( $(date +%s) - t_bem )) s"
  } >> "$summary"
  cp "$OUT/tdbem/balance_gpu_share.png" "$OUT/tdbem_balance_gpu_share.png" 2>/dev/null
  tar -C "$OUT" -czf "$OUT/tdbem.tar.gz" tdbem && rm -rf "$OUT/tdbem"
fi

if want mc; then
  mkdir -p "$OUT/mc"
  t_mc=$(date +%s)
  if [[ -f $build/CTestTestfile.cmake ]]; then
    timeout 120 ctest --test-dir $build -R "Mc|mc" -j 4 --output-on-failure > "$OUT/mc/tests.log" 2>&1 || rc=1
  else # prebuilt: the test executables themselves, with a ctest-like count line
    pass=0 total=0
    for t in $build/tests/ksum_mc_*_test; do
      [[ -x $t ]] || continue # (no match: the pattern itself)
      total=$((total + 1))
      if timeout 120 "$t" >> "$OUT/mc/tests.log" 2>&1; then pass=$((pass + 1)); else
        rc=1; echo "$(basename "$t") (Failed)" >> "$OUT/mc/tests.log"; fi
    done
    echo "test executables: $pass of $total passed (gtest counts above); tests $([[ $pass == "$total" && $total -gt 0 ]] && echo passed || echo failed)" >> "$OUT/mc/tests.log"
  fi
  # Budgets: 2 s per measurement (a size whose N²-scaled prediction exceeds it is skipped) and
  # 8 s per Simulation::run row; about 100 s on an H100 with 16 cores.
  timeout 170 $build/bench/mc_bench --max-n 1e6 --budget 2 --sim-budget 8 --reps 3 \
    --json "$OUT/mc/mc_bench.json" --png "$OUT/mc/rates.png" > "$OUT/mc/mc_bench.md" 2>&1 || rc=1
  # ksum mc, 8 chains × 64 monomers + 512 counter-ions at 0.01 mol/L monomers, 500 sweeps;
  # KSUM_MC_ARGS replaces the model and run options (the outputs below are always added).
  mc_args=${KSUM_MC_ARGS:---chains 8 --monomers 64 --steps 500 --seed 1}
  declare -A mc_ms
  for b in gpu cpu; do
    t_run=$(date +%s%N)
    # shellcheck disable=SC2086  # mc_args: words, split
    timeout 60 $build/apps/ksum/ksum mc $mc_args --backend $b --progress-every 100 \
      --summary "$OUT/mc/ksum_mc_$b.txt" --samples "$OUT/mc/ksum_mc_${b}_samples.csv" \
      --plot "$OUT/mc/ksum_mc_$b" -f > "$OUT/mc/ksum_mc_$b.log" 2>&1 || rc=1
    mc_ms[$b]=$(( ($(date +%s%N) - t_run) / 1000000 ))
  done
  { echo; echo "MC tests (ctest -R \"Mc|mc\"): $(grep -E 'tests passed|tests failed' "$OUT/mc/tests.log" | tail -n1)"
    grep -E "\(Failed\)|\*\*\*Failed|Timeout" "$OUT/mc/tests.log" | head -n 10
    grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/mc/tests.log" | head -n 20
    echo; grep -vE '^(model N|plot )' "$OUT/mc/mc_bench.md" | grep -E '^(\(a\)|\(b\)|ΔU|Seed|#|\|)' ||
      tail -n 5 "$OUT/mc/mc_bench.md"
    for b in gpu cpu; do
      echo; echo "ksum mc $mc_args --backend $b (${mc_ms[$b]} ms wall):"
      cat "$OUT/mc/ksum_mc_$b.txt" 2>/dev/null || tail -n 6 "$OUT/mc/ksum_mc_$b.log"
    done
    echo "- mc section: $(( $(date +%s) - t_mc )) s"
  } >> "$summary"
  tar -C "$OUT" -czf "$OUT/mc.tar.gz" mc && rm -rf "$OUT/mc"
fi

if want bsm; then
  mkdir -p "$OUT/bsm"
  t_bsm=$(date +%s)
  if [[ -f $build/CTestTestfile.cmake ]]; then
    timeout 120 ctest --test-dir $build -R "Bsm|bsm" -j 4 --output-on-failure > "$OUT/bsm/tests.log" 2>&1 || rc=1
  else # prebuilt: the test executables themselves, with a ctest-like count line
    pass=0 total=0
    for t in $build/tests/ksum_bsm*_test; do
      [[ -x $t ]] || continue
      total=$((total + 1))
      if timeout 120 "$t" >> "$OUT/bsm/tests.log" 2>&1; then pass=$((pass + 1)); else
        rc=1; echo "$(basename "$t") (Failed)" >> "$OUT/bsm/tests.log"; fi
    done
    echo "test executables: $pass of $total passed (gtest counts above); tests passed" >> "$OUT/bsm/tests.log"
  fi
  # Budget: 4 s per measurement (a size whose n³-scaled prediction exceeds it is skipped); no new
  # measurement after 125 s (the tables of what was measured are still written), cut at 150 s.
  timeout 180 $build/bench/bsm_bench --max-n 16384 --sizes 1024,2048,4096,8192,16384 --budget 6 \
    --time-limit 150 \
    --reps 3 --block-n 4096 --update-sizes 2048,4096,8192 --ranks 1,8,64 --paper-n 4096 \
    --json "$OUT/bsm/bsm_bench.json" \
    --png "$OUT/bsm/time_vs_n.png" > "$OUT/bsm/bsm_bench.md" 2>&1 || rc=1
  # The rank-m updates (CPU, one-shot GPU, GPU-resident) in a call of their own: the inverse
  # tables above use the whole 150 s on an H200 host (~170 s for these at 2048 … 8192).
  timeout 280 $build/bench/bsm_bench --sizes 256 --svsm-max-n 0 --block-n 0 --paper-n 0 \
    --update-sizes 2048,4096,8192 --ranks 1,8,64 --reps 3 --max-n 8192 --budget 20 \
    --time-limit 240 --json "$OUT/bsm/bsm_update.json" > "$OUT/bsm/bsm_update.md" 2>&1 || rc=1
  { echo; echo "BSM tests (ctest -R \"Bsm|bsm\"): $(grep -E 'tests passed|tests failed' "$OUT/bsm/tests.log" | tail -n1)"
    grep -E "\(Failed\)|\*\*\*Failed|Timeout" "$OUT/bsm/tests.log" | head -n 10
    grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[ bsm' "$OUT/bsm/tests.log" | head -n 20
    for f in bsm_bench bsm_update; do
      echo; grep -vE '^plot ' "$OUT/bsm/$f.md" | grep -E '^(#|\||note|Paper)' ||
        tail -n 5 "$OUT/bsm/$f.md"
    done
    echo "- bsm section: $(( $(date +%s) - t_bsm )) s"
  } >> "$summary"
  tar -C "$OUT" -czf "$OUT/bsm.tar.gz" bsm && rm -rf "$OUT/bsm"
fi

if want tasksize; then
  mkdir -p "$OUT/tasksize"
  t_ts=$(date +%s)
  # Each run gets its own cache (the image's home is not ours to write); set for this section only.
  ts_cache="$OUT/tasksize/cache"
  if [[ -f $build/CTestTestfile.cmake ]]; then
    KSUM_CACHE_DIR="$ts_cache" timeout 120 ctest --test-dir $build -R "TaskSize|Tasksize|tasksize|TuneCli|DirectCpu" -j 4 \
      --output-on-failure > "$OUT/tasksize/tests.log" 2>&1 || rc=1
  else # prebuilt: the model's test executables themselves, with a ctest-like count line
    pass=0 total=0
    for t in $build/tests/ksum_tasksize_*test; do
      [[ -x $t ]] || continue # (no match: the pattern itself)
      total=$((total + 1))
      if KSUM_CACHE_DIR="$ts_cache" timeout 120 "$t" >> "$OUT/tasksize/tests.log" 2>&1; then
        pass=$((pass + 1)); else rc=1; echo "$(basename "$t") (Failed)" >> "$OUT/tasksize/tests.log"; fi
    done
    echo "test executables: $pass of $total passed (gtest counts above); tests $([[ $pass == "$total" && $total -gt 0 ]] && echo passed || echo failed)" >> "$OUT/tasksize/tests.log"
  fi
  KSUM_CACHE_DIR="$ts_cache" timeout 200 $build/bench/tasksize_bench --threads 1,2,$jobs --time-limit 180 \
    --json "$OUT/tasksize/tasksize_bench.json" --png-prefix "$OUT/tasksize/" \
    > "$OUT/tasksize/tasksize_bench.md" 2>&1 || rc=1
  KSUM_CACHE_DIR="$ts_cache" timeout 120 $build/apps/ksum/ksum tune --plot "$OUT/tasksize/tune.png" \
    > "$OUT/tasksize/tune.txt" 2>&1 || rc=1
  { echo; echo "task-size tests: $(grep -E 'tests passed|tests failed' "$OUT/tasksize/tests.log" 2>/dev/null | tail -n1)"
    echo; grep -E '^(#|measured best|basic|variable|full)' "$OUT/tasksize/tasksize_bench.md" ||
      tail -n 5 "$OUT/tasksize/tasksize_bench.md"
    echo; sed -n '1,40p' "$OUT/tasksize/tune.txt"
    echo "- tasksize section: $(( $(date +%s) - t_ts )) s"
  } >> "$summary"
  tar -C "$OUT" -czf "$OUT/tasksize.tar.gz" tasksize && rm -rf "$OUT/tasksize"
fi

if want tasksize_methods; then
  mkdir -p "$OUT/tasksize_methods"
  t_tm=$(date +%s)
  # Its own cache: the bench writes the loop overhead it measures for each thread count there.
  KSUM_CACHE_DIR="$OUT/tasksize_methods/cache" timeout 590 $build/bench/tasksize_methods_bench \
    --threads 1,2,$jobs --m 30000 --n 20000 --fmm-n 0 --fmm2d-n 0 --reps 5 \
    --json "$OUT/tasksize_methods/tasksize_methods_bench.json" \
    > "$OUT/tasksize_methods/tasksize_methods_bench.md" 2>&1 || rc=1
  { echo; grep -E '^(#|chosen S|evaluate\(\)|set_data\(\)|execute\(\))' \
      "$OUT/tasksize_methods/tasksize_methods_bench.md" || tail -n 5 "$OUT/tasksize_methods/tasksize_methods_bench.md"
    echo "- tasksize_methods section: $(( $(date +%s) - t_tm )) s"
  } >> "$summary"
  tar -C "$OUT" -czf "$OUT/tasksize_methods.tar.gz" tasksize_methods && rm -rf "$OUT/tasksize_methods"
fi

if want tasksize_fmm3d; then
  mkdir -p "$OUT/tasksize_fmm3d"
  t_t3=$(date +%s)
  # The 3D FMM's three sizes at N = 1e5 (22 plans, 5 executes each, per thread count: 3
  # repetitions, not 5, to fit one call); the loop overhead measured first into its own cache, no
  # direct-sum sweep (--m 0).
  KSUM_CACHE_DIR="$OUT/tasksize_fmm3d/cache" timeout 560 $build/bench/tasksize_methods_bench \
    --threads 1,2,$jobs --m 0 --pum-n 0 --fmm-n 100000 --fgt-n 0 --fmm2d-n 0 --reps 3 \
    --json "$OUT/tasksize_fmm3d/tasksize_fmm3d.json" > "$OUT/tasksize_fmm3d/tasksize_fmm3d.md" 2>&1 || rc=1
  { echo; grep -E '^(#|execute\(\))' "$OUT/tasksize_fmm3d/tasksize_fmm3d.md" ||
      tail -n 5 "$OUT/tasksize_fmm3d/tasksize_fmm3d.md"
    echo "- tasksize_fmm3d section: $(( $(date +%s) - t_t3 )) s"
  } >> "$summary"
  tar -C "$OUT" -czf "$OUT/tasksize_fmm3d.tar.gz" tasksize_fmm3d && rm -rf "$OUT/tasksize_fmm3d"
fi

if want tasksize_fmm2d; then
  mkdir -p "$OUT/tasksize_fmm2d"
  t_tf=$(date +%s)
  # The 2D FMM's two sizes (downward subtree level, near-field leaves per task) at N = 1e6; the
  # loop overhead measured first into its own cache, no direct-sum sweep (--m 0).
  KSUM_CACHE_DIR="$OUT/tasksize_fmm2d/cache" timeout 590 $build/bench/tasksize_methods_bench \
    --threads 1,2,$jobs --m 0 --pum-n 0 --fmm-n 0 --fgt-n 0 --fmm2d-n 1000000 --reps 5 \
    --json "$OUT/tasksize_fmm2d/tasksize_fmm2d.json" > "$OUT/tasksize_fmm2d/tasksize_fmm2d.md" 2>&1 || rc=1
  { echo; grep -E '^(#|execute\(\))' "$OUT/tasksize_fmm2d/tasksize_fmm2d.md" ||
      tail -n 5 "$OUT/tasksize_fmm2d/tasksize_fmm2d.md"
    echo "- tasksize_fmm2d section: $(( $(date +%s) - t_tf )) s"
  } >> "$summary"
  tar -C "$OUT" -czf "$OUT/tasksize_fmm2d.tar.gz" tasksize_fmm2d && rm -rf "$OUT/tasksize_fmm2d"
fi

if want distributed; then
  mkdir -p "$OUT/distributed"
  t_di=$(date +%s)
  dj="$OUT/distributed/distributed_bench.jsonl"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # KSUM_DISTRIBUTED_CASES: sum (the direct sum), fmm (the FMM), rbf (the global RBF fit); all by
  # default. Also: tau (the L-sets and τ), fmmlb (the FMM's load balance), pum (the PUM).
  cases=${KSUM_DISTRIBUTED_CASES:-sum,fmm,rbf}
  if [[ ,$cases, == *,sum,* ]]; then
  for P in 1 2 4 8 16; do
    OMP_NUM_THREADS=1 timeout 240 mpirun -n $P --oversubscribe --bind-to core \
      $build/bench/distributed_bench --n 200000 --n-per-rank 50000 --reps 2 --json "$dj" \
      >> "$OUT/distributed/cpu.md" 2>&1 || { echo "mpirun -n $P failed" >> "$OUT/distributed/cpu.md"; rc=1; }
  done
  # The same cores as 16 OpenMP threads of one process: what the ranks are to be compared with.
  OMP_NUM_THREADS=16 timeout 120 $build/bench/distributed_bench --n 200000 --n-per-rank 0 \
    --reps 2 --json "$OUT/distributed/openmp16.jsonl" >> "$OUT/distributed/cpu.md" 2>&1 || rc=1
  fi
  # The GPU: one rank on one GPU (the baseline), then, where the host has several GPUs, one rank
  # splitting the sum over all of them (DirectSum's own threads) and one rank per GPU.
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  gpu_runs="1:1"
  [ "${ngpu:-0}" -ge 2 ] && gpu_runs="1:1 1:$ngpu $ngpu:1"
  if [[ ,$cases, == *,sum,* ]]; then
  for pg in $gpu_runs; do
    P=${pg%%:*}; G=${pg##*:}
    timeout 240 mpirun -n $P --oversubscribe $build/bench/distributed_bench --backend gpu \
      --gpus-per-rank $G --n 4194304 --n-per-rank 0 --reps 2 --json "$dj" \
      >> "$OUT/distributed/gpu.md" 2>&1 ||
      { echo "mpirun -n $P --gpus-per-rank $G (gpu) failed" >> "$OUT/distributed/gpu.md"; rc=1; }
  done
  fi
  if [[ ,$cases, == *,fmm,* ]]; then
  # The distributed FMM (Laplace, 1e-6): CPU ranks of one thread, strong N = 1e6 and weak 1e5 per
  # rank; GPU: one rank on one GPU, then one rank per GPU, N = 1e7.
  for P in 1 2 4 8 16; do
    OMP_NUM_THREADS=1 timeout 240 mpirun -n $P --oversubscribe --bind-to core \
      $build/bench/distributed_bench --n 0 --n-per-rank 0 --fmm-n 1000000 --fmm-n-per-rank 100000 \
      --reps 1 --json "$dj" >> "$OUT/distributed/fmm_cpu.md" 2>&1 ||
      { echo "mpirun -n $P (fmm) failed" >> "$OUT/distributed/fmm_cpu.md"; rc=1; }
  done
  CUDA_VISIBLE_DEVICES=0 timeout 240 $build/bench/distributed_bench --backend gpu --n 0 \
    --n-per-rank 0 --fmm-n 10000000 --reps 1 --json "$dj" >> "$OUT/distributed/fmm_gpu.md" 2>&1 || rc=1
  if [ "${ngpu:-0}" -ge 2 ]; then
    OMP_NUM_THREADS=$(( jobs / ngpu )) timeout 240 mpirun -n $ngpu --oversubscribe --bind-to none \
      $build/bench/distributed_bench --backend gpu --n 0 --n-per-rank 0 --fmm-n 10000000 \
      --reps 1 --json "$dj" >> "$OUT/distributed/fmm_gpu.md" 2>&1 || rc=1
  fi
  fi
  if [[ ,$cases, == *,fmmgpu,* || ,$cases, == *,fmmgpu1,* ]]; then
  # The FMM on the GPUs at the issue's sizes (Laplace, 1e-6): sizes in KSUM_FMM_GPU_N (default
  # 1e7 and 1e8), one rank on one GPU, then one rank per GPU; best of 2 executes, with the slowest
  # rank's parts (exchange, pseudo-particle weights, local FMM and its phases).
  for n in ${KSUM_FMM_GPU_N:-10000000 100000000}; do
    # One process (no MPI) on GPU 0, then sharing the targets over all GPUs (DirectSum's devices;
    # each GPU runs the whole upward pass and its share of the rest), the GPUs' M2L full and in low
    # rank (KSUM_FMM_GPU_LOWRANK, default "0 1"); execute = median of 3 after 4 warm-ups (the
    # fourth allocates the pinned buffers the later ones use); the fp64 check on 5 targets at 1e8 (100
    # targets there took ~130 s).
    all_gpus=$(seq -s, 0 $(( ${ngpu:-1} - 1 )))
    for lr in ${KSUM_FMM_GPU_LOWRANK:-0 1}; do
      for devs in 0 $( [ "${ngpu:-0}" -ge 2 ] && echo "$all_gpus" ); do
        timeout 200 $build/bench/fmm3d_bench time --kernel laplace --n $n --tol 1e-6 \
          --backend gpu --devices $devs --lowrank $lr --warmup 4 --reps 3 \
          --check $( [ "$n" -ge 100000000 ] && echo 5 || echo 100 ) \
          >> "$OUT/distributed/fmm_gpu_one_process.md" 2>&1 ||
          { echo "fmm3d_bench (N = $n, devices $devs, lowrank $lr) failed" >> "$OUT/distributed/fmm_gpu_one_process.md"; rc=1; }
      done
    done
    [[ ,$cases, == *,fmmgpu1,* ]] && continue # the one-process runs only
    CUDA_VISIBLE_DEVICES=0 timeout 300 $build/bench/distributed_bench --backend gpu --n 0 \
      --n-per-rank 0 --fmm-n $n --reps 2 --json "$dj" >> "$OUT/distributed/fmm_gpu.md" 2>&1 ||
      { echo "1 rank (fmm gpu, N = $n) failed" >> "$OUT/distributed/fmm_gpu.md"; rc=1; }
    if [ "${ngpu:-0}" -ge 2 ]; then
      OMP_NUM_THREADS=$(( jobs / ngpu )) timeout 300 mpirun -n $ngpu --oversubscribe --bind-to none \
        $build/bench/distributed_bench --backend gpu --n 0 --n-per-rank 0 --fmm-n $n \
        --reps 2 --json "$dj" >> "$OUT/distributed/fmm_gpu.md" 2>&1 ||
        { echo "mpirun -n $ngpu (fmm gpu, N = $n) failed" >> "$OUT/distributed/fmm_gpu.md"; rc=1; }
    fi
  done
  fi
  if [[ ,$cases, == *,fmmgpuweak,* ]]; then
  # The FMM's weak scaling on the GPUs at 1e7 points per rank (session 45: efficiency 0.41, the
  # local trees split into leaves of ~90 points), with the wider root off and on for GPU plans.
  for wide in 0 1; do
    for P in 1 $( [ "${ngpu:-0}" -ge 2 ] && echo "$ngpu" ); do
      KSUM_FMM_GPU_WIDE_ROOT=$wide OMP_NUM_THREADS=$(( jobs / P )) timeout 150 \
        mpirun -n $P --oversubscribe --bind-to none -x KSUM_FMM_GPU_WIDE_ROOT \
        $build/bench/distributed_bench --backend gpu --gpus-per-rank 1 --n 0 --n-per-rank 0 \
        --fmm-n-per-rank 10000000 --reps 3 --json "$OUT/distributed/fmm_gpu_weak_wide$wide.jsonl" \
        >> "$OUT/distributed/fmm_gpu_weak.md" 2>&1 ||
        { echo "mpirun -n $P (fmm gpu weak, wide root $wide) failed" >> "$OUT/distributed/fmm_gpu_weak.md"; rc=1; }
      echo "(KSUM_FMM_GPU_WIDE_ROOT=$wide, $P rank(s))" >> "$OUT/distributed/fmm_gpu_weak.md"
    done
  done
  { echo; echo "## the FMM's weak scaling on the GPUs, 1e7 per rank, wider root off / on"; echo
    grep -E "^\| fmm|^\(KSUM" "$OUT/distributed/fmm_gpu_weak.md"; } >> "$summary"
  fi
  if [[ ,$cases, == *,rbffmm,* ]]; then
  # The global RBF fit (GMRES to 1e-8, multiquadric) with distributed FMM products: one GPU at
  # N = 1e6, then one rank per GPU at 1e6 per rank; CPU ranks of one thread at 2e4 per rank, 1, 2
  # and 4 of them (8 and 16 ranks did not finish within one call at c55e5b7: ~1 s per product and
  # ~80 iterations); ~7 min.
  CUDA_VISIBLE_DEVICES=0 timeout 240 $build/bench/distributed_bench --backend gpu --n 0 \
    --n-per-rank 0 --rbf-n-per-rank 1000000 --rbf-matvec fmm --json "$dj" \
    >> "$OUT/distributed/rbf_fmm_gpu.md" 2>&1 || { echo "1 rank (rbf fmm gpu) failed" >> "$OUT/distributed/rbf_fmm_gpu.md"; rc=1; }
  if [ "${ngpu:-0}" -ge 2 ]; then
    OMP_NUM_THREADS=$(( jobs / ngpu )) timeout 300 mpirun -n $ngpu --oversubscribe --bind-to none \
      $build/bench/distributed_bench --backend gpu --n 0 --n-per-rank 0 --rbf-n-per-rank 1000000 \
      --rbf-matvec fmm --json "$dj" >> "$OUT/distributed/rbf_fmm_gpu.md" 2>&1 ||
      { echo "mpirun -n $ngpu (rbf fmm gpu) failed" >> "$OUT/distributed/rbf_fmm_gpu.md"; rc=1; }
  fi
  for P in 1 2 4; do
    OMP_NUM_THREADS=1 timeout 150 mpirun -n $P --oversubscribe --bind-to core \
      $build/bench/distributed_bench --n 0 --n-per-rank 0 --rbf-n-per-rank 20000 --rbf-matvec fmm \
      --json "$dj" >> "$OUT/distributed/rbf_fmm_cpu.md" 2>&1 ||
      { echo "mpirun -n $P (rbf fmm) failed" >> "$OUT/distributed/rbf_fmm_cpu.md"; rc=1; }
  done
  fi
  if [[ ,$cases, == *,tau,* ]]; then
  # The global RBF fit's L-sets (searched over the ranks) and their operator τ alone, weak at
  # 1e5 rows per rank (CPU ranks of one thread): τ's halo exchange against the first version's
  # all-gather, rows in slabs (a spatial
  # partition) and scattered (no spatial order); ~4 min.
  for pts in slabs scattered; do
    for P in 1 2 4 8 16; do
      OMP_NUM_THREADS=1 timeout 120 mpirun -n $P --oversubscribe --bind-to core \
        $build/bench/distributed_bench --n 0 --n-per-rank 0 --tau-n-per-rank 100000 \
        --tau-points $pts --reps 10 --json "$dj" >> "$OUT/distributed/tau_cpu.md" 2>&1 ||
        { echo "mpirun -n $P (tau $pts) failed" >> "$OUT/distributed/tau_cpu.md"; rc=1; }
    done
  done
  fi
  if [[ ,$cases, == *,pum,* ]]; then
  # The PUM over the ranks, weak at 1e5 2D rows per rank with LOOCV shapes (CPU ranks of one
  # thread): the data partitioned by cells with halos against every rank holding all of them.
  for P in 1 2 4 8 16; do
    OMP_NUM_THREADS=1 timeout 180 mpirun -n $P --oversubscribe --bind-to core \
      $build/bench/distributed_bench --n 0 --n-per-rank 0 --pum-n-per-rank 100000 --reps 2 \
      --json "$dj" >> "$OUT/distributed/pum_cpu.md" 2>&1 ||
      { echo "mpirun -n $P (pum) failed" >> "$OUT/distributed/pum_cpu.md"; rc=1; }
  done
  fi
  if [[ ,$cases, == *,fmmlb,* ]]; then
  # The FMM's load balance: 1e6 Plummer points (1e-6), CPU ranks of one thread; the execute on the
  # count partition, then after DistributedSum::rebalance (the partition by measured cost).
  for P in 1 2 4 8 16; do
    OMP_NUM_THREADS=1 timeout 300 mpirun -n $P --oversubscribe --bind-to core \
      $build/bench/distributed_bench --n 0 --n-per-rank 0 --fmm-n 1000000 --fmm-points plummer \
      --fmm-rebalance --reps 1 --json "$dj" >> "$OUT/distributed/fmm_plummer_cpu.md" 2>&1 ||
      { echo "mpirun -n $P (fmm plummer) failed" >> "$OUT/distributed/fmm_plummer_cpu.md"; rc=1; }
  done
  fi
  if [[ ,$cases, == *,rbf,* ]]; then
  # The global RBF fit (GMRES to 1e-8): on the CPU one thread per rank, strong N = 40000 and weak
  # 5000 per rank; on the GPU one GPU per rank (one rank alone sees one GPU), strong N = 5e5.
  for P in 1 2 4 8 16; do
    OMP_NUM_THREADS=1 timeout 240 mpirun -n $P --oversubscribe --bind-to core \
      $build/bench/distributed_bench --n 0 --n-per-rank 0 --rbf-n 40000 --rbf-n-per-rank 5000 \
      --json "$dj" >> "$OUT/distributed/rbf_cpu.md" 2>&1 ||
      { echo "mpirun -n $P (rbf) failed" >> "$OUT/distributed/rbf_cpu.md"; rc=1; }
  done
  CUDA_VISIBLE_DEVICES=0 timeout 240 $build/bench/distributed_bench --backend gpu --n 0 \
    --n-per-rank 0 --rbf-n 500000 --json "$dj" >> "$OUT/distributed/rbf_gpu.md" 2>&1 || rc=1
  if [ "${ngpu:-0}" -ge 2 ]; then
    # Each rank's L-sets and τ run on its share of the cores: Open MPI binds 2 ranks to one core
    # each by default, which would run every rank's OpenMP threads on that one core.
    OMP_NUM_THREADS=$(( jobs / ngpu )) timeout 240 mpirun -n $ngpu --oversubscribe --bind-to none \
      $build/bench/distributed_bench --backend gpu --n 0 --n-per-rank 0 --rbf-n 500000 \
      --json "$dj" >> "$OUT/distributed/rbf_gpu.md" 2>&1 || rc=1
  fi
  fi
  [ -s "$dj" ] && { echo; echo "## distributed direct sum (one thread per rank on the CPU; efficiency vs 1 rank)"; echo
    python3 - "$dj" <<'PY'
import json, sys
rows = [r for line in open(sys.argv[1]) for r in json.loads(line)]
for backend in ("cpu", "gpu"):
    for kind in ("fmm-strong", "fmm-weak"):
        rs = sorted((r for r in rows if r["kind"] == kind and r["backend"] == backend),
                    key=lambda r: r["ranks"])
        if not rs:
            continue
        # Strong: against one rank at the same N (fmmgpu runs several N); weak: the first N.
        one = lambda r: next((q for q in rs if q["ranks"] == 1 and (kind == "fmm-weak" or q["n"] == r["n"])), None)
        print(f"| {backend} {kind} | ranks | N | set-up [s] | execute [s] | points/s | efficiency | received | pseudo cells | sampled error |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        rs.sort(key=lambda r: (r["n"] if kind == "fmm-strong" else 0, r["ranks"]))
        for r in rs:
            t1 = one(r)
            eff = f"{r['points_per_second'] / (r['ranks'] * t1['points_per_second']):.2f}" if t1 else ""
            print(f"| | {r['ranks']} | {r['n']} | {r['seconds_setup']:.3g} | {r['seconds']:.4g} | {r['points_per_second']:.3g} | {eff} | {r['received']:.0f} | {r['pseudo_cells']:.0f} | {r['sampled_error']:.2g} |")
        print()
rs = sorted((r for r in rows if r["kind"] == "fmm-strong-plummer"), key=lambda r: r["ranks"])
if rs:
    t1 = next((r for r in rs if r["ranks"] == 1), None)
    print("| cpu fmm-strong-plummer | ranks | N | execute [s] | efficiency | imbalance | rebalance [s] | execute after [s] | efficiency after | imbalance after | sampled error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rs:
        e0 = f"{t1['seconds'] / (r['ranks'] * r['seconds']):.2f}" if t1 else ""
        e1 = f"{t1['seconds'] / (r['ranks'] * r['rebalanced_seconds']):.2f}" if t1 and r["rebalanced_seconds"] > 0 else ""
        print(f"| | {r['ranks']} | {r['n']} | {r['seconds']:.4g} | {e0} | {r['imbalance']:.2f} | {r['seconds_rebalance']:.3g} | {r['rebalanced_seconds']:.4g} | {e1} | {r['rebalanced_imbalance']:.2f} | {r['sampled_error']:.2g} |")
    print()
for backend in ("cpu", "gpu"):
    for kind in ("rbf-strong", "rbf-weak"):
        rs = sorted((r for r in rows if r["kind"] == kind and r["backend"] == backend),
                    key=lambda r: r["ranks"])
        if not rs:
            continue
        # Efficiency: seconds per product against one rank (strong: ×P; weak: the products do
        # P times the pairs per rank, so ×1/P as for the direct sum).
        # Grouped by the products (direct: pairs per second per rank; fmm: points per second
        # per rank, the FMM's work being about linear in N).
        rs.sort(key=lambda r: (r.get("matvec", "direct"), r["ranks"]))
        print(f"| {backend} {kind} | ranks | N | products | setup [s] | solve [s] | iterations | s per product | efficiency per product | residual |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in rs:
            mv = r.get("matvec", "direct")
            t1 = next((q for q in rs if q["ranks"] == 1 and q.get("matvec", "direct") == mv), None)
            eff = ""
            if t1:
                work = (lambda q: q["n"] * (q["n"] - 1)) if mv == "direct" else (lambda q: q["n"])
                eff = f"{(work(r) / r['seconds_per_matvec']) / (r['ranks'] * work(t1) / t1['seconds_per_matvec']):.2f}"
            print(f"| | {r['ranks']} | {r['n']} | {mv} | {r['seconds_setup']:.3g} | {r['seconds_solve']:.4g} | {r['iterations']} | {r['seconds_per_matvec']:.4g} | {eff} | {r['residual_rel']:.2g} |")
        print()
for backend in ("cpu", "gpu"):
    for kind in ("strong", "weak"):
        rs = sorted((r for r in rows if r["kind"] == kind and r["backend"] == backend),
                    key=lambda r: r["ranks"])
        if not rs:
            continue
        # Efficiency: pairs/s per rank against one rank (for the O(N²) sum a weak-scaling run
        # does P times the pairs per rank, so its time is not the measure).
        # Workers: ranks on the CPU (one thread each), GPUs on the GPU (ranks × GPUs per rank).
        units = lambda r: r["ranks"] * max(1, r.get("gpus_per_rank", 0))
        rs.sort(key=lambda r: (units(r), r["ranks"]))
        t1 = next((r["pairs_per_second"] for r in rs if units(r) == 1), None)
        print(f"| {backend} {kind} | ranks | GPUs per rank | N | time [s] | pairs/s | speed-up | efficiency | longest wait [s] |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rs:
            su = "" if t1 is None else f"{r['pairs_per_second'] / t1:.2f}"
            eff = "" if t1 is None else f"{r['pairs_per_second'] / (units(r) * t1):.2f}"
            g = r.get("gpus_per_rank", 0) or ""
            print(f"| | {r['ranks']} | {g} | {r['n']} | {r['seconds']:.4g} | {r['pairs_per_second']:.3g} | {su} | {eff} | {r['max_wait_seconds']:.3g} |")
        print()
for pts in ("slabs", "scattered"):
    rs = sorted((r for r in rows if r["kind"] == "tau-weak" and r["points"] == pts), key=lambda r: r["ranks"])
    if not rs:
        continue
    print(f"| tau, rows in {pts} | ranks | N | L-sets over the ranks [s] | all points gathered (forced) [s] | search received (most on a rank) | halo rows (most on a rank) | halo [s per call] | all-gather [s per call] | speed-up | difference |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rs:
        print(f"| | {r['ranks']} | {r['n']} | {r['seconds_lsets']:.3f}{' (gathered)' if r.get('lsets_gathered') else ''} | {r.get('seconds_lsets_forced_gather', 0):.3f} | {r.get('lset_search_received_max', 0):.0f} | {r['halo_rows_max']:.0f} | {r['seconds_tau_halo']:.4g} | {r['seconds_tau_allgather']:.4g} | {r['seconds_tau_allgather'] / r['seconds_tau_halo']:.2f} | {r['max_rel_difference']:.2g} |")
    print()
rs = sorted((r for r in rows if r["kind"] == "pum-weak"), key=lambda r: r["ranks"])
if rs:
    print("| PUM, LOOCV | ranks | N | partitioned: set-up [s] | evaluate [s] | points held (most on a rank) | patches received | halo rounds | replicated: set-up [s] | evaluate [s] | points held | values differing |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rs:
        print(f"| | {r['ranks']} | {r['n']} | {r['seconds_fit_partitioned']:.3f} | {r['seconds_evaluate_partitioned']:.3f} | {r['points_held_max']:.0f} | {r['patches_received_max']:.0f} | {r['halo_rounds']} | {r['seconds_fit_replicated']:.3f} | {r['seconds_evaluate_replicated']:.3f} | {r['n']} | {r['values_differing']:.0f} |")
    print()
PY
    echo "- distributed section: $(( $(date +%s) - t_di )) s"
  } >> "$summary"
  tar -C "$OUT" -czf "$OUT/distributed.tar.gz" distributed && rm -rf "$OUT/distributed"
fi

echo "- total: $(( $(date +%s) - t_start )) s" >> "$summary"
cat "$summary"
exit $rc
