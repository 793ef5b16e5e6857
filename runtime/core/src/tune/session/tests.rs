use super::choice::*;
use super::*;

/// A fake clock: candidate i takes `ms[i]`, plus `noise(i, call)`.
fn fixed(ms: &[f64]) -> impl FnMut(usize) -> Result<f64, String> + '_ {
    move |i| Ok(ms[i])
}

#[test]
fn the_fastest_wins_and_the_cost_stays_within_budget() {
    let out = run(5, &Budget::default(), fixed(&[2.0, 1.0, 1.2, 0.8, 3.0]));
    assert_eq!(out.chosen, 3, "{out:?}");
    assert!(!out.all_failed);
    let cost = out.cost_in_untuned.expect("untuned ran");
    assert!(cost <= 20.0, "cost {cost}");
    assert!(out.why.contains("faster than untuned"), "{}", out.why);
    // The 3 ms candidate's warm-up is over 2.5x the fastest: it never runs timed.
    assert_eq!(out.stats[4].runs_ms.len(), 0);
    assert!(out.stats[4]
        .dropped
        .as_deref()
        .is_some_and(|d| d.contains("warm-up")));
    // The 2 ms untuned kernel is never dropped by its warm-up; at 1.5x the leader after
    // one run, it is.
    let out = run(3, &Budget::default(), fixed(&[2.6, 1.0, 1.1]));
    assert_eq!(out.stats[0].runs_ms.len(), 1, "{:?}", out.stats[0]);
    assert!(out.stats[0].dropped.is_some());
}

#[test]
fn equal_candidates_cost_at_most_twenty_untuned_launches() {
    let out = run(5, &Budget::default(), fixed(&[1.0; 5]));
    assert_eq!(out.chosen, 0, "ties keep the untuned plan: {}", out.why);
    assert!(out.tuning_ms <= 20.0, "{}", out.tuning_ms);
    assert!(out.launches <= 20, "{}", out.launches);
}

#[test]
fn a_slower_plan_never_beats_untuned() {
    // The model's pick is 2.6x slower than untuned: untuned must be chosen.
    let out = run(3, &Budget::default(), fixed(&[1.0, 2.6, 1.8]));
    assert_eq!(out.chosen, 0);
    assert!(out.cost_in_untuned.unwrap() <= 20.0);
}

#[test]
fn noise_within_the_gap_keeps_the_safer_candidate() {
    // Candidate 1 is 0.4% faster than untuned: within the noise, untuned is kept.
    let out = run(2, &Budget::default(), fixed(&[1.0, 0.996]));
    assert_eq!(out.chosen, 0, "{}", out.why);
    assert!(out.why.contains("within the noise"), "{}", out.why);
    // 5% faster is a real gain.
    let out = run(2, &Budget::default(), fixed(&[1.0, 0.95]));
    assert_eq!(out.chosen, 1, "{}", out.why);
}

#[test]
fn overlapping_spreads_under_two_percent_are_a_tie() {
    let mut calls = [0usize; 3];
    let out = run(3, &Budget::default(), |i| {
        calls[i] += 1;
        // Untuned is slow; the model alternates 1.00/1.04, the other 0.985/1.025 out of
        // step with it: medians 1.5% apart, spreads overlapping.
        let (base, phase) = [(2.0, 0), (1.0, 0), (0.985, 1)][i];
        Ok(base
            + if (calls[i] + phase) % 2 == 0 {
                0.04
            } else {
                0.0
            })
    });
    assert_eq!(out.chosen, 1, "{}", out.why);
}

#[test]
fn failed_launches_are_dropped_with_their_error() {
    let out = run(3, &Budget::default(), |i| match i {
        1 => Err("CUDA_ERROR_INVALID_VALUE".into()),
        _ => Ok(if i == 0 { 1.0 } else { 0.5 }),
    });
    assert_eq!(out.chosen, 2);
    assert_eq!(
        out.stats[1].error.as_deref(),
        Some("CUDA_ERROR_INVALID_VALUE")
    );
    assert!(out.stats[1].runs_ms.is_empty());
}

