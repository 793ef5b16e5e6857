//! Timing with CUDA events: a start and an end event around the enqueued work, a sync on
//! the end event, the elapsed milliseconds. Warm-ups and medians are the caller's choice
//! through [`time_runs`]. [`time_gated_ms`] holds the stream until the work is enqueued,
//! for times of short kernels free of the host's launch latency.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::sys::{self, CUevent_flags::CU_EVENT_DEFAULT};
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
    between_events(stream, enqueue, || ())
}

/// Milliseconds between a start event, the work `enqueue` puts on `stream` and an end
/// event; `enqueued` runs once the end event is recorded, before the wait for it.
fn between_events<E: From<Error>>(
    stream: &CudaStream,
    enqueue: impl FnOnce() -> Result<(), E>,
    enqueued: impl FnOnce(),
) -> Result<f64, E> {
    let start = stream
        .record_event(Some(CU_EVENT_DEFAULT))
        .map_err(cuda("cuEventRecord"))?;
    enqueue()?;
    let end = stream
        .record_event(Some(CU_EVENT_DEFAULT))
        .map_err(cuda("cuEventRecord"))?;
    enqueued();
    end.synchronize().map_err(cuda("cuEventSynchronize"))?;
    let ms = start.elapsed_ms(&end).map_err(cuda("cuEventElapsedTime"))?;
    Ok(f64::from(ms))
}

/// The longest [`time_gated_ms`] holds the stream for `enqueue` to return; then the gate
/// opens by itself, so that work which waits on its own stream (a synchronous copy) is
/// late rather than stuck.
pub const GATE_LIMIT: Duration = Duration::from_millis(50);

/// A time from [`time_gated_ms`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gated {
    pub ms: f64,
    /// False when the gate opened at [`GATE_LIMIT`] before `enqueue` returned: the time
    /// then counts the host's launch latency, as [`time_ms`] does.
    pub held: bool,
}

/// [`time_ms`] with the stream held by a host function until `enqueue` has returned, so
/// that the start event, the work and the end event reach the GPU together. Without the
/// gate an idle GPU passes the start event while the host is still launching, and the
/// launch's host latency (microseconds, varying from launch to launch) counts in the time:
/// a few percent of a 60 µs kernel. nvbench holds its stream the same way, with a
/// blocking kernel.
pub fn time_gated_ms<E: From<Error>>(
    stream: &CudaStream,
    enqueue: impl FnOnce() -> Result<(), E>,
) -> Result<Gated, E> {
    let (release, open) = sync_channel::<()>(1);
    let timed_out = Arc::new(AtomicBool::new(false));
    let gate = Box::into_raw(Box::new(Gate {
        open,
        timed_out: Arc::clone(&timed_out),
    }));
    // SAFETY: `hold` takes back the box it is given, once; on a failed call the driver
    // never runs it and the box is dropped here.
    let held = unsafe { sys::cuLaunchHostFunc(stream.cu_stream(), Some(hold), gate.cast()) };
    if let Err(e) = held.result() {
        drop(unsafe { Box::from_raw(gate) });
        return Err(cuda("cuLaunchHostFunc")(e).into());
    }
    // Opens the gate when dropped: once the end event is recorded, or on an early return.
    let release = Release(release);
    let ms = between_events(stream, enqueue, move || drop(release))?;
    Ok(Gated {
        ms,
        held: !timed_out.load(Ordering::Acquire),
    })
}

/// What the host function of [`time_gated_ms`] waits on.
struct Gate {
    open: Receiver<()>,
    timed_out: Arc<AtomicBool>,
}

struct Release(SyncSender<()>);

impl Drop for Release {
    fn drop(&mut self) {
        // The gate may have opened at its limit already: nothing then listens.
        let _ = self.0.try_send(());
    }
}

/// Holds the stream until the gate is released or [`GATE_LIMIT`] has passed. Makes no
/// CUDA call, as a host function must not.
unsafe extern "C" fn hold(data: *mut c_void) {
    // SAFETY: `data` is the `Box<Gate>` leaked by `time_gated_ms` for this one call.
    let gate = unsafe { Box::from_raw(data.cast::<Gate>()) };
    if let Err(RecvTimeoutError::Timeout) = gate.open.recv_timeout(GATE_LIMIT) {
        gate.timed_out.store(true, Ordering::Release);
    }
}

/// `warmups` untimed then `runs` timed rounds of `setup` (untimed) and `work` (timed with
/// [`time_gated_ms`] when `gated`, else [`time_ms`]).
pub fn time_runs<E: From<Error>>(
    stream: &CudaStream,
    warmups: usize,
    runs: usize,
    gated: bool,
    mut setup: impl FnMut() -> Result<(), E>,
    mut work: impl FnMut() -> Result<(), E>,
) -> Result<Timing, E> {
    let mut runs_ms = Vec::with_capacity(runs);
    for run in 0..warmups + runs {
        setup()?;
        let ms = if gated {
            time_gated_ms(stream, &mut work)?.ms
        } else {
            time_ms(stream, &mut work)?
        };
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
