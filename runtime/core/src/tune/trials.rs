//! A [`Tunable`] workload's candidates as a session's [`Trials`]: the workload orders,
//! rules out and refines them, and `time` launches one plan.

use super::candidates::{Candidate, Tunable};
use super::session::{Stats, Trials};
use crate::profile::Profile;

/// The candidates being timed for `workload` and the launch that times one plan. After the
/// session, `candidates` holds every plan it tried (refinements appended), in the order of
/// the session's stats.
pub struct WorkloadTrials<'a, W: Tunable, F> {
    pub workload: &'a W,
    pub profile: &'a Profile,
    pub candidates: Vec<Candidate<W::Plan>>,
    pub time: F,
}

impl<W: Tunable, F: FnMut(&W::Plan) -> Result<f64, String>> Trials
    for &mut WorkloadTrials<'_, W, F>
{
    fn time(&mut self, i: usize) -> Result<f64, String> {
        (self.time)(&self.candidates[i].plan)
    }

    fn refine(&mut self, stats: &[Stats]) -> bool {
        match self
            .workload
            .next_candidate(self.profile, &self.candidates, stats)
        {
            Some(c) => {
                self.candidates.push(c);
                true
            }
            None => false,
        }
    }

    fn first_order(&self, n: usize) -> Vec<usize> {
        let mut order = self.workload.first_order(&self.candidates);
        order.truncate(n);
        order
    }

    fn ruled_out(&self, i: usize, stats: &[Stats]) -> Option<String> {
        self.workload.ruled_out_at(&self.candidates, i, stats)
    }
}
