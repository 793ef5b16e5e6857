//! Human-readable profile output.

use memtune_core::human::{bandwidth, rate};
use memtune_core::profile::{MemoryKind, Profile, Section, TlbKind};
use std::fmt::Write;

/// A byte count in binary units, as everything memtune prints ([`memtune_core::human::bytes`]).
pub fn bytes(b: u64) -> String {
    memtune_core::human::bytes(b)
}

pub fn profile(p: &Profile) -> String {
    let d = &p.device;
    let mut s = String::new();
    let _ = writeln!(s, "{} ({})", d.name, d.uuid);
    let _ = writeln!(
        s,
        "  compute capability {}, {} SMs, SM clock {} MHz, memory clock {} MHz, {}-bit bus",
        d.compute_capability,
        d.sm_count,
        d.sm_clock_khz / 1000,
        d.memory_clock_khz / 1000,
        d.memory_bus_width_bits
    );
    let _ = writeln!(
        s,
        "  global memory {}, L2 {}, shared memory {} per block ({} opt-in), {} per SM",
        bytes(d.global_memory_bytes),
        bytes(d.l2_bytes),
        bytes(d.shared_memory_per_block_bytes),
        bytes(d.shared_memory_per_block_optin_bytes),
        bytes(d.shared_memory_per_sm_bytes)
    );
    let _ = writeln!(s, "  driver CUDA {}", d.driver_version);
    let pv = &p.provenance;
    let _ = writeln!(
        s,
        "  profiled {} by memtune {} (probe v{}) in {:.1} s{}",
        pv.created_at,
        pv.memtune_version,
        pv.probe_version,
        pv.duration_seconds,
        pv.simulator
            .as_ref()
            .map(|n| format!(", SIMULATED ({n})"))
            .unwrap_or_default()
    );
    let _ = writeln!(s, "  digest {}", p.digest);
    for kind in MemoryKind::ALL {
        let _ = writeln!(s, "TLB, {kind} memory: {}", p.tlb.get(kind).status_line());
        if let Section::Measured(t) = p.tlb.get(kind) {
            tlb_levels(&mut s, t);
        }
        let _ = writeln!(
            s,
            "random access, {kind} memory: {}",
            p.random_access.get(kind).status_line()
        );
        if let Section::Measured(r) = p.random_access.get(kind) {
            match r.knee_bytes {
                Some(k) => {
                    let _ = writeln!(s, "  throughput falls off beyond {}", bytes(k));
                }
                None => {
                    let _ = writeln!(s, "  no fall-off in the swept range");
                }
            }
            for (what, points) in [("reads", &r.points), ("atomicAdd", &r.atomic_points)] {
                if let Some(line) = throughput_range(points) {
                    let _ = writeln!(s, "  {what}: {line}");
                }
            }
            if let Some(d) = r.draw_cost_relative {
                let _ = writeln!(
                    s,
                    "  a drawn and skipped position costs {d:.3} of the fastest read"
                );
            }
        }
    }
    let _ = writeln!(s, "caches: {}", p.caches.status_line());
    if let Section::Measured(h) = &p.caches {
        let _ = writeln!(
            s,
            "  {:<18} {:<9} {:<17} {:>10} {:>18} {:>7} {:>11}",
            "level", "path", "carveout", "size", "line", "ways", "hit cycles"
        );
        for l in &h.levels {
            let _ = writeln!(
                s,
                "  {:<18} {:<9} {:<17} {:>10} {:>18} {:>7} {:>11.0}{}{}",
                l.name,
                l.path.to_string(),
                l.carveout.to_string(),
                l.size_shown(bytes),
                crate::report::cache_line(l).unwrap_or_else(|| "?".to_string()),
                l.ways.map_or("?".to_string(), |w| w.to_string()),
                l.hit_latency_cycles,
                l.attribute_bytes
                    .map(|a| format!("  (device attribute: {})", bytes(a)))
                    .unwrap_or_default(),
                crate::report::sharing_note(l)
                    .map(|n| format!("  ({n})"))
                    .unwrap_or_default()
            );
        }
        let cycles =
            |c: Option<f64>| c.map_or("not measured".to_string(), |c| format!("{c:.0} cycles"));
        let _ = writeln!(
            s,
            "  DRAM {}, shared memory {}; {} raw curves",
            cycles(h.dram_latency_cycles),
            cycles(h.shared_memory_latency_cycles),
            h.curves.len()
        );
        if let Some(d) = &h.dram_latency_distribution {
            let _ = writeln!(s, "  DRAM {d}");
        }
    }
    let _ = writeln!(
        s,
        "shared-memory staging: {}",
        p.shared_memory_staging.status_line()
    );
    if let Section::Measured(t) = &p.shared_memory_staging {
        let _ = writeln!(
            s,
            "  {:<5} {:>7} {:>13} {:>20} {:>20} {:>8} {:>23}",
            "dtype",
            "repeats",
            "grid",
            "best plain (ms)",
            "best staged (ms)",
            "benefit",
            "best streaming (ms)"
        );
        let block = |b: [u32; 3]| format!("{}x{}x{}", b[0], b[1], b[2]);
        for e in &t.entries {
            // Profiles written before streaming was measured have no such column.
            let streaming = match (e.best_streaming_block, e.best_streaming_ms) {
                (Some(b), Some(ms)) => format!("{:>14} {ms:>8.3}", block(b)),
                _ => format!("{:>23}", "-"),
            };
            let _ = writeln!(
                s,
                "  {:<5} {:>7} {:>13} {:>11} {:>8.3} {:>11} {:>8.3} {:>8.2} {streaming}",
                e.dtype,
                e.repeats,
                block(e.grid),
                block(e.best_plain_block),
                e.best_plain_ms,
                block(e.best_staged_block),
                e.best_staged_ms,
                e.benefit
            );
        }
    }
    let _ = writeln!(s, "bandwidth: {}", p.bandwidth.status_line());
    if let Section::Measured(b) = &p.bandwidth {
        let gbs = bandwidth;
        let _ = writeln!(
            s,
            "  device to device {} (read + written), host to device {}, device to host {}",
            gbs(b.device_to_device),
            gbs(b.host_to_device),
            gbs(b.device_to_host)
        );
        for (pattern, v) in &b.zero_copy_read {
            let _ = writeln!(s, "  zero-copy read, {pattern}: {}", gbs(*v));
        }
        if let Some(l2) = &b.l2_read {
            let _ = writeln!(s, "  L2 read: {}", crate::report::l2_read_text(l2));
        }
    }
    s
}

