//! Sure or a bet. A scoped plan is **sure** when its gain rests on what the profile
//! measured and no kernel can take away: the scope keeps the accesses within the reach of
//! a TLB level measured with confidence that the whole region or table overflows, and the
//! measured random-access curve reads at least [`SURE_GAIN`]x slower over the whole than
//! over the scope. Anything else (L2-sized scopes of device memory, gains the curve shows
//! without a TLB cliff, small predicted gains) is a **bet** on the kernel: its reads per
//! thread and the work between them decide whether the passes' overhead pays, and on an
//! H100 such bets ran a kernel with few reads per thread 2.6x slower than one pass.
//!
//! A stencil plan's variant and block shape are always a bet: they pick among the kernel's
//! own code paths (plain, staged in shared memory, streaming along z), and the profile's
//! staging section timed memtune's 7-point kernel, whose paths need not rank as another
//! kernel's do.
//!
//! Plans made without timing (compile-time constants, run-time re-plans, `cargo tune
//! plan`) take only sure plans ([`sampling_untimed`], [`grouping_untimed`],
//! [`stencil_untimed`]); the autotuner times the bets on the user's kernel.

use serde::{Deserialize, Serialize};

use super::hedge::{self, Coarser, Hedge};
use super::passes::{Split, MIN_GAIN};
use super::read_cost::ReadCost;
use super::scoping::Candidate;
use super::stencil::{self, StencilPlan, StencilWorkload, Variant};
use super::units::bytes;
use super::{grouping, sampling, GroupingPlan, GroupingWorkload, PlanError, SamplingPlan};
use super::{Approach, SamplingWorkload};
use crate::profile::{MemoryKind, Profile};

/// The measured curve must read at least this much slower over the whole than over the scope.
pub const SURE_GAIN: f64 = 2.0;
/// A fall of the measured curve this large is sure without a TLB level to explain it.
pub const SURE_CURVE_GAIN: f64 = 4.0;
/// A TLB level counts when the probe saw it at least this clearly.
pub const SURE_CONFIDENCE: f64 = 0.5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Certainty {
    Sure,
    Bet,
}

impl Certainty {
    pub fn as_str(self) -> &'static str {
        match self {
            Certainty::Sure => "sure",
            Certainty::Bet => "bet",
        }
    }
}

/// A plan's certainty and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub certainty: Certainty,
    pub reason: String,
}

/// Judges `passes` scopes of `scope` bytes over `total` bytes of `memory`.
pub fn judge_scope(
    profile: &Profile,
    memory: MemoryKind,
    total: u64,
    scope: u64,
    passes: u32,
) -> Judgement {
    let bet = |reason: String| Judgement {
        certainty: Certainty::Bet,
        reason,
    };
    if passes <= 1 {
        return Judgement {
            certainty: Certainty::Sure,
            reason: "one pass: what the kernel does untuned".into(),
        };
    }
    let levels = profile
        .tlb
        .get(memory)
        .measured()
        .map(|t| t.levels.as_slice())
        .unwrap_or_default();
    let cliff = levels.iter().find(|l| {
        l.confidence >= SURE_CONFIDENCE && l.reach_bytes < total && scope <= l.reach_bytes
    });
    let gain = profile
        .random_access
        .get(memory)
        .measured()
        .and_then(ReadCost::from_curve)
        .filter(ReadCost::is_measured)
        .map(|cost| cost.seconds(total) / cost.seconds(scope.max(past_caches(profile)).min(total)));
    let sure = |reason: String| Judgement {
        certainty: Certainty::Sure,
        reason,
    };
    match (cliff, gain) {
        (Some(level), Some(gain)) if gain >= SURE_GAIN => sure(format!(
            "sure: the scope stays within a measured TLB level ({} x {} = {}) that the whole overflows, and the measured curve reads {gain:.1}x slower over the whole",
            level.entries,
            bytes(level.page_bytes),
            bytes(level.reach_bytes)
        )),
        (_, Some(gain)) if gain >= SURE_CURVE_GAIN => sure(format!(
            "sure: the measured {memory} curve reads {gain:.1}x slower over the whole ({}) than over the scope ({}), a fall no pass overhead outweighs",
            bytes(total),
            bytes(scope)
        )),
        (None, _) => bet(format!(
            "a bet: no {memory} TLB level measured with confidence >= {SURE_CONFIDENCE} lies between the scope ({}) and the whole ({}), and the measured curve falls less than {SURE_CURVE_GAIN}x; whether the passes pay depends on the kernel",
            bytes(scope),
            bytes(total)
        )),
        (Some(level), None) => bet(format!(
            "a bet: the scope avoids a TLB level ({} x {}), but no random-access curve of {memory} memory says how much that gains",
            level.entries,
            bytes(level.page_bytes)
        )),
        (Some(_), Some(gain)) => bet(format!(
            "a bet: the measured curve reads only {gain:.2}x slower over the whole than over the scope (sure from {SURE_GAIN}x)"
        )),
    }
}

