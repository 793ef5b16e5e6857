//! Which SMs share one copy of a TLB level (seed 000 section 3.3), without testing every pair.
//!
//! Two SMs share a level when a chain that fits the level on one SM stops fitting while the
//! other SM walks an equal chain: the shared copy then holds both chains' pages. The chain
//! is a quarter short of the level's entries at a stride of one page, so it fits alone (and
//! already misses every faster level, which then changes nothing) but two of them do not.
//!
//! SMs sharing a copy are consecutive on the GPUs measured so far (seed 000: TPC and GPC
//! groups), so the search finds the group of SM 0 by doubling the distance to its partner
//! and then bisecting (about 2 log2(group) pairs), then verifies the group size at a few
//! other groups (first member shares with the last, not with the next group, not with the
//! previous). Where a verification fails (disabled SMs make uneven groups), the size is
//! searched again from there, and the most common size is reported.

use super::backend::{BackendError, MemorySystem};
use super::robust::{median, NOISE_FLOOR};
use memtune_core::profile::{MemoryKind, TlbLevel};
use std::collections::HashMap;

/// Samples come in batches of this size (pairs, and each SM's chain alone)...
const BATCH: usize = 3;
/// ...until the decision is clear, or this many pair samples were taken.
const MAX_PAIR_SAMPLES: usize = 90;

/// Sets `shared_by_sms` on each level. `on_level(index)` follows each level.
pub(crate) fn measure_sharing(
    system: &mut dyn MemorySystem,
    kind: MemoryKind,
    bound: u64,
    levels: &mut [TlbLevel],
    on_level: &mut dyn FnMut(usize),
) -> Result<(), BackendError> {
    let sm_count = system.sm_count();
    for (index, level) in levels.iter_mut().enumerate() {
        let loads = (level.entries - level.entries / 4).max(1);
        let footprint = loads.saturating_mul(level.page_bytes);
        // A single SM shares with no one; two chains must fit in memory to test.
        if sm_count < 2 || footprint.saturating_mul(2) > bound {
            level.shared_by_sms = (sm_count < 2).then_some(1);
            on_level(index);
            continue;
        }
        let mut test = PairTest {
            system: &mut *system,
            kind,
            stride: level.page_bytes,
            footprint,
            penalty: level.miss_penalty_cycles,
            alone: HashMap::new(),
        };
        level.shared_by_sms = Some(group_size(&mut test, sm_count)?);
        on_level(index);
    }
    Ok(())
}

/// Answers "do SMs a and b share this level?".
trait Shares {
    fn shares(&mut self, a: u32, b: u32) -> Result<bool, BackendError>;
}

struct PairTest<'a> {
    system: &'a mut dyn MemorySystem,
    kind: MemoryKind,
    stride: u64,
    footprint: u64,
    penalty: f64,
    /// Per SM: samples of its chain alone, kept across questions.
    alone: HashMap<u32, Vec<f64>>,
}

impl Shares for PairTest<'_> {
    /// Shared when SM a's chain, with SM b walking beside it, is slower than alone by more
    /// than half the level's miss penalty. Samples of both come in small batches until the
    /// difference of their medians is clearly on one side of that line (a large penalty
    /// takes one batch, a penalty near the noise many).
    fn shares(&mut self, a: u32, b: u32) -> Result<bool, BackendError> {
        let mut pair = Vec::new();
        loop {
            for _ in 0..BATCH {
                pair.push(
                    self.system
                        .chase_pair(self.kind, self.stride, self.footprint, a, b)?,
                );
            }
            let alone = self.alone.entry(a).or_default();
            while alone.len() < pair.len().max(3 * BATCH) {
                alone.push(
                    self.system
                        .chase(self.kind, self.stride, self.footprint, a)?,
                );
            }
            let base = median(alone);
            let deviations: Vec<f64> = alone.iter().map(|y| (y - base).abs()).collect();
            let spread = (1.4826 * median(&deviations)).max(NOISE_FLOOR * base);
            let rise = median(&pair) - base;
            let uncertainty =
                1.25 * spread * (1.0 / pair.len() as f64 + 1.0 / alone.len() as f64).sqrt();
            let margin = rise - self.penalty / 2.0;
            if margin.abs() > 3.0 * uncertainty || pair.len() >= MAX_PAIR_SAMPLES {
                return Ok(margin > 0.0);
            }
        }
    }
}

