//! Kernels a user crate embeds through `memtune_build`: its CUDA sources and headers,
//! the `-D` defines of its compile-time plans, and nvcc's output where nvcc existed at build
//! time. (The stamp of the profile the plans came from is a `memtune::ProfileStamp` beside
//! it in the generated file: this crate knows no profiles.)
//!
//! The sources are always embedded, so a re-plan at run time (another device than the
//! profile's) recompiles them with NVRTC under new defines; without nvcc at build time the
//! compile-time defines take that path too.

use crate::compile::{compile_ptx_with_headers, CompileError, CompiledPtx};
use crate::KernelSource;

/// What nvcc produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryFormat {
    /// PTX text for one architecture; the driver JIT-compiles it for that one or newer.
    Ptx,
    /// A fatbin: SASS for each architecture built, plus PTX of the lowest.
    Fatbin,
}

/// One nvcc output embedded with `include_bytes!`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binary {
    /// The [`KernelSource::name`] it was compiled from.
    pub source: &'static str,
    /// The lowest architecture it runs on, e.g. `sm_90`.
    pub arch: &'static str,
    pub format: BinaryFormat,
    pub bytes: &'static [u8],
}

/// Everything one `memtune_build::Kernels::compile` embedded.
#[derive(Debug, Clone, Copy)]
pub struct Embedded {
    pub sources: &'static [KernelSource],
    /// `(include name, text)` of the crate's headers, for NVRTC.
    pub headers: &'static [(&'static str, &'static str)],
    /// The compile-time `-D` defines, `(name, value)`.
    pub defines: &'static [(&'static str, &'static str)],
    /// nvcc's outputs; empty when the crate was built without nvcc.
    pub binaries: &'static [Binary],
    /// `nvcc --version`'s release line, when nvcc compiled the binaries.
    pub nvcc: Option<&'static str>,
}

/// A module image ready for `CudaContext::load_module`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Image {
    /// nvcc's output, embedded at build time.
    Prebuilt(Binary),
    /// Compiled by NVRTC just now.
    Compiled(CompiledPtx),
}

impl Image {
    pub fn to_cudarc(&self) -> cudarc::nvrtc::Ptx {
        match self {
            Image::Prebuilt(b) => match b.format {
                BinaryFormat::Ptx => {
                    cudarc::nvrtc::Ptx::from_src(String::from_utf8_lossy(b.bytes).into_owned())
                }
                // cuModuleLoadData needs the image NUL-safe and owned; a fatbin is binary.
                BinaryFormat::Fatbin => cudarc::nvrtc::Ptx::from_binary(b.bytes.to_vec()),
            },
            Image::Compiled(ptx) => ptx.to_cudarc(),
        }
    }

