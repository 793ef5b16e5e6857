//! The shared-memory staging section (seed 003): a 3-D 6-neighbour stencil, plain, staged
//! and streaming, over a sweep of block shapes, in f32 and f64, repeated 1, 6 and 12 times
//! per cell on 400³, 512³ and 256³ volumes (`--quick`: 256³, 1 and 6 repeats).
//!
//! Every launch goes through [`Runtime::time_stencil`] (input resident, median of [`RUNS`]
//! timed runs after a warm-up) and returns a digest of the output's bits, computed on the
//! GPU; all variants of one (dtype, repeats, grid) must give the same digest. The best block
//! of each variant is also checked bit for bit against the CPU reference
//! (`memtune_kernels::reference::stencil::sweep`) on a small [`CHECK_GRID`]³ volume.
//!
//! Cost. The kernels are short (0.1-0.7 ms on an H200); what dominates is one NVRTC compile
//! per dtype and staged or streaming block (plain takes the header's block, one compile per
//! dtype), about 0.2-0.3 s each. (Reading every output back to digest it on the host used
//! to cost more: 31 s of a 50 s probe on an H200.) So blocks are swept once per dtype, on
//! the first grid at [`SWEEP_REPEATS`] repeats (the first few accepted blocks of each
//! variant of the bench's list, [`caps`]), and every other (grid, repeats) times only the
//! best block of each variant. [`cost`] counts it all.

use crate::fault::{FaultOp, FaultSection, Faults, InjectedFault};
use crate::Cancel;
use memtune::launch::{Resident, Runtime, StencilSweep};
use memtune::workload::stencil as sweep;
use memtune::LaunchError;
use memtune_core::plan::{Dtype, StencilPlan, Variant};
use memtune_core::profile::{StagingEntry, StagingTable};
use memtune_kernels::params::StencilParams;
use memtune_kernels::reference::stencil as reference;

/// Timed runs after the warm-up (as the bench).
pub const RUNS: usize = 5;
/// Repeats at which the block sweep runs: seed 003's middle case.
pub const SWEEP_REPEATS: u32 = 6;
/// Side of the volume checked against the CPU reference.
pub const CHECK_GRID: u32 = 48;
/// Element types measured (seed 003: fp32 and fp64); quick: f32 only, half the NVRTC
/// compiles, which are most of this section's time.
pub fn dtypes(quick: bool) -> &'static [Dtype] {
    if quick {
        &[Dtype::F32]
    } else {
        &[Dtype::F32, Dtype::F64]
    }
}
const VARIANTS: [Variant; 3] = [Variant::Plain, Variant::Staged, Variant::Streaming];

/// Cube sides measured: seed 003's 400³ and 512³, then 256³, where a verdict does not carry
/// down from 400³ (H100 f64: streaming up to 8% faster than plain at 256³, plain 3-5%
/// faster at 512³). The block sweep runs on the first. Quick: 256³ only, still larger
/// than an H100/H200 L2 (50-60 MB) in f32 input plus output. The planner takes the entry
/// of the nearest volume.
pub fn grids(quick: bool) -> &'static [u32] {
    if quick {
        &[256]
    } else {
        &[400, 512, 256]
    }
}

/// Repeats measured (seed 003: 1, 6, 12); quick: 1 and 6. [`SWEEP_REPEATS`] is first.
pub fn repeats(quick: bool) -> &'static [u32] {
    if quick {
        &[6, 1]
    } else {
        &[6, 1, 12]
    }
}

/// Most blocks swept per variant (plain, staged, streaming), the first ones of
/// [`sweep::BLOCKS`] the variant accepts. Staged skips one-plane blocks: the
/// planner runs those as streaming (same tile, each plane read once), measured as such.
pub fn caps(quick: bool) -> [usize; 3] {
    if quick {
        [2, 2, 2]
    } else {
        [3, 3, 3]
    }
}

fn elem_bytes(dtype: Dtype) -> u64 {
    match dtype {
        Dtype::F32 => 4,
        Dtype::F64 => 8,
    }
}