#[test]
fn every_failure_falls_back_to_untuned() {
    let out = run(3, &Budget::default(), |_| Err("boom".to_string()));
    assert!(out.all_failed);
    assert_eq!(out.chosen, 0);
    assert!(out.why.contains("every candidate failed"));
    // Each was tried once and never again.
    assert_eq!(out.launches, 3);
}

#[test]
fn a_failure_after_warm_up_drops_the_candidate() {
    let mut calls = 0;
    let out = run(2, &Budget::default(), |i| {
        if i == 1 {
            calls += 1;
            if calls == 2 {
                return Err("illegal address".into());
            }
            return Ok(0.1);
        }
        Ok(1.0)
    });
    assert_eq!(out.chosen, 0, "{}", out.why);
    assert!(out.stats[1].error.is_some());
}

#[test]
fn non_finite_times_are_failures() {
    let out = run(2, &Budget::default(), |i| {
        Ok(if i == 0 { 1.0 } else { f64::NAN })
    });
    assert_eq!(out.chosen, 0);
    assert!(out.stats[1].error.as_deref().unwrap_or("").contains("NaN"));
}

#[test]
fn a_disturbed_run_does_not_flip_the_winner() {
    let mut calls = 0;
    let out = run(2, &Budget::default(), |i| {
        calls += 1;
        // One 5x disturbance on the faster candidate's second timed run.
        Ok(match (i, calls) {
            (1, 6) => 2.5,
            (0, _) => 1.0,
            _ => 0.5,
        })
    });
    assert_eq!(out.chosen, 1, "{out:?}");
}

#[test]
fn slower_candidates_within_the_drop_ratios_stay_within_budget() {
    for others in [1.4, 1.09, 1.0, 0.9] {
        let ms = [1.0, others, others, others, others];
        let out = run(5, &Budget::default(), fixed(&ms));
        let cost = out.cost_in_untuned.unwrap();
        assert!(cost <= 20.0 + 1e-9, "others {others}: cost {cost}");
    }
}

/// Candidates timed by a table; `refine` appends `extra` once.
struct Refining {
    ms: Vec<f64>,
    extra: Option<f64>,
    asked: usize,
}

impl Trials for &mut Refining {
    fn time(&mut self, i: usize) -> Result<f64, String> {
        Ok(self.ms[i])
    }
    fn refine(&mut self, stats: &[Stats]) -> bool {
        self.asked += 1;
        assert_eq!(stats.len(), self.ms.len());
        assert!(stats
            .iter()
            .all(|s| s.runs_ms.len() >= 2 || s.dropped.is_some()));
        match self.extra.take() {
            Some(ms) => {
                self.ms.push(ms);
                true
            }
            None => false,
        }
    }
}

#[test]
fn a_refined_candidate_is_warmed_sampled_and_can_win() {
    let mut t = Refining {
        ms: vec![2.0, 1.0, 1.1, 1.3],
        extra: Some(0.9),
        asked: 0,
    };
    let out = run_trials(4, &Budget::default(), &mut t);
    assert!(
        t.asked >= 1,
        "refine is asked once the first four have their samples"
    );
    assert_eq!(out.stats.len(), 5);
    assert_eq!(out.chosen, 4, "{}", out.why);
    assert!(out.stats[4].warmup_ms.is_some());
    assert!(out.stats[4].runs_ms.len() >= 2, "{:?}", out.stats[4]);
    assert!(out.cost_in_untuned.unwrap() <= 20.0);
}

