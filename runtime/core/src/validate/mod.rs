//! Semantic validation of a profile: what a digest cannot vouch for.
//!
//! The digest proves a file was not damaged, not that whoever signed it wrote sense. A
//! re-signed file can hold negative entries, pages that are not powers of two, latencies of
//! 1e308 or levels out of order, and planners would build on them. [`validate`] checks every
//! number of a typed [`Profile`] against ranges, orders and the relations between sections;
//! [`crate::codec::from_slice`] runs it on every load and import, so a profile that fails is
//! never stored, embedded or planned from. Callers that build a profile in memory (the
//! probe, tests) call it themselves before planning.
//!
//! Every [`Violation`] names the field by its JSON path, as in
//! `tlb.pinned.levels[1].page_bytes: 3000 is not a power of two`.
//!
//! The rules, by part (the bounds are the `pub const`s below):
//! - every float is finite; latencies, times, bandwidths and rates are positive;
//!   confidences lie in `[0, 1]`; sizes and counts are positive and bounded;
//! - page and line sizes are powers of two;
//! - TLB levels come in strictly increasing reach, and `reach_bytes = entries × page_bytes`
//!   exactly, and no level reaches past the sweep by more than a page;
//! - `miss_penalty_ns` is `miss_penalty_cycles` at the SM clock (0 when the clock is unknown);
//! - random-access points come in non-decreasing region order and the knee lies among them;
//! - cache levels of one load path and carveout come in strictly increasing size; every L1
//!   hit is faster than the fastest L2-path level, which is faster than DRAM;
//! - staging blocks are launchable (at most 1024 threads), `benefit = plain / staged`;
//! - identity: clocks 0 (not reported) or 1 MHz to 10 GHz, `sm_count` 0 only where nothing
//!   was measured, shared-memory limits ordered per block ≤ opt-in ≤ per SM.

mod identity;
pub(crate) mod json;
mod measured;
mod memory;

use crate::profile::{Profile, Section};
use std::fmt;

/// Clock bounds in kHz (0 means "not reported", as the simulator and the default write).
pub const MIN_CLOCK_KHZ: u64 = 1_000;
pub const MAX_CLOCK_KHZ: u64 = 10_000_000;
/// Most SMs a GPU may report.
pub const MAX_SM_COUNT: u32 = 4096;
/// Largest byte count of any size field (1 PiB).
pub const MAX_BYTES: u64 = 1 << 50;
/// Most TLB levels of one memory kind.
pub const MAX_TLB_LEVELS: usize = 16;
/// Most entries of one TLB level.
pub const MAX_TLB_ENTRIES: u64 = 1 << 24;
/// Page sizes a TLB level may have.
pub const MIN_PAGE_BYTES: u64 = 1 << 10;
pub const MAX_PAGE_BYTES: u64 = 1 << 34;
/// Line sizes a cache level may have.
pub const MIN_LINE_BYTES: u64 = 4;
pub const MAX_LINE_BYTES: u64 = 1 << 16;
/// Most ways of a cache level.
pub const MAX_WAYS: u32 = 1 << 16;
/// Most cache levels in a profile.
pub const MAX_CACHE_LEVELS: usize = 64;
/// Most curves of one section and points of one curve.
pub const MAX_CURVES: usize = 1024;
pub const MAX_POINTS: usize = 1 << 16;
/// Largest latency in cycles or nanoseconds (a load taking 10 ms is no measurement).
pub const MAX_LATENCY: f64 = 1e7;
/// Largest time in milliseconds of one staging launch (about 3 hours).
pub const MAX_MS: f64 = 1e7;
/// Largest bandwidth in bytes per second and rate in reads per second.
pub const MAX_RATE: f64 = 1e15;
/// Largest relative draw cost.
pub const MAX_DRAW_COST: f64 = 1e3;
/// Most threads of one CUDA block, and the largest z of one.
pub const MAX_BLOCK_THREADS: u32 = 1024;
pub const MAX_BLOCK_Z: u32 = 64;
/// Largest grid dimension of a staging entry.
pub const MAX_GRID_DIM: u32 = 1 << 20;
/// Most staging entries.
pub const MAX_STAGING_ENTRIES: usize = 1024;
/// Most repeats of a staging entry.
pub const MAX_REPEATS: u32 = 1_000_000;
/// Longest name-like string (device name, level name, version) and reason.
pub const MAX_NAME_CHARS: usize = 4096;
pub const MAX_REASON_CHARS: usize = 16 * 1024;
/// Longest probe run in seconds.
pub const MAX_DURATION_S: f64 = 1e7;
/// Violations listed before the rest are only counted.
const MAX_LISTED: usize = 32;

/// One broken rule: the field's JSON path and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// `tlb.pinned.levels[1].page_bytes`.
    pub path: String,
    /// `3000 is not a power of two`.
    pub problem: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.problem)
    }
}

/// Why a profile is not sense: at least one [`Violation`], the first ones listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ValidationError {
    pub violations: Vec<Violation>,
    /// Violations found beyond those listed.
    pub more: usize,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, v) in self.violations.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{v}")?;
        }
        if self.more > 0 {
            write!(f, "; and {} more", self.more)?;
        }
        Ok(())
    }
}