/// Where random reads stop hitting the caches: a sure gain prices the scope no finer, since
/// cache hits depend on how densely the kernel reads a scope, not on the translation (an
/// H100's zero-copy curve reads 4x faster over 128 KiB than over 64 MiB; 512 passes of
/// 128 KiB were predicted only 1.2x faster with the cold reads of a real stream).
fn past_caches(profile: &Profile) -> u64 {
    profile
        .caches
        .measured()
        .and_then(|c| c.levels.iter().map(|l| l.size_bytes).max())
        .unwrap_or(0)
        .saturating_mul(sampling::BEYOND_CACHES)
}

/// Judges a scoped pick and records why in `reasons`; true when it is a bet, which an
/// untimed plan replaces with one pass (or a hedge). `pick` names the pick for the reason.
fn is_bet(
    profile: &Profile,
    memory: MemoryKind,
    (total, scope, passes): (u64, u64, u32),
    pick: String,
    reasons: &mut Vec<String>,
) -> bool {
    let j = judge_scope(profile, memory, total, scope, passes);
    match j.certainty {
        Certainty::Bet => {
            reasons.push(format!(
                "{}; without timing, {pick} are left to the autotuner",
                j.reason
            ));
            true
        }
        Certainty::Sure if passes > 1 => {
            reasons.push(j.reason);
            false
        }
        Certainty::Sure => false,
    }
}

/// The sampling plan to use without timing: the model's pick when sure, else a small bet
/// when even its worst case costs little (the fewest passes predicted 1.05x faster, at
/// most 2% slower if the scopes gain nothing; docs/autotune.md), else one pass; where the
/// model leaves a zero-copy region of 64 MiB or more unscoped, 2 to 4 passes of about
/// 32 MiB, again only when at most 2% slower at worst.
pub fn sampling_untimed(
    profile: &Profile,
    workload: &SamplingWorkload,
) -> Result<SamplingPlan, PlanError> {
    // Sampling's passes cost every kernel alike (`Scoping::heavy` is `None`): no coarser.
    let (mut plan, fallbacks) = sampling::plan_with_hedge(profile, workload)?;
    let hedge = fallbacks.hedge;
    let split = (workload.region_bytes, plan.scope_bytes, plan.passes);
    let pick = format!("{} passes of {}", plan.passes, bytes(plan.scope_bytes));
    if is_bet(profile, workload.memory, split, pick, &mut plan.reasons) {
        match hedge {
            Some(h) => take_sampling_hedge(&mut plan, h, "instead"),
            None => {
                plan.reasons.push("one pass".into());
                plan.scope_bytes = workload.region_bytes;
                plan.passes = 1;
                plan.predicted_speedup = 1.0;
            }
        }
    } else if let (1, Some(h)) = (plan.passes, hedge) {
        take_sampling_hedge(&mut plan, h, "");
    }
    Ok(plan)
}

/// `plan` becomes the hedge `h`, its reason said ("a small bet taken {how}: ...").
fn take_sampling_hedge(plan: &mut SamplingPlan, h: Hedge<Split>, how: &str) {
    let gain = if h.gain >= MIN_GAIN {
        format!("predicted {:.2}x faster than one pass", h.gain)
    } else {
        "over zero-copy memory, whose gain the probe's curve does not resolve".to_string()
    };
    plan.reasons.push(format!(
        "a small bet taken{}{how}: {} passes of {}, {gain}, and at most {:.1}% slower if the scopes gain nothing, even drawing {}x as slowly as memtune's kernel",
        if how.is_empty() { "" } else { " " },
        h.choice.passes,
        bytes(h.choice.scope_bytes),
        100.0 * h.worst_loss,
        hedge::WORST_DRAW_FACTOR,
    ));
    plan.scope_bytes = h.choice.scope_bytes;
    plan.passes = h.choice.passes;
    plan.predicted_speedup = h.gain;
}

