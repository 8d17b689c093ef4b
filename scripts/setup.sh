#!/usr/bin/env bash
# Installs the Debian packages ksum builds against (idempotent; does nothing when all are present).
# Usage: scripts/setup.sh [--python]
# Always: the Debian packages, and the Python packages the Python module builds and tests with
# (nanobind, numpy, scipy, pytest; pip, user-level where not root). --python: also the benchmark
# peers' extras (none beyond those today; kept for older callers).
set -euo pipefail
pkgs=(cmake ninja-build g++ pkg-config libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev libgmock-dev
      libbenchmark-dev libeigen3-dev liblapacke-dev libopenblas-dev libpng-dev
      libgmsh-dev python3-gmsh python3-dev python3-pip libopenmpi-dev openmpi-bin)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The Python module (python/): nanobind to build it, NumPy to use it, SciPy, pytest and mpi4py (the
# DistributedSum test with mpi4py's communicator) to test it.
if ! python3 -c 'import nanobind, numpy, scipy, pytest, mpi4py' 2>/dev/null; then
  echo "setup: installing Python packages nanobind numpy scipy pytest mpi4py (pip)"
  pip_user=""
  [ "$(id -u)" -eq 0 ] || pip_user="--user"
  py_pkgs=("nanobind>=2.4" numpy scipy pytest mpi4py)
  # A distribution's own python3 (PEP 668) refuses pip unless told that this is wanted.
  python3 -m pip install -q $pip_user --disable-pip-version-check "${py_pkgs[@]}" 2>/dev/null ||
    python3 -m pip install -q $pip_user --disable-pip-version-check --break-system-packages \
      "${py_pkgs[@]}"
fi
echo "setup: all build dependencies present"
