#!/usr/bin/env bash
# One command from a fresh clone to every test run: installs what is missing, configures (CUDA when
# nvcc is found: then the CUDA code is compiled too, and GPU tests skip where no GPU is visible),
# builds everything and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default
ctest --preset default -j "$(nproc)"
