//! Workloads as one shape. Sampling, grouping and stencil each implement [`Workload`]:
//! the cases a benchmark runs on this machine, the planners' and the autotuner's view of a
//! case ([`Workload::tunable`]), the exhaustive sweep, the GPU launch and the check of its
//! result. `cargo tune bench`, `cargo tune plan` and the autotuner walk them alike through
//! [`visit`], so a new workload is one new file here and one line in [`visit`] (with its
//! kernel in `memtune-kernels` and its planner in `memtune_core::plan`).

pub mod grouping;
pub mod sampling;
pub mod stencil;

use memtune_core::plan::PlanError;
use memtune_core::size::format_bytes;
use memtune_core::tune::Tunable;
use memtune_core::{MemoryKind, Profile};

use crate::gpu::Timing;
use crate::launch::{LaunchError, Runtime};

pub use grouping::Grouping;
pub use sampling::Sampling;
pub use stencil::Stencil;

const MIB: u64 = 1 << 20;

/// The smallest scope the sweeps try: scopes that fit the L2 pay too (an H200 ran a 64 MiB
/// region 2x faster in four 16 MiB scopes,
/// `git show 2317edf:benchmarks/results/2026-11-22-h200-kernel-explore/`).
pub const MIN_SCOPE_BYTES: u64 = 16 * MIB;
/// Pass counts the exhaustive sweeps try (each capped so a scope stays >= [`MIN_SCOPE_BYTES`]).
pub const PASSES: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// The smallest region or table any benchmark case uses.
pub const MIN_BYTES: u64 = 64 * MIB;

/// What the machine offers a benchmark's cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Machine {
    /// Free device memory (`cuMemGetInfo`).
    pub device_free_bytes: u64,
    /// The host's memory (pinned buffers take at most a quarter of it).
    pub host_bytes: u64,
}

/// Which cases a run takes: `--quick`, `--sizes`, `--memory`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pick<'a> {
    pub quick: bool,
    pub sizes: Option<&'a [u64]>,
    pub memory: Option<MemoryKind>,
}

impl Pick<'_> {
    /// Whether cases of `kind` memory are wanted.
    pub fn wants(&self, kind: MemoryKind) -> bool {
        self.memory.is_none_or(|m| m == kind)
    }

    /// The sizes given to `--sizes` within `4..=limit` bytes (the others noted in
    /// `notes`), or `default` without `--sizes`.
    pub fn sizes(&self, limit: u64, notes: &mut Vec<String>, default: Vec<u64>) -> Vec<u64> {
        let Some(sizes) = self.sizes else {
            return default;
        };
        let mut out = Vec::new();
        for &s in sizes {
            if s >= 4 && s <= limit {
                out.push(s);
            } else {
                notes.push(format!(
                    "skipped {}: outside 4 bytes..{} for this memory",
                    format_bytes(s),
                    format_bytes(limit)
                ));
            }
        }
        out
    }
}

/// A plan of workload `W`.
pub type PlanOf<W> = <<W as Workload>::Tunable as Tunable>::Plan;

/// One kind of kernel memtune plans, as every consumer walks it.
pub trait Workload {
    /// `sampling`, `grouping`, `stencil`: the bench's argument and its file names.
    const NAME: &'static str;
    /// Rounds of timed runs each configuration gets in a benchmark row, taken in turn.
    const ROUNDS: usize = 1;
    /// Which rows the untimed plan is held to the exhaustive best on ("" for all).
    const SURE_ROWS: &'static str = "";

    /// One size point: what a benchmark row measures and the autotuner keys.
    type Case: Clone;
    /// The planners' and the autotuner's view of a case.
    type Tunable: Tunable;
    /// A case's inputs, resident on the GPU.
    type Inputs;

    /// The benchmark's cases on `machine` (sizes skipped by `pick` are noted in `notes`).
    fn cases(machine: &Machine, pick: &Pick, notes: &mut Vec<String>) -> Vec<Self::Case>;
    /// The case's name in tables and JSON.
    fn name(case: &Self::Case) -> String;
    /// Region, table or grid bytes (the charts' x axis).
    fn size_bytes(case: &Self::Case) -> u64;
    fn tunable(case: &Self::Case) -> Self::Tunable;
    /// The plan used without timing (the autotuner settles the bets).
    fn untimed(profile: &Profile, case: &Self::Case) -> Result<PlanOf<Self>, PlanError> {
        Self::tunable(case).untimed(profile)
    }
    /// The kernel without memtune.
    fn untuned(case: &Self::Case) -> PlanOf<Self>;
    /// Every plan the exhaustive sweep times, each one the kernels can take.
    fn sweep(case: &Self::Case) -> Vec<PlanOf<Self>>;
    /// A plan's short name in tables and JSON.
    fn label(plan: &PlanOf<Self>) -> String;
    /// Whether the untimed plan is sure on this case (held to the exhaustive best).
    fn sure(_case: &Self::Case) -> bool {
        true
    }
    /// Bytes a launch moves, for its effective bandwidth (`None`: not reported).
    fn moved_bytes(_case: &Self::Case) -> Option<u64> {
        None
    }
    /// The case whose bandwidth is held to the device copy's, if any.
    fn bandwidth_case() -> Option<String> {
        None
    }

