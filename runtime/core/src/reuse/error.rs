//! Errors of reuse-distance analysis: bad trace input, bad options, and traces too large
//! for the chosen mode. Each names where it happened and what to do.

use crate::error::ErrorClass;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReuseError {
    #[error("line {line}: {why}: {text:?}")]
    Malformed {
        /// 1-based line number in the trace.
        line: u64,
        /// The line as read, truncated to a readable length.
        text: String,
        why: &'static str,
    },

    #[error("line {line}: longer than {max} bytes; a trace line holds one address or one lackey record: is this the right --format?")]
    LineTooLong { line: u64, max: usize },

    #[error("u64 trace of {len} bytes is not a whole number of 8-byte addresses: {trailing} trailing bytes; the file is truncated, or not a --format u64 trace")]
    TrailingBytes { len: u64, trailing: u64 },

    #[error("{path}: cannot open the trace: {source}")]
    Open {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("reading the trace failed: {0}")]
    Io(#[from] std::io::Error),

    #[error("invalid option: {0}")]
    InvalidOption(String),

    #[error("inconsistent chunk summary: {0}; it was not made by `summarize` or was altered")]
    InvalidSummary(String),

    #[error("the trace has more than {limit} records (lines, or 8-byte addresses of a u64 trace): is it endless, like a device or `yes`? A longer trace needs a higher bound (`--max-records` of `cargo tune reuse`)")]
    TooManyRecords { limit: u64 },

    #[error("the trace holds more than {limit} distinct items, the limit set for mode {mode}; use mode `sampled` with a budget, which holds a fixed number of items")]
    TooManyItems { limit: u64, mode: &'static str },
}

impl ReuseError {
    /// Broad class for the CLI's exit codes: bad input and options are `Invalid`.
    pub fn class(&self) -> ErrorClass {
        match self {
            ReuseError::Open { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                ErrorClass::NotFound
            }
            ReuseError::Io(_) | ReuseError::Open { .. } => ErrorClass::Io,
            _ => ErrorClass::Invalid,
        }
    }
}

/// The longest part of a malformed line that an error repeats.
pub(crate) const ERROR_TEXT_MAX: usize = 80;

/// A malformed-line error, the text cut to [`ERROR_TEXT_MAX`] bytes on a char boundary.
pub(crate) fn malformed(line: u64, bytes: &[u8], why: &'static str) -> ReuseError {
    let text = String::from_utf8_lossy(bytes);
    let full = text.len();
    let mut end = full.min(ERROR_TEXT_MAX);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut text = text[..end].to_string();
    if end < full {
        text.push('…');
    }
    ReuseError::Malformed { line, text, why }
}
