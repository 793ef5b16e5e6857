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

#[test]
fn the_untimed_plan_checks_read_the_paired_ratios() {
    let calls = RefCell::new(Vec::new());
    let mut r = two_rounds(2, vec![], |c| fake(&calls, c)).unwrap();
    assert!(!targets::plan_check(std::slice::from_ref(&r)).met);
    let pairs = |ratio| autotuned::Paired {
        first: "1".into(),
        second: "2".into(),
        first_ms: vec![2.0; 6],
        second_ms: vec![2.0; 6],
        ratio,
    };
    // Back to back the plan ran as fast as untuned: the drift between rounds is no miss.
    r.paired_plan_untuned = Some(pairs(0.99));
    assert!(targets::plan_check(std::slice::from_ref(&r)).met);
    assert_eq!(targets::flat("sampling", &r)["untuned_over_plan"], 0.99);
    r.paired_plan_best = Some(pairs(1.08));
    let c = sweep::check_within_best(std::slice::from_ref(&r));
    assert!(!c.met && c.misses[0].contains("8.0% slower"), "{c:?}");
    r.paired_plan_best = Some(pairs(1.01));
    assert!(sweep::check_within_best(std::slice::from_ref(&r)).met);
}

#[test]
fn a_paired_comparison_sees_through_a_drifting_clock() {
    // Config 1 takes 1.0 and config 2 takes 1.1 times a clock that slows 10% a launch:
    // each one's own runs spread 2x, the per-pair ratios stay near 1/1.1.
    let n = RefCell::new(0u32);
    let order = RefCell::new(Vec::new());
    let time = |c: &u32, runs: usize, warmup: bool| {
        assert_eq!((runs, warmup), (1, false));
        *n.borrow_mut() += 1;
        order.borrow_mut().push(*c);
        let clock = 1.0 + 0.1 * f64::from(*n.borrow());
        let base = if *c == 1 { 1.0 } else { 1.1 };
        Ok((
            "sum".to_string(),
            Timing {
                runs_ms: vec![base * clock],
            },
        ))
    };
    let p = rounds::paired((&1u32, "one".into()), (&2u32, "two".into()), time).unwrap();
    // Launches of a few milliseconds: the most pairs.
    assert_eq!(p.first_ms.len(), 24);
    assert_eq!(p.second_ms.len(), 24);
    // Every other pair in reverse order.
    assert_eq!(&order.borrow()[..4], &[1, 2, 2, 1]);
    assert!((p.ratio - 1.0 / 1.1).abs() < 0.1 / 1.1, "{}", p.ratio);
    let slowest = p.first_ms.iter().copied().fold(0.0, f64::max);
    assert!(
        slowest > 2.0,
        "the drift spreads config 1's own runs: {slowest}"
    );
}

#[test]
fn long_launches_are_paired_fewer_times() {
    // 50 ms launches: six pairs take 600 ms, past the comparison's budget.
    let time = |c: &u32, _: usize, _: bool| {
        Ok((
            "sum".to_string(),
            Timing {
                runs_ms: vec![if *c == 1 { 50.0 } else { 55.0 }],
            },
        ))
    };
    let p = rounds::paired((&1u32, "one".into()), (&2u32, "two".into()), time).unwrap();
    assert_eq!((p.first_ms.len(), p.second_ms.len()), (6, 6));
    assert!((p.ratio - 50.0 / 55.0).abs() < 1e-9, "{}", p.ratio);
    // 10 ms launches: pairs until 400 ms are spent (20 pairs of 20 ms).
    let time = |_: &u32, _: usize, _: bool| {
        Ok((
            "sum".to_string(),
            Timing {
                runs_ms: vec![10.0],
            },
        ))
    };
    let p = rounds::paired((&1u32, "one".into()), (&2u32, "two".into()), time).unwrap();
    assert_eq!(p.first_ms.len(), 20);
}

#[test]
fn a_failing_pair_launch_fails_the_comparison() {
    let calls = RefCell::new(Vec::new());
    let r = rounds::paired((&1u32, "one".into()), (&9u32, "nine".into()), |c, _, _| {
        fake(&calls, c)
    });
    assert!(r.is_err());
}

