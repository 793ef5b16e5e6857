use super::*;
use memtune_core::plan::{SamplingPlan, SamplingWorkload, StencilWorkload};
use memtune_core::MemoryKind;
use std::cell::Cell;

const UUID: &str = "GPU-00000000-0000-0000-0000-0000000000aa";

fn work() -> SamplingWorkload {
    SamplingWorkload {
        region_bytes: 1536 << 20,
        memory: MemoryKind::Device,
        reads_per_thread: 64,
    }
}

fn tuner(dir: &Path, mode: Mode) -> Autotuner {
    let store = DecisionStore::new(Some(dir.join("local")), Some(dir.join("project")));
    Autotuner::new(memtune_core::default::builtin(), UUID, store, mode)
}

/// A kernel whose time falls with passes up to 4, then rises: 4 passes is best.
fn kernel_ms(plan: &SamplingPlan) -> f64 {
    let p = f64::from(plan.passes);
    1.0 + (p - 4.0).abs() * 0.1 + if plan.passes == 1 { 1.0 } else { 0.0 }
}

#[test]
fn the_refinement_finds_a_pass_count_between_the_first_candidates() {
    // A kernel best at exactly 3 passes, off the first candidates' grid.
    let tmp = tempfile::tempdir().unwrap();
    let t = tuner(tmp.path(), Mode::Auto);
    let w = SamplingWorkload {
        region_bytes: 384 << 20,
        ..work()
    };
    let ms = |p: &SamplingPlan| 1.0 + (f64::from(p.passes).log2() - 3f64.log2()).abs() * 0.2;
    let first = t.tune_with("gather-3", &w, |p| Ok(ms(p))).unwrap();
    let d = first.decision.as_ref().unwrap();
    assert!(d.candidates.len() <= 5);
    let labels: Vec<_> = d
        .candidates
        .iter()
        .map(|c| (c.label.as_str(), c.origin))
        .collect();
    assert_eq!(first.plan.passes, 3, "{labels:?}");
    assert_eq!(
        d.candidates[d.chosen].origin,
        memtune_core::tune::Origin::Refined,
        "{labels:?}"
    );
    assert!(d.cost_in_untuned.unwrap() <= 20.0);
    // Stored and found again under the same key.
    let again = t
        .tune_with("gather-3", &w, |_| -> Result<f64, String> {
            panic!("a stored decision must not time anything")
        })
        .unwrap();
    assert_eq!(again.plan.passes, 3);
}

#[test]
fn first_use_times_then_stored_decisions_time_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tuner(tmp.path(), Mode::Auto);
    let launches = Cell::new(0);
    let first = t
        .tune_with("gather-v1", &work(), |p| {
            launches.set(launches.get() + 1);
            Ok(kernel_ms(p))
        })
        .unwrap();
    assert_eq!(first.source, PlanSource::Tuned);
    assert!(
        launches.get() > 0 && launches.get() <= 25,
        "{}",
        launches.get()
    );
    let d = first.decision.as_ref().unwrap();
    assert!(d.candidates.len() <= 5);
    let untuned_ms = d.candidates[0].median_ms.unwrap();
    let chosen_ms = d.candidates[d.chosen].median_ms.unwrap();
    assert!(chosen_ms <= untuned_ms, "{chosen_ms} > {untuned_ms}");
    assert!(d.cost_in_untuned.unwrap() <= 20.0);

    let again = t
        .tune_with("gather-v1", &work(), |_| -> Result<f64, String> {
            panic!("a stored decision must not time anything")
        })
        .unwrap();
    assert_eq!(again.source, PlanSource::Stored(StoreSource::Local));
    assert_eq!(again.plan, first.plan);
}

#[test]
fn a_plan_slower_than_untuned_is_never_chosen() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tuner(tmp.path(), Mode::Auto);
    // Every scoped plan is 2.6x slower than untuned (few reads per thread).
    let r = t
        .tune_with("short-kernel", &work(), |p| {
            Ok(if p.passes == 1 { 1.0 } else { 2.6 })
        })
        .unwrap();
    assert_eq!(r.plan.passes, 1, "{:?}", r.decision);
}

#[test]
fn modes_off_and_cached_time_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let never = |_: &SamplingPlan| -> Result<f64, String> { panic!("timed") };
    let off = tuner(tmp.path(), Mode::Off)
        .tune_with("k", &work(), never)
        .unwrap();
    assert_eq!(off.source, PlanSource::Model);
    let untimed = memtune_core::plan::sampling_untimed(&memtune_core::default::builtin(), &work());
    assert_eq!(off.plan.passes, untimed.unwrap().passes);
    let cached = tuner(tmp.path(), Mode::Cached)
        .tune_with("k", &work(), never)
        .unwrap();
    assert_eq!(cached.source, PlanSource::Model);
    assert!(
        tmp.path().join("local").read_dir().is_err(),
        "nothing stored"
    );
}

