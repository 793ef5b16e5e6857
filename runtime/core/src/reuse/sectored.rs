//! Reuse distance for a sectored cache: tags allocate lines of `line` bytes, a miss fills
//! only the `fill` bytes around the address (a sector of the line, or a few), and a hit
//! needs that fill unit present. In a fully associative LRU cache of `C` lines, a
//! reference hits exactly when its fill unit was used before and its line was not evicted
//! since, that is when every reuse of the line since the unit's previous use (other units'
//! included, and this one) had a line distance below `C`. So each reference gets the
//! largest of those line distances as its distance (a first use of the unit is cold), and
//! the level hits the references whose distance is below its lines, as for an unsectored
//! one, whose distance this is when `fill == line`.

use std::collections::HashMap;

use super::histogram::Counts;
use super::stack::LruStack;
use super::{Histogram, ReuseError};

/// A fill unit not used yet.
const UNSEEN: u64 = u64::MAX;

/// Streaming sectored analysis of byte addresses.
#[derive(Debug)]
pub struct SectoredAnalyzer {
    fill_shift: u32,
    line_shift: u32,
    /// Fill units per line.
    units: usize,
    lines: LruStack,
    /// Line -> its units' state in `state`: the largest line distance since each unit's
    /// last use, or [`UNSEEN`].
    slots: HashMap<u64, usize>,
    state: Vec<u64>,
    counts: Counts,
}

impl SectoredAnalyzer {
    /// `fill` and `line` in bytes, powers of two, `fill <= line`.
    pub fn new(fill: u64, line: u64) -> Result<SectoredAnalyzer, ReuseError> {
        if !fill.is_power_of_two() || !line.is_power_of_two() || fill > line {
            return Err(ReuseError::InvalidOption(format!(
                "a sectored level needs a fill ({fill} B) and a line ({line} B) that are \
                 powers of two, the fill no larger"
            )));
        }
        Ok(SectoredAnalyzer {
            fill_shift: fill.trailing_zeros(),
            line_shift: line.trailing_zeros(),
            units: (line / fill) as usize,
            lines: LruStack::new(),
            slots: HashMap::new(),
            state: Vec::new(),
            counts: Counts::default(),
        })
    }

    /// One reference (a byte address); returns its distance in lines (`None`: cold).
    pub fn access(&mut self, address: u64) -> Option<u64> {
        let line = address >> self.line_shift;
        let unit = ((address >> self.fill_shift) as usize) & (self.units - 1);
        let reuse = self.lines.access(line);
        let next = self.state.len();
        let base = *self.slots.entry(line).or_insert(next);
        if base == next {
            self.state.resize(next + self.units, UNSEEN);
        }
        let units = &mut self.state[base..base + self.units];
        if let Some(d) = reuse {
            for s in units.iter_mut().filter(|s| **s != UNSEEN) {
                *s = (*s).max(d);
            }
        }
        let distance = (units[unit] != UNSEEN).then_some(units[unit]);
        units[unit] = 0;
        self.counts.record(distance);
        distance
    }

    /// A batch of byte addresses in trace order.
    pub fn push(&mut self, addresses: &[u64]) {
        for &a in addresses {
            self.access(a);
        }
    }

    /// The histogram of distances in lines; `distinct` and `cold` count fill units.
    pub fn finish(self) -> Histogram {
        let units = self.counts.cold;
        self.counts.into_histogram(units)
    }
}

/// The sectored histogram of a trace of byte addresses.
pub fn histogram(addresses: &[u64], fill: u64, line: u64) -> Result<Histogram, ReuseError> {
    let mut a = SectoredAnalyzer::new(fill, line)?;
    a.push(addresses);
    Ok(a.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reuse::exact;

    /// A fully associative LRU cache of `lines` lines, `line / fill` valid bits each,
    /// simulated: whether each reference hits.
    fn simulate(addresses: &[u64], fill: u64, line: u64, lines: usize) -> Vec<bool> {
        let mut lru: Vec<(u64, u64)> = Vec::new(); // (line, valid bits), most recent last
        addresses
            .iter()
            .map(|&a| {
                let (l, bit) = (a / line, 1u64 << ((a % line) / fill));
                let hit = match lru.iter().position(|&(x, _)| x == l) {
                    Some(i) => {
                        let (_, valid) = lru.remove(i);
                        lru.push((l, valid | bit));
                        valid & bit != 0
                    }
                    None => {
                        if lru.len() == lines {
                            lru.remove(0);
                        }
                        lru.push((l, bit));
                        false
                    }
                };
                hit
            })
            .collect()
    }

    #[test]
    fn distances_below_the_lines_are_exactly_the_hits_of_a_sectored_lru_cache() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let trace: Vec<u64> = (0..20_000)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // A stream through 2 KiB with random jumps over 8 KiB.
                if x % 3 == 0 {
                    x % 8192
                } else {
                    (i * 4) % 2048
                }
            })
            .collect();
        for (fill, line) in [(32, 128), (64, 128), (128, 128), (8, 64)] {
            let mut a = SectoredAnalyzer::new(fill, line).expect("valid");
            let d: Vec<Option<u64>> = trace.iter().map(|&t| a.access(t)).collect();
            for lines in [1, 4, 16, 40] {
                let sim = simulate(&trace, fill, line, lines);
                for (i, (&hit, &d)) in sim.iter().zip(&d).enumerate() {
                    assert_eq!(
                        hit,
                        d.is_some_and(|d| d < lines as u64),
                        "reference {i}, fill {fill}, line {line}, {lines} lines"
                    );
                }
            }
        }
    }

    #[test]
    fn an_unsectored_level_has_the_line_distances() {
        let trace: Vec<u64> = (0..5000u64).map(|i| (i * 2654435761) % 20_000).collect();
        let lines: Vec<u64> = trace.iter().map(|a| a / 128).collect();
        assert_eq!(
            histogram(&trace, 128, 128).expect("valid"),
            exact::histogram(&lines).expect("exact")
        );
        assert!(SectoredAnalyzer::new(64, 32).is_err());
        assert!(SectoredAnalyzer::new(48, 128).is_err());
    }
}
