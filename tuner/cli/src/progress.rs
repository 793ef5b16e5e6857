//! Progress on stderr, drawn by indicatif: on a terminal a bar with the step, the elapsed
//! time and an estimate of what is left; when stderr is not a terminal (logs, pipes), with
//! `--quiet` or with `--json`, no progress at all, only each step's closing summary (and
//! not even that when quiet). Every bar belongs to one process-wide [`MultiProgress`], so
//! bars open at once stack instead of overwriting each other, and lines printed while they
//! run go above them. GPUs probed at once are worker processes whose stderr is a pipe:
//! they draw no bars, only their summaries.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// The bars drawn now; made with the first drawn bar.
static BARS: OnceLock<MultiProgress> = OnceLock::new();

fn bars() -> &'static MultiProgress {
    BARS.get_or_init(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
}

/// Prints `line` on stderr, above the bars where any are drawn.
pub fn eprint_line(line: &str) {
    match BARS.get() {
        Some(bars) => bars.suspend(|| eprintln!("{line}")),
        None => eprintln!("{line}"),
    }
}

/// Set once by the command line: `--json` output wants no progress on stderr.
static HIDDEN: AtomicBool = AtomicBool::new(false);

/// Hides every bar made after this call (for `--json`); summaries still print unless quiet.
pub fn hide_bars(hidden: bool) {
    HIDDEN.store(hidden, Ordering::Relaxed);
}

/// Steps of the bar: fractions are shown to a thousandth.
const STEPS: u64 = 1000;
/// The label, the bar, percent, time so far, the estimate left, and the step.
const TEMPLATE: &str =
    "{prefix} [{bar:30.cyan/blue}] {percent:>3}% {elapsed:>4} (eta {eta:>3}) {wide_msg}";

pub struct Bar {
    label: String,
    quiet: bool,
    bar: Option<ProgressBar>,
    started: Instant,
}

impl Bar {
    pub fn new(label: impl Into<String>, quiet: bool) -> Bar {
        let label = label.into();
        let drawn = !quiet && !HIDDEN.load(Ordering::Relaxed) && std::io::stderr().is_terminal();
        let bar = drawn.then(|| {
            let bar = bars().add(ProgressBar::with_draw_target(
                Some(STEPS),
                ProgressDrawTarget::hidden(),
            ));
            // The template is a constant: a bad one is a bug caught by the tests.
            if let Ok(style) = ProgressStyle::with_template(TEMPLATE) {
                bar.set_style(style.progress_chars("#>-"));
            }
            bar.set_prefix(label.clone());
            bar
        });
        Bar {
            label,
            quiet,
            bar,
            started: Instant::now(),
        }
    }

    /// Whether a bar is drawn (a terminal, neither quiet nor JSON).
    pub fn is_drawn(&self) -> bool {
        self.bar.is_some()
    }

    /// Shows `fraction` (0..=1) done, with what is being done now.
    pub fn update(&mut self, fraction: f64, detail: &str) {
        if let Some(bar) = &self.bar {
            let pos = (fraction.clamp(0.0, 1.0) * STEPS as f64).round() as u64;
            bar.set_position(pos);
            bar.set_message(detail.to_string());
        }
    }

    /// Prints `line` on stderr above the bar (as is where none is drawn).
    pub fn println(&self, line: &str) {
        eprint_line(line);
    }

    /// Ends with a one-line summary and the time taken.
    pub fn finish(mut self, summary: &str) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
            bars().remove(&bar);
        }
        if !self.quiet {
            let secs = self.started.elapsed().as_secs_f64();
            eprint_line(&format!("{}: {summary} ({secs:.1} s)", self.label));
        }
    }
}

impl Drop for Bar {
    /// A bar left unfinished (an error, Ctrl-C) leaves the stack too.
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
            bars().remove(&bar);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_bar_when_quiet_or_not_on_a_terminal() {
        let mut quiet = Bar::new("x", true);
        assert!(!quiet.is_drawn());
        quiet.update(0.5, "half");
        quiet.finish("done");
        // Under `cargo test`, stderr is captured: not a terminal, so no bar either.
        if !std::io::stderr().is_terminal() {
            assert!(!Bar::new("y", false).is_drawn());
        }
    }

    #[test]
    fn quiet_bars_of_gpus_probed_at_once_are_not_drawn() {
        std::thread::scope(|scope| {
            for gpu in 0..4 {
                scope.spawn(move || {
                    let mut bar = Bar::new(format!("GPU {gpu}: caches"), true);
                    assert!(!bar.is_drawn());
                    bar.update(0.5, "half");
                    bar.println("a note");
                    bar.finish("done");
                    // Dropped unfinished, as on an error.
                    assert!(!Bar::new(format!("GPU {gpu}: staging"), true).is_drawn());
                });
            }
        });
        // No bar drawn anywhere (stderr is no terminal here): the shared stack is never made.
        if !std::io::stderr().is_terminal() {
            assert!(BARS.get().is_none());
        }
    }

    #[test]
    fn the_bar_template_is_valid() {
        assert!(ProgressStyle::with_template(TEMPLATE).is_ok());
    }
}
