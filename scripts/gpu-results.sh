#!/usr/bin/env bash
# Unpacks a GPU run's results (gpu-results.tgz from scripts/gpu-run.sh, or the folder it
# was packed from) into benchmarks/results/<gpu model>/<kind>/ for committing, replacing
# that folder's previous content: each kind keeps the latest run only, earlier ones are
# read from git history (benchmarks/results/README.md).
#
#   scripts/gpu-results.sh RUN KIND [--dry-run]
#
# RUN: the tarball or folder. KIND: the kind of run, a folder name such as bench (a whole
# `cargo tune bench`), tests (every test executable with MEMTUNE_GPU_TESTS=1), probe,
# user-kernels, exact-gpu, gpu-replay. The model is read from summary.txt's device lines
# ("NVIDIA H100 80GB HBM3" -> h100, two of them -> h100x2).
#
# What is kept: summary.txt as it is; every JSON (and JSON Lines) file written compactly
# with numbers at 6 significant digits (CUDA events resolve about 0.5 us); the bench's
# `bench/` folder flattened into the kind's folder; every other text output (*.log, *.out,
# *.err, *.txt, *.md) as a section `== <path>` of one logs.txt. Left out: charts (*.svg,
# plots/), profiles (profiles/, profiles-quick/: a profile a test reads goes to
# tests/fixtures/ by hand), nvidia-smi dumps. --dry-run writes into a temporary folder,
# lists what the kind's folder would hold and changes nothing in the tree.
# Then it prints the README rows to update (the model's README.md holds them; edit by hand).
set -euo pipefail
usage="usage: scripts/gpu-results.sh RUN.tgz|RUN_DIR KIND [--dry-run]"
run="${1:?$usage}"
kind="${2:?$usage}"
dry=0
[ "${3:-}" = "--dry-run" ] && dry=1
[ -z "${3:-}" ] || [ "$dry" = 1 ] || { echo "$usage" >&2; exit 2; }
case "$kind" in
    */* | .* | *[!A-Za-z0-9._-]*) echo "gpu-results.sh: KIND is one folder name: $kind" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/in" "$tmp/out"
if [ -d "$run" ]; then
    cp -r "$run"/. "$tmp/in"/
else
    tar xzf "$run" -C "$tmp/in"
fi
[ -f "$tmp/in/summary.txt" ] || { echo "gpu-results.sh: no summary.txt in $run" >&2; exit 2; }
# summary.txt: "memtune GPU run <date>", the CSV header, then one line per GPU.
when=$(sed -n 1p "$tmp/in/summary.txt" | grep -oE '[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9:]+Z)?' | head -1 || true)
# (a summary of several phases repeats the device lines: each GPU once)
gpus=$(awk -F', ' '$2 ~ /^GPU-/ && !seen[$2]++' "$tmp/in/summary.txt")
[ -n "$gpus" ] || { echo "gpu-results.sh: no device line in $run/summary.txt" >&2; exit 2; }
count=$(echo "$gpus" | wc -l)
name=$(echo "$gpus" | head -1 | cut -d, -f1)
# "NVIDIA H100 80GB HBM3" -> h100, "NVIDIA H200" -> h200
model=$(echo "$name" | tr -cs 'A-Za-z0-9' '-' | sed 's/^-//; s/-$//' | tr 'A-Z' 'a-z' \
    | sed -E 's/^nvidia-//; s/-[0-9]+gb(-.*)?$//')
[ "$count" -eq 1 ] || model="${model}x$count"
machine=$(echo "$gpus" | cut -d, -f2 | tr -d ' ' | cut -c5-12 | paste -sd- -)
rel="benchmarks/results/$model/$kind"
dest="$root/$rel"

python3 - "$tmp/in" "$tmp/out" <<'EOF'
import json, os, sys

src, out = sys.argv[1], sys.argv[2]
TEXT = (".log", ".out", ".err", ".txt", ".md")
DROPPED_DIRS = ("plots", "profiles", "profiles-quick")

def six(v):
    if isinstance(v, float):
        return float(f"{v:.6g}")
    if isinstance(v, list):
        return [six(x) for x in v]
    if isinstance(v, dict):
        return {k: six(x) for k, x in v.items()}
    return v

def compact(text):
    return json.dumps(six(json.loads(text)), separators=(",", ":"), ensure_ascii=False)

left_out, sections = [], []
for dirpath, dirs, files in os.walk(src):
    dirs.sort()
    for f in sorted(files):
        path = os.path.join(dirpath, f)
        rel = os.path.relpath(path, src)
        top = rel.split(os.sep)[0]
        if top in DROPPED_DIRS or f.endswith(".svg") or f.startswith("nvidia-smi"):
            left_out.append(rel)
            continue
        # bench/bench-*.json (cargo tune bench --out bench) into the kind's folder itself
        name = rel[len("bench/"):] if rel.startswith("bench/") else rel
        if rel == "summary.txt":
            with open(path, "rb") as i, open(os.path.join(out, "summary.txt"), "wb") as o:
                o.write(i.read())
        elif f.endswith(".json") or f.endswith(".jsonl"):
            with open(path, encoding="utf-8") as i:
                text = i.read()
            try:
                if f.endswith(".jsonl"):
                    body = "".join(compact(l) + "\n" for l in text.splitlines() if l.strip())
                else:
                    body = compact(text) + "\n"
            except ValueError as e:
                sys.exit(f"gpu-results.sh: {rel} is not JSON: {e}")
            target = os.path.join(out, name)
            if os.path.exists(target):
                sys.exit(f"gpu-results.sh: {name} twice (bench/ flattened)")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as o:
                o.write(body)
        elif f.endswith(TEXT):
            with open(path, encoding="utf-8", errors="replace") as i:
                text = i.read()
            if text.strip():
                sections.append(f"== {rel}\n" + text + ("" if text.endswith("\n") else "\n"))
        else:
            left_out.append(rel + " (not text or JSON)")
if sections:
    with open(os.path.join(out, "logs.txt"), "w", encoding="utf-8") as o:
        o.write("".join(sections))
for rel in left_out:
    print(f"left out: {rel}")
EOF

old=""
if [ -f "$dest/summary.txt" ]; then
    old_when=$(sed -n 1p "$dest/summary.txt" | grep -oE '[0-9]{4}-[0-9]{2}-[0-9]{2}' | head -1 || true)
    old_machine=$(awk -F', ' '$2 ~ /^GPU-/ && !seen[$2]++ {print $2}' "$dest/summary.txt" \
        | cut -c5-12 | paste -sd- -)
    old="${old_when:-?}-${old_machine:-?}"
fi
if [ "$dry" = 1 ]; then
    echo "dry run: $rel/ would hold (replacing ${old:-nothing}):"
    (cd "$tmp/out" && find . -type f -printf '  %P %s bytes\n' | sort)
else
    rm -rf "$dest"
    mkdir -p "$dest"
    cp -r "$tmp/out"/. "$dest"/
    echo "$dest ($(du -sk "$dest" | cut -f1) KiB; benchmarks/results $(du -sm "$root/benchmarks/results" | cut -f1) MB, keep it under 5)"
fi
rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo HEAD)
cat <<ROWS

Update benchmarks/results/$model/README.md by hand:
- the kept folders' table, row \`$kind/\`: machine $machine, date ${when%%T*}, the commit the
  bundle was built from, the command (gpu-run.sh's environment or the steps in summary.txt),
  what ran and what it found;
- the headline tables that came from \`$kind/\`: redo them from the new files;
ROWS
if [ -n "$old" ]; then
    cat <<ROWS
- "Earlier runs": one line for the run it replaced,
  \`$old\` (\`git show $rev:$rel/\`): what it found.
ROWS
    git -C "$root" cat-file -e "$rev:$rel/summary.txt" 2>/dev/null \
        || echo "  ($rev does not hold $rel/summary.txt: commit the run it replaced first, or cite the revision that does)"
fi
refs=$(cd "$root" && grep -rln "$rel/" --include=*.rs --include=*.md --include=*.sh --include=*.py . 2>/dev/null \
    | grep -v "^./benchmarks/results/" || true)
if [ -n "$refs" ]; then
    echo "- files that cite $rel/ (their numbers may now be the earlier run's):"
    echo "$refs" | sed 's/^\.\//  /'
fi
