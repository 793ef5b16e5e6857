//! NVRTC compilation of a [`KernelSource`] to PTX, or to a CUBIN for one architecture.
//! Warnings count as errors: a clean compile leaves NVRTC's log empty, so any log text
//! fails the compilation.
//!
//! Every source may `#include` the headers in [`HEADERS`]: NVRTC gets them by name from
//! the binary, so nothing is read from disk at run time.

use std::ffi::{c_char, c_int, CStr, CString};

use cudarc::nvrtc::{result, sys};

use crate::toolchain::{ensure_nvrtc, ToolchainError};
use crate::KernelSource;

#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error(transparent)]
    Toolchain(#[from] ToolchainError),
    #[error("{source_name} for {arch}: {what} contains a NUL byte")]
    NulByte {
        source_name: &'static str,
        arch: String,
        what: String,
    },
    #[error("{source_name} for {arch}: NVRTC reported (warnings count as errors):\n{log}")]
    Diagnostics {
        source_name: &'static str,
        arch: String,
        log: String,
    },
    #[error("{source_name} for {arch}: {call} failed: {error}")]
    Nvrtc {
        source_name: &'static str,
        arch: String,
        call: &'static str,
        error: result::NvrtcError,
    },
}

/// `(include name, text)` of the headers every kernel source can `#include "name"`.
pub const HEADERS: &[(&str, &str)] = &[(
    "memtune_params.h",
    include_str!("../include/memtune_params.h"),
)];

/// PTX produced by NVRTC from one source for one GPU architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledPtx {
    pub source_name: &'static str,
    pub arch: String,
    pub text: String,
}

impl CompiledPtx {
    /// Whether the PTX defines kernel `name`.
    pub fn has_entry(&self, name: &str) -> bool {
        let decl = format!(".entry {name}(");
        self.text.lines().any(|line| line.contains(&decl))
    }

    /// The PTX in the form cudarc's module loading takes.
    pub fn to_cudarc(&self) -> cudarc::nvrtc::Ptx {
        cudarc::nvrtc::Ptx::from_src(self.text.clone())
    }
}

/// Compiles `source` for `arch` (e.g. `"sm_90"`) with `-D` `defines` (an empty value gives
/// a bare `-DNAME`). Fails on any NVRTC diagnostic, warnings included.
pub fn compile_ptx(
    source: &KernelSource,
    arch: &str,
    defines: &[(&str, &str)],
) -> Result<CompiledPtx, CompileError> {
    compile_ptx_with_headers(source, arch, defines, &[])
}

/// [`compile_ptx`] with more `(include name, text)` headers beside [`HEADERS`]: a user
/// crate's own headers, embedded by `memtune_build`.
pub fn compile_ptx_with_headers(
    source: &KernelSource,
    arch: &str,
    defines: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> Result<CompiledPtx, CompileError> {
    let compiled = compiled_program(source, arch, defines, headers)?;
    // SAFETY: the program was compiled above and is destroyed only when `compiled` drops.
    let ptx = unsafe { result::get_ptx(compiled.prog.0) }
        .map_err(|e| nvrtc_error(source, arch, "nvrtcGetPTX", e))?;
    Ok(CompiledPtx {
        source_name: source.name,
        arch: arch.to_owned(),
        text: c_chars_to_string(&ptx),
    })
}

/// [`compile_ptx`] to a CUBIN for a real architecture (`sm_90`, not `compute_90`): the
/// machine code, which the driver loads without compiling PTX again.
pub fn compile_cubin(
    source: &KernelSource,
    arch: &str,
    defines: &[(&str, &str)],
) -> Result<Vec<u8>, CompileError> {
    let compiled = compiled_program(source, arch, defines, &[])?;
    let prog = &compiled.prog;
    let mut size = 0usize;
    // SAFETY: the program was compiled above; `size` is a valid out-pointer.
    unsafe { sys::nvrtcGetCUBINSize(prog.0, &mut size).result() }
        .map_err(|e| nvrtc_error(source, arch, "nvrtcGetCUBINSize", e))?;
    let mut cubin = vec![0u8; size];
    // SAFETY: `cubin` holds the `size` bytes NVRTC reported.
    unsafe { sys::nvrtcGetCUBIN(prog.0, cubin.as_mut_ptr().cast::<c_char>()).result() }
        .map_err(|e| nvrtc_error(source, arch, "nvrtcGetCUBIN", e))?;
    Ok(cubin)
}

/// NVRTC's version, `(major, minor)`, or `None` where NVRTC cannot be loaded.
pub fn nvrtc_version() -> Option<(i32, i32)> {
    ensure_nvrtc().ok()?;
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: both are valid out-pointers.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor).result() }.ok()?;
    Some((major, minor))
}

