//! The cache probe on simulated hierarchies (seed 002, section III.B): sizes, lines and
//! ways recovered exactly, hit latencies within 10%, with the built-in noise (2% jitter,
//! 0.1% spikes) under several seeds, and the probe's cost on an H200-like hierarchy.

mod common;

use common::{Hooked, Hooks};
use memtune_core::profile::{CacheCarveout, CacheHierarchy, CachePath, Section};
use memtune_probe::sim::{CacheLevelConfig, SimConfig, Simulator};
use memtune_probe::{
    probe_caches, BackendError, Carveout, LoadPath, MemorySystem, NoProgress, ProbeOptions,
    TIMED_LOADS_CAP,
};

fn config(caches: &str, extra: &str, seed: u64) -> SimConfig {
    let text = format!(
        r#"{{"schema": "memtune-sim/1", "name": "caches", "sm_count": 8, "clock_mhz": 1800,
        "l2_hit_cycles": 300,
        "memory_kinds": {{"device": {{"size_bytes": 85899345920, "tlb": []}}}},
        "caches": {caches}, {extra}
        "noise": {{ "jitter": 0.02, "outlier_rate": 0.001, "seed": {seed} }}}}"#
    );
    SimConfig::from_json_str(&text, "test").unwrap()
}

fn measured(system: &mut dyn MemorySystem, quick: bool) -> CacheHierarchy {
    let options = ProbeOptions {
        quick,
        ..ProbeOptions::default()
    };
    match probe_caches(system, &options, &mut NoProgress).section {
        Section::Measured(h) => h,
        other => panic!("{}", other.status_line()),
    }
}

/// `measured` within 10% of `expected`, else what is wrong.
fn within(measured: f64, expected: f64, what: &str) -> Option<String> {
    ((measured - expected).abs() > 0.1 * expected)
        .then(|| format!("{what}: measured {measured:.1}, expected {expected:.1}"))
}

/// The levels a path should show: `L1` (at the carveout) on the L1 path, every other level on
/// the L2 path.
fn expected(
    config: &SimConfig,
    path: CachePath,
    carveout: CacheCarveout,
) -> Vec<(u64, &CacheLevelConfig)> {
    config
        .caches
        .iter()
        .filter(|l| (path == CachePath::L1) == l.is_l1())
        .map(|l| {
            let size = match carveout {
                CacheCarveout::MaxL1 => l.max_carveout_size_bytes.unwrap_or(l.size_bytes),
                CacheCarveout::Default => l.size_bytes,
            };
            (size, l)
        })
        .collect()
}

/// What differs between the file and the probe's answer: every level of every path, sizes,
/// lines and ways exact, latencies within 10%. `unknown_lines` names the levels whose line
/// may be unknown (no ring the probe affords can show it); if found, it must be right.
fn mismatches(config: &SimConfig, h: &CacheHierarchy, unknown_lines: &[&str]) -> Vec<String> {
    let mut wrong = Vec::new();
    let carveouts: &[CacheCarveout] = &[CacheCarveout::Default, CacheCarveout::MaxL1];
    for (path, carveouts) in [(CachePath::L1, carveouts), (CachePath::L2, &carveouts[..1])] {
        for &carveout in carveouts {
            let want = expected(config, path, carveout);
            let got: Vec<_> = h
                .levels
                .iter()
                .filter(|l| l.path == path && l.carveout == carveout)
                .collect();
            if got.len() != want.len() {
                let sizes: Vec<u64> = got.iter().map(|l| l.size_bytes).collect();
                wrong.push(format!(
                    "{path} {carveout}: {} levels {sizes:?}, expected {}",
                    got.len(),
                    want.len()
                ));
                continue;
            }
            for (g, (size, w)) in got.iter().zip(want) {
                let what = format!("{} ({path}, {carveout})", w.name);
                let line = match (unknown_lines.contains(&w.name.as_str()), g.line_bytes) {
                    (true, None) => None,
                    _ => Some(w.line_bytes),
                };
                let exact = [
                    ("size", Some(g.size_bytes), Some(size)),
                    ("ways", g.ways.map(u64::from), Some(w.ways)),
                    ("line", g.line_bytes, line),
                ];
                for (key, got, want) in exact {
                    if got != want {
                        wrong.push(format!("{what} {key}: {got:?}, expected {want:?}"));
                    }
                }
                // A fetch, where claimed, is the sector (the line where unsectored); the
                // L2's is what one DRAM miss brings in (the cold stride test).
                let fetch = match config.l2_fetch() {
                    Some(f) if path == CachePath::L2 && g.name == "L2" => f,
                    _ => w.sector(),
                };
                if g.fetch_bytes.is_some_and(|f| f != fetch) {
                    wrong.push(format!(
                        "{what} fetch: {:?}, expected {fetch}",
                        g.fetch_bytes
                    ));
                }
                wrong.extend(within(
                    g.hit_latency_cycles,
                    w.hit_cycles,
                    &format!("{what} hit"),
                ));
            }
        }
    }
    match (h.dram_latency_cycles, config.dram_cycles) {
        (Some(m), Some(e)) => wrong.extend(within(m, e, "DRAM")),
        (m, e) => wrong.push(format!("DRAM: {m:?}, expected {e:?}")),
    }
    match (h.shared_memory_latency_cycles, config.shared_memory_cycles) {
        (Some(m), Some(e)) => wrong.extend(within(m, e, "shared memory")),
        (None, None) => {}
        (m, e) => wrong.push(format!("shared memory: {m:?}, expected {e:?}")),
    }
    wrong
}

