//! The built-in conservative default, the lookup chain's last resort.
//!
//! It describes no real device and claims no measurement: every section is marked not
//! measured, so planners fall back to their conservative choices rather than to numbers
//! that were never observed.

use crate::codec;
use crate::profile::{ComputeCapability, DeviceIdentity, Profile, Provenance};

/// The UUID the default profile carries: all zeros, never a real GPU's.
pub const DEFAULT_UUID: &str = "GPU-00000000-0000-0000-0000-000000000000";

pub fn builtin() -> Profile {
    let device = DeviceIdentity {
        uuid: DEFAULT_UUID.to_string(),
        name: "memtune built-in default".to_string(),
        compute_capability: ComputeCapability { major: 7, minor: 0 },
        sm_count: 0,
        l2_bytes: 0,
        shared_memory_per_block_bytes: 48 * 1024,
        shared_memory_per_block_optin_bytes: 48 * 1024,
        shared_memory_per_sm_bytes: 64 * 1024,
        global_memory_bytes: 0,
        sm_clock_khz: 0,
        memory_clock_khz: 0,
        memory_bus_width_bits: 0,
        driver_version: String::new(),
        pci_bus_id: None,
    };
    let provenance = Provenance {
        memtune_version: env!("CARGO_PKG_VERSION").to_string(),
        probe_version: 0,
        created_at: "1970-01-01T00:00:00Z".to_string(),
        duration_seconds: 0.0,
        options: Default::default(),
        simulator: None,
    };
    let mut profile = Profile::identity_only(device, provenance);
    codec::seal(&mut profile);
    profile
}
