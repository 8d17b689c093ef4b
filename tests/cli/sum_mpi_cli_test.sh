#!/usr/bin/env bash
# `mpirun -n P ksum sum` (issue 25) against `ksum sum` in one process: the same output file to
# rounding for P = 2, 3, 4 (self-sum; separate targets with two right-hand sides and the gradient),
# `mpirun -n P ksum interpolate --method pum` (P = 2, 3) the identical file, `--method global`
# (FGP and GMRES; the data rows sent in Morton order) the one-process file to the solver's
# tolerance, identical data points named by their rows in the file,
# `--method fmm` (P = 2, 3; self-sum and separate targets) the direct sum to the tolerance, and
# the errors every rank agrees on (a missing input, an existing output, the FGT or the FMM with the
# gradient under mpirun)
# printed once, with a non-zero exit and the existing output left as it was. Every mpirun runs
# under a timeout: a hang is a failure.
#   sum_mpi_cli_test.sh KSUM MPIEXEC
set -euo pipefail
K=$1
MPI=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1
points() { awk -v n="$1" -v seed="$2" -v d="$3" -v off="$4" 'BEGIN { srand(seed);
  for (i = 0; i < n; i++) { line = ""; for (k = 0; k < d; k++) line = line (k ? "," : "") sprintf("%.17g", rand() - off); print line } }'; }
points 500 3 3 0 > p.csv
points 500 4 2 0.5 > q.csv
points 123 5 3 0.2 > t.csv
fail=0
# max |a − b| / max |a| over two CSV files with a header line.
compare() {
  # A value that is not a finite number (nan, inf) fails: awk would read it as 0.
  paste -d, "$1" "$2" | awk -F, -v tol="$3" -v what="$4" 'NR > 1 { h = NF / 2;
    for (k = 1; k <= 2 * h; k++) if ($k !~ /^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$/) bad = bad " " $k;
    for (k = 1; k <= h; k++) { a = $k; b = $(k + h); d = a - b; if (d < 0) d = -d; if (a < 0) a = -a;
      if (d > dm) dm = d; if (a > am) am = a } }
    END { r = am > 0 ? dm / am : dm; printf "%s: max relative difference %.3g\n", what, r;
      if (NR < 2 || r > tol || bad != "") { print "FAILED: " what bad; exit 1 } }' || fail=1
}
"$K" -q sum --kernel laplace --sources p.csv --weights q.csv --backend cpu -o u1.csv
"$K" -q sum --kernel gaussian --eps 3 --gradient --sources p.csv --targets t.csv --weights q.csv \
  --backend cpu -o g1.csv
for P in 2 3 4; do
  timeout 60 "$MPI" -n $P --oversubscribe "$K" -q sum --kernel laplace --sources p.csv \
    --weights q.csv --backend cpu -o u$P.csv || { echo "FAILED: mpirun -n $P (rc $?)"; fail=1; }
  compare u1.csv u$P.csv 1e-12 "laplace self-sum, $P ranks"
done
timeout 60 "$MPI" -n 3 --oversubscribe "$K" -q sum --kernel gaussian --eps 3 --gradient \
  --sources p.csv --targets t.csv --weights q.csv --backend cpu -o g3.csv ||
  { echo "FAILED: mpirun -n 3 gaussian"; fail=1; }
compare g1.csv g3.csv 1e-12 "gaussian, targets, 2 rhs and the gradient, 3 ranks"
# An error every rank agrees on: non-zero exit, the message once.
expect_error() {
  local what=$1 text=$2
  shift 2
  local rc=0
  timeout 60 "$@" > out.txt 2> err.txt || rc=$?
  local times
  times=$(grep -c -- "$text" err.txt || true)
  if [[ $rc -eq 0 || $rc -eq 124 || $times -ne 1 ]]; then
    echo "FAILED: $what: rc $rc, '$text' printed $times times:"
    cat err.txt
    fail=1
  else
    echo "$what: rc $rc, one message"
  fi
}
expect_error "missing input" "nope.csv" "$MPI" -n 3 --oversubscribe "$K" sum --kernel laplace \
  --sources nope.csv --weights q.csv -o x.csv
cp u3.csv keep.csv
expect_error "existing output" "file exists" "$MPI" -n 3 --oversubscribe "$K" sum \
  --kernel laplace --sources p.csv --weights q.csv -o u3.csv
