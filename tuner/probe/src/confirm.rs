//! The confirmation of a kind's TLB levels: each level the sweep found is measured again,
//! apart from the sweep, and kept in the profile's `levels` only where its step shows again
//! where the sweep put it; the others move to `unstable_levels`, each with a note.
//!
//! Per pass, every level is re-measured at its page stride over footprints from a third of
//! its reach to three times it (`WINDOW`; clamped to the footprint bound, to `WINDOW_WALKS`
//! times the sweep's longest walk and, for pinned memory, to `PINNED_FRESH_BYTES`), on
//! the sweep's geometric grid and bisection (`sweep::sweep_window`), and its step is read
//! again (`confirm_rule::locate`). Pinned and managed memory get a freshly allocated buffer
//! before each pass ([`MemorySystem::fresh_allocation`]): their translations follow each
//! allocation's physical pages, which is where their levels move from run to run (an H100's
//! pinned first level: 3715, 4652 and 5004 entries in three probes in a row). Device memory,
//! whose levels stay put, is re-measured once on its own buffer, against noise.
//!
//! A level is stable when every pass (two on fresh allocations) finds its step within 10%
//! of the sweep's entries (`confirm_rule::judge`). Cost: a window is about 10 chases on its
//! grid plus 5-10 of bisection, one sample each at long chains (more where noise asks), of
//! at most three times the level's entries in loads; see `docs/profile.md` ("Confirmation").

use super::backend::{BackendError, MemorySystem};
use super::confirm_rule::{judge, locate, Expected, Verdict};
use super::infer_tlb::curve_noise;
use super::options::ProbeOptions;
use super::sweep::sweep_window;
use memtune_core::profile::{ChaseCurve, MemoryKind, TlbKind, TlbLevel};

/// A window spans footprints from the reach over this factor to the reach times it: an
/// H200's pinned staircase (6-32 MiB around reaches of 12-22 MiB) fits inside.
const WINDOW: f64 = 3.0;
/// A level is re-measured only where its window reaches at least this factor past its
/// reach on both sides (the bound, the longest walk or the pinned allocation may cut it);
/// otherwise device memory keeps it as found and pinned and managed memory mark it
/// unstable, each with a note.
const MIN_SIDE: f64 = 1.5;
/// Passes, each on a fresh allocation, for pinned and managed memory (quick: one). Two:
/// the previous probe of the GPU is the third look (`cross_check.rs`).
const FRESH_PASSES: usize = 2;
/// The largest fresh allocation of pinned memory a window may ask for: allocating pins
/// every page, which costs seconds per few GiB (docs/calibration.md). A pinned level whose
/// window needs more (a reach past 683 MiB) is unstable, with a note. Managed memory is
/// allocated lazily: a window touches only its ring's pages.
const PINNED_FRESH_BYTES: u64 = 1 << 30;
/// A window's walks may be this many times the sweep's longest (`max_loads_per_walk`): a
/// level near the sweep's longest walk still gets its window of three times its entries. Walks stay far inside the L2 (one
/// line a load) and the GPU backend's longest chain (65536 loads).
const WINDOW_WALKS: u64 = 4;
/// Passes for device memory, on the sweep's buffer.
const SAME_BUFFER_PASSES: usize = 1;

/// One level's window: its page stride and load counts.
#[derive(Debug, Clone, Copy)]
struct Window {
    stride: u64,
    lo: u64,
    hi: u64,
}

