//! Compiled kernels kept on disk between runs: each module's CUBIN under
//! `<cache>/kernels/<key>.cubin`, the key a SHA-256 of everything the machine code depends
//! on (source, headers, defines, architecture, NVRTC's version). NVRTC takes about 0.2 s
//! per stencil variant, and a probe or a tuning session compiles dozens; a later run loads
//! them instead. `<cache>` is the profile cache (`MEMTUNE_CACHE_DIR`, else the user cache);
//! `MEMTUNE_KERNEL_CACHE=off` turns it off. A file that is not machine code, or that the
//! driver refuses, is compiled again and replaced; a cache that cannot be written is
//! skipped.

use std::path::{Path, PathBuf};

use memtune_kernels::compile::HEADERS;
use memtune_kernels::KernelSource;
use sha2::{Digest, Sha256};

/// Set to `off` to compile every module afresh.
pub const ENV_KERNEL_CACHE: &str = "MEMTUNE_KERNEL_CACHE";
/// The cache's folder under the profile cache.
const DIR: &str = "kernels";
/// Part of every key: a change of what is stored makes new keys.
const FORMAT: &str = "memtune-kernel-cache/1";
/// No module memtune compiles comes near this; a larger file is not one of ours.
const MAX_BYTES: u64 = 64 << 20;

/// Where compiled modules are kept, if anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelCache {
    dir: Option<PathBuf>,
}

impl KernelCache {
    /// `<profile cache>/kernels`, unless `MEMTUNE_KERNEL_CACHE=off` or there is no cache.
    pub fn from_env() -> KernelCache {
        let off = std::env::var_os(ENV_KERNEL_CACHE).is_some_and(|v| v == "off");
        let dir = (!off)
            .then(memtune_core::lookup::default_cache_dir)
            .flatten()
            .map(|d| d.join(DIR));
        KernelCache { dir }
    }

    /// A cache in `dir` (`None`: no cache).
    pub fn at(dir: Option<PathBuf>) -> KernelCache {
        KernelCache { dir }
    }

    fn path(&self, key: &str) -> Option<PathBuf> {
        Some(self.dir.as_ref()?.join(format!("{key}.cubin")))
    }

    /// The CUBIN stored under `key`: only a regular file of at most 64 MiB that
    /// starts as an ELF file does.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        let path = self.path(key)?;
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if !meta.is_file() || meta.len() > MAX_BYTES {
            return None;
        }
        let bytes = std::fs::read(&path).ok()?;
        bytes.starts_with(b"\x7fELF").then_some(bytes)
    }

    /// Stores `cubin` under `key`, whole or not at all; whether it was stored.
    pub fn put(&self, key: &str, cubin: &[u8]) -> bool {
        let Some(path) = self.path(key) else {
            return false;
        };
        let made = path.parent().map(std::fs::create_dir_all);
        matches!(made, Some(Ok(()))) && memtune_core::store::write_atomic(&path, cubin).is_ok()
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }
}

/// The key of `source` compiled with `defines` for `arch` by NVRTC `nvrtc`.
pub fn key(
    source: &KernelSource,
    defines: &[(&str, &str)],
    arch: &str,
    nvrtc: Option<(i32, i32)>,
) -> String {
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        // Length-prefixed, so that no two field lists give the same bytes.
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(FORMAT.as_bytes());
    field(source.name.as_bytes());
    field(source.source.as_bytes());
    for (name, text) in HEADERS {
        field(name.as_bytes());
        field(text.as_bytes());
    }
    for (name, value) in defines {
        field(name.as_bytes());
        field(value.as_bytes());
    }
    field(arch.as_bytes());
    field(format!("{nvrtc:?}").as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: KernelSource = KernelSource {
        name: "a.cu",
        source: "extern \"C\" __global__ void k() {}",
        entries: &["k"],
    };

    #[test]
    fn keys_change_with_whatever_the_machine_code_depends_on() {
        let nv = Some((13, 0));
        let base = key(&A, &[("X", "1")], "sm_90", nv);
        assert_eq!(base, key(&A, &[("X", "1")], "sm_90", nv));
        assert_eq!(base.len(), 64);
        let other_source = KernelSource {
            source: "extern \"C\" __global__ void k() { }",
            ..A
        };
        for changed in [
            key(&other_source, &[("X", "1")], "sm_90", nv),
            key(&A, &[("X", "2")], "sm_90", nv),
            key(&A, &[("X1", "")], "sm_90", nv),
            key(&A, &[], "sm_90", nv),
            key(&A, &[("X", "1")], "sm_80", nv),
            key(&A, &[("X", "1")], "sm_90", Some((13, 1))),
        ] {
            assert_ne!(changed, base);
        }
    }

    #[test]
    fn only_machine_code_comes_back_and_a_missing_cache_stores_nothing() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let cache = KernelCache::at(Some(dir.path().join("kernels")));
        assert_eq!(cache.get("k1"), None);
        let cubin = b"\x7fELF and the rest".to_vec();
        assert!(cache.put("k1", &cubin));
        assert_eq!(cache.get("k1"), Some(cubin));
        // Not an ELF file: a corrupt or foreign file is compiled again.
        assert!(cache.put("k2", b"garbage"));
        assert_eq!(cache.get("k2"), None);
        // A folder where the file should be is refused, not read.
        std::fs::create_dir_all(dir.path().join("kernels").join("k3.cubin")).expect("mkdir");
        assert_eq!(cache.get("k3"), None);
        assert!(!cache.put("k3", &[0x7f, b'E', b'L', b'F']));
        let none = KernelCache::at(None);
        assert!(!none.put("k1", b"\x7fELF"));
        assert_eq!(none.get("k1"), None);
    }
}
