//! Hash grouping in TLB scopes (seed 000, §5.3). The input column is read in order and each
//! key's insert lands on a random bucket of the table; a pass inserts only the keys whose
//! bucket lies in its scope. Naive: every pass reads the whole input where it lives. Copy:
//! the first pass also writes the keys of later scopes to a device buffer, which the later
//! passes read instead.

use super::error::{fits_in_memory, PlanError};
use super::hedge::{self, Fallbacks, Hedge};
use super::insert_cost::{InsertCost, Repeats};
use super::passes::{Split, MIN_GAIN};
use super::read_cost::{fastest_reads_per_second, DrawCost};
use super::scoping::{Candidate, Scoping};
use super::translation::Translation;
use super::units::bytes;
use crate::profile::{MemoryKind, Profile};
use serde::{Deserialize, Serialize};

/// Bytes of one bucket, a key and its count (seed 000 §2.2).
pub const BUCKET_BYTES: u64 = 8;

/// Bytes of one input key: one column of 4-byte integers, as in seed 000 §2.2.
const KEY_BYTES: f64 = 4.0;

/// Zero-copy reads of pinned memory when nothing was measured: a PCIe 3.0 x16 link, what the
/// K80 and P100 of seed 000 sit on.
const DEFAULT_HOST_LINK: f64 = 12e9;

/// Device memory traffic when neither measured nor derivable from the clocks: low, so that
/// the copy approach is not favoured on a guess.
const DEFAULT_DEVICE_BANDWIDTH: f64 = 200e9;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupingWorkload {
    /// Bytes of the hash table.
    pub table_bytes: u64,
    pub table_memory: MemoryKind,
    /// Where the input column lives (seed 000: pinned host memory, read by zero-copy).
    pub input_memory: MemoryKind,
    /// Bytes of the input the kernel sees at once, when known: the copy approach's buffer
    /// must then fit beside the table in device memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_bytes: Option<u64>,
}

/// How the passes reach the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Approach {
    /// One pass over the whole table.
    Unscoped,
    /// Every pass reads the whole input where it lives.
    Naive,
    /// The first pass buffers the keys of later scopes in device memory; later passes read
    /// the buffer.
    Copy,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupingPlan {
    /// Bytes of the table each pass inserts into; the whole table when `passes` is 1.
    pub scope_bytes: u64,
    /// Kernel passes; 1 means unscoped.
    pub passes: u32,
    pub approach: Approach,
    pub reasons: Vec<String>,
}

/// A scoped grouping plan: the approach and its split.
pub(crate) type Scoped = (Approach, Split);

/// Plans hash grouping of `workload` on the GPU `profile` describes.
pub fn plan(profile: &Profile, workload: &GroupingWorkload) -> Result<GroupingPlan, PlanError> {
    plan_with_hedge(profile, workload).map(|(plan, _)| plan)
}

