#!/usr/bin/env bash
# One command from a fresh clone to a running demo: installs what is missing, configures (CUDA when
# nvcc is found), builds the ksum command and runs `ksum demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default --target ksum_cli
build/default/apps/ksum/ksum demo "$@"
