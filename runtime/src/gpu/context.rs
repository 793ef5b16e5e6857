//! One GPU opened by ordinal: identity, primary context, default stream, and the modules
//! compiled for it.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;
use memtune_core::DeviceIdentity;
use memtune_kernels::{compile_cubin, compile_ptx, nvrtc_version, KernelSource};

use super::kernel_cache::{self, KernelCache};
use super::{cuda, Error};
use crate::device;

/// A module is compiled once per source and set of defines.
type ModuleKey = (&'static str, Vec<(String, String)>);

/// An open GPU. Buffers allocated while it is bound must be dropped before it.
pub struct Context {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    identity: DeviceIdentity,
    arch: String,
    modules: HashMap<ModuleKey, Arc<CudaModule>>,
    kernels: KernelCache,
}

impl Context {
    /// Opens GPU `ordinal`: its identity (which checks the driver first, so a machine
    /// without one gets an error, not a panic), its primary context, bound to this thread,
    /// and the context's default stream.
    pub fn open(ordinal: usize) -> Result<Context, Error> {
        let identity = device::identity(ordinal)?;
        Context::with_identity(ordinal, identity)
    }

    /// As [`Context::open`], with the identity already read.
    pub fn with_identity(ordinal: usize, identity: DeviceIdentity) -> Result<Context, Error> {
        let ctx = CudaContext::new(ordinal).map_err(cuda("cuDevicePrimaryCtxRetain"))?;
        ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        let stream = ctx.default_stream();
        let cc = identity.compute_capability;
        Ok(Context {
            ctx,
            stream,
            arch: format!("sm_{}{}", cc.major, cc.minor),
            identity,
            modules: HashMap::new(),
            kernels: KernelCache::from_env(),
        })
    }

    pub fn identity(&self) -> &DeviceIdentity {
        &self.identity
    }

    /// The architecture kernels are compiled for, e.g. `sm_90`.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    pub fn cuda_context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream every launch and timing of this context runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Makes the context current on this thread (buffers call the driver directly).
    pub fn bind(&self) -> Result<(), Error> {
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))
    }

    /// Waits for everything enqueued on the stream.
    pub fn sync(&self) -> Result<(), Error> {
        self.stream
            .synchronize()
            .map_err(cuda("cuStreamSynchronize"))
    }

    /// Free and total device memory, in bytes.
    pub fn memory_info(&self) -> Result<(u64, u64), Error> {
        let (free, total) = self.ctx.mem_get_info().map_err(cuda("cuMemGetInfo"))?;
        Ok((free as u64, total as u64))
    }

    /// Refuses to allocate `needed` bytes of device memory when fewer are free.
    pub fn check_free(&self, needed: u64) -> Result<(), Error> {
        let (free, _total) = self.memory_info()?;
        if needed > free {
            return Err(Error::OutOfMemory { needed, free });
        }
        Ok(())
    }

    /// `source` compiled with `defines` for this GPU, compiled and loaded on first use.
    pub fn module(
        &mut self,
        source: &KernelSource,
        defines: &[(&str, &str)],
    ) -> Result<Arc<CudaModule>, Error> {
        let key: ModuleKey = (
            source.name,
            defines
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        );
        if let Some(m) = self.modules.get(&key) {
            return Ok(m.clone());
        }
        let m = self.load(source, defines)?;
        self.modules.insert(key, m.clone());
        Ok(m)
    }

    /// The module from the kernel cache, else compiled to a CUBIN (and cached), else, where
    /// the driver refuses that, compiled to PTX for the driver to finish.
    fn load(
        &self,
        source: &KernelSource,
        defines: &[(&str, &str)],
    ) -> Result<Arc<CudaModule>, Error> {
        let key = kernel_cache::key(source, defines, &self.arch, nvrtc_version());
        if let Some(cubin) = self.kernels.get(&key) {
            if let Ok(m) = self.ctx.load_module(Ptx::from_binary(cubin)) {
                return Ok(m);
            }
        }
        let cubin = compile_cubin(source, &self.arch, defines)?;
        if let Ok(m) = self.ctx.load_module(Ptx::from_binary(cubin.clone())) {
            self.kernels.put(&key, &cubin);
            return Ok(m);
        }
        let ptx = compile_ptx(source, &self.arch, defines)?;
        self.ctx
            .load_module(ptx.to_cudarc())
            .map_err(cuda(format!("loading {}", source.name)))
    }

    /// Kernel `entry` of `source` compiled with `defines`.
    pub fn function(
        &mut self,
        source: &KernelSource,
        defines: &[(&str, &str)],
        entry: &str,
    ) -> Result<CudaFunction, Error> {
        self.module(source, defines)?
            .load_function(entry)
            .map_err(cuda(format!("finding {entry} in {}", source.name)))
    }

    /// Every entry of `source` (no defines), in the order the source lists them.
    pub fn functions(&mut self, source: &KernelSource) -> Result<Vec<CudaFunction>, Error> {
        let module = self.module(source, &[])?;
        source
            .entries
            .iter()
            .map(|e| {
                module
                    .load_function(e)
                    .map_err(cuda(format!("finding {e} in {}", source.name)))
            })
            .collect()
    }
}