/// The noise seeds every hierarchy is probed under.
const SEEDS: std::ops::RangeInclusive<u64> = 1..=8;

/// [`robust_over_seeds`] of the hierarchy `caches` with `extra` fields (see [`config`]),
/// every level known.
fn robust_hierarchy(caches: &str, extra: &str) {
    robust_over_seeds(|seed| config(caches, extra, seed), &[]);
}

/// Probes `hierarchy(seed)` for every seed (full sweeps) and fails with every mismatch of
/// every seed, so one run shows how robust the inference is.
fn robust_over_seeds(hierarchy: impl Fn(u64) -> SimConfig, unknown_lines: &[&str]) {
    let mut failures = Vec::new();
    for seed in SEEDS {
        let config = hierarchy(seed);
        let h = measured(&mut Simulator::new(config.clone()), false);
        assert!(!h.curves.is_empty());
        failures.extend(
            mismatches(&config, &h, unknown_lines)
                .into_iter()
                .map(|m| format!("seed {seed}: {m}")),
        );
    }
    assert!(
        failures.is_empty(),
        "{} mismatches over {} seeds:\n{}",
        failures.len(),
        SEEDS.count(),
        failures.join("\n")
    );
}

/// Seed 002, Fig. 4: 384 B, 3-way, 4 sets, 32 B lines.
fn wong(seed: u64) -> SimConfig {
    config(
        r#"[{"name": "L1", "size_bytes": 384, "line_bytes": 32, "ways": 3, "hit_cycles": 30}]"#,
        r#""dram_cycles": 400, "shared_memory_cycles": 25,"#,
        seed,
    )
}

#[test]
fn wong_fig4_example_exactly() {
    robust_over_seeds(wong, &[]);
}

#[test]
fn two_level_1kib_and_64kib() {
    robust_hierarchy(
        r#"[{"name": "L1", "size_bytes": 1024, "line_bytes": 32, "ways": 2, "hit_cycles": 20},
                    {"name": "L2", "size_bytes": 65536, "line_bytes": 64, "ways": 8, "hit_cycles": 120}]"#,
        r#""dram_cycles": 450,"#,
    );
}

#[test]
fn three_levels_with_a_larger_l1_carveout() {
    robust_hierarchy(
        r#"[{"name": "L1", "size_bytes": 16384, "max_carveout_size_bytes": 49152, "line_bytes": 64, "ways": 4, "hit_cycles": 28},
                    {"name": "L2", "size_bytes": 524288, "line_bytes": 128, "ways": 8, "hit_cycles": 150},
                    {"name": "L3", "size_bytes": 4194304, "line_bytes": 128, "ways": 16, "hit_cycles": 300}]"#,
        r#""dram_cycles": 500, "shared_memory_cycles": 24, "max_chase_elements": 262144,"#,
    );
}

