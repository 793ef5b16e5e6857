//! tuned-app's build script: memtune's build helper compiles the CUDA sources with the plans
//! for the profile the lookup chain finds (`MEMTUNE_PROFILE`, `.memtune/`, `MEMTUNE_DEVICE`,
//! the user cache, the default) as `-DMEMTUNE_...` defines, with nvcc where there is one,
//! and generates `$OUT_DIR/memtune_kernels.rs` (sources, PTX, defines, profile stamp,
//! bindings of include/tuned_params.h).
//!
//! The workloads are the ones src/main.rs gives the macros: the app checks at run time that
//! both planned the same.

use memtune_build::Kernels;
use memtune_core::plan::sampling::SamplingWorkload;
use memtune_core::plan::stencil::{Dtype, StencilWorkload};
use memtune_core::MemoryKind;

fn main() {
    Kernels::new()
        .file("cuda/stencil.cu")
        .file("cuda/sampling.cu")
        .bindings("include/tuned_params.h", "src/params_ffi.rs")
        .sampling_plan(
            "sampling",
            SamplingWorkload {
                region_bytes: 4 << 30,
                memory: MemoryKind::Device,
                reads_per_thread: 1,
            },
        )
        .stencil_plan(
            "stencil",
            StencilWorkload {
                dims: [256, 256, 64],
                dtype: Dtype::F32,
                repeats: 1,
            },
        )
        .compile("memtune_kernels");
}