    /// The case's inputs on the GPU; `kept` is the previous case's, to reuse where they
    /// fit (filling gigabytes of pinned memory takes seconds), `all` every case of the run.
    fn inputs(
        rt: &mut Runtime,
        case: &Self::Case,
        all: &[Self::Case],
        kept: Option<Self::Inputs>,
    ) -> Result<Self::Inputs, LaunchError>;
    /// Runs `plan` on the case `1 + runs` times (the first untimed when the runtime's
    /// warm-up is on): the last run's result, printed, and the timed runs.
    fn launch(
        rt: &mut Runtime,
        inputs: &Self::Inputs,
        case: &Self::Case,
        plan: &PlanOf<Self>,
        runs: usize,
    ) -> Result<(String, Timing), LaunchError>;
    /// Whether a plan's result `got` is the untuned kernel's `expected`: plans change
    /// where and in what order the work runs, never what it computes.
    fn check(expected: &str, got: &str) -> Result<(), String> {
        if expected == got {
            Ok(())
        } else {
            Err(format!("result {got} differs from untuned {expected}"))
        }
    }
}

/// Something done with every workload: [`visit`] calls [`Visitor::visit`] once per
/// workload type.
pub trait Visitor {
    fn visit<W: Workload>(&mut self);
}

/// Calls `v` with every workload, in the order benchmarks run them.
pub fn visit(v: &mut impl Visitor) {
    v.visit::<Sampling>();
    v.visit::<Grouping>();
    v.visit::<Stencil>();
}

/// Every workload's [`Workload::NAME`], in [`visit`] order.
pub fn names() -> Vec<&'static str> {
    struct Names(Vec<&'static str>);
    impl Visitor for Names {
        fn visit<W: Workload>(&mut self) {
            self.0.push(W::NAME);
        }
    }
    let mut n = Names(Vec::new());
    visit(&mut n);
    n.0
}

/// `from`, `2 from`, `4 from`, ... up to `to` (inclusive); empty when `to < from`.
pub fn geometric(from: u64, to: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut s = from.max(1);
    while s <= to {
        out.push(s);
        s = match s.checked_mul(2) {
            Some(n) => n,
            None => break,
        };
    }
    out
}

/// The largest power of two not above `n` (0 for 0).
pub fn floor_pow2(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        1 << (63 - n.leading_zeros())
    }
}

/// Keeps the first, the last and about every `step`-th size between: what `--quick` runs.
pub fn thin(sizes: &[u64], step: usize) -> Vec<u64> {
    let last = sizes.len().saturating_sub(1);
    sizes
        .iter()
        .enumerate()
        .filter(|(i, _)| *i == 0 || *i == last || i % step.max(1) == 0)
        .map(|(_, &s)| s)
        .collect()
}

/// Pass counts of [`PASSES`] whose scopes of `total / passes` stay >= [`MIN_SCOPE_BYTES`]
/// (always at least one pass).
pub fn pass_counts(total: u64) -> Vec<u32> {
    PASSES
        .iter()
        .copied()
        .filter(|&p| p == 1 || total / u64::from(p) >= MIN_SCOPE_BYTES)
        .collect()
}

/// Scope bytes for `passes` equal scopes of `total` bytes, rounded up to `unit`.
fn scope_of(total: u64, passes: u32, unit: u64) -> u64 {
    total.div_ceil(u64::from(passes)).div_ceil(unit) * unit
}

/// Random words (xorshift64*), never all zero: benchmark inputs, so that no kernel is
/// timed on zeros.
pub fn random_words(n: usize, seed: u64) -> Vec<u32> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
        })
        .collect()
}

/// The end of a case's name for a kernel variant with `work` (nothing without).
pub fn work_suffix(work: u32) -> String {
    if work == 0 {
        String::new()
    } else {
        format!(", work {work}")
    }
}

#[cfg(test)]
mod tests;
