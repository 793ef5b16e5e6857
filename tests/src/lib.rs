//! Shared fixtures for memtune's integration tests: profiles of made-up GPUs, written the
//! way `cargo tune` writes them, so store, lookup and CLI tests need no GPU; a small
//! simulated GPU ([`SIM_TWO_KINDS`]); a deterministic generator ([`rng`]); and seed 000's findings as planner checks
//! ([`seed000`]), for profiles from the paper and from the simulator alike.

pub mod rng;
pub mod seed000;

use memtune_core::codec;
use memtune_core::profile::{ComputeCapability, DeviceIdentity, Profile, Provenance};
use std::path::{Path, PathBuf};

/// A valid UUID derived from `n`, e.g. `uuid(1)` = `GPU-00000001-0000-4000-8000-000000000001`.
pub fn uuid(n: u32) -> String {
    format!("GPU-{n:08x}-0000-4000-8000-{n:012x}")
}

/// An identity-only profile of a made-up H100 with the given UUID.
pub fn profile(uuid: &str) -> Profile {
    profile_of_model(uuid, "NVIDIA H100 80GB HBM3", 132)
}

/// An identity-only profile of a made-up GPU of the given model.
pub fn profile_of_model(uuid: &str, name: &str, sm_count: u32) -> Profile {
    let device = DeviceIdentity {
        uuid: uuid.to_string(),
        name: name.to_string(),
        compute_capability: ComputeCapability { major: 9, minor: 0 },
        sm_count,
        l2_bytes: 50 << 20,
        shared_memory_per_block_bytes: 48 << 10,
        shared_memory_per_block_optin_bytes: 227 << 10,
        shared_memory_per_sm_bytes: 228 << 10,
        global_memory_bytes: 80 << 30,
        sm_clock_khz: 1_980_000,
        memory_clock_khz: 2_619_000,
        memory_bus_width_bits: 5120,
        driver_version: "13.0".to_string(),
        pci_bus_id: Some("00000000:19:00.0".to_string()),
    };
    let provenance = Provenance {
        memtune_version: "0.1.0".to_string(),
        probe_version: 1,
        created_at: "2026-11-21T12:00:00Z".to_string(),
        duration_seconds: 1.5,
        options: Default::default(),
        simulator: None,
    };
    Profile::identity_only(device, provenance)
}

/// A simulated GPU (`memtune-sim/1`) with device and pinned memory, each with one TLB
/// level, and one cache level: quick to probe, each section there for a fault to fail.
pub const SIM_TWO_KINDS: &str = r#"{
  "schema": "memtune-sim/1", "name": "two-kinds", "sm_count": 8, "clock_mhz": 1000,
  "l2_hit_cycles": 200,
  "memory_kinds": {
    "device": { "size_bytes": 4294967296,
      "tlb": [ { "entries": 16, "page_bytes": 2097152, "miss_cycles": 50 } ] },
    "pinned": { "size_bytes": 1073741824, "extra_cycles": 400,
      "tlb": [ { "entries": 32, "page_bytes": 65536, "miss_cycles": 80 } ] }
  },
  "caches": [ { "name": "L2", "size_bytes": 1048576, "line_bytes": 128, "ways": 16, "hit_cycles": 200 } ],
  "dram_cycles": 500
}"#;

/// The sealed JSON text of `profile`.
pub fn json(profile: &Profile) -> String {
    codec::to_json(&mut profile.clone())
}

/// Writes `profile` sealed to `dir/<name>` and returns the path.
pub fn write(dir: &Path, name: &str, profile: &Profile) -> PathBuf {
    std::fs::create_dir_all(dir).expect("create fixture dir");
    let path = dir.join(name);
    std::fs::write(&path, json(profile)).expect("write fixture");
    path
}

/// Writes `profile` as `<uuid>.json` in `dir`, as a store would.
pub fn store(dir: &Path, profile: &Profile) -> PathBuf {
    write(dir, &format!("{}.json", profile.device.uuid), profile)
}

/// Re-seals a JSON value after editing it, as a newer memtune would have written it.
pub fn reseal(mut value: serde_json::Value) -> String {
    let digest = memtune_core::digest::of_value(&value);
    value["digest"] = serde_json::Value::String(digest);
    format!("{value:#}\n")
}

/// Whether GPU tests run (`MEMTUNE_GPU_TESTS=1`). When they do not, says so on stderr, so a
/// skipped test never reads as a pass.
pub fn gpu_tests_enabled(test: &str) -> bool {
    let on = std::env::var("MEMTUNE_GPU_TESTS").is_ok_and(|v| v == "1");
    if !on {
        // Written to stderr directly: libtest captures eprintln!, and a skip must show.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: GPU test; set MEMTUNE_GPU_TESTS=1 on a machine with a GPU to run it"
        );
    }
    on
}

/// The `cargo-tune` binary for a test: `MEMTUNE_CARGO_TUNE` when set (on the GPU machine,
/// where the test executables run from a bundle, away from the target directory), else the
/// path cargo compiled into the test.
pub fn cargo_tune_bin(compiled: &str) -> PathBuf {
    std::env::var_os("MEMTUNE_CARGO_TUNE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(compiled))
}

/// xorshift64 from `seed` (non-zero): reproducible test data, never zero.
pub fn xorshift64(seed: u64) -> impl Iterator<Item = u64> {
    let mut x = seed;
    std::iter::repeat_with(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    })
}
