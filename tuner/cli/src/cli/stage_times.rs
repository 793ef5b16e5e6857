//! Where a probe's time went: the time between progress events, added up per memory kind
//! and phase (TLB sweep, confirmation, sharing, random access, each cache path), for the step's
//! closing line. The events mark the end of each unit of work, so the time since the
//! previous event belongs to the event's own phase.

use memtune_core::profile::MemoryKind;
use memtune_probe::{Carveout, LoadPath, ProgressEvent, Stage};
use std::time::Instant;

/// A phase of the probe, as the summary names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Sweep,
    Confirm,
    Sharing,
    Random,
    Caches(LoadPath, Carveout),
}

impl Phase {
    fn of(stage: &Stage) -> Option<Phase> {
        match stage {
            Stage::TlbSweep { .. } => Some(Phase::Sweep),
            Stage::TlbConfirm { .. } => Some(Phase::Confirm),
            Stage::TlbSharing { .. } => Some(Phase::Sharing),
            Stage::RandomAccess { .. } => Some(Phase::Random),
            Stage::Caches { path, carveout } => Some(Phase::Caches(*path, *carveout)),
            Stage::KindDone => None,
        }
    }

    fn name(self) -> String {
        match self {
            Phase::Sweep => "TLB sweep".into(),
            Phase::Confirm => "confirmation".into(),
            Phase::Sharing => "sharing".into(),
            Phase::Random => "random access".into(),
            Phase::Caches(path, Carveout::Default) => format!("{path:?} path"),
            Phase::Caches(path, Carveout::MaxL1) => format!("{path:?} path, max L1"),
        }
    }
}

/// Seconds per kind and phase, in the order first seen.
#[derive(Debug, Default)]
pub struct StageTimes {
    last: Option<Instant>,
    spent: Vec<(MemoryKind, Phase, f64)>,
}

impl StageTimes {
    pub fn start() -> StageTimes {
        StageTimes {
            last: Some(Instant::now()),
            spent: Vec::new(),
        }
    }

    /// Counts the time since the previous event (or the start) to `event`'s phase.
    pub fn record(&mut self, event: &ProgressEvent) {
        let now = Instant::now();
        let secs = self
            .last
            .map_or(0.0, |t| now.duration_since(t).as_secs_f64());
        self.last = Some(now);
        self.add(event.kind, &event.stage, secs);
    }

    fn add(&mut self, kind: MemoryKind, stage: &Stage, secs: f64) {
        let Some(phase) = Phase::of(stage) else {
            return;
        };
        match self
            .spent
            .iter_mut()
            .find(|(k, p, _)| *k == kind && *p == phase)
        {
            Some((_, _, s)) => *s += secs,
            None => self.spent.push((kind, phase, secs)),
        }
    }

    /// `device: TLB sweep 4.1 s, random access 1.2 s; pinned: ...`; empty without events.
    pub fn summary(&self) -> String {
        let mut kinds: Vec<MemoryKind> = Vec::new();
        for (k, _, _) in &self.spent {
            if !kinds.contains(k) {
                kinds.push(*k);
            }
        }
        kinds
            .iter()
            .map(|kind| {
                let parts: Vec<String> = self
                    .spent
                    .iter()
                    .filter(|(k, _, _)| k == kind)
                    .map(|(_, p, s)| format!("{} {s:.1} s", p.name()))
                    .collect();
                format!("{kind}: {}", parts.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_adds_up_per_kind_and_phase_in_the_order_seen() {
        let mut t = StageTimes::default();
        let sweep = Stage::TlbSweep { stride_bytes: 4096 };
        t.add(MemoryKind::Device, &sweep, 1.0);
        t.add(MemoryKind::Device, &sweep, 0.5);
        t.add(
            MemoryKind::Device,
            &Stage::TlbConfirm {
                window: 1,
                windows: 2,
            },
            0.3,
        );
        t.add(MemoryKind::Device, &Stage::KindDone, 9.0);
        t.add(
            MemoryKind::Pinned,
            &Stage::RandomAccess {
                region_bytes: 1 << 20,
            },
            2.0,
        );
        assert_eq!(
            t.summary(),
            "device: TLB sweep 1.5 s, confirmation 0.3 s; pinned: random access 2.0 s"
        );
        assert_eq!(StageTimes::default().summary(), "");
    }
}
