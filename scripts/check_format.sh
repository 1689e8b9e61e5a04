#!/usr/bin/env bash
# Checks that the C++ sources are formatted as .clang-format says (a 150-column budget among the
# rest), with Debian 12's clang-format 14: another version may wrap some lines differently.
# .ci/run runs it first; `bash scripts/check_format.sh --fix` reformats the files in place.
set -euo pipefail
cd "$(dirname "$0")/.."
tool=clang-format-14
if ! command -v "$tool" >/dev/null; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  echo "check_format: installing $tool"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$tool" >/dev/null
fi
mapfile -t files < <(git ls-files 'src/*.cpp' 'src/*.h' 'include/*.h' 'tests/*.cpp' 'tests/*.h' 'bench/*.cpp' 'bench/*.h' \
                                  'examples/*.cpp' 'examples/*.h' 'repro_templates/*.h')
if [ "${1:-}" = --fix ]; then
  "$tool" -i "${files[@]}"
  exit 0
fi
if ! "$tool" --dry-run --Werror "${files[@]}"; then
  echo "check_format: the files above are not formatted as .clang-format says (bash scripts/check_format.sh --fix)"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
