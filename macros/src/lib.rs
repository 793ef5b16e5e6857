//! memtune's proc macros: compile-time constants planned from the hardware profile.
//!
//! Re-exported by `memtune`; this crate depends on `memtune-core` only, never on `memtune`
//! (that would be a cycle). The macros themselves arrive with the compile-time tuning work.
