//! Compiles every kernel source with NVRTC. Needs NVRTC 13 and fails without it on
//! purpose: run scripts/install-cuda.sh (CI does).

use memtune_kernels::{compile_ptx, ensure_nvrtc, KernelSource, NvrtcLocation, SOURCES};

/// Turing, Ampere, Hopper. NVRTC 13 dropped sm_70 (Volta): its oldest target is sm_75.
const ARCHS: &[&str] = &["sm_75", "sm_80", "sm_90"];

fn require_nvrtc() -> NvrtcLocation {
    match ensure_nvrtc() {
        Ok(location) => location,
        Err(e) => panic!("{e}"),
    }
}

/// The PTX of `source` for sm_90, or `None` where `test` is skipped for want of NVRTC.
fn sm90_ptx(test: &str, source: &KernelSource) -> Option<String> {
    if !memtune_kernels::toolchain::nvrtc_or_skip(test) {
        return None;
    }
    require_nvrtc();
    let ptx = compile_ptx(source, "sm_90", &[]).map_err(|e| e.to_string());
    Some(ptx.map(|p| p.text).unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn every_source_compiles_for_every_arch() {
    if !memtune_kernels::toolchain::nvrtc_or_skip("every_source_compiles_for_every_arch") {
        return;
    }
    let location = require_nvrtc();
    eprintln!("NVRTC: {location:?}");
    assert!(!SOURCES.is_empty());
    for source in SOURCES {
        assert!(
            !source.entries.is_empty(),
            "{} lists no entries",
            source.name
        );
        for arch in ARCHS {
            let ptx = match compile_ptx(source, arch, &[]) {
                Ok(ptx) => ptx,
                Err(e) => panic!("{e}"),
            };
            assert!(
                !ptx.text.trim().is_empty(),
                "{} for {arch}: empty PTX",
                source.name
            );
            for entry in source.entries {
                assert!(
                    ptx.has_entry(entry),
                    "{} for {arch}: no .entry {entry}",
                    source.name
                );
            }
        }
    }
}

/// The preload trick: once ensure_nvrtc() has found NVRTC (by absolute path if need be),
/// the bare soname cudarc asks for resolves in this process.
#[test]
fn bare_soname_resolves_after_ensure_nvrtc() {
    if !memtune_kernels::toolchain::nvrtc_or_skip("bare_soname_resolves_after_ensure_nvrtc") {
        return;
    }
    let location = require_nvrtc();
    assert_eq!(location.version().0, 13);
    // SAFETY: NVRTC is already loaded; this only takes another reference to it.
    let lib = unsafe { libloading::Library::new("libnvrtc.so.13") };
    assert!(
        lib.is_ok(),
        "libnvrtc.so.13 did not resolve by bare name after {location:?}"
    );
}

#[test]
fn chase_kernel_uses_l1_bypassing_loads() {
    let Some(text) = sm90_ptx(
        "chase_kernel_uses_l1_bypassing_loads",
        &memtune_kernels::pointer_chase::SOURCE,
    ) else {
        return;
    };
    assert!(
        text.contains("ld.global.cg.u64"),
        "no ld.global.cg.u64 in PTX"
    );
    assert!(text.contains("%smid"), "no %smid read in PTX");
    assert!(text.contains("%clock64"), "no %clock64 read in PTX");
}

/// The cache chases must issue the loads the probe reads off: L1-caching global loads,
/// constant-bank loads and shared-memory loads.
#[test]
fn cache_chases_use_their_load_paths() {
    let Some(text) = sm90_ptx(
        "cache_chases_use_their_load_paths",
        &memtune_kernels::cache_chase::SOURCE,
    ) else {
        return;
    };
    for load in ["ld.global.ca.u64", "ld.const.u32", "ld.volatile.shared.u32"] {
        assert!(text.contains(load), "no {load} in PTX");
    }
    assert!(
        text.contains(".const .align 4 .b8 memtune_const_ring[65536]"),
        "the constant ring is not one 64 KiB bank"
    );
}

/// The random chase must time L2-only loads with the cycle counter and keep its samples in
/// a 2048-entry shared array (8 KiB), so that no global store is timed.
#[test]
fn the_random_chase_times_cg_loads_into_shared_memory() {
    let Some(text) = sm90_ptx(
        "the_random_chase_times_cg_loads_into_shared_memory",
        &memtune_kernels::random_chase::SOURCE,
    ) else {
        return;
    };
    assert!(
        text.contains("ld.global.cg.u64"),
        "no ld.global.cg.u64 in PTX"
    );
    assert!(text.contains("%clock64"), "no %clock64 read in PTX");
    let shared = 4 * memtune_kernels::random_chase::MAX_SAMPLES;
    let array = format!("[{shared}]");
    assert!(
        text.lines()
            .any(|l| l.contains(".shared") && l.contains(&array)),
        "no {shared}-byte shared sample array in PTX"
    );
}

/// The atomic sampler must update its words with a global atomic add, as the grouping
/// insert's count update does, and the sum kernel must read them back.
#[test]
fn random_atomic_adds_atomically_and_sums_the_words() {
    let Some(text) = sm90_ptx(
        "random_atomic_adds_atomically_and_sums_the_words",
        &memtune_kernels::random_access::SOURCE,
    ) else {
        return;
    };
    let entry = |name: &str| -> String {
        let start = text
            .find(&format!(".entry {name}("))
            .unwrap_or_else(|| panic!("no .entry {name}"));
        let body = &text[start..];
        let end = body.find("\n}").unwrap_or(body.len());
        body[..end].to_string()
    };
    let atomic = entry(memtune_kernels::random_access::ATOMIC);
    assert!(
        atomic.contains("red.global.add.u32") || atomic.contains("atom.global.add.u32"),
        "no global atomic add in memtune_random_atomic:\n{atomic}"
    );
    let sum = entry(memtune_kernels::random_access::SUM);
    assert!(
        sum.contains("atom.global.add.u64") || sum.contains("red.global.add.u64"),
        "memtune_sum_words adds no partial sum:\n{sum}"
    );
}

/// The stencil builds for each radius, element type and block shape the benchmark sweeps,
/// with a streaming entry exactly where its blocks allow one (whole warps along x, at
/// least R rows along y).
#[test]
fn stencil_builds_for_every_radius_type_and_block() {
    use memtune_kernels::stencil;
    if !memtune_kernels::toolchain::nvrtc_or_skip("stencil_builds_for_every_radius_type_and_block")
    {
        return;
    }
    require_nvrtc();
    for radius in [1u32, 2] {
        for element in ["float", "double"] {
            for block in [
                [32u32, 4, 2],
                [32, 8, 1],
                [128, 2, 1],
                [16, 8, 4],
                [32, 1, 1],
            ] {
                let streams = block[0] % 32 == 0 && block[1] >= radius;
                let [bx, by, bz] = block.map(|b| b.to_string());
                let radius = radius.to_string();
                let defines = [
                    (stencil::RADIUS_DEFINE, radius.as_str()),
                    (stencil::ELEMENT_DEFINE, element),
                    ("MEMTUNE_BX", bx.as_str()),
                    ("MEMTUNE_BY", by.as_str()),
                    ("MEMTUNE_BZ", bz.as_str()),
                ];
                let what = format!("radius {radius} {element} {bx}x{by}x{bz}");
                let ptx = compile_ptx(&stencil::SOURCE, "sm_90", &defines)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert!(ptx.has_entry(stencil::PLAIN) && ptx.has_entry(stencil::STAGED));
                assert_eq!(ptx.has_entry(stencil::STREAMING), streams, "{what}");
            }
        }
    }
}

/// hprda.cu builds for every arch and defines every kernel `memtune_kernels::hprda` names
/// (the host loads each by that name); the thread kernel counts small distances with
/// shared-memory atomics and the merges with global ones; the bound of the shared counts
/// the host sizes dynamic shared memory by is the kernel's.
#[test]
fn hprda_compiles_and_exports_every_kernel_it_names() {
    use memtune_kernels::hprda as k;
    if !memtune_kernels::toolchain::nvrtc_or_skip(
        "hprda_compiles_and_exports_every_kernel_it_names",
    ) {
        return;
    }
    require_nvrtc();
    let names = [
        k::KEEP_SUMS,
        k::COMPACT,
        k::TILE_SUMS,
        k::SCAN_TILES,
        k::SCAN_APPLY,
        k::THREAD,
        k::GATHER_RECORDS,
        k::GATHER_SORTED,
        k::BLOCK_FIRSTS,
        k::MERGE,
        k::STORE,
        k::OVERLAP_SUMS,
        k::OVERLAP_APPLY,
    ];
    assert_eq!(k::SOURCE.entries, names);
    assert!(SOURCES.contains(&k::SOURCE), "hprda.cu is not in SOURCES");
    for arch in ARCHS {
        let ptx = compile_ptx(&k::SOURCE, arch, &[]).unwrap_or_else(|e| panic!("{arch}: {e}"));
        for name in names {
            assert!(ptx.has_entry(name), "{arch}: no .entry {name}");
        }
        let thread = entry_body(&ptx.text, k::THREAD);
        assert!(
            thread.contains("atom.shared.add.u32") || thread.contains("red.shared.add.u32"),
            "{arch}: the thread kernel counts no distance in shared memory"
        );
        let merge = entry_body(&ptx.text, k::MERGE);
        assert!(
            merge.contains("atom.global.add.u32") || merge.contains("red.global.add.u32"),
            "{arch}: the merge kernel counts no distance"
        );
    }
    let define = format!("#define MEMTUNE_HPRDA_SMALL {}", k::SMALL);
    assert!(
        k::SOURCE.source.contains(&define),
        "no `{define}` in hprda.cu"
    );
}

/// The PTX of one `.entry`, up to its closing brace.
fn entry_body(text: &str, name: &str) -> String {
    let start = text
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("no .entry {name}"));
    let body = &text[start..];
    let end = body.find("\n}").unwrap_or(body.len());
    body[..end].to_string()
}
