//! user-stencil: what a user of memtune writes to autotune a stencil kernel of their own.
//!
//! The kernel (`kernels/stencil27.cu`) is a 27-point box stencil with weights for the
//! centre, the 6 faces, the 12 edges and the 8 corners, in f32 and f64; memtune does not
//! know it. It comes in the three forms memtune's stencil plans name (plain, staged,
//! streaming), and the launch takes the block shape from the plan memtune's autotuner
//! hands to the launch closure. The binary (`src/main.rs`) tunes it (default mode) or
//! benchmarks untuned, model, autotuned and exhaustive plans (`--bench`).

pub mod args;
pub mod bench;
pub mod gpu;
pub mod kernel;
pub mod reference;
pub mod report;

use std::fmt;

use memtune::core::plan::{Dtype, StencilWorkload};

/// One stencil to run: the volume, its element type and how often each cell's 27 values
/// are read per sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    /// Cells along x (contiguous), y, z.
    pub dims: [u32; 3],
    pub dtype: Dtype,
    pub repeats: u32,
}

impl Case {
    /// The workload memtune's planner and autotuner see.
    pub fn workload(&self) -> StencilWorkload {
        StencilWorkload {
            dims: self.dims,
            dtype: self.dtype,
            repeats: self.repeats,
        }
    }

    pub fn cells(&self) -> u64 {
        self.dims.iter().map(|&d| u64::from(d)).product()
    }

    /// Bytes of one volume (the input, or the output).
    pub fn bytes(&self) -> u64 {
        self.cells() * u64::from(self.dtype.bytes())
    }

    /// Device memory a run takes: input, output and the untuned output it is checked
    /// against.
    pub fn device_bytes(&self) -> u64 {
        3 * self.bytes()
    }

    /// `f32 200x200x200`, `f64 256x256x256 x6`.
    pub fn name(&self) -> String {
        let [x, y, z] = self.dims;
        let repeats = if self.repeats == 1 {
            String::new()
        } else {
            format!(" x{}", self.repeats)
        };
        format!("{} {x}x{y}x{z}{repeats}", self.dtype.as_str())
    }

    /// The kernel name a decision is stored under. The workload class already holds the
    /// dims, element size and repeats, so only the kernel's version is added: bump it
    /// when the kernel changes.
    pub fn kernel_key(&self) -> &'static str {
        "user-stencil27-v1"
    }
}

/// Why a run failed, and its exit code.
#[derive(Debug)]
pub enum StencilError {
    /// Bad arguments (exit 2).
    Usage(String),
    /// A volume this machine cannot hold (`--check-free`, exit 2).
    TooLarge(String),
    /// No driver, no GPU, a driver too old (exit 3).
    NoGpu(String),
    /// A CUDA call failed (exit 1).
    Cuda { call: &'static str, detail: String },
    /// A call of memtune's GPU foundation (buffers, timing) failed (exit 1).
    Gpu(String),
    /// NVRTC failed (exit 1).
    Compile(String),
    /// A plan cannot be launched (exit 1).
    Launch(String),
    /// The autotuner failed (exit 1).
    Autotune(String),
    /// A plan's output differs from the untuned or CPU output (exit 1).
    Mismatch(String),
    /// Writing the JSON failed (exit 1).
    Io(String),
    /// Some bench rows failed; each was reported (exit 1).
    Bench(String),
}

impl StencilError {
    pub fn exit_code(&self) -> u8 {
        match self {
            StencilError::Usage(_) | StencilError::TooLarge(_) => 2,
            StencilError::NoGpu(_) => 3,
            _ => 1,
        }
    }

    /// `map_err(StencilError::cuda("cuMemAlloc"))`.
    pub fn cuda<E: fmt::Debug>(call: &'static str) -> impl Fn(E) -> StencilError {
        move |e| StencilError::Cuda {
            call,
            detail: format!("{e:?}"),
        }
    }
}

impl From<memtune_example_support::gpu::SetupError> for StencilError {
    fn from(e: memtune_example_support::gpu::SetupError) -> StencilError {
        use memtune_example_support::gpu::SetupError as S;
        match e {
            S::Compile(m) => StencilError::Compile(m),
            S::Cuda { call, detail } => StencilError::Cuda { call, detail },
        }
    }
}

impl From<memtune::gpu::Error> for StencilError {
    fn from(e: memtune::gpu::Error) -> StencilError {
        StencilError::Gpu(e.to_string())
    }
}

impl fmt::Display for StencilError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StencilError::Usage(m) => write!(f, "usage: {m}"),
            StencilError::TooLarge(m) => write!(f, "too large: {m}"),
            StencilError::NoGpu(m) => write!(f, "no GPU: {m}"),
            StencilError::Cuda { call, detail } => write!(f, "CUDA call {call} failed: {detail}"),
            StencilError::Gpu(m) => write!(f, "GPU: {m}"),
            StencilError::Compile(m) => write!(f, "compiling kernels/stencil27.cu: {m}"),
            StencilError::Launch(m) => write!(f, "launch: {m}"),
            StencilError::Autotune(m) => write!(f, "autotune: {m}"),
            StencilError::Mismatch(m) => write!(f, "wrong result: {m}"),
            StencilError::Io(m) | StencilError::Bench(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for StencilError {}

impl From<memtune::device::DeviceError> for StencilError {
    fn from(e: memtune::device::DeviceError) -> StencilError {
        use memtune::device::DeviceError as D;
        match e {
            D::NoDriver | D::NoGpu { .. } | D::DriverTooOld { .. } | D::NoSuchDevice { .. } => {
                StencilError::NoGpu(e.to_string())
            }
            D::Cuda { call, detail } => StencilError::Cuda { call, detail },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_sizes_and_names() {
        let c = Case {
            dims: [384, 256, 192],
            dtype: Dtype::F64,
            repeats: 1,
        };
        assert_eq!(c.cells(), 384 * 256 * 192);
        assert_eq!(c.bytes(), 384 * 256 * 192 * 8);
        assert_eq!(c.device_bytes(), 3 * c.bytes());
        assert_eq!(c.name(), "f64 384x256x192");
        let r = Case { repeats: 6, ..c };
        assert_eq!(r.name(), "f64 384x256x192 x6");
        assert_eq!(r.workload().repeats, 6);
    }
}
