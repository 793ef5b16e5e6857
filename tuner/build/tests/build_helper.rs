//! The build helper outside cargo: a scratch crate directory with sources, a header and a
//! project profile, `Kernels` pointed at it, and what it generated and told cargo.
//!
//! The helper reads the environment (as a build script must), so these tests hold one lock
//! and set the variables they need themselves.

use memtune_build::{BuildError, Kernels, Output};
use memtune_core::plan::sampling::SamplingWorkload;
use memtune_core::plan::stencil::{self, Dtype, StencilWorkload};
use memtune_core::{MemoryKind, Profile};
use memtune_tests::{profile, store, uuid};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use tempfile::TempDir;

static ENV: Mutex<()> = Mutex::new(());

/// Variables the helper reads, cleared for every test so the host's cannot leak in.
const VARS: [&str; 8] = [
    "MEMTUNE_PROFILE",
    "MEMTUNE_OFFLINE",
    "MEMTUNE_DEVICE",
    "MEMTUNE_CUDA_ARCHS",
    "MEMTUNE_NVCC",
    "NVCC",
    "MEMTUNE_CACHE_DIR",
    "CUDA_HOME",
];

const STENCIL: &str = "#include \"app_params.h\"\n\
    extern \"C\" __global__ void app_stencil(const float* in, float* out, app_params p) {\n\
    unsigned i = blockIdx.x * MEMTUNE_STENCIL_BLOCK_X + threadIdx.x;\n\
    if (i < p.n) out[i] = in[i] * 2.0f;\n}\n";
const HEADER: &str = "typedef struct app_params { unsigned int n; } app_params;\n";

struct Crate {
    dir: TempDir,
    _lock: MutexGuard<'static, ()>,
}

