//! The stencil rows of `cargo tune bench`: memtune's 3-D stencil in f32 and f64 at each
//! grid and repeat count, untuned, the model's plan, autotuned and the best of its sweep.

use super::rounds::tuned_row;
use super::steps::Steps;
use super::{finish, random_words, sweep, Report};
use memtune::launch::LaunchError;
use memtune::Runtime;
use memtune_core::plan::{stencil, Dtype, StencilPlan, StencilWorkload};
use memtune_core::Profile;

pub(super) fn bench(
    rt: &mut Runtime,
    profile: &Profile,
    quick: bool,
    copy_gbs: f64,
    steps: &Steps,
) -> Result<Report, LaunchError> {
    let uuid = rt.identity().uuid.clone();
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    let cases = sweep::stencil_cases(quick);
    for (d, dtype) in [Dtype::F32, Dtype::F64].into_iter().enumerate() {
        for (c, &(dims, repeats)) in cases.iter().enumerate() {
            let cells = dims.iter().map(|&d| d as usize).product::<usize>();
            let words = random_words(cells, 0x57e4 + u64::from(dims[0]));
            // Values in [0, 1): finite sums, no zeros to time on.
            let input = match dtype {
                Dtype::F32 => {
                    let v: Vec<f32> = words
                        .iter()
                        .map(|&w| (w >> 8) as f32 / 16_777_216.0)
                        .collect();
                    rt.resident_f32(&v)?
                }
                Dtype::F64 => {
                    let v: Vec<f64> = words
                        .iter()
                        .map(|&w| f64::from(w) / 4_294_967_296.0)
                        .collect();
                    rt.resident_f64(&v)?
                }
            };
            let case = sweep::stencil_case(dims, dtype.as_str(), repeats);
            steps.case("stencil", d * cases.len() + c, 2 * cases.len(), &case);
            let w = StencilWorkload {
                dims,
                dtype,
                repeats,
            };
            let tuned = match stencil::plan(profile, &w) {
                Ok(p) => p,
                Err(e) => {
                    errors.push(format!("{case}: planner: {e}"));
                    continue;
                }
            };
            let elem = if dtype == Dtype::F32 { 4 } else { 8 };
            let time = |plan: &StencilPlan, runs: usize, warmup: bool| {
                rt.set_warmup(warmup);
                let r = match dtype {
                    Dtype::F32 => rt.time_stencil_f32(&input, dims, repeats, plan, runs),
                    Dtype::F64 => rt.time_stencil_f64(&input, dims, repeats, plan, runs),
                };
                rt.set_warmup(true);
                r.map(|(digest, t)| (format!("{digest:016x}"), t))
            };
            let candidates = sweep::stencil_candidates(dims, repeats, elem);
            let r = tuned_row(
                (case.clone(), (cells as u64) * elem),
                sweep::stencil_untuned(),
                tuned,
                candidates,
                sweep::stencil_label,
                1,
                (profile, &uuid, &w),
                time,
            );
            match r {
                Ok(mut r) => {
                    r.tuned_gb_per_s = Some(sweep::stencil_gb_per_s(
                        cells as u64,
                        elem,
                        r.tuned.median_ms,
                    ));
                    rows.push(r);
                }
                Err(e) => errors.push(format!("{case}: {e}")),
            }
        }
    }
    steps.finish(&format!("{} rows", rows.len()));
    Ok(finish("stencil", 1, rows, errors, Some(copy_gbs)))
}
