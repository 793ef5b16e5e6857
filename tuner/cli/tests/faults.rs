//! `MEMTUNE_FAULT` through the built binary, on the simulated GPU: the named section fails
//! with its reason in the profile, the others are kept, the profile is whole and valid, and
//! the exit code is 7; a bad value is a usage error before anything runs.

mod common;

use common::Env;
use memtune_tests::SIM_TWO_KINDS;
use serde_json::Value;

fn probe(env: &Env, fault: Option<&str>, out: &str) -> common::Run {
    let config = env.file("two-kinds.json", SIM_TWO_KINDS);
    let out = env.dir.path().join(out);
    let mut cmd = env.cmd(&[
        "probe".as_ref(),
        "--simulate".as_ref(),
        config.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    match fault {
        Some(f) => cmd.env("MEMTUNE_FAULT", f),
        None => cmd.env_remove("MEMTUNE_FAULT"),
    };
    common::Run(cmd.output().unwrap())
}

fn profile(env: &Env, out: &str) -> Value {
    let text = std::fs::read_to_string(env.dir.path().join(out)).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn an_injected_allocation_fails_its_section_keeps_the_others_and_exits_7() {
    let env = Env::new();
    probe(&env, None, "clean.json").expect(0);
    probe(&env, Some("alloc:pinned"), "faulty.json")
        .expect(7)
        .says("MEMTUNE_FAULT=alloc:pinned");
    let (clean, faulty) = (profile(&env, "clean.json"), profile(&env, "faulty.json"));
    for section in ["tlb", "random_access"] {
        let pinned = &faulty[section]["pinned"];
        assert_eq!(pinned["status"], "failed", "{section}: {pinned}");
        let reason = pinned["reason"].as_str().unwrap();
        assert!(
            reason.contains("injected by MEMTUNE_FAULT") && reason.contains("alloc:"),
            "{section}: {reason}"
        );
        // The other kind is measured as without the fault.
        assert_eq!(faulty[section]["device"], clean[section]["device"]);
        assert_eq!(faulty[section]["device"]["status"], "measured");
    }
    assert_eq!(faulty["caches"], clean["caches"]);
    assert_eq!(faulty["caches"]["status"], "measured");
    // The file is whole: it verifies (schema, digest, validation).
    let path = env.dir.path().join("faulty.json");
    env.run(&["verify".as_ref(), path.as_os_str()]).expect(0);
}

#[test]
fn an_injected_cache_launch_fails_only_the_caches() {
    let env = Env::new();
    probe(&env, Some("launch:caches"), "p.json").expect(7);
    let p = profile(&env, "p.json");
    assert_eq!(p["caches"]["status"], "failed");
    assert!(p["caches"]["reason"]
        .as_str()
        .unwrap()
        .contains("(launch:caches)"));
    for kind in ["device", "pinned"] {
        assert_eq!(p["tlb"][kind]["status"], "measured", "{kind}");
    }
}

#[test]
fn a_fault_the_simulator_cannot_reach_is_said_and_fails_nothing() {
    let env = Env::new();
    probe(&env, Some("launch:staging"), "p.json")
        .expect(0)
        .says("never fires");
}

#[test]
fn a_bad_fault_list_is_a_usage_error_before_the_probe() {
    let env = Env::new();
    for (value, says) in [
        ("alloc:pinnned", "unknown section `pinnned`"),
        ("alloc:pinnned", "tlb-pinned"),
        ("free:pinned", "unknown operation `free`"),
        ("alloc:pinned,", "empty"),
        ("", "set but empty"),
        ("pinned", "not op:section"),
    ] {
        probe(&env, Some(value), "bad.json")
            .expect(2)
            .says(says)
            .says("MEMTUNE_FAULT");
        assert!(
            !env.dir.path().join("bad.json").exists(),
            "{value:?}: nothing is written"
        );
    }
}
