//! The barrier between the phases of an exact GPU analysis.

use std::sync::{Condvar, Mutex};

use super::GpuReuseError;

/// A barrier between phases that a failed worker opens for all: the others then stop
/// with [`GpuReuseError::Aborted`] instead of waiting for it forever.
pub(super) struct Phases {
    /// Arrived workers, generation, failed.
    state: Mutex<(usize, u64, bool)>,
    turned: Condvar,
    parties: usize,
}

impl Phases {
    pub(super) fn new(parties: usize) -> Phases {
        Phases {
            state: Mutex::new((0, 0, false)),
            turned: Condvar::new(),
            parties,
        }
    }

    pub(super) fn wait(&self) -> Result<(), GpuReuseError> {
        let mut s = self.state.lock().map_err(|_| GpuReuseError::Worker)?;
        if s.2 {
            return Err(GpuReuseError::Aborted);
        }
        let generation = s.1;
        s.0 += 1;
        if s.0 == self.parties {
            *s = (0, generation + 1, false);
            self.turned.notify_all();
            return Ok(());
        }
        while s.1 == generation && !s.2 {
            s = self.turned.wait(s).map_err(|_| GpuReuseError::Worker)?;
        }
        if s.2 {
            Err(GpuReuseError::Aborted)
        } else {
            Ok(())
        }
    }

    pub(super) fn fail(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.2 = true;
        }
        self.turned.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_release_everyone_together() {
        let phases = Phases::new(3);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..4 {
                        assert!(phases.wait().is_ok());
                    }
                });
            }
        });
    }

    #[test]
    fn a_failed_worker_releases_the_waiting_ones() {
        let phases = Phases::new(3);
        std::thread::scope(|s| {
            let waiting: Vec<_> = (0..2).map(|_| s.spawn(|| phases.wait())).collect();
            s.spawn(|| phases.fail());
            for w in waiting {
                assert!(matches!(w.join(), Ok(Err(GpuReuseError::Aborted))));
            }
        });
        assert!(matches!(phases.wait(), Err(GpuReuseError::Aborted)));
    }
}
