#!/usr/bin/env bash
# Builds reprokit with AddressSanitizer and UndefinedBehaviorSanitizer into ./build-asan and runs
# the test suite there (.ci/run runs it after the plain suite). Any sanitizer report fails the run.
#
# Left to the plain suite, to keep .ci/run inside CI's 90 minutes on 2 cores (ASan multiplies
# their time by 3-6, and together they were 62% of this stage's test time, ~1,600 s):
# - fuzz.*: they cap each child's address space, which ASan's shadow memory cannot live with;
# - the python.* files but onnx_worker: their time is in the compilers they drive (Inductor, TVM,
#   IREE, OpenVINO) and in the interpreter; the C++ they reach (the worker protocol, its arrays,
#   bisect over a compiler's switches, the reproducers) runs here in the OnnxWorkerBackend,
#   *Switches and CompilerReproducer tests and in python.onnx_worker;
# - onnx.conformance: ONNX's node tests through eager and cpp (the importer runs under ASan in
#   the ONNX tests here and in the libFuzzer stage);
# - the resnet18, squeezenet1_0 and mobilenet_v2 training comparisons and the resnet18 accuracy
#   minifications: their time is the float64 reference convolution on 224x224 images, code the
#   runtime and minifier tests here cover on small shapes (the same models' inference and crash
#   minifications, and vit_small's training, stay).
# Line tables only (-g1): enough for every sanitizer report's file:line, and a faster build.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE= -DREPROKIT_SANITIZE=ON -DREPROKIT_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS="-O1 -g1" >/dev/null
cmake --build build-asan -j"$(nproc)"
cd build-asan
export REPRO_CACHE_DIR="$PWD/test-cache"
# Inductor's generated code too (python.* and the inductor backend), not under /tmp where
# nothing removes it.
export TORCHINDUCTOR_CACHE_DIR="$PWD/inductor-cache"
# handle_segv=0: an injected crash must reach the process as SIGSEGV (the harness records it).
export ASAN_OPTIONS="detect_leaks=1:handle_segv=0:handle_abort=0:abort_on_error=0:exitcode=86"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=87"
export LSAN_OPTIONS="suppressions=$PWD/../scripts/lsan.supp"
plain_only='^fuzz\.|^python\.(backend|capture|levels|minify|onnx_backends)$|^onnx\.conformance$|TrainsThroughCppLikeEager/(resnet18|squeezenet1_0|mobilenet_v2|lraspp_mobilenet_v3_large)( |$)|RealModelMinify\.MinifiesToOneNodeOfTheInjectedOp/resnet18_conv2d_accuracy_'
ctest --output-on-failure -j"$(nproc)" --timeout 900 -E "$plain_only"
