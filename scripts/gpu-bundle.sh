#!/usr/bin/env bash
# Builds what the GPU machine runs (it has CUDA 13.0 but no Rust) into the git-ignored
# folder .gpu-bundle/: the release `cargo-tune`, every test executable, the tuned-app and
# user-gather examples, stripped.
# Then run it there with the device tool, carrying .gpu-bundle:
#
#   bash scripts/gpu-run.sh /tmp/r; s=$?; tar czf $OUT/gpu-results.tgz -C /tmp/r .; cp /tmp/r/summary.txt $OUT/; exit $s
#
# and unpack the results with scripts/gpu-results.sh FILE.tgz KIND (into
# benchmarks/results/<gpu model>/<KIND>/, e.g. bench, tests, probe).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bundle="$root/.gpu-bundle"
rm -rf "$bundle"
mkdir -p "$bundle/tests"

target="${CARGO_TARGET_DIR:-target}"
cargo build --release -p cargo-tune --bin cargo-tune
cp "$target"/release/cargo-tune "$bundle/"

# Every test executable of the workspace, named <package>-<target>.
cargo test --release --workspace --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, sys, shutil
for line in sys.stdin:
    m = json.loads(line)
    # Proc-macro test executables link libstd dynamically: they cannot travel. Tests that
    # run cargo (trybuild, rebuild checks) need a Rust toolchain, which the GPU machine lacks.
    needs_cargo = {"memtune-tests-macros_ui", "memtune-tests-macros_rebuild", "tuned-app-plans"}
    kinds = m.get("target", {}).get("kind", [])
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"] and "proc-macro" not in kinds:
        # `path+file:///.../dir#name@1.0`, or `...#1.0` when the name is that of the directory.
        url, _, frag = m["package_id"].partition("#")
        pkg = frag.split("@")[0] if "@" in frag else url.rstrip("/").split("/")[-1]
        name = pkg + "-" + m["target"]["name"]
        if name in needs_cargo:
            print("left out (runs cargo)", name)
            continue
        # The simulator tests need no GPU (CI runs them), and the carry limit is 64 MiB.
        if "-sim_" in name:
            print("left out (simulator)", name)
            continue
        shutil.copy(m["executable"], sys.argv[1] + "/" + name)
        print("bundled", name)
' "$bundle/tests"
# tuned-app as a user would build it elsewhere: planned for a simulated K80 (NVRTC at run
# time), so that on the GPU it must detect the other device and re-plan.
MEMTUNE_PROFILE="$root/tests/fixtures/k80.json" MEMTUNE_NVCC=0 cargo build --release -p tuned-app
cp "$target"/release/tuned-app "$bundle/tuned-app-k80"
# Rebuild with the committed profile, so the workspace's binary is the ordinary one again.
cargo build --release -p tuned-app
# user-gather: a user's own kernel autotuned by memtune (examples/user-gather); NVRTC at
# run time.
cargo build --release -p user-gather
cp "$target"/release/user-gather "$bundle/user-gather"
strip "$bundle/cargo-tune" "$bundle"/tests/* "$bundle/tuned-app-k80" "$bundle/user-gather"
# Packed: the device tool carries at most 64 MiB with the tree, and the binaries shrink
# about fourfold; gpu-run.sh unpacks it.
tar cJf "$root/.gpu-bundle.tar.xz" -C "$bundle" .
rm -rf "$bundle"
mkdir -p "$bundle"
mv "$root/.gpu-bundle.tar.xz" "$bundle/bundle.tar.xz"
size=$(du -sm "$bundle" | cut -f1)
echo "bundle: $bundle (${size} MiB packed)"
if [ "$size" -gt 32 ]; then
    echo "gpu-bundle.sh: the packed bundle is over 32 MiB; the device tool carries at most 64 MiB with the tree" >&2
    exit 1
fi
