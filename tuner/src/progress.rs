//! Progress on stderr: a redrawn bar on a terminal, one line per phase otherwise (logs),
//! nothing with `--quiet`.

use std::io::{IsTerminal, Write};
use std::time::Instant;

pub struct Bar {
    label: String,
    total: u64,
    done: u64,
    mode: Mode,
    started: Instant,
    last_draw: Option<Instant>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Quiet,
    Lines,
    Terminal,
}

impl Bar {
    /// A bar for one phase of `total` steps (`total` may grow with `add_total`).
    pub fn new(label: impl Into<String>, total: u64, quiet: bool) -> Bar {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Terminal
        } else {
            Mode::Lines
        };
        let bar = Bar {
            label: label.into(),
            total: total.max(1),
            done: 0,
            mode,
            started: Instant::now(),
            last_draw: None,
        };
        if mode == Mode::Lines {
            eprintln!("{} ...", bar.label);
        }
        bar
    }

    /// Adaptive sweeps learn of more work as they go.
    pub fn add_total(&mut self, more: u64) {
        self.total += more;
    }

    pub fn inc(&mut self, detail: &str) {
        self.done += 1;
        self.total = self.total.max(self.done);
        if self.mode != Mode::Terminal {
            return;
        }
        // Redraw at most 20 times a second: drawing is not free over slow terminals.
        let now = Instant::now();
        if self
            .last_draw
            .is_some_and(|t| now.duration_since(t).as_millis() < 50)
        {
            return;
        }
        self.last_draw = Some(now);
        const WIDTH: u64 = 30;
        let filled = (self.done * WIDTH / self.total) as usize;
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K{:<28} [{}{}] {}/{} {}",
            self.label,
            "#".repeat(filled),
            "-".repeat(WIDTH as usize - filled),
            self.done,
            self.total,
            detail
        );
        let _ = err.flush();
    }

    /// Ends the phase with a one-line summary.
    pub fn finish(self, summary: &str) {
        let secs = self.started.elapsed().as_secs_f64();
        match self.mode {
            Mode::Quiet => {}
            Mode::Terminal => eprintln!("\r\x1b[2K{:<28} {summary} ({secs:.1} s)", self.label),
            Mode::Lines => eprintln!("{}: {summary} ({secs:.1} s)", self.label),
        }
    }
}
