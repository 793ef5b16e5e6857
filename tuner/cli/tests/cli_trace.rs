//! `cargo tune trace KERNEL` through the built binary, read back by `cargo tune reuse`: a
//! scoped sampling stream keeps every reuse inside its scope, the stencil's reuses stay
//! within two planes, and the bounds hold before anything is written.

mod common;

use common::Env;
use serde_json::Value;
use std::path::Path;

/// The exact histogram of a u64 trace at `granularity`.
fn histogram(env: &Env, trace: &Path, granularity: &str) -> Value {
    let r = env.run(&[
        "reuse",
        trace.to_str().unwrap(),
        "--format",
        "u64",
        "--granularity",
        granularity,
        "--bins",
        "exact",
        "--json",
    ]);
    r.expect(0);
    r.json()
}

fn max_distance(h: &Value) -> u64 {
    h["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[0].as_u64().unwrap())
        .max()
        .unwrap_or(0)
}

#[test]
fn scoped_sampling_keeps_reuse_distances_within_the_scopes_words() {
    let env = Env::new();
    let sample = |scope: Option<&str>, name: &str| {
        let out = env.dir.path().join(name);
        let mut args = vec![
            "trace",
            "sampling",
            "--region",
            "1MiB",
            "--threads",
            "1024",
            "--reads",
            "64",
            "-o",
            out.to_str().unwrap(),
        ];
        if let Some(s) = scope {
            args.extend(["--scope", s]);
        }
        env.run(&args).expect(0);
        histogram(&env, &out, "4")
    };
    let scoped = sample(Some("16KiB"), "scoped.u64");
    let unscoped = sample(None, "plain.u64");
    for h in [&scoped, &unscoped] {
        assert_eq!(h["references"], 1024 * 64, "every draw reads once: {h}");
    }
    // A 16 KiB scope holds 4096 words; each pass reads only its own scope's words.
    let (s, u) = (max_distance(&scoped), max_distance(&unscoped));
    assert!(s < 4096, "scoped reuse at distance {s}");
    assert!(u >= 4096, "unscoped reuses reach across the region: {u}");
    assert_eq!(
        scoped["distinct"], unscoped["distinct"],
        "the same words read"
    );
}

#[test]
fn stencil_reuses_stay_within_two_planes_and_bounds_hold() {
    let env = Env::new();
    let out = env.dir.path().join("st.u64");
    let args = [
        "trace", "stencil", "--nx", "16", "--ny", "16", "--nz", "8", "-o",
    ];
    let mut all: Vec<&str> = args.to_vec();
    all.push(out.to_str().unwrap());
    env.run(&all).expect(0);
    let h = histogram(&env, &out, "4");
    // 14·14·6 interior cells read 6 words and write 1; the other 872 read and write.
    assert_eq!(h["references"], 14 * 14 * 6 * 7 + 872 * 2);
    let d = max_distance(&h);
    // A word is read first as a z+1 neighbour and last as a z-1 neighbour, two planes
    // (256 cells each) later: what lies between is at most two planes of input and output.
    assert!(d > 256 && d < 4 * 256, "reuse beyond two planes: {d}");
    let small = env.dir.path().join("small.u64");
    let mut capped = all.clone();
    capped.pop();
    capped.extend([small.to_str().unwrap(), "--max-references", "100"]);
    env.run(&capped)
        .expect(4)
        .says_on_stderr("--max-references 100");
    assert!(!small.exists(), "nothing is written");
    env.run(&[
        "trace",
        "grouping",
        "--distinct",
        "1000000",
        "--max-buckets",
        "1024",
    ])
    .expect(2)
    .says_on_stderr("--max-buckets 1024");
}
