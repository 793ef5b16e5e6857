//! The cache probe when a path's hit latency moves between its sweep and the steps after
//! it (on an H100 the L2's hit latency depends on the SM a one-block chase lands on, 262-295
//! cycles, and a probe's chases read 272 in the sweep and 288 after it): the level's size
//! still comes out right, as each step compares its chases with a hit it timed itself.

mod common;

use common::{Hooked, Hooks};
use memtune_core::profile::{CachePath, Section};
use memtune_probe::sim::{SimConfig, Simulator};
use memtune_probe::{
    probe_caches, BackendError, Carveout, LoadPath, MemorySystem, NoProgress, ProbeOptions,
};

const MIB: u64 = 1 << 20;

/// An L1 of 128 KiB and the L2 as a near 24 MiB at 272 cycles and the whole 48 MiB at 520;
/// rings of up to 2^22 elements, as on the GPU.
fn hierarchy(seed: u64) -> SimConfig {
    let text = format!(
        r#"{{"schema": "memtune-sim/1", "name": "shift", "sm_count": 132, "clock_mhz": 1755,
        "l2_hit_cycles": 272,
        "memory_kinds": {{"device": {{"size_bytes": 85899345920, "tlb": []}}}},
        "caches": [
            {{"name": "L1", "size_bytes": 131072, "line_bytes": 128, "ways": 4, "hit_cycles": 32}},
            {{"name": "L2", "size_bytes": 25165824, "line_bytes": 128, "ways": 16, "hit_cycles": 272}},
            {{"name": "L2 far", "size_bytes": 50331648, "line_bytes": 128, "ways": 16, "hit_cycles": 520}}],
        "dram_cycles": 680, "max_chase_elements": 4194304,
        "noise": {{ "jitter": 0.0005, "outlier_rate": 0.0, "seed": {seed} }}}}"#
    );
    SimConfig::from_json_str(&text, "test").expect("the test's hierarchy parses")
}

/// Adds `cycles` to every L2-path chase once one has walked past `after` bytes.
struct Shift {
    after: u64,
    cycles: f64,
    shifted: bool,
}

impl Hooks for Shift {
    fn cache_chase(
        &mut self,
        sim: &mut Simulator,
        path: LoadPath,
        carveout: Carveout,
        stride: u64,
        footprint: u64,
    ) -> Result<f64, BackendError> {
        let y = sim.cache_chase(path, carveout, stride, footprint)?;
        if path != LoadPath::L2 {
            return Ok(y);
        }
        let shift = if self.shifted { self.cycles } else { 0.0 };
        self.shifted |= footprint > self.after;
        Ok(y + shift)
    }
}

fn l2_sizes(seed: u64, cycles: f64) -> Vec<u64> {
    let hooks = Shift {
        after: 64 * MIB,
        cycles,
        shifted: false,
    };
    let mut system = Hooked::new(hierarchy(seed), hooks);
    let options = ProbeOptions::default();
    let h = match probe_caches(&mut system, &options, &mut NoProgress).section {
        Section::Measured(h) => h,
        other => panic!("{}", other.status_line()),
    };
    h.levels
        .iter()
        .filter(|l| l.path == CachePath::L2)
        .map(|l| l.size_bytes)
        .collect()
}

#[test]
fn l2_sizes_hold_when_the_hit_latency_rises_after_the_sweep() {
    for seed in [1, 7] {
        assert_eq!(l2_sizes(seed, 0.0), vec![24 * MIB, 48 * MIB], "seed {seed}");
        assert_eq!(
            l2_sizes(seed, 16.0),
            vec![24 * MIB, 48 * MIB],
            "seed {seed}, +16"
        );
    }
}

#[test]
fn l2_sizes_hold_when_the_hit_latency_falls_after_the_sweep() {
    assert_eq!(l2_sizes(3, -16.0), vec![24 * MIB, 48 * MIB]);
}
