//! Levels of pinned and managed memory checked against the previous probe of the same GPU.
//!
//! Their translations follow each process's allocations, and allocations within one process
//! vary less than between processes: levels that fresh allocations of one probe confirmed
//! were absent from the probes before and after it (docs/calibration.md). The confirmation
//! can only allocate afresh within its own process; the previous probe of the GPU is another
//! process. So a level of these kinds stays in `levels` only where the previous probe also
//! found it (kept or unstable), with the same page and entries within 10%
//! (`confirm_rule::same_entries`); the others move to `unstable_levels` with a note. Without
//! a previous probe every level moves: the first probe of a GPU plans pinned and managed
//! memory from its random-access curves, and the next `cargo tune` can keep what both found.

use super::confirm::describe;
use super::confirm_rule::same_entries;
use memtune_core::profile::{MemoryKind, TlbKind};

/// Whether `kind`'s levels are checked across probes (device memory's stay put).
pub fn crosses_probes(kind: MemoryKind) -> bool {
    matches!(kind, MemoryKind::Pinned | MemoryKind::Managed)
}

/// Moves each of `tlb.levels` that `previous` lacks to `tlb.unstable_levels`, with a note;
/// `previous` is the last probe's section of the kind and `when` says when it was made.
pub fn cross_check(tlb: &mut TlbKind, previous: Option<(&TlbKind, &str)>) {
    let mut kept = Vec::new();
    for level in tlb.levels.drain(..) {
        let found = previous.is_some_and(|(p, _)| {
            p.levels
                .iter()
                .chain(&p.unstable_levels)
                .any(|l| l.page_bytes == level.page_bytes && same_entries(l.entries, level.entries))
        });
        if found {
            kept.push(level);
            continue;
        }
        tlb.notes.push(match previous {
            Some((_, when)) => format!(
                "{}: unstable, not found by the previous probe of this GPU ({when}); not used by planners",
                describe(&level)
            ),
            None => format!(
                "{}: unstable until a second probe of this GPU finds it again (these translations follow each process's allocations); run `cargo tune` again",
                describe(&level)
            ),
        });
        tlb.unstable_levels.push(level);
    }
    tlb.levels = kept;
    // The profile lists levels fastest (smallest reach) first, unstable ones too.
    tlb.unstable_levels.sort_by_key(|l| l.reach_bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::confirm::test_level as level;
    use memtune_core::profile::TlbLevel;

    fn kind(levels: Vec<TlbLevel>, unstable: Vec<TlbLevel>) -> TlbKind {
        TlbKind {
            levels,
            swept_up_to_bytes: 1 << 33,
            base_latency_cycles: 1000.0,
            curves: Vec::new(),
            notes: Vec::new(),
            unstable_levels: unstable,
        }
    }

    #[test]
    fn a_level_the_previous_probe_had_stays_and_the_others_move_with_a_note() {
        let mut now = kind(vec![level(2133, 64 << 10), level(4000, 4 << 10)], vec![]);
        // The previous probe had the second one, unstable, 5% off; not the first.
        let before = kind(vec![], vec![level(4200, 4 << 10)]);
        cross_check(&mut now, Some((&before, "2026-11-27T05:57:33Z")));
        assert_eq!(now.levels, vec![level(4000, 4 << 10)]);
        assert_eq!(now.unstable_levels, vec![level(2133, 64 << 10)]);
        assert!(
            now.notes[0].contains("not found by the previous probe"),
            "{:?}",
            now.notes
        );
        // Another page size or entries 20% off do not match.
        let mut now = kind(vec![level(4000, 4 << 10)], vec![]);
        cross_check(
            &mut now,
            Some((
                &kind(vec![level(4000, 64 << 10), level(4800, 4 << 10)], vec![]),
                "t",
            )),
        );
        assert!(now.levels.is_empty());
    }

    #[test]
    fn without_a_previous_probe_every_level_waits_for_a_second() {
        let mut now = kind(vec![level(16, 16 << 20)], vec![level(900, 4 << 10)]);
        cross_check(&mut now, None);
        assert!(now.levels.is_empty());
        // Smallest reach first, whichever step made them unstable.
        assert_eq!(
            now.unstable_levels,
            vec![level(900, 4 << 10), level(16, 16 << 20)]
        );
        assert!(
            now.notes[0].contains("run `cargo tune` again"),
            "{:?}",
            now.notes
        );
        assert!(crosses_probes(MemoryKind::Pinned) && crosses_probes(MemoryKind::Managed));
        assert!(!crosses_probes(MemoryKind::Device));
    }
}