fn variant_index(v: Variant) -> usize {
    match v {
        Variant::Plain => 0,
        Variant::Staged => 1,
        Variant::Streaming => 2,
    }
}

/// The swept plans on a `dims` volume: the bench's candidates, capped per variant.
pub fn sweep_plans(dims: [u32; 3], dtype: Dtype, quick: bool) -> Vec<StencilPlan> {
    let cap = caps(quick);
    let mut taken = [0usize; 3];
    let swept = StencilSweep {
        dims,
        repeats: SWEEP_REPEATS,
        radius: 1,
    };
    sweep::candidates(swept, elem_bytes(dtype))
        .into_iter()
        .filter(|p| !(p.variant == Variant::Staged && p.block[2] == 1))
        .filter(|p| {
            let i = variant_index(p.variant);
            taken[i] += 1;
            taken[i] <= cap[i]
        })
        .collect()
}

/// What [`measure`] will do: NVRTC compiles and timed configurations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    pub compiles: usize,
    pub timed: usize,
}

/// The work [`measure`] does with `quick`; the H200 estimate is `0.25 s × compiles +
/// 0.05 s × timed` (each timed configuration allocates and zeroes its output, runs
/// `RUNS + 1` times and digests), plus about 0.5 s of input uploads.
pub fn cost(quick: bool) -> Cost {
    let mut c = Cost {
        compiles: 0,
        timed: 0,
    };
    for &dtype in dtypes(quick) {
        let first = [grids(quick)[0]; 3];
        let plans = sweep_plans(first, dtype, quick);
        // Plain compiles once per dtype; every staged/streaming block once.
        c.compiles += 1 + plans.iter().filter(|p| p.variant != Variant::Plain).count();
        for gi in 0..grids(quick).len() {
            for ri in 0..repeats(quick).len() {
                c.timed += if gi == 0 && ri == 0 { plans.len() } else { 3 };
            }
        }
    }
    c
}

fn plan(variant: Variant, block: [u32; 3]) -> StencilPlan {
    StencilPlan {
        variant,
        block,
        staging: variant != Variant::Plain,
        reasons: vec!["staging probe".into()],
    }
}

