//! Timed launches for benchmarks: inputs kept resident on the GPU ([`Resident`]), kernel
//! work timed with CUDA events after one warm-up run, no host<->device copy inside a timing.
//!
//! Every `time_*` method runs the work `1 + runs` times (the first is the warm-up, not
//! timed) and returns the result of the last run with the [`Timing`] of the others, so a
//! caller can check that versions agree before trusting their times.

use std::ops::Range;

use cudarc::driver::{result, LaunchConfig, PushKernelArg};
use memtune_core::plan::{Approach, Dtype, GroupingPlan, SamplingPlan, StencilPlan};
use memtune_core::MemoryKind;
use memtune_kernels::digest;
use memtune_kernels::params::{GroupingBucket, GroupingCounters, GroupingParams, SamplingParams};

use super::{
    check_kind, cuda, grouping_scopes, sampling_scopes, stencil_launch, LaunchError, Runtime,
    StencilElement, StencilSweep,
};
use crate::gpu::{self, Buffer, Timing};

/// An input kept on the GPU between timed launches: device memory, or pinned host memory
/// mapped into the GPU. Holds `len` elements of 4 or 8 bytes (`elem_bytes`).
pub struct Resident {
    buffer: Buffer,
    kind: MemoryKind,
    len: u64,
    elem_bytes: u64,
}

impl Resident {
    pub fn kind(&self) -> MemoryKind {
        self.kind
    }

    /// Elements held.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn bytes(&self) -> u64 {
        self.len * self.elem_bytes
    }
}

/// A checksum of a grouping table that does not depend on where the buckets landed:
/// equal for every plan that found the same groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupingDigest {
    /// Occupied buckets (distinct keys other than the sentinel).
    pub groups: u64,
    /// Keys counted, the sentinel key included: the input length when none was dropped.
    pub keys: u64,
    /// Sum over groups of a hash of the key times its count (wrapping).
    pub hash: u64,
}

impl Runtime {
    /// Free and total device memory in bytes (`cuMemGetInfo`).
    pub fn memory_info(&self) -> Result<(u64, u64), LaunchError> {
        Ok(self.gpu.memory_info()?)
    }

    /// `len` 4-byte words of `kind` memory filled by repeating `pattern` (uploaded once,
    /// then doubled in place, so filling many GiB is fast). `pattern` must not be empty.
    pub fn resident_words(
        &mut self,
        kind: MemoryKind,
        len: u64,
        pattern: &[u32],
    ) -> Result<Resident, LaunchError> {
        self.resident_repeating(kind, len, pattern)
    }

    /// `data` copied to device memory once, for [`Runtime::time_stencil`].
    pub fn resident_f32(&mut self, data: &[f32]) -> Result<Resident, LaunchError> {
        self.resident_repeating(MemoryKind::Device, data.len() as u64, data)
    }

    /// `data` copied to device memory once, for [`Runtime::time_stencil`].
    pub fn resident_f64(&mut self, data: &[f64]) -> Result<Resident, LaunchError> {
        self.resident_repeating(MemoryKind::Device, data.len() as u64, data)
    }

