//! Exit codes (documented in the README) and the error type that carries them.

use memtune::device::DeviceError;
use memtune_core::{ErrorClass, ProfileError};

/// The process exit codes of `cargo tune`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    /// A bug or an unexpected failure.
    Internal = 1,
    /// Bad command line.
    Usage = 2,
    /// No CUDA driver, no GPU, or a driver too old.
    NoGpu = 3,
    /// A profile (or simulator file) failed validation: parse, schema, digest, identity.
    InvalidProfile = 4,
    /// Reading or writing a file or directory failed.
    Io = 5,
    /// No profile where one was asked for.
    NotFound = 6,
    /// The probe ran, but some sections failed (they are marked in the profile).
    Partial = 7,
    /// `cargo tune check`: at least one committed profile failed.
    CheckFailed = 8,
    /// Ctrl-C (SIGINT) during a probe: nothing was written or stored (128 + SIGINT, as
    /// shells report it).
    Interrupted = 130,
}

impl Exit {
    /// A probe's exit: [`Exit::Partial`] when any section failed.
    pub fn of_probe(any_failed: bool) -> Exit {
        if any_failed {
            Exit::Partial
        } else {
            Exit::Ok
        }
    }

    /// The exit whose process exit code is `code`; `None` for a code this program never
    /// returns.
    pub fn from_code(code: i32) -> Option<Exit> {
        [
            Exit::Ok,
            Exit::Internal,
            Exit::Usage,
            Exit::NoGpu,
            Exit::InvalidProfile,
            Exit::Io,
            Exit::NotFound,
            Exit::Partial,
            Exit::CheckFailed,
            Exit::Interrupted,
        ]
        .into_iter()
        .find(|e| *e as i32 == code)
    }
}

/// An error for the user: a message that names the file and the fix, and an exit code.
#[derive(Debug)]
pub struct CliError {
    pub exit: Exit,
    pub message: String,
}

impl CliError {
    pub fn new(exit: Exit, message: impl Into<String>) -> Self {
        CliError {
            exit,
            message: message.into(),
        }
    }

    /// The stable name of the exit code, for `--json` error output.
    pub fn kind(&self) -> &'static str {
        match self.exit {
            Exit::Ok => "ok",
            Exit::Internal => "internal",
            Exit::Usage => "usage",
            Exit::NoGpu => "no_gpu",
            Exit::InvalidProfile => "invalid_profile",
            Exit::Io => "io",
            Exit::NotFound => "not_found",
            Exit::Partial => "partial",
            Exit::CheckFailed => "check_failed",
            Exit::Interrupted => "interrupted",
        }
    }
}

impl From<ProfileError> for CliError {
    fn from(e: ProfileError) -> Self {
        let exit = match e.class() {
            ErrorClass::Invalid => Exit::InvalidProfile,
            ErrorClass::Io => Exit::Io,
            ErrorClass::NotFound => Exit::NotFound,
        };
        CliError::new(exit, e.to_string())
    }
}

/// What a user without a usable GPU can do next; follows every "no GPU" error of a GPU verb.
pub const NO_GPU_NEXT_STEPS: &str = "\
without a GPU, everything else still works on a profile:
  cargo tune probe --simulate p100 -o p.json     a simulated GPU (also k80, gt200, or a config file)
  cargo tune import FILE                         a profile measured on a GPU machine and shipped
  cargo tune plan sampling --region 4GiB --memory device --profile p.json
exit code 3 means no GPU (the README lists every exit code)";

impl From<DeviceError> for CliError {
    fn from(e: DeviceError) -> Self {
        match e {
            DeviceError::NoDriver
            | DeviceError::NoGpu { .. }
            | DeviceError::DriverTooOld { .. } => {
                CliError::new(Exit::NoGpu, format!("{e}\n{NO_GPU_NEXT_STEPS}"))
            }
            DeviceError::NoSuchDevice { .. } => CliError::new(Exit::Usage, e.to_string()),
            DeviceError::Cuda { .. } => CliError::new(Exit::Internal, e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_with_a_failed_section_exits_7() {
        assert_eq!(Exit::of_probe(true) as i32, 7);
        assert_eq!(Exit::of_probe(false) as i32, 0);
    }

    #[test]
    fn exit_codes_map_back_to_exits() {
        assert_eq!(Exit::from_code(130), Some(Exit::Interrupted));
        assert_eq!(Exit::from_code(7), Some(Exit::Partial));
        assert_eq!(Exit::from_code(0), Some(Exit::Ok));
        assert_eq!(Exit::from_code(101), None);
    }

    #[test]
    fn an_interruption_exits_130_as_shells_report_sigint() {
        let e = CliError::new(Exit::Interrupted, "interrupted");
        assert_eq!(e.exit as i32, 128 + 2);
        assert_eq!(e.kind(), "interrupted");
    }
}
