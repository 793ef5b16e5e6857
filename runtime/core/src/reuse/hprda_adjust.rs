//! HP-RDA's adjustment of its merged distances, shared by the CPU form
//! ([`super::hprda`]) and the GPU one (`memtune::reuse::hprda`), which finish through
//! [`Totals::histogram`] so that every distance rounds alike.
//!
//! Formula 1 puts `latest_i + Σ count[k] + first_j` between an item's uses in sub-traces
//! `i < j`: an item that several of those sub-traces share is counted once in each.
//!
//! - [`Adjust::Seed`] is the seed's formula 2 as written: a distance above `M` (the trace's
//!   distinct items) becomes `distance × ef`, `ef = M / Σ count`.
//! - [`Adjust::Overlap`] estimates the over-count itself. Along the "flat" coordinate of
//!   formula 1 (every sub-trace laid end to end, `count` positions each, `S = Σ count` in
//!   all), the items between two uses are exactly the formula-1 distance less one for each
//!   pair of consecutive sub-traces holding the same item, both inside the window: an item
//!   counted in `k` of its sub-traces there was counted `k - 1` times too many. Those
//!   pairs are the merge's own cross-sub-trace reuses, each an interval of its formula-1
//!   length `l`. One of length `l` lies inside a given window of length `D` at
//!   `(D - l - 1)+` of the `S` places it can start, so the expected over-count is
//!   `O(D) = Σ_l H(l) (D - l - 1)+ / S` over the histogram `H` of cross-sub-trace
//!   distances, and the estimate `D - O(D)`. No popularity model is assumed: a loop,
//!   whose sub-traces never share an item within a reuse, has every `l` equal to every
//!   `D` and stays exact. As `D` grows, the slope `1 - R / S` with `R = S - M` the
//!   cross-sub-trace reuses (every appearance of an item in a sub-trace but its first)
//!   tends to `M / S`, the seed's `ef`. The grid merge must then use the flat coordinate
//!   (`Σ count` of the blocks in between) rather than the blocks' exact counts.
//! - [`Adjust::None`] leaves the merged distances as they are (the seed's
//!   `-disable-adjusting`).

use std::str::FromStr;

use super::{Distances, Histogram, ReuseError};

/// Which adjustment finishes an HP-RDA histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Adjust {
    /// The seed's formula 2 (distances above `M` scaled by `M / Σ count`).
    Seed,
    /// Each cross-sub-trace distance less the expected number of items counted twice: the
    /// default, within 1% on every trace measured and no worse than `Seed` on any.
    #[default]
    Overlap,
    /// None.
    None,
}

impl Adjust {
    /// The name `--adjust` takes.
    pub fn name(self) -> &'static str {
        match self {
            Adjust::Seed => "seed",
            Adjust::Overlap => "overlap",
            Adjust::None => "none",
        }
    }

    /// Whether the grid merge lays blocks out by their sub-traces' summed counts (the flat
    /// coordinate the overlap estimate is made in) instead of their exact distinct counts.
    pub fn flat_grid(self) -> bool {
        self == Adjust::Overlap
    }
}

impl FromStr for Adjust {
    type Err = ReuseError;

    fn from_str(s: &str) -> Result<Adjust, ReuseError> {
        match s {
            "seed" => Ok(Adjust::Seed),
            "overlap" => Ok(Adjust::Overlap),
            "none" => Ok(Adjust::None),
            _ => Err(ReuseError::InvalidOption(format!(
                "hp-rda adjustment {s:?}: seed, overlap or none"
            ))),
        }
    }
}

/// What an HP-RDA run counted besides its distances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    /// References of the trace, repeats included.
    pub references: u64,
    /// References dropped by preprocessing (each a repeat of the one before: distance 0).
    pub repeats: u64,
    /// Distinct items of the trace (`M`).
    pub distinct: u64,
    /// Σ of every sub-trace's distinct count (the denominator of `ef`; `S`).
    pub thread_counts: u64,
}

impl Totals {
    /// The histogram of the distances found inside sub-traces (`local`, exact) and
    /// merged across them (`cross`), each `(distance, references)` in any order, repeats
    /// not included, adjusted as `adjust` says.
    pub fn histogram(
        &self,
        local: impl IntoIterator<Item = (u64, u64)>,
        cross: impl IntoIterator<Item = (u64, u64)>,
        adjust: Adjust,
    ) -> Histogram {
        let (local, cross) = (
            Distances::from_ascending(local),
            Distances::from_ascending(cross),
        );
        self.histogram_of(&local, &cross, adjust)
    }

