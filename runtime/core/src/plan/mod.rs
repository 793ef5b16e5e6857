//! Planners: pure functions `Profile + workload → plan`. Each plan carries the reasons it
//! was chosen, in words a user can check against the profile (`docs/planners.md` has the
//! cost model and its formulas).
//!
//! - [`sampling::plan`]: TLB scope and passes for random sampling (seed 000, §5.2).
//! - [`grouping::plan`]: TLB scope, passes and the naive or copy approach for hash grouping
//!   (seed 000, §5.3).
//! - [`stencil::plan`]: plain, staged or streaming 3-D stencil and its block (seed 003).
//!
//! Every field of a plan except `reasons` is plain data (integers, a bool, arrays, unit
//! enums, one `f64`), so a proc macro can write a plan out as a constant expression; the
//! reasons are for people and logs. A section of the profile that was not measured (or
//! failed) never stops a planner: it makes the conservative choice and says so, naming
//! `cargo tune`. Only a workload that cannot run is an error ([`PlanError`]).

pub mod certainty;
mod error;
pub mod grouping;
mod hedge;
mod insert_cost;
mod passes;
mod reach_bet;
mod read_cost;
pub mod sampling;
mod scoping;
pub mod stencil;
mod translation;
mod units;

pub use certainty::{
    grouping_untimed, judge_scope, sampling_untimed, stencil_untimed, Certainty, Judgement,
};
pub use error::PlanError;
pub use grouping::{Approach, GroupingPlan, GroupingWorkload};
pub use sampling::{SamplingPlan, SamplingWorkload};
pub use stencil::{Dtype, StencilPlan, StencilWorkload, Variant};

/// A read curve of `(region_bytes, reads_per_second)` points, for the planners' unit tests.
#[cfg(test)]
pub(crate) fn test_curve(points: &[(u64, f64)]) -> crate::profile::RandomAccessCurve {
    crate::profile::RandomAccessCurve {
        points: points
            .iter()
            .map(
                |&(region_bytes, reads_per_second)| crate::profile::RandomAccessPoint {
                    region_bytes,
                    reads_per_second,
                },
            )
            .collect(),
        knee_bytes: None,
        draw_cost_relative: None,
        atomic_points: vec![],
    }
}
