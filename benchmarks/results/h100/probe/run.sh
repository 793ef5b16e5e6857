#!/usr/bin/env bash
# The GPU side of the 2026-11-27 probe and bench runs (benchmarks/results/h100/README.md).
# Build here: `cargo build --release -p cargo-tune`, copy target/release/cargo-tune (stripped,
# xz-packed) and a COMMIT file beside this script in a git-ignored folder, carry it with the
# device tool, and run there:
#   MODE=probes [WORKLOADS="stencil sampling"] bash run.sh
#       three `cargo tune --json` in a row sharing one MEMTUNE_CACHE_DIR (as a user running
#       it three times: each probe checks its pinned and managed levels against the one
#       before), each followed by `cargo tune show`, then a `--quick` probe; then the benches
#       named, on the third probe's profile
#   MODE=bench WORKLOADS="stencil sampling" GROUPING="device pinned" [GCASE=TEXT] [GSIZES=2GiB,12GiB]
#     [BIG=16GiB,32GiB] [REUSE=1] bash run.sh
#       `cargo tune bench` of each workload (probing first where this machine has no profile),
#       then with REUSE=1 `cargo tune bench reuse` (10^8 references over 10^7 items); GCASE
#       and GSIZES pass `--case` and `--sizes` to the grouping benches
# LIMIT (seconds, default 300) bounds each bench. Outputs are packed into $OUT/r-$MODE.tgz.
set -u
B="$(cd "$(dirname "$0")" && pwd)"
[ -x "$B/cargo-tune" ] || xz -dk "$B/cargo-tune.xz"; chmod +x "$B/cargo-tune"
T="$B/cargo-tune"; O="$OUT/r"; mkdir -p "$O"
H="$O/head-${MODE}.txt"
{ echo "commit $(cat "$B/COMMIT")"; date -u; nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,memory.used --format=csv; free -g | head -2; } > "$H"
step() { local name=$1; shift; local s=$(date +%s%N); "$@" > "$O/$name.out" 2> "$O/$name.err"; local rc=$?; echo "$name rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms" >> "$H"; }
mkdir -p /tmp/kcache
if [ "$MODE" = probes ]; then
  mkdir -p /tmp/mt; ln -sfn /tmp/kcache /tmp/mt/kernels
  for i in 1 2 3; do
    step probe-$i env MEMTUNE_CACHE_DIR=/tmp/mt "$T" --json
    step show-$i env MEMTUNE_CACHE_DIR=/tmp/mt "$T" show
    cp /tmp/mt/GPU-*.json "$O/profile-$i.json"
  done
  mkdir -p /tmp/mt-q; ln -sfn /tmp/kcache /tmp/mt-q/kernels
  step quick env MEMTUNE_CACHE_DIR=/tmp/mt-q "$T" --quick --json
  step show-q env MEMTUNE_CACHE_DIR=/tmp/mt-q "$T" show
  [ -n "${WORKLOADS:-}" ] && for w in $WORKLOADS; do MEMTUNE_CACHE_DIR=/tmp/mt step bench-$w timeout ${LIMIT:-300} "$T" bench $w --json --out "$O/bench-$w"; done
else
  export MEMTUNE_CACHE_DIR=/tmp/mt-1
  if ! ls /tmp/mt-1/GPU-*.json >/dev/null 2>&1; then mkdir -p /tmp/mt-1; ln -sfn /tmp/kcache /tmp/mt-1/kernels; step probe-b "$T" --json; cp /tmp/mt-1/GPU-*.json "$O/profile-b.json"; fi
  for w in ${WORKLOADS-stencil sampling}; do step bench-$w timeout ${LIMIT:-300} "$T" bench $w --json --out "$O/bench-$w"; done
  [ -n "${GROUPING:-}" ] && for m in $GROUPING; do step bench-grouping-$m timeout ${LIMIT:-300} "$T" bench grouping --memory $m ${GCASE:+--case "$GCASE"} ${GSIZES:+--sizes "$GSIZES"} --json --out "$O/bench-grouping-$m"; done
  [ -n "${REUSE:-}" ] && step bench-reuse timeout ${LIMIT:-300} "$T" bench reuse --json --out "$O/bench-reuse"
  [ -n "${BIG:-}" ] && step bench-sampling-big timeout ${LIMIT:-300} "$T" bench sampling --memory pinned --sizes "$BIG" --json --out "$O/bench-sampling-big"
fi
cat "$H"; grep -h "s)$" "$O"/*.err | head -20
cd "$OUT" && tar czf r-$MODE.tgz r && rm -rf r
