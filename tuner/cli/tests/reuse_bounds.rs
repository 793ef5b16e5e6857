//! `cargo tune reuse` on endless or special inputs, through the built binary: a device is
//! refused before reading, and an endless stream (stdin, a named pipe) ends at
//! `--max-records` with an error naming the bound and the flag.

mod common;

use common::{run_within, Env};
use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

#[cfg(unix)]
#[test]
fn a_device_is_refused_before_it_is_read() {
    let env = Env::new();
    for format in ["text", "u64", "lackey"] {
        let r = run_within(env.cmd(&["reuse", "/dev/zero", "--format", format]), LIMIT);
        r.expect(4)
            .says("/dev/zero is a character device")
            .says("a pipe, or stdin");
    }
}

#[test]
fn an_endless_stdin_ends_at_the_record_bound() {
    let env = Env::new();
    for (pattern, format) in [
        (&b"0x10\n"[..], "text"),
        (&b"\0"[..], "u64"),
        (&b"\n"[..], "text"),
    ] {
        let mut child = env
            .cmd(&["reuse", "-", "--format", format, "--max-records", "20000"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        // `yes`: writes until the reader goes away.
        let writer = std::thread::spawn(move || {
            let block = pattern.repeat(4096);
            while stdin.write_all(&block).is_ok() {}
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        let r = common::Run(out);
        r.expect(4)
            .says("more than 20000 records")
            .says("--max-records");
    }
}

#[cfg(unix)]
#[test]
fn an_endless_named_pipe_ends_at_the_record_bound() {
    let env = Env::new();
    let fifo = env.dir.path().join("trace.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let path = fifo.clone();
    let writer = std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        let block = b"1\n".repeat(4096);
        while f.write_all(&block).is_ok() {}
    });
    let r = run_within(
        env.cmd(&["reuse", fifo.to_str().unwrap(), "--max-records", "30000"]),
        LIMIT,
    );
    // The writer ends on the broken pipe; it is not joined, so a failure here cannot hang.
    drop(writer);
    r.expect(4).says("more than 30000 records");
}

#[test]
fn a_trace_of_exactly_the_bound_is_read_whole() {
    let env = Env::new();
    let trace = env.file("t.txt", &"0x40\n".repeat(100));
    let t = trace.to_str().unwrap();
    let r = env.run(&["reuse", t, "--json", "--max-records", "100"]);
    r.expect(0);
    assert_eq!(r.json()["references"], 100);
    env.run(&["reuse", t, "--max-records", "99"])
        .expect(4)
        .says("more than 99 records");
}
