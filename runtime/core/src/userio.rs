//! Reading and writing files a user named: profiles, simulator configs, decisions, curve
//! CSVs and traces in; profiles, exports and plots out.
//!
//! Inputs are read from regular files only (or stdin as `-`). The type is checked before the
//! file is opened, since opening a FIFO for reading blocks until a writer comes; the open is
//! non-blocking on Linux and the opened file is checked again, in case the path changed in
//! between. Each [`InputKind`] has a size cap enforced while reading, so `/dev/zero` or a
//! wrong multi-gigabyte file cannot exhaust memory. Text kinds must be UTF-8; a UTF-8 byte
//! order mark is dropped.
//!
//! Outputs go to stdout as a stream for `-` and `/dev/stdout`; otherwise a regular file is
//! replaced atomically (temporary file in the same folder, write, fsync, rename) or created.
//! Anything else already at the path (device, FIFO, socket, directory) is refused and left
//! as it is; a symbolic link is refused unless [`WriteOptions::follow_symlinks`], and then
//! its final target obeys the same rules. Every write and the fsync are checked (std offers
//! no checked close; after a successful fsync a close cannot lose data).
//!
//! Paths stay [`Path`]s throughout: non-UTF-8 names work and are shown lossily in messages.

use crate::error::ErrorClass;
use std::ffi::OsString;
use std::fs::{self, File, FileType, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The path that means stdin (for inputs) or stdout (for outputs).
pub const STDIO: &str = "-";
/// The UTF-8 byte order mark some editors put at the start of a text file.
pub const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
/// Symbolic links followed at most, as the kernel's own limit.
const MAX_LINK_HOPS: usize = 40;

/// What a user-named input is; each has its own size cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputKind {
    /// A `memtune-profile/1` JSON file.
    Profile,
    /// A simulator configuration (`probe --simulate FILE`).
    SimulatorConfig,
    /// A `memtune-decision/1` JSON file.
    Decision,
    /// Curves as CSV.
    Curves,
    /// A recorded access trace (binary).
    Trace,
}

impl InputKind {
    /// The largest input accepted, in bytes.
    pub const fn cap_bytes(self) -> u64 {
        match self {
            InputKind::Profile => 64 << 20,
            InputKind::SimulatorConfig => 1 << 20,
            InputKind::Decision => crate::tune::MAX_DECISION_BYTES,
            InputKind::Curves => 64 << 20,
            InputKind::Trace => 1 << 30,
        }
    }

    /// Whether the input is UTF-8 text (BOM dropped) rather than bytes.
    pub const fn is_text(self) -> bool {
        !matches!(self, InputKind::Trace)
    }

    /// What to call it in messages.
    pub const fn noun(self) -> &'static str {
        match self {
            InputKind::Profile => "profile",
            InputKind::SimulatorConfig => "simulator config",
            InputKind::Decision => "decision file",
            InputKind::Curves => "curve CSV",
            InputKind::Trace => "trace",
        }
    }
}

/// How outputs treat what is already at their path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Write through an existing symbolic link to its target (`--follow-symlinks`) instead
    /// of refusing it.
    pub follow_symlinks: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum UserIoError {
    #[error("{}: no such file; check the path", path.display())]
    NotFound { path: PathBuf },

    #[error("{} is {found}, not {wanted}; {fix}", path.display())]
    Refused {
        path: PathBuf,
        /// `a FIFO (named pipe)`, `a character device`, ...
        found: &'static str,
        wanted: &'static str,
        fix: String,
    },

    #[error("{} is a symbolic link to {}; outputs never replace a link: name the target itself, or pass --follow-symlinks to write through it", path.display(), target.display())]
    Symlink { path: PathBuf, target: PathBuf },

    #[error("{}: larger than {cap} bytes, the most a {noun} may be; this is not a {noun}: check the path", path.display())]
    TooLarge {
        path: PathBuf,
        noun: &'static str,
        cap: u64,
    },

    #[error("{}: {detail}; memtune reads a {noun} as UTF-8 text: re-save it as UTF-8", path.display())]
    NotText {
        path: PathBuf,
        noun: &'static str,
        detail: String,
    },

    #[error("{}: the folder {} does not exist; create it first, or write elsewhere", path.display(), folder.display())]
    NoFolder { path: PathBuf, folder: PathBuf },

    #[error("{}: {action} failed: {source}", path.display())]
    Io {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: io::Error,
    },
}

impl UserIoError {
    /// The broad class, for exit codes: a missing input, an I/O failure, or a path that
    /// names the wrong kind of thing.
    pub fn class(&self) -> ErrorClass {
        match self {
            UserIoError::NotFound { .. } => ErrorClass::NotFound,
            UserIoError::Io { .. } | UserIoError::NoFolder { .. } => ErrorClass::Io,
            _ => ErrorClass::Invalid,
        }
    }