#[test]
fn no_refinement_without_budget_room() {
    // Every candidate as slow as untuned: 4 warm-ups and 2 rounds (12) leave room for a
    // fifth (3 x 1.25 = 3.75 more); with a budget of 14 they do not.
    let budget = Budget {
        max_cost: 14.0,
        ..Budget::default()
    };
    let mut t = Refining {
        ms: vec![1.0; 4],
        extra: Some(0.5),
        asked: 0,
    };
    let out = run_trials(4, &budget, &mut t);
    assert_eq!(t.asked, 0);
    assert_eq!(out.stats.len(), 4);
    let mut t = Refining {
        ms: vec![1.0; 4],
        extra: Some(0.5),
        asked: 0,
    };
    let out = run_trials(4, &Budget::default(), &mut t);
    assert!(t.asked >= 1);
    assert_eq!(out.chosen, 4, "{}", out.why);
    assert!(
        out.cost_in_untuned.unwrap() <= 20.0,
        "{:?}",
        out.cost_in_untuned
    );
}

/// Candidates `0..n` by their pass counts `passes`, fewest first.
fn fewest_passes_first(passes: &[u32], n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| passes[i]);
    order
}

/// The pass-count rule on each candidate's latest launch, as the autotuner asks it.
fn ruled_out_by_passes(passes: &[u32], i: usize, stats: &[Stats]) -> Option<String> {
    let timed: Vec<(u32, f64)> = stats
        .iter()
        .enumerate()
        .filter_map(|(j, s)| Some((passes[j], s.latest_ms()?)))
        .collect();
    let fastest = timed.iter().map(|t| t.1).reduce(f64::min)?;
    crate::tune::pass_counts::ruled_out_passes(passes[i], &timed, fastest)
}

/// Candidates whose time is their pass count times one pass's (a kernel whose passes each
/// repeat all its work), launched in the order given, with a rule that rules out by passes.
struct Costly {
    passes: Vec<u32>,
    launched: Vec<usize>,
}

impl Trials for &mut Costly {
    fn time(&mut self, i: usize) -> Result<f64, String> {
        self.launched.push(i);
        Ok(f64::from(self.passes[i]))
    }
    fn first_order(&self, n: usize) -> Vec<usize> {
        fewest_passes_first(&self.passes, n)
    }
    fn ruled_out(&self, i: usize, stats: &[Stats]) -> Option<String> {
        ruled_out_by_passes(&self.passes, i, stats)
    }
}

#[test]
fn costly_candidates_are_not_launched_once_the_fewer_passes_rule_them_out() {
    // Untuned, the model's 12 passes, its neighbours 6 and 3: launched by passes, the
    // 3-pass candidate shows a pass costing one untuned run, which rules out 6 and 12.
    let mut t = Costly {
        passes: vec![1, 12, 6, 3],
        launched: vec![],
    };
    let out = run_trials(4, &Budget::default(), &mut t);
    assert_eq!(out.chosen, 0, "{}", out.why);
    assert!(
        !t.launched.contains(&1) && !t.launched.contains(&2),
        "{:?}",
        t.launched
    );
    for i in [1, 2] {
        let why = out.stats[i].dropped.as_deref().unwrap_or("");
        assert!(why.starts_with("not launched"), "{why}");
    }
    let cost = out.cost_in_untuned.unwrap_or(f64::INFINITY);
    // Warm-ups 1 + 3, the confirming launch of each, a second run of each.
    assert!(cost <= 13.0, "cost {cost}");
    // Launched in the order given, the same session pays for every candidate.
    let order_kept = run_trials(4, &Budget::default(), |i: usize| {
        Ok(f64::from([1, 12, 6, 3][i]))
    });
    assert!(order_kept.cost_in_untuned.unwrap_or(0.0) > 20.0);
}

#[test]
fn an_order_that_is_not_a_permutation_is_ignored() {
    struct Odd(Vec<usize>);
    impl Trials for &mut Odd {
        fn time(&mut self, i: usize) -> Result<f64, String> {
            self.0.push(i);
            Ok(1.0)
        }
        fn first_order(&self, _n: usize) -> Vec<usize> {
            vec![2, 2, 7]
        }
    }
    let mut t = Odd(vec![]);
    run_trials(3, &Budget::default(), &mut t);
    assert_eq!(&t.0[..3], &[0, 1, 2]);
}