/// The model's plan, and what an untimed plan may take instead ([`super::hedge`]).
pub(crate) fn plan_with_hedge(
    profile: &Profile,
    workload: &GroupingWorkload,
) -> Result<(GroupingPlan, Fallbacks<Scoped>), PlanError> {
    workload.check(profile)?;
    let table = workload.table_bytes;
    let translation = Translation::of(profile, workload.table_memory);
    let mut reasons = vec![translation.summary()];
    let unscoped = |reasons| GroupingPlan {
        scope_bytes: table,
        passes: 1,
        approach: Approach::Unscoped,
        reasons,
    };

    let repeats = workload.input_bytes.map(|b| {
        let keys = (b / KEY_BYTES as u64).max(1);
        // No more groups than keys, nor than half the buckets (fill factor at most 0.5).
        let groups = keys.min(table / BUCKET_BYTES / 2);
        Repeats::new(keys, groups, profile.device.sm_count)
    });
    let insert = translation.curve.and_then(|c| {
        let over_link = workload.table_memory == MemoryKind::Pinned;
        Some((c, InsertCost::of(c, table, repeats, over_link)?))
    });
    // Where inserts are priced as atomics, the atomic curve's falls are boundaries too.
    let atomic_falls = insert
        .as_ref()
        .map(|(c, i)| i.falls_below(c, table))
        .unwrap_or_default();
    let atomic_boundaries = || {
        let falls: Vec<String> = atomic_falls
            .iter()
            .map(|&(at, ratio)| {
                format!(
                    "atomic fall at {} ({ratio:.2}x slower beyond it)",
                    bytes(at)
                )
            })
            .collect();
        falls.join(", ")
    };
    match translation.boundaries_below(table, "table") {
        Ok(boundaries) if atomic_falls.is_empty() => reasons.push(boundaries),
        Ok(boundaries) => reasons.push(format!("{boundaries}, {}", atomic_boundaries())),
        Err(_) if !atomic_falls.is_empty() => reasons.push(format!(
            "below the table ({}): {}",
            bytes(table),
            atomic_boundaries()
        )),
        Err(why) => {
            reasons.push(why);
            return Ok((unscoped(reasons), Fallbacks::none()));
        }
    }

    let (Some((curve, cost)), Some(hit_reads_per_second)) =
        (insert, fastest_reads_per_second(profile))
    else {
        reasons.push(format!(
            "no usable random-access curve for {} memory: the inserts' misses cannot be weighed against re-reading the input, not scoped; run `cargo tune`",
            workload.table_memory
        ));
        return Ok((unscoped(reasons), Fallbacks::none()));
    };
    reasons.push(cost.describe(workload.table_memory, curve));

    let input = input_rate(profile, workload.input_memory);
    let device = device_rate(profile);
    reasons.push(format!(
        "input read from {} memory at {} ({}); device buffer at {} ({})",
        workload.input_memory,
        crate::human::bandwidth(input.bytes_per_second),
        input.source,
        crate::human::bandwidth(device.bytes_per_second),
        device.source
    ));

    // Seconds per input key of what differs between plans: reading the key, its insert's
    // table access (`cost`, by the scope's size) and the passes' overhead. Hashing and
    // probing are the same in every plan and left out.
    let read_input = KEY_BYTES / input.bytes_per_second;
    let move_on_device = KEY_BYTES / device.bytes_per_second;
    let draw = DrawCost::of(translation.curve, 1.0 / hit_reads_per_second);
    let skip = draw.seconds;
    // A pass that reads the input streams it while it inserts. With inserts priced from
    // this GPU's measured atomics, it runs at the slower of the two: the host link and the
    // GPU's memory and atomic units are separate resources, and memtune's kernels keep every
    // warp's key loads coalesced (on an H200, 64 Mi keys from pinned memory took 5.3 ms
    // whether the table was 64 MiB or 1 GiB; the 256 MiB read alone takes 5.0 ms). Priced
    // as reads, an insert's cost is only a lower bound, and the two add up, as seed 000's
    // P100 measurements (§6.2: unscoped 2.5x slower than its PCIe-bound copy) imply.
    // Passes that only read the device buffer add up either way. A table in pinned memory
    // takes its atomics over the host link too, so with pinned input the two add up again
    // (an H200: naive 16 x 16 MiB 103.5 ms against copy's 92.8 ms for a 256 MiB pinned
    // table; the H200 `1af0ae31`).
    let shares_link =
        workload.table_memory == MemoryKind::Pinned && workload.input_memory == MemoryKind::Pinned;
    let overlap = |input: f64, inserts: f64| {
        if cost.is_measured_atomic() && !shares_link {
            input.max(inserts)
        } else {
            input + inserts
        }
    };
    // A plan's time per key with each insert over a scope of `bytes` costing `insert(bytes)`
    // and a key of another scope skipped at `skip`; one pass is `None`.
    let time_at = |insert: &dyn Fn(u64) -> f64, plan: Option<Scoped>, skip: f64| {
        let Some((approach, s)) = plan else {
            return overlap(read_input, insert(table));
        };
        let p = f64::from(s.passes);
        let inserts = insert(s.scope_bytes);
        match approach {
            Approach::Copy if !workload.buffer_fits(profile, s.passes) => f64::INFINITY,
            Approach::Copy => {
                let later = (p - 1.0) / p;
                overlap(read_input, inserts / p + later * move_on_device)
                    + inserts * later
                    + (p - 1.0) * later * (move_on_device + skip)
            }
            _ => p * overlap(read_input, (inserts + (p - 1.0) * skip) / p),
        }
    };
    let time = |insert: &dyn Fn(u64) -> f64, plan| time_at(insert, plan, skip);
    // Pinned tables at and past the knee are priced one doubling on (`priced_bytes`).
    let plain = |bytes: u64| cost.seconds(translation.priced_bytes(bytes));
    // Were the scopes to gain nothing, with keys skipped slowly: the hedge's worst case.
    let flat = |_: u64| cost.seconds(table);
    let worst = |plan| time_at(&flat, plan, hedge::WORST_DRAW_FACTOR * skip);
    // With the kernel's own work on every key in every pass.
    let heavy = |plan| time_at(&plain, plan, skip + hedge::KERNEL_WORK_PER_PASS);
    let scoping = Scoping {
        translation: &translation,
        total: table,
        // Inserts are only ever priced from the measured curve (`InsertCost::of`).
        measured: true,
        access: &plain,
        time: &time,
        worst: &worst,
        heavy: Some(&heavy),
    };
    let decision = scoping.decide(&mut reasons, |m, reasons| {
        let ns = |t: f64| t * 1e9;
        let best_copy = m.best[1].1.is_finite().then_some(m.best[1]);
        if let (None, Some(input)) = (best_copy, workload.input_bytes) {
            reasons.push(format!(
                "copy: the buffer for later passes (at least {}) does not fit beside the table in device memory; process the input in chunks (seed 000 streams 128 MB chunks) and pass one chunk's size as `input_bytes`",
                bytes(input / 2)
            ));
        }
        let mut costs = format!("per key, one pass {:.3} ns", ns(m.one_pass));
        for (c, time) in [Some(m.best[0]), best_copy].into_iter().flatten() {
            costs += &format!(", {} {:.3} ns", c.name(), ns(time));
        }
        reasons.push(format!(
            "{costs} (the work common to every plan left out; a key of another scope is skipped at draw cost {})",
            draw.source
        ));
    });
    let Some(decision) = decision else {
        reasons.push("the table fits in one page: not scoped".to_string());
        return Ok((unscoped(reasons), Fallbacks::none()));
    };
    let table_hedge = || zero_copy_table_hedge(workload, |p| time(&plain, p), worst);
    let Some((approach, split)) = decision.chosen else {
        reasons.push(format!(
            "no scoped plan is predicted {MIN_GAIN}x faster than one pass: not scoped"
        ));
        let fallbacks = Fallbacks {
            hedge: table_hedge(),
            coarser: None,
        };
        return Ok((unscoped(reasons), fallbacks));
    };
    let mut effect = translation.effect_of_scope(table, split.scope_bytes);
    for &(at, _) in &atomic_falls {
        let side = if split.scope_bytes <= at {
            "within"
        } else {
            "beyond"
        };
        effect += &format!(", {side} the atomic fall at {}", bytes(at));
    }
    reasons.push(format!(
        "{}, {} passes of {}: {}",
        approach.as_str(),
        split.passes,
        bytes(split.scope_bytes),
        effect.trim_start_matches(", ")
    ));
    let plan = GroupingPlan {
        scope_bytes: split.scope_bytes,
        passes: split.passes,
        approach,
        reasons,
    };
    let fallbacks = Fallbacks {
        // The recorded sweeps back the table hedge's 32 MiB scopes at these sizes over the
        // fewest passes the model predicts to gain (2 copy passes of 128 MiB ran up to 1.05x
        // off the best of a 256 MiB table where 8 of 32 MiB ran 1.00x).
        hedge: table_hedge().or(decision.hedge),
        coarser: decision.coarser,
    };
    Ok((plan, fallbacks))
}

