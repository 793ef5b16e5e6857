//! The simulator's limits: every field out of range is refused with its key path, quickly;
//! relations that would put a derived number outside a profile's bounds are refused; the
//! work of a probe is estimated and bounded before it runs and stopped while it runs; a
//! probe stays within its estimate.

use memtune_core::profile::{MemoryKind, Section};
use memtune_probe::sim::{SimConfig, Simulator, MAX_MEMORY_USE, MAX_WORK_STEPS};
use memtune_probe::{probe_caches, probe_tlb, MemorySystem, NoProgress, ProbeOptions};
use std::time::{Duration, Instant};

/// A GPU with a TLB and two cache levels, every value well inside the limits.
const BASE: &str = r#"{
  "schema": "memtune-sim/1", "name": "limits", "sm_count": 8, "clock_mhz": 1000,
  "l2_hit_cycles": 300,
  "memory_kinds": {
    "device": { "size_bytes": 17179869184, "extra_cycles": 0, "tlb": [
      { "entries": 16, "page_bytes": 2097152, "miss_cycles": 10, "walks_in_flight": 64 } ] }
  },
  "caches": [
    { "name": "L1", "size_bytes": 32768, "line_bytes": 128, "ways": 4, "hit_cycles": 30 },
    { "name": "L2", "size_bytes": 4194304, "line_bytes": 128, "ways": 16, "hit_cycles": 200 } ],
  "dram_cycles": 500,
  "max_chase_elements": 65536
}"#;

/// `BASE` with one text replaced (which must occur).
fn with(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "test bug: {from}");
    BASE.replacen(from, to, 1)
}

/// The error of `text`, which must come within a second.
fn refused(text: &str) -> String {
    let start = Instant::now();
    let result = SimConfig::from_json_str(text, "gpus/hostile.json");
    assert!(start.elapsed() < Duration::from_secs(1), "slow refusal");
    match result {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    }
}

#[track_caller]
fn assert_names(message: &str, key: &str) {
    assert!(
        message.contains("gpus/hostile.json") && message.contains(&format!("`{key}`")),
        "`{key}` not named in: {message}"
    );
}

