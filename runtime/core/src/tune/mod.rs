//! Autotuning on the user's kernel: the profile narrows the choices to a handful of
//! candidate plans, the kernel timed once settles them, and the decision is kept.
//!
//! The flow, all pure here (the GPU timer lives in `memtune::autotune`):
//!
//! ```text
//! Tunable workload + Profile ─► candidates (≤ 5: untuned, the model's plan, neighbours)
//!      ─► session::run(timer)  (warm-up, interleaved timed rounds, early stop, tie rule)
//!      ─► Decision (winner, every candidate's timings and errors, why)
//!      ─► DecisionStore (user cache, .memtune/decisions/, embedded), keyed by TuneKey
//! ```
//!
//! ```
//! use memtune_core::plan::SamplingWorkload;
//! use memtune_core::tune::{session, Tunable};
//! use memtune_core::{default::builtin, MemoryKind};
//!
//! let profile = builtin();
//! let work = SamplingWorkload { region_bytes: 1 << 30, memory: MemoryKind::Device, reads_per_thread: 64 };
//! let candidates = work.candidates(&profile).unwrap();
//! // A fake timer: the kernel takes 2 ms untuned and 1 ms with any scope.
//! let outcome = session::run(candidates.len(), &session::Budget::default(), |i| {
//!     Ok(if candidates[i].plan.passes == 1 { 2.0 } else { 1.0 })
//! });
//! assert!(candidates[outcome.chosen].plan.passes >= 1);
//! ```

mod candidates;
mod decision;
mod key;
mod pass_counts;
pub mod session;
mod store;
mod trials;

pub use candidates::{Candidate, Origin, Tunable, MAX_CANDIDATES};
pub use decision::{
    CandidateResult, Decision, DecisionError, DECISION_SCHEMA, MAX_DECISION_BYTES, MAX_DECISION_MS,
};
pub use key::candidates_digest;
pub use key::{size_class, TuneKey, WorkloadClass};
pub use store::{
    read_decision, save_in, DecisionStore, Found, StoreSource, DECISIONS_DIR, ENV_AUTOTUNE,
};
pub use trials::WorkloadTrials;