/// `fastest rate (at region), largest region's rate (at region)` of a throughput curve, each
/// with the prefix that fits (`25.3 M/s`, never `0.0 G/s`).
fn throughput_range(points: &[memtune_core::profile::RandomAccessPoint]) -> Option<String> {
    let best = points
        .iter()
        .max_by(|a, b| a.reads_per_second.total_cmp(&b.reads_per_second))?;
    let last = points.iter().max_by_key(|p| p.region_bytes)?;
    Some(format!(
        "{} at best ({}), {} over {}",
        rate(best.reads_per_second),
        bytes(best.region_bytes),
        rate(last.reads_per_second),
        bytes(last.region_bytes)
    ))
}

/// A kind's TLB levels, stable and unstable by reach; an unstable level (one the probe's
/// confirmation did not find again on a fresh allocation) is marked, with the note that
/// planners leave it out.
fn tlb_levels(s: &mut String, t: &TlbKind) {
    let all = t.all_levels();
    if all.is_empty() {
        let _ = writeln!(s, "  no TLB miss up to {}", bytes(t.swept_up_to_bytes));
        return;
    }
    let _ = writeln!(
        s,
        "  {:<6} {:>8} {:>10} {:>10} {:>12} {:>10} {:>6}",
        "level", "entries", "page", "reach", "miss cycles", "miss ns", "conf"
    );
    for (i, (l, stable)) in all.iter().enumerate() {
        let _ = writeln!(
            s,
            "  L{:<5} {:>8} {:>10} {:>10} {:>12.0} {:>10.1} {:>6.2}{}",
            i + 1,
            l.entries,
            bytes(l.page_bytes),
            bytes(l.reach_bytes),
            l.miss_penalty_cycles,
            l.miss_penalty_ns,
            l.confidence,
            if *stable { "" } else { "  UNSTABLE" }
        );
    }
    if !t.unstable_levels.is_empty() {
        let _ = writeln!(
            s,
            "  UNSTABLE: not found again on a fresh allocation; planners leave it out"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unstable_levels_are_listed_by_reach_and_marked() {
        let level = |entries: u64, page_bytes: u64| memtune_core::profile::TlbLevel {
            entries,
            page_bytes,
            reach_bytes: entries * page_bytes,
            miss_penalty_cycles: 100.0,
            miss_penalty_ns: 50.0,
            confidence: 0.9,
            shared_by_sms: None,
        };
        let t = TlbKind {
            levels: vec![level(64, 2 << 20)],
            swept_up_to_bytes: 1 << 33,
            base_latency_cycles: 2000.0,
            curves: Vec::new(),
            notes: Vec::new(),
            unstable_levels: vec![level(4096, 4096)],
        };
        let mut s = String::new();
        tlb_levels(&mut s, &t);
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines[1].contains("L1") && lines[1].contains("4096"), "{s}");
        assert!(lines[1].ends_with("UNSTABLE"), "{s}");
        assert!(
            lines[2].contains("L2") && !lines[2].contains("UNSTABLE"),
            "{s}"
        );
        assert!(lines[3].contains("planners leave it out"), "{s}");
        // Without unstable levels nothing is marked.
        let mut stable = String::new();
        tlb_levels(
            &mut stable,
            &TlbKind {
                unstable_levels: Vec::new(),
                ..t
            },
        );
        assert!(!stable.contains("UNSTABLE"), "{stable}");
    }

    #[test]
    fn cache_line_shows_the_fetch_where_it_differs() {
        use memtune_core::profile::{CacheCarveout, CacheLevel, CachePath};
        let level = |line_bytes, fetch_bytes| CacheLevel {
            name: "L1".to_string(),
            path: CachePath::L1,
            carveout: CacheCarveout::Default,
            size_bytes: 256 << 10,
            line_bytes,
            fetch_bytes,
            ways: None,
            hit_latency_cycles: 32.0,
            attribute_bytes: None,
            size_is_lower_bound: false,
            shares_l1: None,
        };
        let line = |l| crate::report::cache_line(&l);
        assert_eq!(
            line(level(Some(128), Some(32))).as_deref(),
            Some("128 bytes (32 bytes fetch)")
        );
        assert_eq!(
            line(level(Some(128), Some(128))).as_deref(),
            Some("128 bytes")
        );
        assert_eq!(line(level(Some(32), None)).as_deref(), Some("32 bytes"));
        assert_eq!(line(level(None, None)), None);
    }

    #[test]
    fn byte_units() {
        assert_eq!(bytes(2 << 20), "2 MiB");
        assert_eq!(bytes(3 << 30), "3 GiB");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(bytes(28232 << 10), "27.57 MiB");
    }

    #[test]
    fn throughput_range_names_the_best_and_the_largest_region() {
        let p = |mib: u64, gps: f64| memtune_core::profile::RandomAccessPoint {
            region_bytes: mib << 20,
            reads_per_second: gps * 1e9,
        };
        assert_eq!(throughput_range(&[]), None);
        assert_eq!(
            throughput_range(&[p(64, 35.0), p(16, 98.5), p(1024, 16.0)]).as_deref(),
            Some("98.5 G/s at best (16 MiB), 16.0 G/s over 1 GiB")
        );
        // Tens of M/s read as such, not as 0.0 G/s.
        assert_eq!(
            throughput_range(&[p(64, 0.031), p(1024, 0.04)]).as_deref(),
            Some("40.0 M/s at best (1 GiB), 40.0 M/s over 1 GiB")
        );
    }
}

#[cfg(test)]
mod dram_tests {
    use super::*;
    use memtune_core::profile::LatencyDistribution;

    fn h100() -> Profile {
        let text = include_str!(
            "../../../../tests/fixtures/h100/GPU-4cb44b00-746e-ef0d-e563-1b303c5eaaff.json"
        );
        serde_json::from_str(text).expect("the H100 fixture")
    }

    #[test]
    fn the_dram_latency_distribution_is_shown_when_present() {
        let mut p = h100();
        let without = profile(&p);
        assert!(!without.contains("random chase"), "{without}");
        let Section::Measured(h) = &mut p.caches else {
            panic!("the fixture's caches are measured");
        };
        h.dram_latency_distribution = Some(LatencyDistribution {
            footprint_bytes: 1 << 30,
            stride_bytes: 1 << 10,
            samples: 2048,
            mean_cycles: 880.0,
            stdev_cycles: 61.0,
            p50_cycles: 864.0,
            p95_cycles: 1020.0,
            p99_cycles: 1100.0,
        });
        let text = profile(&p);
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.contains("raw curves"))
            .expect("the DRAM line");
        assert_eq!(
            lines[at + 1],
            "  DRAM random chase over 1 GiB at 1 KiB stride (2048 loads): p50 864, p95 1020, p99 1100 cycles, mean 880"
        );
        let summary = super::super::probe::cache_summary(&p);
        assert_eq!(
            summary.last().map(String::as_str),
            Some("DRAM random chase over 1 GiB at 1 KiB stride (2048 loads): p50 864, p95 1020, p99 1100 cycles, mean 880")
        );
    }
}