/// Scope of the zero-copy table hedge ([`zero_copy_table_hedge`]).
const TABLE_HEDGE_SCOPE: u64 = 32 << 20;
/// The most passes the zero-copy table hedge takes.
const TABLE_HEDGE_PASSES: u64 = 8;

/// The small bet an untimed plan takes for a table of 64-256 MiB in pinned memory that the
/// model leaves unscoped or only bets on: `table / 32 MiB` passes (2 to 8), copy where the
/// input is in host memory (later passes read the device buffer), naive where it is on the
/// device; taken when even its worst case (no gain, keys skipped
/// [`hedge::WORST_DRAW_FACTOR`]x as slowly) is within [`hedge::MAX_WORST_LOSS`] of one pass.
/// The probe's curve of mapped host memory is flat within its noise there, yet one pass
/// over a 256 MiB table ran up to 1.08x (H100) and 1.23x (an early H100) slower than the
/// best split, while 8 copy passes of 32 MiB stayed within 1.01 of it on all but that early
/// machine (1.06) (`docs/calibration.md`).
fn zero_copy_table_hedge(
    workload: &GroupingWorkload,
    time: impl Fn(Option<Scoped>) -> f64,
    worst: impl Fn(Option<Scoped>) -> f64,
) -> Option<Hedge<Scoped>> {
    let table = workload.table_bytes;
    let within = 2 * TABLE_HEDGE_SCOPE..=TABLE_HEDGE_PASSES * TABLE_HEDGE_SCOPE;
    if workload.table_memory != MemoryKind::Pinned || !within.contains(&table) {
        return None;
    }
    let passes = (table / TABLE_HEDGE_SCOPE).clamp(2, TABLE_HEDGE_PASSES);
    let split = Split {
        scope_bytes: table.div_ceil(passes).next_multiple_of(BUCKET_BYTES),
        passes: u32::try_from(passes).ok()?,
    };
    let approach = match workload.input_memory {
        MemoryKind::Device => Approach::Naive,
        MemoryKind::Pinned | MemoryKind::Managed => Approach::Copy,
    };
    let choice = (approach, split);
    let worst_loss = worst(Some(choice)) / worst(None) - 1.0;
    (worst_loss.is_finite() && worst_loss <= hedge::MAX_WORST_LOSS).then(|| Hedge {
        choice,
        gain: time(None) / time(Some(choice)),
        worst_loss,
    })
}

