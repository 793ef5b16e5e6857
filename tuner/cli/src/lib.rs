//! The `cargo-tune` command: its verbs ([`cli`]), the benchmarks ([`bench`](mod@bench)), the plots and
//! the progress display. The probe itself is `memtune-probe`; the build helper is
//! `memtune-build`.

pub mod bench;
pub mod cli;
pub mod exit;
pub mod interrupt;
pub mod plot;
pub mod progress;
pub mod report;
pub mod staging_chart;
