//! The bench's progress on stderr: on a terminal a bar per workload, with the case being
//! timed and how many are done; elsewhere one line per case, as a log wants; nothing with
//! `--quiet`. Notes print above the bar.

use crate::progress::Bar;
use std::cell::RefCell;
use std::time::Instant;

pub(super) struct Steps {
    quiet: bool,
    /// When the bench began: log lines say how long it has run.
    start: Instant,
    /// The bar of the workload being timed, and its label.
    bar: RefCell<Option<(String, Bar)>>,
}

impl Steps {
    pub fn new(quiet: bool) -> Steps {
        Steps {
            quiet,
            start: Instant::now(),
            bar: RefCell::new(None),
        }
    }

    /// A line of information.
    pub fn note(&self, m: &str) {
        if self.quiet {
            return;
        }
        match &*self.bar.borrow() {
            Some((_, bar)) if bar.is_drawn() => bar.println(m),
            _ => eprintln!("{m}"),
        }
    }

    /// Case `i` of `n` of `label` (e.g. `sampling device`) starts.
    pub fn case(&self, label: &str, i: usize, n: usize, case: &str) {
        let mut slot = self.bar.borrow_mut();
        if slot.as_ref().is_none_or(|(l, _)| l != label) {
            if let Some((_, bar)) = slot.take() {
                bar.finish("done");
            }
            *slot = Some((
                label.to_string(),
                Bar::new(format!("bench {label}"), self.quiet),
            ));
        }
        if let Some((_, bar)) = slot.as_mut() {
            if bar.is_drawn() {
                bar.update(i as f64 / n.max(1) as f64, case);
            } else if !self.quiet {
                let secs = self.start.elapsed().as_secs();
                eprintln!("{label}: {case} ({}/{n}, {secs} s in)", i + 1);
            }
        }
    }

    /// Ends the current bar with `summary`.
    pub fn finish(&self, summary: &str) {
        if let Some((_, bar)) = self.bar.borrow_mut().take() {
            bar.finish(summary);
        }
    }
}
