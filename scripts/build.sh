#!/usr/bin/env bash
# Configures and builds reprokit into ./build (Release with debug info; every target).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
