//! The profile's sections as tables and figures: device, TLB and random access per memory
//! kind, caches, shared-memory staging, bandwidth.

use super::html::{esc, facts, figure, note, section, table};
use crate::plot;
use memtune_core::human::{bandwidth, bytes, rate, seconds, sig3};
use memtune_core::profile::{CacheLevel, CachePath, MemoryKind, Profile, Section};

fn num(v: impl std::fmt::Display) -> String {
    format!("{v}")
}

/// A cache level's line, with what one miss fetches where that differs (`128 bytes (32 bytes
/// fetch)`); `None` where the line is unknown.
pub(crate) fn cache_line(l: &CacheLevel) -> Option<String> {
    let line = l.line_bytes?;
    Some(match l.fetch_bytes {
        Some(fetch) if fetch != line => format!("{} ({} fetch)", bytes(line), bytes(fetch)),
        _ => bytes(line),
    })
}

/// What the sharing test said of a read-only level, for human output; `None` elsewhere.
pub(crate) fn sharing_note(l: &CacheLevel) -> Option<String> {
    (l.path == CachePath::ReadOnly).then(|| {
        match l.shares_l1 {
            Some(true) => "shares the L1's storage",
            Some(false) => "its own storage, apart from the L1",
            None => "sharing with the L1 not known",
        }
        .to_string()
    })
}

/// The section's status where it holds no measurement.
fn status<T>(s: &Section<T>) -> Option<String> {
    match s {
        Section::Measured(_) => None,
        other => Some(note(&other.status_line())),
    }
}

pub fn device(p: &Profile, source: &str) -> String {
    let d = &p.device;
    let pv = &p.provenance;
    let rows = [
        ("name", esc(&d.name)),
        ("UUID", esc(&d.uuid)),
        ("compute capability", num(d.compute_capability)),
        ("SMs", num(d.sm_count)),
        ("global memory", bytes(d.global_memory_bytes)),
        ("L2 (device attribute)", bytes(d.l2_bytes)),
        (
            "shared memory",
            format!(
                "{} per block ({} opt-in), {} per SM",
                bytes(d.shared_memory_per_block_bytes),
                bytes(d.shared_memory_per_block_optin_bytes),
                bytes(d.shared_memory_per_sm_bytes)
            ),
        ),
        (
            "clocks",
            format!(
                "SM {} MHz, memory {} MHz, {}-bit bus",
                d.sm_clock_khz / 1000,
                d.memory_clock_khz / 1000,
                d.memory_bus_width_bits
            ),
        ),
        ("driver", format!("CUDA {}", esc(&d.driver_version))),
        (
            "profiled",
            format!(
                "{} by memtune {} (probe v{}) in {}{}",
                esc(&pv.created_at),
                esc(&pv.memtune_version),
                pv.probe_version,
                seconds(pv.duration_seconds),
                pv.simulator
                    .as_ref()
                    .map(|n| format!(", <span class=\"bad\">SIMULATED ({})</span>", esc(n)))
                    .unwrap_or_default()
            ),
        ),
        ("digest", format!("<code>{}</code>", esc(&p.digest))),
        ("file", esc(source)),
    ];
    section("device", "Device", &facts(&rows))
}

pub fn tlb(p: &Profile) -> String {
    let mut body = String::new();
    for kind in MemoryKind::ALL {
        body.push_str(&format!("<h3>{kind} memory</h3>\n"));
        let t = match p.tlb.get(kind) {
            Section::Measured(t) => t,
            other => {
                body.push_str(&status(other).unwrap_or_default());
                continue;
            }
        };
        let rows: Vec<Vec<String>> = t
            .all_levels()
            .into_iter()
            .enumerate()
            .map(|(i, (l, stable))| {
                vec![
                    if stable {
                        format!("L{}", i + 1)
                    } else {
                        format!("L{} (unstable: not planned with)", i + 1)
                    },
                    num(l.entries),
                    bytes(l.page_bytes),
                    bytes(l.reach_bytes),
                    sig3(l.miss_penalty_cycles),
                    seconds(l.miss_penalty_ns * 1e-9),
                    format!("{:.2}", l.confidence),
                    l.shared_by_sms.map_or("-".into(), num),
                ]
            })
            .collect();
        if rows.is_empty() {
            body.push_str(&note(&format!(
                "no TLB miss up to {}",
                bytes(t.swept_up_to_bytes)
            )));
        } else {
            let head = [
                "level",
                "entries",
                "page",
                "reach",
                "miss cycles",
                "miss time",
                "confidence",
                "shared by SMs",
            ];
            body.push_str(&table(&head, &rows));
        }
        body.push_str(&note(&format!(
            "swept up to {}; base latency {} cycles; {} strides",
            bytes(t.swept_up_to_bytes),
            sig3(t.base_latency_cycles),
            t.curves.len()
        )));
        body.push_str(&figure(&plot::tlb_chart(&p.device.name, kind, t).to_svg()));
    }
    section("tlb", "TLB", &body)
}

