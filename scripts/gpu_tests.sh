#!/usr/bin/env bash
# Runs the tests that launch CUDA kernels (they skip on a machine without a GPU) from a build
# directory: the cuda backend against the reference (every op, the example models, the kernel
# shapes, --train graphs), injected faults, the minifier end to end with --backend cuda, and
# `reprokit analyze --triangulate` pinning a planted bug on cpp or on cuda.
# Usage: scripts/gpu_tests.sh [BUILD_DIR]   (default: build). Exits non-zero if any test failed.
set -uo pipefail
build="${1:-build}"
status=0
"$build/test_codegen" --gtest_filter='CudaBackend.*:CudaOnTheGpu*:Shapes/CudaKernelShapes.*:CppKernelShapesTrain.*' || status=1
"$build/test_minifier" --gtest_filter='Kinds/MinifyKindsOnTheGpu.*' || status=1
"$build/test_harness" --gtest_filter='Backends/Triangulate.*' || status=1
exit $status
