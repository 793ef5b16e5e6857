//! Tuning sessions replayed from launches an H100 recorded (`user-stencil`, a 27-point
//! stencil on a 200³ f32 volume, 0.07 ms a launch): each candidate's launches in order,
//! warm-up first, a candidate repeating its last time past its record; the refinement is
//! the fifth candidate. The GPU's clock rose through each 1.4 ms session, so every
//! candidate's first runs read slow; the untuned kernel (plain 32x4x2) must be weighed
//! against the refinement (plain 32x4x1, the best of the bench's 97 plans by 3-6%) in
//! shared rounds.

use memtune_core::tune::session::{quantile, run_trials, Budget, Stats, Trials};

struct Recorded {
    launches: Vec<Vec<f64>>,
    next: Vec<usize>,
    refined: bool,
}

impl Trials for &mut Recorded {
    fn time(&mut self, i: usize) -> Result<f64, String> {
        let l = &self.launches[i];
        let k = self.next[i].min(l.len() - 1);
        self.next[i] += 1;
        Ok(l[k])
    }
    fn refine(&mut self, _stats: &[Stats]) -> bool {
        !std::mem::replace(&mut self.refined, true)
    }
}

/// Three sessions that kept the untuned kernel on the wander rule, one shared round with
/// the refinement (`MEMTUNE_AUTOTUNE=always`,
/// `cargo tune decisions list --json`): untuned, streaming 64x4x1, staged 64x2x2, plain
/// 64x4x1, then the refinement.
const SESSIONS: [[&[f64]; 5]; 3] = [
    [
        &[0.07216, 0.07702, 0.07075, 0.07107],
        &[0.12278, 0.12013],
        &[0.22739, 0.23290],
        &[0.07485, 0.08208, 0.07421],
        &[0.07517, 0.06816, 0.06874],
    ],
    [
        &[0.07395, 0.07613, 0.07181, 0.07197],
        &[0.12189, 0.11837],
        &[0.22902, 0.22720],
        &[0.07510, 0.07520, 0.07632],
        &[0.06915, 0.06915, 0.07018],
    ],
    [
        &[0.07296, 0.07629, 0.07053, 0.07082],
        &[0.11958, 0.12496],
        &[0.22717, 0.23229],
        &[0.08205, 0.07968, 0.07472],
        &[0.06931, 0.06909, 0.07107],
    ],
];

#[test]
fn a_late_refinement_is_weighed_against_the_untuned_kernel_round_by_round() {
    // The third session's two shared rounds disagree (the refinement 2.5% faster, then
    // 0.4% slower): the untuned kernel stays.
    for (n, (session, chosen)) in SESSIONS.iter().zip([4, 4, 0]).enumerate() {
        let mut r = Recorded {
            launches: session.iter().map(|l| l.to_vec()).collect(),
            next: vec![0; 5],
            refined: false,
        };
        let out = run_trials(4, &Budget::default(), &mut r);
        let why = format!("session {n}: {} {:?}", out.why, out.stats);
        assert_eq!(out.chosen, chosen, "{why}");
        // The staged candidate's warm-up was 3x the fastest: never timed.
        assert!(out.stats[2].runs_ms.is_empty(), "{why}");
        let shared = out.stats[0]
            .rounds
            .iter()
            .filter(|r| out.stats[4].rounds.contains(r))
            .count();
        assert!(shared >= 2, "{why}");
        let median = quantile(&out.stats[0].runs_ms, 0.5).expect("untuned runs");
        assert!(
            out.tuning_ms <= 20.0 * median,
            "cost {}: {why}",
            out.tuning_ms / median
        );
    }
}