impl Crate {
    fn new() -> Crate {
        let lock = ENV.lock().unwrap_or_else(|e| e.into_inner());
        for v in VARS {
            std::env::remove_var(v);
        }
        let dir = TempDir::new().unwrap();
        let c = Crate { dir, _lock: lock };
        std::env::set_var("MEMTUNE_CACHE_DIR", c.path("cache"));
        fs::create_dir_all(c.path("cuda")).unwrap();
        fs::create_dir_all(c.path("include")).unwrap();
        fs::create_dir_all(c.path("out")).unwrap();
        fs::write(c.path("cuda/stencil.cu"), STENCIL).unwrap();
        fs::write(c.path("include/app_params.h"), HEADER).unwrap();
        fs::write(
            c.path("src_ffi.rs"),
            "pub struct app_params { pub n: u32 }\n",
        )
        .unwrap();
        c
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    /// A project profile in `.memtune/`, as `cargo tune --project` leaves it.
    fn project_profile(&self, p: &Profile) -> PathBuf {
        store(&self.path(".memtune"), p)
    }
    fn kernels(&self) -> Kernels {
        let mut k = Kernels::new();
        k.manifest_dir(self.dir.path())
            .out_dir(self.path("out"))
            .target("x86_64-unknown-linux-gnu", "x86_64-unknown-linux-gnu")
            .cargo_metadata(false)
            .file("cuda/stencil.cu")
            .header("include/app_params.h");
        k
    }
}

fn stencil_workload() -> StencilWorkload {
    StencilWorkload {
        dims: [256, 256, 64],
        dtype: Dtype::F32,
        repeats: 1,
    }
}

fn sampling_workload() -> SamplingWorkload {
    SamplingWorkload {
        region_bytes: 1 << 30,
        memory: MemoryKind::Device,
        reads_per_thread: 64,
    }
}

/// `kernels` fails to build, with an error that names each of `wants`.
fn assert_fails_naming(kernels: &mut Kernels, wants: &[&str]) {
    let err = kernels.try_compile("k").err().map(|e| e.to_string());
    assert!(
        err.as_deref()
            .is_some_and(|e| wants.iter().all(|w| e.contains(w))),
        "{err:?}"
    );
}

fn lines(out: &Output) -> Vec<String> {
    out.cargo.lines()
}

fn define<'a>(out: &'a Output, name: &str) -> Option<&'a str> {
    out.defines
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn plans_become_defines_and_the_generated_file_embeds_everything() {
    let c = Crate::new();
    std::env::set_var("MEMTUNE_NVCC", "0");
    let p = profile(&uuid(7));
    let profile_path = c.project_profile(&p);
    let out = c
        .kernels()
        .stencil_plan("stencil", stencil_workload())
        .sampling_plan("sampling", sampling_workload())
        .define("MEMTUNE_APP_RADIUS", 1)
        .try_compile("memtune_kernels")
        .unwrap();

    // The defines are the planners' answers for the project profile.
    let sealed = memtune_core::store::load_path(&profile_path).unwrap();
    let s = stencil::plan(&sealed, &stencil_workload()).unwrap();
    let r = memtune_core::plan::sampling_untimed(&sealed, &sampling_workload()).unwrap();
    assert_eq!(
        define(&out, "MEMTUNE_STENCIL_BLOCK_X"),
        Some(&*s.block[0].to_string())
    );
    assert_eq!(
        define(&out, "MEMTUNE_STENCIL_BLOCK_Z"),
        Some(&*s.block[2].to_string())
    );
    assert_eq!(
        define(&out, "MEMTUNE_STENCIL_STAGING"),
        Some(if s.staging { "1" } else { "0" })
    );
    assert_eq!(
        define(&out, "MEMTUNE_SAMPLING_SCOPE_BYTES"),
        Some(&*r.scope_bytes.to_string())
    );
    assert_eq!(
        define(&out, "MEMTUNE_SAMPLING_PASSES"),
        Some(&*r.passes.to_string())
    );
    assert_eq!(define(&out, "MEMTUNE_APP_RADIUS"), Some("1"));
    assert_eq!(
        out.plans["plans"]["stencil"]["plan"]["block"],
        serde_json::json!(s.block)
    );
    assert_eq!(out.plans["profile"]["uuid"], uuid(7));
    assert_eq!(out.plans["profile"]["source"], "project");
    assert_eq!(out.plans["profile"]["digest"], sealed.digest);

    // No nvcc: nothing compiled, the sources and header embedded for NVRTC.
    assert!(out.nvcc.is_none() && out.binaries.is_empty());
    let text = fs::read_to_string(&out.generated).unwrap();
    assert_eq!(out.generated, c.path("out/memtune_kernels.rs"));
    assert!(text.contains("nvcc: None"), "{text}");
    assert!(text.contains("binaries: &[\n    ],"), "{text}");
    assert!(
        text.contains(&format!(
            "include_str!({:?})",
            c.path("cuda/stencil.cu").to_string_lossy()
        )),
        "{text}"
    );
    assert!(text.contains("(\"app_params.h\", include_str!("), "{text}");
    assert!(text.contains("entries: &[\"app_stencil\"]"), "{text}");
    assert!(
        text.contains(&format!(
            "pub const MEMTUNE_STENCIL_BLOCK_X: u64 = {};",
            s.block[0]
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("digest: {:?}", sealed.digest)),
        "{text}"
    );
}

#[test]
fn cargo_is_told_every_file_and_variable() {
    let c = Crate::new();
    std::env::set_var("MEMTUNE_NVCC", "0");
    let profile_path = c.project_profile(&profile(&uuid(7)));
    let out = c.kernels().try_compile("k").unwrap();
    let lines = lines(&out);
    for file in [
        c.path("cuda/stencil.cu"),
        c.path("include/app_params.h"),
        c.path("include"),
        c.path(".memtune"),
        profile_path,
    ] {
        let line = format!("cargo:rerun-if-changed={}", file.display());
        assert!(lines.contains(&line), "{line} missing from {lines:#?}");
    }
    for var in [
        "MEMTUNE_PROFILE",
        "MEMTUNE_OFFLINE",
        "MEMTUNE_CACHE_DIR",
        "MEMTUNE_DEVICE",
        "MEMTUNE_CUDA_ARCHS",
        "MEMTUNE_NVCC",
    ] {
        let line = format!("cargo:rerun-if-env-changed={var}");
        assert!(lines.contains(&line), "{line} missing from {lines:#?}");
    }
}

#[test]
fn env_profile_wins_and_the_default_warns() {
    let c = Crate::new();
    std::env::set_var("MEMTUNE_NVCC", "0");
    let out = c.kernels().try_compile("k").unwrap();
    assert_eq!(out.plans["profile"]["source"], "builtin_default");
    assert!(
        lines(&out)
            .iter()
            .any(|l| l.starts_with("cargo:warning=") && l.contains("cargo tune")),
        "{:#?}",
        lines(&out)
    );

    let file = memtune_tests::write(c.dir.path(), "other.json", &profile(&uuid(9)));
    c.project_profile(&profile(&uuid(7)));
    std::env::set_var("MEMTUNE_PROFILE", &file);
    let out = c.kernels().try_compile("k").unwrap();
    assert_eq!(out.plans["profile"]["uuid"], uuid(9));
    assert_eq!(out.plans["profile"]["source"], "env");
    assert!(lines(&out).contains(&format!("cargo:rerun-if-changed={}", file.display())));
}

#[test]
fn memtune_device_picks_among_project_profiles() {
    let c = Crate::new();
    std::env::set_var("MEMTUNE_NVCC", "0");
    c.project_profile(&profile(&uuid(7)));
    c.project_profile(&profile(&uuid(8)));
    // Two profiles and no device named: neither is "the" project profile.
    let out = c.kernels().try_compile("k").unwrap();
    assert_eq!(out.plans["profile"]["source"], "builtin_default");
    std::env::set_var("MEMTUNE_DEVICE", uuid(8));
    let out = c.kernels().try_compile("k").unwrap();
    assert_eq!(out.plans["profile"]["uuid"], uuid(8));
    std::env::set_var("MEMTUNE_DEVICE", "GPU-nope");
    assert_fails_naming(&mut c.kernels(), &["MEMTUNE_DEVICE", "cargo tune devices"]);
}

#[test]
fn errors_name_the_file_or_variable_and_the_fix() {
    let c = Crate::new();
    std::env::set_var("MEMTUNE_NVCC", "0");
    let wants = ["cuda/nope.cu", "Kernels::file"];
    assert_fails_naming(c.kernels().file("cuda/nope.cu"), &wants);

    let bad = c.kernels().define("1BAD", 1).try_compile("k").err();
    assert!(matches!(bad, Some(BuildError::BadDefine { .. })), "{bad:?}");

    assert_fails_naming(
        c.kernels()
            .stencil_plan("stencil", stencil_workload())
            .define("MEMTUNE_STENCIL_BLOCK_X", 64),
        &["defined twice"],
    );

    std::env::set_var("MEMTUNE_CUDA_ARCHS", "sm_90,gfx90a");
    assert_fails_naming(&mut c.kernels(), &["gfx90a", "MEMTUNE_CUDA_ARCHS"]);
    std::env::remove_var("MEMTUNE_CUDA_ARCHS");

    fs::create_dir_all(c.path("other")).unwrap();
    fs::write(c.path("other/stencil.cu"), STENCIL).unwrap();
    let dup = c.kernels().file("other/stencil.cu").try_compile("k").err();
    assert!(
        matches!(dup, Some(BuildError::DuplicateName { .. })),
        "{dup:?}"
    );

    let empty = StencilWorkload {
        dims: [0, 1, 1],
        ..stencil_workload()
    };
    assert_fails_naming(
        c.kernels().stencil_plan("stencil", empty),
        &["stencil_plan"],
    );

    let broken = c.path(".memtune/x.json");
    fs::create_dir_all(c.path(".memtune")).unwrap();
    fs::write(&broken, "{").unwrap();
    std::env::set_var("MEMTUNE_PROFILE", &broken);
    assert_fails_naming(&mut c.kernels(), &["x.json", "not valid JSON"]);
}

#[test]
fn bindings_fall_back_to_the_committed_file() {
    let c = Crate::new();
    std::env::set_var("MEMTUNE_NVCC", "0");
    let out = c
        .kernels()
        .bindings("include/app_params.h", "src_ffi.rs")
        .try_compile("k")
        .unwrap();
    let text = fs::read_to_string(&out.generated).unwrap();
    assert!(text.contains("pub mod ffi {"), "{text}");
    match &out.bindings {
        // bindgen ran (feature on, libclang present): its output is included.
        Some(memtune_build::Bindings::Generated(p)) => {
            let generated = fs::read_to_string(p).unwrap();
            assert!(generated.contains("app_params"), "{generated}");
            assert!(text.contains("BINDINGS_GENERATED: bool = true"));
        }
        Some(memtune_build::Bindings::Committed(p)) => {
            assert_eq!(*p, c.path("src_ffi.rs"));
            assert!(text.contains("BINDINGS_GENERATED: bool = false"));
            // Asked for (feature on) but not run: said; the crate's choice (feature off): not.
            let warned = lines(&out)
                .iter()
                .any(|l| l.starts_with("cargo:warning=") && l.contains("committed bindings"));
            assert_eq!(warned, cfg!(feature = "bindgen"), "{:#?}", lines(&out));
        }
        None => panic!("bindings asked for, none reported"),
    }
    if !cfg!(feature = "bindgen") {
        assert_fails_naming(
            c.kernels()
                .bindings("include/app_params.h", "missing_ffi.rs"),
            &["missing_ffi.rs", "bindgen"],
        );
    }
}

/// nvcc where one is found (`NVCC`, `CUDA_HOME`, `PATH`, ...): PTX per architecture,
/// embedded; the defines reach the compiled code.
#[test]
fn nvcc_compiles_ptx_per_arch_where_it_exists() {
    let c = Crate::new();
    if let Some(nvcc) = std::env::var_os("MEMTUNE_TEST_NVCC") {
        std::env::set_var("NVCC", nvcc);
    }
    c.project_profile(&profile(&uuid(7)));
    let out = c
        .kernels()
        .stencil_plan("stencil", stencil_workload())
        .arch("sm_90")
        .arch("sm_80")
        .try_compile("k")
        .unwrap();
    let Some(version) = &out.nvcc else {
        eprintln!("SKIPPED nvcc_compiles_ptx_per_arch_where_it_exists: no nvcc (set MEMTUNE_TEST_NVCC or NVCC)");
        return;
    };
    assert!(version.contains('.'), "{version}");
    assert_eq!(out.binaries.len(), 2, "{:?}", out.binaries);
    let names: Vec<String> = out
        .binaries
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["stencil.sm_80.ptx", "stencil.sm_90.ptx"]);
    let ptx = fs::read_to_string(&out.binaries[1]).unwrap();
    assert!(
        ptx.contains(".entry app_stencil(") && ptx.contains(".target sm_90"),
        "{ptx}"
    );
    let text = fs::read_to_string(&out.generated).unwrap();
    assert!(
        text.contains("BinaryFormat::Ptx, bytes: include_bytes!("),
        "{text}"
    );

    // A compile error names the file and the way out.
    fs::write(c.path("cuda/stencil.cu"), "this is not CUDA\n").unwrap();
    assert_fails_naming(&mut c.kernels(), &["stencil.cu", "MEMTUNE_NVCC=0"]);
}

#[test]
fn paths_are_relative_to_the_manifest_dir() {
    let c = Crate::new();
    std::env::set_var("MEMTUNE_NVCC", "0");
    let out = c.kernels().try_compile("k").unwrap();
    let text = fs::read_to_string(out.generated).unwrap();
    assert!(text.contains(
        &*Path::new(c.dir.path())
            .join("include/app_params.h")
            .to_string_lossy()
    ));
}