/// The grouping plan to use without timing: the model's pick when sure, else a small bet
/// when even its worst case costs little (as for sampling), else unscoped.
pub fn grouping_untimed(
    profile: &Profile,
    workload: &GroupingWorkload,
) -> Result<GroupingPlan, PlanError> {
    let (mut plan, fallbacks) = grouping::plan_with_hedge(profile, workload)?;
    let hedge = fallbacks.hedge;
    let split = (workload.table_bytes, plan.scope_bytes, plan.passes);
    let pick = format!(
        "{} {} passes of {}",
        plan.approach.as_str(),
        plan.passes,
        bytes(plan.scope_bytes)
    );
    if is_bet(
        profile,
        workload.table_memory,
        split,
        pick,
        &mut plan.reasons,
    ) {
        match hedge {
            Some(h) => take_grouping_hedge(&mut plan, h, " instead"),
            None => {
                plan.reasons.push("unscoped".into());
                plan.scope_bytes = workload.table_bytes;
                plan.passes = 1;
                plan.approach = Approach::Unscoped;
            }
        }
    } else if let (1, Some(h)) = (plan.passes, hedge) {
        take_grouping_hedge(&mut plan, h, "");
    } else if let Some(c) = safer_coarser(
        profile,
        workload.table_memory,
        workload.table_bytes,
        fallbacks.coarser,
    ) {
        let (approach, s) = c.choice;
        let name = format!(
            "{} {} passes of {}",
            approach.as_str(),
            s.passes,
            bytes(s.scope_bytes)
        );
        plan.reasons.push(coarser_reason(&c, plan.passes, name));
        plan.scope_bytes = s.scope_bytes;
        plan.passes = s.passes;
        plan.approach = approach;
    }
    Ok(plan)
}

/// `plan` becomes the hedge `h`, its reason said ("a small bet taken{how}: ...").
fn take_grouping_hedge(plan: &mut GroupingPlan, h: Hedge<grouping::Scoped>, how: &str) {
    let (approach, s) = h.choice;
    plan.reasons.push(format!(
        "a small bet taken{how}: {} {} passes of {}, predicted {:.2}x faster than one pass, and at most {:.1}% slower if the scopes gain nothing, even skipping keys {}x as slowly as memtune's kernel",
        approach.as_str(),
        s.passes,
        bytes(s.scope_bytes),
        h.gain,
        100.0 * h.worst_loss,
        hedge::WORST_DRAW_FACTOR,
    ));
    plan.scope_bytes = s.scope_bytes;
    plan.passes = s.passes;
    plan.approach = approach;
}

/// A split of fewer passes than the model's pick, where that split is sure by itself: the
/// one of least regret between memtune's kernel and one doing
/// [`hedge::KERNEL_WORK_PER_PASS`] more on each key in each pass ([`super::scoping`]). The
/// model prices passes at memtune's own cost, and every extra pass costs a kernel with more
/// work a key in full: on an H100 (`96c7ad29`) the model's 128 passes of 64 MiB ran an
/// 8 GiB pinned table 1.03x off the best with memtune's kernel and 2.0x with 256 mixing
/// rounds a key, where 16 passes of 512 MiB were the best of both.
fn safer_coarser<C: Candidate>(
    profile: &Profile,
    memory: MemoryKind,
    total: u64,
    coarser: Option<Coarser<C>>,
) -> Option<Coarser<C>> {
    let c = coarser?;
    let s = c.choice.split();
    let j = judge_scope(profile, memory, total, s.scope_bytes, s.passes);
    (j.certainty == Certainty::Sure).then_some(c)
}

fn coarser_reason<C>(c: &Coarser<C>, finer_passes: u32, name: String) -> String {
    format!(
        "without timing, {name} instead: the model's {finer_passes} passes are priced at memtune's own cost a pass, and run {:.0}% slower than it for a kernel spending {:.0} ps more on each key in each pass; the finer split is left to the autotuner",
        100.0 * c.risk,
        hedge::KERNEL_WORK_PER_PASS * 1e12,
    )
}

/// The stencil plan to use without timing: the untuned plan (plain, [`stencil::DEFAULT_BLOCK`]
/// clamped to the grid), since the model's variant and block are a bet on the kernel; its
/// pick is named among the reasons, for the autotuner to time.
pub fn stencil_untimed(
    profile: &Profile,
    workload: &StencilWorkload,
) -> Result<StencilPlan, PlanError> {
    let model = stencil::plan(profile, workload)?;
    let block = stencil::untuned_block(workload.dims);
    if model.variant == Variant::Plain && model.block == block {
        return Ok(model);
    }
    stencil::check_grid(workload, block)?;
    let [x, y, z] = model.block;
    let mut reasons = model.reasons;
    reasons.push(format!(
        "bet: {} {x}x{y}x{z} ranks the code paths of memtune's own stencil kernel, which another kernel's need not follow; untimed, the untuned plain block {}x{}x{} (the autotuner times the pick on the kernel)",
        model.variant.as_str(),
        block[0],
        block[1],
        block[2],
    ));
    Ok(StencilPlan {
        variant: Variant::Plain,
        block,
        staging: false,
        reasons,
    })
}
