//! Rules for `caches`, `shared_memory_staging` and `bandwidth`.

use super::{
    at, idx, Checker, MAX_BLOCK_THREADS, MAX_BLOCK_Z, MAX_BYTES, MAX_CACHE_LEVELS, MAX_CURVES,
    MAX_GRID_DIM, MAX_LATENCY, MAX_LINE_BYTES, MAX_MS, MAX_POINTS, MAX_RATE, MAX_REPEATS,
    MAX_STAGING_ENTRIES, MAX_WAYS, MIN_LINE_BYTES,
};
use crate::profile::{
    Bandwidth, CacheHierarchy, CachePath, LatencyDistribution, Profile, StagingEntry, StagingTable,
};
use std::collections::BTreeMap;

/// How far `benefit` may stray from `best_plain_ms / best_staged_ms`, relatively.
const BENEFIT_TOLERANCE: f64 = 1e-6;
/// Longest dtype name.
const MAX_DTYPE_CHARS: usize = 16;

pub(super) fn check(c: &mut Checker, p: &Profile) {
    c.section("caches", &p.caches, caches);
    c.section("shared_memory_staging", &p.shared_memory_staging, staging);
    c.section("bandwidth", &p.bandwidth, bandwidth);
}

fn caches(c: &mut Checker, path: &str, h: &CacheHierarchy) {
    let levels_path = at(path, "levels");
    if !c.count(&levels_path, h.levels.len(), MAX_CACHE_LEVELS) {
        return;
    }
    // The last size seen per (path, carveout): sizes grow within one.
    let mut last_size = BTreeMap::new();
    for (i, l) in h.levels.iter().enumerate() {
        let lp = idx(&levels_path, i);
        let f = |k: &str| at(&lp, k);
        c.name(&f("name"), &l.name, false);
        let size_ok = c.int_in(&f("size_bytes"), l.size_bytes, 1, MAX_BYTES);
        if size_ok {
            if let Some(prev) = last_size.insert((l.path, l.carveout), l.size_bytes) {
                if l.size_bytes <= prev {
                    c.fail(
                        &f("size_bytes"),
                        format!(
                            "{} does not exceed the previous {} level's {prev} at the {}: levels come smallest first",
                            l.size_bytes, l.path, l.carveout
                        ),
                    );
                }
            }
        }
        let mut line_ok = false;
        if let Some(line) = l.line_bytes {
            line_ok = c.pow2_in(&f("line_bytes"), line, MIN_LINE_BYTES, MAX_LINE_BYTES);
            if line_ok && size_ok && line > l.size_bytes {
                c.fail(
                    &f("line_bytes"),
                    format!("{line} is larger than the level ({} bytes)", l.size_bytes),
                );
            }
        }
        if let Some(fetch) = l.fetch_bytes {
            let fetch_ok = c.pow2_in(&f("fetch_bytes"), fetch, MIN_LINE_BYTES, MAX_LINE_BYTES);
            match l.line_bytes {
                Some(line) if fetch_ok && line_ok && fetch > line => c.fail(
                    &f("fetch_bytes"),
                    format!("{fetch} is larger than the level's {line}-byte line"),
                ),
                None if fetch_ok => c.fail(
                    &f("fetch_bytes"),
                    "is given without line_bytes: a fetch is measured with the line".to_string(),
                ),
                _ => {}
            }
        }
        if let Some(ways) = l.ways {
            let ways_ok = c.int_in(&f("ways"), ways.into(), 1, MAX_WAYS.into());
            if let (true, true, true, Some(line)) = (ways_ok, line_ok, size_ok, l.line_bytes) {
                if u64::from(ways) * line > l.size_bytes {
                    c.fail(
                        &f("ways"),
                        format!(
                            "{ways} ways of {line}-byte lines exceed the level's {} bytes",
                            l.size_bytes
                        ),
                    );
                }
            }
        }
        c.positive(&f("hit_latency_cycles"), l.hit_latency_cycles, MAX_LATENCY);
        if let Some(attr) = l.attribute_bytes {
            c.int_in(&f("attribute_bytes"), attr, 1, MAX_BYTES);
        }
        extras(c, &lp, h, i);
    }
    latency_order(c, path, h);
    if let Some(x) = h.shared_memory_latency_cycles {
        c.positive(&at(path, "shared_memory_latency_cycles"), x, MAX_LATENCY);
    }
    if let Some(d) = &h.dram_latency_distribution {
        latency_distribution(c, &at(path, "dram_latency_distribution"), d);
    }
    let curves_path = at(path, "curves");
    if !c.count(&curves_path, h.curves.len(), MAX_CURVES) {
        return;
    }
    for (i, curve) in h.curves.iter().enumerate() {
        let cp = idx(&curves_path, i);
        if let Some(level) = &curve.level {
            c.name(&at(&cp, "level"), level, false);
        }
        let points_path = at(&cp, "points");
        if !c.count(&points_path, curve.points.len(), MAX_POINTS) {
            continue;
        }
        for (j, point) in curve.points.iter().enumerate() {
            let pp = idx(&points_path, j);
            let stride = point.stride_bytes;
            if c.int_in(&at(&pp, "stride_bytes"), stride, 1, MAX_BYTES) {
                c.int_in(
                    &at(&pp, "footprint_bytes"),
                    point.footprint_bytes,
                    stride,
                    MAX_BYTES,
                );
            }
            c.positive(
                &at(&pp, "cycles_per_load"),
                point.cycles_per_load,
                MAX_LATENCY,
            );
        }
    }
}

