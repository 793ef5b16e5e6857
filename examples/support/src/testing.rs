//! For the examples' GPU tests: the `MEMTUNE_GPU_TESTS` switch and the GPU they open.

use std::io::Write as _;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};
use memtune::DeviceIdentity;

/// True with `MEMTUNE_GPU_TESTS=1`; otherwise the test is skipped with one `SKIPPED` line.
pub fn gpu_tests(test: &str) -> bool {
    if std::env::var("MEMTUNE_GPU_TESTS").is_ok_and(|v| v == "1") {
        return true;
    }
    // Written to the stream itself, past the test harness's capture, so it shows.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: GPU test; set MEMTUNE_GPU_TESTS=1 on a machine with a GPU to run it"
    );
    false
}

/// GPU 0's identity and the default stream of a fresh context on it; panics without a GPU.
pub fn gpu0() -> (DeviceIdentity, Arc<CudaStream>) {
    let identity = memtune::device::identity(0).expect("a GPU");
    let ctx = CudaContext::new(0).expect("a context");
    (identity, ctx.default_stream())
}
