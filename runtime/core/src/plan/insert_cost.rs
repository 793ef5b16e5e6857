//! What one hash-grouping insert costs over a scope of the table, GPU-wide.
//!
//! An insert reads its bucket's key, claims the bucket with `atomicCAS` on its first
//! occurrence and counts with `atomicAdd` (`kernels/cuda/grouping.cu`). Atomics execute at
//! L2: a scope that L2 holds keeps them there, and beyond it each one is a read-modify-write
//! of DRAM. The random-access curve's atomic points measure exactly that update (the
//! sampler's draws as `atomicAdd` of one word), so where the table's memory has them an
//! insert is priced as one atomic; the key read and the claim touch the line the count
//! update then updates, whose miss the atomic already pays. A table in pinned memory has no
//! L2 line to share: the claim and the count each cross the host link, so there an insert
//! is priced as one atomic per count plus one per claim (a key's first occurrence). Without
//! atomics, as before, an insert is priced as one random read.

use super::read_cost::ReadCost;
use super::translation::point_falls;
use super::units::bytes;
use crate::profile::{
    RandomAccessCurve, RANDOM_ATOMIC_THREADS_PER_SM, RANDOM_ATOMIC_UPDATES_PER_THREAD,
};

/// Bytes of the count word an insert updates: the atomic curve's updates are 4-byte words.
const COUNT_BYTES: f64 = 4.0;

pub(crate) struct InsertCost {
    pricing: Pricing,
    /// What the input's size says about repeated keys, when it is known.
    repeats: Option<Repeats>,
    table_bytes: f64,
    /// Atomics an insert makes that each pay the curve's price: 1 where they meet in L2,
    /// more over the host link.
    atomics_per_insert: f64,
}

enum Pricing {
    /// Seconds per atomic update, from the curve's atomic points.
    Atomic(ReadCost),
    /// Seconds per random read, from the curve's points.
    Read(ReadCost),
}

/// The workload's keys and groups, against one launch of the atomic measurement.
pub(crate) struct Repeats {
    /// Input keys: one count update each.
    pub keys: f64,
    /// The most distinct keys the table receives (no more than the keys, nor than half the
    /// buckets): each key repeats at least `keys / groups` times.
    pub groups: f64,
    /// Updates of one launch of the atomic measurement on this GPU.
    pub launch_updates: f64,
}

impl Repeats {
    pub(crate) fn new(keys: u64, groups: u64, sm_count: u32) -> Repeats {
        let threads = u64::from(sm_count.max(1)) * u64::from(RANDOM_ATOMIC_THREADS_PER_SM);
        Repeats {
            keys: keys.max(1) as f64,
            groups: groups.max(1) as f64,
            launch_updates: (threads * u64::from(RANDOM_ATOMIC_UPDATES_PER_THREAD)) as f64,
        }
    }
}

impl InsertCost {
    /// The atomic points of `curve` when it has two regions of them, else its read points;
    /// `None` when neither has.
    /// `over_link`: the table is in mapped host memory, where each atomic crosses the link.
    pub(crate) fn of(
        curve: &RandomAccessCurve,
        table_bytes: u64,
        repeats: Option<Repeats>,
        over_link: bool,
    ) -> Option<InsertCost> {
        let pricing = match ReadCost::from_points(&curve.atomic_points) {
            Some(atomic) => Pricing::Atomic(atomic),
            None => Pricing::Read(ReadCost::from_curve(curve)?),
        };
        // Over the link, the count's update and, on a key's first occurrence, the claim
        // (every key, when the input's size is not known).
        let claims = repeats.as_ref().map_or(1.0, |r| r.groups / r.keys);
        Some(InsertCost {
            pricing,
            repeats,
            table_bytes: table_bytes as f64,
            atomics_per_insert: if over_link { 1.0 + claims } else { 1.0 },
        })
    }

    /// Seconds per insert, GPU-wide, of a pass over a scope of `scope` bytes.
    ///
    /// With atomics: the curve at the scope's size (its updates spread over that many
    /// bytes), or, when slower, at the region whose words are updated as often as the
    /// pass's (see [`InsertCost::contention_region`]).
    /// Whether inserts are priced from measured atomics (else as reads).
    pub(crate) fn is_measured_atomic(&self) -> bool {
        matches!(self.pricing, Pricing::Atomic(_))
    }