/// The optional marks of level `i`: a lower-bound size only on the last level of its path
/// and carveout (a level behind it would have overflowed it), `shares_l1` only on the
/// read-only path.
fn extras(c: &mut Checker, lp: &str, h: &CacheHierarchy, i: usize) {
    let l = &h.levels[i];
    if l.size_is_lower_bound
        && h.levels[i + 1..]
            .iter()
            .any(|n| n.path == l.path && n.carveout == l.carveout)
    {
        c.fail(
            &at(lp, "size_is_lower_bound"),
            format!(
                "is set on a level followed by another {} level: a lower bound can only be the last level of its path",
                l.path
            ),
        );
    }
    if l.shares_l1.is_some() && l.path != CachePath::ReadOnly {
        c.fail(
            &at(lp, "shares_l1"),
            format!(
                "is set on a {} level: only the read-only path is tested for sharing the L1",
                l.path
            ),
        );
    }
}

/// A random chase's distribution: a chain of at least one node, at least one sample (at
/// most [`MAX_POINTS`]), finite positive latencies, and `p50 <= p95 <= p99`.
fn latency_distribution(c: &mut Checker, path: &str, d: &LatencyDistribution) {
    let f = |k: &str| at(path, k);
    if c.int_in(&f("stride_bytes"), d.stride_bytes, 1, MAX_BYTES) {
        c.int_in(
            &f("footprint_bytes"),
            d.footprint_bytes,
            d.stride_bytes,
            MAX_BYTES,
        );
    }
    c.int_in(&f("samples"), d.samples.into(), 1, MAX_POINTS as u64);
    c.positive(&f("mean_cycles"), d.mean_cycles, MAX_LATENCY);
    c.non_negative(&f("stdev_cycles"), d.stdev_cycles, MAX_LATENCY);
    let percentiles = [
        ("p50_cycles", d.p50_cycles),
        ("p95_cycles", d.p95_cycles),
        ("p99_cycles", d.p99_cycles),
    ];
    let mut ok = true;
    for (key, x) in percentiles {
        ok &= c.positive(&f(key), x, MAX_LATENCY);
    }
    if ok {
        for pair in percentiles.windows(2) {
            let ((low_key, low), (key, x)) = (pair[0], pair[1]);
            if x < low {
                c.fail(
                    &f(key),
                    format!("{x} is below {low_key} {low}: percentiles grow"),
                );
            }
        }
    }
}

/// L1 < L2 < DRAM: each L1-path hit is faster than the fastest L2-path level, and that one
/// and every L1 hit are faster than DRAM. Within the L2 path the latencies need not grow (a
/// far partition and a third plateau measure alike), nor need the last L2 plateau stay
/// under DRAM (a chase past the L2 can read a plateau as slow as DRAM).
fn latency_order(c: &mut Checker, path: &str, h: &CacheHierarchy) {
    let finite = |p: CachePath| {
        h.levels
            .iter()
            .enumerate()
            .filter(move |(_, l)| l.path == p && l.hit_latency_cycles.is_finite())
    };
    let fastest_l2 = finite(CachePath::L2)
        .map(|(i, l)| (i, l.hit_latency_cycles))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let dram = h.dram_latency_cycles;
    let dram_path = at(path, "dram_latency_cycles");
    let dram_ok = match dram {
        Some(x) => c.positive(&dram_path, x, MAX_LATENCY),
        None => false,
    };
    for (i, l) in finite(CachePath::L1) {
        let lp = at(&idx(&at(path, "levels"), i), "hit_latency_cycles");
        if let Some((j, l2)) = fastest_l2 {
            if l.hit_latency_cycles >= l2 {
                c.fail(
                    &lp,
                    format!(
                        "{} is not below the L2 hit latency {l2} (levels[{j}]): an L1 hit is faster than L2",
                        l.hit_latency_cycles
                    ),
                );
            }
        }
        if let (true, Some(dram)) = (dram_ok, dram) {
            if l.hit_latency_cycles >= dram {
                c.fail(
                    &lp,
                    format!(
                        "{} is not below the DRAM latency {dram}",
                        l.hit_latency_cycles
                    ),
                );
            }
        }
    }
    if let (true, Some(dram), Some((j, l2))) = (dram_ok, dram, fastest_l2) {
        if l2 >= dram {
            c.fail(
                &dram_path,
                format!("{dram} is not above the L2 hit latency {l2} (levels[{j}]): DRAM is slower than L2"),
            );
        }
    }
}

