//! The 3-D stencil (`memtune_kernels::stencil`): a 7-point sweep of a grid in f32 or f64,
//! plain, staged in shared memory, or streaming planes, with a block shape.

use memtune_core::plan::{stencil, Dtype, PlanError, StencilPlan, StencilWorkload, Variant};
use memtune_core::Profile;

use super::{random_words, Machine, Pick, Workload};
use crate::gpu::Timing;
use crate::launch::{stencil_launch, LaunchError, Resident, Runtime};

/// Block shapes the sweep tries, per variant where allowed.
pub const BLOCKS: [[u32; 3]; 8] = [
    [32, 4, 2],
    [32, 4, 1],
    [32, 8, 1],
    [64, 4, 1],
    [32, 4, 4],
    [16, 8, 4],
    [32, 8, 2],
    [128, 2, 1],
];

/// One stencil case: a grid of `dims` cells of `dtype`, each cell's neighbours read
/// `repeats` times per sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    pub dims: [u32; 3],
    pub dtype: Dtype,
    pub repeats: u32,
}

impl Case {
    fn cells(&self) -> u64 {
        self.dims.iter().map(|&d| u64::from(d)).product()
    }
}

/// The stencil workload.
pub struct Stencil;

/// Bytes of a cell of `dtype`.
pub fn elem_bytes(dtype: Dtype) -> u64 {
    match dtype {
        Dtype::F32 => 4,
        Dtype::F64 => 8,
    }
}

/// Grids and repeat counts the benchmark runs, each in f32 and f64.
pub fn grids(quick: bool) -> Vec<([u32; 3], u32)> {
    let repeats: &[u32] = if quick { &[1] } else { &[1, 6] };
    let mut out = Vec::new();
    for &n in &[256u32, 512] {
        for &r in repeats {
            out.push(([n, n, n], r));
        }
    }
    out
}

fn plan(variant: Variant, block: [u32; 3]) -> StencilPlan {
    StencilPlan {
        variant,
        block,
        staging: variant != Variant::Plain,
        reasons: vec!["benchmark sweep".into()],
    }
}

/// The untuned plan: plain with the planner's conservative default block.
pub fn untuned() -> StencilPlan {
    plan(Variant::Plain, stencil::DEFAULT_BLOCK)
}

/// Plain and staged with every block of [`BLOCKS`], streaming with the one-plane ones.
/// Blocks the kernels cannot take on a grid are dropped by [`candidates`].
pub fn sweep() -> Vec<StencilPlan> {
    let mut out = Vec::new();
    for variant in [Variant::Plain, Variant::Staged, Variant::Streaming] {
        for block in BLOCKS {
            if variant == Variant::Streaming && block[2] != 1 {
                continue;
            }
            out.push(plan(variant, block));
        }
    }
    out
}

/// The plans of [`sweep`] the kernels can take on a `dims` volume of `elem_bytes`-byte
/// cells ([`stencil_launch`] accepts them), in sweep order. Shared by the benchmark and
/// the staging probe.
pub fn candidates(dims: [u32; 3], repeats: u32, elem_bytes: u64) -> Vec<StencilPlan> {
    let cells = dims.iter().map(|&d| d as usize).product::<usize>();
    sweep()
        .into_iter()
        .filter(|p| stencil_launch(dims, cells, repeats, p, elem_bytes).is_ok())
        .collect()
}

/// A plan's short name, as the tables and the JSON print it.
pub fn label(p: &StencilPlan) -> String {
    format!(
        "{} {}x{}x{}",
        p.variant.as_str(),
        p.block[0],
        p.block[1],
        p.block[2]
    )
}

/// A case's name in rows and in the bandwidth check.
pub fn case_name(dims: [u32; 3], dtype: &str, repeats: u32) -> String {
    format!("{}x{}x{} {dtype} x{repeats}", dims[0], dims[1], dims[2])
}

impl Workload for Stencil {
    const NAME: &'static str = "stencil";
    type Case = Case;
    type Tunable = StencilWorkload;
    type Inputs = Resident;

    /// Every grid of [`grids`] in f32, then in f64; `--sizes` and `--memory` do not apply.
    fn cases(_machine: &Machine, pick: &Pick, _notes: &mut Vec<String>) -> Vec<Case> {
        let grids = grids(pick.quick);
        [Dtype::F32, Dtype::F64]
            .into_iter()
            .flat_map(|dtype| {
                grids.iter().map(move |&(dims, repeats)| Case {
                    dims,
                    dtype,
                    repeats,
                })
            })
            .collect()
    }

    fn name(c: &Case) -> String {
        case_name(c.dims, c.dtype.as_str(), c.repeats)
    }

    fn size_bytes(c: &Case) -> u64 {
        c.cells() * elem_bytes(c.dtype)
    }

    fn tunable(c: &Case) -> StencilWorkload {
        StencilWorkload {
            dims: c.dims,
            dtype: c.dtype,
            repeats: c.repeats,
        }
    }

    /// memtune's own stencil keeps the model's pick: the profile's staging section timed
    /// this very kernel (a user's stencil gets the untuned block, `stencil_untimed`).
    fn untimed(profile: &Profile, c: &Case) -> Result<StencilPlan, PlanError> {
        stencil::plan(profile, &Self::tunable(c))
    }

    fn untuned(_c: &Case) -> StencilPlan {
        untuned()
    }

    fn sweep(c: &Case) -> Vec<StencilPlan> {
        candidates(c.dims, c.repeats, elem_bytes(c.dtype))
    }

    fn label(plan: &StencilPlan) -> String {
        label(plan)
    }

    /// Every cell read once and written once.
    fn moved_bytes(c: &Case) -> Option<u64> {
        Some(2 * c.cells() * elem_bytes(c.dtype))
    }

    fn bandwidth_case() -> Option<String> {
        Some(case_name([512; 3], Dtype::F32.as_str(), 1))
    }

    /// The grid in device memory, values in [0, 1): finite sums, no zeros to time on.
    fn inputs(
        rt: &mut Runtime,
        c: &Case,
        _all: &[Case],
        kept: Option<Resident>,
    ) -> Result<Resident, LaunchError> {
        drop(kept);
        let words = random_words(c.cells() as usize, 0x57e4 + u64::from(c.dims[0]));
        match c.dtype {
            Dtype::F32 => {
                let v: Vec<f32> = words
                    .iter()
                    .map(|&w| (w >> 8) as f32 / 16_777_216.0)
                    .collect();
                rt.resident_f32(&v)
            }
            Dtype::F64 => {
                let v: Vec<f64> = words
                    .iter()
                    .map(|&w| f64::from(w) / 4_294_967_296.0)
                    .collect();
                rt.resident_f64(&v)
            }
        }
    }

    fn launch(
        rt: &mut Runtime,
        input: &Resident,
        c: &Case,
        plan: &StencilPlan,
        runs: usize,
    ) -> Result<(String, Timing), LaunchError> {
        let (digest, t) = rt.time_stencil(input, c.dtype, c.dims, c.repeats, plan, runs)?;
        Ok((format!("{digest:016x}"), t))
    }
}