    fn io(path: &Path, action: &'static str, source: io::Error) -> Self {
        UserIoError::Io {
            path: path.to_path_buf(),
            action,
            source,
        }
    }
}

/// Whether `path` means stdin/stdout: `-` (and, for outputs, `/dev/stdout`).
pub fn is_stdio(path: &Path) -> bool {
    path.as_os_str() == STDIO
}

/// Whether an output `path` is written as a stream to stdout.
pub fn is_stdout(path: &Path) -> bool {
    is_stdio(path) || path.as_os_str() == "/dev/stdout"
}

/// Reads a user-named input: a regular file, or stdin for `-`; at most
/// [`InputKind::cap_bytes`]. For text kinds the result is valid UTF-8 without a BOM.
pub fn read_input(path: &Path, kind: InputKind) -> Result<Vec<u8>, UserIoError> {
    if is_stdio(path) {
        return read_from(io::stdin().lock(), path, kind);
    }
    let file = open_regular(path, kind)?;
    read_from(file, path, kind)
}

/// [`read_input`] of a text kind, as a `String`.
pub fn read_text(path: &Path, kind: InputKind) -> Result<String, UserIoError> {
    let bytes = read_input(path, kind)?;
    String::from_utf8(bytes).map_err(|e| UserIoError::NotText {
        path: path.to_path_buf(),
        noun: kind.noun(),
        detail: format!("invalid UTF-8 at byte {}", e.utf8_error().valid_up_to()),
    })
}

/// Reads an input from any reader (stdin, a test's bytes) with the cap and text rules of
/// `kind`; `origin` names it in messages.
pub fn read_from(
    reader: impl Read,
    origin: &Path,
    kind: InputKind,
) -> Result<Vec<u8>, UserIoError> {
    let cap = kind.cap_bytes();
    let mut bytes = Vec::new();
    reader
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| UserIoError::io(origin, "reading", e))?;
    if bytes.len() as u64 > cap {
        return Err(too_large(origin, kind));
    }
    if kind.is_text() {
        check_text(&mut bytes, origin, kind)?;
    }
    Ok(bytes)
}

/// `bytes` without a leading UTF-8 byte order mark.
pub fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes)
}

/// Drops a UTF-8 BOM; refuses UTF-16 and invalid UTF-8 with the byte it starts at.
fn check_text(bytes: &mut Vec<u8>, origin: &Path, kind: InputKind) -> Result<(), UserIoError> {
    let not_text = |detail: String| UserIoError::NotText {
        path: origin.to_path_buf(),
        noun: kind.noun(),
        detail,
    };
    if bytes.starts_with(UTF8_BOM) {
        bytes.drain(..UTF8_BOM.len());
    } else if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
        return Err(not_text(
            "the file starts with a UTF-16 byte order mark (it is UTF-16 text)".to_string(),
        ));
    }
    std::str::from_utf8(bytes)
        .map_err(|e| not_text(format!("invalid UTF-8 at byte {}", e.valid_up_to())))?;
    Ok(())
}

fn too_large(path: &Path, kind: InputKind) -> UserIoError {
    UserIoError::TooLarge {
        path: path.to_path_buf(),
        noun: kind.noun(),
        cap: kind.cap_bytes(),
    }
}

/// Opens `path` for reading if it is a regular file, without ever blocking on a FIFO.
fn open_regular(path: &Path, kind: InputKind) -> Result<File, UserIoError> {
    let meta = fs::metadata(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => UserIoError::NotFound {
            path: path.to_path_buf(),
        },
        _ => UserIoError::io(path, "reading its metadata", e),
    })?;
    check_input_type(&meta, path, kind)?;
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK: a path swapped for a FIFO since the check opens without waiting.
        const O_NONBLOCK: i32 = 0o4000;
        options.custom_flags(O_NONBLOCK);
    }
    let file = options
        .open(path)
        .map_err(|e| UserIoError::io(path, "opening", e))?;
    let meta = file
        .metadata()
        .map_err(|e| UserIoError::io(path, "reading its metadata", e))?;
    check_input_type(&meta, path, kind)?;
    Ok(file)
}

fn check_input_type(meta: &Metadata, path: &Path, kind: InputKind) -> Result<(), UserIoError> {
    if !meta.is_file() {
        return Err(UserIoError::Refused {
            path: path.to_path_buf(),
            found: describe(meta.file_type()),
            wanted: "a regular file",
            fix: format!(
                "memtune reads a {} from a regular file, or from stdin when the path is `-` (e.g. `... - < FILE`)",
                kind.noun()
            ),
        });
    }
    if meta.len() > kind.cap_bytes() {
        return Err(too_large(path, kind));
    }
    Ok(())
}

