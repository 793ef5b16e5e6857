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

/// Why a run failed, and its exit code (`Compile` names `kernels/stencil27.cu`).
pub type StencilError = memtune_example_support::Error;

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
