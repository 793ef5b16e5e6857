#!/usr/bin/env bash
# Kernel-structure experiments (scripts/explore/kernels.cu) on the GPU machine: builds with
# the machine's nvcc for sm_90 and runs the stencil, pinned-atomic, sampling and zero-copy sampling suites.
# Usage (on the GPU machine): bash scripts/explore-kernels.sh OUTDIR [stencil|atomics|sampling|pinned]
set -euo pipefail
out="${1:?usage: scripts/explore-kernels.sh OUTDIR [suite]}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$out"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
"$nvcc" -arch=sm_90 -O3 -std=c++17 -Xptxas -v -o "$out/explore-kernels" \
    "$root/scripts/explore/kernels.cu" >"$out/build.log" 2>&1
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/device.txt"
"$out/explore-kernels" ${2:-} 2>&1 | tee "$out/explore-kernels.txt"