fn nvrtc_error(
    source: &KernelSource,
    arch: &str,
    call: &'static str,
    error: result::NvrtcError,
) -> CompileError {
    CompileError::Nvrtc {
        source_name: source.name,
        arch: arch.to_owned(),
        call,
        error,
    }
}

/// A compiled NVRTC program with the strings it was created from, which must outlive it
/// (fields drop in order: the program first).
struct Compiled {
    prog: Program,
    _strings: (CString, CString, HeaderStrings),
}

/// `source` compiled by NVRTC with `defines` and `headers` for `arch`, its log empty.
fn compiled_program(
    source: &KernelSource,
    arch: &str,
    defines: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> Result<Compiled, CompileError> {
    ensure_nvrtc()?;
    let source_name = source.name;
    let nul = |what: String| CompileError::NulByte {
        source_name,
        arch: arch.to_owned(),
        what,
    };
    let nvrtc = |call, error| CompileError::Nvrtc {
        source_name,
        arch: arch.to_owned(),
        call,
        error,
    };

    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_owned(),
    ];
    for (name, value) in defines {
        options.push(if value.is_empty() {
            format!("-D{name}")
        } else {
            format!("-D{name}={value}")
        });
    }
    // cudarc turns options into C strings with unwrap; reject NUL bytes here instead.
    if let Some(bad) = options.iter().find(|o| o.contains('\0')) {
        return Err(nul(format!("option {bad:?}")));
    }
    let src = CString::new(source.source).map_err(|_| nul("the source".to_owned()))?;
    let name = CString::new(source_name).map_err(|_| nul("the source name".to_owned()))?;

    let headers = HeaderStrings::new(headers).map_err(nul)?;

    let prog = Program(
        headers
            .create_program(&src, &name)
            .map_err(|e| nvrtc("nvrtcCreateProgram", e))?,
    );
    // SAFETY: prog.0 was created above and is destroyed only when `prog` drops.
    let compiled = unsafe { result::compile_program(prog.0, &options) };
    let log =
        unsafe { result::get_program_log(prog.0) }.map_err(|e| nvrtc("nvrtcGetProgramLog", e))?;
    let log = c_chars_to_string(&log);
    if compiled.is_err() || !log.trim().is_empty() {
        return Err(CompileError::Diagnostics {
            source_name,
            arch: arch.to_owned(),
            log,
        });
    }
    Ok(Compiled {
        prog,
        _strings: (src, name, headers),
    })
}

/// NUL-terminated copies of [`HEADERS`] and the caller's headers: (texts, include names).
struct HeaderStrings {
    texts: Vec<CString>,
    names: Vec<CString>,
}

impl HeaderStrings {
    /// `Err(what)` names the header holding a NUL byte.
    fn new(extra: &[(&str, &str)]) -> Result<Self, String> {
        let mut strings = Self {
            texts: Vec::with_capacity(HEADERS.len() + extra.len()),
            names: Vec::with_capacity(HEADERS.len() + extra.len()),
        };
        for (name, text) in HEADERS.iter().chain(extra) {
            let what = || format!("header {name}");
            strings.texts.push(CString::new(*text).map_err(|_| what())?);
            strings.names.push(CString::new(*name).map_err(|_| what())?);
        }
        Ok(strings)
    }

    /// `nvrtcCreateProgram` with these headers attached (cudarc's wrapper passes none).
    /// `self`, `src` and `name` must outlive the program.
    fn create_program(
        &self,
        src: &CStr,
        name: &CStr,
    ) -> Result<sys::nvrtcProgram, result::NvrtcError> {
        let texts: Vec<*const c_char> = self.texts.iter().map(|t| t.as_ptr()).collect();
        let names: Vec<*const c_char> = self.names.iter().map(|n| n.as_ptr()).collect();
        let count = c_int::try_from(texts.len())
            .map_err(|_| result::NvrtcError(sys::nvrtcResult::NVRTC_ERROR_INVALID_INPUT))?;
        let mut prog = std::mem::MaybeUninit::uninit();
        // SAFETY: all pointers refer to NUL-terminated strings that the caller keeps alive
        // for the program's lifetime; `texts` and `names` hold `count` entries each.
        unsafe {
            sys::nvrtcCreateProgram(
                prog.as_mut_ptr(),
                src.as_ptr(),
                name.as_ptr(),
                count,
                texts.as_ptr(),
                names.as_ptr(),
            )
            .result()?;
            Ok(prog.assume_init())
        }
    }
}

/// Destroys the NVRTC program on every exit path.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram and destroyed only here. A failure leaks it.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

