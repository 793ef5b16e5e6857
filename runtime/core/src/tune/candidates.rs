//! The handful of plans worth timing for a workload: always the untuned plan and the
//! model's pick, then the model's neighbours (half and twice its passes, ...), at most
//! [`MAX_CANDIDATES`]. Each workload is one [`Tunable`] impl; the autotuner, the bench and
//! the CLI walk them alike.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::key::{size_class, WorkloadClass};
use crate::plan::grouping::BUCKET_BYTES;
use crate::plan::sampling::READ_BYTES;
use crate::plan::stencil::DEFAULT_BLOCK;
use crate::plan::{self, Approach, GroupingPlan, GroupingWorkload, PlanError, SamplingPlan};
use crate::plan::{SamplingWorkload, StencilPlan, StencilWorkload, Variant};
use crate::profile::{MemoryKind, Profile};

/// The most candidates timed for one key.
pub const MAX_CANDIDATES: usize = 5;

/// Where a candidate came from, in order of safety: on a tie the safer one is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// What the kernel does without memtune: the baseline a plan must never lose to.
    Untuned,
    /// The memory model's pick from the profile.
    Model,
    /// A neighbour of the model's pick.
    Neighbour,
}

/// One plan to time.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate<P> {
    /// Short and stable (`1 pass`, `4 passes of 256 MiB`): the candidate set's digest is
    /// taken over the labels.
    pub label: String,
    pub origin: Origin,
    pub plan: P,
}

/// A workload the autotuner can tune: its class (the key) and its candidates.
pub trait Tunable {
    /// The plan the user's launch closure receives.
    type Plan: Clone + PartialEq + std::fmt::Debug + Serialize + DeserializeOwned;
    /// `sampling`, `grouping`, `stencil`.
    const NAME: &'static str;
    fn class(&self) -> WorkloadClass;
    /// The plan the kernel runs without memtune.
    fn untuned(&self) -> Self::Plan;
    /// The memory model's pick, a bet or sure.
    fn model(&self, profile: &Profile) -> Result<Self::Plan, PlanError>;
    /// The plan to use without timing: the model's pick where it is sure, else untuned
    /// ([`crate::plan::certainty`]).
    fn untimed(&self, profile: &Profile) -> Result<Self::Plan, PlanError> {
        self.model(profile)
    }
    /// A short label of a plan of this workload.
    fn label(plan: &Self::Plan) -> String;
    /// The model's neighbours worth timing, best first (the caller adds untuned and model
    /// and drops duplicates).
    fn neighbours(&self, model: &Self::Plan) -> Vec<Self::Plan>;

    /// Untuned first, the model's pick second, then neighbours; duplicates dropped, at most
    /// [`MAX_CANDIDATES`].
    fn candidates(&self, profile: &Profile) -> Result<Vec<Candidate<Self::Plan>>, PlanError> {
        let model = self.model(profile)?;
        let mut out: Vec<Candidate<Self::Plan>> = Vec::new();
        let all = [
            (Origin::Untuned, self.untuned()),
            (Origin::Model, model.clone()),
        ]
        .into_iter()
        .chain(
            self.neighbours(&model)
                .into_iter()
                .map(|p| (Origin::Neighbour, p)),
        );
        for (origin, plan) in all {
            let label = Self::label(&plan);
            if out.len() < MAX_CANDIDATES && out.iter().all(|c| c.label != label) {
                out.push(Candidate {
                    label,
                    origin,
                    plan,
                });
            }
        }
        Ok(out)
    }
}

/// `passes` equal scopes of `total` bytes in whole `unit`s, with the passes recounted for
/// that scope (what the launches split): `(scope_bytes, passes)`.
pub fn split(total: u64, passes: u32, unit: u64) -> (u64, u32) {
    let units = (total / unit).max(1);
    let scope_units = units.div_ceil(u64::from(passes.max(1)));
    let recount = units.div_ceil(scope_units);
    (
        scope_units * unit,
        u32::try_from(recount).unwrap_or(u32::MAX),
    )
}