#[test]
fn huge_sets_and_tiny_lines_are_refused_quickly() {
    let start = Instant::now();
    // 2^27 sets of one 128 B line (16 GiB), and 2^30 sets of 4 B lines (4 GiB).
    for (size, line) in [(17179869184u64, 128u64), (4294967296, 4)] {
        let text = with(
            r#""size_bytes": 4194304, "line_bytes": 128, "ways": 16"#,
            &format!(r#""size_bytes": {size}, "line_bytes": {line}, "ways": 1"#),
        );
        let e = refused(&text);
        assert_names(&e, "caches[1].size_bytes");
        assert!(e.contains("sets"), "{e}");
    }
    for line in ["1", "2", "48"] {
        let e = refused(&with(
            r#""line_bytes": 128, "ways": 4"#,
            &format!(r#""line_bytes": {line}, "ways": 4"#),
        ));
        assert_names(&e, "caches[0].line_bytes");
    }
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn clocks_outside_1_mhz_to_10_ghz_are_refused() {
    for clock in ["1e308", "0.5", "10001"] {
        let e = refused(&with(
            r#""clock_mhz": 1000"#,
            &format!(r#""clock_mhz": {clock}"#),
        ));
        assert_names(&e, "clock_mhz");
        assert!(!e.contains("0000000000000000"), "unreadable number: {e}");
    }
    for clock in ["10", "10000"] {
        let text = with(r#""clock_mhz": 1000"#, &format!(r#""clock_mhz": {clock}"#));
        assert!(SimConfig::from_json_str(&text, "x").is_ok(), "{clock}");
    }
}

#[test]
fn every_field_limit_names_its_key() {
    let kib16 = r#""size_bytes": 4194304, "line_bytes": 128, "ways": 16"#;
    let level =
        r#"{ "entries": 16, "page_bytes": 2097152, "miss_cycles": 10, "walks_in_flight": 64 }"#;
    let cases: Vec<(String, &str)> = vec![
        (with(r#""sm_count": 8"#, r#""sm_count": 4097"#), "sm_count"),
        (
            with(r#""l2_hit_cycles": 300"#, r#""l2_hit_cycles": 1e6"#),
            "l2_hit_cycles",
        ),
        (
            with(
                r#""size_bytes": 17179869184"#,
                r#""size_bytes": 2251799813685248"#,
            ),
            "memory_kinds.device.size_bytes",
        ),
        (
            with(r#""extra_cycles": 0"#, r#""extra_cycles": 1e6"#),
            "memory_kinds.device.extra_cycles",
        ),
        (
            with(r#""page_bytes": 2097152"#, r#""page_bytes": 512"#),
            "memory_kinds.device.tlb[0].page_bytes",
        ),
        (
            with(r#""page_bytes": 2097152"#, r#""page_bytes": 34359738368"#),
            "memory_kinds.device.tlb[0].page_bytes",
        ),
        (
            with(r#""miss_cycles": 10"#, r#""miss_cycles": 2e5"#),
            "memory_kinds.device.tlb[0].miss_cycles",
        ),
        (
            with(r#""walks_in_flight": 64"#, r#""walks_in_flight": 0.5"#),
            "memory_kinds.device.tlb[0].walks_in_flight",
        ),
        (
            with(level, &[level; 17].join(", ")),
            "memory_kinds.device.tlb",
        ),
        (
            with(
                kib16,
                r#""size_bytes": 4194304, "line_bytes": 128, "ways": 2048"#,
            ),
            "caches[1].ways",
        ),
        (
            with(
                kib16,
                r#""size_bytes": 4194304, "line_bytes": 8192, "ways": 16"#,
            ),
            "caches[1].line_bytes",
        ),
        (
            with(
                kib16,
                r#""size_bytes": 34359738368, "line_bytes": 128, "ways": 16"#,
            ),
            "caches[1].size_bytes",
        ),
        (
            with(r#""hit_cycles": 200"#, r#""hit_cycles": 2e5"#),
            "caches[1].hit_cycles",
        ),
        (
            with(r#""dram_cycles": 500"#, r#""dram_cycles": 1e9"#),
            "dram_cycles",
        ),
        (
            with(
                r#""max_chase_elements": 65536"#,
                r#""max_chase_elements": 8388608"#,
            ),
            "max_chase_elements",
        ),
    ];
    for (text, key) in cases {
        assert_names(&refused(&text), key);
    }
    let l1 =
        r#"{ "name": "L1", "size_bytes": 32768, "line_bytes": 128, "ways": 4, "hit_cycles": 30 },"#;
    let many: String = (0..8)
        .map(|i| l1.replace("\"L1\"", &format!("\"C{i}\"")))
        .collect();
    assert_names(&refused(&with(l1, &format!("{l1}{many}"))), "caches");
}

#[test]
fn relations_that_would_leave_a_profile_s_bounds_are_refused() {
    let level =
        r#"{ "entries": 16, "page_bytes": 2097152, "miss_cycles": 10, "walks_in_flight": 64 }"#;
    // Ten levels of 20 000 cycles: a load missing them all takes 200 300 cycles.
    let slow = r#"{ "entries": 16, "page_bytes": 2097152, "miss_cycles": 20000 }"#;
    let e = refused(&with(level, &[slow; 10].join(", ")));
    assert_names(&e, "memory_kinds.device");
    // 500 cycles at 1 MHz: half a millisecond a load.
    let e = refused(&with(r#""clock_mhz": 1000"#, r#""clock_mhz": 1"#));
    assert_names(&e, "clock_mhz");
    assert!(e.contains("ns"), "{e}");
    // 4096 SMs at 10 GHz with 1-cycle loads: petabytes of reads a second.
    let fast = with(r#""sm_count": 8"#, r#""sm_count": 4096"#)
        .replacen(r#""clock_mhz": 1000"#, r#""clock_mhz": 10000"#, 1)
        .replacen(r#""l2_hit_cycles": 300"#, r#""l2_hit_cycles": 1"#, 1);
    assert_names(&refused(&fast), "l2_hit_cycles");
}

#[test]
fn a_probe_over_the_work_bound_is_refused_before_it_runs() {
    let wide = with(
        r#""size_bytes": 4194304, "line_bytes": 128, "ways": 16"#,
        r#""size_bytes": 67108864, "line_bytes": 128, "ways": 1024"#,
    )
    .replacen(
        r#""max_chase_elements": 65536"#,
        r#""max_chase_elements": 2097152"#,
        1,
    );
    let e = refused(&wide);
    assert_names(&e, "caches[1].ways");
    assert!(e.contains("about a minute"), "{e}");
    // 2^24 sets, the only level: within the field limits, but a lookup among so many sets
    // costs, and every path walks it.
    let l1 =
        r#"{ "name": "L1", "size_bytes": 32768, "line_bytes": 128, "ways": 4, "hit_cycles": 30 },"#;
    let sparse = with(l1, "")
        .replacen(
            r#""size_bytes": 4194304, "line_bytes": 128, "ways": 16"#,
            r#""size_bytes": 17179869184, "line_bytes": 128, "ways": 8"#,
            1,
        )
        .replacen(
            r#""size_bytes": 17179869184, "extra"#,
            r#""size_bytes": 1099511627776, "extra"#,
            1,
        )
        .replacen(
            r#""max_chase_elements": 65536"#,
            r#""max_chase_elements": 4194304"#,
            1,
        );
    assert_names(&refused(&sparse), "caches[0].size_bytes");
    // Eight levels, six of them big, on rings of 2^22: gigabytes held by one chase.
    let big = r#"{ "name": "L2", "size_bytes": 4194304, "line_bytes": 128, "ways": 16, "hit_cycles": 200 }"#;
    let levels: Vec<String> = (0..6)
        .map(|i| {
            big.replace("\"L2\"", &format!("\"C{i}\""))
                .replace("4194304", &(1u64 << (29 + i % 2)).to_string())
        })
        .collect();
    let heavy = with(big, &format!("{big}, {}", levels.join(", "))).replacen(
        r#""max_chase_elements": 65536"#,
        r#""max_chase_elements": 4194304"#,
        1,
    );
    let e = refused(&heavy);
    assert_names(&e, "max_chase_elements");
    assert!(e.contains(&format!("{} MiB", MAX_MEMORY_USE >> 20)), "{e}");
}

#[test]
fn the_estimate_follows_the_probe_options() {
    let config = SimConfig::from_json_str(BASE, "x").unwrap();
    let default = ProbeOptions::default();
    let full = config.check_work(&default).unwrap();
    assert!(full.steps() < MAX_WORK_STEPS as f64 / 10.0, "{full:?}");
    let quick = config.estimate_work(&ProbeOptions {
        quick: true,
        ..default.clone()
    });
    assert!(quick.cache_steps < full.cache_steps, "{quick:?} {full:?}");
    let bounded = config.estimate_work(&ProbeOptions {
        max_footprint_bytes: Some(1 << 30),
        ..default.clone()
    });
    assert!(bounded.tlb_steps < full.tlb_steps, "{bounded:?} {full:?}");
    let sharing = config.estimate_work(&ProbeOptions {
        tlb_sharing: true,
        ..default.clone()
    });
    assert!(sharing.tlb_steps > full.tlb_steps);
    let pinned_only = config.estimate_work(&ProbeOptions {
        kinds: vec![MemoryKind::Pinned],
        ..default
    });
    assert_eq!(pinned_only.tlb_steps, 0.0);
    assert_eq!(pinned_only.cache_steps, full.cache_steps);
}

#[test]
fn probes_stay_within_their_estimates() {
    let mut configs = vec![SimConfig::from_json_str(BASE, "x").unwrap()];
    for name in memtune_probe::sim::BUILTIN_NAMES {
        configs.push(SimConfig::builtin(name).unwrap());
    }
    let options = ProbeOptions::default();
    for config in configs {
        let estimate = config.check_work(&options).unwrap();
        let mut sim = Simulator::new(config.clone());
        probe_caches(&mut sim, &options, &mut NoProgress);
        probe_tlb(&mut sim, &options, &mut NoProgress);
        let done = sim.stats().work_steps as f64;
        assert!(
            done > 0.0 && done <= estimate.steps(),
            "{}: {done} > {estimate:?}",
            config.name
        );
    }
}

#[test]
fn the_simulator_stops_at_its_work_budget() {
    let config = SimConfig::builtin("gt200").unwrap();
    let mut sim = Simulator::new(config).with_work_budget(10_000);
    let options = ProbeOptions::default();
    let caches = probe_caches(&mut sim, &options, &mut NoProgress);
    match &caches.section {
        Section::Failed { reason } => assert!(reason.contains("steps of work"), "{reason}"),
        other => panic!("{}", other.status_line()),
    }
    let tlb = probe_tlb(&mut sim, &options, &mut NoProgress);
    let device = &tlb.tlb[&MemoryKind::Device];
    assert!(device
        .as_ref()
        .is_err_and(|e| e.to_string().contains("steps of work")));
    assert!(sim.stats().work_steps < 1_000_000);
    // One chase too long to hold is refused outright, whatever the budget.
    let mut sim = Simulator::new(SimConfig::from_json_str(BASE, "x").unwrap());
    let start = Instant::now();
    let e = sim
        .chase(MemoryKind::Device, 1024, 16 << 30, 0)
        .unwrap_err();
    assert!(e.to_string().contains("exceeds"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(1));
}