/// Checks every rule of the module docs; `Err` lists what is broken.
pub fn validate(profile: &Profile) -> Result<(), ValidationError> {
    let mut c = Checker::default();
    identity::check(&mut c, profile);
    memory::check(&mut c, profile);
    measured::check(&mut c, profile);
    c.finish()
}

impl Profile {
    /// [`validate`] this profile: call before planning from a profile built in memory.
    pub fn validate(&self) -> Result<(), ValidationError> {
        validate(self)
    }
}

/// Collects violations; the helpers each check one rule of one field.
#[derive(Default)]
pub(crate) struct Checker {
    violations: Vec<Violation>,
    more: usize,
}

impl Checker {
    pub(crate) fn fail(&mut self, path: &str, problem: impl Into<String>) {
        if self.violations.len() < MAX_LISTED {
            self.violations.push(Violation {
                path: path.to_string(),
                problem: problem.into(),
            });
        } else {
            self.more += 1;
        }
    }

    fn finish(self) -> Result<(), ValidationError> {
        if self.violations.is_empty() {
            Ok(())
        } else {
            Err(ValidationError {
                violations: self.violations,
                more: self.more,
            })
        }
    }

    /// A finite float in `[lo, hi]`; `lo_open` makes the lower bound exclusive.
    fn float_in(&mut self, path: &str, x: f64, lo: f64, lo_open: bool, hi: f64) -> bool {
        let ok = x.is_finite() && x <= hi && if lo_open { x > lo } else { x >= lo };
        if !ok {
            let low = if lo_open { "above" } else { "at least" };
            let (x, lo, hi) = (num(x), num(lo), num(hi));
            self.fail(
                path,
                format!("{x} is not a finite number {low} {lo} and at most {hi}"),
            );
        }
        ok
    }

    /// A finite float above 0 and at most `hi`.
    pub(crate) fn positive(&mut self, path: &str, x: f64, hi: f64) -> bool {
        self.float_in(path, x, 0.0, true, hi)
    }

    /// A finite float from 0 to `hi`.
    pub(crate) fn non_negative(&mut self, path: &str, x: f64, hi: f64) -> bool {
        self.float_in(path, x, 0.0, false, hi)
    }

    /// A confidence or share: finite, in `[0, 1]`.
    pub(crate) fn unit(&mut self, path: &str, x: f64) -> bool {
        self.float_in(path, x, 0.0, false, 1.0)
    }

    /// An integer in `[lo, hi]`.
    pub(crate) fn int_in(&mut self, path: &str, x: u64, lo: u64, hi: u64) -> bool {
        let ok = (lo..=hi).contains(&x);
        if !ok {
            self.fail(path, format!("{x} is outside {lo}..={hi}"));
        }
        ok
    }

    /// A power of two in `[lo, hi]`.
    pub(crate) fn pow2_in(&mut self, path: &str, x: u64, lo: u64, hi: u64) -> bool {
        if !x.is_power_of_two() {
            self.fail(path, format!("{x} is not a power of two"));
            return false;
        }
        self.int_in(path, x, lo, hi)
    }

    /// A name-like string: at most [`MAX_NAME_CHARS`], no control characters, and not
    /// empty unless `may_be_empty`.
    pub(crate) fn name(&mut self, path: &str, s: &str, may_be_empty: bool) {
        if s.is_empty() && !may_be_empty {
            self.fail(path, "is empty");
        } else if s.chars().count() > MAX_NAME_CHARS {
            self.fail(path, format!("is longer than {MAX_NAME_CHARS} characters"));
        } else if s.chars().any(char::is_control) {
            self.fail(path, "holds control characters");
        }
    }

    /// A free text (a reason): at most [`MAX_REASON_CHARS`].
    pub(crate) fn reason(&mut self, path: &str, s: &str) {
        if s.chars().count() > MAX_REASON_CHARS {
            self.fail(
                path,
                format!("is longer than {MAX_REASON_CHARS} characters"),
            );
        }
    }

    /// A section: its reason when not measured or failed, else `measured` on its content.
    pub(crate) fn section<T>(
        &mut self,
        path: &str,
        section: &Section<T>,
        measured: impl FnOnce(&mut Checker, &str, &T),
    ) {
        match section {
            Section::Measured(t) => measured(self, path, t),
            Section::NotMeasured { reason } | Section::Failed { reason } => {
                self.reason(&at(path, "reason"), reason)
            }
        }
    }

    /// At most `max` items.
    pub(crate) fn count(&mut self, path: &str, n: usize, max: usize) -> bool {
        let ok = n <= max;
        if !ok {
            self.fail(path, format!("has {n} items, more than {max}"));
        }
        ok
    }
}

/// `base.key`, or `key` at the top; a key that is not a plain name is quoted:
/// `base["odd key"]`.
pub(crate) fn at(base: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    match (plain, base.is_empty()) {
        (true, true) => key.to_string(),
        (true, false) => format!("{base}.{key}"),
        (false, _) => format!("{base}[{key:?}]"),
    }
}

/// A float as people read it: `1e308`, not 309 digits.
pub(crate) fn num(x: f64) -> String {
    let a = x.abs();
    if a != 0.0 && a.is_finite() && !(1e-6..1e15).contains(&a) {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}

/// `base[i]`.
pub(crate) fn idx(base: &str, i: usize) -> String {
    format!("{base}[{i}]")
}

#[cfg(test)]
mod tests;
