//! The 3-D stencil (`memtune_kernels::stencil`): a 7-point (radius 1) or 13-point
//! (radius 2) star sweep of a grid in f32 or f64, plain, staged in shared memory, or
//! streaming planes, with a block shape.

use memtune_core::plan::{
    stencil, stencil_untimed, Dtype, PlanError, StencilPlan, StencilWorkload, Variant,
};
use memtune_core::Profile;

use super::{random_words, Machine, Pick, Workload};
use crate::gpu::Timing;
use crate::launch::{stencil_launch, LaunchError, Resident, Runtime, StencilSweep};

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

/// Radius of the wider kernel variant: the 13-point star, whose plans the profile's
/// staging section (timed on the 7-point kernel) does not rank.
pub const WIDE_RADIUS: u32 = 2;

/// One stencil case: a grid of `dims` cells of `dtype`, each cell's neighbours (`radius`
/// each side along each axis) read `repeats` times per sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    pub dims: [u32; 3],
    pub dtype: Dtype,
    pub repeats: u32,
    pub radius: u32,
}

impl Case {
    fn cells(&self) -> u64 {
        self.dims.iter().map(|&d| u64::from(d)).product()
    }

    fn sweep(&self) -> StencilSweep {
        StencilSweep {
            dims: self.dims,
            repeats: self.repeats,
            radius: self.radius,
        }
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

/// The plans of [`sweep`] the kernels can take on `s` with `elem_bytes`-byte cells
/// ([`stencil_launch`] accepts them), in sweep order. Shared by the benchmark and the
/// staging probe.
pub fn candidates(s: StencilSweep, elem_bytes: u64) -> Vec<StencilPlan> {
    let cells = s.dims.iter().map(|&d| d as usize).product::<usize>();
    sweep()
        .into_iter()
        .filter(|p| stencil_launch(s.dims, cells, s.repeats, p, elem_bytes, s.radius).is_ok())
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

/// The end of a case's name for the kernel of `radius` (nothing for the 7-point star).
fn radius_suffix(radius: u32) -> String {
    if radius == 1 {
        String::new()
    } else {
        format!(", {}-point", 6 * radius + 1)
    }
}

/// The 13-point rows: 256³ and 512³ once each in f32 and f64 (quick: 512³ f32).
fn wide_cases(quick: bool) -> Vec<Case> {
    let sizes: &[u32] = if quick { &[512] } else { &[256, 512] };
    let dtypes: &[Dtype] = if quick {
        &[Dtype::F32]
    } else {
        &[Dtype::F32, Dtype::F64]
    };
    dtypes
        .iter()
        .flat_map(|&dtype| {
            sizes.iter().map(move |&n| Case {
                dims: [n; 3],
                dtype,
                repeats: 1,
                radius: WIDE_RADIUS,
            })
        })
        .collect()
}

impl Workload for Stencil {
    const NAME: &'static str = "stencil";
    const SURE_ROWS: &'static str = "the 7-point rows";
    type Case = Case;
    type Tunable = StencilWorkload;
    type Inputs = Resident;

    /// Every grid of [`grids`] in f32, then in f64, then the 13-point rows; `--sizes` and
    /// `--memory` do not apply.
    fn cases(_machine: &Machine, pick: &Pick, _notes: &mut Vec<String>) -> Vec<Case> {
        let grids = grids(pick.quick);
        [Dtype::F32, Dtype::F64]
            .into_iter()
            .flat_map(|dtype| {
                grids.iter().map(move |&(dims, repeats)| Case {
                    dims,
                    dtype,
                    repeats,
                    radius: 1,
                })
            })
            .chain(wide_cases(pick.quick))
            .collect()
    }

    fn name(c: &Case) -> String {
        case_name(c.dims, c.dtype.as_str(), c.repeats) + &radius_suffix(c.radius)
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

    /// memtune's own 7-point stencil keeps the model's pick: the profile's staging section
    /// timed this very kernel. The 13-point one is a kernel the profile did not time, as a
    /// user's stencil is: it gets the untuned block ([`stencil_untimed`]).
    fn untimed(profile: &Profile, c: &Case) -> Result<StencilPlan, PlanError> {
        if c.radius == 1 {
            stencil::plan(profile, &Self::tunable(c))
        } else {
            stencil_untimed(profile, &Self::tunable(c))
        }
    }

    fn untuned(_c: &Case) -> StencilPlan {
        untuned()
    }

    fn sweep(c: &Case) -> Vec<StencilPlan> {
        candidates(c.sweep(), elem_bytes(c.dtype))
    }

    fn label(plan: &StencilPlan) -> String {
        label(plan)
    }

    /// The untimed plan is held to the best where the profile timed the kernel: the
    /// 7-point rows.
    fn sure(c: &Case) -> bool {
        c.radius == 1
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
        let (digest, t) = rt.time_stencil(input, c.dtype, c.sweep(), plan, runs)?;
        Ok((format!("{digest:016x}"), t))
    }
}
