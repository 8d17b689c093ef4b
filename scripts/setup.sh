#!/usr/bin/env bash
# Installs the Debian packages ksum builds against (idempotent; does nothing when all are present).
# Usage: scripts/setup.sh [--python]   (--python also installs numpy/scipy for the benchmark peers)
set -euo pipefail
pkgs=(cmake ninja-build g++ pkg-config libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev libgmock-dev
      libbenchmark-dev libeigen3-dev liblapacke-dev libopenblas-dev libpng-dev
      libgmsh-dev python3-gmsh)
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
if [ "${1:-}" = "--python" ]; then
  python3 -c 'import numpy, scipy' 2>/dev/null || python3 -m pip install -q numpy scipy
fi
echo "setup: all build dependencies present"