    /// Whether nvcc built it (`true`) or NVRTC compiled it at run time.
    pub fn is_prebuilt(&self) -> bool {
        matches!(self, Image::Prebuilt(_))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error("no embedded kernel source named `{name}` (embedded: {known}); use a file name given to Kernels::file in build.rs")]
    NoSuchSource { name: String, known: String },
    #[error(transparent)]
    Compile(#[from] CompileError),
}

impl Embedded {
    pub fn source(&self, name: &str) -> Result<&KernelSource, EmbeddedError> {
        self.sources
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| EmbeddedError::NoSuchSource {
                name: name.to_string(),
                known: self
                    .sources
                    .iter()
                    .map(|s| s.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// The nvcc output of `source` that runs on `arch` (the newest one not newer than it).
    pub fn binary(&self, source: &str, arch: &str) -> Option<Binary> {
        let device = arch_number(arch)?;
        self.binaries
            .iter()
            .filter(|b| b.source == source)
            .filter_map(|b| arch_number(b.arch).map(|n| (n, *b)))
            .filter(|(n, _)| *n <= device)
            .max_by_key(|(n, _)| *n)
            .map(|(_, b)| b)
    }

    /// `source` for `arch` with the compile-time defines: nvcc's output when one runs on
    /// `arch`, else NVRTC now.
    pub fn image(&self, source: &str, arch: &str) -> Result<Image, EmbeddedError> {
        let kernel = self.source(source)?;
        match self.binary(source, arch) {
            Some(b) => Ok(Image::Prebuilt(b)),
            None => Ok(Image::Compiled(self.compile(kernel, arch, &[])?)),
        }
    }

    /// `source` for `arch` through NVRTC, with `overrides` replacing compile-time defines of
    /// the same name (and adding new ones): what a re-plan at run time compiles.
    pub fn compile_with(
        &self,
        source: &str,
        arch: &str,
        overrides: &[(&str, &str)],
    ) -> Result<CompiledPtx, EmbeddedError> {
        let kernel = self.source(source)?;
        Ok(self.compile(kernel, arch, overrides)?)
    }

    fn compile(
        &self,
        kernel: &KernelSource,
        arch: &str,
        overrides: &[(&str, &str)],
    ) -> Result<CompiledPtx, CompileError> {
        let defines = merge(self.defines, overrides);
        compile_ptx_with_headers(kernel, arch, &defines, self.headers)
    }
}

/// `base` with each name in `overrides` taking the override's value; new names appended.
fn merge<'a>(
    base: &[(&'a str, &'a str)],
    overrides: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let mut out: Vec<(&str, &str)> = base
        .iter()
        .map(|&(name, value)| {
            let value = overrides
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(value, |(_, v)| *v);
            (name, value)
        })
        .collect();
    for &(name, value) in overrides {
        if !base.iter().any(|(n, _)| *n == name) {
            out.push((name, value));
        }
    }
    out
}

/// `sm_90` → 90, `sm_90a` → 90; `None` for anything else.
pub fn arch_number(arch: &str) -> Option<u32> {
    let digits: String = arch
        .strip_prefix("sm_")
        .or_else(|| arch.strip_prefix("compute_"))?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: KernelSource = KernelSource {
        name: "k.cu",
        source: "extern \"C\" __global__ void k() {}\n",
        entries: &["k"],
    };

    fn embedded(binaries: &'static [Binary]) -> Embedded {
        Embedded {
            sources: &[SRC],
            headers: &[],
            defines: &[("A", "1"), ("B", "2")],
            binaries,
            nvcc: None,
        }
    }

    #[test]
    fn overrides_replace_and_extend() {
        let merged = merge(&[("A", "1"), ("B", "2")], &[("B", "3"), ("C", "4")]);
        assert_eq!(merged, vec![("A", "1"), ("B", "3"), ("C", "4")]);
    }

    #[test]
    fn the_newest_binary_not_newer_than_the_device_is_chosen() {
        const BINS: &[Binary] = &[
            Binary {
                source: "k.cu",
                arch: "sm_80",
                format: BinaryFormat::Ptx,
                bytes: b"80",
            },
            Binary {
                source: "k.cu",
                arch: "sm_90",
                format: BinaryFormat::Ptx,
                bytes: b"90",
            },
        ];
        let e = embedded(BINS);
        assert_eq!(e.binary("k.cu", "sm_90").map(|b| b.bytes), Some(&b"90"[..]));
        assert_eq!(e.binary("k.cu", "sm_86").map(|b| b.bytes), Some(&b"80"[..]));
        assert_eq!(e.binary("k.cu", "sm_75"), None);
        assert_eq!(e.binary("other.cu", "sm_90"), None);
    }

    #[test]
    fn unknown_source_names_the_known_ones() {
        let err = embedded(&[]).source("nope.cu").err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("nope.cu") && e.contains("k.cu")));
    }

    #[test]
    fn arch_numbers() {
        assert_eq!(arch_number("sm_90"), Some(90));
        assert_eq!(arch_number("sm_90a"), Some(90));
        assert_eq!(arch_number("compute_75"), Some(75));
        assert_eq!(arch_number("gfx90a"), None);
    }
}
