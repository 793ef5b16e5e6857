#!/usr/bin/env bash
# exact-gpu: the radix-sort build (new) against the merge-sort one (prev), interleaved, on a
# 10^8-reference trace; then gpu_reuse (and gpu_hprda when bundled).
set -uo pipefail
b="$(cd "$(dirname "$0")" && pwd)"
cd "$b" && for f in *.xz t/*.xz; do [ -e "$f" ] && xz -d -f "$f"; done; chmod +x cargo-tune prev-cargo-tune t/* 2>/dev/null
export MEMTUNE_GPU_TESTS=1 MEMTUNE_CACHE_DIR=/tmp/mt-cache
o=/tmp/res-x; mkdir -p "$o"
step() { local n="$1"; shift; local t0=$(date +%s%N); "$@" > "$o/$n.out" 2> "$o/$n.err"; local rc=$?; echo "$n rc=$rc $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$o/summary.txt"; tail -2 "$o/$n.err"; }
trap 'tar czf "$OUT/res-x.tgz" -C "$o" .' EXIT
{ date -u; nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader; cat "$b/commit"; } | tee "$o/summary.txt"
for t in t/*; do step "test-$(basename $t)" "$t" --test-threads=1; grep -h "test result" "$o/test-$(basename $t).out" | tee -a "$o/summary.txt"; done
gcc -O2 -o /tmp/gentrace gentrace.c && step gentrace /tmp/gentrace 100000000 /tmp/t.u64
for i in 1 2 3; do
  step new-$i ./cargo-tune reuse /tmp/t.u64 --format u64 --mode exact-gpu --bins exact --json
  step prev-$i ./prev-cargo-tune reuse /tmp/t.u64 --format u64 --mode exact-gpu --bins exact --json
done
for f in "$o"/new-*.out "$o"/prev-*.out; do python3 -c '
import json,sys,hashlib
d=json.load(open(sys.argv[1])); g=d.get("gpu",{})
h=hashlib.sha256(json.dumps(d.get("histogram", d.get("log2_bins")),sort_keys=True).encode()).hexdigest()[:12]
print(sys.argv[1].split("/")[-1], "seconds", g.get("seconds"), "parts", [(p.get("upload_seconds"), p.get("phase_seconds"), p.get("radix_passes")) for p in g.get("parts",[])], "distinct", d.get("distinct"), "hist", h)' "$f" | tee -a "$o/summary.txt"; python3 -c '
import json,sys
d=json.load(open(sys.argv[1])); d.pop("histogram",None); json.dump(d,open(sys.argv[1],"w"))' "$f"; done
