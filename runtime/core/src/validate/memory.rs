//! Rules for `tlb` and `random_access`, per memory kind.

use super::{
    at, idx, Checker, MAX_BYTES, MAX_CURVES, MAX_DRAW_COST, MAX_LATENCY, MAX_PAGE_BYTES,
    MAX_POINTS, MAX_RATE, MAX_TLB_ENTRIES, MAX_TLB_LEVELS, MIN_PAGE_BYTES,
};
use crate::profile::{
    MemoryKind, Profile, RandomAccessCurve, RandomAccessPoint, TlbKind, TlbLevel,
};

pub(super) fn check(c: &mut Checker, p: &Profile) {
    for kind in MemoryKind::ALL {
        let path = at("tlb", kind.as_str());
        c.section(&path, p.tlb.get(kind), |c, path, t| tlb(c, path, t, p));
        let path = at("random_access", kind.as_str());
        c.section(&path, p.random_access.get(kind), random_access);
    }
}

fn tlb(c: &mut Checker, path: &str, t: &TlbKind, p: &Profile) {
    let swept = t.swept_up_to_bytes;
    c.int_in(&at(path, "swept_up_to_bytes"), swept, 1, MAX_BYTES);
    c.positive(
        &at(path, "base_latency_cycles"),
        t.base_latency_cycles,
        MAX_LATENCY,
    );
    // Stable and unstable levels obey the same rules, each list in its own order.
    levels(c, &at(path, "levels"), &t.levels, swept, p);
    levels(
        c,
        &at(path, "unstable_levels"),
        &t.unstable_levels,
        swept,
        p,
    );
    curves(c, path, t);
}

/// The rules of one list of levels at `levels_path`, swept up to `swept` bytes.
fn levels(c: &mut Checker, levels_path: &str, list: &[TlbLevel], swept: u64, p: &Profile) {
    c.count(levels_path, list.len(), MAX_TLB_LEVELS);
    // A clock out of range is reported on its own; the penalties are not judged by it.
    let clock_khz = p.device.sm_clock_khz;
    let clock_ok =
        clock_khz == 0 || (super::MIN_CLOCK_KHZ..=super::MAX_CLOCK_KHZ).contains(&clock_khz);
    let mut previous_reach: Option<u64> = None;
    for (i, l) in list.iter().enumerate() {
        let lp = idx(levels_path, i);
        let f = |k: &str| at(&lp, k);
        let entries_ok = c.int_in(&f("entries"), l.entries, 1, MAX_TLB_ENTRIES);
        let page_ok = c.pow2_in(
            &f("page_bytes"),
            l.page_bytes,
            MIN_PAGE_BYTES,
            MAX_PAGE_BYTES,
        );
        if entries_ok && page_ok {
            // Both are bounded, so the product fits in a u64.
            let reach = l.entries * l.page_bytes;
            if l.reach_bytes != reach {
                c.fail(
                    &f("reach_bytes"),
                    format!(
                        "{} is not entries × page_bytes = {} × {} = {reach}",
                        l.reach_bytes, l.entries, l.page_bytes
                    ),
                );
            } else if reach > swept.saturating_add(l.page_bytes) {
                c.fail(
                    &f("reach_bytes"),
                    format!("{reach} lies past the sweep ({swept} bytes) by more than a page"),
                );
            }
        }
        if let Some(prev) = previous_reach {
            if l.reach_bytes <= prev {
                c.fail(
                    &f("reach_bytes"),
                    format!(
                        "{} does not exceed the previous level's {prev}: levels come fastest (smallest reach) first",
                        l.reach_bytes
                    ),
                );
            }
        }
        previous_reach = Some(l.reach_bytes);
        let cycles_ok = c.positive(
            &f("miss_penalty_cycles"),
            l.miss_penalty_cycles,
            MAX_LATENCY,
        );
        let ns_ok = c.non_negative(&f("miss_penalty_ns"), l.miss_penalty_ns, MAX_LATENCY);
        if cycles_ok && ns_ok && clock_ok {
            penalty_ns_matches_clock(
                c,
                &f("miss_penalty_ns"),
                l.miss_penalty_cycles,
                l.miss_penalty_ns,
                clock_khz,
            );
        }
        c.unit(&f("confidence"), l.confidence);
        if let Some(n) = l.shared_by_sms {
            let max = if p.device.sm_count > 0 {
                p.device.sm_count
            } else {
                super::MAX_SM_COUNT
            };
            c.int_in(&f("shared_by_sms"), n.into(), 1, max.into());
        }
    }
}