#[test]
fn a_disturbed_warm_up_rules_nothing_out_once_relaunched() {
    // Candidate 1 (two passes) warms up in a disturbance, 2.2x one pass; relaunched back to
    // back, both run as fast as untuned, so the 3- and 6-pass candidates still run.
    struct Disturbed {
        passes: Vec<u32>,
        launched: Vec<usize>,
    }
    impl Trials for &mut Disturbed {
        fn time(&mut self, i: usize) -> Result<f64, String> {
            self.launched.push(i);
            let first_of_two = i == 1 && !self.launched[..self.launched.len() - 1].contains(&1);
            Ok(if first_of_two { 2.2 } else { 1.0 })
        }
        fn first_order(&self, n: usize) -> Vec<usize> {
            fewest_passes_first(&self.passes, n)
        }
        fn ruled_out(&self, i: usize, stats: &[Stats]) -> Option<String> {
            ruled_out_by_passes(&self.passes, i, stats)
        }
    }
    let mut t = Disturbed {
        passes: vec![1, 2, 3, 6],
        launched: vec![],
    };
    let out = run_trials(4, &Budget::default(), &mut t);
    assert!(
        t.launched.contains(&2) && t.launched.contains(&3),
        "{:?}",
        t.launched
    );
    assert!(out.stats.iter().all(|s| s
        .dropped
        .as_deref()
        .is_none_or(|d| !d.starts_with("not launched"))));
}

#[test]
fn the_untuned_kernel_stays_within_the_wander_its_runs_show() {
    // Untuned runs wander 5% (3.0 to 3.15), the other candidate is 4% faster: kept.
    let out = run(2, &Budget::default(), |i: usize| {
        Ok(if i == 0 { 3.06 } else { 2.97 })
    });
    assert_eq!(out.chosen, 1, "steady runs: the 3% gain is taken");
    let mut k = 0;
    let out = run(2, &Budget::default(), move |i: usize| {
        if i > 0 {
            return Ok(3.02);
        }
        k += 1;
        Ok([3.0, 3.15][k % 2])
    });
    assert_eq!(out.chosen, 0, "{}", out.why);
}

#[test]
fn a_gain_paired_round_by_round_trades_the_untuned_kernel_despite_drift() {
    // Both drift together 4% from round to round; the pick is 5% faster in each round.
    let mut calls = [0usize; 2];
    let out = run(2, &Budget::default(), |i: usize| {
        calls[i] += 1;
        let drift = if calls[i] % 2 == 0 { 1.04 } else { 1.0 };
        Ok(if i == 0 { 3.2 } else { 3.05 } * drift)
    });
    assert_eq!(out.chosen, 1, "{}", out.why);
    assert!(
        out.stats[0].rounds.iter().all(|&r| r >= 1),
        "{:?}",
        out.stats[0]
    );
    assert_eq!(out.stats[0].rounds.len(), out.stats[0].runs_ms.len());
}

#[test]
fn a_steady_paired_gain_over_half_a_percent_trades_the_untuned_kernel() {
    // 1.6% faster in every round, the rounds agreeing to 0.1%: a real gain, taken.
    let out = run(2, &Budget::default(), |i: usize| {
        Ok(if i == 0 { 3.05 } else { 3.0 })
    });
    assert_eq!(out.chosen, 1, "{}", out.why);
    // Recorded on an H100: a 256 MiB zero-copy grouping table, one pass against 8 copy
    // passes of 32 MiB, three rounds each (the pick 1.05-1.12% faster in every round).
    let (untuned, pick) = ([94.549, 94.687, 94.614], [93.563, 93.642, 93.585]);
    let mut k = [0usize; 2];
    let out = run(2, &Budget::default(), |i: usize| {
        let runs = if i == 0 { &untuned } else { &pick };
        let ms = runs[k[i].min(2)];
        k[i] += 1;
        Ok(ms)
    });
    assert_eq!(out.chosen, 1, "{}", out.why);
}