impl GroupingWorkload {
    fn check(&self, profile: &Profile) -> Result<(), PlanError> {
        if self.table_bytes == 0 {
            return Err(PlanError::Zero {
                argument: "table_bytes",
                fix: "pass the hash table's size in bytes",
            });
        }
        if self.table_bytes < BUCKET_BYTES {
            return Err(PlanError::TooSmall {
                argument: "table_bytes",
                value: self.table_bytes,
                minimum: BUCKET_BYTES,
                what: "one bucket (a key and its count)",
                fix: "pass the table's size in bytes, not in buckets",
            });
        }
        if self.input_bytes == Some(0) {
            return Err(PlanError::Zero {
                argument: "input_bytes",
                fix: "pass the input's size in bytes, or `None` when it is not known",
            });
        }
        fits_in_memory(profile, "table_bytes", self.table_bytes, self.table_memory)
    }

    /// Whether the copy approach's buffer, the input of passes 2..p, fits beside the table
    /// in device memory. Unknown sizes are taken to fit.
    fn buffer_fits(&self, profile: &Profile, passes: u32) -> bool {
        let (Some(input), limit) = (self.input_bytes, profile.device.global_memory_bytes) else {
            return true;
        };
        let buffer = u128::from(input) * u128::from(passes - 1) / u128::from(passes);
        let table = match self.table_memory {
            MemoryKind::Pinned => 0,
            MemoryKind::Device | MemoryKind::Managed => u128::from(self.table_bytes),
        };
        limit == 0 || table + buffer <= u128::from(limit)
    }
}

impl Candidate for Scoped {
    const APPROACHES: &'static [fn(Split) -> Self] =
        &[|s| (Approach::Naive, s), |s| (Approach::Copy, s)];

    fn split(self) -> Split {
        self.1
    }

    fn name(self) -> String {
        let (approach, s) = self;
        format!(
            "{} {} passes of {}",
            approach.as_str(),
            s.passes,
            bytes(s.scope_bytes)
        )
    }

    // Grouping's reasons list every plan's cost just above the bet's.
    fn against(_: Option<Self>) -> String {
        "the choice above".to_string()
    }
}

impl Approach {
    /// The name serde writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Approach::Unscoped => "unscoped",
            Approach::Naive => "naive",
            Approach::Copy => "copy",
        }
    }
}

/// A bandwidth and where it came from.
struct Rate {
    bytes_per_second: f64,
    source: String,
}

/// Sequential reads of the input: device bandwidth for device and managed memory (managed
/// input is populated on the GPU), the host link for pinned memory.
fn input_rate(profile: &Profile, kind: MemoryKind) -> Rate {
    if kind != MemoryKind::Pinned {
        return device_rate(profile);
    }
    let measured = profile.bandwidth.measured();
    let zero_copy = measured.and_then(|b| {
        b.zero_copy_read
            .iter()
            .filter(|(pattern, &rate)| !pattern.contains("random") && rate > 0.0)
            .max_by(|a, b| a.1.total_cmp(b.1))
    });
    if let Some((pattern, &rate)) = zero_copy {
        return Rate {
            bytes_per_second: rate,
            source: format!("measured zero-copy read, {pattern}"),
        };
    }
    match measured.map(|b| b.host_to_device).filter(|&r| r > 0.0) {
        Some(rate) => Rate {
            bytes_per_second: rate,
            source: "measured host-to-device copy".to_string(),
        },
        None => Rate {
            bytes_per_second: DEFAULT_HOST_LINK,
            source: "assumed PCIe 3.0 x16; bandwidth not measured, run `cargo tune`".to_string(),
        },
    }
}

/// Device memory traffic (bytes read plus written per second).
fn device_rate(profile: &Profile) -> Rate {
    let measured = profile.bandwidth.measured().map(|b| b.device_to_device);
    if let Some(rate) = measured.filter(|&r| r > 0.0) {
        return Rate {
            bytes_per_second: rate,
            source: "measured device-to-device copy".to_string(),
        };
    }
    let d = &profile.device;
    if d.memory_clock_khz > 0 && d.memory_bus_width_bits > 0 {
        // Two transfers per memory clock across the whole bus: the peak the driver implies.
        let peak = 2.0 * d.memory_clock_khz as f64 * 1e3 * f64::from(d.memory_bus_width_bits) / 8.0;
        return Rate {
            bytes_per_second: peak,
            source:
                "peak from the memory clock and bus width; bandwidth not measured, run `cargo tune`"
                    .to_string(),
        };
    }
    Rate {
        bytes_per_second: DEFAULT_DEVICE_BANDWIDTH,
        source: "assumed; bandwidth not measured, run `cargo tune`".to_string(),
    }
}
