//! The build helper: compiles a crate's CUDA sources from its `build.rs` with the tuned
//! values of its profile as `-DMEMTUNE_...` defines, and generates Rust the crate
//! `include!`s, as prost-build does.
//!
//! ```no_run
//! // build.rs
//! use memtune_build::Kernels;
//! use memtune_core::plan::stencil::{Dtype, StencilWorkload};
//!
//! Kernels::new()
//!     .file("cuda/stencil.cu")
//!     .bindings("include/params.h", "src/params_ffi.rs")
//!     .stencil_plan("stencil", StencilWorkload { dims: [256, 256, 256], dtype: Dtype::F32, repeats: 1 })
//!     .define("MEMTUNE_APP_RADIUS", "1")
//!     .compile("memtune_kernels");
//! // src/main.rs: mod gpu { include!(concat!(env!("OUT_DIR"), "/memtune_kernels.rs")); }
//! ```
//!
//! The profile comes from the lookup chain, as the macros read it (`MEMTUNE_PROFILE`, the
//! project's `.memtune/`, `MEMTUNE_DEVICE`, the user cache, the built-in default with a
//! warning). With nvcc (found through `NVCC`, `MEMTUNE_CUDA_PREFIX`, `CUDA_HOME`,
//! `CUDA_PATH`, `PATH`, `/usr/local/cuda`) each source becomes PTX per architecture, or one
//! fatbin, embedded with `include_bytes!`; without it (or with `MEMTUNE_NVCC=0`) nothing
//! is compiled here and the runtime compiles the embedded sources with NVRTC. Sources and
//! headers are embedded either way, so a re-plan at run time can recompile them.
//! Every variable read and every file used is reported to cargo.

mod bindings;
mod cargo;
mod defines;
mod error;
mod generate;
mod nvcc;
mod profile;

pub use bindings::Bindings;
pub use cargo::Instructions;
pub use error::BuildError;
pub use memtune_core::lookup::ENV_DEVICE;
pub use nvcc::{Format, ENV_NVCC_SWITCH};

use memtune_core::lookup::Resolved;
use memtune_core::plan::sampling::SamplingWorkload;
use memtune_core::plan::stencil::StencilWorkload;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Overrides the architectures: `sm_80,sm_90`.
pub const ENV_ARCHS: &str = "MEMTUNE_CUDA_ARCHS";
/// The oldest architecture CUDA 13 compiles for; older profiles' GPUs get its PTX.
pub const MIN_ARCH: u32 = 75;

#[derive(Debug, Clone)]
enum PlanRequest {
    Sampling(String, SamplingWorkload),
    Stencil(String, StencilWorkload),
}

/// A `&mut self` builder in the manner of `cc::Build`: [`Kernels::compile`] panics with the
/// error's message (what a build script wants), [`Kernels::try_compile`] returns it.
#[derive(Debug, Clone)]
pub struct Kernels {
    files: Vec<PathBuf>,
    headers: Vec<PathBuf>,
    include_dirs: Vec<PathBuf>,
    bindings: Option<(PathBuf, PathBuf)>,
    defines: Vec<(String, String)>,
    plans: Vec<PlanRequest>,
    archs: Vec<String>,
    format: Format,
    out_dir: Option<PathBuf>,
    manifest_dir: Option<PathBuf>,
    cargo_metadata: bool,
    cc: cc::Build,
}

impl Default for Kernels {
    fn default() -> Self {
        Self::new()
    }
}

/// What [`Kernels::try_compile`] did.
#[derive(Debug, Clone)]
pub struct Output {
    /// The generated Rust file.
    pub generated: PathBuf,
    /// The profile the plans came from and where the lookup chain found it.
    pub profile: Resolved,
    /// Every `-D` define, plans' first, in order.
    pub defines: Vec<(String, String)>,
    /// `{"profile": ..., "plans": {name: {kind, workload, plan}}, "defines": ...}`: also in
    /// the generated file as `PLANS_JSON`.
    pub plans: Value,
    /// nvcc's version when it compiled, `None` when the runtime will use NVRTC.
    pub nvcc: Option<String>,
    /// nvcc's outputs.
    pub binaries: Vec<PathBuf>,
    pub bindings: Option<Bindings>,
    /// What was (or, without cargo metadata, would have been) told to cargo.
    pub cargo: Instructions,
}

