//! What the planner tests share: workloads and the recorded profiles of the repository.
#![allow(dead_code)]

use memtune_core::plan::{GroupingWorkload, SamplingWorkload};
use memtune_core::profile::{MemoryKind, Profile};
use memtune_core::store::load_path;
use std::path::Path;

/// Random reads over `region_bytes` of `memory`, 1024 a thread.
pub fn sampling_of(region_bytes: u64, memory: MemoryKind) -> SamplingWorkload {
    SamplingWorkload {
        region_bytes,
        memory,
        reads_per_thread: 1024,
    }
}

/// A table of `table_bytes` in device memory, its keys read from pinned memory, their
/// size not given.
pub fn grouping_of(table_bytes: u64) -> GroupingWorkload {
    GroupingWorkload {
        table_bytes,
        table_memory: MemoryKind::Device,
        input_memory: MemoryKind::Pinned,
        input_bytes: None,
    }
}

/// The profile at `rel` from the repository's root (`tests/fixtures/`, `benchmarks/`).
pub fn profile(rel: &str) -> Profile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel);
    load_path(&path).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every profile (`GPU-*.json`) in the folder `rel` from the repository's root.
pub fn profiles_in(rel: &str) -> Vec<Profile> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("GPU-") && n.ends_with(".json"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|n| profile(&format!("{rel}/{n}")))
        .collect()
}