#[test]
fn a_paired_gain_within_the_rounds_spread_keeps_the_untuned_kernel() {
    // The pick is 0-3% faster from round to round: a lower median of 1% at most, rounds
    // 3% apart, however many rounds run.
    let mut k = 0;
    let out = run(2, &Budget::default(), move |i: usize| {
        if i == 0 {
            return Ok(3.0);
        }
        k += 1;
        Ok(3.0 / [1.0, 1.0, 1.03, 1.0, 1.01, 1.0, 1.03, 1.0][k % 8])
    });
    assert_eq!(out.chosen, 0, "{} {:?}", out.why, out.stats);
}

#[test]
fn a_paired_gain_under_half_a_percent_keeps_the_untuned_kernel() {
    let out = run(2, &Budget::default(), |i: usize| {
        Ok(if i == 0 { 3.012 } else { 3.0 })
    });
    assert_eq!(out.chosen, 0, "{}", out.why);
}

#[test]
fn one_disturbed_round_does_not_make_a_paired_gain() {
    // Untuned is disturbed 10% in one of its rounds; otherwise equal.
    let mut k = 0;
    let out = run(2, &Budget::default(), move |i: usize| {
        if i > 0 {
            return Ok(3.0);
        }
        k += 1;
        Ok(if k == 2 { 3.3 } else { 3.0 })
    });
    assert_eq!(out.chosen, 0, "{}", out.why);
}

#[test]
fn paired_gain_reads_only_shared_rounds() {
    let fast = Stats {
        runs_ms: vec![1.0, 1.0, 1.0],
        rounds: vec![0, 2, 3],
        ..Stats::default()
    };
    let safe = Stats {
        runs_ms: vec![1.5, 1.1, 1.2],
        rounds: vec![1, 2, 3],
        ..Stats::default()
    };
    let g = paired_gain(&fast, &safe).expect("two shared rounds");
    assert!((g.gain - 0.1).abs() < 1e-9, "{g:?}");
    assert!((g.spread - 0.1).abs() < 1e-9, "{g:?}");
    let lone = Stats {
        runs_ms: vec![1.0],
        rounds: vec![2],
        ..Stats::default()
    };
    assert_eq!(paired_gain(&lone, &safe), None);
}

/// Each candidate's launches as an H100 timed them (zero-copy sampling over 512 MiB, 16
/// reads a thread: 1 pass, 2, 24 and 4 passes, then a refinement of 3), warm-up first;
/// past its record a candidate repeats its last time.
struct Recorded {
    launches: Vec<Vec<f64>>,
    next: Vec<usize>,
    refined: bool,
}

impl Trials for &mut Recorded {
    fn time(&mut self, i: usize) -> Result<f64, String> {
        let k = self.next[i].min(self.launches[i].len() - 1);
        self.next[i] += 1;
        Ok(self.launches[i][k])
    }
    fn refine(&mut self, _stats: &[Stats]) -> bool {
        !std::mem::replace(&mut self.refined, true)
    }
    fn first_order(&self, _n: usize) -> Vec<usize> {
        vec![0, 1, 3, 2]
    }
}

#[test]
fn a_run_slower_than_its_slowest_yet_keeps_the_cost_within_budget() {
    let mut r = Recorded {
        launches: vec![
            vec![3.2648, 3.2981, 3.2856, 3.1693],
            vec![3.0708, 3.0381, 3.0273, 2.9872, 3.1232],
            vec![3.1591, 3.2270, 3.1737, 3.1258],
            vec![3.0213, 3.0514, 3.2294, 3.0704, 3.1476],
            vec![3.0436, 3.1191, 3.0924],
        ],
        next: vec![0; 5],
        refined: false,
    };
    let out = run_trials(4, &Budget::default(), &mut r);
    let cost = out.cost_in_untuned.unwrap();
    assert!(cost <= 20.0, "cost {cost}: {:?}", out.stats);
}

