//! A user kernel on the GPU present: compiled by NVRTC for its architecture and loaded
//! into the context of the stream memtune's autotuner opened; the result slots its
//! launches write, and CUDA-event timing on that stream.

use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::{result, CudaContext, CudaFunction, CudaModule, CudaStream};
use memtune::gpu::Buffer;
use memtune::kernels::{compile_ptx, CompiledPtx, KernelSource};
use memtune::{DeviceIdentity, MemoryKind};

use crate::Error;

/// `map_err(cuda("cuMemGetInfo"))`.
pub fn cuda<E: std::fmt::Debug>(call: &'static str) -> impl Fn(E) -> Error {
    Error::cuda(call)
}

/// A launch grid that grows with the GPU: `blocks_per_sm` blocks of `block` threads per SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    pub block: u32,
    pub blocks_per_sm: u32,
}

impl Grid {
    pub const fn new(block: u32, blocks_per_sm: u32) -> Grid {
        Grid {
            block,
            blocks_per_sm,
        }
    }

    /// `(blocks, threads per block)` on a GPU with `sm_count` SMs (one at least).
    pub fn of(&self, sm_count: u32) -> (u32, u32) {
        (sm_count.max(1) * self.blocks_per_sm, self.block)
    }

    /// Threads of a launch on a GPU with `sm_count` SMs.
    pub fn threads(&self, sm_count: u32) -> u64 {
        let (blocks, block) = self.of(sm_count);
        u64::from(blocks) * u64::from(block)
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
pub fn compile(source: &KernelSource, arch: &str) -> Result<CompiledPtx, Error> {
    let failed = |detail: String| Error::Compile {
        kernel: source.name,
        detail,
    };
    let ptx = compile_ptx(source, arch, &[]).map_err(|e| failed(e.to_string()))?;
    for entry in source.entries {
        if !ptx.has_entry(entry) {
            return Err(failed(format!("the PTX for {arch} has no entry {entry}")));
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
) -> Result<(Arc<CudaContext>, Arc<CudaModule>), Error> {
    let ctx = stream.context().clone();
    ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
    let ptx = compile(source, &arch_of(identity))?;
    let module = ctx
        .load_module(ptx.to_cudarc())
        .map_err(cuda("cuModuleLoadData"))?;
    Ok((ctx, module))
}

/// Free device memory of `ctx` in bytes.
pub fn free_device_bytes(ctx: &CudaContext) -> Result<u64, Error> {
    let (free, _total) = ctx.mem_get_info().map_err(cuda("cuMemGetInfo"))?;
    Ok(free as u64)
}

/// `Deref<Target = LoadedGpu>` for an example's `Gpu`, through its `loaded` field.
#[macro_export]
macro_rules! deref_to_loaded {
    ($gpu:ty) => {
        impl std::ops::Deref for $gpu {
            type Target = $crate::gpu::LoadedGpu;

            fn deref(&self) -> &$crate::gpu::LoadedGpu {
                &self.loaded
            }
        }
    };
}

/// One GPU with a user's module loaded: its identity, the context and stream of the
/// autotuner, the module. An example's own `Gpu` holds one (and derefs to it) next to the
/// functions it takes from the module.
pub struct LoadedGpu {
    identity: DeviceIdentity,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
}

impl LoadedGpu {
    /// Compiles `source` for the device of `stream` (the one `Autotuner::open` returns)
    /// and loads it ([`load`]).
    pub fn new(
        identity: DeviceIdentity,
        stream: Arc<CudaStream>,
        source: &KernelSource,
    ) -> Result<LoadedGpu, Error> {
        let (ctx, module) = load(&identity, &stream, source)?;
        Ok(LoadedGpu {
            identity,
            ctx,
            stream,
            module,
        })
    }

    /// The entry `name` of the module.
    pub fn function(&self, name: &str) -> Result<CudaFunction, Error> {
        self.module
            .load_function(name)
            .map_err(cuda("cuModuleGetFunction"))
    }

    pub fn identity(&self) -> &DeviceIdentity {
        &self.identity
    }

    pub fn ctx(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Free device memory in bytes.
    pub fn free_device_bytes(&self) -> Result<u64, Error> {
        free_device_bytes(&self.ctx)
    }

    /// Milliseconds between CUDA events around the work `f` enqueues, after it finished,
    /// the stream held until `f` returns (memtune's gated timer, as the autotuner times).
    pub fn time<E: From<memtune::gpu::Error>>(
        &self,
        f: impl FnOnce() -> Result<(), E>,
    ) -> Result<f64, E> {
        Ok(memtune::gpu::time_gated_ms(&self.stream, f)?.ms)
    }

    /// Waits for the stream's work; a failed kernel shows here.
    pub fn sync(&self) -> Result<(), Error> {
        self.stream
            .synchronize()
            .map_err(cuda("cuStreamSynchronize (the kernel failed)"))
    }
}

/// What one result slot holds: `WORDS` u64 a launch adds to, read back as `Self`.
pub trait SlotValue: Sized {
    const WORDS: usize;
    /// The value of one slot's `WORDS` words.
    fn from_words(words: &[u64]) -> Self;
}

impl SlotValue for u64 {
    const WORDS: usize = 1;
    fn from_words(words: &[u64]) -> u64 {
        words[0]
    }
}

/// One result slot a launch adds to: its index among the slots handed out and its
/// device address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub index: usize,
    pub ptr: u64,
}

/// Device memory of `len` result slots, handed out in order: every launch gets a zeroed
/// slot of its own, so that the results of many launches can be checked after them.
pub struct Slots<T> {
    ctx: Arc<CudaContext>,
    buffer: Buffer,
    len: usize,
    used: usize,
    /// What more launches than slots are, in the refusal: `launches between two checks`.
    what: &'static str,
    value: PhantomData<T>,
}

impl<T: SlotValue> Slots<T> {
    const BYTES: usize = T::WORDS * 8;

    /// `len` (at least one) zeroed slots in `ctx`; `what` names, in the refusal of one
    /// slot too many, what the slots count (`digests between two checks`).
    pub fn allocate(
        ctx: &Arc<CudaContext>,
        len: usize,
        what: &'static str,
    ) -> Result<Slots<T>, Error> {
        ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        let slots = Slots {
            ctx: ctx.clone(),
            buffer: Buffer::allocate(MemoryKind::Device, len.max(1) * Self::BYTES)?,
            len: len.max(1),
            used: 0,
            what,
            value: PhantomData,
        };
        slots.zero()?;
        Ok(slots)
    }

    fn zero(&self) -> Result<(), Error> {
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        // SAFETY: len * BYTES bytes are allocated at dptr; no kernel uses them (every
        // launch was synchronised before a reset).
        unsafe { result::memset_d8_sync(self.buffer.dptr(), 0, self.len * Self::BYTES) }
            .map_err(cuda("cuMemsetD8"))
    }

    /// The next unused slot.
    pub fn take(&mut self) -> Result<Slot, Error> {
        if self.used >= self.len {
            return Err(Error::Autotune(format!(
                "more than {} {}",
                self.len, self.what
            )));
        }
        let index = self.used;
        self.used += 1;
        Ok(Slot {
            index,
            ptr: self.buffer.dptr() + (Self::BYTES * index) as u64,
        })
    }

    /// Slots handed out since the last reset.
    pub fn used(&self) -> usize {
        self.used
    }

    /// The values of the slots handed out, in order; the caller has synchronised their
    /// launches.
    pub fn read(&self) -> Result<Vec<T>, Error> {
        let mut raw = vec![0u64; self.used * T::WORDS];
        if self.used > 0 {
            self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
            self.buffer.read(&mut raw)?;
        }
        Ok(raw.chunks_exact(T::WORDS).map(T::from_words).collect())
    }

    /// Zeroes every slot and starts handing them out from the first again.
    pub fn reset(&mut self) -> Result<(), Error> {
        self.zero()?;
        self.used = 0;
        Ok(())
    }
}

impl<T> Drop for Slots<T> {
    fn drop(&mut self) {
        // The buffer is freed right after this, in this context.
        let _ = self.ctx.bind_to_thread();
    }
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
            Error::Cuda {
                call: "cuMemAlloc",
                detail: "\"out of memory\"".into()
            }
        );
    }

    #[test]
    fn grids_grow_with_the_sms() {
        let grid = Grid::new(256, 4);
        assert_eq!(grid.of(0), (4, 256));
        assert_eq!(grid.of(132), (528, 256));
        assert_eq!(grid.threads(132), 132 * 1024);
    }
}
