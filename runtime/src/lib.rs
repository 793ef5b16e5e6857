//! memtune: GPU memory-system tuning from measured hardware profiles.
//!
//! This crate is what users depend on. It re-exports the pure core (profile model, store,
//! lookup chain, planners), the proc macros and the kernels, as `sqlx` does over
//! `sqlx-core` and `sqlx-macros`, and adds what needs the GPU: device identity and tuned
//! launches.

pub mod autotune;
pub mod device;
pub mod gpu;
pub mod launch;
pub mod replan;
pub mod reuse;
pub mod tuned;
pub mod workload;

pub use autotune::{Autotuner, PlanSource, TunedPlan};
pub use launch::{LaunchError, Runtime};
pub use replan::{EmbeddedProfiles, Replan, Replanned, RuntimeSource, UsedProfile};
pub use tuned::{Tuned, TunedError};

pub use memtune_core as core;
pub use memtune_core::compiled::{GroupingConsts, ProfileStamp, SamplingConsts, StencilConsts};
pub use memtune_core::{
    resolve, ComputeCapability, DeviceIdentity, LookupConfig, MemoryKind, Profile, ProfileError,
    Resolved, Section, Source, Store, Wanted,
};
pub use memtune_kernels as kernels;
pub use memtune_macros as macros;
/// Compile-time constants from the hardware profile (`docs/macros.md`).
pub use memtune_macros::{
    embedded_decisions, embedded_profiles, grouping_plan, profile_stamp, profile_value,
    sampling_plan, stencil_plan,
};
