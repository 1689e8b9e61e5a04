#!/usr/bin/env bash
# Installs everything (python3-torch too), builds, and runs the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_TORCH=1 bash scripts/install_deps.sh
bash scripts/build.sh
cd build
# Tests share one compile cache for generated code, inside the build tree.
export REPRO_CACHE_DIR="$PWD/test-cache"
# Inductor's generated code too (python.* and the inductor backend), not under /tmp where
# nothing removes it.
export TORCHINDUCTOR_CACHE_DIR="$PWD/inductor-cache"
ctest --output-on-failure -j"$(nproc)" --timeout 600
