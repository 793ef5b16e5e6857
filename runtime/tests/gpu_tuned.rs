//! `Tuned`: the lookup chain picks the profile, the planners plan, the kernels run; a
//! profile of another GPU model is refused. GPU only (`MEMTUNE_GPU_TESTS=1`).

use memtune::core::codec;
use memtune::{MemoryKind, Source, Tuned, TunedError};
use memtune_kernels::params::SamplingParams;
use memtune_kernels::reference::sampling;

#[test]
fn tuned_runs_with_the_looked_up_profile_and_refuses_another_model() {
    if !memtune_tests::gpu_tests_enabled(
        "tuned_runs_with_the_looked_up_profile_and_refuses_another_model",
    ) {
        return;
    }
    let dir = tempfile::TempDir::new().unwrap();
    // One test owns the environment of this test binary: no other test reads it.
    std::env::set_var("MEMTUNE_CACHE_DIR", dir.path().join("cache"));
    std::env::remove_var("MEMTUNE_PROFILE");

    // Nothing stored: the built-in default, with a warning that names `cargo tune`.
    let mut tuned = Tuned::open(0, Some(dir.path())).expect("open GPU 0");
    assert_eq!(*tuned.source(), Source::BuiltinDefault);
    assert!(tuned.warnings().iter().any(|w| w.contains("cargo tune")));
    let data: Vec<u32> = memtune_tests::xorshift64(0x9e37_79b9_7f4a_7c15)
        .take(16 << 20)
        .map(|x| x as u32)
        .collect();
    let (sum, plan) = tuned
        .sampling(&data, MemoryKind::Device, 16, 7)
        .expect("sampling");
    assert_eq!(plan.passes, 1, "the default profile claims no TLB boundary");
    let threads = tuned.runtime().sampling_threads();
    let params = SamplingParams::new(data.len() as u64, 16, 7).unwrap();
    assert_eq!(
        sum,
        sampling::pass_sum(&params, threads, |i| data[i as usize])
    );

    // MEMTUNE_PROFILE naming another model's profile: refused, naming the file and the fix.
    let mut other = memtune_tests::profile_of_model(&memtune_tests::uuid(9), "Some Other GPU", 7);
    let path = dir.path().join("other.json");
    std::fs::write(&path, codec::to_json(&mut other)).unwrap();
    std::env::set_var("MEMTUNE_PROFILE", &path);
    match Tuned::open(0, Some(dir.path())) {
        Err(e @ TunedError::AnotherDevice { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("other.json") && msg.contains("cargo tune"),
                "{msg}"
            );
        }
        Err(e) => panic!("expected AnotherDevice, got {e}"),
        Ok(_) => panic!("a profile of another model was accepted"),
    }
    std::env::remove_var("MEMTUNE_PROFILE");
}
