use super::super::commands::Ctx;
use super::super::Cli;
use super::*;
use clap::Parser;
use memtune_core::userio::WriteOptions;

/// Arguments split at spaces.
fn os(line: &str) -> Vec<OsString> {
    line.split_whitespace().map(OsString::from).collect()
}

fn parse(line: &str) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(os(&format!("cargo-tune {line}")))
}

#[test]
fn a_worker_gets_the_parents_flags_and_its_own_gpu() {
    let flags = "--json -q --project --plot charts --kinds device,pinned --max-pinned 2GiB \
                 --quick --tlb-sharing --no-staging";
    let parent = os(&format!(
        "tune {flags} --device 5 --device=6 --one-at-a-time --follow-symlinks"
    ));
    let args = worker_args(&parent, 1, 2);
    let want = format!("tune {flags} --follow-symlinks --device 1 --worker --parallel-with 2");
    assert_eq!(args, os(&want));
    // Clap takes it (less `tune`, as `run` drops it) as the worker of GPU 1 of 2, with
    // every flag of the parent.
    let cli = parse(&want["tune ".len()..]).expect("the worker's arguments parse");
    assert!(cli.command.is_none());
    let t = &cli.tune;
    assert_eq!(
        (t.device, t.worker, t.parallel_with),
        (Some(1), true, Some(2))
    );
    assert!(t.project && !t.one_at_a_time);
    assert!(t.probe.quick && t.probe.tlb_sharing && t.probe.no_staging);
    assert_eq!(t.probe.plot.as_deref(), Some(Path::new("charts")));
    assert_eq!(t.probe.max_pinned, Some(2 << 30));
    assert!(cli.global.json && cli.global.quiet && cli.global.follow_symlinks);
}

#[test]
fn a_workers_flags_of_its_own_are_replaced() {
    let args = worker_args(&os("--worker --parallel-with 4 --parallel-with=4"), 3, 2);
    assert_eq!(args, os("--device 3 --worker --parallel-with 2"));
}

#[test]
fn the_worker_flags_are_internal_and_go_together() {
    assert!(parse("--worker").is_err(), "a worker needs its GPU");
    assert!(parse("--device 0 --worker").is_err());
    assert!(parse("--parallel-with 2").is_err());
    assert!(parse("--device 0 --worker --parallel-with 0").is_err());
    assert!(parse("--device 0 --worker --parallel-with 2 --one-at-a-time").is_err());
    assert!(parse("--device 0 --worker --parallel-with 2").is_ok());
    let help = match parse("--help") {
        Err(e) => e.to_string(),
        Ok(_) => String::new(),
    };
    assert!(help.contains("--one-at-a-time"), "{help}");
    assert!(
        !help.contains("--worker") && !help.contains("--parallel-with"),
        "{help}"
    );
}

fn stored_report(ordinal: usize, uuid: &str, path: &Path) -> Report {
    Report {
        ordinal,
        uuid: Some(uuid.to_string()),
        path: Some(path.to_string_lossy().into_owned()),
        charts: vec!["charts/gpu1/tlb-device.svg".into()],
        failed: true,
        error: None,
    }
}

#[test]
fn a_report_is_one_line_read_back_whole() {
    let uuid = memtune_tests::uuid(1);
    let report = stored_report(1, &uuid, Path::new("/cache/x.json"));
    let line = serde_json::to_string(&report).expect("a report serializes");
    assert!(!line.contains('\n'));
    // Whatever else the worker printed before, its last line is the report.
    let stdout = format!("something else\n{line}\n\n");
    let back = parse_report(1, stdout.as_bytes()).expect("a valid report");
    assert_eq!(back, Some(report));
    let e = CliError::new(Exit::Interrupted, "interrupted: the probe stopped");
    let line = serde_json::to_string(&Report::failed(0, &e)).expect("a report serializes");
    let back = parse_report(0, line.as_bytes()).expect("a valid report");
    let error = back.and_then(|r| r.error).expect("an error");
    assert_eq!(error.exit_code, 130);
    assert_eq!(error.message, "interrupted: the probe stopped");
    assert_eq!(parse_report(0, b"\n  \n").expect("no report"), None);
}

