//! The simulated GPU (schema memtune-sim/1).
