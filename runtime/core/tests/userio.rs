//! User-named inputs and outputs: special files are refused without hanging or being
//! replaced, inputs are capped, links are refused or followed on request, write errors
//! surface, and non-UTF-8 paths work.

use memtune_core::userio::{
    create_output_dir, read_from, read_input, read_text, replace_file, write_output, write_stream,
    InputKind, UserIoError, WriteOptions,
};
use memtune_core::ErrorClass;
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FOLLOW: WriteOptions = WriteOptions {
    follow_symlinks: true,
};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

fn mkfifo(path: &Path) -> bool {
    Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn dev_null_is_refused_as_output_and_stays_a_char_device() {
    let null = Path::new("/dev/null");
    let err = write_output(null, b"x", WriteOptions::default()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("/dev/null is a character device, not a regular file"),
        "{msg}"
    );
    assert!(matches!(err, UserIoError::Refused { .. }));
    let err = write_output(null, b"x", FOLLOW).unwrap_err();
    assert!(matches!(err, UserIoError::Refused { .. }), "{err}");
    let meta = std::fs::symlink_metadata(null).expect("/dev/null");
    assert!(
        meta.file_type().is_char_device(),
        "/dev/null is still a device"
    );
    // /dev/full is refused the same way, before any write.
    assert!(write_output(Path::new("/dev/full"), b"x", FOLLOW).is_err());
}

#[test]
fn a_regular_file_is_replaced_atomically_and_keeps_its_mode() {
    let dir = tmp();
    let path = dir.path().join("out.json");
    write_output(&path, b"first", WriteOptions::default()).expect("created");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    write_output(&path, b"second", WriteOptions::default()).expect("replaced");
    assert_eq!(std::fs::read(&path).expect("read"), b"second");
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
    assert_eq!(mode & 0o777, 0o640);
    let names: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
    assert_eq!(names.len(), 1, "no temporary file left behind");
}

#[test]
fn a_symlink_is_refused_unless_followed() {
    let dir = tmp();
    let target = dir.path().join("target.json");
    std::fs::write(&target, b"old").expect("target");
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");

    let err = write_output(&link, b"new", WriteOptions::default()).unwrap_err();
    assert!(matches!(err, UserIoError::Symlink { .. }), "{err}");
    assert!(err.to_string().contains("--follow-symlinks"), "{err}");
    assert!(std::fs::symlink_metadata(&link)
        .expect("link")
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&target).expect("target"), b"old");

    write_output(&link, b"new", FOLLOW).expect("written through the link");
    assert!(std::fs::symlink_metadata(&link)
        .expect("link")
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&target).expect("target"), b"new");

    // A followed link to a device obeys the device rule.
    let to_null = dir.path().join("null.json");
    std::os::unix::fs::symlink("/dev/null", &to_null).expect("symlink");
    let err = write_output(&to_null, b"x", FOLLOW).unwrap_err();
    assert!(err.to_string().contains("character device"), "{err}");
    // A dangling link, followed, creates its target.
    let dangling = dir.path().join("dangling.json");
    std::os::unix::fs::symlink("made.json", &dangling).expect("symlink");
    write_output(&dangling, b"made", FOLLOW).expect("written");
    assert_eq!(
        std::fs::read(dir.path().join("made.json")).expect("made"),
        b"made"
    );
}

#[test]
fn a_fifo_is_refused_without_hanging_as_input_and_output() {
    let dir = tmp();
    let fifo = dir.path().join("pipe.json");
    if !mkfifo(&fifo) {
        eprintln!("skipped: mkfifo is not available");
        return;
    }
    let start = Instant::now();
    let err = read_input(&fifo, InputKind::Profile).unwrap_err();
    assert!(
        err.to_string()
            .contains("is a FIFO (named pipe), not a regular file"),
        "{err}"
    );
    assert!(
        err.to_string().contains("`-`"),
        "the fix names stdin: {err}"
    );
    let err = write_output(&fifo, b"x", WriteOptions::default()).unwrap_err();
    assert!(matches!(err, UserIoError::Refused { .. }), "{err}");
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(std::fs::metadata(&fifo)
        .expect("fifo")
        .file_type()
        .is_fifo());
}

