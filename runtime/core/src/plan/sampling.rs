//! Random sampling in TLB scopes (seed 000, §5.2): every pass redraws the whole random
//! stream and reads only the positions inside its scope, so each pass's reads stay within
//! what the TLB holds, at the price of redrawing the stream once per pass.

use super::error::{fits_in_memory, PlanError};
use super::hedge::{self, Fallbacks, Hedge};
use super::passes::{Split, MIN_GAIN};
use super::read_cost::{fastest_reads_per_second, DrawCost, ReadCost};
use super::scoping::{Candidate, Scoping};
use super::translation::Translation;
use super::units::bytes;
use crate::profile::{CachePath, MemoryKind, Profile};
use serde::{Deserialize, Serialize};

/// Bytes of one sampled value: the sampling kernel reads 4-byte words.
pub const READ_BYTES: u64 = 4;

/// Seconds between two passes' kernels on one stream, besides the last read's latency
/// (assumed: extra zero-copy passes on H200s cost 1.5 to 7 µs each beyond it in session
/// 4's sweeps).
const LAUNCH_SECONDS: f64 = 2e-6;

/// Threads of a sampling launch per SM: the runtime's grid (`memtune::launch::sampling_grid`,
/// 4 blocks of 256), which the probe's random-access curve uses too.
pub const THREADS_PER_SM: u64 = 1024;

/// Bytes a cache fills on a miss: a 32-byte sector on every NVIDIA GPU since Maxwell.
const SECTOR_BYTES: f64 = 32.0;

