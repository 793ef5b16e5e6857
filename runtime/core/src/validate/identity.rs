//! Rules for `device` and `provenance`.

use super::{at, Checker, MAX_BYTES, MAX_CLOCK_KHZ, MAX_DURATION_S, MAX_SM_COUNT, MIN_CLOCK_KHZ};
use crate::profile::{MemoryKind, Profile, Section};

/// Largest shared-memory size of a block or an SM (1 GiB).
const MAX_SHARED_BYTES: u64 = 1 << 30;
/// Widest memory bus in bits.
const MAX_BUS_BITS: u64 = 1 << 16;
/// Largest compute capability part.
const MAX_CC: u64 = 99;
/// Most probe options.
const MAX_OPTIONS: usize = 256;

pub(super) fn check(c: &mut Checker, p: &Profile) {
    device(c, p);
    provenance(c, p);
}

fn device(c: &mut Checker, p: &Profile) {
    let d = &p.device;
    let path = |k: &str| at("device", k);
    c.name(&path("name"), &d.name, false);
    let cc = path("compute_capability");
    let cc_major = u64::from(d.compute_capability.major);
    let cc_minor = u64::from(d.compute_capability.minor);
    c.int_in(&at(&cc, "major"), cc_major, 0, MAX_CC);
    c.int_in(&at(&cc, "minor"), cc_minor, 0, MAX_CC);
    if d.sm_count == 0 {
        if anything_measured(p) {
            c.fail(
                &path("sm_count"),
                "0 in a profile with measured sections (0 is for an unprobed identity)",
            );
        }
    } else {
        c.int_in(&path("sm_count"), d.sm_count.into(), 1, MAX_SM_COUNT.into());
    }
    c.int_in(&path("l2_bytes"), d.l2_bytes, 0, MAX_BYTES);
    c.int_in(
        &path("global_memory_bytes"),
        d.global_memory_bytes,
        0,
        MAX_BYTES,
    );
    let block = d.shared_memory_per_block_bytes;
    let optin = d.shared_memory_per_block_optin_bytes;
    let per_sm = d.shared_memory_per_sm_bytes;
    for (key, v) in [
        ("shared_memory_per_block_bytes", block),
        ("shared_memory_per_block_optin_bytes", optin),
        ("shared_memory_per_sm_bytes", per_sm),
    ] {
        c.int_in(&path(key), v, 0, MAX_SHARED_BYTES);
    }
    if optin > 0 && block > optin {
        c.fail(
            &path("shared_memory_per_block_bytes"),
            format!("{block} is more than the opt-in maximum {optin}"),
        );
    }
    if optin > 0 && per_sm > 0 && optin > per_sm {
        c.fail(
            &path("shared_memory_per_block_optin_bytes"),
            format!("{optin} is more than the SM's {per_sm}"),
        );
    }
    for (key, khz) in [
        ("sm_clock_khz", d.sm_clock_khz),
        ("memory_clock_khz", d.memory_clock_khz),
    ] {
        if khz != 0 && !(MIN_CLOCK_KHZ..=MAX_CLOCK_KHZ).contains(&khz) {
            c.fail(
                &path(key),
                format!(
                    "{khz} kHz is neither 0 (not reported) nor within {MIN_CLOCK_KHZ}..={MAX_CLOCK_KHZ} kHz (1 MHz to 10 GHz)"
                ),
            );
        }
    }
    c.int_in(
        &path("memory_bus_width_bits"),
        d.memory_bus_width_bits.into(),
        0,
        MAX_BUS_BITS,
    );
    c.name(&path("driver_version"), &d.driver_version, true);
    if let Some(pci) = &d.pci_bus_id {
        c.name(&path("pci_bus_id"), pci, false);
    }
}

fn provenance(c: &mut Checker, p: &Profile) {
    let v = &p.provenance;
    let path = |k: &str| at("provenance", k);
    c.name(&path("memtune_version"), &v.memtune_version, false);
    c.name(&path("created_at"), &v.created_at, false);
    c.non_negative(
        &path("duration_seconds"),
        v.duration_seconds,
        MAX_DURATION_S,
    );
    c.count(&path("options"), v.options.len(), MAX_OPTIONS);
    for key in v.options.keys() {
        c.name(&path("options"), key, false);
    }
    if let Some(sim) = &v.simulator {
        c.name(&path("simulator"), sim, false);
    }
}

/// Whether any section holds measurements.
pub(super) fn anything_measured(p: &Profile) -> bool {
    fn m<T>(s: &Section<T>) -> bool {
        s.measured().is_some()
    }
    MemoryKind::ALL
        .iter()
        .any(|&k| m(p.tlb.get(k)) || m(p.random_access.get(k)))
        || m(&p.caches)
        || m(&p.shared_memory_staging)
        || m(&p.bandwidth)
}
