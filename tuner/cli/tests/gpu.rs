//! GPU tests: run only with `MEMTUNE_GPU_TESTS=1` (scripts/gpu-run.sh sets it).
//! Each says SKIPPED on stderr otherwise.

use memtune_tests::gpu_tests_enabled;
use serde_json::Value;
use std::process::Command;
use tempfile::TempDir;

fn cargo_tune(cache: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(memtune_tests::cargo_tune_bin(env!(
        "CARGO_BIN_EXE_cargo-tune"
    )))
    .args(args)
    .env("MEMTUNE_CACHE_DIR", cache)
    .env_remove("MEMTUNE_PROFILE")
    .output()
    .expect("run cargo-tune")
}

/// `nvidia-smi --query-gpu` rows: uuid, name, memory.total (MiB), pci.bus_id.
fn nvidia_smi() -> Vec<Vec<String>> {
    let out = Command::new("nvidia-smi")
        .args([
            "--query-gpu=uuid,name,memory.total,pci.bus_id,compute_cap",
            "--format=csv,noheader,nounits",
        ])
        .output()
        .expect("nvidia-smi runs on a GPU machine");
    assert!(out.status.success(), "nvidia-smi failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split(',').map(|f| f.trim().to_string()).collect())
        .collect()
}

#[test]
fn identity_matches_nvidia_smi_and_tune_writes_it() {
    if !gpu_tests_enabled("identity_matches_nvidia_smi_and_tune_writes_it") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let out = cargo_tune(dir.path(), &["devices", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let devices = doc["devices"].as_array().unwrap();
    let smi = nvidia_smi();
    assert_eq!(devices.len(), smi.len(), "same GPU count as nvidia-smi");
    for (d, row) in devices.iter().zip(&smi) {
        let id = &d["identity"];
        assert_eq!(id["uuid"], row[0].as_str(), "UUID as nvidia-smi prints it");
        assert_eq!(id["name"], row[1].as_str());
        // nvidia-smi's memory.total is MiB; the driver's total can differ by a reserve.
        let smi_mib: f64 = row[2].parse().unwrap();
        let ours_mib = id["global_memory_bytes"].as_f64().unwrap() / (1u64 << 20) as f64;
        assert!(
            (ours_mib - smi_mib).abs() / smi_mib < 0.02,
            "{ours_mib} vs {smi_mib} MiB"
        );
        assert_eq!(
            id["pci_bus_id"].as_str().unwrap().to_lowercase(),
            row[3].to_lowercase()
        );
        let cc = format!(
            "{}.{}",
            id["compute_capability"]["major"], id["compute_capability"]["minor"]
        );
        assert_eq!(cc, row[4]);
        assert!(id["sm_count"].as_u64().unwrap() > 0);
        assert!(id["l2_bytes"].as_u64().unwrap() > 0);
    }

    let out = cargo_tune(dir.path(), &["--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    for p in doc["profiles"].as_array().unwrap() {
        let path = p["path"].as_str().unwrap();
        let v = cargo_tune(dir.path(), &["verify", path]);
        assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
    }
}

#[test]
fn hidden_gpus_are_a_clear_no_gpu_error() {
    if !gpu_tests_enabled("hidden_gpus_are_a_clear_no_gpu_error") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let out = Command::new(memtune_tests::cargo_tune_bin(env!(
        "CARGO_BIN_EXE_cargo-tune"
    )))
    .arg("devices")
    .env("CUDA_VISIBLE_DEVICES", "")
    .env("MEMTUNE_CACHE_DIR", dir.path())
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no CUDA GPU is visible"), "{err}");
}

/// Random atomics on a small device region: `random_atomic` zeroes the region, checks
/// that one launch leaves its words summing to exactly one per draw, and times it; a lost
/// or misplaced update fails the call.
#[test]
fn random_atomics_add_exactly_one_per_draw() {
    if !gpu_tests_enabled("random_atomics_add_exactly_one_per_draw") {
        return;
    }
    use memtune_core::MemoryKind;
    use memtune_probe::gpu::{Bounds, Gpu};
    let identity = memtune::device::identity(0).expect("GPU 0 identity");
    let bounds = Bounds {
        device: Some(64 << 20),
        ..Bounds::default()
    };
    let mut gpu = Gpu::open(0, identity, &bounds).expect("open GPU 0");
    // Few words (heavy contention) and more than L2 holds are both exact.
    for region in [64 << 10, 1 << 20, 64 << 20] {
        let rate = gpu
            .random_atomic(MemoryKind::Device, region)
            .unwrap_or_else(|e| panic!("{region} bytes: {e}"));
        assert!(rate.is_finite() && rate > 0.0, "{region} bytes: {rate}");
        eprintln!("{region} bytes: {:.2} G atomics/s", rate / 1e9);
        // The atomics overwrote the fill: sampling must write it again and still check.
        let reads = gpu
            .random_access(MemoryKind::Device, region)
            .unwrap_or_else(|e| panic!("{region} bytes after atomics: {e}"));
        assert!(reads > 0.0);
    }
    // A pinned table's atomics cross the host link; they are exact too. Managed memory is
    // refused.
    let rate = gpu
        .random_atomic(MemoryKind::Pinned, 1 << 20)
        .unwrap_or_else(|e| panic!("pinned: {e}"));
    assert!(rate.is_finite() && rate > 0.0, "pinned: {rate}");
    eprintln!("pinned, 1 MiB: {:.2} G atomics/s", rate / 1e9);
    assert!(gpu.random_atomic(MemoryKind::Managed, 1 << 20).is_err());
}

/// The L2's fetch from a cold chain in address order (`Gpu::cold_stride_samples`, as the
/// cache probe runs it): prints each 32 B offset's median cycles and share of hits (a load
/// under `HIT_SHARE` of its 128 B line's offset-0 load), then the fetch the probe infers,
/// with the L2 hit latency from a chase of 1 MiB at 128 B.
#[test]
fn the_l2_fetch_shows_in_a_cold_stride_chain() {
    if !gpu_tests_enabled("the_l2_fetch_shows_in_a_cold_stride_chain") {
        return;
    }
    use memtune_probe::gpu::{Bounds, Gpu};
    use memtune_probe::{Carveout, LoadPath, MemorySystem, FETCH_SAMPLES, FETCH_STRIDE};
    let identity = memtune::device::identity(0).expect("GPU 0 identity");
    let mut gpu = Gpu::open(0, identity, &Bounds::default()).expect("open GPU 0");
    let l2_hit = MemorySystem::cache_chase(&mut gpu, LoadPath::L2, Carveout::Default, 128, 1 << 20)
        .expect("an L2 chase");
    let samples = gpu
        .cold_stride_samples(FETCH_STRIDE, FETCH_SAMPLES)
        .expect("the cold stride chain");
    assert_eq!(samples.cycles.len(), FETCH_SAMPLES as usize);
    let line = 128u64;
    let per_line = (line / FETCH_STRIDE) as usize;
    eprintln!("L2 hit {l2_hit:.0} cycles; cold stride chain at {FETCH_STRIDE} B:");
    for k in 0..per_line {
        let mut at: Vec<u64> = samples
            .cycles
            .iter()
            .skip(k)
            .step_by(per_line)
            .copied()
            .collect();
        let hits = samples
            .cycles
            .chunks_exact(per_line)
            .filter(|l| (l[k] as f64) < memtune_probe::HIT_SHARE * l[0] as f64)
            .count();
        at.sort_unstable();
        eprintln!(
            "  offset {:>3} B: median {} cycles, p10 {}, p90 {}, hits {:.1}%",
            k as u64 * FETCH_STRIDE,
            at[at.len() / 2],
            at[at.len() / 10],
            at[at.len() * 9 / 10],
            100.0 * hits as f64 / (samples.cycles.len() / per_line) as f64
        );
    }
    let fetch = memtune_probe::fetch_from_samples(&samples.cycles, FETCH_STRIDE, line, l2_hit);
    eprintln!("fetch: {fetch:?}");
    let fetch = fetch.unwrap_or_else(|e| panic!("no fetch: {e}"));
    assert!([32, 64, 128].contains(&fetch), "{fetch}");
}