/// The number of consecutive SMs sharing one copy.
fn group_size(test: &mut dyn Shares, sm_count: u32) -> Result<u32, BackendError> {
    let first = group_from(test, 0, sm_count)?;
    let groups = sm_count / first;
    let mut starts: Vec<u32> = [1, groups / 2, groups.saturating_sub(1)]
        .into_iter()
        .filter(|&g| g > 0 && g < groups)
        .map(|g| g * first)
        .collect();
    starts.dedup();
    let mut sizes = vec![first];
    for start in starts {
        let size = if verify_group(test, start, first, sm_count)? {
            first
        } else {
            group_from(test, start, sm_count)?
        };
        sizes.push(size);
    }
    Ok(most_common(&sizes))
}

/// The most frequent size; ties go to the earliest found (SM 0's group first).
fn most_common(sizes: &[u32]) -> u32 {
    let count = |s: u32| sizes.iter().filter(|&&x| x == s).count();
    sizes.iter().copied().fold(
        sizes[0],
        |best, s| if count(s) > count(best) { s } else { best },
    )
}

/// The size of the group starting at `start`: doubling the partner's distance while they
/// share, then bisecting between the last distance that shared and the first that did not.
fn group_from(test: &mut dyn Shares, start: u32, sm_count: u32) -> Result<u32, BackendError> {
    let last = sm_count - 1 - start; // largest distance available
    if last == 0 || !test.shares(start, start + 1)? {
        return Ok(1);
    }
    let (mut shared, mut apart) = (1u32, None);
    let mut distance = 2u32;
    while distance <= last {
        if test.shares(start, start + distance)? {
            shared = distance;
            distance *= 2;
        } else {
            apart = Some(distance);
            break;
        }
    }
    let mut apart = match apart {
        Some(d) => d,
        None if shared == last => return Ok(last + 1),
        None => {
            if test.shares(start, start + last)? {
                return Ok(last + 1);
            }
            last
        }
    };
    while apart - shared > 1 {
        let mid = shared + (apart - shared) / 2;
        if test.shares(start, start + mid)? {
            shared = mid;
        } else {
            apart = mid;
        }
    }
    Ok(apart)
}

/// Whether SMs `start..start + size` behave as one group.
fn verify_group(
    test: &mut dyn Shares,
    start: u32,
    size: u32,
    sm_count: u32,
) -> Result<bool, BackendError> {
    let end = start + size; // first SM of the next group
    if size > 1 && end <= sm_count && !test.shares(start, end - 1)? {
        return Ok(false);
    }
    if end < sm_count && test.shares(start, end)? {
        return Ok(false);
    }
    Ok(!test.shares(start, start - 1)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Groups given explicitly; counts the questions asked.
    struct Groups {
        group_of: Vec<u32>,
        asked: usize,
    }

    impl Shares for Groups {
        fn shares(&mut self, a: u32, b: u32) -> Result<bool, BackendError> {
            self.asked += 1;
            Ok(self.group_of[a as usize] == self.group_of[b as usize])
        }
    }

    fn regular(sm_count: u32, size: u32) -> Groups {
        Groups {
            group_of: (0..sm_count).map(|sm| sm / size).collect(),
            asked: 0,
        }
    }

    #[test]
    fn finds_regular_groups_with_few_questions() {
        for (sms, size) in [
            (56, 10),
            (56, 2),
            (13, 3),
            (13, 1),
            (13, 13),
            (60, 60),
            (2, 2),
        ] {
            let mut g = regular(sms, size);
            assert_eq!(
                group_size(&mut g, sms).unwrap(),
                size,
                "{sms} SMs in groups of {size}"
            );
            assert!(g.asked < 25, "{} questions for {sms}/{size}", g.asked);
        }
    }

    #[test]
    fn uneven_groups_report_the_common_size() {
        // Seed 000, P100: groups of 10 with one group of 8 (disabled SMs).
        let mut group_of: Vec<u32> = (0..30).map(|sm| sm / 10).collect();
        group_of.extend((0..8).map(|_| 3));
        group_of.extend((0..18).map(|sm| 4 + sm / 10));
        let mut g = Groups { group_of, asked: 0 };
        assert_eq!(group_size(&mut g, 56).unwrap(), 10);
    }
}
