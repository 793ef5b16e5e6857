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

/// Why a run failed, and its exit code (`Compile` names `kernels/gather.cu`).
pub type GatherError = memtune_example_support::Error;
