#!/usr/bin/env bash
# The GPU side of the 2026-11-27 user-kernel run (benchmarks/results/h100/README.md): the
# release builds of cargo-tune, user-gather, user-histogram and user-stencil, stripped and
# xz-packed beside this script with a COMMIT file, carried with the device tool; run there
# as `bash run.sh`.
# A first probe (skipped where MEMTUNE_CACHE_DIR, default /tmp/mt, already holds this GPU's
# profile, as after probe/run.sh's bench mode with MEMTUNE_CACHE_DIR=/tmp/mt-1), then the
# three user-kernel examples' benches on its profile, each step within STEP_LIMIT seconds (600).
set -u
B="$(cd "$(dirname "$0")" && pwd)"
for x in "$B"/*.xz; do [ -x "${x%.xz}" ] || xz -dk "$x"; chmod +x "${x%.xz}"; done
O="$OUT/r"; mkdir -p "$O"; H="$O/head.txt"
export MEMTUNE_CACHE_DIR="${MEMTUNE_CACHE_DIR:-/tmp/mt}"
{ echo "commit $(cat "$B/COMMIT")"; date -u; nvidia-smi --query-gpu=name,uuid,driver_version --format=csv; } > "$H"
step() { local name=$1; shift; local s=$(date +%s%N); timeout "${STEP_LIMIT:-600}" "$@" > "$O/$name.out" 2> "$O/$name.err"; echo "$name rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> "$H"; }
ls "$MEMTUNE_CACHE_DIR"/GPU-*.json >/dev/null 2>&1 || step probe "$B/cargo-tune" --json
cp "$MEMTUNE_CACHE_DIR"/GPU-*.json "$O/profile.json"
step gather-device "$B/user-gather" --bench --memory device --json "$O/gather-device.json"
step gather-pinned "$B/user-gather" --bench --memory pinned --json "$O/gather-pinned.json"
step histogram-device "$B/user-histogram" --bench --memory device --json "$O/histogram-device.json"
step histogram-pinned "$B/user-histogram" --bench --memory pinned --json "$O/histogram-pinned.json"
step stencil "$B/user-stencil" --bench --json "$O/stencil.json"
cat "$H"
cd "$OUT" && tar czf r.tgz r && rm -rf r
