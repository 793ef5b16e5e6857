//! GPU tests of the stencil: they run only with `MEMTUNE_GPU_TESTS=1`.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use memtune::core::plan::{Dtype, Variant};
use memtune::core::tune::Tunable;
use memtune_example_support::testing::{assert_stored_decision_times_nothing, gpu0_or_skip};
use user_stencil::bench::{label, plan, run_checked, run_untuned, sweep, tune_checked};
use user_stencil::gpu::{Gpu, Volume};
use user_stencil::reference::{self, Real};
use user_stencil::Case;

/// Runs `p` and compares its output with the CPU reference, bit for bit (the output is
/// then poisoned by the check against the untuned output).
fn equals_cpu<T>(gpu: &Gpu, volume: &Volume, want: &[T], p: &memtune::core::plan::StencilPlan)
where
    T: Real + DeviceRepr + ValidAsZeroBits,
{
    gpu.launch(volume, p).expect("launches");
    gpu.sync().expect("runs");
    let got: Vec<T> = gpu.read_output(volume).expect("reads back");
    if let Some((i, g, w, n)) = reference::first_difference(&got, want) {
        panic!(
            "{} {}: {n} cells differ from the CPU, first element {i}: {g:#x} vs {w:#x}",
            volume.case.name(),
            label(p)
        );
    }
    gpu.check(volume)
        .unwrap_or_else(|e| panic!("{} {}: {e}", volume.case.name(), label(p)));
}

fn every_variant_on<T>(gpu: &Gpu, case: Case)
where
    T: Real + DeviceRepr + ValidAsZeroBits,
{
    let volume = gpu.volume(case).expect("a volume");
    let want = reference::sweep(&reference::input::<T>(case.dims), case.dims, case.repeats);
    let untuned = run_untuned(gpu, &volume).expect("the untuned plan runs");
    let got: Vec<T> = gpu.read_output(&volume).expect("reads back");
    assert_eq!(
        reference::first_difference(&got, &want),
        None,
        "{}: untuned {}",
        case.name(),
        label(&untuned)
    );
    gpu.check(&volume)
        .expect("the untuned output checks against itself");
    // Blocks that do not divide the volume, thin ones and deep ones, in every variant;
    // then every plan of the bench's sweep, checked on the GPU against untuned.
    let blocks = [
        [32, 4, 2],
        [8, 3, 5],
        [64, 2, 1],
        [16, 16, 4],
        [1, 1, 1],
        [128, 1, 8],
    ];
    for variant in [Variant::Plain, Variant::Staged, Variant::Streaming] {
        for block in blocks {
            let block = if variant == Variant::Streaming {
                [block[0], block[1], 1]
            } else {
                block
            };
            equals_cpu(gpu, &volume, &want, &plan(variant, block, "test"));
        }
    }
    for p in sweep(case.dims) {
        run_checked(gpu, &volume, &p).unwrap_or_else(|e| panic!("{}: {e}", case.name()));
    }
    let work = case.workload();
    let profile = memtune::core::default::builtin();
    for c in work.candidates(&profile).expect("candidates") {
        equals_cpu(gpu, &volume, &want, &c.plan);
    }
}

#[test]
fn every_variant_equals_the_cpu_reference_on_odd_volumes() {
    let Some(gpu) = gpu0_or_skip(
        "every_variant_equals_the_cpu_reference_on_odd_volumes",
        Gpu::new,
    ) else {
        return;
    };
    for (dims, repeats) in [([67, 45, 29], 1), ([33, 7, 19], 3), ([5, 130, 3], 1)] {
        let f32_case = Case {
            dims,
            dtype: Dtype::F32,
            repeats,
        };
        every_variant_on::<f32>(&gpu, f32_case);
        every_variant_on::<f64>(
            &gpu,
            Case {
                dtype: Dtype::F64,
                ..f32_case
            },
        );
    }
}

#[test]
fn a_stored_decision_times_nothing() {
    let Some(gpu) = gpu0_or_skip("a_stored_decision_times_nothing", Gpu::new) else {
        return;
    };
    let case = Case {
        dims: [160, 96, 80],
        dtype: Dtype::F32,
        repeats: 1,
    };
    let volume = gpu.volume(case).expect("a volume");
    run_untuned(&gpu, &volume).expect("runs");
    gpu.check(&volume).expect("checks");
    let uuid = gpu.identity().uuid.clone();
    let tunes = "tunes, every launch giving the untuned output";
    assert_stored_decision_times_nothing(&uuid, tunes, |tuner| tune_checked(tuner, &gpu, &volume));
}
