use super::rounds::row;
use super::*;
use memtune::launch::Timing;
use std::cell::RefCell;

/// A fake measurement: the config's number as the result, one run per call whose time
/// is the call's position in the sequence of calls.
fn fake(calls: &RefCell<Vec<u32>>, c: &u32) -> Result<(String, Timing), LaunchError> {
    let mut calls = calls.borrow_mut();
    calls.push(*c);
    if *c == 9 {
        return Err(LaunchError::BadSize("config 9 cannot run".into()));
    }
    let ms = calls.len() as f64;
    Ok(("sum".to_string(), Timing { runs_ms: vec![ms] }))
}

/// A row of untuned config 1, `tuned` and `sweep`, in two rounds.
fn two_rounds(
    tuned: u32,
    sweep: Vec<u32>,
    measure: impl FnMut(&u32) -> Result<(String, Timing), LaunchError>,
) -> Result<Row, LaunchError> {
    row(
        "case".into(),
        1,
        1,
        tuned,
        sweep,
        |c| c.to_string(),
        2,
        measure,
    )
}

#[test]
fn rounds_time_every_config_in_turn_and_pool_their_runs() {
    let calls = RefCell::new(Vec::new());
    let r = two_rounds(2, vec![1, 3, 9], |c| fake(&calls, c)).unwrap();
    // Each label once a round, the failing sweep entry only until it fails.
    assert_eq!(*calls.borrow(), vec![1, 2, 3, 9, 1, 2, 3]);
    assert_eq!(r.untuned.runs_ms, vec![1.0, 5.0]);
    assert_eq!(r.tuned.runs_ms, vec![2.0, 6.0]);
    assert_eq!(r.sweep.len(), 2, "{:?}", r.sweep);
    assert_eq!(r.skipped.len(), 1);
    assert!(r.results_match);
}

#[test]
fn a_configuration_is_timed_by_its_best_round() {
    // A disturbance slows the first round of config 2 and the second of config 1.
    let n = RefCell::new(0);
    let r = two_rounds(2, vec![], |c| {
        *n.borrow_mut() += 1;
        let runs_ms = match (*c, *n.borrow()) {
            (2, 2) => vec![7.0, 6.0, 5.0],
            (1, 3) => vec![4.0, 3.5, 3.4],
            _ => vec![3.0, 3.1, 2.9],
        };
        Ok(("sum".to_string(), Timing { runs_ms }))
    })
    .unwrap();
    assert_eq!(r.tuned.round_medians_ms, vec![6.0, 3.0]);
    assert_eq!(r.tuned.median_ms, 3.0);
    assert!((r.tuned.spread_ms - 0.2).abs() < 1e-12);
    assert_eq!(r.untuned.median_ms, 3.0);
    assert_eq!(r.tuned.runs_ms.len(), 6);
}

#[test]
fn a_result_that_changes_between_rounds_disagrees() {
    let n = RefCell::new(0);
    let r = two_rounds(2, vec![], |c| {
        *n.borrow_mut() += 1;
        let result = if *c == 2 && *n.borrow() > 2 { "b" } else { "a" };
        Ok((result.to_string(), Timing { runs_ms: vec![1.0] }))
    })
    .unwrap();
    assert_eq!(r.tuned.result, "a (then b)");
    assert!(!r.results_match);
}

#[test]
fn a_failing_tuned_version_fails_the_row() {
    let calls = RefCell::new(Vec::new());
    assert!(two_rounds(9, vec![], |c| fake(&calls, c)).is_err());
}

#[test]
fn sizes_pick_fits_the_memory_and_kind() {
    let notes = RefCell::new(Vec::new());
    let note = |m: &str| notes.borrow_mut().push(m.to_string());
    let given = [3 << 30, 12 << 30, 24 << 30];
    let pick = Pick {
        quick: false,
        sizes: Some(&given),
        memory: Some(MemoryKind::Pinned),
    };
    assert_eq!(
        pick.sizes(16 << 30, &note, vec![1]),
        vec![3 << 30, 12 << 30]
    );
    assert_eq!(notes.borrow().len(), 1, "{:?}", notes.borrow());
    assert!(notes.borrow()[0].contains("24 GiB"), "{:?}", notes.borrow());
    assert!(pick.wants(MemoryKind::Pinned) && !pick.wants(MemoryKind::Device));
    let default = Pick {
        quick: false,
        sizes: None,
        memory: None,
    };
    assert_eq!(default.sizes(1, &note, vec![7, 8]), vec![7, 8]);
    assert!(default.wants(MemoryKind::Device) && default.wants(MemoryKind::Pinned));
}

#[test]
fn chart_lines_keep_kernel_variants_apart() {
    let calls = RefCell::new(Vec::new());
    let mut rows = Vec::new();
    for case in [
        "device 96 MiB, 1024 reads",
        "device 384 MiB, 1024 reads",
        "device 96 MiB, 1024 reads, work 256",
        "device 96 MiB, 64 reads",
        "table 1 GiB (pinned), 16 keys pinned, work 256",
    ] {
        let mut r = two_rounds(2, vec![], |c| fake(&calls, c)).unwrap();
        r.case = case.to_string();
        rows.push(r);
    }
    let report = Report {
        workload: "sampling",
        rounds: 2,
        rows,
        errors: vec![],
        checks: vec![],
    };
    let chart = report::chart("GPU", &report);
    let lines: Vec<(&str, usize)> = chart
        .series
        .iter()
        .filter(|s| s.label.starts_with("untuned"))
        .map(|s| (s.label.as_str(), s.points.len()))
        .collect();
    assert_eq!(
        lines,
        vec![
            ("untuned, device 1024 reads", 2),
            ("untuned, device 1024 reads work 256", 1),
            ("untuned, device 64 reads", 1),
            ("untuned, pinned table work 256", 1),
        ]
    );
}

#[test]
fn the_untimed_plan_check_fails_a_plan_much_slower_than_untuned() {
    let calls = RefCell::new(Vec::new());
    // Untuned config 1 timed first (1 ms), the plan (config 2) after it (2 ms).
    let r = two_rounds(2, vec![], |c| fake(&calls, c)).unwrap();
    assert!(r.untuned.median_ms < r.tuned.median_ms);
    let c = targets::plan_check(std::slice::from_ref(&r));
    assert!(!c.met, "{c:?}");
    assert_eq!(c.misses.len(), 1);
    let mut fine = r.clone();
    fine.tuned.median_ms = fine.untuned.median_ms * 1.02;
    assert!(targets::plan_check(&[fine]).met);
}
