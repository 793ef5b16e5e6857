//! Progress on stderr: a redrawn bar on a terminal, a line per phase otherwise (logs),
//! nothing with `--quiet`.

use std::io::{IsTerminal, Write};
use std::time::Instant;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Quiet,
    Lines,
    Terminal,
}

pub struct Bar {
    label: String,
    mode: Mode,
    started: Instant,
    last_draw: Option<Instant>,
    last_detail: String,
}

impl Bar {
    pub fn new(label: impl Into<String>, quiet: bool) -> Bar {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Terminal
        } else {
            Mode::Lines
        };
        Bar {
            label: label.into(),
            mode,
            started: Instant::now(),
            last_draw: None,
            last_detail: String::new(),
        }
    }

    /// Shows `fraction` (0..=1) done, with what is being done now.
    pub fn update(&mut self, fraction: f64, detail: &str) {
        match self.mode {
            Mode::Quiet => {}
            Mode::Lines => {
                // A log gets a line per phase (the text before the first comma), not one
                // per step, stamped with the time since the start.
                let phase = detail.split(',').next().unwrap_or(detail);
                if phase != self.last_detail {
                    let secs = self.started.elapsed().as_secs_f64();
                    eprintln!("{}: [{secs:5.1} s] {phase}", self.label);
                    self.last_detail = phase.to_string();
                }
            }
            Mode::Terminal => {
                // Redraw at most 20 times a second: drawing is not free over slow links.
                let now = Instant::now();
                if self
                    .last_draw
                    .is_some_and(|t| now.duration_since(t).as_millis() < 50)
                {
                    return;
                }
                self.last_draw = Some(now);
                const WIDTH: usize = 30;
                let filled = ((fraction.clamp(0.0, 1.0) * WIDTH as f64) as usize).min(WIDTH);
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\r\x1b[2K{} [{}{}] {:>3.0}% {detail}",
                    self.label,
                    "#".repeat(filled),
                    "-".repeat(WIDTH - filled),
                    fraction * 100.0
                );
                let _ = err.flush();
            }
        }
    }

    /// Ends with a one-line summary and the time taken.
    pub fn finish(self, summary: &str) {
        let secs = self.started.elapsed().as_secs_f64();
        match self.mode {
            Mode::Quiet => {}
            Mode::Terminal => eprintln!("\r\x1b[2K{}: {summary} ({secs:.1} s)", self.label),
            Mode::Lines => eprintln!("{}: {summary} ({secs:.1} s)", self.label),
        }
    }
}
