#!/usr/bin/env bash
# Raw curves for a first look at a GPU (run on the GPU machine with the bundle):
# pointer-chase latency per stride and random-sampling throughput, each memory kind.
# Writes OUTDIR/{chase,sample}-<kind>.json and a readable log.
set -uo pipefail
out="${1:?usage: scripts/explore.sh OUTDIR}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/.gpu-bundle/cargo-tune"
mkdir -p "$out"
for kind in device managed pinned; do
    strides=4KiB,64KiB,2MiB,32MiB,512MiB
    [ "$kind" = pinned ] && strides=4KiB,64KiB,2MiB,32MiB
    echo "== chase $kind"
    /usr/bin/time -f "%e s" "$bin" chase --kind "$kind" --strides "$strides" --from 256KiB 2>&1 | tee "$out/chase-$kind.txt"
    echo "== sample $kind"
    /usr/bin/time -f "%e s" "$bin" sample --kind "$kind" --from 1MiB 2>&1 | tee "$out/sample-$kind.txt"
done