impl Kernels {
    pub fn new() -> Kernels {
        let mut cc = cc::Build::new();
        // The generated file holds nothing to link; cc is here to find and configure nvcc.
        cc.cargo_metadata(false).cargo_warnings(false);
        Kernels {
            files: Vec::new(),
            headers: Vec::new(),
            include_dirs: Vec::new(),
            bindings: None,
            defines: Vec::new(),
            plans: Vec::new(),
            archs: Vec::new(),
            format: Format::Ptx,
            out_dir: None,
            manifest_dir: None,
            cargo_metadata: true,
            cc,
        }
    }

    /// A `.cu` source (relative paths are from the crate's manifest directory). Its file
    /// name is its name at run time, so names must be unique.
    pub fn file(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.files.push(path.as_ref().to_path_buf());
        self
    }

    /// A header the sources `#include "name"`: embedded for NVRTC under its file name, its
    /// directory on nvcc's include path.
    pub fn header(&mut self, path: impl AsRef<Path>) -> &mut Self {
        let path = path.as_ref().to_path_buf();
        if !self.headers.contains(&path) {
            self.headers.push(path);
        }
        self
    }

    /// `header` (added as by [`Kernels::header`]) turned into Rust by bindgen (feature
    /// `bindgen`), else the `committed` file; the generated code has them as `mod ffi`.
    pub fn bindings(&mut self, header: impl AsRef<Path>, committed: impl AsRef<Path>) -> &mut Self {
        self.header(header.as_ref());
        self.bindings = Some((
            header.as_ref().to_path_buf(),
            committed.as_ref().to_path_buf(),
        ));
        self
    }

    /// A directory for nvcc's `-I` (NVRTC sees only headers given to [`Kernels::header`]).
    pub fn include(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.include_dirs.push(dir.as_ref().to_path_buf());
        self
    }

    /// A `-D name=value` for every source.
    pub fn define(&mut self, name: &str, value: impl ToString) -> &mut Self {
        self.defines.push((name.to_string(), value.to_string()));
        self
    }

    /// Plans random sampling for the profile: `MEMTUNE_<NAME>_SCOPE_BYTES`, `_PASSES`.
    pub fn sampling_plan(&mut self, name: &str, workload: SamplingWorkload) -> &mut Self {
        self.plans
            .push(PlanRequest::Sampling(name.to_string(), workload));
        self
    }

    /// Plans a 3-D stencil for the profile: `MEMTUNE_<NAME>_BLOCK_X/Y/Z`, `_STAGING` (0/1),
    /// `_VARIANT` (0 plain, 1 staged, 2 streaming).
    pub fn stencil_plan(&mut self, name: &str, workload: StencilWorkload) -> &mut Self {
        self.plans
            .push(PlanRequest::Stencil(name.to_string(), workload));
        self
    }

    /// An architecture to build for, e.g. `sm_90` (default: the profile's, at least
    /// `sm_75`). `MEMTUNE_CUDA_ARCHS=sm_80,sm_90` overrides.
    pub fn arch(&mut self, arch: &str) -> &mut Self {
        self.archs.push(arch.to_string());
        self
    }

    /// PTX per architecture (the default) or one fatbin per source.
    pub fn format(&mut self, format: Format) -> &mut Self {
        self.format = format;
        self
    }