#[test]
fn six_mib_l2_with_64_byte_lines() {
    // 6 MiB = 64 B x 12 ways x 8192 sets; a ring of 2^18 elements lets a 32 B stride run
    // past it, so its line shows.
    robust_hierarchy(
        r#"[{"name": "L1", "size_bytes": 49152, "max_carveout_size_bytes": 98304, "line_bytes": 128, "ways": 6, "hit_cycles": 33},
                    {"name": "L2", "size_bytes": 6291456, "line_bytes": 64, "ways": 12, "hit_cycles": 210}]"#,
        r#""dram_cycles": 520, "max_chase_elements": 262144,"#,
    );
}

#[test]
fn sixty_four_mib_l2() {
    robust_hierarchy(
        r#"[{"name": "L1", "size_bytes": 32768, "line_bytes": 32, "ways": 4, "hit_cycles": 25},
                    {"name": "L2", "size_bytes": 67108864, "line_bytes": 128, "ways": 16, "hit_cycles": 300}]"#,
        r#""dram_cycles": 700, "max_chase_elements": 2097152,"#,
    );
}

/// An H100-like hierarchy: L1 96 KiB by default, 256 KiB at the largest carveout; the L2 as
/// two 25 MiB partitions, the far one slower; rings of 65536 elements.
fn h100_like(seed: u64) -> SimConfig {
    config(
        r#"[{"name": "L1", "size_bytes": 98304, "max_carveout_size_bytes": 262144, "line_bytes": 128, "ways": 4, "hit_cycles": 35},
            {"name": "L2", "size_bytes": 26214400, "line_bytes": 128, "ways": 16, "hit_cycles": 260},
            {"name": "L2 far", "size_bytes": 52428800, "line_bytes": 128, "ways": 16, "hit_cycles": 420}]"#,
        r#""dram_cycles": 650, "shared_memory_cycles": 30,"#,
        seed,
    )
}

#[test]
fn h100_like_hierarchy() {
    // No chase ring of 65536 elements can use a stride below a line past 25 MiB.
    robust_over_seeds(h100_like, &["L2", "L2 far"]);
}

/// An L1 of 128 B lines, each of four 32 B sectors (an H100's, as mt4g reports it): the
/// stride test finds the sector, the capacity-at-stride test the line.
fn sectored_l1(seed: u64) -> SimConfig {
    config(
        r#"[{"name": "L1", "size_bytes": 98304, "max_carveout_size_bytes": 262144, "line_bytes": 128, "sector_bytes": 32, "ways": 4, "hit_cycles": 35},
            {"name": "L2", "size_bytes": 1048576, "line_bytes": 128, "ways": 16, "hit_cycles": 260}]"#,
        r#""dram_cycles": 650,"#,
        seed,
    )
}

#[test]
fn sectored_l1_line_apart_from_its_fetch() {
    robust_over_seeds(sectored_l1, &[]);
}

/// The L1 path's `(line, fetch)` at both carveouts, for `config`.
fn l1_line_and_fetch(config: SimConfig, quick: bool) -> Vec<(Option<u64>, Option<u64>)> {
    measured(&mut Simulator::new(config), quick)
        .levels
        .iter()
        .filter(|l| l.path == CachePath::L1)
        .map(|l| (l.line_bytes, l.fetch_bytes))
        .collect()
}

