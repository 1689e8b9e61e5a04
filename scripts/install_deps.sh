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
if [ ${#missing[@]} -eq 0 ]; then echo "install_deps: everything is already installed"; exit 0; fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
echo "install_deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
