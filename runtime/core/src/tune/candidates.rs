//! The handful of plans worth timing for a workload: always the untuned plan and the
//! model's pick, then the model's neighbours (half and a quarter of its passes, ...), and
//! for scoped workloads one refinement chosen from the first timings, at most
//! [`MAX_CANDIDATES`] in all. Each workload is one [`Tunable`] impl; the autotuner, the
//! bench and the CLI walk them alike.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::key::{size_class, WorkloadClass};
use super::pass_counts::{by_passes, neighbour_passes, pass_points, refined, ruled_out_among};
use super::pass_counts::{split, MAX_REFINED_PASSES};
use crate::plan::grouping::BUCKET_BYTES;
use crate::plan::sampling::READ_BYTES;
use crate::plan::{self, Approach, GroupingPlan, GroupingWorkload, PlanError, SamplingPlan};
use crate::plan::{SamplingWorkload, StencilPlan, StencilWorkload, Variant};
use crate::profile::{MemoryKind, Profile};

/// The most candidates timed for one key.
pub const MAX_CANDIDATES: usize = 5;
/// Of those, how many sampling and grouping choose from the first ones' timings.
const REFINEMENTS: usize = 1;

/// Where a candidate came from, in order of safety: on a tie the safer one is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// What the kernel does without memtune: the baseline a plan must never lose to.
    Untuned,
    /// The plan used without timing, where it differs from the model's pick: the model's
    /// plan less its bets on the kernel.
    Untimed,
    /// The memory model's pick from the profile.
    Model,
    /// A neighbour of the model's pick.
    Neighbour,
    /// Chosen after the first timed rounds, between the fastest candidate and its runner-up.
    Refined,
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
    /// The plan whose scopes fit `reach_bytes`, or `None` where the whole fits or the
    /// workload has no scopes.
    fn within_reach(&self, _reach_bytes: u64) -> Option<Self::Plan> {
        None
    }

    /// The plan within the reach of the fastest unstable TLB level of this workload's
    /// memory (`TlbKind::unstable_levels`) that the whole overflows. Such a level is a step
    /// the sweep measured whose entries a fresh allocation did not reproduce within 10%:
    /// the planners leave it out, but it is worth one timed candidate. On H100 `911d4cb6`
    /// the host pages' first level (5048 x 4 KiB, 19.7 MiB; 4226 and 6198 entries on fresh
    /// allocations) made 16-32 passes of 16 MiB 10-17% faster at zero-copy 256-512 MiB
    /// regions than every candidate the stable profile gave.
    fn under_unstable_level(&self, profile: &Profile) -> Option<Self::Plan> {
        let tlb = profile.tlb.get(self.class().memory).measured()?;
        let mut reaches: Vec<u64> = tlb.unstable_levels.iter().map(|l| l.reach_bytes).collect();
        reaches.sort_unstable();
        reaches.into_iter().find_map(|r| self.within_reach(r))
    }

    /// How many candidates [`Tunable::refine`] may add: the first set leaves them slots.
    const REFINES: usize = 0;
    /// One more plan to time, from the medians so far (`None` for a candidate without
    /// timings) and the profile's caches, or `None` when nothing between the timed plans
    /// is worth a try.
    fn refine(
        &self,
        _profile: &Profile,
        _timed: &[(&Self::Plan, Option<f64>)],
    ) -> Option<Self::Plan> {
        None
    }

    /// The order to launch `candidates` in first: cheapest expected first, so that
    /// [`Tunable::ruled_out`] can spare the costly ones (default: as they come).
    fn first_order(&self, candidates: &[Candidate<Self::Plan>]) -> Vec<usize> {
        (0..candidates.len()).collect()
    }

    /// Why `plan` cannot beat the fastest of `timed` (each plan's time so far, `None`
    /// when it has none), so that it need not be launched; `None` to launch it.
    fn ruled_out(
        &self,
        _plan: &Self::Plan,
        _timed: &[(&Self::Plan, Option<f64>)],
    ) -> Option<String> {
        None
    }

    /// [`Tunable::ruled_out`] for candidate `i` of `candidates`, given each one's
    /// measurements so far (`stats`, in the same order: each one's latest launch).
    fn ruled_out_at(
        &self,
        candidates: &[Candidate<Self::Plan>],
        i: usize,
        stats: &[super::session::Stats],
    ) -> Option<String> {
        let timed: Vec<(&Self::Plan, Option<f64>)> = candidates
            .iter()
            .zip(stats)
            .map(|(c, s)| (&c.plan, s.latest_ms()))
            .collect();
        self.ruled_out(&candidates.get(i)?.plan, &timed)
    }

    /// The refinement to append to `candidates`, given each one's timings so far (`stats`,
    /// in the same order): `None` when they are [`MAX_CANDIDATES`] already, when there is
    /// nothing to refine, or when it would repeat a candidate. Failed candidates count as
    /// untimed.
    fn next_candidate(
        &self,
        profile: &Profile,
        candidates: &[Candidate<Self::Plan>],
        stats: &[super::session::Stats],
    ) -> Option<Candidate<Self::Plan>> {
        if candidates.len() >= MAX_CANDIDATES {
            return None;
        }
        let timed: Vec<(&Self::Plan, Option<f64>)> = candidates
            .iter()
            .zip(stats)
            .map(|(c, s)| (&c.plan, s.error.is_none().then(|| s.median_ms()).flatten()))
            .collect();
        let plan = self.refine(profile, &timed)?;
        let label = Self::label(&plan);
        candidates
            .iter()
            .all(|c| c.label != label)
            .then_some(Candidate {
                label,
                origin: Origin::Refined,
                plan,
            })
    }

    /// Untuned first, the model's pick second, the untimed plan third where it is neither,
    /// then [`Tunable::under_unstable_level`], then neighbours; duplicates dropped, at most
    /// [`MAX_CANDIDATES`] less [`Tunable::REFINES`]. The untimed plan is what the user's
    /// kernel runs with autotuning off, so the autotuner never picks worse than it by more
    /// than noise.
    fn candidates(&self, profile: &Profile) -> Result<Vec<Candidate<Self::Plan>>, PlanError> {
        let cap = MAX_CANDIDATES - Self::REFINES;
        let model = self.model(profile)?;
        let untimed = self.untimed(profile)?;
        let unconfirmed = self.under_unstable_level(profile);
        let mut out: Vec<Candidate<Self::Plan>> = Vec::new();
        let all = [
            (Origin::Untuned, self.untuned()),
            (Origin::Model, model.clone()),
            (Origin::Untimed, untimed),
        ]
        .into_iter()
        .chain(unconfirmed.map(|p| (Origin::Neighbour, p)))
        .chain(
            self.neighbours(&model)
                .into_iter()
                .map(|p| (Origin::Neighbour, p)),
        );
        for (origin, plan) in all {
            let label = Self::label(&plan);
            if out.len() < cap && out.iter().all(|c| c.label != label) {
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
        let why = format!("a neighbour of the model's {} passes", model.passes);
        neighbour_passes(model.passes, self.memory == MemoryKind::Pinned)
            .into_iter()
            .map(|p| self.scoped(p, &why))
            .filter(|p| p.passes >= 2)
            .collect()
    }

    fn within_reach(&self, reach_bytes: u64) -> Option<SamplingPlan> {
        let passes = self.region_bytes.div_ceil(reach_bytes.max(1));
        let why = format!(
            "scopes within an unstable TLB level's reach ({})",
            bytes(reach_bytes)
        );
        (passes >= 2 && passes <= u64::from(MAX_REFINED_PASSES))
            .then(|| self.scoped(passes as u32, &why))
    }

    const REFINES: usize = REFINEMENTS;

    fn refine(
        &self,
        profile: &Profile,
        timed: &[(&SamplingPlan, Option<f64>)],
    ) -> Option<SamplingPlan> {
        // A sampling pass redraws its stream: past the fastest count, passes cost more
        // than a finer cache level saves.
        let points = pass_points(timed, |p| p.passes);
        let (p, why) = refined(self.region_bytes, profile, &points, false)?;
        Some(self.scoped(p, why)).filter(|p| p.passes >= 2)
    }

    fn first_order(&self, candidates: &[Candidate<SamplingPlan>]) -> Vec<usize> {
        by_passes(candidates, |p| p.passes)
    }

    fn ruled_out(
        &self,
        plan: &SamplingPlan,
        timed: &[(&SamplingPlan, Option<f64>)],
    ) -> Option<String> {
        ruled_out_among(plan.passes, timed, |_| true, |p| p.passes)
    }
}

impl SamplingWorkload {
    /// `passes` scopes of whole reads, recounted as the launches split them.
    fn scoped(&self, passes: u32, why: &str) -> SamplingPlan {
        let (scope_bytes, passes) = split(self.region_bytes, passes, READ_BYTES);
        SamplingPlan {
            scope_bytes,
            passes,
            predicted_speedup: 1.0,
            reasons: vec![why.to_string()],
        }
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
        let approach = self.scoped_approach(model.approach);
        let why = format!("a neighbour of the model's {} passes", model.passes);
        neighbour_passes(model.passes, self.table_memory == MemoryKind::Pinned)
            .into_iter()
            .map(|p| self.scoped(p, approach, &why))
            .filter(|p| p.passes >= 2)
            .collect()
    }

    fn within_reach(&self, reach_bytes: u64) -> Option<GroupingPlan> {
        let passes = self.table_bytes.div_ceil(reach_bytes.max(1));
        let why = format!(
            "scopes within an unstable TLB level's reach ({})",
            bytes(reach_bytes)
        );
        let approach = self.scoped_approach(Approach::Unscoped);
        (passes >= 2 && passes <= u64::from(MAX_REFINED_PASSES))
            .then(|| self.scoped(passes as u32, approach, &why))
    }

    const REFINES: usize = REFINEMENTS;

    fn refine(
        &self,
        profile: &Profile,
        timed: &[(&GroupingPlan, Option<f64>)],
    ) -> Option<GroupingPlan> {
        // Later grouping passes re-read a device buffer, and a scope within a finer cache
        // level serves the inserts' atomics faster: past the fastest count first.
        let points = pass_points(timed, |p| p.passes);
        let (p, why) = refined(self.table_bytes, profile, &points, true)?;
        // The approach of the fastest scoped candidate.
        let lead = timed
            .iter()
            .filter(|(plan, ms)| plan.passes >= 2 && ms.is_some())
            .min_by(|a, b| {
                a.1.unwrap_or(f64::INFINITY)
                    .total_cmp(&b.1.unwrap_or(f64::INFINITY))
            })
            .map_or(Approach::Unscoped, |(plan, _)| plan.approach);
        let approach = self.scoped_approach(lead);
        Some(self.scoped(p, approach, why)).filter(|p| p.passes >= 2)
    }

    fn first_order(&self, candidates: &[Candidate<GroupingPlan>]) -> Vec<usize> {
        by_passes(candidates, |p| p.passes)
    }

    /// Against the timed plans of its own approach and one pass: naive and copy passes
    /// cost differently.
    fn ruled_out(
        &self,
        plan: &GroupingPlan,
        timed: &[(&GroupingPlan, Option<f64>)],
    ) -> Option<String> {
        let kin = |p: &GroupingPlan| p.approach == plan.approach || p.passes <= 1;
        ruled_out_among(plan.passes, timed, kin, |p| p.passes)
    }
}

impl GroupingWorkload {
    /// A scoped approach keeps itself; otherwise the input decides: re-reading device
    /// memory each pass is cheap, re-reading host memory is not.
    fn scoped_approach(&self, approach: Approach) -> Approach {
        match (approach, self.input_memory) {
            (Approach::Unscoped, MemoryKind::Device) => Approach::Naive,
            (Approach::Unscoped, _) => Approach::Copy,
            (a, _) => a,
        }
    }

    /// `passes` scopes of whole buckets, recounted as the launches split them.
    fn scoped(&self, passes: u32, approach: Approach, why: &str) -> GroupingPlan {
        let (scope_bytes, passes) = split(self.table_bytes, passes, BUCKET_BYTES);
        GroupingPlan {
            scope_bytes,
            passes,
            approach,
            reasons: vec![why.to_string()],
        }
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
        stencil(
            Variant::Plain,
            plan::stencil::untuned_block(self.dims),
            "untuned",
        )
    }

    fn model(&self, profile: &Profile) -> Result<StencilPlan, PlanError> {
        plan::stencil::plan(profile, self)
    }

    fn untimed(&self, profile: &Profile) -> Result<StencilPlan, PlanError> {
        plan::stencil_untimed(profile, self)
    }

    fn label(plan: &StencilPlan) -> String {
        let [x, y, z] = plan.block;
        format!("{} {x}x{y}x{z}", plan.variant.as_str())
    }

    fn neighbours(&self, model: &StencilPlan) -> Vec<StencilPlan> {
        let why = "a neighbour of the model's pick";
        let mut out = Vec::new();
        // The other variants at the model's block where they can take it. From a streaming pick,
        // staged takes the threads two planes deep and plain keeps the one-plane block,
        // which a kernel whose staging does not pay may run fastest.
        for variant in [Variant::Staged, Variant::Streaming, Variant::Plain] {
            if variant == model.variant {
                continue;
            }
            let mut block = model.block;
            if variant == Variant::Streaming {
                block = [block[0].max(32), (block[1] * block[2]).min(32), 1];
            } else if model.variant == Variant::Streaming && variant == Variant::Staged {
                block = [block[0], (block[1] / 2).max(1), 2];
            }
            out.push(stencil(variant, clamp(block, self.dims), why));
        }
        // Then the model's variant at another block: a streaming pick of two or more warps
        // a row at half the row's width (its fastest blocks take 128-256 threads, see
        // docs/calibration.md), a one-warp row twice as deep in y; plain and staged twice
        // as deep in z.
        let [x, y, z] = model.block;
        let other = match model.variant {
            Variant::Streaming if x >= 64 => [x / 2, y, 1],
            Variant::Streaming => [x, (y * 2).min(32), 1],
            _ => [x, y, (z * 2).min(64)],
        };
        out.push(stencil(model.variant, clamp(other, self.dims), why));
        out.retain(|p| self.launchable(p));
        out
    }

    const REFINES: usize = REFINEMENTS;

    /// The fastest candidate's variant at half its threads, else at its threads in another
    /// shape: a kernel of more work per cell (a 27-point stencil) can run fastest with 128
    /// threads where memtune's own run fastest with 256.
    fn refine(
        &self,
        _profile: &Profile,
        timed: &[(&StencilPlan, Option<f64>)],
    ) -> Option<StencilPlan> {
        let (lead, _) = timed
            .iter()
            .filter_map(|(p, ms)| Some((*p, (*ms)?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        let [x, y, z] = lead.block;
        let half = if x >= 64 {
            [x / 2, y, z]
        } else if z > 1 {
            [x, y, z / 2]
        } else {
            [x, (y / 2).max(1), z]
        };
        let reshaped = if x >= 64 {
            [x / 2, y * 2, z]
        } else {
            [x * 2, (y / 2).max(1), z]
        };
        let why = "the fastest candidate's variant at another block";
        [half, reshaped]
            .into_iter()
            .map(|b| stencil(lead.variant, clamp(b, self.dims), why))
            .filter(|p| self.launchable(p))
            .find(|p| timed.iter().all(|(t, _)| Self::label(t) != Self::label(p)))
    }
}

impl StencilWorkload {
    /// Whether a candidate's block is one CUDA can launch and the kernels take: at most
    /// 1024 threads, whole warps along x.
    fn launchable(&self, plan: &StencilPlan) -> bool {
        plan.block.iter().product::<u32>() <= 1024 && plan.block[0] % 32 == 0
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
