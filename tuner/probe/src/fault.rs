//! Fault injection for testing the probe's failure paths: `MEMTUNE_FAULT=alloc:pinned,launch:staging`
//! makes the named operation of the named section fail, as a driver error would, so that a
//! test can check that the section is marked failed, the others are kept and nothing torn
//! is written.
//!
//! The CLI reads the variable and hands the parsed [`Faults`] to the GPU ([`crate::gpu::Gpu::with_faults`],
//! the bandwidth and staging sections) or the simulator ([`crate::sim::Simulator::with_faults`]).
//! Each place that allocates or launches for a section asks [`Faults::check`] first.
//!
//! ```
//! use memtune_probe::fault::{FaultOp, FaultSection, Faults};
//! use memtune_core::MemoryKind;
//!
//! let faults = Faults::parse("alloc:pinned,launch:staging").unwrap();
//! assert!(faults.check(FaultOp::Alloc, FaultSection::Tlb(MemoryKind::Pinned)).is_err());
//! assert!(faults.check(FaultOp::Alloc, FaultSection::Random(MemoryKind::Pinned)).is_err());
//! assert!(faults.check(FaultOp::Launch, FaultSection::Tlb(MemoryKind::Pinned)).is_ok());
//! assert!(Faults::parse("alloc:pinnned").is_err());
//! ```

use memtune_core::MemoryKind;
use std::fmt;

/// The environment variable the CLI reads the faults from.
pub const FAULT_VARIABLE: &str = "MEMTUNE_FAULT";

/// The operation that fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultOp {
    /// Allocating the section's device, pinned or managed memory.
    Alloc,
    /// Launching the section's kernels (or, for bandwidth, its first copy).
    Launch,
}

impl FaultOp {
    const ALL: [FaultOp; 2] = [FaultOp::Alloc, FaultOp::Launch];

    pub fn as_str(self) -> &'static str {
        match self {
            FaultOp::Alloc => "alloc",
            FaultOp::Launch => "launch",
        }
    }
}

/// A part of the probe that allocates and launches on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultSection {
    /// The TLB chase sweep (and sharing search) of one memory kind.
    Tlb(MemoryKind),
    /// The random-access curve (reads, draw cost, atomics) of one memory kind.
    Random(MemoryKind),
    /// The cache hierarchy (L1, L2, constant caches, shared memory).
    Caches,
    /// Copy and zero-copy bandwidth.
    Bandwidth,
    /// The shared-memory staging table.
    Staging,
}

impl fmt::Display for FaultSection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultSection::Tlb(k) => write!(f, "tlb-{k}"),
            FaultSection::Random(k) => write!(f, "random-{k}"),
            FaultSection::Caches => f.write_str("caches"),
            FaultSection::Bandwidth => f.write_str("bandwidth"),
            FaultSection::Staging => f.write_str("staging"),
        }
    }
}

/// The section names `MEMTUNE_FAULT` accepts, as written in its error message and docs.
pub const SECTION_NAMES: &str = "device, pinned, managed (a kind's TLB sweep and random access), tlb-device, tlb-pinned, tlb-managed, random-device, random-pinned, random-managed, caches, bandwidth, staging";

/// The sections one name stands for: a bare kind is both its TLB sweep and its random
/// access (they share the kind's buffer on the GPU).
fn sections_named(name: &str) -> Option<Vec<FaultSection>> {
    let kind = |s: &str| MemoryKind::ALL.into_iter().find(|k| k.as_str() == s);
    if let Some(k) = kind(name) {
        return Some(vec![FaultSection::Tlb(k), FaultSection::Random(k)]);
    }
    if let Some(k) = name.strip_prefix("tlb-").and_then(kind) {
        return Some(vec![FaultSection::Tlb(k)]);
    }
    if let Some(k) = name.strip_prefix("random-").and_then(kind) {
        return Some(vec![FaultSection::Random(k)]);
    }
    match name {
        "caches" => Some(vec![FaultSection::Caches]),
        "bandwidth" => Some(vec![FaultSection::Bandwidth]),
        "staging" => Some(vec![FaultSection::Staging]),
        _ => None,
    }
}

/// A `MEMTUNE_FAULT` value that is not a list of `op:section`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultParseError {
    #[error("{FAULT_VARIABLE} is set but empty; unset it, or give op:section items such as alloc:pinned")]
    Empty,
    #[error("{FAULT_VARIABLE} item {index} is empty (a stray comma?); items are op:section separated by commas")]
    EmptyItem { index: usize },
    #[error("{FAULT_VARIABLE} item `{item}` is not op:section (e.g. alloc:pinned)")]
    NoColon { item: String },
    #[error("{FAULT_VARIABLE} item `{item}`: unknown operation `{op}`; operations: alloc, launch")]
    UnknownOp { item: String, op: String },
    #[error(
        "{FAULT_VARIABLE} item `{item}`: unknown section `{section}`; sections: {SECTION_NAMES}"
    )]
    UnknownSection { item: String, section: String },
}

/// One injected failure, as the failed section's reason reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{} of the {section} section failed: injected by {FAULT_VARIABLE} ({}:{section})", op_noun(*op), op.as_str())]
pub struct InjectedFault {
    pub op: FaultOp,
    pub section: FaultSection,
}

fn op_noun(op: FaultOp) -> &'static str {
    match op {
        FaultOp::Alloc => "the allocation",
        FaultOp::Launch => "the kernel launch",
    }
}