    /// [`Totals::histogram`] of distances already sorted: the cross distances are adjusted
    /// in one pass over them and the parts merged, never sorted (the GPU form's counts of
    /// a long trace are tens of millions of distances).
    pub fn histogram_of(&self, local: &Distances, cross: &Distances, adjust: Adjust) -> Histogram {
        let m = self.distinct;
        let cross = cross.as_slice();
        let adjusted = match adjust {
            Adjust::Seed | Adjust::None => {
                let ef = (adjust == Adjust::Seed && self.thread_counts > 0)
                    .then(|| m as f64 / self.thread_counts as f64);
                // Formula 2 scales the distances above M; those below stay as they are.
                let split = match ef {
                    Some(_) => cross.partition_point(|&(d, _)| d <= m),
                    None => cross.len(),
                };
                let ef = ef.unwrap_or(1.0);
                let scaled = cross[split..]
                    .iter()
                    .map(|&(d, n)| ((d as f64 * ef).round() as u64, n));
                let scaled = Distances::from_ascending(scaled);
                Distances::merge_slices(&cross[..split], scaled.as_slice())
            }
            Adjust::Overlap => Distances::from_ascending(overlap(cross, self.thread_counts, m)),
        };
        let repeats = Distances::from_ascending([(0, self.repeats)]);
        self.finish(local.merge(&adjusted).merge(&repeats))
    }

    /// The histogram of the final distances: every one of the `M` items cold once.
    pub(super) fn finish(&self, exact: Distances) -> Histogram {
        Histogram {
            references: self.references,
            distinct: self.distinct,
            cold: self.distinct,
            exact,
            sample: None,
        }
    }
}

/// Every cross-sub-trace distance `D` of `cross` (ascending) less its expected
/// over-count `Σ_l H(l) (D - l - 1)+ / S` (the module's text), rounded, at most `M - 1`;
/// ascending still, since the over-count grows slower than `D`.
fn overlap(cross: &[(u64, u64)], s: u64, m: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
    // Walking the distances up: `below` intervals shorter than D - 1, `sum` their lengths.
    let (mut below, mut sum, mut j) = (0u64, 0u64, 0usize);
    cross.iter().map(move |&(d, n)| {
        while j < cross.len() && cross[j].0 + 1 < d {
            below += cross[j].1;
            sum += (cross[j].0 + 1) * cross[j].1;
            j += 1;
        }
        (overlap_of(d, below, sum, s, m), n)
    })
}

/// Distance `d` less `(d · below − sum) / s` (`below` references of total length `sum`,
/// every one shorter than `d`), rounded, within `0..M`. The sums are exact integers, so the
/// pairs and the dense forms round alike.
pub(super) fn overlap_of(d: u64, below: u64, sum: u64, s: u64, m: u64) -> u64 {
    // In u64 where the product fits (every trace of fewer than 2^32 references), else u128.
    let over = match d.checked_mul(below) {
        Some(p) => p.saturating_sub(sum) as f64,
        None => (u128::from(d) * u128::from(below)).saturating_sub(u128::from(sum)) as f64,
    };
    let top = m.saturating_sub(1) as f64;
    (d as f64 - over / s.max(1) as f64).clamp(0.0, top).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(distinct: u64, thread_counts: u64) -> Totals {
        Totals {
            references: 0,
            repeats: 0,
            distinct,
            thread_counts,
        }
    }

    #[test]
    fn names_round_trip() {
        for a in [Adjust::Seed, Adjust::Overlap, Adjust::None] {
            assert_eq!(a.name().parse::<Adjust>().ok(), Some(a));
        }
        assert!("union".parse::<Adjust>().is_err());
    }

    #[test]
    fn equal_intervals_are_not_corrected() {
        // A loop: every cross distance the same, none nested in another.
        let out: Vec<_> = overlap(&[(999, 500)], 10_000, 1000).collect();
        assert_eq!(out, vec![(999, 500)]);
    }

    #[test]
    fn the_expected_nested_intervals_are_taken_off() {
        // 10 intervals of length 1 and 4 of length 100 over S = 1000 places: a window of
        // 100 holds 10 × 98 / 1000 of the short ones, one of 1 none.
        let out: Vec<_> = overlap(&[(1, 10), (100, 4)], 1000, 10_000).collect();
        assert_eq!(out, vec![(1, 10), ((100.0f64 - 0.98).round() as u64, 4)]);
        // Never past M - 1.
        let capped: Vec<_> = overlap(&[(5000, 1)], 5000, 100).collect();
        assert_eq!(capped, vec![(99, 1)]);
    }

    #[test]
    fn seed_and_none_are_formula_2_or_nothing() {
        let t = totals(10, 20);
        let seed = t.histogram([(3, 1)], [(30, 2)], Adjust::Seed);
        assert_eq!(seed.exact.get(15), Some(2));
        assert_eq!(seed.exact.get(3), Some(1));
        let none = t.histogram([(3, 1)], [(30, 2)], Adjust::None);
        assert_eq!(none.exact.get(30), Some(2));
    }
}