fn staging(c: &mut Checker, path: &str, t: &StagingTable) {
    let entries_path = at(path, "entries");
    if !c.count(&entries_path, t.entries.len(), MAX_STAGING_ENTRIES) {
        return;
    }
    for (i, e) in t.entries.iter().enumerate() {
        entry(c, &idx(&entries_path, i), e);
    }
}

fn entry(c: &mut Checker, path: &str, e: &StagingEntry) {
    let f = |k: &str| at(path, k);
    let dtype_ok = !e.dtype.is_empty()
        && e.dtype.len() <= MAX_DTYPE_CHARS
        && e.dtype
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !dtype_ok {
        c.fail(
            &f("dtype"),
            format!(
                "{:?} is not a type name (1 to {MAX_DTYPE_CHARS} of [A-Za-z0-9_])",
                e.dtype
            ),
        );
    }
    c.int_in(&f("repeats"), e.repeats.into(), 1, MAX_REPEATS.into());
    for (axis, &n) in e.grid.iter().enumerate() {
        c.int_in(&idx(&f("grid"), axis), n.into(), 1, MAX_GRID_DIM.into());
    }
    block(c, &f("best_plain_block"), &e.best_plain_block);
    block(c, &f("best_staged_block"), &e.best_staged_block);
    let plain_ok = c.positive(&f("best_plain_ms"), e.best_plain_ms, MAX_MS);
    let staged_ok = c.positive(&f("best_staged_ms"), e.best_staged_ms, MAX_MS);
    if c.positive(&f("benefit"), e.benefit, f64::MAX) && plain_ok && staged_ok {
        let expected = e.best_plain_ms / e.best_staged_ms;
        if (e.benefit - expected).abs() > BENEFIT_TOLERANCE * expected {
            c.fail(
                &f("benefit"),
                format!(
                    "{} is not best_plain_ms / best_staged_ms = {} / {} = {expected}",
                    e.benefit, e.best_plain_ms, e.best_staged_ms
                ),
            );
        }
    }
    match (&e.best_streaming_block, e.best_streaming_ms) {
        (Some(b), Some(ms)) => {
            block(c, &f("best_streaming_block"), b);
            c.positive(&f("best_streaming_ms"), ms, MAX_MS);
        }
        (None, None) => {}
        (Some(_), None) => c.fail(
            &f("best_streaming_ms"),
            "missing beside best_streaming_block",
        ),
        (None, Some(_)) => c.fail(
            &f("best_streaming_block"),
            "missing beside best_streaming_ms",
        ),
    }
}

/// A launchable CUDA block: every dimension at least 1, z at most 64, 1024 threads at most.
fn block(c: &mut Checker, path: &str, b: &[u32; 3]) {
    let limits = [MAX_BLOCK_THREADS, MAX_BLOCK_THREADS, MAX_BLOCK_Z];
    let mut ok = true;
    for (axis, (&n, &max)) in b.iter().zip(&limits).enumerate() {
        ok &= c.int_in(&idx(path, axis), n.into(), 1, max.into());
    }
    let threads: u64 = b.iter().map(|&n| u64::from(n)).product();
    if ok && threads > u64::from(MAX_BLOCK_THREADS) {
        c.fail(
            path,
            format!("{b:?} is {threads} threads, more than a block's {MAX_BLOCK_THREADS}"),
        );
    }
}

fn bandwidth(c: &mut Checker, path: &str, b: &Bandwidth) {
    c.positive(&at(path, "device_to_device"), b.device_to_device, MAX_RATE);
    c.positive(&at(path, "host_to_device"), b.host_to_device, MAX_RATE);
    c.positive(&at(path, "device_to_host"), b.device_to_host, MAX_RATE);
    let zp = at(path, "zero_copy_read");
    c.count(&zp, b.zero_copy_read.len(), super::MAX_CURVES);
    for (pattern, &x) in &b.zero_copy_read {
        let pp = at(&zp, pattern);
        c.name(&pp, pattern, false);
        c.positive(&pp, x, MAX_RATE);
    }
    if let Some(l2) = &b.l2_read {
        let lp = at(path, "l2_read");
        c.positive(&at(&lp, "bytes_per_second"), l2.bytes_per_second, MAX_RATE);
        if l2.region_bytes == 0 || l2.repeats == 0 {
            c.fail(&lp, format!("{l2:?}: an empty region or no repeats"));
        }
    }
}