#[test]
fn directories_are_refused_as_files_and_accepted_as_output_folders() {
    let dir = tmp();
    let err = read_input(dir.path(), InputKind::Profile).unwrap_err();
    assert!(err.to_string().contains("is a directory"), "{err}");
    let err = write_output(dir.path(), b"x", WriteOptions::default()).unwrap_err();
    assert!(err.to_string().contains("is a directory"), "{err}");

    let plots = dir.path().join("plots/nested");
    assert_eq!(
        create_output_dir(&plots, WriteOptions::default()).expect("created"),
        plots
    );
    assert!(plots.is_dir());
    create_output_dir(&plots, WriteOptions::default()).expect("an existing folder is fine");
    let file = dir.path().join("file");
    std::fs::write(&file, b"").expect("file");
    let err = create_output_dir(&file, WriteOptions::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("is a regular file, not a directory"),
        "{err}"
    );
    let err = create_output_dir(Path::new("/dev/null"), FOLLOW).unwrap_err();
    assert!(err.to_string().contains("character device"), "{err}");
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&plots, &link).expect("symlink");
    assert!(matches!(
        create_output_dir(&link, WriteOptions::default()),
        Err(UserIoError::Symlink { .. })
    ));
    assert_eq!(create_output_dir(&link, FOLLOW).expect("followed"), plots);
}

#[test]
fn oversize_inputs_are_refused_naming_the_cap() {
    let dir = tmp();
    let big = dir.path().join("big.json");
    let cap = InputKind::SimulatorConfig.cap_bytes();
    std::fs::write(&big, vec![b' '; cap as usize + 1]).expect("write");
    let err = read_input(&big, InputKind::SimulatorConfig).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains(&format!("larger than {cap} bytes")), "{msg}");
    assert!(msg.contains("simulator config"), "{msg}");
    assert_eq!(err.class(), ErrorClass::Invalid);
    std::fs::write(&big, vec![b' '; cap as usize]).expect("write");
    assert_eq!(
        read_input(&big, InputKind::SimulatorConfig)
            .expect("at the cap")
            .len(),
        cap as usize
    );
    // The cap holds for streams too, while reading.
    let endless = std::io::repeat(b'x');
    let err = read_from(endless, Path::new("-"), InputKind::Decision).unwrap_err();
    assert!(matches!(err, UserIoError::TooLarge { .. }), "{err}");
}

#[test]
fn dev_zero_is_refused_quickly() {
    let start = Instant::now();
    let err = read_input(Path::new("/dev/zero"), InputKind::Trace).unwrap_err();
    assert!(err.to_string().contains("character device"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(2));
}

#[test]
fn missing_inputs_are_not_found() {
    let err = read_input(Path::new("/nonexistent/p.json"), InputKind::Profile).unwrap_err();
    assert_eq!(err.class(), ErrorClass::NotFound);
    assert!(err.to_string().contains("no such file"), "{err}");
}

#[test]
fn text_inputs_drop_a_bom_and_refuse_other_encodings() {
    let dir = tmp();
    let path = dir.path().join("p.json");
    std::fs::write(&path, b"\xEF\xBB\xBF{}").expect("write");
    assert_eq!(read_text(&path, InputKind::Profile).expect("read"), "{}");
    std::fs::write(&path, b"\xFF\xFE{\x00}\x00").expect("write");
    let err = read_input(&path, InputKind::Profile).unwrap_err();
    assert!(err.to_string().contains("UTF-16 byte order mark"), "{err}");
    std::fs::write(&path, b"{\"a\": \"\xC3\x28\"}").expect("write");
    let err = read_input(&path, InputKind::Curves).unwrap_err();
    assert!(err.to_string().contains("invalid UTF-8 at byte 7"), "{err}");
    // A binary kind keeps its bytes as they are.
    std::fs::write(&path, b"\xEF\xBB\xBF\xFF").expect("write");
    assert_eq!(
        read_input(&path, InputKind::Trace).expect("read"),
        b"\xEF\xBB\xBF\xFF"
    );
}

#[test]
fn non_utf8_paths_work() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let dir = tmp();
    let path = dir.path().join(OsStr::from_bytes(b"out\xff.json"));
    write_output(&path, b"{}", WriteOptions::default()).expect("written");
    assert_eq!(read_input(&path, InputKind::Profile).expect("read"), b"{}");
    write_output(&path, b"[]", WriteOptions::default()).expect("replaced");
    assert_eq!(std::fs::read(&path).expect("read"), b"[]");
    let err = read_input(
        &dir.path().join(OsStr::from_bytes(b"no\xfe")),
        InputKind::Profile,
    );
    assert!(
        err.unwrap_err().to_string().contains("no\u{fffd}"),
        "shown lossily"
    );
}

