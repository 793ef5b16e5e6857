//! What one hash-grouping insert costs over a scope of the table, GPU-wide.
//!
//! An insert reads its bucket's key, claims the bucket with `atomicCAS` on its first
//! occurrence and counts with `atomicAdd` (`kernels/cuda/grouping.cu`). Atomics execute at
//! L2: a scope that L2 holds keeps them there, and beyond it each one is a read-modify-write
//! of DRAM. The random-access curve's atomic points measure exactly that update (the
//! sampler's draws as `atomicAdd` of one word), so where the table's memory has them an
//! insert is priced as one atomic; the key read and the claim touch the line the count
//! update then updates, whose miss the atomic already pays. Without them, as before, an
//! insert is priced as one random read.

use super::read_cost::ReadCost;
use super::translation::point_falls;
use super::units::bytes;
use crate::profile::RandomAccessCurve;

/// Bytes of the count word an insert updates: the atomic curve's updates are 4-byte words.
const COUNT_BYTES: f64 = 4.0;

pub(crate) struct InsertCost {
    pricing: Pricing,
    /// At most this many distinct keys (groups) go into the whole table, when the input's
    /// size is known: they bound how many words a scope's count updates go to.
    groups: Option<f64>,
    table_bytes: f64,
}

enum Pricing {
    /// Seconds per atomic update, from the curve's atomic points.
    Atomic(ReadCost),
    /// Seconds per random read, from the curve's points.
    Read(ReadCost),
}

impl InsertCost {
    /// The atomic points of `curve` when it has two regions of them, else its read points;
    /// `None` when neither has. `groups` is the most distinct keys the table receives (from
    /// the input's size), if known.
    pub(crate) fn of(
        curve: &RandomAccessCurve,
        table_bytes: u64,
        groups: Option<u64>,
    ) -> Option<InsertCost> {
        let pricing = match ReadCost::from_points(&curve.atomic_points) {
            Some(atomic) => Pricing::Atomic(atomic),
            None => Pricing::Read(ReadCost::from_curve(curve)?),
        };
        Some(InsertCost {
            pricing,
            groups: groups.map(|g| g as f64),
            table_bytes: table_bytes as f64,
        })
    }

    /// Seconds per insert, GPU-wide, of a pass over a scope of `scope` bytes.
    ///
    /// With atomics: the curve at the scope's size (its updates spread over that many
    /// bytes), or, when slower, at the size whose words are as few as the scope's groups.
    /// The atomic curve at `x` bytes sends the same number of updates to `x / 4` words; a
    /// scope's updates go to at most `groups · scope / table` words, each of them repeated
    /// (input keys / groups) times. Fewer words mean more updates of one word in flight at
    /// once, which L2 serialises: the curve's small regions measure that contention.
    pub(crate) fn seconds(&self, scope: u64) -> f64 {
        match &self.pricing {
            Pricing::Read(read) => read.seconds(scope),
            Pricing::Atomic(atomic) => {
                let spread = atomic.seconds(scope);
                match self.contention_region(scope) {
                    Some(words) => spread.max(atomic.seconds(words)),
                    None => spread,
                }
            }
        }
    }

    /// Bytes of as many count words as a scope of `scope` bytes has groups, when known.
    fn contention_region(&self, scope: u64) -> Option<u64> {
        let groups = self.groups?;
        let words = groups * (scope as f64 / self.table_bytes).min(1.0);
        Some((words * COUNT_BYTES).max(COUNT_BYTES) as u64)
    }

    /// The reason line: what prices an insert, and whether contention is weighed.
    pub(crate) fn describe(
        &self,
        kind: impl std::fmt::Display,
        curve: &RandomAccessCurve,
        input_keys: Option<u64>,
    ) -> String {
        match &self.pricing {
            Pricing::Read(_) => format!(
                "an insert is priced as one random read of {kind} memory: no atomic curve for it (`cargo tune` measures atomics on device memory)"
            ),
            Pricing::Atomic(_) => {
                let regions = curve.atomic_points.iter().map(|p| p.region_bytes);
                let range = match (regions.clone().min(), regions.max()) {
                    (Some(lo), Some(hi)) => format!("{}..{}", bytes(lo), bytes(hi)),
                    _ => "no points".to_string(),
                };
                let mut line = format!(
                    "an insert is priced as one random atomic update of {kind} memory at the scope's size (atomic curve {range}, from the profile)"
                );
                match (input_keys, self.groups) {
                    (Some(keys), Some(groups)) => line += &format!(
                        "; {keys} input keys into at most {} groups (half the buckets): each key repeats at least {:.1} times, so a scope's updates go to at most groups x scope / table words, priced at that many words where their contention is slower",
                        groups as u64,
                        keys as f64 / groups
                    ),
                    _ => line += "; the input's size is not known: contention on repeated keys not weighed (pass `input_bytes`)",
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
            .map(|&(region_bytes, reads_per_second)| RandomAccessPoint {
                region_bytes,
                reads_per_second,
            })
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

    #[test]
    fn without_atomics_an_insert_is_a_read() {
        let c = curve(&[]);
        let cost = InsertCost::of(&c, 1 << 30, Some(1 << 20)).unwrap();
        assert!(matches!(cost.pricing, Pricing::Read(_)));
        assert_eq!(cost.seconds(1 << 30), 0.25);
        assert_eq!(cost.seconds(1 << 10), 0.125);
        assert!(cost.falls_below(&c, u64::MAX).is_empty());
    }

    #[test]
    fn atomics_price_the_scope_or_its_contention_whichever_is_slower() {
        // Contended below 4 KiB, fast to 1 MiB, slow beyond (an L2 of 1 MiB).
        let c = curve(&[
            (1 << 10, 1.0),
            (1 << 12, 10.0),
            (1 << 20, 10.0),
            (1 << 22, 2.0),
        ]);
        let table = 1 << 24;
        // Without the input's size: the scope's size alone.
        let cost = InsertCost::of(&c, table, None).unwrap();
        assert!(matches!(cost.pricing, Pricing::Atomic(_)));
        assert_eq!(cost.seconds(1 << 20), 0.1);
        assert_eq!(cost.seconds(table), 0.5);
        assert_eq!(cost.falls_below(&c, table), vec![(1 << 20, 5.0)]);
        // 2^12 groups in the 16 MiB table: a 1 MiB scope holds 256 of them, 1 KiB of words.
        let cost = InsertCost::of(&c, table, Some(1 << 12)).unwrap();
        assert_eq!(cost.seconds(1 << 20), 1.0);
        // The whole table's 16 KiB of words contend less than its size misses.
        assert_eq!(cost.seconds(table), 0.5);
        // Many groups: no contention anywhere.
        let cost = InsertCost::of(&c, table, Some(1 << 21)).unwrap();
        assert_eq!(cost.seconds(1 << 20), 0.1);
    }
}
