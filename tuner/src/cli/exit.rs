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

impl From<DeviceError> for CliError {
    fn from(e: DeviceError) -> Self {
        let exit = match e {
            DeviceError::NoDriver
            | DeviceError::NoGpu { .. }
            | DeviceError::DriverTooOld { .. } => Exit::NoGpu,
            DeviceError::NoSuchDevice { .. } => Exit::Usage,
            DeviceError::Cuda { .. } => Exit::Internal,
        };
        CliError::new(exit, e.to_string())
    }
}
