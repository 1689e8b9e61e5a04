#!/usr/bin/env bash
# Runs pytest files of python/tests with reprokit's Python side (ctest runs it per file: the
# python.* tests). The interpreter is $REPROKIT_PYTHON, else the checkout's .venv
# (scripts/install_deps.sh). Exit 77 (ctest: skipped) with the reason where it has no torch 2.
#   bash scripts/python_tests.sh python/tests/test_capture.py [PYTEST ARGS...]
set -uo pipefail
cd "$(dirname "$0")/.."
python="${REPROKIT_PYTHON:-$PWD/.venv/bin/python}"
if [ ! -x "$python" ]; then
  echo "python_tests: skipped: no $python (scripts/install_deps.sh makes .venv; REPROKIT_PYTHON names another)"
  exit 77
fi
if ! why=$("$python" -c 'import torch, pytest, numpy; assert int(torch.__version__.split(".")[0]) >= 2, "torch " + torch.__version__ + " has no torch.compile"' 2>&1); then
  echo "python_tests: skipped: $python cannot run these tests: $(echo "$why" | tail -1)"
  exit 77
fi
# A base directory of this run's own: ctest runs several files at once, and pytest's shared
# numbered directories under /tmp/pytest-of-USER are pruned by whichever session starts next.
base="$(mktemp -d "${TMPDIR:-/tmp}/rk_pytest_XXXXXX")"
"$python" -m pytest -q -p no:cacheprovider --basetemp="$base/t" "$@"
status=$?
if [ "$status" = 0 ]; then rm -rf "$base"; else echo "python_tests: the tests' files are kept in $base"; fi
# pytest's 5: no test ran, which is a failure here, not a skip.
exit $status
