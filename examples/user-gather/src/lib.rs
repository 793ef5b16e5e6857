//! user-gather: what a user of memtune writes to autotune a kernel of their own.
//!
//! The kernel (`kernels/gather.cu`) is a random gather with arithmetic per read; memtune
//! does not know it. Its TLB scoping is the user's: pass k reads only the positions inside
//! the k-th scope of the plan memtune's autotuner hands to the launch closure. The
//! binary (`src/main.rs`) tunes it (default mode) or benchmarks untuned, model, autotuned
//! and exhaustive plans (`--bench`).

pub mod args;
pub mod bench;
pub mod gpu;
pub mod kernel;
pub mod reference;
pub mod report;

use std::fmt;

/// The seed of every run: the streams the threads draw.
pub const SEED: u64 = 0x00c0_ffee_5eed;

/// The kernel's parameters besides the region: reads per thread and FMA rounds per read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    pub reads: u32,
    pub work: u32,
}

impl Variant {
    /// The bench's variants: memory-bound with few and many reads, and arithmetic per read.
    pub const BENCH: [Variant; 3] = [
        Variant { reads: 64, work: 0 },
        Variant {
            reads: 1024,
            work: 0,
        },
        Variant {
            reads: 64,
            work: 32,
        },
    ];

    /// `reads 64`, `reads 64 work 32`.
    pub fn name(&self) -> String {
        if self.work == 0 {
            format!("reads {}", self.reads)
        } else {
            format!("reads {} work {}", self.reads, self.work)
        }
    }

    /// The kernel name a decision is stored under. The workload class holds the reads per
    /// thread but nothing of the kernel's other parameters, so `work` (which moves the best
    /// plan) goes into the name, with a version to bump when the kernel changes.
    pub fn kernel_key(&self) -> String {
        format!("user-gather-v1-work{}", self.work)
    }
}

/// Why a run failed, and its exit code.
#[derive(Debug)]
pub enum GatherError {
    /// Bad arguments (exit 2).
    Usage(String),
    /// A size this machine cannot hold (`--check-free`, exit 2).
    TooLarge(String),
    /// No driver, no GPU, a driver too old (exit 3).
    NoGpu(String),
    /// A CUDA call failed (exit 1).
    Cuda { call: &'static str, detail: String },
    /// A call of memtune's GPU foundation (buffers, timing) failed (exit 1).
    Gpu(String),
    /// NVRTC failed (exit 1).
    Compile(String),
    /// The autotuner failed (exit 1).
    Autotune(String),
    /// A plan's sum differs from the untuned or CPU sum (exit 1).
    Mismatch(String),
    /// Writing the JSON failed (exit 1).
    Io(String),
    /// Some bench rows failed; each was reported (exit 1).
    Bench(String),
}

impl GatherError {
    pub fn exit_code(&self) -> u8 {
        match self {
            GatherError::Usage(_) | GatherError::TooLarge(_) => 2,
            GatherError::NoGpu(_) => 3,
            _ => 1,
        }
    }

    /// `map_err(GatherError::cuda("cuMemAlloc"))`.
    pub fn cuda<E: fmt::Debug>(call: &'static str) -> impl Fn(E) -> GatherError {
        move |e| GatherError::Cuda {
            call,
            detail: format!("{e:?}"),
        }
    }
}

impl From<memtune_example_support::gpu::SetupError> for GatherError {
    fn from(e: memtune_example_support::gpu::SetupError) -> GatherError {
        use memtune_example_support::gpu::SetupError as S;
        match e {
            S::Compile(m) => GatherError::Compile(m),
            S::Cuda { call, detail } => GatherError::Cuda { call, detail },
        }
    }
}

impl From<memtune::gpu::Error> for GatherError {
    fn from(e: memtune::gpu::Error) -> GatherError {
        GatherError::Gpu(e.to_string())
    }
}

impl fmt::Display for GatherError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GatherError::Usage(m) => write!(f, "usage: {m}"),
            GatherError::TooLarge(m) => write!(f, "too large: {m}"),
            GatherError::NoGpu(m) => write!(f, "no GPU: {m}"),
            GatherError::Cuda { call, detail } => write!(f, "CUDA call {call} failed: {detail}"),
            GatherError::Gpu(m) => write!(f, "GPU: {m}"),
            GatherError::Compile(m) => write!(f, "compiling kernels/gather.cu: {m}"),
            GatherError::Autotune(m) => write!(f, "autotune: {m}"),
            GatherError::Mismatch(m) => write!(f, "wrong result: {m}"),
            GatherError::Io(m) | GatherError::Bench(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for GatherError {}

impl From<memtune::device::DeviceError> for GatherError {
    fn from(e: memtune::device::DeviceError) -> GatherError {
        use memtune::device::DeviceError as D;
        match e {
            D::NoDriver | D::NoGpu { .. } | D::DriverTooOld { .. } | D::NoSuchDevice { .. } => {
                GatherError::NoGpu(e.to_string())
            }
            D::Cuda { call, detail } => GatherError::Cuda { call, detail },
        }
    }
}