#[test]
fn an_untuned_kernel_beaten_round_by_round_is_traded_for_a_later_pick() {
    // Recorded on an H100: a 256 MiB zero-copy grouping table. The refinement (candidate
    // 4) is fastest but shares one round with one pass; 8 copy passes of 32 MiB beat one
    // pass by 2.9-5.6% in each of three rounds.
    let stats = |runs: &[f64], rounds: &[u32]| Stats {
        runs_ms: runs.to_vec(),
        rounds: rounds.to_vec(),
        ..Stats::default()
    };
    let all = vec![
        stats(&[98.57, 96.40, 95.60], &[1, 2, 3]),
        stats(&[93.31, 93.01, 92.95], &[1, 2, 3]),
        stats(&[93.12, 93.18, 93.14], &[1, 2, 3]),
        stats(&[95.01, 95.03, 93.97, 94.00], &[1, 2, 3, 4]),
        stats(&[93.03, 92.88], &[3, 4]),
    ];
    // The model's 8 passes are within 0.1% of the refinement: the safer of the two.
    let (chosen, why, _) = choose(&all);
    assert_eq!(chosen, 1, "{why}");
    // Without the others' rounds, one pass's 3% wander covers the 2.9% gap: kept.
    let (chosen, why, _) = choose(&[all[0].clone(), all[4].clone()]);
    assert_eq!(chosen, 0, "{why}");
}

/// Runs and their rounds as a candidate's stats.
fn in_rounds(runs: &[f64]) -> Stats {
    Stats {
        runs_ms: runs.to_vec(),
        rounds: (1..=runs.len() as u32).collect(),
        ..Stats::default()
    }
}

#[test]
fn a_tie_between_plans_separated_round_by_round_goes_to_the_faster() {
    let model = [0.0600, 0.0624, 0.0612, 0.0636];
    let steady: Vec<f64> = model.iter().map(|m| m / 1.015).collect();
    let all = vec![in_rounds(&[0.09; 4]), in_rounds(&model), in_rounds(&steady)];
    assert!(tie(&all[2], &all[1]), "by p20 and p80 alone the two tie");
    let (chosen, why, _) = choose(&all);
    assert_eq!(chosen, 2, "1.5% faster in every shared round: {why}");
}

#[test]
fn a_tie_between_plans_the_rounds_do_not_separate_keeps_the_safer() {
    // 1.6% apart by p20, and 4-5% faster in two rounds, 4-5% slower in the two others.
    let model = [0.0610, 0.0620, 0.0630, 0.0640];
    let wandering = [0.0640, 0.0650, 0.0605, 0.0610];
    let all = vec![
        in_rounds(&[0.09; 4]),
        in_rounds(&model),
        in_rounds(&wandering),
    ];
    assert!(tie(&all[2], &all[1]), "by p20 and p80 alone the two tie");
    let (chosen, why, _) = choose(&all);
    assert_eq!(chosen, 1, "{why}");
}

#[test]
fn two_slow_runs_of_a_candidate_do_not_separate_the_leader_from_it() {
    // A streaming 13-point stencil on an H100: the leader's rounds, and a refinement's
    // first two runs, both slower than any of the leader's.
    let leader = in_rounds(&[0.05933, 0.05984, 0.05958, 0.05805]);
    let late = Stats {
        runs_ms: vec![0.06070, 0.06227],
        rounds: vec![3, 4],
        ..Stats::default()
    };
    let mut all = vec![in_rounds(&[0.0860, 0.0862]), leader, late];
    all[0].dropped = Some("fastest run over 1.1x the leader's median".into());
    assert!(!separated(&all), "two runs are not yet its speed");
    all[2].record(0.0605, 5);
    assert!(
        separated(&all),
        "three runs all slower than the leader's p80"
    );
}
