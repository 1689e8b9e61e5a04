#!/usr/bin/env bash
# Builds reprokit with AddressSanitizer and UndefinedBehaviorSanitizer into ./build-asan and runs
# the unit tests of its layers there. Any sanitizer report fails the run. It runs on demand, not
# in .ci/run (see there).
#
# What runs here: the tests of the process, ir, runtime, aot, onnx and codegen layers and of the
# minifier's engine and strategies, in process, where a memory error or undefined behaviour of
# reprokit's own C++ shows at its line. The readers of untrusted files run under the same
# sanitizers in the libFuzzer stage too.
#
# Left to the plain suite: the end-to-end tests, whose time is outside reprokit's C++: the command line in child processes
# (harness, capture, campaign, cluster, the minifier's runs of bundles), real models (float64
# references on 224x224 images), PyTorch as an oracle, the Python compilers (python.*), g++
# compiling generated code (CppBackend, CppKernelShapes), ONNX's conformance suite and fuzz.*
# (which caps each child's address space, which ASan's shadow memory cannot live with).
# Line tables only (-g1): enough for every sanitizer report's file:line, and a faster build.
#   bash scripts/test_sanitized.sh [CTEST ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
binaries=(test_process test_ir test_runtime test_aot test_onnx test_codegen test_minifier)
# Suites of those binaries that are end-to-end (see above).
end_to_end=(TorchOracle TorchAutograd OnnxCli OnnxRealModel CppBackend CppKernelShapes CppKernelShapesTrain CudaBackend CudaOnTheGpu
            CudaOnTheGpuDeathTest CudaKernelShapes LeftoverProcesses Minify MinifySignatures MinifySmallest MinifyUntrusted
            MinifyKinds MinifyKindsOnTheGpu Reduce TimeLimit Session)
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE= -DREPROKIT_SANITIZE=ON -DREPROKIT_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS="-O1 -g1" >/dev/null
cmake --build build-asan -j"$(nproc)" --target reprokit "${binaries[@]}"
cd build-asan
export REPRO_CACHE_DIR="$PWD/test-cache"
# handle_segv=0: an injected crash must reach the process as SIGSEGV (the harness records it).
export ASAN_OPTIONS="detect_leaks=1:handle_segv=0:handle_abort=0:abort_on_error=0:exitcode=86"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=87"
export LSAN_OPTIONS="suppressions=$PWD/../scripts/lsan.supp"
# The binaries' tests (ctest names them "Suite.Test" or "Prefix/Suite.Test/param"), then the
# end-to-end suites among them left out.
suites=$(for b in "${binaries[@]}"; do "./$b" --gtest_list_tests | grep -E '^[A-Za-z0-9_/]+\.$' | sed 's/\.$//'; done | sort -u)
run=()
for s in $suites; do
  name="${s##*/}"
  skip=0
  for e in "${end_to_end[@]}"; do [ "$name" = "$e" ] && skip=1; done
  [ $skip = 0 ] && run+=("$s")
done
include="^($(printf '%s|' "${run[@]}" | sed 's/|$//'))\\."
ctest --output-on-failure -j"$(nproc)" --timeout 900 -R "$include" "$@"
