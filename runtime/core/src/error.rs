//! Errors of the profile model and store. Each names the file involved and the fix.

use std::path::PathBuf;

/// What went wrong, broadly: the CLI maps these to its exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The file exists but is not a valid profile (parse, schema, digest, identity).
    Invalid,
    /// Reading or writing failed (permissions, disk, missing directory).
    Io,
    /// No profile where one was asked for.
    NotFound,
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("{path}: not valid JSON ({detail}); the file is truncated or corrupt: re-run `cargo tune`, or import a good copy with `cargo tune import FILE`")]
    Parse { path: PathBuf, detail: String },

    #[error("{path}: not a memtune profile (schema {found}); expected \"{expected}\": check that this is the file you meant")]
    WrongSchema {
        path: PathBuf,
        found: String,
        expected: &'static str,
    },

    #[error("{path}: written by a newer memtune (schema {found}); this memtune reads \"{expected}\": upgrade memtune, or re-run `cargo tune` with this version")]
    NewerMajor {
        path: PathBuf,
        found: String,
        expected: &'static str,
    },

    #[error("{path}: digest mismatch (stored {stored}, content hashes to {computed}); the file was edited or damaged: re-run `cargo tune`, or import an intact copy")]
    DigestMismatch {
        path: PathBuf,
        stored: String,
        computed: String,
    },

    #[error("{path}: invalid profile: {detail}; re-run `cargo tune` to write a fresh one")]
    Invalid { path: PathBuf, detail: String },

    #[error("{path}: profile is for {profile_uuid} but the file is named for {file_uuid}; rename it to {profile_uuid}.json, or re-import it with `cargo tune import`")]
    UuidMismatch {
        path: PathBuf,
        file_uuid: String,
        profile_uuid: String,
    },

    #[error("{path}: {action} failed: {source}; {fix}")]
    Io {
        path: PathBuf,
        action: &'static str,
        fix: &'static str,
        #[source]
        source: std::io::Error,
    },

    #[error("{what}")]
    NotFound { what: String },

    #[error("{path}: the profile's values are impossible: {source}; it was edited by hand or written by a faulty tool: re-run `cargo tune`, or import a good copy")]
    Semantic {
        path: PathBuf,
        #[source]
        source: crate::validate::ValidationError,
    },

    /// A user-named file that could not be read as asked (not a regular file, too large,
    /// not UTF-8, unreadable).
    #[error(transparent)]
    Input(#[from] crate::userio::UserIoError),

    #[error("{name} is set but empty; set it to a directory, or unset it to use the default")]
    EmptyVariable { name: &'static str },

    #[error("{name}={value} is not a GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, as `cargo tune devices` or `nvidia-smi -L` prints it); fix it, or unset {name}")]
    BadVariable { name: &'static str, value: String },
}

impl ProfileError {
    pub fn class(&self) -> ErrorClass {
        match self {
            ProfileError::Io { .. } => ErrorClass::Io,
            ProfileError::NotFound { .. } => ErrorClass::NotFound,
            ProfileError::Input(e) => e.class(),
            _ => ErrorClass::Invalid,
        }
    }

    pub(crate) fn io(
        path: impl Into<PathBuf>,
        action: &'static str,
        fix: &'static str,
        source: std::io::Error,
    ) -> Self {
        ProfileError::Io {
            path: path.into(),
            action,
            fix,
            source,
        }
    }
}
