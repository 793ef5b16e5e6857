#!/usr/bin/env bash
# Raw cache curves for a first look at a GPU (run on the GPU machine with the bundle):
# L1 path at both carveouts, L2 path, constant cache, line-size strides, shared memory.
# Writes OUTDIR/<name>.txt, one table per sweep, with its wall time.
set -uo pipefail
out="${1:?usage: scripts/explore-caches.sh OUTDIR}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/.gpu-bundle/cargo-tune"
mkdir -p "$out"
run() {
    local name="$1"; shift
    echo "== $name: $*"
    /usr/bin/time -f "%e s" "$bin" chase "$@" 2>&1 | tee "$out/$name.txt"
}
run l1-default --path l1 --carveout default --strides 32,128 --from 8KiB --to 1MiB --factor 1.08
run l1-maxl1 --path l1 --carveout max-l1 --strides 32,128 --from 8KiB --to 1MiB --factor 1.08
run l1-lines --path l1 --carveout max-l1 --strides 8,16,32,64,128,256,512 --from 192KiB --to 512KiB --factor 1.3
run l1-fine --path l1 --carveout max-l1 --strides 128 --from 200KiB --to 280KiB --factor 1.01
run l2 --path l2 --strides 1KiB,4KiB --from 1MiB --to 256MiB --factor 1.1
run l2-lines --path l2 --strides 8,16,32,64,128,256 --from 256KiB --to 512KiB --factor 2
run constant --path constant --strides 4,64,256 --from 256 --to 64KiB --factor 1.15
