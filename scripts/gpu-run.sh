#!/usr/bin/env bash
# Runs on the GPU machine (no Rust there): the bundled `cargo-tune` and every bundled test
# executable with MEMTUNE_GPU_TESTS=1, the tuned-app builds in the bundle, user-gather
# (a smoke run, tuned then from its stored decision), and with MEMTUNE_BENCH=1
# `cargo tune bench all` and user-gather's bench (device and pinned) instead of its smoke
# run. Writes logs, profiles and a summary into OUTDIR.
# Exit status: 0 when every step passed, 1 otherwise (see OUTDIR/summary.txt).
set -uo pipefail
out="${1:?usage: scripts/gpu-run.sh OUTDIR}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bundle="$root/.gpu-bundle"
# gpu-bundle.sh packs it; unpacked once here.
if [ -f "$bundle/bundle.tar.xz" ] && [ ! -x "$bundle/cargo-tune" ]; then
    tar xJf "$bundle/bundle.tar.xz" -C "$bundle"
fi
[ -x "$bundle/cargo-tune" ] || { echo "gpu-run.sh: no bundle at $bundle; run scripts/gpu-bundle.sh first and carry .gpu-bundle" >&2; exit 2; }
mkdir -p "$out/tests" "$out/profiles" "$out/plots"
export MEMTUNE_GPU_TESTS=1 MEMTUNE_CARGO_TUNE="$bundle/cargo-tune" MEMTUNE_CACHE_DIR="$out/profiles"
summary="$out/summary.txt"
status=0
step() { # name, command...
    local name="$1"; shift
    local t0 rc ms
    t0=$(date +%s%N)
    "$@" >"$out/$name.log" 2>&1
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    printf '%-48s rc=%-3s %7d ms\n' "$name" "$rc" "$ms" | tee -a "$summary"
    [ "$rc" -eq 0 ] || status=1
}
{
    echo "memtune GPU run $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
} | tee "$summary"
nvidia-smi -q >"$out/nvidia-smi-q.txt" 2>&1

step devices "$bundle/cargo-tune" devices
step devices-json "$bundle/cargo-tune" devices --json
step tune "$bundle/cargo-tune" --json --plot "$out/plots"
step show "$bundle/cargo-tune" show
# The quick probe's budget (15 s), into its own cache so the full profile above is kept.
step tune-quick env MEMTUNE_CACHE_DIR="$out/profiles-quick" "$bundle/cargo-tune" --quick
# MEMTUNE_SKIP_TESTS=1: the probe and benches only (to fit one device call).
if [ "${MEMTUNE_SKIP_TESTS:-0}" != 1 ]; then
    for t in "$bundle"/tests/*; do
        step "tests/$(basename "$t")" "$t" --test-threads=1
    done
    # tuned-app built elsewhere with another device's profile: it must re-plan here.
    for app in "$bundle"/tuned-app-*; do
        [ -x "$app" ] && step "$(basename "$app")" "$app"
    done
fi
if [ "${MEMTUNE_BENCH:-0}" = 1 ]; then
    # MEMTUNE_BENCH_WORKLOADS: a space-separated subset of "sampling grouping stencil".
    for w in ${MEMTUNE_BENCH_WORKLOADS:-all}; do
        step "bench-$w" "$bundle/cargo-tune" bench "$w" --out "$out/bench"
    done
fi
# A user's own kernel autotuned (examples/user-gather): its decisions go to the cache above.
if [ -x "$bundle/user-gather" ] && [ "${MEMTUNE_USER_GATHER:-1}" = 1 ]; then
    if [ "${MEMTUNE_BENCH:-0}" = 1 ]; then
        step user-gather-device "$bundle/user-gather" --bench --memory device --json "$out/user-gather-device.json"
        step user-gather-pinned "$bundle/user-gather" --bench --memory pinned --sizes 3GiB --json "$out/user-gather-pinned.json"
    else
        step user-gather "$bundle/user-gather" --region 256MiB
        # The second run must use the stored decision and time nothing.
        step user-gather-stored "$bundle/user-gather" --region 256MiB --expect-stored
    fi
fi
grep -h "SKIPPED\|test result\|FAILED\|panicked" "$out"/tests/*.log 2>/dev/null | sort | uniq -c >>"$summary"
exit $status
