#!/usr/bin/env bash
# The user-kernel examples' benches on the profile run.sh's bench mode left in /tmp/mt-1.
set -u
B="$(cd "$(dirname "$0")" && pwd)"
for x in "$B"/user-*.xz; do [ -x "${x%.xz}" ] || xz -dk "$x"; chmod +x "${x%.xz}"; done
O="$OUT/uk"; mkdir -p "$O"; H="$O/head.txt"
export MEMTUNE_CACHE_DIR=/tmp/mt-1
{ echo "commit $(cat "$B/COMMIT")"; date -u; nvidia-smi --query-gpu=name,uuid,driver_version --format=csv; } > "$H"
step() { local name=$1; shift; local s=$(date +%s%N); timeout 120 "$@" > "$O/$name.out" 2> "$O/$name.err"; echo "$name rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> "$H"; }
step gather-device "$B/user-gather" --bench --memory device --json "$O/gather-device.json"
step gather-pinned "$B/user-gather" --bench --memory pinned --json "$O/gather-pinned.json"
step histogram-device "$B/user-histogram" --bench --memory device --json "$O/histogram-device.json"
step histogram-pinned "$B/user-histogram" --bench --memory pinned --json "$O/histogram-pinned.json"
step stencil "$B/user-stencil" --bench --json "$O/stencil.json"
cat "$H"
cd "$OUT" && tar czf uk.tgz uk && rm -rf uk