#[test]
fn always_retunes_and_replaces() {
    let tmp = tempfile::tempdir().unwrap();
    tuner(tmp.path(), Mode::Auto)
        .tune_with("k", &work(), |p| Ok(kernel_ms(p)))
        .unwrap();
    // The kernel changed: now one pass is fastest.
    let r = tuner(tmp.path(), Mode::Always)
        .tune_with("k", &work(), |p| Ok(if p.passes == 1 { 0.5 } else { 1.0 }))
        .unwrap();
    assert_eq!((r.source, r.plan.passes), (PlanSource::Tuned, 1));
    let stored = tuner(tmp.path(), Mode::Cached)
        .tune_with("k", &work(), |_| Err("no".to_string()))
        .unwrap();
    assert_eq!(stored.plan.passes, 1);
}

#[test]
fn all_failures_are_an_error_and_nothing_is_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tuner(tmp.path(), Mode::Auto);
    let e = t
        .tune_with(
            "k",
            &work(),
            |_| Err("CUDA_ERROR_LAUNCH_FAILED".to_string()),
        )
        .unwrap_err();
    assert!(matches!(e, AutotuneError::AllFailed { .. }), "{e}");
    assert!(e.to_string().contains("CUDA_ERROR_LAUNCH_FAILED"), "{e}");
    assert!(t.store().list().is_empty());
}

#[test]
fn a_corrupt_decision_is_ignored_with_a_warning_and_retuned() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tuner(tmp.path(), Mode::Auto);
    let key = t.key("k", &work()).unwrap();
    let dir = tmp.path().join("local");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(key.file_name()), b"{ not json").unwrap();
    let r = t.tune_with("k", &work(), |p| Ok(kernel_ms(p))).unwrap();
    // The corrupt file stays (first writer wins), the decision is used in this run.
    assert_eq!(r.source, PlanSource::Tuned);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("not a valid decision")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn keys_differ_by_kernel_workload_and_profile() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tuner(tmp.path(), Mode::Auto);
    let a = t.key("k", &work()).unwrap();
    assert_ne!(a, t.key("k2", &work()).unwrap());
    let mut bigger = work();
    bigger.region_bytes *= 2;
    assert_ne!(a, t.key("k", &bigger).unwrap());
    let mut other = memtune_core::default::builtin();
    other.digest = "sha256:other".into();
    let t2 = Autotuner::new(other, UUID, DecisionStore::default(), Mode::Auto);
    assert_ne!(
        a.profile_digest,
        t2.key("k", &work()).unwrap().profile_digest
    );
}

#[test]
fn stencil_candidates_are_timed_like_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tuner(tmp.path(), Mode::Auto);
    let w = StencilWorkload {
        dims: [320, 200, 96],
        dtype: memtune_core::plan::Dtype::F64,
        repeats: 1,
    };
    let r = t
        .tune_with("27-point", &w, |p| {
            Ok(if p.variant == memtune_core::plan::Variant::Plain {
                1.0
            } else {
                0.7
            })
        })
        .unwrap();
    assert_ne!(
        r.plan.variant,
        memtune_core::plan::Variant::Plain,
        "{:?}",
        r.decision
    );
}

#[test]
fn modes_parse_and_bad_ones_name_the_choices() {
    assert_eq!("off".parse::<Mode>().unwrap(), Mode::Off);
    assert_eq!("".parse::<Mode>().unwrap(), Mode::Auto);
    let e = "sometimes".parse::<Mode>().unwrap_err().to_string();
    assert!(
        e.contains("MEMTUNE_AUTOTUNE") && e.contains("always"),
        "{e}"
    );
}

#[test]
fn a_wrong_result_drops_the_candidate_and_stored_runs_report_no_launches() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tuner(tmp.path(), Mode::Auto);
    // The fastest candidate (4 passes) computes a wrong result: the check drops it.
    let r = t
        .tune_with("k", &work(), |p| {
            if p.passes == 4 {
                Err("wrong result: sum 7 != 9".to_string())
            } else {
                Ok(kernel_ms(p))
            }
        })
        .unwrap();
    assert_ne!(r.plan.passes, 4);
    assert!(r.launches_now > 0);
    let d = r.decision.as_ref().unwrap();
    assert!(d
        .candidates
        .iter()
        .any(|c| c.stats.error.as_deref() == Some("wrong result: sum 7 != 9")));
    let again = t
        .tune_with("k", &work(), |_| Err("not timed".to_string()))
        .unwrap();
    assert_eq!(again.launches_now, 0);
}

#[test]
fn the_timing_gate_setting_is_on_unless_off_and_a_typo_is_named() {
    assert_eq!(super::parse_timing_gate(None), Ok(true));
    assert_eq!(super::parse_timing_gate(Some(" on ")), Ok(true));
    assert_eq!(super::parse_timing_gate(Some("")), Ok(true));
    assert_eq!(super::parse_timing_gate(Some("off")), Ok(false));
    let e = super::parse_timing_gate(Some("of")).unwrap_err();
    assert!(
        e.contains("MEMTUNE_TIMING_GATE=\"of\"") && e.contains("on nor off"),
        "{e}"
    );
}