    pub(crate) fn seconds(&self, scope: u64) -> f64 {
        match &self.pricing {
            Pricing::Read(read) => read.seconds(scope),
            Pricing::Atomic(atomic) => {
                let spread = atomic.seconds(scope);
                let one = match self.contention_region(scope) {
                    Some(region) => spread.max(atomic.seconds(region)),
                    None => spread,
                };
                self.atomics_per_insert * one
            }
        }
    }

    /// The region of the atomic curve that contends as a pass over `scope` bytes does.
    /// A launch of the curve makes `A` updates to `x / 4` words, `4A / x` per word. A pass
    /// makes its updates to the scope's groups (`G_s = groups · scope / table` words),
    /// each repeated `r = keys / groups` times. Matched on updates per word, that is the
    /// region `4A / r`; but a pass with more updates than a launch keeps the GPU as full
    /// of updates as the launch does, over its `G_s` words, so the region is never below
    /// `4 G_s`. Fewer words updated more often mean more updates of one word in flight
    /// at once, which L2 serialises: the curve's small regions measure that. A region
    /// larger than the scope would also price misses the scope does not have: the scope's
    /// own size then stands.
    fn contention_region(&self, scope: u64) -> Option<u64> {
        let r = self.repeats.as_ref()?;
        let scope_groups = r.groups * (scope as f64 / self.table_bytes).min(1.0);
        let per_word = r.launch_updates * r.groups / r.keys;
        let region = (COUNT_BYTES * scope_groups.max(per_word)).max(COUNT_BYTES) as u64;
        Some(region.min(scope))
    }

    /// The reason line: what prices an insert, and whether contention is weighed.
    pub(crate) fn describe(
        &self,
        kind: impl std::fmt::Display,
        curve: &RandomAccessCurve,
    ) -> String {
        match &self.pricing {
            Pricing::Read(_) => format!(
                "an insert is priced as one random read of {kind} memory: no atomic curve for it (`cargo tune` measures atomics on device and pinned memory)"
            ),
            Pricing::Atomic(_) => {
                let regions = curve.atomic_points.iter().map(|p| p.region_bytes);
                let range = match (regions.clone().min(), regions.max()) {
                    (Some(lo), Some(hi)) => format!("{}..{}", bytes(lo), bytes(hi)),
                    _ => "no points".to_string(),
                };
                let mut line = if self.atomics_per_insert > 1.0 {
                    format!(
                        "an insert is priced as {:.2} random atomic updates of {kind} memory at the scope's size, the count's and the claims' each crossing the host link (atomic curve {range}, from the profile)",
                        self.atomics_per_insert
                    )
                } else {
                    format!(
                        "an insert is priced as one random atomic update of {kind} memory at the scope's size (atomic curve {range}, from the profile)"
                    )
                };
                match &self.repeats {
                    Some(r) => line += &format!(
                        "; {} input keys into at most {} groups: each key repeats at least {:.1} times, priced where the curve's words are updated as often, if slower (contention)",
                        r.keys as u64,
                        r.groups as u64,
                        r.keys / r.groups
                    ),
                    None => line += "; the input's size is not known: contention on repeated keys not weighed (pass `input_bytes`)",
                }
                line
            }
        }
    }