/// Pass counts around the model's, fewer first (the passes' overhead is what the model
/// cannot see in the kernel): two thirds, half, a third, twice; without a scoped pick, 2,
/// 4 and 8. (An H100 ran a 96 MiB region best in 4 passes where the model picked 6.)
fn neighbour_passes(model_passes: u32) -> Vec<u32> {
    if model_passes <= 1 {
        return vec![2, 4, 8];
    }
    let p = model_passes;
    let mut out: Vec<u32> = Vec::new();
    for n in [(2 * p).div_ceil(3), p / 2, p / 3, p.saturating_mul(2)] {
        if n >= 2 && n != p && !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

fn bytes(n: u64) -> String {
    crate::size::format_bytes(n)
}

impl Tunable for SamplingWorkload {
    type Plan = SamplingPlan;
    const NAME: &'static str = "sampling";

    fn class(&self) -> WorkloadClass {
        WorkloadClass {
            workload: Self::NAME.into(),
            memory: self.memory,
            input_memory: None,
            size_class: size_class(self.region_bytes),
            elem_bytes: READ_BYTES as u32,
            detail: format!("reads_per_thread={}", self.reads_per_thread),
        }
    }

    fn untuned(&self) -> SamplingPlan {
        SamplingPlan {
            scope_bytes: self.region_bytes,
            passes: 1,
            predicted_speedup: 1.0,
            reasons: vec!["untuned: one pass over the region".into()],
        }
    }

    fn model(&self, profile: &Profile) -> Result<SamplingPlan, PlanError> {
        plan::sampling::plan(profile, self)
    }

    fn untimed(&self, profile: &Profile) -> Result<SamplingPlan, PlanError> {
        plan::sampling_untimed(profile, self)
    }

    fn label(plan: &SamplingPlan) -> String {
        scoped_label(plan.passes, plan.scope_bytes)
    }

    fn neighbours(&self, model: &SamplingPlan) -> Vec<SamplingPlan> {
        neighbour_passes(model.passes)
            .into_iter()
            .map(|p| {
                let (scope_bytes, passes) = split(self.region_bytes, p, READ_BYTES);
                SamplingPlan {
                    scope_bytes,
                    passes,
                    predicted_speedup: 1.0,
                    reasons: vec![format!(
                        "a neighbour of the model's {} passes",
                        model.passes
                    )],
                }
            })
            .filter(|p| p.passes >= 2)
            .collect()
    }
}

impl Tunable for GroupingWorkload {
    type Plan = GroupingPlan;
    const NAME: &'static str = "grouping";

    fn class(&self) -> WorkloadClass {
        WorkloadClass {
            workload: Self::NAME.into(),
            memory: self.table_memory,
            input_memory: Some(self.input_memory),
            size_class: size_class(self.table_bytes),
            elem_bytes: 4,
            detail: String::new(),
        }
    }

    fn untuned(&self) -> GroupingPlan {
        GroupingPlan {
            scope_bytes: self.table_bytes,
            passes: 1,
            approach: Approach::Unscoped,
            reasons: vec!["untuned: one pass over the whole table".into()],
        }
    }

    fn model(&self, profile: &Profile) -> Result<GroupingPlan, PlanError> {
        plan::grouping::plan(profile, self)
    }

    fn untimed(&self, profile: &Profile) -> Result<GroupingPlan, PlanError> {
        plan::grouping_untimed(profile, self)
    }

    fn label(plan: &GroupingPlan) -> String {
        match plan.approach {
            Approach::Unscoped => scoped_label(1, plan.scope_bytes),
            a => format!(
                "{} {}",
                a.as_str(),
                scoped_label(plan.passes, plan.scope_bytes)
            ),
        }
    }

    fn neighbours(&self, model: &GroupingPlan) -> Vec<GroupingPlan> {
        // A scoped pick keeps its approach; otherwise the input decides: re-reading device
        // memory each pass is cheap, re-reading host memory is not.
        let approach = match (model.approach, self.input_memory) {
            (Approach::Unscoped, MemoryKind::Device) => Approach::Naive,
            (Approach::Unscoped, _) => Approach::Copy,
            (a, _) => a,
        };
        neighbour_passes(model.passes)
            .into_iter()
            .map(|p| {
                let (scope_bytes, passes) = split(self.table_bytes, p, BUCKET_BYTES);
                GroupingPlan {
                    scope_bytes,
                    passes,
                    approach,
                    reasons: vec![format!(
                        "a neighbour of the model's {} passes",
                        model.passes
                    )],
                }
            })
            .filter(|p| p.passes >= 2)
            .collect()
    }
}

impl Tunable for StencilWorkload {
    type Plan = StencilPlan;
    const NAME: &'static str = "stencil";

    fn class(&self) -> WorkloadClass {
        let cells: u64 = self.dims.iter().map(|&d| u64::from(d)).product();
        WorkloadClass {
            workload: Self::NAME.into(),
            memory: MemoryKind::Device,
            input_memory: None,
            size_class: size_class(cells.saturating_mul(u64::from(self.dtype.bytes()))),
            elem_bytes: self.dtype.bytes(),
            detail: format!(
                "dims={}x{}x{} repeats={}",
                self.dims[0], self.dims[1], self.dims[2], self.repeats
            ),
        }
    }

    fn untuned(&self) -> StencilPlan {
        stencil(Variant::Plain, clamp(DEFAULT_BLOCK, self.dims), "untuned")
    }

    fn model(&self, profile: &Profile) -> Result<StencilPlan, PlanError> {
        plan::stencil::plan(profile, self)
    }

    fn label(plan: &StencilPlan) -> String {
        let [x, y, z] = plan.block;
        format!("{} {x}x{y}x{z}", plan.variant.as_str())
    }

    fn neighbours(&self, model: &StencilPlan) -> Vec<StencilPlan> {
        let why = "a neighbour of the model's pick";
        let mut out = Vec::new();
        // The other variants at the model's block where they can take it, then the model's
        // variant at blocks twice as deep and twice as wide in y.
        for variant in [Variant::Staged, Variant::Streaming, Variant::Plain] {
            if variant == model.variant {
                continue;
            }
            let mut block = model.block;
            if variant == Variant::Streaming {
                block = [block[0].max(32), (block[1] * block[2]).min(32), 1];
            } else if model.variant == Variant::Streaming {
                block = [block[0], (block[1] / 2).max(1), 2];
            }
            out.push(stencil(variant, clamp(block, self.dims), why));
        }
        let [x, y, z] = model.block;
        let wider = if model.variant == Variant::Streaming {
            [x, (y * 2).min(32), 1]
        } else {
            [x, y, (z * 2).min(64)]
        };
        out.push(stencil(model.variant, clamp(wider, self.dims), why));
        out.retain(|p| p.block.iter().product::<u32>() <= 1024 && p.block[0] % 32 == 0);
        out
    }
}

fn stencil(variant: Variant, block: [u32; 3], why: &str) -> StencilPlan {
    StencilPlan {
        variant,
        block,
        staging: variant != Variant::Plain,
        reasons: vec![why.to_string()],
    }
}

fn clamp(mut block: [u32; 3], dims: [u32; 3]) -> [u32; 3] {
    for (b, &d) in block.iter_mut().zip(&dims) {
        *b = (*b).min(d).max(1);
    }
    block
}

fn scoped_label(passes: u32, scope_bytes: u64) -> String {
    if passes <= 1 {
        "1 pass".to_string()
    } else {
        format!("{passes} passes of {}", bytes(scope_bytes))
    }
}

#[cfg(test)]
#[path = "candidates_tests.rs"]
mod tests;