/// NVRTC's NUL-terminated output buffers as text.
fn c_chars_to_string(buf: &[c_char]) -> String {
    // c_char is i8 or u8 depending on the target; both are one byte.
    let bytes: Vec<u8> = buf.iter().map(|&c| c as u8).collect();
    match CStr::from_bytes_until_nul(&bytes) {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolchain::nvrtc_or_skip;

    fn source(text: &'static str) -> KernelSource {
        KernelSource {
            name: "test.cu",
            source: text,
            entries: &[],
        }
    }

    /// NVRTC succeeds on these and only warns; compile_ptx must still fail.
    #[test]
    fn warnings_are_rejected() {
        if !nvrtc_or_skip("compile::tests::warnings_are_rejected") {
            return;
        }
        let cases = [
            (
                "#warning \"memtune test warning\"\nextern \"C\" __global__ void k() {}\n",
                "memtune test warning",
            ),
            (
                "extern \"C\" __global__ void k() { int unused = 1; }\n",
                "never referenced",
            ),
        ];
        for (text, expected) in cases {
            match compile_ptx(&source(text), "sm_90", &[]) {
                Err(CompileError::Diagnostics {
                    source_name,
                    arch,
                    log,
                }) => {
                    assert_eq!((source_name, arch.as_str()), ("test.cu", "sm_90"));
                    assert!(
                        log.contains("warning") && log.contains(expected),
                        "log: {log}"
                    );
                }
                other => panic!("expected Diagnostics for {text:?}, got {other:?}"),
            }
        }
    }

    #[test]
    fn syntax_error_reports_log() {
        if !nvrtc_or_skip("compile::tests::syntax_error_reports_log") {
            return;
        }
        let src = source("extern \"C\" __global__ void k() { int x = ; }\n");
        let err = compile_ptx(&src, "sm_80", &[])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("test.cu") && err.contains("sm_80"), "{err}");
        assert!(err.contains("expected an expression"), "{err}");
    }

    #[test]
    fn defines_reach_the_source() {
        if !nvrtc_or_skip("compile::tests::defines_reach_the_source") {
            return;
        }
        let src = source(
            "#ifndef MEMTUNE_X\n#error MEMTUNE_X missing\n#endif\n\
             extern \"C\" __global__ void k(int* o) { *o = MEMTUNE_X; }\n",
        );
        assert!(compile_ptx(&src, "sm_90", &[]).is_err());
        let ptx = compile_ptx(&src, "sm_90", &[("MEMTUNE_X", "7")]);
        assert!(ptx.as_ref().is_ok_and(|p| p.has_entry("k")), "{ptx:?}");
    }

    #[test]
    fn cubin_is_machine_code_for_the_architecture() {
        if !nvrtc_or_skip("compile::tests::cubin_is_machine_code_for_the_architecture") {
            return;
        }
        let src = source("extern \"C\" __global__ void k(int* o) { *o = MEMTUNE_X; }\n");
        let cubin = compile_cubin(&src, "sm_90", &[("MEMTUNE_X", "7")]);
        assert!(
            cubin.as_ref().is_ok_and(|c| c.starts_with(b"\x7fELF")),
            "{cubin:?}"
        );
        // Diagnostics fail it as they fail PTX.
        assert!(compile_cubin(&src, "sm_90", &[]).is_err());
        assert!(nvrtc_version().is_some_and(|(major, _)| major >= 12));
    }

    #[test]
    fn headers_are_includable() {
        if !nvrtc_or_skip("compile::tests::headers_are_includable") {
            return;
        }
        let src = source(
            "#include \"memtune_params.h\"\n\
             extern \"C\" __global__ void k(memtune_stencil_params p, unsigned int* o) { *o = p.nx; }\n",
        );
        let ptx = compile_ptx(&src, "sm_90", &[]);
        assert!(ptx.as_ref().is_ok_and(|p| p.has_entry("k")), "{ptx:?}");
    }

    #[test]
    fn extra_headers_are_includable() {
        if !nvrtc_or_skip("compile::tests::extra_headers_are_includable") {
            return;
        }
        let src = source(
            "#include \"user.h\"\nextern \"C\" __global__ void k(int* o) { *o = USER_X; }\n",
        );
        assert!(compile_ptx(&src, "sm_90", &[]).is_err());
        let ptx = compile_ptx_with_headers(&src, "sm_90", &[], &[("user.h", "#define USER_X 3\n")]);
        assert!(ptx.as_ref().is_ok_and(|p| p.has_entry("k")), "{ptx:?}");
    }

    #[test]
    fn nul_in_define_is_an_error_not_a_panic() {
        if !nvrtc_or_skip("compile::tests::nul_in_define_is_an_error_not_a_panic") {
            return;
        }
        let src = source("extern \"C\" __global__ void k() {}\n");
        let r = compile_ptx(&src, "sm_90", &[("A\0B", "1")]);
        assert!(matches!(r, Err(CompileError::NulByte { .. })), "{r:?}");
    }
}
