//! What the profile knows about address translation for one memory kind: its TLB levels
//! and its random-access curve, where they put boundaries, and how to say so.

use super::units::bytes;
use crate::profile::{MemoryKind, Profile, RandomAccessCurve, Section, TlbKind, TlbLevel};

/// Scopes are whole multiples of this when no TLB level gives a page size: the smallest
/// page any memory kind uses (4 KiB host pages).
const FALLBACK_GRANULE: u64 = 4096;

pub(crate) struct Translation<'a> {
    pub kind: MemoryKind,
    pub tlb: Option<&'a TlbKind>,
    pub curve: Option<&'a RandomAccessCurve>,
    tlb_section: &'a Section<TlbKind>,
    curve_section: &'a Section<RandomAccessCurve>,
}

impl<'a> Translation<'a> {
    pub(crate) fn of(profile: &'a Profile, kind: MemoryKind) -> Translation<'a> {
        let tlb_section = profile.tlb.get(kind);
        let curve_section = profile.random_access.get(kind);
        Translation {
            kind,
            tlb: tlb_section.measured(),
            curve: curve_section.measured(),
            tlb_section,
            curve_section,
        }
    }

    /// One reason line: the levels and the curve of this kind, or why they are missing.
    pub(crate) fn summary(&self) -> String {
        let tlb = match self.tlb {
            Some(t) if t.levels.is_empty() => {
                format!("no TLB miss up to {}", bytes(t.swept_up_to_bytes))
            }
            Some(t) => {
                let levels: Vec<String> = t
                    .levels
                    .iter()
                    .enumerate()
                    .map(|(i, l)| format!("{} ({})", level_name(i), describe_level(l)))
                    .collect();
                format!("TLB {}", levels.join(", "))
            }
            None => format!("TLB {}", self.tlb_section.status_line()),
        };
        let curve = match self.curve {
            Some(c) => {
                let regions = c.points.iter().map(|p| p.region_bytes);
                let range = match (regions.clone().min(), regions.max()) {
                    (Some(lo), Some(hi)) => format!("{}..{}", bytes(lo), bytes(hi)),
                    _ => "no points".to_string(),
                };
                match c.knee_bytes {
                    Some(k) => format!("random-access curve {range}, knee at {}", bytes(k)),
                    None => format!("random-access curve {range}, no knee"),
                }
            }
            None => format!("random-access curve {}", self.curve_section.status_line()),
        };
        format!("{} memory: {tlb}; {curve}", self.kind)
    }

    /// The boundaries the profile shows below `size` bytes of the `what` (TLB reaches and
    /// the curve's knee) as a reason line, or why there is nothing to scope.
    pub(crate) fn boundaries_below(&self, size: u64, what: &str) -> Result<String, String> {
        if self.tlb.is_none() && self.curve.is_none() {
            return Err(format!(
                "no TLB levels or random-access curve for {} memory: not scoped; run `cargo tune` to measure them",
                self.kind
            ));
        }
        let levels = self
            .tlb
            .into_iter()
            .flat_map(|t| t.levels.iter().enumerate());
        let mut found: Vec<String> = levels
            .filter(|(_, l)| l.reach_bytes < size)
            .map(|(i, l)| format!("{} reach {}", level_name(i), bytes(l.reach_bytes)))
            .collect();
        if let Some(knee) = self.curve.and_then(|c| c.knee_bytes).filter(|&k| k < size) {
            found.push(format!("random-access knee {}", bytes(knee)));
        }
        if found.is_empty() {
            return Err(format!(
                "no TLB reach or random-access knee below the {what} ({}): no miss to avoid, not scoped",
                bytes(size)
            ));
        }
        Ok(format!(
            "below the {what} ({}): {}",
            bytes(size),
            found.join(", ")
        ))
    }

    /// Scopes are whole multiples of the largest page a level translates, so that a scope of
    /// k such pages takes k entries (seed 000 §4.5: the L2/L3 "pages" are 16 small ones).
    pub(crate) fn granule(&self) -> u64 {
        self.tlb
            .and_then(|t| t.levels.iter().map(|l| l.page_bytes).max())
            .filter(|&p| p > 0)
            .unwrap_or(FALLBACK_GRANULE)
    }

    /// Which boundaries below `region` a pass over `scope` bytes stays within, and which it
    /// still crosses.
    pub(crate) fn effect_of_scope(&self, region: u64, scope: u64) -> String {
        let verb = |reach: u64| {
            if scope <= reach {
                "avoids"
            } else {
                "still misses"
            }
        };
        let levels = self
            .tlb
            .into_iter()
            .flat_map(|t| t.levels.iter().enumerate());
        let mut effects: Vec<String> = levels
            .filter(|(_, l)| l.reach_bytes < region)
            .map(|(i, l)| {
                format!(
                    "{} {} ({})",
                    verb(l.reach_bytes),
                    level_name(i),
                    describe_level(l)
                )
            })
            .collect();
        if let Some(knee) = self
            .curve
            .and_then(|c| c.knee_bytes)
            .filter(|&k| k < region)
        {
            let side = if scope <= knee { "within" } else { "beyond" };
            effects.push(format!("{side} the random-access knee ({})", bytes(knee)));
        }
        effects.join(", ")
    }
}

fn level_name(index: usize) -> String {
    format!("L{}", index + 1)
}

fn describe_level(l: &TlbLevel) -> String {
    format!(
        "{} x {} = {}, +{:.0} cycles per miss",
        l.entries,
        bytes(l.page_bytes),
        bytes(l.reach_bytes),
        l.miss_penalty_cycles
    )
}
