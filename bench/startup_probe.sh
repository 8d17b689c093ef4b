#!/usr/bin/env bash
# Where a ksum process's start goes before main(): the start of an empty program linked with each
# of the libraries ksum links (one at a time, forced in with --no-as-needed), best of 7, against
# `ksum --version`. Usage: bench/startup_probe.sh path/to/ksum [cuda-root]
set -euo pipefail
ksum=${1:?usage: bench/startup_probe.sh path/to/ksum [cuda-root]}
cuda=${2:-/usr/local/cuda}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo 'int main(void) { return 0; }' > "$tmp/empty.c"
best() { # best wall time of 7 runs of "$@", in ms
  python3 -c '
import subprocess, sys, time
best = float("inf")
for _ in range(7):
    t0 = time.perf_counter()
    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    best = min(best, time.perf_counter() - t0)
print(f"{best * 1000:.1f}")' "$@"
}
echo "| linked | start [ms] |"
echo "|---|---|"
for libs in "" "-lcudart" "-lcublas" "-lcublasLt" "-lcusolver" "-lcusparse" "-lnvJitLink" \
  "-lmpi" "-lopenblas" "-llapacke" "-lgomp" \
  "-lcudart -lcublas -lcublasLt -lcusolver -lcusparse -lnvJitLink -lmpi -lopenblas -llapacke -lgomp -lpng16 -lfmt"; do
  name=$(echo "${libs:-none}" | tr ' ' '_')
  if gcc "$tmp/empty.c" -o "$tmp/$name" -L"$cuda/lib64" -L"$cuda/lib64/stubs" -Wl,-rpath,"$cuda/lib64" \
    -Wl,--no-as-needed $libs 2> "$tmp/err"; then
    echo "| ${libs:-nothing} | $(best "$tmp/$name") |"
  else
    echo "| ${libs:-nothing} | link failed: $(head -c 120 "$tmp/err" | tr '\n' ' ') |"
  fi
done
echo "| ksum --version | $(best "$ksum" --version) |"