    /// Where to write (default: `OUT_DIR`).
    pub fn out_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The crate's directory (default: `CARGO_MANIFEST_DIR`).
    pub fn manifest_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.manifest_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The target and host triples for cc (default: cargo's `TARGET` and `HOST`).
    pub fn target(&mut self, target: &str, host: &str) -> &mut Self {
        self.cc.target(target).host(host).opt_level(0);
        self
    }

    /// Whether to print the `cargo:` lines (default: yes).
    pub fn cargo_metadata(&mut self, on: bool) -> &mut Self {
        self.cargo_metadata = on;
        self
    }

    /// Compiles and generates `<OUT_DIR>/<name>.rs`; panics with the error's message.
    pub fn compile(&mut self, name: &str) -> Output {
        match self.try_compile(name) {
            Ok(out) => out,
            Err(e) => panic!("{e}"),
        }
    }

    pub fn try_compile(&mut self, name: &str) -> Result<Output, BuildError> {
        let mut cargo = Instructions::default();
        let result = self.run(name, &mut cargo);
        // Even a failed build must rerun when what it read changes.
        if self.cargo_metadata {
            for line in cargo.lines() {
                println!("{line}");
            }
        }
        result.map(|mut out| {
            out.cargo = cargo;
            out
        })
    }

    fn run(&self, name: &str, cargo: &mut Instructions) -> Result<Output, BuildError> {
        defines::check_name(name).map_err(|_| BuildError::BadDefine {
            name: name.to_string(),
            why: "the output name must be a Rust/C identifier (it names the generated file)".into(),
        })?;
        let manifest_dir = self.dir(&self.manifest_dir, "CARGO_MANIFEST_DIR", "manifest_dir")?;
        let out_dir = self.dir(&self.out_dir, "OUT_DIR", "out_dir")?;
        let abs = |p: &PathBuf| {
            if p.is_absolute() {
                p.clone()
            } else {
                manifest_dir.join(p)
            }
        };
        let files: Vec<PathBuf> = self.files.iter().map(abs).collect();
        let headers: Vec<PathBuf> = self.headers.iter().map(abs).collect();
        let mut include_dirs: Vec<PathBuf> = self.include_dirs.iter().map(abs).collect();
        for h in &headers {
            if let Some(dir) = h.parent() {
                if !include_dirs.iter().any(|d| d == dir) {
                    include_dirs.push(dir.to_path_buf());
                }
            }
        }
        for path in files.iter().chain(&headers) {
            cargo.file(path);
            if !path.is_file() {
                return Err(BuildError::io(
                    path,
                    "reading",
                    "fix the path given to Kernels::file or Kernels::header (relative paths start at the crate's directory)",
                    std::io::Error::from(std::io::ErrorKind::NotFound),
                ));
            }
        }
        for dir in &include_dirs {
            cargo.file(dir);
        }
        check_unique_names(&files)?;
        check_unique_names(&headers)?;

        let resolved = profile::resolve(&manifest_dir, cargo)?;
        let (all_defines, plans) = self.plan(&resolved)?;
        let archs = self.archs(&resolved, cargo)?;

        let work = out_dir.join("memtune").join(name);
        std::fs::create_dir_all(&work).map_err(|e| {
            BuildError::io(&work, "creating the output directory", "check OUT_DIR", e)
        })?;
        let nvcc = nvcc::find(cargo);
        let mut binaries = Vec::new();
        if let Some(nvcc) = &nvcc {
            for file in &files {
                binaries.extend(self.nvcc_one(
                    nvcc,
                    file,
                    &include_dirs,
                    &all_defines,
                    &archs,
                    &work,
                )?);
            }
        }
        let bindings = match &self.bindings {
            Some((header, committed)) => Some(bindings::generate(
                &abs(header),
                &abs(committed),
                &work.join("bindings.rs"),
                cargo,
            )?),
            None => None,
        };

        let plans_json = json!({
            "profile": generate::stamp_json(&resolved),
            "plans": plans,
            "defines": all_defines.iter().map(|(n, v)| (n.clone(), Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
        });
        let generated = out_dir.join(format!("{name}.rs"));
        let text = generate::rust(&generate::Input {
            files: &files,
            headers: &headers,
            defines: &all_defines,
            binaries: &binaries,
            nvcc: nvcc.as_ref().map(|n| n.version.as_str()),
            resolved: &resolved,
            plans_json: &plans_json,
            bindings: bindings.as_ref(),
        });
        memtune_core::store::write_atomic(&generated, text.as_bytes()).map_err(|e| {
            BuildError::io(&generated, "writing the generated code", "check OUT_DIR", e)
        })?;
        Ok(Output {
            generated,
            profile: resolved,
            defines: all_defines,
            plans: plans_json,
            nvcc: nvcc.map(|n| n.version),
            binaries: binaries.into_iter().map(|(_, _, p)| p).collect(),
            bindings,
            cargo: Instructions::default(),
        })
    }

    fn dir(
        &self,
        set: &Option<PathBuf>,
        var: &'static str,
        setter: &'static str,
    ) -> Result<PathBuf, BuildError> {
        match set {
            Some(d) => Ok(d.clone()),
            None => std::env::var_os(var)
                .map(PathBuf::from)
                .ok_or(BuildError::NotInBuildScript { var, setter }),
        }
    }

    /// Runs the planners: every define (plans' then the crate's) and the plans as JSON.
    fn plan(&self, resolved: &Resolved) -> Result<(Vec<(String, String)>, Value), BuildError> {
        let profile = &resolved.profile;
        let label = || format!("{} ({})", profile.device.name, resolved.source);
        let mut out = Vec::new();
        let mut plans = serde_json::Map::new();
        for request in &self.plans {
            let (name, kind, workload, plan, defs) = match request {
                PlanRequest::Sampling(name, w) => {
                    let plan =
                        memtune_core::plan::sampling_untimed(profile, w).map_err(|source| {
                            BuildError::Plan {
                                name: name.clone(),
                                method: "sampling_plan",
                                profile: label(),
                                source: Box::new(source),
                            }
                        })?;
                    let defs = memtune_core::defines::sampling(&defines::prefix(name)?, &plan);
                    (name, "sampling", json!(w), json!(plan), defs)
                }
                PlanRequest::Stencil(name, w) => {
                    let plan =
                        memtune_core::plan::stencil_untimed(profile, w).map_err(|source| {
                            BuildError::Plan {
                                name: name.clone(),
                                method: "stencil_plan",
                                profile: label(),
                                source: Box::new(source),
                            }
                        })?;
                    let defs = memtune_core::defines::stencil(&defines::prefix(name)?, &plan);
                    (name, "stencil", json!(w), json!(plan), defs)
                }
            };
            if plans.contains_key(name) {
                return Err(BuildError::BadDefine {
                    name: name.clone(),
                    why: "two plans have this name; their defines would clash".into(),
                });
            }
            plans.insert(
                name.clone(),
                json!({"kind": kind, "workload": workload, "plan": plan}),
            );
            out.extend(defs);
        }
        out.extend(self.defines.iter().cloned());
        for (i, (name, value)) in out.iter().enumerate() {
            defines::check_name(name)?;
            defines::check_value(name, value)?;
            if out[..i].iter().any(|(n, _)| n == name) {
                return Err(BuildError::BadDefine {
                    name: name.clone(),
                    why: "defined twice (a plan's defines and Kernels::define, or two defines)"
                        .into(),
                });
            }
        }
        Ok((out, Value::Object(plans)))
    }

    /// `MEMTUNE_CUDA_ARCHS`, else the builder's, else the profile's (at least `sm_75`);
    /// lowest first.
    fn archs(
        &self,
        resolved: &Resolved,
        cargo: &mut Instructions,
    ) -> Result<Vec<String>, BuildError> {
        let mut archs: Vec<String> = match cargo.var(ENV_ARCHS) {
            Some(v) => v
                .to_string_lossy()
                .split(',')
                .map(|a| a.trim().to_string())
                .filter(|a| !a.is_empty())
                .collect(),
            None => self.archs.clone(),
        };
        if archs.is_empty() {
            let cc = resolved.profile.device.compute_capability;
            archs.push(format!("sm_{}", (cc.major * 10 + cc.minor).max(MIN_ARCH)));
        }
        let mut numbered = Vec::new();
        for arch in archs {
            let valid = arch.starts_with("sm_") && arch_number(&arch).is_some();
            match arch_number(&arch) {
                Some(n) if valid => numbered.push((n, arch)),
                _ => return Err(BuildError::BadArch { arch }),
            }
        }
        numbered.sort();
        numbered.dedup();
        Ok(numbered.into_iter().map(|(_, a)| a).collect())
    }

    /// nvcc on one source: `(source name, arch, path)` of each output.
    fn nvcc_one(
        &self,
        nvcc: &nvcc::Nvcc,
        file: &Path,
        include_dirs: &[PathBuf],
        defines: &[(String, String)],
        archs: &[String],
        work: &Path,
    ) -> Result<Vec<(String, String, PathBuf)>, BuildError> {
        let name = file_name(file);
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| name.clone());
        let jobs: Vec<(Vec<String>, PathBuf)> = match self.format {
            Format::Ptx => archs
                .iter()
                .map(|a| (vec![a.clone()], work.join(format!("{stem}.{a}.ptx"))))
                .collect(),
            Format::Fatbin => vec![(archs.to_vec(), work.join(format!("{stem}.fatbin")))],
        };
        let mut outputs = Vec::new();
        for (job_archs, output) in jobs {
            nvcc.run(
                &self.cc,
                &nvcc::Job {
                    file,
                    include_dirs,
                    defines,
                    archs: &job_archs,
                    format: self.format,
                    output: &output,
                },
            )?;
            outputs.push((name.clone(), job_archs[0].clone(), output));
        }
        Ok(outputs)
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn check_unique_names(paths: &[PathBuf]) -> Result<(), BuildError> {
    for (i, p) in paths.iter().enumerate() {
        let name = file_name(p);
        if paths[..i].iter().any(|q| file_name(q) == name) {
            return Err(BuildError::DuplicateName { name });
        }
    }
    Ok(())
}

/// `sm_90` → 90, `sm_90a` → 90, `compute_75` → 75; `None` for anything else.
fn arch_number(arch: &str) -> Option<u32> {
    let rest = arch
        .strip_prefix("sm_")
        .or_else(|| arch.strip_prefix("compute_"))?;
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}
