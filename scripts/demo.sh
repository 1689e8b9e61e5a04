#!/usr/bin/env bash
# The main job: installs what is needed, builds, and runs the demo — a transformer block whose cpp
# codegen has a planted bug (exp is miscompiled: a subtly wrong value), run under the harness at
# the aot level, minified from the launcher it leaves, down to the one op that is wrong.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
root="$PWD"
exe="$root/build/reprokit"
run_dir="$root/demo-runs/$(date +%Y%m%d-%H%M%S)-$$"  # a new directory each run: nothing is overwritten
mkdir -p "$run_dir"
cd "$run_dir"
export REPRO_CACHE_DIR="$root/build/demo-cache"

echo
echo "== 1. Run the model under the harness (the planted bug: --inject exp:accuracy)"
echo "\$ REPRO_AFTER=aot REPRO_LEVEL=4 reprokit run examples/attention.rk --inject exp:accuracy"
set +e
REPRO_AFTER=aot REPRO_LEVEL=4 REPRO_DIR=reprokit_out "$exe" run "$root/examples/attention.rk" --inject exp:accuracy
status=$?
set -e
echo "(exit status $status: the accuracy check failed, as planted)"
bundle="$(ls -d reprokit_out/*/ | head -n 1)"
bundle="${bundle%/}"

echo
echo "== 2. The harness left a bundle and a launcher"
ls "$bundle"

echo
echo "== 3. Run the launcher: the minifier, with its progress"
echo "\$ $bundle/minifier_launcher"
"$bundle/minifier_launcher"

echo
echo "== 4. The minimal repro ($bundle/repro.rk)"
cat "$bundle/repro.rk"
echo
echo "== 5. Rerun it in a fresh process"
echo "\$ reprokit repro $bundle/repro.rk"
set +e
"$exe" repro "$bundle/repro.rk"
set -e
echo
echo "Files for the bug report are in $run_dir/$bundle"
