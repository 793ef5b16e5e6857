//! The `cargo-tune` command: its verbs ([`cli`]), the benchmarks ([`bench`](mod@bench)), the plots and
//! the progress display. The probe itself is `memtune-probe`; the build helper is
//! `memtune-build`.

pub mod bench;
pub mod cli;
pub(crate) mod env;
pub mod exit;
pub(crate) mod files;
pub mod interrupt;
pub mod plot;
pub mod progress;
pub mod report;
pub mod size;
