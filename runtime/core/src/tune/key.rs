//! What a decision is keyed by: the device, the user's kernel, the workload class, the
//! profile and memtune's version. Any difference is a miss (and a re-tune), never a reuse.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::profile::MemoryKind;

/// The class of a workload a decision holds for: sizes within half an octave share one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadClass {
    /// `sampling`, `grouping` or `stencil`.
    pub workload: String,
    /// Where the data the plan scopes lives (the sampled region, the grouping table).
    pub memory: MemoryKind,
    /// Where a second input lives (grouping's input column), if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_memory: Option<MemoryKind>,
    /// [`size_class`] of the bytes the plan scopes.
    pub size_class: u32,
    /// Bytes per element (4 for sampling and grouping words, 4 or 8 for stencil cells).
    pub elem_bytes: u32,
    /// Anything else that changes the best plan (reads per thread, stencil repeats).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// Half-octave buckets of a size: `round(2 * log2(bytes))`. 1 GiB and 1.2 GiB share a
/// class; 1 GiB and 1.5 GiB do not.
pub fn size_class(bytes: u64) -> u32 {
    if bytes <= 1 {
        return 0;
    }
    (2.0 * (bytes as f64).log2()).round() as u32
}

/// The full key of a decision.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuneKey {
    /// The GPU the kernel was timed on.
    pub device_uuid: String,
    /// The user's name for the kernel and its version (closures cannot be hashed), or a
    /// fingerprint of its source.
    pub kernel: String,
    pub class: WorkloadClass,
    /// The digest of the profile the candidates came from.
    pub profile_digest: String,
    /// memtune's version: another planner may build other candidates.
    pub memtune_version: String,
    /// Digest of the candidates' labels: another candidate set is another question.
    pub candidates_digest: String,
}

impl TuneKey {
    /// The file a decision with this key is stored in: a digest of the key's canonical JSON.
    pub fn file_name(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        let hex = hex(&Sha256::digest(&json));
        format!(
            "{}-{}-{}.json",
            self.class.workload,
            &self.kernel_slug(),
            &hex[..24]
        )
    }

    /// The kernel name as it can stand in a file name: `[A-Za-z0-9_-]`, at most 40 chars.
    fn kernel_slug(&self) -> String {
        self.kernel
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(40)
            .collect()
    }
}

/// The digest of a candidate set, from the candidates' labels in order.
pub fn candidates_digest<'a>(labels: impl IntoIterator<Item = &'a str>) -> String {
    let mut h = Sha256::new();
    for label in labels {
        h.update(label.as_bytes());
        h.update([0]);
    }
    format!("sha256:{}", &hex(&h.finalize())[..32])
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(kernel: &str, size: u64) -> TuneKey {
        TuneKey {
            device_uuid: "GPU-00000000-0000-0000-0000-000000000001".into(),
            kernel: kernel.into(),
            class: WorkloadClass {
                workload: "sampling".into(),
                memory: MemoryKind::Device,
                input_memory: None,
                size_class: size_class(size),
                elem_bytes: 4,
                detail: "reads=64".into(),
            },
            profile_digest: "sha256:ab".into(),
            memtune_version: "0.1.0".into(),
            candidates_digest: candidates_digest(["a", "b"]),
        }
    }

    #[test]
    fn size_classes_are_half_octaves() {
        assert_eq!(size_class(1 << 30), 60);
        assert_eq!(size_class((1 << 30) + (1 << 27)), 60);
        assert_eq!(size_class(3 << 29), 61);
        assert_eq!(size_class(1 << 31), 62);
        assert_eq!(size_class(0), 0);
    }

    #[test]
    fn file_names_differ_with_any_field_and_are_safe() {
        let a = key("my gather/v1", 1 << 30);
        let name = a.file_name();
        assert!(name.starts_with("sampling-my_gather_v1-"), "{name}");
        assert!(name.ends_with(".json"));
        assert_ne!(name, key("my gather/v2", 1 << 30).file_name());
        assert_ne!(name, key("my gather/v1", 1 << 31).file_name());
        assert_eq!(name, key("my gather/v1", 1 << 30).file_name());
        let long = key(&"x".repeat(500), 1).file_name();
        assert!(long.len() < 100, "{long}");
    }

    #[test]
    fn candidate_digests_depend_on_order_and_boundaries() {
        assert_ne!(
            candidates_digest(["ab", "c"]),
            candidates_digest(["a", "bc"])
        );
        assert_ne!(candidates_digest(["a", "b"]), candidates_digest(["b", "a"]));
    }
}