#[cfg(test)]
mod detail_tests {
    use super::*;

    /// An H100 profile with a constant L1.5 (a lower-bound size) and a read-only path that
    /// shares the L1.
    #[test]
    fn a_lower_bound_and_the_read_only_sharing_are_shown() {
        let text = include_str!(
            "../../../../tests/fixtures/h100-detail/GPU-76c63882-6b9d-28c9-45fe-ef2d0742715d.json"
        );
        let p: Profile = serde_json::from_str(text).expect("the H100 profile");
        let shown = profile(&p);
        let line = |name: &str| {
            shown
                .lines()
                .find(|l| l.trim_start().starts_with(name))
                .unwrap_or_else(|| panic!("no {name} line in {shown}"))
                .to_string()
        };
        let plateau = line("constant L1.5");
        assert!(
            plateau.contains("≥ 64 KiB") && plateau.contains(" 99"),
            "{plateau}"
        );
        let read_only = line("read-only");
        assert!(
            read_only.contains("read_only") && read_only.ends_with("(shares the L1's storage)"),
            "{read_only}"
        );
        let summary = super::super::probe::cache_summary(&p);
        assert!(
            summary
                .iter()
                .any(|l| l.starts_with("constant L1.5") && l.contains("≥ 64 KiB")),
            "{summary:?}"
        );
    }