#[test]
fn garbage_on_a_workers_stdout_is_an_error_named_by_its_gpu() {
    let e = parse_report(2, b"Segmentation fault\n").expect_err("not a report");
    let e = first_error(vec![(2, e)]).expect("an error");
    assert_eq!(e.exit, Exit::Internal);
    let m = &e.message;
    assert!(
        m.starts_with("GPU 2: its worker's result is not valid"),
        "{m}"
    );
    assert!(m.contains("`Segmentation fault`"), "{m}");
    let e = parse_report(2, br#"{"ordinal": 3}"#).expect_err("another GPU's report");
    assert!(e.message.contains("GPU 3"), "{}", e.message);
}

#[test]
fn a_workers_lines_are_named_by_its_gpu_once() {
    let line = "GPU 1: caches: measured (3.0 s)";
    assert_eq!(labelled(1, line), line);
    assert_eq!(labelled(1, "GPU 1 device: done"), "GPU 1 device: done");
    assert_eq!(labelled(1, "GPU 10: staging"), "GPU 1: GPU 10: staging");
    assert_eq!(labelled(1, "warning: x"), "GPU 1: warning: x");
    assert_eq!(labelled(0, ""), "GPU 0: ");
}

#[cfg(unix)]
#[test]
fn a_worker_without_a_report_is_interrupted_or_internal() {
    use std::os::unix::process::ExitStatusExt;
    // Wait statuses: the exit code in the second byte, a signal in the low bits.
    let e = without_report(ExitStatus::from_raw(130 << 8));
    assert_eq!(e.exit, Exit::Interrupted);
    let e = without_report(ExitStatus::from_raw(2));
    assert_eq!(e.exit, Exit::Interrupted);
    let e = without_report(ExitStatus::from_raw(101 << 8));
    assert_eq!(e.exit, Exit::Internal);
    assert!(
        e.message.starts_with("its worker panicked"),
        "{}",
        e.message
    );
    let e = without_report(ExitStatus::from_raw(2 << 8));
    assert!(e.message.contains("exit status: 2"), "{}", e.message);
}

/// A worker stand-in: a shell running `script`.
#[cfg(unix)]
fn shell(ordinal: usize, script: &str) -> Result<Report, CliError> {
    let child = spawn(Path::new("/bin/sh"), &[OsString::from("-c"), script.into()])
        .expect("the shell starts");
    finish(ordinal, child)
}

#[cfg(unix)]
#[test]
fn a_workers_stdout_is_read_while_its_stderr_is_relayed() {
    let line = serde_json::to_string(&stored_report(1, "GPU-x", Path::new("/c/GPU-x.json")))
        .expect("a report serializes");
    // More stderr than a pipe holds, so a parent that relayed none would hang here.
    let script = format!(
        "i=0; while [ $i -lt 2000 ]; do echo \"GPU 1: line $i of 80 characters or so .....\" >&2; \
         i=$((i+1)); done; echo '{line}'; exit 7"
    );
    let report = shell(1, &script).expect("a report");
    assert_eq!(report.uuid.as_deref(), Some("GPU-x"));
    assert!(report.failed);
    let e = shell(1, "echo 'GPU 1: caches: stopped' >&2; exit 130").expect_err("no report");
    assert_eq!(e.exit, Exit::Interrupted);
    let e = shell(1, "echo garbage; exit 3").expect_err("no report");
    assert!(e.message.contains("`garbage`"), "{}", e.message);
    let e = shell(1, "exit 3").expect_err("no report");
    assert!(e.message.contains("without a result"), "{}", e.message);
}

#[test]
fn a_reported_profile_is_read_back_from_the_store() {
    let dir = tempfile::TempDir::new().expect("a scratch folder");
    let ctx = Ctx {
        json: false,
        quiet: true,
        project_root: dir.path().to_path_buf(),
        write: WriteOptions::default(),
    };
    let cli = parse("--project --device 1 --worker --parallel-with 2").expect("worker arguments");
    let job = Job::new(&ctx, &cli.tune, 2, true).expect("a job");
    let (one, two) = (memtune_tests::uuid(1), memtune_tests::uuid(2));
    let mut profile = memtune_tests::profile(&one);
    memtune_core::codec::seal(&mut profile);
    let path = memtune_tests::store(job.store.dir(), &profile);

    let (stored, failed) = job
        .collect(1, &one, stored_report(1, &one, &path))
        .expect("the stored profile");
    assert!(failed);
    assert_eq!(
        (stored.ordinal, &stored.path, &stored.profile.digest),
        (1, &path, &profile.digest)
    );
    assert_eq!(stored.charts, [PathBuf::from("charts/gpu1/tlb-device.svg")]);

    let e = job
        .collect(1, &two, stored_report(1, &one, &path))
        .expect_err("another GPU's profile");
    assert!(
        e.message.contains(&format!("not of {two}")),
        "{}",
        e.message
    );
    let e = job
        .collect(
            1,
            &one,
            stored_report(1, &one, Path::new("/elsewhere.json")),
        )
        .expect_err("stored elsewhere");
    assert!(e.message.contains("/elsewhere.json"), "{}", e.message);
    let missing = job.store.path_for(&two);
    let e = job
        .collect(2, &two, stored_report(2, &two, &missing))
        .expect_err("not stored");
    assert!(e.message.contains("none is there"), "{}", e.message);
    let e = CliError::new(Exit::Io, "disk full");
    let e = job
        .collect(2, &two, Report::failed(2, &e))
        .expect_err("the worker's own error");
    assert_eq!((e.exit, e.message.as_str()), (Exit::Io, "disk full"));
}
