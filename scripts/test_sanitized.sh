#!/usr/bin/env bash
# Builds reprokit with AddressSanitizer and UndefinedBehaviorSanitizer into ./build-asan and runs
# the whole test suite there (.ci/run runs it after the plain suite). Any sanitizer report
# fails the run. The fuzz tests run in the plain suite only: they cap each child's address space,
# which ASan's shadow memory cannot live with.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DREPROKIT_SANITIZE=ON -DCMAKE_CXX_FLAGS="-O1" >/dev/null
cmake --build build-asan -j"$(nproc)"
cd build-asan
export REPRO_CACHE_DIR="$PWD/test-cache"
# handle_segv=0: an injected crash must reach the process as SIGSEGV (the harness records it).
export ASAN_OPTIONS="detect_leaks=1:handle_segv=0:handle_abort=0:abort_on_error=0:exitcode=86"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=87"
export LSAN_OPTIONS="suppressions=$PWD/../scripts/lsan.supp"
ctest --output-on-failure -j"$(nproc)" --timeout 900 -E '^fuzz\.'
