//! memtune's tuner: the probe (sweeps and inference), the simulated GPU, the
//! `cargo-tune` command, and the build helper for a user's `build.rs` ([`build`]).

pub mod bench;
pub mod build;
pub mod cli;
pub mod gpu;
pub mod plot;
pub mod probe;
pub mod progress;
pub mod sim;
pub mod staging_chart;
