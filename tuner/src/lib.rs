//! memtune's tuner: the probe (sweeps and inference), the simulated GPU, and the
//! `cargo-tune` command.

pub mod bench;
pub mod cli;
pub mod gpu;
pub mod plot;
pub mod probe;
pub mod progress;
pub mod sim;
