//! memtune's CUDA kernels and their NVRTC compilation.
//!
//! Kernel sources live in `kernels/cuda/` and are embedded here with `include_str!`;
//! [`SOURCES`] lists them all. [`compile::compile_ptx`] turns one into PTX at run time,
//! after [`toolchain::ensure_nvrtc`] has made NVRTC loadable.

pub mod compile;
pub mod toolchain;

pub use compile::{compile_ptx, CompileError, CompiledPtx};
pub use toolchain::{ensure_nvrtc, NvrtcLocation, ToolchainError};

/// One CUDA source file and the `extern "C"` kernels it defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSource {
    /// File name under `kernels/cuda/`; also the name NVRTC uses in diagnostics.
    pub name: &'static str,
    /// The CUDA C++ source text.
    pub source: &'static str,
    /// Names of the kernels (PTX `.entry` symbols) it defines.
    pub entries: &'static [&'static str],
}

/// TLB / cache probe: pointer-chase ring init and the timed single-thread walk.
pub mod pointer_chase {
    use super::KernelSource;

    /// `memtune_chase_init(base: u64, stride_bytes: u64, count: u64)`
    pub const INIT: &str = "memtune_chase_init";
    /// `memtune_pointer_chase(start: u64, warm_steps: u32, steps: u32, target_sm: i32, out: *mut u64)`
    pub const CHASE: &str = "memtune_pointer_chase";
    /// Length of the chase kernel's `out` array: cycles, address reached, SM.
    pub const OUT_LEN: usize = 3;
    /// Value to pre-fill `out` with; `out[2]` still holding it means no block ran on
    /// the requested SM.
    pub const OUT_SENTINEL: u64 = u64::MAX;

    pub const SOURCE: KernelSource = KernelSource {
        name: "pointer_chase.cu",
        source: include_str!("../cuda/pointer_chase.cu"),
        entries: &[INIT, CHASE],
    };
}

/// Every kernel source of this crate.
pub const SOURCES: &[KernelSource] = &[pointer_chase::SOURCE];
