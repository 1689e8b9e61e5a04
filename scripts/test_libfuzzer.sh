#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer) of the readers of untrusted files: the .rk parser, the ONNX
# importer (ONNX's checker in its child), .npy, bundle manifests, minify/reduce state.json and
# campaign state.json (tests/libfuzzer/README.md). Builds the targets with clang, ASan and UBSan
# into ./build-libfuzzer and runs each for FUZZ_SECONDS (default 20; .ci/run uses the default,
# longer runs are on demand) from build-libfuzzer/corpus/<target>, seeded on the first run. A crash,
# a leak, a sanitizer report, an input slower than 20 s or a violated round trip fails the run;
# the input is saved as build-libfuzzer/findings/<target>-crash-... (rerun: build-libfuzzer/<target> FILE).
#   FUZZ_SECONDS=600 bash scripts/test_libfuzzer.sh [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-20}"
# clang, and libclang-rt-14-dev: Debian 12 ships libFuzzer and the sanitizer runtimes apart from
# the compiler, and without them the fuzz targets do not link.
missing=()
for p in clang libclang-rt-14-dev; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -ne 0 ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  echo "test_libfuzzer: installing ${missing[*]} (libFuzzer and the sanitizer runtimes)"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/libfuzzer/*_fuzzer.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi
cmake -S . -B build-libfuzzer -DCMAKE_CXX_COMPILER=clang++ -DREPROKIT_LIBFUZZER=ON -DREPROKIT_BUILD_TESTS=OFF \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" >/dev/null
# reprokit too: the ONNX importer runs ONNX's checker in a reprokit child (REPROKIT_EXE).
cmake --build build-libfuzzer -j"$(nproc)" --target reprokit "${targets[@]}"
cd build-libfuzzer
mkdir -p corpus findings logs
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=()
printf '%-24s %10s %10s %8s %8s  %s\n' target runs exec/s corpus cov result
for t in "${targets[@]}"; do
  log="logs/$t.log"
  status=0
  "./$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
         -artifact_prefix="findings/$t-" "corpus/$t" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  result="ok"
  if [ "$status" != 0 ]; then
    result="FAILED (exit $status; see build-libfuzzer/$log)"
    failed+=("$t")
  fi
  printf '%-24s %10s %10s %8s %8s  %s\n' "$t" "${runs:-?}" "${speed:-?}" "$(ls "corpus/$t" | wc -l)" "${cov:-?}" "$result"
done
if [ ${#failed[@]} -ne 0 ]; then
  for t in "${failed[@]}"; do echo "---- $t"; grep -m1 -A30 -E 'ERROR:|\*\*\* property|deadly signal|uncaught|runtime error' "logs/$t.log" || tail -30 "logs/$t.log"; done
  echo "test_libfuzzer: findings in: ${failed[*]} (inputs in build-libfuzzer/findings/)" >&2
  exit 1
fi
echo "test_libfuzzer: no findings in ${#targets[@]} targets, ${seconds} s each"