/// The raw curves of a kind: strides, and points in footprint order.
fn curves(c: &mut Checker, path: &str, t: &TlbKind) {
    let curves_path = at(path, "curves");
    if c.count(&curves_path, t.curves.len(), MAX_CURVES) {
        for (i, curve) in t.curves.iter().enumerate() {
            let cp = idx(&curves_path, i);
            let stride = curve.stride_bytes;
            c.int_in(&at(&cp, "stride_bytes"), stride, 1, MAX_BYTES);
            let points_path = at(&cp, "points");
            if !c.count(&points_path, curve.points.len(), MAX_POINTS) {
                continue;
            }
            let mut previous = 0;
            for (j, point) in curve.points.iter().enumerate() {
                let pp = idx(&points_path, j);
                let fp = point.footprint_bytes;
                if c.int_in(&at(&pp, "footprint_bytes"), fp, stride.max(1), MAX_BYTES) {
                    if fp < previous {
                        c.fail(
                            &at(&pp, "footprint_bytes"),
                            format!("{fp} is below the previous point's {previous}: points come in footprint order"),
                        );
                    }
                    previous = fp;
                }
                c.positive(
                    &at(&pp, "cycles_per_load"),
                    point.cycles_per_load,
                    MAX_LATENCY,
                );
            }
        }
    }
}

/// `ns = cycles / clock`, both rounded to hundredths by the probe; 0 ns when the clock is
/// not reported.
fn penalty_ns_matches_clock(c: &mut Checker, path: &str, cycles: f64, ns: f64, clock_khz: u64) {
    if clock_khz == 0 {
        if ns != 0.0 {
            c.fail(
                path,
                format!("{ns} with no SM clock to convert cycles by (expected 0)"),
            );
        }
        return;
    }
    let expected = cycles * 1e6 / clock_khz as f64;
    if (ns - expected).abs() > 0.02 + 0.01 * expected {
        c.fail(
            path,
            format!(
                "{ns} does not match miss_penalty_cycles {cycles} at the SM clock of {clock_khz} kHz ({expected:.2} ns)"
            ),
        );
    }
}

fn random_access(c: &mut Checker, path: &str, r: &RandomAccessCurve) {
    let points_path = at(path, "points");
    let range = points(c, &points_path, &r.points);
    if let Some(knee) = r.knee_bytes {
        let knee_path = at(path, "knee_bytes");
        if c.int_in(&knee_path, knee, 1, MAX_BYTES) {
            match range {
                Some((lo, hi)) if !(lo..=hi).contains(&knee) => c.fail(
                    &knee_path,
                    format!("{knee} lies outside the measured regions {lo}..={hi}"),
                ),
                None if r.points.is_empty() => {
                    c.fail(&knee_path, format!("{knee} with no points measured"))
                }
                _ => {}
            }
        }
    }
    if let Some(cost) = r.draw_cost_relative {
        c.positive(&at(path, "draw_cost_relative"), cost, MAX_DRAW_COST);
    }
    points(c, &at(path, "atomic_points"), &r.atomic_points);
}

/// Checks the points; returns the smallest and largest region when all are in order.
fn points(c: &mut Checker, path: &str, points: &[RandomAccessPoint]) -> Option<(u64, u64)> {
    if !c.count(path, points.len(), MAX_POINTS) {
        return None;
    }
    let mut ordered = true;
    let mut previous = 0;
    for (i, point) in points.iter().enumerate() {
        let pp = idx(path, i);
        let region = point.region_bytes;
        if c.int_in(&at(&pp, "region_bytes"), region, 1, MAX_BYTES) {
            if region < previous {
                ordered = false;
                c.fail(
                    &at(&pp, "region_bytes"),
                    format!("{region} is below the previous point's {previous}: points come in region order"),
                );
            }
            previous = region;
        } else {
            ordered = false;
        }
        c.positive(
            &at(&pp, "reads_per_second"),
            point.reads_per_second,
            MAX_RATE,
        );
    }
    match (points.first(), points.last()) {
        (Some(first), Some(last)) if ordered => Some((first.region_bytes, last.region_bytes)),
        _ => None,
    }
}
