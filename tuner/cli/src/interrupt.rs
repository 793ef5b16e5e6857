//! Ctrl-C during a probe: SIGINT sets a flag that the probe reads before every measurement
//! ([`memtune_probe::Cancel`]), so it returns through its normal paths and every buffer is
//! freed by its owner; the verb then writes and stores nothing and exits 130. A second
//! Ctrl-C ends the process at once (the driver frees GPU memory at exit).

use crate::exit::{CliError, Exit};
use memtune_probe::Cancel;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

/// The process's one flag: the handler sets it, every probe option reads it.
fn flag() -> &'static Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// The cancel token the probe's options carry; set once Ctrl-C is pressed (after
/// [`install`]).
pub fn token() -> Cancel {
    Cancel::from_flag(Arc::clone(flag()))
}

/// Installs the SIGINT handler, once per process. Until then Ctrl-C ends the process as
/// usual, which is right for verbs that store nothing.
pub fn install() -> Result<(), CliError> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            use signal_hook::consts::SIGINT;
            use signal_hook::flag;
            // Registered first, so it sees the flag as the previous Ctrl-C left it.
            flag::register_conditional_shutdown(SIGINT, Exit::Interrupted as i32, flag().clone())
                .and_then(|_| flag::register(SIGINT, flag().clone()))
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| CliError::new(Exit::Internal, format!("cannot handle Ctrl-C: {e}")))
}

/// `Err` (exit 130) once Ctrl-C was pressed; `unwritten` says what was left unwritten.
pub fn check(unwritten: &str) -> Result<(), CliError> {
    if token().is_cancelled() {
        Err(CliError::new(
            Exit::Interrupted,
            format!("interrupted: the probe stopped; {unwritten}"),
        ))
    } else {
        Ok(())
    }
}
