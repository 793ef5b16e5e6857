//! Timing with CUDA events: a start and an end event around the enqueued work, a sync on
//! the end event, the elapsed milliseconds. Warm-ups and medians are the caller's choice
//! through [`time_runs`].

use cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT;
use cudarc::driver::CudaStream;

use super::{cuda, Error};

/// Milliseconds of each timed run, in run order.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    pub runs_ms: Vec<f64>,
}

impl Timing {
    /// The median run (the upper middle one for an even count, as the autotuner reads
    /// its runs: [`memtune_core::stats::quantile`]); 0 without runs.
    pub fn median_ms(&self) -> f64 {
        memtune_core::stats::quantile(&self.runs_ms, 0.5).unwrap_or(0.0)
    }

    /// Slowest minus fastest run: the noise of this measurement.
    pub fn spread_ms(&self) -> f64 {
        if self.runs_ms.is_empty() {
            return 0.0;
        }
        let max = self.runs_ms.iter().copied().fold(f64::MIN, f64::max);
        let min = self.runs_ms.iter().copied().fold(f64::MAX, f64::min);
        max - min
    }
}

/// Milliseconds of the work `enqueue` puts on `stream`, between two events, after waiting
/// for the second. An error of the work itself (a failed launch) surfaces at that wait.
pub fn time_ms<E: From<Error>>(
    stream: &CudaStream,
    enqueue: impl FnOnce() -> Result<(), E>,
) -> Result<f64, E> {
    let start = stream
        .record_event(Some(CU_EVENT_DEFAULT))
        .map_err(cuda("cuEventRecord"))?;
    enqueue()?;
    let end = stream
        .record_event(Some(CU_EVENT_DEFAULT))
        .map_err(cuda("cuEventRecord"))?;
    end.synchronize().map_err(cuda("cuEventSynchronize"))?;
    let ms = start.elapsed_ms(&end).map_err(cuda("cuEventElapsedTime"))?;
    Ok(f64::from(ms))
}

/// `warmups` untimed then `runs` timed rounds of `setup` (untimed) and `work` (timed with
/// [`time_ms`]).
pub fn time_runs<E: From<Error>>(
    stream: &CudaStream,
    warmups: usize,
    runs: usize,
    mut setup: impl FnMut() -> Result<(), E>,
    mut work: impl FnMut() -> Result<(), E>,
) -> Result<Timing, E> {
    let mut runs_ms = Vec::with_capacity(runs);
    for run in 0..warmups + runs {
        setup()?;
        let ms = time_ms(stream, &mut work)?;
        if run >= warmups {
            runs_ms.push(ms);
        }
    }
    Ok(Timing { runs_ms })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_median_and_spread() {
        let t = Timing {
            runs_ms: vec![3.0, 1.0, 2.0, 10.0],
        };
        assert_eq!(t.median_ms(), 3.0);
        assert_eq!(t.spread_ms(), 9.0);
        let empty = Timing { runs_ms: vec![] };
        assert_eq!(empty.median_ms(), 0.0);
        assert_eq!(empty.spread_ms(), 0.0);
    }
}
