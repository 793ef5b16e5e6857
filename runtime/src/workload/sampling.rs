//! Random sampling (`memtune_kernels::sampling`): threads read random words of a region,
//! the region in device or pinned host memory, over one scope or several passes of scopes.

use memtune_core::plan::{PlanError, SamplingPlan, SamplingWorkload};
use memtune_core::size::format_bytes;
use memtune_core::{MemoryKind, Profile};
use memtune_kernels::params::SamplingParams;

use super::{floor_pow2, geometric, pass_counts, scope_of, thin, work_suffix};
use super::{random_words, Machine, Pick, Workload, MIN_BYTES};
use crate::gpu::Timing;
use crate::launch::{LaunchError, Resident, Runtime};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Rounds of mixing per value read of the compute-heavy variant
/// (`memtune_sampling_params::work`): about 1.5 k integer operations a read, as much time
/// on an H100 as the random reads of a region past the L2.
pub const HEAVY_WORK: u32 = 256;
/// The sampling kernel's seed in benchmarks.
const SEED: u64 = 0x5eed;

/// One sampling case: a region of `memory`, `reads` random reads per thread, `work`
/// rounds of mixing per value read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    pub region_bytes: u64,
    pub memory: MemoryKind,
    pub reads: u32,
    pub work: u32,
}

/// The sampling workload.
pub struct Sampling;

/// Random reads per thread: many for device memory, few for pinned memory, whose
/// zero-copy random reads run at about 0.5 G/s (0.04 G/s beyond 1 GiB) so a pass stays
/// tens of milliseconds.
pub fn reads(pinned: bool) -> u32 {
    if pinned {
        16
    } else {
        1024
    }
}

/// Regions in device memory: from 64 MiB up to the largest power of two within 80% of
/// the free memory.
pub fn device_sizes(free_bytes: u64, quick: bool) -> Vec<u64> {
    let sizes = geometric(MIN_BYTES, floor_pow2(free_bytes / 10 * 8));
    if quick {
        thin(&sizes, 4)
    } else {
        sizes
    }
}

/// The device variants of each size off the powers of two: 1024 reads, 64 reads (a
/// kernel with far less work per pass) and 1024 compute-heavy reads ([`HEAVY_WORK`]).
fn variants() -> [(u32, u32); 3] {
    [(reads(false), 0), (64, 0), (reads(false), HEAVY_WORK)]
}

fn device_case(region_bytes: u64, (reads, work): (u32, u32)) -> Case {
    Case {
        region_bytes,
        memory: MemoryKind::Device,
        reads,
        work,
    }
}

/// Device cases: [`device_sizes`] at 1024 reads, then sizes off powers of two (96 MiB,
/// 384 MiB, 1.5 GiB, 3 GiB) in every variant (quick: 96 MiB and 1.5 GiB).
pub fn device_cases(free_bytes: u64, quick: bool) -> Vec<Case> {
    let mut out: Vec<Case> = device_sizes(free_bytes, quick)
        .into_iter()
        .map(|s| device_case(s, (reads(false), 0)))
        .collect();
    let odd: &[u64] = if quick {
        &[96 * MIB, 1536 * MIB]
    } else {
        &[96 * MIB, 384 * MIB, 1536 * MIB, 3 * GIB]
    };
    for v in variants() {
        out.extend(
            odd.iter()
                .filter(|&&s| s <= free_bytes / 10 * 8)
                .map(|&s| device_case(s, v)),
        );
    }
    out
}

/// Regions in pinned host memory: from 64 MiB up to min(8 GiB, a quarter of the host's
/// memory) by powers of two, then 3, 12 and 24 GiB where they fit that quarter (quick:
/// 64 MiB, 512 MiB and 2 GiB).
pub fn pinned_sizes(host_bytes: u64, quick: bool) -> Vec<u64> {
    let cap = if quick { 2 * GIB } else { 8 * GIB };
    let sizes = geometric(MIN_BYTES, floor_pow2((host_bytes / 4).min(cap)));
    if quick {
        return thin(&sizes, 3);
    }
    let odd = [3 * GIB, 12 * GIB, 24 * GIB];
    let mut sizes: Vec<u64> = sizes
        .into_iter()
        .chain(odd.into_iter().filter(|&s| s <= host_bytes / 4))
        .collect();
    sizes.sort_unstable();
    sizes
}

fn plan(region: u64, passes: u32) -> SamplingPlan {
    SamplingPlan {
        scope_bytes: if passes == 1 {
            region
        } else {
            scope_of(region, passes, 4)
        },
        passes,
        predicted_speedup: 1.0,
        reasons: vec!["benchmark sweep".into()],
    }
}

