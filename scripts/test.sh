#!/usr/bin/env bash
# The test command: installs NVRTC 13.0 from PyPI if no CUDA 13 is present (the kernel
# compile test needs it; no GPU needed), then runs every test of the workspace. GPU tests
# print SKIPPED unless MEMTUNE_GPU_TESTS=1.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/install-cuda.sh
cargo test --workspace --locked "$@"
