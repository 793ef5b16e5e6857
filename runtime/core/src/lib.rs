//! memtune's pure core: the hardware profile model, its store and lookup chain, and the
//! planners that turn a profile into decisions. No CUDA here: everything builds and tests
//! on a machine without a GPU.

pub mod codec;
pub mod compiled;
pub mod default;
pub mod defines;
pub mod digest;
pub mod error;
pub mod human;
pub mod lookup;
pub mod plan;
pub mod profile;
mod profile_caches;
mod profile_latency;
pub mod reuse;
pub mod size;
pub mod stats;
pub mod store;
pub mod time;
pub mod tune;
pub mod userio;
pub mod validate;

pub use error::{ErrorClass, ProfileError};
pub use lookup::{resolve, LookupConfig, Resolved, Source, Wanted};
pub use profile::*;
pub use store::Store;
pub use validate::{validate, ValidationError, Violation};
