//! The files a user names on the command line, through [`memtune_core::userio`]: outputs
//! written atomically (or streamed to stdout for `-`), output folders made, inputs read, a
//! path checked before a long run writes to it; their errors as exit codes; paths as JSON
//! text (a non-UTF-8 name is shown lossily rather than failing the output).

use crate::exit::{CliError, Exit};
use memtune_core::userio::{self, InputKind, UserIoError, WriteOptions};
use memtune_core::ErrorClass;
use serde_json::Value;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// What `userio` refuses to replace: the same words as its own error.
const ONLY_FILES: &str =
    "memtune replaces only regular files: name a file, or `-` to write to stdout";
/// Symbolic links followed at most, as `userio` does.
const MAX_LINK_HOPS: usize = 40;

/// An output error: refused (a device, FIFO, socket, folder or link there) or failed, it
/// exits 5; nothing was written.
pub(crate) fn output_error(e: UserIoError) -> CliError {
    CliError::new(Exit::Io, e.to_string())
}

/// An input error: missing exits 6, unreadable 5, anything else (not a regular file, too
/// large, not UTF-8) 4.
pub(crate) fn input_error(e: UserIoError) -> CliError {
    let exit = match e.class() {
        ErrorClass::NotFound => Exit::NotFound,
        ErrorClass::Io => Exit::Io,
        ErrorClass::Invalid => Exit::InvalidProfile,
    };
    CliError::new(exit, e.to_string())
}

/// Writes a user-named output: stdout for `-` and `/dev/stdout`, else a regular file
/// replaced atomically; every write checked.
pub(crate) fn write_output(path: &Path, bytes: &[u8], opts: WriteOptions) -> Result<(), CliError> {
    userio::write_output(path, bytes, opts).map_err(output_error)
}

/// Writes a file of an output folder (a chart, a report): never stdout.
pub(crate) fn write_file(path: &Path, bytes: &[u8], opts: WriteOptions) -> Result<(), CliError> {
    userio::replace_file(path, bytes, opts).map_err(output_error)
}

/// Makes sure `dir` is a folder to write into (created if missing); links resolved.
pub(crate) fn output_dir(dir: &Path, opts: WriteOptions) -> Result<PathBuf, CliError> {
    userio::create_output_dir(dir, opts).map_err(output_error)
}

/// Reads a user-named input of `kind` (`-`: stdin).
pub(crate) fn read_input(path: &Path, kind: InputKind) -> Result<Vec<u8>, CliError> {
    userio::read_input(path, kind).map_err(input_error)
}

/// Whether [`write_output`] would write to `path`, asked before a run that takes long (a
/// probe) rather than after it: what is there must be a regular file or nothing (a link only
/// with `follow_symlinks`), in a folder that exists. The write itself checks again.
pub(crate) fn check_output(path: &Path, opts: WriteOptions) -> Result<(), CliError> {
    if userio::is_stdout(path) {
        return Ok(());
    }
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINK_HOPS {
        let meta = match fs::symlink_metadata(&current) {
            Ok(m) => m,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let folder = folder_of(&current);
                if folder.is_dir() {
                    return Ok(());
                }
                return Err(output_error(UserIoError::NoFolder {
                    folder: folder.to_path_buf(),
                    path: current,
                }));
            }
            Err(source) => {
                return Err(output_error(UserIoError::Io {
                    path: current,
                    action: "reading its metadata",
                    source,
                }))
            }
        };
        let ft = meta.file_type();
        if ft.is_symlink() {
            let target = fs::read_link(&current).map_err(|source| {
                output_error(UserIoError::Io {
                    path: current.clone(),
                    action: "reading the link",
                    source,
                })
            })?;
            if !opts.follow_symlinks {
                return Err(output_error(UserIoError::Symlink {
                    path: current,
                    target,
                }));
            }
            current = folder_of(&current).join(target);
            continue;
        }
        if ft.is_file() {
            return Ok(());
        }
        return Err(output_error(UserIoError::Refused {
            path: current,
            found: userio::describe(ft),
            wanted: "a regular file",
            fix: ONLY_FILES.to_string(),
        }));
    }
    // A loop of links: the write reports it.
    Ok(())
}

/// The folder a path lives in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A path as JSON text; a non-UTF-8 name is shown with replacement characters.
pub(crate) fn path_json(path: &Path) -> Value {
    Value::String(path.to_string_lossy().into_owned())
}

/// Paths as a JSON array of text.
pub(crate) fn paths_json(paths: &[PathBuf]) -> Value {
    Value::Array(paths.iter().map(|p| path_json(p)).collect())
}

/// An optional path as JSON text or null.
pub(crate) fn opt_path_json(path: Option<&Path>) -> Value {
    path.map_or(Value::Null, path_json)
}