#[test]
fn a_write_error_is_reported_and_leaves_nothing_behind() {
    let dir = tmp();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).expect("dir");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let probe = ro.join("probe");
    if std::fs::write(&probe, b"").is_ok() {
        // Running as root: permissions do not stop writes here.
        let _ = std::fs::remove_file(&probe);
        eprintln!("skipped the permission case: running with CAP_DAC_OVERRIDE");
    } else {
        let err = replace_file(&ro.join("out.json"), b"x", WriteOptions::default()).unwrap_err();
        assert_eq!(err.class(), ErrorClass::Io);
        assert!(
            err.to_string().contains("creating a temporary file"),
            "{err}"
        );
    }
    let _ = std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755));
    let err = write_output(
        &dir.path().join("missing/out.json"),
        b"x",
        WriteOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
}

/// The child half of the stdio tests: reads or writes `-` as the parent asks.
#[test]
fn stdio_child() {
    match std::env::var("MEMTUNE_USERIO_CHILD").as_deref() {
        Ok("read") => {
            let text = read_text(Path::new("-"), InputKind::Profile).expect("stdin");
            println!("GOT[{text}]");
        }
        Ok("write") => {
            let bytes = vec![b'x'; 1 << 16];
            write_output(Path::new("-"), &bytes, WriteOptions::default()).expect("stdout");
        }
        _ => {}
    }
}

fn child(mode: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    cmd.args(["--exact", "stdio_child", "--nocapture", "--test-threads=1"])
        .env("MEMTUNE_USERIO_CHILD", mode);
    cmd
}

#[test]
fn dash_reads_stdin_with_the_bom_dropped() {
    let mut c = child("read")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = c.stdin.take().expect("stdin");
    stdin
        .write_all(b"\xEF\xBB\xBF{\"from\": \"stdin\"}")
        .expect("write");
    drop(stdin);
    let out = c.wait_with_output().expect("wait");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("GOT[{\"from\": \"stdin\"}]"), "{stdout}");
}

#[test]
fn dash_writes_stdout_as_a_stream() {
    let out = child("write").stdout(Stdio::piped()).output().expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out
        .stdout
        .windows(1 << 10)
        .any(|w| w.iter().all(|&b| b == b'x')));
}

#[test]
fn a_full_disk_under_a_stream_is_reported_at_write_or_flush() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("skipped: no /dev/full");
        return;
    };
    let origin = Path::new("-");
    let err = write_stream(full.try_clone().expect("dup"), origin, b"x").unwrap_err();
    assert_eq!(err.class(), ErrorClass::Io);
    assert!(err.to_string().starts_with("-: writing failed"), "{err}");
    // Buffered, the write succeeds and the flush fails: still an error.
    let err = write_stream(std::io::BufWriter::new(full), origin, b"x").unwrap_err();
    assert!(err.to_string().starts_with("-: flushing failed"), "{err}");
}

#[test]
fn dev_stdout_is_a_stream_not_a_file_to_replace() {
    assert!(memtune_core::userio::is_stdout(Path::new("/dev/stdout")));
    assert!(memtune_core::userio::is_stdout(Path::new("-")));
    assert!(!memtune_core::userio::is_stdout(&PathBuf::from("./-")));
}