#[test]
fn the_autotune_checks_read_the_paired_ratios() {
    let calls = RefCell::new(Vec::new());
    let mut r = two_rounds(2, vec![], |c| fake(&calls, c)).unwrap();
    // Rounds: untuned 1 and 5 ms, the pick 2 and 6 ms: untuned/autotuned 0.75 by medians.
    let pick = |paired_untuned| autotuned::Autotuned {
        config: "2".into(),
        median_ms: r.tuned.median_ms,
        spread_ms: 0.0,
        candidates: vec!["1".into(), "2".into()],
        candidates_timed: 2,
        tuning_ms: 1.0,
        launches: 4,
        cost_in_untuned: Some(4.0),
        why: String::new(),
        second_run_timed: false,
        trials: vec![],
        paired_untuned,
        paired_best: None,
    };
    r.autotuned = Some(pick(None));
    let by_medians = targets::autotune_checks(std::slice::from_ref(&r));
    assert!(!by_medians[1].met, "{:?}", by_medians[1]);
    let pairs = autotuned::Paired {
        first: "1".into(),
        second: "2".into(),
        first_ms: vec![2.0; 6],
        second_ms: vec![2.0; 6],
        ratio: 1.0,
    };
    r.autotuned = Some(pick(Some(pairs)));
    let by_pairs = targets::autotune_checks(std::slice::from_ref(&r));
    assert!(by_pairs[1].met, "{:?}", by_pairs[1]);
    assert_eq!(targets::flat("sampling", &r)["untuned_over_autotuned"], 1.0);
}

#[test]
fn case_filter_keeps_names_containing_the_text_or_not_containing_it_after_a_bang() {
    let heavy = "table 4 GiB (pinned), 16777216 keys pinned, work 256";
    let light = "table 4 GiB (pinned), 16777216 keys pinned";
    assert!(case_wanted(None, light));
    assert!(case_wanted(Some("work 256"), heavy));
    assert!(!case_wanted(Some("work 256"), light));
    assert!(case_wanted(Some("!work 256"), light));
    assert!(!case_wanted(Some("!work 256"), heavy));
}

#[test]
fn a_partial_document_carries_the_header_and_says_it_is_incomplete() {
    let report = Report {
        workload: "grouping",
        rounds: 1,
        rows: Vec::new(),
        errors: vec!["a case failed".into()],
        checks: Vec::new(),
    };
    let header = json!({"command": "cargo tune bench grouping", "runs": RUNS});
    let partial = doc(&header, &report, false);
    assert_eq!(partial["complete"], json!(false));
    assert_eq!(partial["command"], header["command"]);
    assert_eq!(partial["errors"][0], json!("a case failed"));
    assert_eq!(doc(&header, &report, true)["complete"], json!(true));
}

#[test]
fn the_pinned_gain_check_reads_rows_in_its_range_by_their_medians() {
    let calls = RefCell::new(Vec::new());
    let base = two_rounds(2, vec![], |c| fake(&calls, c)).unwrap();
    let pinned = |gib: u64, pick_ms: f64| {
        let mut r = base.clone();
        r.case = format!("pinned {gib} GiB, 16 reads");
        r.size_bytes = gib << 30;
        r.untuned.median_ms = 30.0;
        r.autotuned = Some(autotuned::Autotuned {
            config: "scoped".into(),
            median_ms: pick_ms,
            spread_ms: 0.0,
            candidates: vec!["1 pass".into(), "scoped".into()],
            candidates_timed: 2,
            tuning_ms: 1.0,
            launches: 4,
            cost_in_untuned: Some(4.0),
            why: String::new(),
            second_run_timed: false,
            trials: vec![],
            paired_untuned: None,
            paired_best: None,
        });
        r
    };
    // 10x at 2 GiB meets 9x; 1 GiB and 24 GiB lie outside the range and do not count.
    let rows = [pinned(1, 20.0), pinned(2, 3.0), pinned(24, 20.0)];
    let c = targets::gain_check("sampling", &rows).unwrap();
    assert!(c.met, "{c:?}");
    // 7.5x misses sampling's 9x but meets grouping's 6x.
    let rows = [pinned(2, 4.0)];
    let c = targets::gain_check("sampling", &rows).unwrap();
    assert!(!c.met && c.misses.len() == 1, "{c:?}");
    assert!(targets::gain_check("grouping", &rows).unwrap().met);
    // No pinned row in range, or no such target: no check.
    assert!(targets::gain_check("sampling", &[pinned(1, 3.0)]).is_none());
    assert!(targets::gain_check("stencil", &rows).is_none());
    let mut device = pinned(4, 20.0);
    device.case = "device 4 GiB, 1024 reads".into();
    assert!(targets::gain_check("sampling", &[device]).is_none());
}