/// The set of operations to fail; empty (the default) fails nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    items: Vec<(FaultOp, FaultSection)>,
}

impl Faults {
    /// No faults.
    pub fn none() -> Faults {
        Faults::default()
    }

    /// Parses `op:section[,op:section...]` strictly: no blanks, no empty items, every name
    /// known. A section naming a kind (`pinned`) covers its TLB sweep and random access.
    pub fn parse(text: &str) -> Result<Faults, FaultParseError> {
        if text.is_empty() {
            return Err(FaultParseError::Empty);
        }
        let mut items = Vec::new();
        for (index, item) in text.split(',').enumerate() {
            if item.is_empty() {
                return Err(FaultParseError::EmptyItem { index: index + 1 });
            }
            let (op, section) = item
                .split_once(':')
                .ok_or_else(|| FaultParseError::NoColon {
                    item: item.to_string(),
                })?;
            let op = FaultOp::ALL
                .into_iter()
                .find(|o| o.as_str() == op)
                .ok_or_else(|| FaultParseError::UnknownOp {
                    item: item.to_string(),
                    op: op.to_string(),
                })?;
            let sections =
                sections_named(section).ok_or_else(|| FaultParseError::UnknownSection {
                    item: item.to_string(),
                    section: section.to_string(),
                })?;
            for s in sections {
                if !items.contains(&(op, s)) {
                    items.push((op, s));
                }
            }
        }
        Ok(Faults { items })
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Whether `op` of `section` is to fail.
    pub fn has(&self, op: FaultOp, section: FaultSection) -> bool {
        self.items.contains(&(op, section))
    }

    /// `Err` when `op` of `section` is to fail: call it just before the real operation.
    pub fn check(&self, op: FaultOp, section: FaultSection) -> Result<(), InjectedFault> {
        if self.has(op, section) {
            Err(InjectedFault { op, section })
        } else {
            Ok(())
        }
    }

    /// The faults (op, section) in the order given, a kind expanded to its two sections.
    pub fn iter(&self) -> impl Iterator<Item = (FaultOp, FaultSection)> + '_ {
        self.items.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use MemoryKind::{Device, Managed, Pinned};

    #[test]
    fn a_kind_names_its_tlb_sweep_and_random_access() {
        let f = Faults::parse("alloc:pinned").unwrap();
        assert_eq!(
            f.iter().collect::<Vec<_>>(),
            [
                (FaultOp::Alloc, FaultSection::Tlb(Pinned)),
                (FaultOp::Alloc, FaultSection::Random(Pinned))
            ]
        );
        assert!(!f.has(FaultOp::Launch, FaultSection::Tlb(Pinned)));
        assert!(!f.has(FaultOp::Alloc, FaultSection::Tlb(Device)));
    }

    #[test]
    fn every_section_name_parses_to_what_it_displays() {
        let all = "launch:tlb-device,launch:tlb-pinned,launch:tlb-managed,alloc:random-device,alloc:random-pinned,alloc:random-managed,alloc:caches,launch:bandwidth,alloc:staging";
        let f = Faults::parse(all).unwrap();
        let back: Vec<String> = f
            .iter()
            .map(|(op, s)| format!("{}:{s}", op.as_str()))
            .collect();
        assert_eq!(back.join(","), all);
        assert!(f.has(FaultOp::Launch, FaultSection::Tlb(Managed)));
        assert!(f.has(FaultOp::Alloc, FaultSection::Staging));
        assert!(!f.has(FaultOp::Launch, FaultSection::Staging));
    }

    #[test]
    fn duplicates_collapse() {
        let f = Faults::parse("alloc:device,alloc:tlb-device,alloc:device").unwrap();
        assert_eq!(f.iter().count(), 2);
    }

    #[test]
    fn bad_values_are_clear_errors() {
        assert_eq!(Faults::parse(""), Err(FaultParseError::Empty));
        assert_eq!(
            Faults::parse("alloc:pinned,"),
            Err(FaultParseError::EmptyItem { index: 2 })
        );
        assert!(matches!(
            Faults::parse("pinned"),
            Err(FaultParseError::NoColon { .. })
        ));
        let op = Faults::parse("free:pinned").unwrap_err();
        assert!(op.to_string().contains("unknown operation `free`"), "{op}");
        let section = Faults::parse("alloc:pinnned").unwrap_err();
        let msg = section.to_string();
        assert!(msg.contains("unknown section `pinnned`"), "{msg}");
        assert!(msg.contains("tlb-pinned"), "lists the sections: {msg}");
        // Strict: no blanks, no case folding, nothing after the section.
        for bad in [
            " alloc:pinned",
            "alloc: pinned",
            "ALLOC:pinned",
            "alloc:pinned:x",
            "alloc:tlb-",
            "alloc:random-hbm",
        ] {
            assert!(Faults::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn check_names_the_fault_in_its_error() {
        let f = Faults::parse("launch:caches").unwrap();
        assert!(f.check(FaultOp::Alloc, FaultSection::Caches).is_ok());
        let e = f.check(FaultOp::Launch, FaultSection::Caches).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the kernel launch of the caches section failed: injected by MEMTUNE_FAULT (launch:caches)"
        );
        assert!(Faults::none()
            .check(FaultOp::Alloc, FaultSection::Bandwidth)
            .is_ok());
    }
}