    fn resident_repeating<T: Copy>(
        &mut self,
        kind: MemoryKind,
        len: u64,
        pattern: &[T],
    ) -> Result<Resident, LaunchError> {
        if len == 0 || pattern.is_empty() {
            return Err(LaunchError::Empty {
                what: "resident input",
            });
        }
        check_kind(kind)?;
        let elem = std::mem::size_of::<T>() as u64;
        let bytes = len
            .checked_mul(elem)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| LaunchError::BadSize(format!("{len} elements do not fit this host")))?;
        self.bind()?;
        if kind == MemoryKind::Device {
            self.check_free(bytes as u64)?;
        }
        let buffer = Buffer::allocate(kind, bytes)?;
        let first = pattern.len().min(len as usize);
        buffer.write(&pattern[..first])?;
        let mut filled = first * elem as usize;
        while filled < bytes {
            let n = filled.min(bytes - filled);
            buffer.copy_within(0, filled, n)?;
            filled += n;
        }
        Ok(Resident {
            buffer,
            kind,
            len,
            elem_bytes: elem,
        })
    }

    /// Median-ready timing of [`Runtime::sampling`]'s kernel work with `params` (its
    /// stream, its work per read) over the first `params.n_words` words of `region`: the
    /// sum of the last run and the runs' times.
    pub fn time_sampling(
        &mut self,
        region: &Resident,
        params: SamplingParams,
        plan: &SamplingPlan,
        runs: usize,
    ) -> Result<(u64, Timing), LaunchError> {
        check_words(region)?;
        let n_words = params.n_words;
        if n_words > region.len {
            return Err(LaunchError::BadSize(format!(
                "{n_words} words asked of a region of {}",
                region.len
            )));
        }
        let passes = with_scopes(sampling_scopes(n_words, plan)?, |s| params.with_scope(s))?;
        self.bind()?;
        self.check_free(8)?;
        let function = self.sampling_function()?;
        let sum = Buffer::allocate(MemoryKind::Device, 8)?;
        let timing = self.time_runs(
            runs,
            |rt| rt.zero(&sum, 8),
            // SAFETY: `region` holds region.len >= n_words words and `sum` one u64; both
            // outlive the synchronisation in time_runs.
            |rt| unsafe {
                rt.launch_sampling_passes(&function, region.buffer.dptr(), sum.dptr(), &passes)
            },
        )?;
        let mut out = [0u64];
        sum.read(&mut out)?;
        Ok((out[0], timing))
    }

    /// Timing of [`Runtime::grouping`]'s insert passes over the resident `keys` into a
    /// table of `capacity` buckets (a power of two, at least twice the distinct keys) in
    /// `table_memory`, with `work` extra hash rounds per key
    /// (`memtune_grouping_params::work`). The table is initialised before each run,
    /// outside the timing. The table of the last run is read back and summarised as a
    /// [`GroupingDigest`]; fails when keys were dropped.
    pub fn time_grouping(
        &mut self,
        keys: &Resident,
        capacity: u64,
        plan: &GroupingPlan,
        table_memory: MemoryKind,
        work: u32,
        runs: usize,
    ) -> Result<(GroupingDigest, Timing), LaunchError> {
        check_words(keys)?;
        check_kind(table_memory)?;
        let n_keys = keys.len;
        let params = GroupingParams {
            n_keys,
            capacity,
            scope_begin: 0,
            scope_end: capacity,
            work,
            pad: 0,
        };
        let passes = with_scopes(grouping_scopes(capacity, plan)?, |s| params.with_scope(s))?;
        let copy = plan.approach == Approach::Copy && passes.len() > 1;
        let table_bytes = usize::try_from(capacity * std::mem::size_of::<GroupingBucket>() as u64)
            .map_err(|_| {
                LaunchError::BadSize(format!("{capacity} buckets do not fit this host"))
            })?;
        self.bind()?;
        // A kept table of another kind or size goes before the free memory is checked.
        let kept = self
            .grouping_table
            .take()
            .filter(|t| t.kind() == table_memory && t.len_bytes() == table_bytes);
        let device_bytes = if table_memory == MemoryKind::Device && kept.is_none() {
            table_bytes as u64
        } else {
            0
        } + if copy { keys.bytes() } else { 0 }
            + 64;
        self.check_free(device_bytes)?;
        let kernels = self.grouping_kernels()?;
        let table = match kept {
            Some(t) => t,
            None => Buffer::allocate(table_memory, table_bytes)?,
        };
        let counters =
            Buffer::allocate(MemoryKind::Device, std::mem::size_of::<GroupingCounters>())?;
        let spill = if copy {
            Some(Buffer::allocate(MemoryKind::Device, keys.bytes() as usize)?)
        } else {
            None
        };
        let spill_dptr = spill.as_ref().map(|spill| spill.dptr());
        let timing = self.time_runs(
            runs,
            // SAFETY: `table` holds `capacity` buckets and `counters` the counters; both
            // outlive the synchronisation in time_runs.
            |rt| unsafe {
                rt.launch_grouping_init(&kernels, table.dptr(), counters.dptr(), &params)
            },
            // SAFETY: as in Runtime::grouping: `keys` holds n_keys keys and `spill`, when
            // there is one, room for n_keys; `table` holds `capacity` buckets; every buffer
            // outlives the synchronisation in time_runs.
            |rt| unsafe {
                rt.launch_grouping_passes(
                    &kernels,
                    keys.buffer.dptr(),
                    table.dptr(),
                    counters.dptr(),
                    spill_dptr,
                    &passes,
                )
            },
        )?;
        let mut c = [GroupingCounters::default()];
        counters.read(&mut c)?;
        if c[0].dropped != 0 {
            return Err(LaunchError::BadSize(format!(
                "{} keys were dropped: the table of {capacity} buckets is too small",
                c[0].dropped
            )));
        }
        let digest = self.digest_groups(&table, capacity, c[0].sentinel_count)?;
        // Every run clears the table first (launch_grouping_init), so it can be reused.
        self.grouping_table = Some(table);
        Ok((digest, timing))
    }

    /// Timing of one stencil `sweep` ([`Runtime::stencil_star`]) over the resident `input`
    /// of `dtype` cells; returns a digest of the output's bits
    /// ([`memtune_kernels::digest::words`]) and the runs' times.
    pub fn time_stencil(
        &mut self,
        input: &Resident,
        dtype: Dtype,
        sweep: StencilSweep,
        plan: &StencilPlan,
        runs: usize,
    ) -> Result<(u64, Timing), LaunchError> {
        match dtype {
            Dtype::F32 => self.time_stencil_as::<f32>(input, sweep, plan, runs),
            Dtype::F64 => self.time_stencil_as::<f64>(input, sweep, plan, runs),
        }
    }

    fn time_stencil_as<T: StencilElement>(
        &mut self,
        input: &Resident,
        StencilSweep {
            dims,
            repeats,
            radius,
        }: StencilSweep,
        plan: &StencilPlan,
        runs: usize,
    ) -> Result<(u64, Timing), LaunchError> {
        let elem = std::mem::size_of::<T>() as u64;
        if input.elem_bytes != elem || input.kind != MemoryKind::Device {
            return Err(LaunchError::BadSize(format!(
                "the stencil input must be device memory of {elem}-byte cells"
            )));
        }
        let shape = stencil_launch(dims, input.len as usize, repeats, plan, elem, radius)?;
        self.bind()?;
        self.check_free(input.bytes())?;
        let function = self.stencil_function::<T>(&shape)?;
        let dst = Buffer::allocate(MemoryKind::Device, input.bytes() as usize)?;
        self.zero(&dst, input.bytes() as usize)?;
        let timing = self.time_runs(
            runs,
            |_| Ok(()),
            // SAFETY: `input` and `dst` are separate device allocations of the input.len
            // cells of T (checked above and by stencil_launch) and outlive the sync in
            // time_runs.
            |rt| unsafe { rt.launch_stencil(&function, input.buffer.dptr(), dst.dptr(), &shape) },
        )?;
        let digest = self.digest_words(&dst, input.bytes() / 4)?;
        Ok((digest, timing))
    }

    /// [`memtune_kernels::digest::words`] of the first `n_words` 4-byte words of `buffer`,
    /// computed on the GPU: reading a large output back to digest it on the host took most
    /// of the staging probe's time.
    fn digest_words(&mut self, buffer: &Buffer, n_words: u64) -> Result<u64, LaunchError> {
        let [sum] = self.digest_sums(digest::DIGEST, buffer, n_words)?;
        Ok(digest::finish(sum, n_words))
    }

    /// [`grouping_digest`] of the `capacity` buckets of `table`, computed on the GPU:
    /// reading a table of gigabytes back and hashing it on one host thread took seconds
    /// a launch.
    fn digest_groups(
        &mut self,
        table: &Buffer,
        capacity: u64,
        sentinel_count: u64,
    ) -> Result<GroupingDigest, LaunchError> {
        let [groups, keys, hash] = self.digest_sums(digest::DIGEST_GROUPS, table, capacity)?;
        Ok(GroupingDigest {
            groups,
            keys: keys + sentinel_count,
            hash,
        })
    }

    /// The `N` sums digest kernel `entry` of `digest.cu` adds up over the first `n`
    /// elements of `buffer` (its words or buckets; `n` must fit the buffer).
    fn digest_sums<const N: usize>(
        &mut self,
        entry: &'static str,
        buffer: &Buffer,
        n: u64,
    ) -> Result<[u64; N], LaunchError> {
        let function = self.function(&digest::SOURCE, &[], entry)?;
        let sums = Buffer::allocate(MemoryKind::Device, 8 * N)?;
        self.zero(&sums, 8 * N)?;
        let blocks = self.identity().sm_count.max(1) * 4;
        let mut launch = self.gpu.stream().launch_builder(&function);
        let (src, dst) = (buffer.dptr(), sums.dptr());
        launch.arg(&src).arg(&n).arg(&dst);
        // SAFETY: `buffer` holds at least `n` of the kernel's elements (every caller passes
        // at most its size) and `sums` N u64; both outlive the read below, which
        // synchronises.
        unsafe {
            launch.launch(LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .map_err(cuda(entry))?;
        let mut out = [0u64; N];
        sums.read(&mut out)?;
        Ok(out)
    }

    /// Device-to-device copy of `bytes` (`cuMemcpyDtoD`), timed like the kernels: the
    /// device copy bandwidth is `2 * bytes / median` (each byte read and written).
    pub fn time_device_copy(&mut self, bytes: u64, runs: usize) -> Result<Timing, LaunchError> {
        let n = usize::try_from(bytes)
            .map_err(|_| LaunchError::BadSize(format!("{bytes} bytes")))?
            .max(1);
        self.bind()?;
        self.check_free(2 * n as u64)?;
        let src = Buffer::allocate(MemoryKind::Device, n)?;
        let dst = Buffer::allocate(MemoryKind::Device, n)?;
        self.zero(&src, n)?;
        let stream = self.gpu.stream().cu_stream();
        self.time_runs(
            runs,
            |_| Ok(()),
            |_| {
                // SAFETY: both buffers hold n bytes and outlive the sync in time_runs.
                unsafe { result::memcpy_dtod_async(dst.dptr(), src.dptr(), n, stream) }
                    .map_err(cuda("cuMemcpyDtoDAsync"))
            },
        )
    }

    /// Runs `setup` then `work` `1 + runs` times (`runs` without the warm-up), timing each
    /// `work` but the warm-up with events on the stream (held until `work` is enqueued
    /// when [`Runtime::set_gate`] is on), synchronising after each.
    fn time_runs(
        &mut self,
        runs: usize,
        mut setup: impl FnMut(&Runtime) -> Result<(), LaunchError>,
        mut work: impl FnMut(&Runtime) -> Result<(), LaunchError>,
    ) -> Result<Timing, LaunchError> {
        let rt = &*self;
        gpu::time_runs(
            rt.gpu.stream(),
            usize::from(rt.warmup),
            runs,
            rt.gated,
            || setup(rt),
            || work(rt),
        )
    }

    /// Zeroes the first `bytes` of `buffer` on the stream.
    fn zero(&self, buffer: &Buffer, bytes: usize) -> Result<(), LaunchError> {
        // SAFETY: `bytes` fits the allocation (every caller passes at most its size).
        unsafe { result::memset_d8_async(buffer.dptr(), 0, bytes, self.gpu.stream().cu_stream()) }
            .map_err(cuda("cuMemsetD8Async"))
    }
}

fn check_words(r: &Resident) -> Result<(), LaunchError> {
    if r.elem_bytes == 4 {
        Ok(())
    } else {
        Err(LaunchError::BadSize(
            "sampling and grouping read 4-byte words".into(),
        ))
    }
}

fn with_scopes<P, E>(
    scopes: Vec<Range<u64>>,
    f: impl Fn(Range<u64>) -> Result<P, E>,
) -> Result<Vec<P>, LaunchError>
where
    LaunchError: From<E>,
{
    scopes
        .into_iter()
        .map(|s| f(s).map_err(LaunchError::from))
        .collect()
}

/// [`GroupingDigest`] of a table's buckets and the sentinel key's count.
pub fn grouping_digest(buckets: &[GroupingBucket], sentinel_count: u64) -> GroupingDigest {
    let mut d = GroupingDigest {
        groups: 0,
        keys: sentinel_count,
        hash: 0,
    };
    for b in buckets
        .iter()
        .filter(|b| b.key != memtune_kernels::params::EMPTY_KEY)
    {
        d.groups += 1;
        d.keys += u64::from(b.count);
        d.hash = d
            .hash
            .wrapping_add(digest::mix64(u64::from(b.key)).wrapping_mul(u64::from(b.count)));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouping_digest_ignores_bucket_order() {
        let b = |key, count| GroupingBucket { key, count };
        let empty = b(memtune_kernels::params::EMPTY_KEY, 0);
        let one = grouping_digest(&[b(7, 2), empty, b(9, 1)], 3);
        let two = grouping_digest(&[empty, b(9, 1), b(7, 2)], 3);
        assert_eq!(one, two);
        assert_eq!(one.groups, 2);
        assert_eq!(one.keys, 6);
        assert_ne!(one, grouping_digest(&[b(7, 1), b(9, 2)], 3));
    }
}
