//! A user kernel on the GPU present: compiled by NVRTC for its architecture and loaded
//! into the context of the stream memtune's autotuner opened.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaModule, CudaStream};
use memtune::kernels::{compile_ptx, CompiledPtx, KernelSource};
use memtune::DeviceIdentity;

/// Why setting a kernel up failed: NVRTC, or a CUDA call (named).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupError {
    Compile(String),
    Cuda { call: &'static str, detail: String },
}

/// `map_err(cuda("cuMemGetInfo"))`.
pub fn cuda<E: std::fmt::Debug>(call: &'static str) -> impl Fn(E) -> SetupError {
    move |e| SetupError::Cuda {
        call,
        detail: format!("{e:?}"),
    }
}

/// `sm_90` for compute capability 9.0.
pub fn arch(major: u32, minor: u32) -> String {
    format!("sm_{major}{minor}")
}

/// The architecture of `identity`'s GPU.
pub fn arch_of(identity: &DeviceIdentity) -> String {
    let cc = identity.compute_capability;
    arch(cc.major, cc.minor)
}

/// PTX of `source` for `arch`, with every entry it names; NVRTC's warnings count as errors.
pub fn compile(source: &KernelSource, arch: &str) -> Result<CompiledPtx, String> {
    let ptx = compile_ptx(source, arch, &[]).map_err(|e| e.to_string())?;
    for entry in source.entries {
        if !ptx.has_entry(entry) {
            return Err(format!("the PTX for {arch} has no entry {entry}"));
        }
    }
    Ok(ptx)
}

/// Binds the context of `stream` (the one `Autotuner::open` returns) to this thread,
/// compiles `source` for `identity`'s GPU and loads it.
pub fn load(
    identity: &DeviceIdentity,
    stream: &Arc<CudaStream>,
    source: &KernelSource,
) -> Result<(Arc<CudaContext>, Arc<CudaModule>), SetupError> {
    let ctx = stream.context().clone();
    ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
    let ptx = compile(source, &arch_of(identity)).map_err(SetupError::Compile)?;
    let module = ctx
        .load_module(ptx.to_cudarc())
        .map_err(cuda("cuModuleLoadData"))?;
    Ok((ctx, module))
}

/// Free device memory of `ctx` in bytes.
pub fn free_device_bytes(ctx: &CudaContext) -> Result<u64, SetupError> {
    let (free, _total) = ctx.mem_get_info().map_err(cuda("cuMemGetInfo"))?;
    Ok(free as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_names() {
        assert_eq!(arch(9, 0), "sm_90");
        assert_eq!(arch(12, 1), "sm_121");
        let e = cuda("cuMemAlloc")("out of memory");
        assert_eq!(
            e,
            SetupError::Cuda {
                call: "cuMemAlloc",
                detail: "\"out of memory\"".into()
            }
        );
    }
}