cmp -s keep.csv u3.csv || { echo "FAILED: the existing output was changed"; fail=1; }
expect_error "fgt under mpirun" "run it without mpirun" "$MPI" -n 2 --oversubscribe "$K" sum \
  --kernel gaussian --method fgt --sources p.csv --weights q.csv -o x.csv
expect_error "fmm with the gradient under mpirun" "no --gradient" "$MPI" -n 2 --oversubscribe \
  "$K" sum --kernel laplace --method fmm --gradient --sources p.csv --targets t.csv \
  --weights q.csv -o x.csv
# --method fmm over ranks (Morton partition, essential trees): the direct sum to the tolerance.
points 3000 6 3 0 > big.csv
points 3000 7 1 0.5 > bigw.csv
"$K" -q sum --kernel laplace --sources big.csv --weights bigw.csv --backend cpu -o fd.csv
for P in 2 3; do
  timeout 60 "$MPI" -n $P --oversubscribe "$K" -q sum --kernel laplace --method fmm --tol 1e-6 \
    --sources big.csv --weights bigw.csv --backend cpu -o f$P.csv ||
    { echo "FAILED: fmm, $P ranks"; fail=1; }
  compare fd.csv f$P.csv 1e-5 "laplace fmm to 1e-6, $P ranks (max relative difference)"
done
# Separate targets: 1,500 in [-0.25, 0.75)³, partly outside the sources' cube.
points 1500 8 3 0.25 > bigt.csv
"$K" -q sum --kernel laplace --sources big.csv --targets bigt.csv --weights bigw.csv --backend cpu \
  -o ftd.csv
for P in 2 3; do
  timeout 60 "$MPI" -n $P --oversubscribe "$K" -q sum --kernel laplace --method fmm --tol 1e-6 \
    --sources big.csv --targets bigt.csv --weights bigw.csv --backend cpu -o ft$P.csv ||
    { echo "FAILED: fmm with targets, $P ranks"; fail=1; }
  compare ftd.csv ft$P.csv 1e-5 "laplace fmm with separate targets to 1e-6, $P ranks"
done
[[ ! -e x.csv ]] || { echo "FAILED: x.csv written"; fail=1; }
# ksum interpolate --method pum: the ranks share the fits, the output is the one-process file.
"$K" -q interpolate --method pum --data p.csv --grid 30x20 --eps loocv -o i1.csv
for P in 2 3; do
  timeout 60 "$MPI" -n $P --oversubscribe "$K" -q interpolate --method pum --data p.csv \
    --grid 30x20 --eps loocv -o i$P.csv || { echo "FAILED: interpolate, $P ranks"; fail=1; }
  if cmp -s i1.csv i$P.csv; then echo "interpolate pum, $P ranks: the same file"; else
    echo "FAILED: interpolate pum, $P ranks: the output differs"; fail=1; fi
done
# ksum interpolate --method global: FGP and GMRES with rows spread over the ranks, the output the
# one-process file to the solver's tolerance (two solves to 1e-10 of one system; bound 1e-7).
for solver in fgp krylov; do
  "$K" -q interpolate --method global --solver $solver --tol 1e-10 --eps 40 --data p.csv \
    --grid 12x9 -o g1$solver.csv
  for P in 2 3; do
    timeout 60 "$MPI" -n $P --oversubscribe "$K" -q interpolate --method global --solver $solver \
      --tol 1e-10 --eps 40 --data p.csv --grid 12x9 -o g$P$solver.csv ||
      { echo "FAILED: interpolate global $solver, $P ranks"; fail=1; }
    compare g1$solver.csv g$P$solver.csv 1e-7 "interpolate global $solver, $P ranks"
  done
done
# Rank 0 sends the data rows in Morton order; an identical pair is still named by its rows in the
# file (17 and 500: row 17 again at the end).
{ cat p.csv; sed -n 18p p.csv; } > dup.csv
expect_error "interpolate global, identical points under mpirun" \
  "data points 17 and 500 are identical" "$MPI" -n 2 --oversubscribe "$K" interpolate \
  --method global --data dup.csv --grid 10x10 -o x.csv
expect_error "interpolate global, dense solver under mpirun" "not distributed" "$MPI" -n 2 \
  --oversubscribe "$K" interpolate --method global --solver dense --data p.csv --grid 10x10 \
  -o x.csv
expect_error "kde under mpirun" "does not run over MPI ranks" "$MPI" -n 2 --oversubscribe \
  "$K" kde --data p.csv --grid 10 -o x.csv
[[ ! -e x.csv ]] || { echo "FAILED: x.csv written"; fail=1; }
exit $fail
