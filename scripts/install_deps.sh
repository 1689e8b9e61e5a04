#!/usr/bin/env bash
# Installs what reprokit needs from Debian's packages (run as root or with sudo available).
# libopenblas-dev: the cpp backend's generated code calls CBLAS; libopenblas0-pthread is the threaded
# OpenBLAS (Debian's torch otherwise falls back to the reference BLAS, 50x slower at matmul).
# libre2-dev: linear-time regular expressions (--fail-regex and failure signatures).
# slurmctld, slurmd, slurm-client, munge: the cluster tests start a single-node Slurm
# (scripts/slurm_local.sh; no daemon is started by installing them here).
# WITH_TORCH=1 also installs python3-torch (PyTorch 1.13: the independent numerics oracle of the
# tests, and with python3-torchvision and python3-onnx the exporter of the real ONNX models the
# tests import).
# Then the Python side (reprokit.torch, the inductor backend): a virtual environment in the
# checkout, .venv, with python/requirements.lock (PyTorch 2, CPU build). REPROKIT_PYTHON names
# another interpreter for reprokit to use instead; SKIP_VENV=1 leaves .venv alone.
set -euo pipefail
pkgs=(cmake g++ make git libboost1.81-dev libboost-filesystem1.81-dev libfmt-dev nlohmann-json3-dev libgtest-dev libonnx-dev libprotobuf-dev libonnx-testdata libopenblas-dev libopenblas0-pthread libre2-dev slurmctld slurmd slurm-client munge)
if [ "${WITH_TORCH:-0}" = 1 ]; then pkgs+=(python3 python3-numpy python3-torch python3-torchvision python3-onnx); fi
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: everything is already installed"
else
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  echo "install_deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# examples/ort_check (ONNX Runtime checked against reprokit's float64 reference) needs
# onnxruntime-node, at the version package-lock.json pins. Optional: without npm, or without the
# network, its tests skip. --ignore-scripts: the package's install script only fetches GPU
# binaries; the CPU ones ship in the package.
ort_check="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/examples/ort_check"
if [ -d "$ort_check/node_modules/onnxruntime-node" ]; then
  echo "install_deps: onnxruntime-node is already installed in examples/ort_check"
elif ! command -v npm >/dev/null 2>&1; then
  echo "install_deps: npm not found: skipping onnxruntime-node (examples/ort_check and its tests need it)"
elif (cd "$ort_check" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error); then
  echo "install_deps: installed onnxruntime-node in examples/ort_check"
else
  echo "install_deps: warning: npm could not install onnxruntime-node in examples/ort_check; its tests will skip" >&2
fi

# The virtual environment of the Python side, from the pinned lock file. Rebuilt only when the lock
# file changed since it was made (its copy inside .venv says which it was made from).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
lock="$root/python/requirements.lock"
if [ "${SKIP_VENV:-0}" = 1 ]; then
  echo "install_deps: SKIP_VENV=1: leaving $venv alone"
elif [ -x "$venv/bin/python" ] && cmp -s "$lock" "$venv/requirements.lock"; then
  echo "install_deps: $venv is up to date with python/requirements.lock"
else
  python="${REPROKIT_VENV_PYTHON:-python3}"
  echo "install_deps: making $venv with $("$python" --version 2>&1) from python/requirements.lock"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --no-deps --disable-pip-version-check -r "$lock" 2>&1 | grep -v "^WARNING: Location" || true
  "$venv/bin/python" -c "import torch, numpy, pytest" || { echo "install_deps: the virtual environment $venv is incomplete" >&2; exit 1; }
  cp "$lock" "$venv/requirements.lock"
  echo "install_deps: $venv has torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)')"
fi