/// Beyond this many times the largest cache, random reads hit it rarely: the curve there
/// prices a read that misses every cache, over the same pages.
pub(crate) const BEYOND_CACHES: u64 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplingWorkload {
    /// Bytes of the region positions are drawn from.
    pub region_bytes: u64,
    pub memory: MemoryKind,
    /// Random reads each thread makes (seed 000 §2.1 uses 1024).
    pub reads_per_thread: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingPlan {
    /// Bytes of the region each pass reads from: pass k reads positions in
    /// `[k * scope_bytes, (k + 1) * scope_bytes)`. The whole region when `passes` is 1.
    pub scope_bytes: u64,
    /// Kernel passes, each redrawing the same stream; 1 means unscoped.
    pub passes: u32,
    /// Predicted time of one unscoped pass over this plan's time; 1 when unscoped.
    pub predicted_speedup: f64,
    pub reasons: Vec<String>,
}

/// Plans random sampling of `workload` on the GPU `profile` describes.
pub fn plan(profile: &Profile, workload: &SamplingWorkload) -> Result<SamplingPlan, PlanError> {
    plan_with_hedge(profile, workload).map(|(plan, _)| plan)
}

/// The model's plan, and the small bet an untimed plan may take instead of one pass where
/// that plan is a bet ([`super::hedge`]).
pub(crate) fn plan_with_hedge(
    profile: &Profile,
    workload: &SamplingWorkload,
) -> Result<(SamplingPlan, Fallbacks<Split>), PlanError> {
    workload.check(profile)?;
    let region = workload.region_bytes;
    let translation = Translation::of(profile, workload.memory);
    let mut reasons = vec![translation.summary()];
    let unscoped = |reasons| SamplingPlan {
        scope_bytes: region,
        passes: 1,
        predicted_speedup: 1.0,
        reasons,
    };

    match translation.boundaries_below(region, "region") {
        Ok(boundaries) => reasons.push(boundaries),
        Err(why) => {
            reasons.push(why);
            return Ok((unscoped(reasons), Fallbacks::none()));
        }
    }

    // The unit of cost: a read at the fastest rate measured. With no curve at all, the
    // latency model counts in such reads directly.
    let hit = 1.0 / fastest_reads_per_second(profile).unwrap_or(1.0);
    let cost = translation
        .curve
        .and_then(ReadCost::from_curve)
        .or_else(|| translation.tlb.and_then(|t| ReadCost::from_tlb(t, hit)));
    let Some(cost) = cost else {
        reasons.push(format!(
            "the {} memory curve has too few points to weigh a scope: not scoped; run `cargo tune` again",
            workload.memory
        ));
        return Ok((unscoped(reasons), Fallbacks::none()));
    };
    if !cost.is_measured() {
        reasons.push(
            "read cost estimated from TLB miss latencies alone (no random-access curve), which understates falls where misses also throttle throughput; run `cargo tune` to measure the curve"
                .to_string(),
        );
    }

    // Seconds per read, GPU-wide: the reads at the scope's rate and every pass drawing the
    // whole stream, plus each pass's fixed cost spread over the stream's reads. A measured
    // draw cost overlaps the reads, as memtune's kernel was measured to; the assumed one is
    // added for every pass after the first, as seed 000's P100 results were calibrated.
    let draw = DrawCost::of(translation.curve, hit);
    let launch = pass_seconds(profile, &translation) / stream_reads(profile, workload);
    let cold = ColdReads::of(profile, workload);
    if let Some(c) = &cold {
        reasons.push(c.describe());
    }
    // Pinned memory at and past its knee is priced one doubling on (`priced_bytes`).
    let read = |scope: u64| {
        let priced = translation.priced_bytes(scope);
        match &cold {
            Some(c) => c.seconds(&cost, priced),
            None => cost.seconds(priced),
        }
    };
    let pass_time = |read_seconds: f64, passes: u32| {
        let p = f64::from(passes);
        let work = if draw.measured {
            overlapped(read_seconds, p * draw.seconds)
        } else {
            read_seconds + (p - 1.0) * draw.seconds
        };
        work + p * launch
    };
    // A plan's time with reads over a scope priced by `read`; one pass is `None`.
    let time_of = |read: &dyn Fn(u64) -> f64, plan: Option<Split>| match plan {
        Some(s) => pass_time(read(s.scope_bytes), s.passes),
        None => pass_time(read(region), 1),
    };
    // Were the scopes to gain nothing, with the kernel drawing slowly: the hedge's worst case.
    let worst = |plan: Option<Split>| {
        let p = f64::from(plan.map_or(1, |s| s.passes));
        cost.seconds(region) + p * (hedge::WORST_DRAW_FACTOR * draw.seconds + launch)
    };
    let scoping = Scoping {
        translation: &translation,
        total: region,
        // A read cost from TLB latencies alone already prices the misses the bet would add.
        measured: cost.is_measured(),
        access: &read,
        time: &time_of,
        worst: &worst,
        heavy: None,
    };
    let decision = scoping.decide(&mut reasons, |m, reasons| {
        let (best, best_time) = m.best[0];
        let speedup = m.one_pass / best_time;
        reasons.push(format!(
            "against the fastest random read measured, a read over the region costs {:.2}, over a {} scope {:.2}; each pass redraws the stream at {:.3} per read (draw cost {}), {}, and costs {:.1} µs to launch and drain",
            read(region) / hit,
            bytes(best.scope_bytes),
            read(best.scope_bytes) / hit,
            draw.seconds / hit,
            draw.source,
            if draw.measured {
                "overlapped with the reads"
            } else {
                "added to the reads"
            },
            launch * stream_reads(profile, workload) * 1e6,
        ));
        if m.chosen.is_none() {
            reasons.push(format!(
                "the best split, {}, is predicted {speedup:.2}x: under the {MIN_GAIN}x worth acting on",
                best.name()
            ));
        }
    });
    let Some(decision) = decision else {
        reasons.push("the region fits in one page: not scoped".to_string());
        return Ok((unscoped(reasons), Fallbacks::none()));
    };
    let Some(split) = decision.chosen else {
        reasons.push("not scoped".to_string());
        let hedge = zero_copy_hedge(workload, |s| time_of(&read, s), worst);
        let fallbacks = Fallbacks {
            hedge,
            coarser: None,
        };
        return Ok((unscoped(reasons), fallbacks));
    };
    let speedup = decision.speedup;
    reasons.push(format!(
        "{}: {}; predicted {speedup:.2}x faster than one pass",
        split.name(),
        translation.effect_of_scope(region, split.scope_bytes)
    ));
    let plan = SamplingPlan {
        scope_bytes: split.scope_bytes,
        passes: split.passes,
        predicted_speedup: speedup,
        reasons,
    };
    let fallbacks = Fallbacks {
        hedge: decision
            .hedge
            .or_else(|| zero_copy_hedge(workload, |s| time_of(&read, s), worst)),
        coarser: decision.coarser,
    };
    Ok((plan, fallbacks))
}

/// Scope of the zero-copy hedge ([`zero_copy_hedge`]).
pub(crate) const ZERO_COPY_HEDGE_SCOPE: u64 = 32 << 20;
/// The most passes the zero-copy hedge takes.
const ZERO_COPY_HEDGE_PASSES: u64 = 4;

/// The small bet an untimed plan takes over a zero-copy region of 64-256 MiB that the model
/// leaves unscoped: `region / 32 MiB` passes (2 to 4, scopes of 32-64 MiB, the sizes the
/// recorded sweeps cover), when even its worst case (no gain, draws
/// [`hedge::WORST_DRAW_FACTOR`]x as slow) is within [`hedge::MAX_WORST_LOSS`] of one pass.
/// The probe's random-read curve of mapped host memory is flat to within its noise at
/// 64-256 MiB, yet on some GPUs one pass there ran 1.05-1.23x slower than the best split,
/// while 2 to 4 passes of 32-64 MiB stayed within 1.03 on H100s (`docs/calibration.md`):
/// a pass costs microseconds against milliseconds of zero-copy reads.
fn zero_copy_hedge(
    workload: &SamplingWorkload,
    time: impl Fn(Option<Split>) -> f64,
    worst: impl Fn(Option<Split>) -> f64,
) -> Option<Hedge<Split>> {
    let region = workload.region_bytes;
    let within = 2 * ZERO_COPY_HEDGE_SCOPE..=2 * ZERO_COPY_HEDGE_PASSES * ZERO_COPY_HEDGE_SCOPE;
    if workload.memory != MemoryKind::Pinned || !within.contains(&region) {
        return None;
    }
    let passes = (region / ZERO_COPY_HEDGE_SCOPE).clamp(2, ZERO_COPY_HEDGE_PASSES);
    let split = Split {
        scope_bytes: region.div_ceil(passes),
        passes: u32::try_from(passes).ok()?,
    };
    let worst_loss = worst(Some(split)) / worst(None) - 1.0;
    (worst_loss.is_finite() && worst_loss <= hedge::MAX_WORST_LOSS).then(|| Hedge {
        choice: split,
        gain: time(None) / time(Some(split)),
        worst_loss,
    })
}

/// Reads of one pass of the stream: every thread of the runtime's grid, `reads_per_thread`
/// each.
fn stream_reads(profile: &Profile, w: &SamplingWorkload) -> f64 {
    let sm_count = u64::from(profile.device.sm_count.max(1));
    (sm_count * THREADS_PER_SM) as f64 * f64::from(w.reads_per_thread)
}

/// Seconds a pass costs whatever it reads: its launch, and its last read's latency (the
/// next pass starts when this one drains), from the kind's TLB base latency and the SM
/// clock when the profile has both.
fn pass_seconds(profile: &Profile, translation: &Translation) -> f64 {
    let clock_hz = profile.device.sm_clock_khz as f64 * 1e3;
    let latency = match translation.tlb {
        Some(t) if clock_hz > 0.0 && t.base_latency_cycles > 0.0 => {
            t.base_latency_cycles / clock_hz
        }
        _ => 0.0,
    };
    LAUNCH_SECONDS + latency
}

/// The reads of a pass that find their sector cold. The curve measures each region with
/// many reads per sector (a launch's draws all land in it), so below the caches it prices
/// hits. A pass over a scope reads it only as densely as the whole stream reads the region:
/// `d = draws · 32 B / region` reads per sector, of which the first of each sector misses,
/// a share `c(d) = (1 − e^−d) / d`. An SM's own cache (L1) sees only its share of them,
/// `d / SMs`. So a read over a scope costs, from the curve `t`:
/// - an L1 hit, `t(scope)`, for a share `1 − c(d / SMs)` when the scope fits an L1;
/// - otherwise an L2 hit, `t(max(scope, 4 · L1))`, for a share `1 − c(d)`;
/// - otherwise a miss of both, `t(max(scope, 4 · largest cache))`.
///
/// Beyond [`BEYOND_CACHES`] times a cache, random reads rarely hit it, and a scope larger
/// than that is priced by the curve at the scope (its pages still translate as the
/// scope's). On an H200, 1024 draws a thread over 64 MiB of device memory give d = 66
/// (1.5% cold), and zero-copy sampling's 16 a thread give d = 1 (61% cold): its scopes of a
/// few L1s would otherwise be priced as L1 hits.
struct ColdReads {
    /// `d`: the stream's reads per 32-byte sector of the region.
    per_sector: f64,
    sm_count: f64,
    /// The largest cache private to an SM.
    private: u64,
    /// The largest cache of all.
    largest: u64,
}

/// `c(d)`: the share of `d` uniform reads per sector that are a sector's first.
fn first_reads(d: f64) -> f64 {
    if d > 0.0 {
        (1.0 - (-d).exp()) / d
    } else {
        1.0
    }
}

impl ColdReads {
    /// `None` without cache sizes in the profile: every read is priced by the curve.
    fn of(profile: &Profile, w: &SamplingWorkload) -> Option<ColdReads> {
        let levels = &profile.caches.measured()?.levels;
        let largest = |shared: bool| {
            // A lower-bound size (the constant L1.5) is no capacity to plan with.
            levels
                .iter()
                .filter(|l| (l.path == CachePath::L2) == shared)
                .filter_map(|l| l.capacity_bytes())
                .max()
        };
        let private = largest(false).unwrap_or(0);
        let all = largest(true).into_iter().chain([private]).max()?;
        Some(ColdReads {
            per_sector: stream_reads(profile, w) * SECTOR_BYTES / w.region_bytes as f64,
            sm_count: f64::from(profile.device.sm_count.max(1)),
            private,
            largest: all,
        })
    }

    fn seconds(&self, cost: &ReadCost, scope: u64) -> f64 {
        let beyond = |cache: u64| cost.seconds(scope.max(cache.saturating_mul(BEYOND_CACHES)));
        let l1_hits = if scope <= self.private {
            1.0 - first_reads(self.per_sector / self.sm_count)
        } else {
            0.0
        };
        let l2_hits = 1.0 - first_reads(self.per_sector);
        let past_l1 = l2_hits * beyond(self.private) + (1.0 - l2_hits) * beyond(self.largest);
        l1_hits * cost.seconds(scope) + (1.0 - l1_hits) * past_l1
    }

    fn describe(&self) -> String {
        format!(
            "the stream reads {:.2} times per 32-byte sector of the region, so {:.1}% of a pass's reads find their sector cold in the L2 (more in an L1), priced as reads beyond the caches ({})",
            self.per_sector,
            100.0 * first_reads(self.per_sector),
            bytes(self.largest.saturating_mul(BEYOND_CACHES))
        )
    }
}

/// The time of reads taking `reads` seconds and draws taking `draws` seconds in the same
/// passes: the warp schedulers hide one under the other, but not wholly where they are
/// close. A 4-norm: within 3% of an H200's scoped sampling sweep from 1 to 32 passes,
/// where the larger of the two was up to 12% under it and their sum up to 55% over
/// (docs/planners.md).
fn overlapped(reads: f64, draws: f64) -> f64 {
    (reads.powi(4) + draws.powi(4)).powf(0.25)
}

impl SamplingWorkload {
    fn check(&self, profile: &Profile) -> Result<(), PlanError> {
        if self.region_bytes == 0 {
            return Err(PlanError::Zero {
                argument: "region_bytes",
                fix: "pass the size in bytes of the region positions are drawn from",
            });
        }
        if self.region_bytes < READ_BYTES {
            return Err(PlanError::TooSmall {
                argument: "region_bytes",
                value: self.region_bytes,
                minimum: READ_BYTES,
                what: "one sampled value",
                fix: "pass the region's size in bytes, not in values",
            });
        }
        if self.reads_per_thread == 0 {
            return Err(PlanError::Zero {
                argument: "reads_per_thread",
                fix: "pass how many random reads each thread makes (seed 000 uses 1024)",
            });
        }
        fits_in_memory(profile, "region_bytes", self.region_bytes, self.memory)
    }
}

#[cfg(test)]
mod tests {
    use super::first_reads;

    #[test]
    fn first_reads_of_a_sector() {
        // One read among many sectors is nearly always a first; many reads of a sector
        // are all but one repeats; one read a sector on average leaves 1 − 1/e first.
        assert!((first_reads(1e-6) - 1.0).abs() < 1e-5);
        assert!((first_reads(100.0) - 0.01).abs() < 1e-9);
        assert!((first_reads(1.0) - (1.0 - (-1.0f64).exp())).abs() < 1e-12);
        assert_eq!(first_reads(0.0), 1.0);
    }
}