    /// The L2's fetch (the cold stride test), where measured, is shown beside its line as
    /// the L1's is, and the profile with it passes the profile's rules.
    #[test]
    fn the_l2_fetch_is_shown_beside_its_line() {
        let text = include_str!(
            "../../../../tests/fixtures/h100-detail/GPU-76c63882-6b9d-28c9-45fe-ef2d0742715d.json"
        );
        let mut p: Profile = serde_json::from_str(text).expect("the H100 profile");
        let Section::Measured(h) = &mut p.caches else {
            panic!("the fixture's caches are measured");
        };
        let l2 = h
            .levels
            .iter_mut()
            .find(|l| l.name == "L2")
            .expect("an L2 level");
        assert_eq!((l2.line_bytes, l2.fetch_bytes), (Some(128), None));
        l2.fetch_bytes = Some(64);
        memtune_core::validate::validate(&p).expect("a valid profile");
        let shown = profile(&p);
        let line = shown
            .lines()
            .find(|l| l.trim_start().starts_with("L2 ") && l.contains(" l2 "))
            .unwrap_or_else(|| panic!("no L2 cache line in {shown}"));
        assert!(line.contains("128 bytes (64 bytes fetch)"), "{line}");
        let summary = super::super::probe::cache_summary(&p);
        assert!(
            summary
                .iter()
                .any(|l| l.starts_with("L2 (") && l.contains("line 128 bytes (64 bytes fetch)")),
            "{summary:?}"
        );
    }
}
