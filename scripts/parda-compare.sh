#!/usr/bin/env bash
# Compares `cargo tune reuse --mode exact-cpu` with PARDA's sequential analysis (Niu et al.,
# IPDPS'12) on one generated trace: the histograms must agree, and both are timed.
#
#   scripts/parda-compare.sh PARDA_SRC [REFS] [DISTINCT] [PATTERN]
#
# PARDA_SRC  a checkout of https://github.com/zixuanhe/parda (built here in a copy; needs
#            gcc and glib: apt-get install -y libglib2.0-dev). PARDA's code is not part of
#            memtune and is never copied into it.
# REFS       references in the trace (default 10^7)
# DISTINCT   distinct items (default 10^6)
# PATTERN    uniform (every reference a uniformly random item: no locality) or hot (90% of
#            references to a 1% hot set, as programs with locality have); default uniform
#
# The trace is written in PARDA's text layout (one 0x-hex address per line). PARDA counts
# distances of 10^6 and more in one overflow bin (its nbuckets); the comparison checks every
# distance below that exactly, and the overflow and cold counts. Timings are wall-clock
# seconds of each tool alone on this machine (best of one run; rerun for spread).
set -euo pipefail

src=${1:?usage: scripts/parda-compare.sh PARDA_SRC [REFS] [DISTINCT] [uniform|hot]}
refs=${2:-10000000}
distinct=${3:-1000000}
pattern=${4:-uniform}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/parda-compare.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "building PARDA (sequential) in $work/parda"
cp -r "$src" "$work/parda"
# Its makefile copies the binary to ../ls; not wanted here.
sed -i 's|^\tcp -f parda.x ../ls|\t@true|' "$work/parda/makefile"
make -s -C "$work/parda" >/dev/null
parda="$work/parda/parda.x"

echo "building cargo-tune (release)"
(cd "$root" && cargo build --release -q -p cargo-tune)
tune="${CARGO_TARGET_DIR:-$root/target}/release/cargo-tune"

trace="$work/trace.txt"
echo "generating $refs references over $distinct items ($pattern)"
python3 - "$refs" "$distinct" "$pattern" "$trace" <<'EOF'
import random, sys
refs, distinct, pattern, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
rng = random.Random(20)
hot = max(1, distinct // 100)
with open(path, "w") as f:
    # Every item is used once first, so the trace holds exactly `distinct` items.
    order = list(range(distinct))
    rng.shuffle(order)
    out = [order[i] for i in range(min(refs, distinct))]
    for _ in range(refs - len(out)):
        if pattern == "hot" and rng.random() < 0.9:
            out.append(rng.randrange(hot))
        else:
            out.append(rng.randrange(distinct))
    f.write("".join("0x%x\n" % (0x10000000 + 64 * x) for x in out))
EOF

seconds() { python3 -c 'import time; print(time.time())'; }

echo "running PARDA"
t0=$(seconds)
"$parda" --input="$trace" --lines="$refs" >"$work/parda.out"
t1=$(seconds)
echo "running cargo tune reuse --mode exact-cpu"
"$tune" tune reuse "$trace" --mode exact-cpu --bins exact --json -q >"$work/tune.json"
t2=$(seconds)

python3 - "$work/parda.out" "$work/tune.json" "$refs" "$t0" "$t1" "$t2" <<'EOF'
import json, sys
parda_out, tune_json, refs = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0, t1, t2 = map(float, sys.argv[4:7])
NBUCKETS = 10**6  # PARDA's DEFAULT_NBUCKETS: distances >= this are its overflow bin
parda, ovfl, inf = {}, None, None
for line in open(parda_out):
    f = line.split()
    if not f:
        continue
    if f[0] == "#OVFL":
        ovfl = int(f[1])
    elif f[0] == "#INF":
        inf = int(f[1])
    elif f[0].isdigit():
        parda[int(f[0])] = int(f[1])
doc = json.load(open(tune_json))
ours = {d: n for d, n in doc["histogram"]}
below = {d: n for d, n in ours.items() if d < NBUCKETS}
over = sum(n for d, n in ours.items() if d >= NBUCKETS)
problems = []
if below != parda:
    diff = sorted(set(below) ^ set(parda) | {d for d in below if parda.get(d) != below[d]})
    problems.append("histograms differ at %d distances, first %s" % (len(diff), diff[:5]))
if ovfl != over:
    problems.append("overflow: PARDA %s, cargo tune %d" % (ovfl, over))
if inf != doc["cold"]:
    problems.append("cold: PARDA %s, cargo tune %d" % (inf, doc["cold"]))
tp, tt = t1 - t0, t2 - t1
print("references %d, distinct %d, distances %d, overflow (>= 10^6) %d, cold %d"
      % (doc["references"], doc["distinct"], len(ours), over, doc["cold"]))
print("PARDA sequential     %8.2f s  %6.2f M refs/s" % (tp, refs / tp / 1e6))
print("cargo tune exact-cpu %8.2f s  %6.2f M refs/s  (%.1fx PARDA)" % (tt, refs / tt / 1e6, tp / tt))
if problems:
    print("MISMATCH: " + "; ".join(problems))
    sys.exit(1)
print("histograms agree")
EOF