/// Random values in (0, 1]: never zero, finite sums (xorshift64*).
fn random_unit(n: usize, seed: u64) -> impl Iterator<Item = f64> {
    let mut x = seed | 1;
    (0..n).map(move |_| {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        ((x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f64 + 1.0) / 16_777_216.0
    })
}

/// Host input of one dtype, the largest grid's cells; smaller grids take a prefix.
enum Values {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Values {
    fn random(dtype: Dtype, n: usize, seed: u64) -> Values {
        match dtype {
            // 24-bit values are exact in f32.
            Dtype::F32 => Values::F32(random_unit(n, seed).map(|v| v as f32).collect()),
            Dtype::F64 => Values::F64(random_unit(n, seed).collect()),
        }
    }

    fn resident(&self, rt: &mut Runtime, cells: usize) -> Result<Resident, LaunchError> {
        match self {
            Values::F32(v) => rt.resident_f32(&v[..cells]),
            Values::F64(v) => rt.resident_f64(&v[..cells]),
        }
    }
}

/// Why the staging table could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum StagingError {
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// A failure asked for by `MEMTUNE_FAULT`.
    #[error(transparent)]
    Injected(#[from] InjectedFault),
    /// The probe was cancelled (Ctrl-C) between two configurations.
    #[error("cancelled (interrupted)")]
    Cancelled,
}

fn mismatch(what: String) -> LaunchError {
    LaunchError::BadPlan(format!("staging probe: {what}"))
}

fn label(p: &StencilPlan) -> String {
    sweep::label(p)
}

/// Measures the staging table on `rt`'s GPU. `progress(fraction, message)` is called
/// before every timed configuration and reference check; `cancel` is read there too, and
/// `faults` fails the first allocation or launch on purpose (`MEMTUNE_FAULT`).
pub fn measure(
    rt: &mut Runtime,
    quick: bool,
    faults: &Faults,
    cancel: &Cancel,
    progress: &mut dyn FnMut(f64, &str),
) -> Result<StagingTable, StagingError> {
    let total = cost(quick).timed + dtypes(quick).len() * VARIANTS.len();
    let mut done = 0usize;
    let mut step = |msg: &str| {
        progress(done as f64 / total.max(1) as f64, msg);
        done += 1;
    };
    let mut entries = Vec::new();
    for &dtype in dtypes(quick) {
        let largest = grids(quick).iter().copied().max().unwrap_or(0);
        let values = Values::random(dtype, (largest as usize).pow(3), 0x57a9_e003);
        // Best (block, ms) per variant from the sweep, reused on the other cases.
        let mut best_blocks: Option<[[u32; 3]; 3]> = None;
        for &n in grids(quick) {
            let dims = [n; 3];
            let cells = (n as usize).pow(3);
            faults.check(FaultOp::Alloc, FaultSection::Staging)?;
            let input = values.resident(rt, cells)?;
            for &r in repeats(quick) {
                let case = sweep::case_name(dims, dtype.as_str(), r);
                let plans = match best_blocks {
                    None => sweep_plans(dims, dtype, quick),
                    Some(b) => VARIANTS
                        .iter()
                        .map(|&v| plan(v, b[variant_index(v)]))
                        .collect(),
                };
                let mut best: [Option<([u32; 3], f64)>; 3] = [None; 3];
                let mut first: Option<(String, u64)> = None;
                for p in &plans {
                    if cancel.is_cancelled() {
                        return Err(StagingError::Cancelled);
                    }
                    faults.check(FaultOp::Launch, FaultSection::Staging)?;
                    step(&format!("staging {case}: {}", label(p)));
                    let sweep = StencilSweep {
                        dims,
                        repeats: r,
                        radius: 1,
                    };
                    let (digest, timing) = rt.time_stencil(&input, dtype, sweep, p, RUNS)?;
                    match &first {
                        None => first = Some((label(p), digest)),
                        Some((l0, d0)) if *d0 != digest => {
                            return Err(StagingError::Launch(mismatch(format!(
                                "{case}: {} gave output digest {digest:016x}, {l0} {d0:016x}: the variants disagree",
                                label(p)
                            ))));
                        }
                        Some(_) => {}
                    }
                    let ms = timing.median_ms();
                    let slot = &mut best[variant_index(p.variant)];
                    if slot.is_none_or(|(_, b)| ms < b) {
                        *slot = Some((p.block, ms));
                    }
                }
                let [Some(plain), Some(staged), streaming] = best else {
                    return Err(StagingError::Launch(mismatch(format!(
                        "{case}: no plain or no staged block could be launched"
                    ))));
                };
                if best_blocks.is_none() {
                    let stream_block = streaming.map_or(plain.0, |s| s.0);
                    best_blocks = Some([plain.0, staged.0, stream_block]);
                }
                entries.push(StagingEntry {
                    dtype: dtype.as_str().to_string(),
                    repeats: r,
                    grid: dims,
                    best_plain_block: plain.0,
                    best_plain_ms: plain.1,
                    best_staged_block: staged.0,
                    best_staged_ms: staged.1,
                    benefit: plain.1 / staged.1,
                    best_streaming_block: streaming.map(|s| s.0),
                    best_streaming_ms: streaming.map(|s| s.1),
                });
            }
        }
        if let Some(blocks) = best_blocks {
            check_reference(rt, dtype, blocks, &mut step)?;
        }
    }
    entries.sort_by(|a, b| {
        (a.dtype.as_str(), a.grid, a.repeats).cmp(&(b.dtype.as_str(), b.grid, b.repeats))
    });
    Ok(StagingTable { entries })
}

/// The best block of each variant on a [`CHECK_GRID`]³ volume, bit for bit against the
/// CPU reference.
fn check_reference(
    rt: &mut Runtime,
    dtype: Dtype,
    blocks: [[u32; 3]; 3],
    step: &mut dyn FnMut(&str),
) -> Result<(), LaunchError> {
    let dims = [CHECK_GRID; 3];
    let cells = (CHECK_GRID as usize).pow(3);
    let params = StencilParams::new(dims[0], dims[1], dims[2], SWEEP_REPEATS)?;
    let input = Values::random(dtype, cells, 0x0c4e_c003);
    for v in VARIANTS {
        let p = plan(v, blocks[variant_index(v)]);
        if v == Variant::Streaming && p.block[2] != 1 {
            continue; // no streaming block was launchable: nothing to check
        }
        step(&format!(
            "staging: {} {} against the CPU reference",
            dtype.as_str(),
            label(&p)
        ));
        let diff = match &input {
            Values::F32(x) => {
                let want = reference::sweep(x, &params).map_err(|e| mismatch(e.to_string()))?;
                let got = rt.stencil_f32(x, dims, SWEEP_REPEATS, &p)?;
                reference::first_difference(&want, &got)
            }
            Values::F64(x) => {
                let want = reference::sweep(x, &params).map_err(|e| mismatch(e.to_string()))?;
                let got = rt.stencil_f64(x, dims, SWEEP_REPEATS, &p)?;
                reference::first_difference(&want, &got)
            }
        };
        if let Some(i) = diff {
            return Err(mismatch(format!(
                "{} {} differs from the CPU reference on {CHECK_GRID}³ at cell {i}",
                dtype.as_str(),
                label(&p)
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_is_capped_and_launchable() {
        for quick in [false, true] {
            for &dtype in dtypes(quick) {
                for &n in grids(quick) {
                    let plans = sweep_plans([n; 3], dtype, quick);
                    let mut per = [0usize; 3];
                    for p in &plans {
                        per[variant_index(p.variant)] += 1;
                        memtune::launch::stencil_launch(
                            [n; 3],
                            (n as usize).pow(3),
                            12,
                            p,
                            elem_bytes(dtype),
                            1,
                        )
                        .expect("launchable");
                    }
                    assert_eq!(per, caps(quick), "{dtype:?} {n} quick={quick}");
                }
                // The reference check's small volume takes every swept block.
                let cells = (CHECK_GRID as usize).pow(3);
                for p in sweep_plans([grids(quick)[0]; 3], dtype, quick) {
                    memtune::launch::stencil_launch(
                        [CHECK_GRID; 3],
                        cells,
                        SWEEP_REPEATS,
                        &p,
                        elem_bytes(dtype),
                        1,
                    )
                    .expect("launchable on the check volume");
                    assert!(p.variant != Variant::Staged || p.block[2] > 1, "{p:?}");
                }
            }
        }
    }

    #[test]
    fn cost_fits_the_budget() {
        // Full: per dtype 9 swept + 8 cases x 3; compiles 2 x (1 + 3 + 3).
        let full = cost(false);
        assert_eq!(full.timed, 2 * (9 + 8 * 3));
        assert_eq!(full.compiles, 14);
        let est = |c: Cost| 0.25 * c.compiles as f64 + 0.05 * c.timed as f64;
        assert!(est(full) < 8.0, "{full:?}: {:.1} s", est(full));
        // Quick: f32 only, 6 swept + 1 case x 3; compiles 1 + 2 + 2.
        let quick = cost(true);
        assert_eq!(quick.timed, 6 + 3);
        assert_eq!(quick.compiles, 5);
        assert!(est(quick) < 2.0, "{quick:?}: {:.1} s", est(quick));
    }

    #[test]
    fn random_input_is_never_zero() {
        assert!(random_unit(100_000, 1).all(|v| v > 0.0 && v <= 1.0));
        match Values::random(Dtype::F32, 1000, 3) {
            Values::F32(v) => assert!(v.iter().all(|&x| x > 0.0)),
            Values::F64(_) => unreachable!(),
        }
    }
}