/// Confirms `tlb.levels` of `kind` (see the module docs); unstable levels move to
/// `tlb.unstable_levels` with a note. `on_window(done, total)` is called after each window.
/// An error leaves `tlb` as it was.
pub(crate) fn confirm_levels(
    system: &mut dyn MemorySystem,
    kind: MemoryKind,
    options: &ProbeOptions,
    tlb: &mut TlbKind,
    on_window: &mut dyn FnMut(usize, usize),
) -> Result<(), BackendError> {
    if tlb.levels.is_empty() {
        return Ok(());
    }
    let bound = options
        .max_footprint_bytes
        .unwrap_or(u64::MAX)
        .min(system.max_footprint(kind));
    let max_loads = options.max_loads_per_walk.saturating_mul(WINDOW_WALKS);
    let window_options = ProbeOptions {
        max_loads_per_walk: max_loads,
        ..options.clone()
    };
    let fresh = matches!(kind, MemoryKind::Pinned | MemoryKind::Managed);
    let window_bound = match kind {
        MemoryKind::Pinned => bound.min(PINNED_FRESH_BYTES),
        MemoryKind::Device | MemoryKind::Managed => bound,
    };
    let windows: Vec<Option<Window>> = tlb
        .levels
        .iter()
        .map(|l| window(l, window_bound, max_loads))
        .collect();
    let passes = match (fresh, options.quick) {
        (true, false) => FRESH_PASSES,
        (true, true) | (false, _) => SAME_BUFFER_PASSES,
    };
    let needed = windows
        .iter()
        .flatten()
        .map(|w| w.hi.saturating_mul(w.stride))
        .max()
        .unwrap_or(0);
    let refs: Vec<&ChaseCurve> = tlb.curves.iter().collect();
    let noise = curve_noise(&refs);
    let total = passes * windows.iter().flatten().count();
    let mut readings: Vec<Vec<Option<u64>>> = vec![Vec::new(); tlb.levels.len()];
    let mut renewed = false;
    let mut done = 0;
    for _ in 0..passes {
        if fresh && needed > 0 {
            renewed |= system.fresh_allocation(kind, needed)?;
        }
        for (i, (level, w)) in tlb.levels.iter().zip(&windows).enumerate() {
            let Some(w) = w else { continue };
            let curve = sweep_window(
                system,
                kind,
                &window_options,
                noise,
                &tlb.curves,
                w.stride,
                w.lo,
                w.hi,
            )?;
            readings[i].push(locate(&curve, &noise, &expected(level)));
            done += 1;
            on_window(done, total);
        }
    }
    let place = if renewed {
        "on fresh allocations"
    } else {
        "on the sweep's buffer"
    };
    let mut stable = Vec::new();
    for ((level, w), read) in tlb.levels.drain(..).zip(windows).zip(readings) {
        if w.is_none() {
            if fresh {
                tlb.notes.push(format!(
                    "{}: unstable, not measured again: its window ({WINDOW}x either side of the reach) does not fit the footprint bound, the longest walk or (pinned memory) {} a fresh allocation; not used by planners",
                    describe(&level),
                    memtune_core::human::bytes(PINNED_FRESH_BYTES)
                ));
                tlb.unstable_levels.push(level);
            } else {
                tlb.notes.push(format!(
                    "{}: kept unconfirmed, its window ({WINDOW}x either side of the reach) does not fit the footprint bound or the longest walk",
                    describe(&level)
                ));
                stable.push(level);
            }
            continue;
        }
        match judge(level.entries, &read) {
            Verdict::Stable => stable.push(level),
            Verdict::Unstable { readings } => {
                tlb.notes.push(unstable_note(&level, &readings, place));
                tlb.unstable_levels.push(level);
            }
        }
    }
    tlb.levels = stable;
    tlb.unstable_levels.sort_by_key(|l| l.reach_bytes);
    Ok(())
}

fn expected(level: &TlbLevel) -> Expected {
    Expected {
        entries: level.entries,
        page_bytes: level.page_bytes,
        penalty_cycles: level.miss_penalty_cycles,
    }
}

/// The window of `level`, or `None` where the bound or the longest walk leave less than
/// [`MIN_SIDE`] on either side of its reach.
fn window(level: &TlbLevel, bound: u64, max_loads: u64) -> Option<Window> {
    let stride = level.page_bytes.max(1);
    let entries = level.entries as f64;
    let hi = ((entries * WINDOW).floor() as u64)
        .min(max_loads)
        .min(bound / stride);
    let lo = ((entries / WINDOW).ceil() as u64).max(1);
    let fits = hi as f64 >= entries * MIN_SIDE && lo as f64 <= entries / MIN_SIDE;
    fits.then_some(Window { stride, lo, hi })
}

/// `E x P (+C cycles)`, as the notes name a level.
pub(crate) fn describe(level: &TlbLevel) -> String {
    format!(
        "{} x {} (+{:.1} cycles)",
        level.entries,
        memtune_core::human::bytes(level.page_bytes),
        level.miss_penalty_cycles
    )
}

/// A level of `entries` pages of `page_bytes`, for tests.
#[cfg(test)]
pub(crate) fn test_level(entries: u64, page_bytes: u64) -> TlbLevel {
    TlbLevel {
        entries,
        page_bytes,
        reach_bytes: entries * page_bytes,
        miss_penalty_cycles: 100.0,
        miss_penalty_ns: 0.0,
        confidence: 0.9,
        shared_by_sms: None,
    }
}

/// Why a level is unstable: what each pass read.
fn unstable_note(level: &TlbLevel, readings: &[Option<u64>], place: &str) -> String {
    let read: Vec<String> = readings
        .iter()
        .map(|r| r.map_or("no step".to_string(), |e| format!("{e} entries")))
        .collect();
    format!(
        "{}: unstable, measured again at its page stride {place}: {} (the sweep's entries \
         within 10% needed); not used by planners",
        describe(level),
        read.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(entries: u64, page_bytes: u64) -> TlbLevel {
        test_level(entries, page_bytes)
    }

    #[test]
    fn a_window_spans_three_times_the_reach_either_way() {
        let w = window(&level(4096, 4096), 1 << 40, 8192).expect("fits");
        // The longest walk cuts the top at 8192 loads, still past 1.5x.
        assert_eq!((w.stride, w.lo, w.hi), (4096, 1366, 8192));
        // The confirmation's own longest walk gives a level near the sweep's its window.
        let w = window(&level(6107, 4096), 1 << 40, 8192 * WINDOW_WALKS).expect("fits");
        assert_eq!((w.lo, w.hi), (2036, 18321));
        assert!(window(&level(6107, 4096), 1 << 40, 8192).is_none());
        let w = window(&level(65, 32 << 20), 1 << 40, 8192).expect("fits");
        assert_eq!((w.lo, w.hi), (22, 195));
    }

    #[test]
    fn a_level_without_room_past_its_reach_has_no_window() {
        // The bound leaves 1.2x the reach.
        assert!(window(&level(1000, 2 << 20), 1200 * (2 << 20), 8192).is_none());
        // Too few entries for a third of them to be below two thirds.
        assert!(window(&level(1, 2 << 20), 1 << 40, 8192).is_none());
    }
}
