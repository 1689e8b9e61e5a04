#!/usr/bin/env bash
# Installs what reprokit needs from Debian's packages (run as root or with sudo available).
# libopenblas-dev: the cpp backend's generated code calls CBLAS; libopenblas0-pthread is the threaded
# OpenBLAS (Debian's torch otherwise falls back to the reference BLAS, 50x slower at matmul).
# libre2-dev: linear-time regular expressions (--fail-regex and failure signatures).
# slurmctld, slurmd, slurm-client, munge: the cluster tests start a single-node Slurm
# (scripts/slurm_local.sh; no daemon is started by installing them here).
# WITH_TORCH=1 also installs python3-torch (the independent numerics oracle used by tests) and
# python3-torchvision and python3-onnx (the real models the tests export).
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