#[test]
fn l1_line_and_fetch_sectored_or_not() {
    let unsectored_128 = |seed| {
        config(
            r#"[{"name": "L1", "size_bytes": 98304, "max_carveout_size_bytes": 262144, "line_bytes": 128, "ways": 4, "hit_cycles": 35},
                {"name": "L2", "size_bytes": 4194304, "line_bytes": 128, "ways": 16, "hit_cycles": 260}]"#,
            r#""dram_cycles": 650,"#,
            seed,
        )
    };
    let unsectored_32 = |seed| {
        config(
            r#"[{"name": "L1", "size_bytes": 32768, "line_bytes": 32, "ways": 4, "hit_cycles": 25},
                {"name": "L2", "size_bytes": 4194304, "line_bytes": 128, "ways": 16, "hit_cycles": 260}]"#,
            r#""dram_cycles": 650,"#,
            seed,
        )
    };
    let mut wrong = Vec::new();
    for seed in SEEDS.take(3) {
        for quick in [false, true] {
            let sectored = l1_line_and_fetch(sectored_l1(seed), quick);
            if sectored != [(Some(128), Some(32)); 2] {
                wrong.push(format!("seed {seed} quick {quick}: sectored {sectored:?}"));
            }
            let plain = l1_line_and_fetch(unsectored_128(seed), quick);
            if !plain
                .iter()
                .all(|&(line, fetch)| line == Some(128) && matches!(fetch, None | Some(128)))
            {
                wrong.push(format!("seed {seed} quick {quick}: 128 B lines {plain:?}"));
            }
            let small = l1_line_and_fetch(unsectored_32(seed), quick);
            if !small
                .iter()
                .all(|&(line, fetch)| line == Some(32) && matches!(fetch, None | Some(32)))
            {
                wrong.push(format!("seed {seed} quick {quick}: 32 B lines {small:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The level of `h200_like` that stands for the H200's 9% rise at 256-512 B on the L2 path,
/// which no stride or same-set chase explains: the probe must not report it.
const H200_SMALL_RISE: &str = "L2 small rise";

/// The closest model of an H200's measured caches
/// (`git show 2317edf:benchmarks/results/2026-11-22-h200-cache-explore/NOTES.md`): L1
/// 186 KiB (default carveout) and 240 KiB (largest), 32 cycles; the 9% rise at 256 B; the
/// L2 as a near 28 MiB at 282 cycles and the whole 56 MiB at 505 (the simulator's partition
/// convention); DRAM 655; the constant cache's 2 KiB, 64 B, 4 ways at 34 cycles and a
/// bank-sized level at 104 behind it; shared memory 29; the GPU backend's 2^22-element
/// rings.
fn h200_like(seed: u64) -> SimConfig {
    let text = format!(
        r#"{{"schema": "memtune-sim/1", "name": "h200-like", "sm_count": 132, "clock_mhz": 1980,
        "l2_hit_cycles": 282,
        "memory_kinds": {{"device": {{"size_bytes": 150109880320, "tlb": []}}}},
        "caches": [
            {{"name": "L1", "size_bytes": 190464, "max_carveout_size_bytes": 245760, "line_bytes": 128, "ways": 6, "hit_cycles": 32}},
            {{"name": "{H200_SMALL_RISE}", "size_bytes": 256, "line_bytes": 32, "ways": 2, "hit_cycles": 259}},
            {{"name": "L2", "size_bytes": 29360128, "line_bytes": 128, "ways": 16, "hit_cycles": 282}},
            {{"name": "L2 far", "size_bytes": 58720256, "line_bytes": 128, "ways": 16, "hit_cycles": 505}}],
        "dram_cycles": 655, "shared_memory_cycles": 29,
        "constant_caches": [
            {{"name": "constant L1", "size_bytes": 2048, "line_bytes": 64, "ways": 4, "hit_cycles": 34}},
            {{"name": "constant L2", "size_bytes": 65536, "line_bytes": 256, "ways": 8, "hit_cycles": 104}}],
        "constant_miss_cycles": 655,
        "max_chase_elements": 4194304,
        "noise": {{ "jitter": 0.02, "outlier_rate": 0.001, "seed": {seed} }}}}"#
    );
    SimConfig::from_json_str(&text, "test").unwrap()
}

/// A simulator that also adds up what its chases would take on a GPU: per call about 30 µs
/// of launch, plus the warm-up walk and the timed loads at the latency measured, at the
/// simulated clock.
struct Timed {
    calls: u64,
    loads: u64,
    seconds: f64,
    /// Chases of this path fail, as a kernel launch can.
    fail: Option<LoadPath>,
}

impl Timed {
    /// The simulator of `config`, timed.
    fn new(config: SimConfig) -> Hooked<Timed> {
        let timed = Timed {
            calls: 0,
            loads: 0,
            seconds: 0.0,
            fail: None,
        };
        Hooked::new(config, timed)
    }
}

impl Hooks for Timed {
    fn cache_chase(
        &mut self,
        sim: &mut Simulator,
        path: LoadPath,
        carveout: Carveout,
        stride: u64,
        footprint: u64,
    ) -> Result<f64, BackendError> {
        if self.fail == Some(path) {
            return Err(BackendError::Launch {
                message: "injected".to_string(),
            });
        }
        let cycles = sim.cache_chase(path, carveout, stride, footprint)?;
        let elements = (footprint / stride).max(1);
        let loads = elements + elements.min(TIMED_LOADS_CAP);
        self.calls += 1;
        self.loads += loads;
        self.seconds += 30e-6 + loads as f64 * cycles / (sim.clock_mhz() * 1e6);
        Ok(cycles)
    }
}

/// Probes `config` through [`Timed`]: the hierarchy and what it would cost on a GPU, in
/// seconds. The probe's own load counter must agree with the chases made.
fn timed_probe(config: &SimConfig, quick: bool) -> (CacheHierarchy, f64) {
    let mut timed = Timed::new(config.clone());
    let options = ProbeOptions {
        quick,
        ..ProbeOptions::default()
    };
    let result = probe_caches(&mut timed, &options, &mut NoProgress);
    assert_eq!(
        (result.loads, result.chase_calls),
        (timed.hooks.loads, timed.hooks.calls)
    );
    match result.section {
        Section::Measured(h) => (h, timed.hooks.seconds),
        other => panic!("{}", other.status_line()),
    }
}

/// Seconds of GPU time the cache part may take (quick: half): what is left of `cargo tune`'s
/// 60 s (quick: 15 s) once the other sections have run. On an H200 those took about 24 s
/// (quick about 9.5 s, incl. start-up), and the cache part measured 10.8 s (quick 5.8 s,
/// before the quick bisection was widened to 8%).
const H200_CACHE_BUDGET_S: f64 = 12.0;

#[test]
fn h200_like_hierarchy_within_the_budget() {
    h200_like_over_seeds(H200_CACHE_BUDGET_S);
}

/// The H200-like hierarchy, full and quick (where the budget is half `budget`), over four
/// seeds: levels found, no level for the small rise, and the cost in GPU seconds.
fn h200_like_over_seeds(budget: f64) {
    let mut failures = Vec::new();
    for (quick, budget) in [(false, budget), (true, budget / 2.0)] {
        for seed in SEEDS.take(4) {
            let config = h200_like(seed);
            let (h, seconds) = timed_probe(&config, quick);
            eprintln!("H200-like, quick {quick}, seed {seed}: about {seconds:.2} s on a GPU");
            let what = format!("quick {quick}, seed {seed}");
            if seconds > budget {
                failures.push(format!("{what}: {seconds:.2} s, budget {budget} s"));
            }
            let mut visible = config.clone();
            visible.caches.retain(|l| l.name != H200_SMALL_RISE);
            // Lines of tens of megabytes need multi-million-element rings at strides below
            // them: not chased within the budget.
            failures.extend(
                mismatches(&visible, &h, &["L2", "L2 far"])
                    .into_iter()
                    .map(|m| format!("{what}: {m}")),
            );
            // The constant L1.5 past them is `sim_caches_detail.rs`'s.
            let constant: Vec<_> = h
                .levels
                .iter()
                .filter(|l| l.path == CachePath::Constant && !l.size_is_lower_bound)
                .map(|l| (l.size_bytes, l.line_bytes, l.ways, l.hit_latency_cycles))
                .collect();
            // The bank-sized constant level never overflows within the 64 KiB bank.
            let ok = matches!(constant[..], [(2048, Some(64), Some(4), hit)] if (hit - 34.0).abs() <= 3.4);
            if !ok {
                failures.push(format!("{what}: constant levels {constant:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn gt200_constant_caches_and_uncached_global_memory() {
    let mut failures = Vec::new();
    for seed in SEEDS {
        let mut config = SimConfig::builtin("gt200").unwrap();
        config.noise.seed = seed;
        let h = measured(&mut Simulator::new(config.clone()), false);
        // No data cache: every level is a constant one.
        // The 64 KiB bank leaves the 32 KiB level's ways to the Fig. 4 ramp alone, which
        // answers None rather than a guess where noise moves it off a whole number.
        let last = config.constant_caches.len() - 1;
        let found: Vec<_> = h
            .levels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let ways = match (i, l.ways) {
                    (i, None) if i == last => Some(config.constant_caches[i].ways as u32),
                    (_, w) => w,
                };
                (l.path, l.size_bytes, l.line_bytes, ways)
            })
            .collect();
        let want: Vec<_> = config
            .constant_caches
            .iter()
            .map(|l| {
                (
                    CachePath::Constant,
                    l.size_bytes,
                    Some(l.line_bytes),
                    Some(l.ways as u32),
                )
            })
            .collect();
        if found != want {
            failures.push(format!("seed {seed}: levels {found:?}, expected {want:?}"));
        }
        for (g, w) in h.levels.iter().zip(&config.constant_caches) {
            failures.extend(within(g.hit_latency_cycles, w.hit_cycles, &w.name));
        }
        failures.extend(within(h.dram_latency_cycles.unwrap_or(0.0), 440.0, "DRAM"));
        failures.extend(within(
            h.shared_memory_latency_cycles.unwrap_or(0.0),
            38.0,
            "shared memory",
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_system_without_caches_is_not_measured() {
    let mut sim = Simulator::new(SimConfig::builtin("p100").unwrap());
    let result = probe_caches(&mut sim, &ProbeOptions::default(), &mut NoProgress);
    match result.section {
        Section::NotMeasured { reason } => assert!(reason.contains("p100"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_failing_chase_fails_the_section() {
    let mut config = h100_like(5);
    config.constant_caches = SimConfig::builtin("gt200").unwrap().constant_caches;
    config.constant_miss_cycles = Some(476.0);
    let mut timed = Timed::new(config);
    timed.hooks.fail = Some(LoadPath::Constant);
    let result = probe_caches(&mut timed, &ProbeOptions::default(), &mut NoProgress);
    match result.section {
        Section::Failed { reason } => assert!(reason.contains("launch failed"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn config_errors_name_the_key_and_the_fix() {
    let parse = |caches: &str, extra: &str| {
        let text = format!(
            r#"{{"schema": "memtune-sim/1", "name": "x", "sm_count": 1, "clock_mhz": 1000,
            "l2_hit_cycles": 100, "memory_kinds": {{"device": {{"size_bytes": 1048576, "tlb": []}}}},
            "caches": {caches} {extra}}}"#
        );
        SimConfig::from_json_str(&text, "bad.json")
            .unwrap_err()
            .to_string()
    };
    let err = parse(
        r#"[{"name": "L1", "size_bytes": 400, "line_bytes": 32, "ways": 3, "hit_cycles": 30}]"#,
        r#", "dram_cycles": 400"#,
    );
    assert!(
        err.contains("bad.json") && err.contains("caches[0].size_bytes") && err.contains("384"),
        "{err}"
    );
    let err = parse(
        r#"[{"name": "L2", "size_bytes": 384, "max_carveout_size_bytes": 768, "line_bytes": 32, "ways": 3, "hit_cycles": 30}]"#,
        r#", "dram_cycles": 400"#,
    );
    assert!(err.contains("caches[0].max_carveout_size_bytes"), "{err}");
    let err = parse(
        r#"[{"name": "L1", "size_bytes": 384, "line_bytes": 32, "ways": 3, "hit_cycles": 30}]"#,
        "",
    );
    assert!(err.contains("dram_cycles"), "{err}");
    let err = parse(
        r#"[{"name": "L1", "size_bytes": 384, "line_bytes": 32, "ways": 3, "hit_cycles": 30},
            {"name": "L1", "size_bytes": 768, "line_bytes": 32, "ways": 3, "hit_cycles": 60}]"#,
        r#", "dram_cycles": 400"#,
    );
    assert!(err.contains("caches[1].name"), "{err}");
    for sector in ["64", "24", "2"] {
        let err = parse(
            &format!(
                r#"[{{"name": "L1", "size_bytes": 384, "line_bytes": 32, "sector_bytes": {sector}, "ways": 3, "hit_cycles": 30}}]"#
            ),
            r#", "dram_cycles": 400"#,
        );
        assert!(err.contains("caches[0].sector_bytes"), "{err}");
    }
}

#[test]
fn ring_limit_is_enforced() {
    let mut sim = Simulator::new(h100_like(5));
    let err = sim
        .cache_chase(LoadPath::L2, Carveout::Default, 32, 32 * 65537)
        .unwrap_err();
    assert!(matches!(err, BackendError::Launch { .. }), "{err}");
    assert!(sim
        .cache_chase(LoadPath::Constant, Carveout::Default, 32, 1024)
        .is_err_and(|e| matches!(e, BackendError::Unsupported { .. })));
}
