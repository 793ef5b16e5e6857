#!/usr/bin/env python3
"""Compares two memtune profiles of one GPU (e.g. probed alone and beside other GPUs):
the relative difference of every measured number the planners read, and whether the
TLB and cache levels found are the same.

    scripts/compare-profiles.py A.json B.json [--json]

Rows: TLB levels per kind (entries x page), base latency; random-access throughput per
region (the median and largest |B/A - 1| over the regions both measured); cache levels
(size, hit latency), DRAM latency; bandwidths; the stencil staging table's best times.
"""
import json
import statistics
import sys


def rel(a, b):
    if a is None or b is None or a == 0:
        return None
    return b / a - 1.0


def measured(section):
    return isinstance(section, dict) and section.get("status") == "measured"


def compare(a, b):
    rows = []  # (name, a, b, relative difference or None, same levels or None)
    for kind in ("device", "pinned", "managed"):
        ta, tb = a["tlb"].get(kind), b["tlb"].get(kind)
        if measured(ta) and measured(tb):
            la = [(l["entries"], l["page_bytes"]) for l in ta["levels"]]
            lb = [(l["entries"], l["page_bytes"]) for l in tb["levels"]]
            rows.append((f"tlb {kind} levels", la, lb, None, la == lb))
            rows.append((f"tlb {kind} base latency (cycles)", ta["base_latency_cycles"],
                         tb["base_latency_cycles"],
                         rel(ta["base_latency_cycles"], tb["base_latency_cycles"]), None))
        ra, rb = a["random_access"].get(kind), b["random_access"].get(kind)
        if measured(ra) and measured(rb):
            pa = {p["region_bytes"]: p["reads_per_second"] for p in ra["points"]}
            pb = {p["region_bytes"]: p["reads_per_second"] for p in rb["points"]}
            d = [abs(rel(pa[r], pb[r])) for r in pa if r in pb and pa[r] > 0]
            if d:
                rows.append((f"random access {kind}: median |diff| over {len(d)} regions",
                             None, None, statistics.median(d), None))
                rows.append((f"random access {kind}: largest |diff|", None, None, max(d), None))
    ca, cb = a.get("caches"), b.get("caches")
    if measured(ca) and measured(cb):
        key = lambda l: (l["name"], l["carveout"])
        la = {key(l): l for l in ca["levels"]}
        lb = {key(l): l for l in cb["levels"]}
        rows.append(("cache levels", sorted(la), sorted(lb), None, sorted(la) == sorted(lb)))
        for k in sorted(set(la) & set(lb)):
            for f in ("size_bytes", "hit_latency_cycles"):
                rows.append((f"cache {k[0]} ({k[1]}) {f}", la[k][f], lb[k][f],
                             rel(la[k][f], lb[k][f]), None))
        rows.append(("DRAM latency (cycles)", ca["dram_latency_cycles"], cb["dram_latency_cycles"],
                     rel(ca["dram_latency_cycles"], cb["dram_latency_cycles"]), None))
    ba, bb = a.get("bandwidth"), b.get("bandwidth")
    if measured(ba) and measured(bb):
        for f in ("device_to_device", "host_to_device", "device_to_host"):
            rows.append((f"bandwidth {f} (B/s)", ba[f], bb[f], rel(ba[f], bb[f]), None))
        for f, v in ba["zero_copy_read"].items():
            w = bb["zero_copy_read"].get(f)
            rows.append((f"bandwidth zero-copy {f} (B/s)", v, w, rel(v, w), None))
    sa, sb = a.get("shared_memory_staging"), b.get("shared_memory_staging")
    if measured(sa) and measured(sb):
        d = []
        for ea, eb in zip(sa["entries"], sb["entries"]):
            for f in ("best_plain_ms", "best_staged_ms", "best_streaming_ms"):
                r = rel(ea.get(f), eb.get(f))
                if r is not None:
                    d.append(abs(r))
        if d:
            rows.append((f"staging best times: median |diff| over {len(d)}", None, None,
                         statistics.median(d), None))
            rows.append(("staging best times: largest |diff|", None, None, max(d), None))
    return rows


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        sys.exit(__doc__)
    a, b = (json.load(open(p)) for p in args)
    if a["device"]["uuid"] != b["device"]["uuid"]:
        print(f"note: two GPUs ({a['device']['uuid']} and {b['device']['uuid']})", file=sys.stderr)
    rows = compare(a, b)
    if "--json" in sys.argv:
        print(json.dumps([{"what": r[0], "a": r[1], "b": r[2], "relative_difference": r[3],
                           "same": r[4]} for r in rows], indent=1))
        return
    for name, va, vb, d, same in rows:
        if same is not None:
            print(f"{name:58} {'same' if same else 'DIFFERENT'}  {va} | {vb}")
        elif va is None:
            print(f"{name:58} {100 * d:7.2f}%")
        else:
            print(f"{name:58} {100 * d:+7.2f}%  ({va:.4g} -> {vb:.4g})")


if __name__ == "__main__":
    main()
