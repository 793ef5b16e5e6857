//! The GPU side of the autotuner: CUDA events around the user's launch.

use std::fmt::Display;
use std::path::Path;
use std::sync::Arc;

use cudarc::driver::CudaStream;
use memtune_core::lookup::{self, LookupConfig, Wanted};
use memtune_core::tune::Tunable;

use super::{AutotuneError, Autotuner, TunedPlan};
use crate::launch::LaunchError;
use crate::tuned::{check_profile, TunedError};

impl Autotuner {
    /// Opens GPU `ordinal`: finds its profile through the lookup chain (a profile of another
    /// GPU model is refused), reads the environment's mode and stores, and returns the
    /// context's default stream, which the timing events are recorded on.
    pub fn open(
        ordinal: usize,
        project_root: Option<&Path>,
    ) -> Result<(Autotuner, Arc<CudaStream>), AutotuneError> {
        let id = crate::device::identity(ordinal).map_err(LaunchError::from)?;
        let wanted = Wanted {
            uuid: Some(id.uuid.clone()),
            model: Some(id.model()),
        };
        let resolved = lookup::resolve(&LookupConfig::from_env(project_root), &wanted)
            .map_err(TunedError::from)?;
        for w in resolved.warnings.iter().chain(&check_profile(
            &id,
            &resolved.profile,
            &resolved.source,
        )?) {
            eprintln!("memtune: {w}");
        }
        let stream = crate::gpu::Context::with_identity(ordinal, id.clone())
            .map_err(LaunchError::from)?
            .stream()
            .clone();
        let mut tuner = Autotuner::from_env(resolved.profile, &id.uuid, project_root)?;
        tuner.profile_source = Some(resolved.source.to_string());
        tuner.device = Some(id);
        Ok((tuner, stream))
    }

    /// Tunes `workload` on the user's kernel: `launch(plan)` enqueues the kernel with `plan`
    /// on `stream` (or on any stream that synchronises with it, such as the legacy default
    /// stream). Each launch is bracketed by CUDA events on `stream`, which is held until
    /// `launch` returns ([`Clock`]); a launch that returns an error, or whose kernel fails,
    /// drops its candidate.
    pub fn tune<W: Tunable, E: Display>(
        &self,
        stream: &Arc<CudaStream>,
        kernel: &str,
        workload: &W,
        mut launch: impl FnMut(&W::Plan) -> Result<(), E>,
    ) -> Result<TunedPlan<W::Plan>, AutotuneError> {
        let mut clock = Clock::from_env(stream);
        self.tune_with(kernel, workload, |plan| clock.time(|| launch(plan)))
    }
}

impl Autotuner {
    /// As [`Autotuner::tune`], and `check(plan)` runs after each launch has finished,
    /// outside the timed span: an `Err` (a wrong result) drops the candidate with that
    /// reason. Give every launch its own output, or reset it in `launch`, so that a check
    /// sees this launch's result.
    pub fn tune_checked<W: Tunable, E: Display>(
        &self,
        stream: &Arc<CudaStream>,
        kernel: &str,
        workload: &W,
        mut launch: impl FnMut(&W::Plan) -> Result<(), E>,
        mut check: impl FnMut(&W::Plan) -> Result<(), String>,
    ) -> Result<TunedPlan<W::Plan>, AutotuneError> {
        let mut clock = Clock::from_env(stream);
        self.tune_with(kernel, workload, |plan| {
            let ms = clock.time(|| launch(plan))?;
            check(plan).map_err(|e| format!("wrong result: {e}"))?;
            Ok(ms)
        })
    }
}

/// `MEMTUNE_TIMING_GATE=off` times every launch without holding the stream.
pub const ENV_TIMING_GATE: &str = "MEMTUNE_TIMING_GATE";

/// Whether launches are timed with the stream held: `MEMTUNE_TIMING_GATE` unset, empty or
/// `on` holds it, `off` does not; any other value holds it, with a warning naming it.
pub fn timing_gate_from_env() -> bool {
    let value = std::env::var(ENV_TIMING_GATE).ok();
    parse_timing_gate(value.as_deref()).unwrap_or_else(|warning| {
        eprintln!("memtune: {warning}");
        true
    })
}

/// [`timing_gate_from_env`]'s reading of a value: `Err` words the warning for one that is
/// neither `on` nor `off`.
pub fn parse_timing_gate(value: Option<&str>) -> Result<bool, String> {
    match value.map(str::trim) {
        None | Some("" | "on") => Ok(true),
        Some("off") => Ok(false),
        Some(other) => Err(format!(
            "{ENV_TIMING_GATE}={other:?} is neither on nor off; timing with the stream held"
        )),
    }
}

/// The autotuner's clock: each launch timed with [`crate::gpu::time_gated_ms`], so that
/// the host's launch latency, which varies by microseconds from launch to launch, does not
/// count in the times of short kernels. A launch that waits on its own stream (a
/// synchronous copy in the closure) holds the gate to its limit: from then on the session
/// times without it, with a warning. `MEMTUNE_TIMING_GATE=off` never holds it.
pub struct Clock<'a> {
    stream: &'a Arc<CudaStream>,
    gated: bool,
}

impl<'a> Clock<'a> {
    /// A gated clock unless `MEMTUNE_TIMING_GATE=off` ([`timing_gate_from_env`]).
    pub fn from_env(stream: &'a Arc<CudaStream>) -> Self {
        Clock {
            stream,
            gated: timing_gate_from_env(),
        }
    }

    /// Milliseconds of the work `f` enqueues on the stream; a failure of `f` or of the
    /// kernel, as text for the decision record.
    pub fn time<E: Display>(&mut self, f: impl FnOnce() -> Result<(), E>) -> Result<f64, String> {
        if !self.gated {
            return time_once(self.stream, f);
        }
        let gated =
            crate::gpu::time_gated_ms(self.stream, || f().map_err(|e| Failure(e.to_string())))
                .map_err(|f| f.0)?;
        if !gated.held {
            self.gated = false;
            eprintln!(
                "memtune: a launch took over {} ms to enqueue (it may wait on its own stream); timing the rest without holding the stream ({ENV_TIMING_GATE}=off does so from the start)",
                crate::gpu::GATE_LIMIT.as_millis()
            );
        }
        Ok(gated.ms)
    }
}

/// Milliseconds of the work `f` enqueues on `stream`, from CUDA events, after a sync
/// ([`crate::gpu::time_ms`]); a failure of `f` or of the kernel, as text for the decision
/// record.
pub fn time_once<E: Display>(
    stream: &Arc<CudaStream>,
    f: impl FnOnce() -> Result<(), E>,
) -> Result<f64, String> {
    crate::gpu::time_ms(stream, || f().map_err(|e| Failure(e.to_string()))).map_err(|f| f.0)
}

/// A failed timing as text: the user's error or the driver's.
struct Failure(String);

impl From<crate::gpu::Error> for Failure {
    fn from(e: crate::gpu::Error) -> Failure {
        Failure(match e {
            crate::gpu::Error::Cuda { what, source } if what == "cuEventSynchronize" => {
                format!("the kernel failed: {source:?}")
            }
            other => other.to_string(),
        })
    }
}
