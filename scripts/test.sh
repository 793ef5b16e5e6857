#!/usr/bin/env bash
# The test command: installs NVRTC 13.0 from PyPI if no CUDA 13 is present (the kernel
# compile tests need it; no GPU needed), then runs every test of the workspace. GPU tests
# print SKIPPED unless MEMTUNE_GPU_TESTS=1.
#
#   scripts/test.sh [CARGO TEST ARGS]   the tests
#   scripts/test.sh --fresh             proves the README from a clean state: clones HEAD into
#                                       a temporary folder (empty target dir, no .cuda/) and runs
#                                       the README's two commands there as they stand
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if [[ "${1:-}" == "--fresh" ]]; then
    exec bash scripts/fresh-check.sh
fi

bash scripts/install-cuda.sh
cargo test --workspace --locked "$@"