    /// Where the atomic curve falls below `size` bytes, `(region, ratio)` (see
    /// `translation::curve_falls`); empty when inserts are priced as reads.
    pub(crate) fn falls_below(&self, curve: &RandomAccessCurve, size: u64) -> Vec<(u64, f64)> {
        match self.pricing {
            Pricing::Atomic(_) => point_falls(&curve.atomic_points)
                .into_iter()
                .filter(|&(at, _)| at < size)
                .collect(),
            Pricing::Read(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::RandomAccessPoint;

    fn points(values: &[(u64, f64)]) -> Vec<RandomAccessPoint> {
        values
            .iter()
            .copied()
            .map(RandomAccessPoint::from)
            .collect()
    }

    fn curve(atomics: &[(u64, f64)]) -> RandomAccessCurve {
        RandomAccessCurve {
            points: points(&[(1 << 10, 8.0), (1 << 30, 4.0)]),
            knee_bytes: None,
            draw_cost_relative: None,
            atomic_points: points(atomics),
        }
    }

    /// One SM: a launch of the curve makes 65536 updates.
    fn repeats(keys: u64, groups: u64) -> Option<Repeats> {
        let r = Repeats::new(keys, groups, 1);
        assert_eq!(
            r.launch_updates,
            f64::from(RANDOM_ATOMIC_THREADS_PER_SM * RANDOM_ATOMIC_UPDATES_PER_THREAD)
        );
        Some(r)
    }

    #[test]
    fn without_atomics_an_insert_is_a_read() {
        let c = curve(&[]);
        let cost = InsertCost::of(&c, 1 << 30, repeats(1 << 20, 1 << 10), false).unwrap();
        assert!(matches!(cost.pricing, Pricing::Read(_)));
        assert_eq!(cost.seconds(1 << 30), 0.25);
        assert_eq!(cost.seconds(1 << 10), 0.125);
        assert!(cost.falls_below(&c, u64::MAX).is_empty());
    }

    #[test]
    fn atomics_price_the_scope_or_its_contention_whichever_is_slower() {
        // Contended below 16 KiB, fast to 1 MiB, slow beyond (an L2 of 1 MiB).
        let c = curve(&[
            (1 << 12, 1.0),
            (1 << 14, 10.0),
            (1 << 20, 10.0),
            (1 << 22, 2.0),
        ]);
        let table = 1 << 24;
        // Without the input's size: the scope's size alone.
        let cost = InsertCost::of(&c, table, None, false).unwrap();
        assert!(matches!(cost.pricing, Pricing::Atomic(_)));
        assert_eq!(cost.seconds(1 << 20), 0.1);
        assert_eq!(cost.seconds(table), 0.5);
        assert_eq!(cost.falls_below(&c, table), vec![(1 << 20, 5.0)]);
        // 2^24 keys into 2^10 groups, 2^14 repeats each: as often as the curve's 4 KiB
        // region updates each of its words (65536 updates over 1024 words, 64 each)? No:
        // 4A / r = 16 bytes, so the pass contends more than any region measured, and the
        // curve's smallest region (clamped) prices it.
        let cost = InsertCost::of(&c, table, repeats(1 << 24, 1 << 10), false).unwrap();
        assert_eq!(cost.seconds(1 << 20), 1.0);
        assert_eq!(cost.seconds(table), 1.0);
        // 2^16 groups, 256 repeats: 4A / r = 1 KiB, but a 1 MiB scope holds 4096 groups,
        // 16 KiB of words: no contention there; a 256 KiB scope's 4 KiB of words contend.
        let cost = InsertCost::of(&c, table, repeats(1 << 24, 1 << 16), false).unwrap();
        assert_eq!(cost.seconds(1 << 20), 0.1);
        assert_eq!(cost.seconds(1 << 18), 1.0);
        assert_eq!(cost.seconds(1 << 16), 1.0);
        // As many groups in a 64 KiB scope, but keys that do not repeat: 4A / r is 256 KiB,
        // past every contended region.
        let cost = InsertCost::of(&c, table, repeats(1 << 16, 1 << 16), false).unwrap();
        assert_eq!(cost.seconds(1 << 16), 0.1);
        // Nor is a scope priced at a region larger than itself: 4A / r = 256 KiB lies in
        // the slow part of a curve whose fast part ends at 64 KiB, but a 64 KiB scope has
        // no such misses.
        let small_l2 = curve(&[(1 << 12, 10.0), (1 << 16, 10.0), (1 << 18, 2.0)]);
        let cost = InsertCost::of(&small_l2, table, repeats(1 << 16, 1 << 16), false).unwrap();
        assert_eq!(cost.seconds(1 << 16), 0.1);
    }

    #[test]
    fn over_the_host_link_a_claim_is_an_atomic_of_its_own() {
        let c = curve(&[(1 << 10, 4.0), (1 << 30, 2.0)]);
        let table = 1 << 30;
        let in_l2 = InsertCost::of(&c, table, repeats(1 << 20, 1 << 18), false).unwrap();
        // A quarter of the keys claim a bucket: 1.25 atomics an insert.
        let pinned = InsertCost::of(&c, table, repeats(1 << 20, 1 << 18), true).unwrap();
        assert_eq!(pinned.seconds(table), 1.25 * in_l2.seconds(table));
        // The input's size unknown: every key claims.
        let unknown = InsertCost::of(&c, table, None, true).unwrap();
        assert_eq!(unknown.seconds(table), 2.0 * in_l2.seconds(table));
        let line = pinned.describe("pinned", &c);
        assert!(line.contains("1.25 random atomic updates"), "{line}");
    }
}