pub fn random_access(p: &Profile) -> String {
    let mut body = String::new();
    for kind in MemoryKind::ALL {
        body.push_str(&format!("<h3>{kind} memory</h3>\n"));
        let r = match p.random_access.get(kind) {
            Section::Measured(r) => r,
            other => {
                body.push_str(&status(other).unwrap_or_default());
                continue;
            }
        };
        let mut rows = Vec::new();
        for (what, points) in [("reads", &r.points), ("atomicAdd", &r.atomic_points)] {
            let best = points
                .iter()
                .max_by(|a, b| a.reads_per_second.total_cmp(&b.reads_per_second));
            let last = points.iter().max_by_key(|p| p.region_bytes);
            if let (Some(b), Some(l)) = (best, last) {
                rows.push(vec![
                    what.to_string(),
                    format!("{} at {}", rate(b.reads_per_second), bytes(b.region_bytes)),
                    format!("{} at {}", rate(l.reads_per_second), bytes(l.region_bytes)),
                ]);
            }
        }
        body.push_str(&table(&["accesses", "fastest", "largest region"], &rows));
        body.push_str(&note(&format!(
            "knee: {}; a drawn and skipped position costs {} of the fastest read",
            r.knee_bytes.map_or("none in the swept range".into(), bytes),
            r.draw_cost_relative.map_or("-".into(), sig3)
        )));
        let fig = plot::random_access_chart(&p.device.name, kind, r);
        body.push_str(&figure(&fig.to_svg()));
    }
    section("random-access", "Random access", &body)
}

pub fn caches(p: &Profile) -> String {
    let h = match &p.caches {
        Section::Measured(h) => h,
        other => return section("caches", "Caches", &status(other).unwrap_or_default()),
    };
    let rows: Vec<Vec<String>> = h
        .levels
        .iter()
        .map(|l| {
            vec![
                esc(&l.name),
                l.path.to_string(),
                l.carveout.to_string(),
                l.size_shown(bytes),
                cache_line(l).unwrap_or_else(|| "?".into()),
                l.ways.map_or("?".into(), num),
                sig3(l.hit_latency_cycles),
                l.attribute_bytes.map_or("-".into(), bytes),
            ]
        })
        .collect();
    let head = [
        "level",
        "path",
        "carveout",
        "size",
        "line",
        "ways",
        "hit cycles",
        "device says",
    ];
    let mut body = table(&head, &rows);
    let cycles = |c: Option<f64>| c.map_or("not measured".into(), |c| sig3(c) + " cycles");
    body.push_str(&note(&format!(
        "DRAM {}, shared memory {}",
        cycles(h.dram_latency_cycles),
        cycles(h.shared_memory_latency_cycles)
    )));
    if let Some(d) = &h.dram_latency_distribution {
        body.push_str(&note(&format!("DRAM {d}")));
    }
    for l in &h.levels {
        if let Some(n) = sharing_note(l) {
            body.push_str(&note(&format!("{}: {n}", l.name)));
        }
    }
    for path in [
        CachePath::L1,
        CachePath::L2,
        CachePath::ReadOnly,
        CachePath::Constant,
    ] {
        if let Some(fig) = plot::cache_chart(&p.device.name, path, h) {
            body.push_str(&figure(&fig.to_svg()));
        }
    }
    section("caches", "Caches", &body)
}

pub fn staging(p: &Profile) -> String {
    let t = match &p.shared_memory_staging {
        Section::Measured(t) => t,
        other => {
            let body = status(other).unwrap_or_default();
            return section("staging", "Shared-memory staging", &body);
        }
    };
    let block = |b: [u32; 3]| format!("{}x{}x{}", b[0], b[1], b[2]);
    let ms = memtune_core::human::millis;
    let rows: Vec<Vec<String>> = t
        .entries
        .iter()
        .map(|e| {
            vec![
                esc(&e.dtype),
                num(e.repeats),
                block(e.grid),
                format!("{} {}", block(e.best_plain_block), ms(e.best_plain_ms)),
                format!("{} {}", block(e.best_staged_block), ms(e.best_staged_ms)),
                format!("{}×", sig3(e.benefit)),
                match (e.best_streaming_block, e.best_streaming_ms) {
                    (Some(b), Some(t)) => format!("{} {}", block(b), ms(t)),
                    _ => "-".into(),
                },
            ]
        })
        .collect();
    let head = [
        "dtype",
        "repeats",
        "grid",
        "best plain",
        "best staged",
        "benefit",
        "best streaming",
    ];
    let mut body = table(&head, &rows);
    body.push_str(&figure(&crate::plot::staging::staging_svg(
        &p.device.name,
        t,
    )));
    section("staging", "Shared-memory staging (3-D stencil)", &body)
}

pub fn bandwidth_section(p: &Profile) -> String {
    let b = match &p.bandwidth {
        Section::Measured(b) => b,
        other => return section("bandwidth", "Bandwidth", &status(other).unwrap_or_default()),
    };
    let mut rows = vec![
        (
            "device to device (read + written)",
            bandwidth(b.device_to_device),
        ),
        ("host to device", bandwidth(b.host_to_device)),
        ("device to host", bandwidth(b.device_to_host)),
    ];
    let zero: Vec<(String, String)> = b
        .zero_copy_read
        .iter()
        .map(|(k, v)| (format!("zero-copy read, {k}"), bandwidth(*v)))
        .collect();
    rows.extend(zero.iter().map(|(k, v)| (k.as_str(), v.clone())));
    if let Some(l2) = &b.l2_read {
        rows.push(("L2 read", l2_read_text(l2)));
    }
    section("bandwidth", "Bandwidth", &facts(&rows))
}

/// `4.9 TB/s (12.50 MiB read 328 times, 16-byte loads that skip L1)`.
pub(crate) fn l2_read_text(l2: &memtune_core::profile::L2Read) -> String {
    format!(
        "{} ({} read {} times, 16-byte loads that skip L1)",
        bandwidth(l2.bytes_per_second),
        memtune_core::size::format_bytes(l2.region_bytes),
        l2.repeats
    )
}
