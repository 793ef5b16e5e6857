//! The plumbing the three `user-*` examples share: the error of a run and its exit code,
//! the `main` flow and the mode it runs, size and memory arguments, the cases of a bench
//! over sizes and variants, the `--check-free` limits, the bench's timings, rows, table
//! and JSON document, round-robin timing and tuning twice, the device and decision lines
//! they print, NVRTC compilation and result slots on the GPU present, and the GPU-test
//! switch and test helpers. None of memtune's tuning logic is here: each example calls
//! memtune's autotuner itself, with its own kernel, workload and checks.

pub mod args;
pub mod bench;
pub mod error;
pub mod gpu;
pub mod report;
pub mod session;
pub mod testing;

pub use error::Error;