/// What a file type is, for messages.
pub fn describe(ft: FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
        if ft.is_socket() {
            return "a socket";
        }
    }
    if ft.is_dir() {
        "a directory"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

/// Writes a user-named output: to stdout for `-` and `/dev/stdout`, otherwise as
/// [`replace_file`] does.
pub fn write_output(path: &Path, bytes: &[u8], opts: WriteOptions) -> Result<(), UserIoError> {
    if is_stdout(path) {
        return write_stream(io::stdout().lock(), path, bytes);
    }
    replace_file(path, bytes, opts)
}

/// Writes `bytes` to a stream and flushes it, checking both; `origin` names it in messages.
pub fn write_stream(mut out: impl Write, origin: &Path, bytes: &[u8]) -> Result<(), UserIoError> {
    out.write_all(bytes)
        .map_err(|e| UserIoError::io(origin, "writing", e))?;
    out.flush()
        .map_err(|e| UserIoError::io(origin, "flushing", e))
}

/// Creates or atomically replaces the regular file at `path` (no stdout meaning for `-`).
/// Refuses anything else there, and symbolic links unless `opts.follow_symlinks`; a
/// replaced file keeps its permissions.
pub fn replace_file(path: &Path, bytes: &[u8], opts: WriteOptions) -> Result<(), UserIoError> {
    let (target, existing) = resolve(path, opts, Wanted::File)?;
    let folder = folder_of(&target);
    if !folder.is_dir() {
        return Err(UserIoError::NoFolder {
            path: target.clone(),
            folder: folder.to_path_buf(),
        });
    }
    let name = target.file_name().ok_or_else(|| UserIoError::Refused {
        path: target.clone(),
        found: "a path without a file name",
        wanted: "a file",
        fix: "name a file to write".to_string(),
    })?;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut tmp_name = OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(
        ".{}.{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = folder.join(tmp_name);
    let result = write_and_rename(&tmp, &target, bytes, existing.as_ref());
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn write_and_rename(
    tmp: &Path,
    target: &Path,
    bytes: &[u8],
    existing: Option<&Metadata>,
) -> Result<(), UserIoError> {
    let io = |action| move |e| UserIoError::io(target, action, e);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)
        .map_err(io("creating a temporary file beside it"))?;
    if let Some(meta) = existing {
        file.set_permissions(meta.permissions())
            .map_err(io("copying the permissions"))?;
    }
    file.write_all(bytes).map_err(io("writing"))?;
    file.sync_all().map_err(io("syncing to disk"))?;
    drop(file);
    fs::rename(tmp, target).map_err(io("renaming the temporary file over it"))?;
    // Makes the rename durable; a folder that cannot be synced (some file systems) is fine.
    if let Ok(dir) = File::open(folder_of(target)) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Makes sure `path` is a directory to write outputs (plots) into, creating it (and its
/// parents) if missing. A non-directory there is refused, a symbolic link unless
/// `opts.follow_symlinks`. Returns the directory, links resolved.
pub fn create_output_dir(path: &Path, opts: WriteOptions) -> Result<PathBuf, UserIoError> {
    let (dir, existing) = resolve(path, opts, Wanted::Dir)?;
    if existing.is_none() {
        fs::create_dir_all(&dir).map_err(|e| UserIoError::io(&dir, "creating the folder", e))?;
    }
    Ok(dir)
}

#[derive(Clone, Copy, PartialEq)]
enum Wanted {
    File,
    Dir,
}

/// Follows `path` through symbolic links (if allowed) to what an output would write:
/// the final path and its metadata, `None` when nothing is there yet.
fn resolve(
    path: &Path,
    opts: WriteOptions,
    wanted: Wanted,
) -> Result<(PathBuf, Option<Metadata>), UserIoError> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINK_HOPS {
        let meta = match fs::symlink_metadata(&current) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((current, None)),
            Err(e) => return Err(UserIoError::io(&current, "reading its metadata", e)),
        };
        let ft = meta.file_type();
        if ft.is_symlink() {
            let target = fs::read_link(&current)
                .map_err(|e| UserIoError::io(&current, "reading the link", e))?;
            if !opts.follow_symlinks {
                return Err(UserIoError::Symlink {
                    path: current,
                    target,
                });
            }
            current = folder_of(&current).join(target);
            continue;
        }
        let fits = match wanted {
            Wanted::File => ft.is_file(),
            Wanted::Dir => ft.is_dir(),
        };
        if !fits {
            let (wanted, fix) = match wanted {
                Wanted::File => (
                    "a regular file",
                    "memtune replaces only regular files: name a file, or `-` to write to stdout",
                ),
                Wanted::Dir => ("a directory", "name a directory (a missing one is created)"),
            };
            return Err(UserIoError::Refused {
                path: current,
                found: describe(ft),
                wanted,
                fix: fix.to_string(),
            });
        }
        return Ok((current, Some(meta)));
    }
    Err(UserIoError::io(
        path,
        "following symbolic links",
        io::Error::other(format!("more than {MAX_LINK_HOPS} links in a row")),
    ))
}

/// The folder a path lives in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}