/// The untuned plan: one pass.
pub fn untuned(region: u64) -> SamplingPlan {
    plan(region, 1)
}

/// The exhaustive sweep over `region` bytes.
pub fn sweep(region: u64) -> Vec<SamplingPlan> {
    pass_counts(region)
        .into_iter()
        .map(|p| plan(region, p))
        .collect()
}

/// A plan's short name, as the tables and the JSON print it.
pub fn label(p: &SamplingPlan) -> String {
    if p.passes == 1 {
        "1 pass".into()
    } else {
        format!("{} passes x {}", p.passes, format_bytes(p.scope_bytes))
    }
}

impl Workload for Sampling {
    const NAME: &'static str = "sampling";
    /// Zero-copy configurations differ by a few percent, as much as one configuration's
    /// time wanders over seconds on an H200 (2-5%): every one is timed once a round.
    const ROUNDS: usize = 2;
    const SURE_ROWS: &'static str = "pinned rows";
    type Case = Case;
    type Tunable = SamplingWorkload;
    type Inputs = Resident;

    fn cases(machine: &Machine, pick: &Pick, notes: &mut Vec<String>) -> Vec<Case> {
        let mut out = Vec::new();
        if pick.wants(MemoryKind::Device) {
            let free = machine.device_free_bytes;
            if pick.sizes.is_some() {
                let sizes = pick.sizes(free / 10 * 8, notes, Vec::new());
                for v in variants() {
                    out.extend(sizes.iter().map(|&s| device_case(s, v)));
                }
            } else {
                out.extend(device_cases(free, pick.quick));
            }
        }
        if pick.wants(MemoryKind::Pinned) {
            let host = machine.host_bytes;
            let sizes = pick.sizes(host / 4, notes, pinned_sizes(host, pick.quick));
            out.extend(sizes.into_iter().map(|region_bytes| Case {
                region_bytes,
                memory: MemoryKind::Pinned,
                reads: reads(true),
                work: 0,
            }));
        }
        out
    }

    fn name(c: &Case) -> String {
        format!(
            "{} {}, {} reads{}",
            c.memory,
            format_bytes(c.region_bytes),
            c.reads,
            work_suffix(c.work)
        )
    }

    fn size_bytes(c: &Case) -> u64 {
        c.region_bytes
    }

    fn tunable(c: &Case) -> SamplingWorkload {
        SamplingWorkload {
            region_bytes: c.region_bytes,
            memory: c.memory,
            reads_per_thread: c.reads,
        }
    }

    fn untimed(profile: &Profile, c: &Case) -> Result<SamplingPlan, PlanError> {
        memtune_core::plan::sampling_untimed(profile, &Self::tunable(c))
    }

    fn untuned(c: &Case) -> SamplingPlan {
        untuned(c.region_bytes)
    }

    fn sweep(c: &Case) -> Vec<SamplingPlan> {
        sweep(c.region_bytes)
    }

    fn label(plan: &SamplingPlan) -> String {
        label(plan)
    }

    /// Scopes of pinned memory are sure (the profile measured their TLB reach); device
    /// scopes are bets the autotuner settles.
    fn sure(c: &Case) -> bool {
        c.memory == MemoryKind::Pinned
    }

    /// One buffer of the largest region of the case's memory; smaller regions are its
    /// prefixes, so the buffer is kept while the memory kind stays.
    fn inputs(
        rt: &mut Runtime,
        c: &Case,
        all: &[Case],
        kept: Option<Resident>,
    ) -> Result<Resident, LaunchError> {
        if let Some(r) = kept {
            if r.kind() == c.memory && r.bytes() >= c.region_bytes {
                return Ok(r);
            }
        }
        let largest = all
            .iter()
            .filter(|o| o.memory == c.memory)
            .map(|o| o.region_bytes)
            .fold(c.region_bytes, u64::max);
        let pattern = random_words(16 << 20, 0x5a3b);
        rt.resident_words(c.memory, largest / 4, &pattern)
    }

    fn launch(
        rt: &mut Runtime,
        region: &Resident,
        c: &Case,
        plan: &SamplingPlan,
        runs: usize,
    ) -> Result<(String, Timing), LaunchError> {
        let params = SamplingParams::new(c.region_bytes / 4, c.reads, SEED)?.with_work(c.work);
        let (sum, t) = rt.time_sampling(region, params, plan, runs)?;
        Ok((sum.to_string(), t))
    }
}
