//! The plumbing the three `user-*` examples share: size and memory arguments, the
//! `--check-free` limits, the bench table and its JSON document, round-robin timing, the
//! device and decision lines they print, NVRTC compilation for the GPU present and the
//! GPU-test switch. None of memtune's tuning logic is here: each example calls memtune's
//! autotuner itself, with its own kernel, workload and checks.

pub mod args;
pub mod bench;
pub mod gpu;
pub mod report;
pub mod session;
pub mod testing;
