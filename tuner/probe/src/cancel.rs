//! Cancelling a probe from outside (the CLI's Ctrl-C handler): a shared flag the probe reads
//! before every measurement. A cancelled probe fails its remaining calls with
//! [`BackendError::Cancelled`](crate::BackendError::Cancelled) and returns through its
//! normal paths, so every buffer it holds is dropped (freed) on the way out.
//!
//! ```
//! use memtune_probe::{probe_tlb, Cancel, NoProgress, ProbeOptions};
//! use memtune_probe::sim::{SimConfig, Simulator};
//!
//! let cancel = Cancel::new();
//! let options = ProbeOptions { cancel: cancel.clone(), ..ProbeOptions::default() };
//! cancel.cancel(); // e.g. from a signal handler, while the probe runs
//! let mut sim = Simulator::new(SimConfig::builtin("p100").unwrap());
//! let result = probe_tlb(&mut sim, &options, &mut NoProgress);
//! assert_eq!(result.chase_calls, 0);
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A cancellation flag; clones share it. Never cancelled unless [`Cancel::cancel`] is called.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// A cancel sharing `flag`, e.g. one a signal handler sets (`signal_hook::flag`).
    pub fn from_flag(flag: Arc<AtomicBool>) -> Cancel {
        Cancel(flag)
    }

    /// Asks every holder of this flag to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Two flags compare by state: options differing only in their flag's identity are equal.
impl PartialEq for Cancel {
    fn eq(&self, other: &Cancel) -> bool {
        self.is_cancelled() == other.is_cancelled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_flag() {
        let a = Cancel::new();
        let b = a.clone();
        assert!(!b.is_cancelled());
        a.cancel();
        assert!(b.is_cancelled());
        assert_ne!(b, Cancel::new());
        let flag = Arc::new(AtomicBool::new(false));
        let c = Cancel::from_flag(flag.clone());
        flag.store(true, Ordering::SeqCst);
        assert!(c.is_cancelled());
    }
}
