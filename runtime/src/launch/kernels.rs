//! Each kernel's launch sequence, written once and shared by the untimed launches
//! ([`Runtime::sampling`], [`Runtime::grouping`], [`Runtime::stencil_f32`]) and the timed
//! ones ([`Runtime::time_sampling`], [`Runtime::time_grouping`],
//! [`Runtime::time_stencil`]).
//!
//! The launches take raw device pointers and only enqueue work on the stream, so they are
//! `unsafe`: every caller states why its buffers are large enough and outlive the
//! synchronisation that follows.

use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use memtune_kernels::params::{GroupingParams, SamplingParams};
use memtune_kernels::{grouping, sampling, stencil};

use super::shape::{self, GROUPING_BLOCK};
use super::{cuda, sampling_grid, LaunchError, Runtime, StencilElement, StencilLaunch};

/// The grouping kernels: the table's initialisation and the three insert variants.
pub(super) struct GroupingKernels {
    init: CudaFunction,
    insert: CudaFunction,
    insert_spill: CudaFunction,
    insert_spilled: CudaFunction,
}

impl Runtime {
    /// The sampling kernel, compiled on first use.
    pub(super) fn sampling_function(&mut self) -> Result<CudaFunction, LaunchError> {
        self.function(&sampling::SOURCE, &[], sampling::SAMPLE)
    }

    /// The grouping kernels, compiled on first use.
    pub(super) fn grouping_kernels(&mut self) -> Result<GroupingKernels, LaunchError> {
        Ok(GroupingKernels {
            init: self.function(&grouping::SOURCE, &[], grouping::INIT)?,
            insert: self.function(&grouping::SOURCE, &[], grouping::INSERT)?,
            insert_spill: self.function(&grouping::SOURCE, &[], grouping::INSERT_SPILL)?,
            insert_spilled: self.function(&grouping::SOURCE, &[], grouping::INSERT_SPILLED)?,
        })
    }

    /// The stencil kernel of `shape` for cells of `T`, compiled on first use.
    pub(super) fn stencil_function<T: StencilElement>(
        &mut self,
        shape: &StencilLaunch,
    ) -> Result<CudaFunction, LaunchError> {
        let [bx, by, bz] = shape.block_defines.map(|b| b.to_string());
        let radius = shape.params.radius.to_string();
        let defines = [
            (stencil::ELEMENT_DEFINE, T::NAME),
            (stencil::RADIUS_DEFINE, radius.as_str()),
            ("MEMTUNE_BX", bx.as_str()),
            ("MEMTUNE_BY", by.as_str()),
            ("MEMTUNE_BZ", bz.as_str()),
        ];
        self.function(&stencil::SOURCE, &defines, shape.entry)
    }

    /// Enqueues one sampling launch ([`sampling_grid`]) per pass, each adding to the u64
    /// at `sum`.
    ///
    /// # Safety
    /// `region` must hold at least `n_words` 4-byte words of every pass and `sum` one u64;
    /// both must stay allocated until the stream is synchronised.
    pub(super) unsafe fn launch_sampling_passes(
        &self,
        function: &CudaFunction,
        region: u64,
        sum: u64,
        passes: &[SamplingParams],
    ) -> Result<(), LaunchError> {
        let (blocks, block) = sampling_grid(self.gpu.identity().sm_count);
        let config = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        for pass in passes {
            let mut launch = self.gpu.stream().launch_builder(function);
            launch.arg(&region).arg(&sum).arg(pass);
            // SAFETY: the kernel reads words below pass.n_words of `region` and adds to the
            // one u64 of `sum`; the caller guarantees both are that large and outlive the
            // synchronisation.
            unsafe { launch.launch(config) }.map_err(cuda("cuLaunchKernel(memtune_sampling)"))?;
        }
        Ok(())
    }

    /// Enqueues the grouping table's initialisation: every bucket empty, counters zero.
    ///
    /// # Safety
    /// `table` must hold `params.capacity` buckets and `counters` one `GroupingCounters`;
    /// both must stay allocated until the stream is synchronised.
    pub(super) unsafe fn launch_grouping_init(
        &self,
        kernels: &GroupingKernels,
        table: u64,
        counters: u64,
        params: &GroupingParams,
    ) -> Result<(), LaunchError> {
        let mut launch = self.gpu.stream().launch_builder(&kernels.init);
        launch.arg(&table).arg(&counters).arg(params);
        // SAFETY: writes `capacity` buckets of `table` and the counters, which the caller
        // guarantees are that large and outlive the synchronisation.
        unsafe { launch.launch(self.grouping_config(params.capacity)) }
            .map_err(cuda("cuLaunchKernel(memtune_grouping_init)"))?;
        Ok(())
    }

    /// Enqueues the grouping insert passes over the keys at `input`. With a `spill`
    /// buffer (the copy approach), the first pass inserts its scope's keys and spills the
    /// others, and the later passes insert only the spilled keys.
    ///
    /// # Safety
    /// `input` must hold the `n_keys` 4-byte keys of the passes, `table` their `capacity`
    /// buckets, `counters` one `GroupingCounters`, and `spill`, when given, room for
    /// `n_keys` keys; every buffer must stay allocated until the stream is synchronised.
    pub(super) unsafe fn launch_grouping_passes(
        &self,
        kernels: &GroupingKernels,
        input: u64,
        table: u64,
        counters: u64,
        spill: Option<u64>,
        passes: &[GroupingParams],
    ) -> Result<(), LaunchError> {
        for (i, pass) in passes.iter().enumerate() {
            let mut launch;
            match (&spill, i) {
                (Some(spill), 0) => {
                    launch = self.gpu.stream().launch_builder(&kernels.insert_spill);
                    launch
                        .arg(&input)
                        .arg(&table)
                        .arg(&counters)
                        .arg(spill)
                        .arg(pass);
                }
                (Some(spill), _) => {
                    launch = self.gpu.stream().launch_builder(&kernels.insert_spilled);
                    launch.arg(spill).arg(&table).arg(&counters).arg(pass);
                }
                (None, _) => {
                    launch = self.gpu.stream().launch_builder(&kernels.insert);
                    launch.arg(&input).arg(&table).arg(&counters).arg(pass);
                }
            }
            // SAFETY: reads n_keys keys of `input` (or the spilled ones, at most n_keys, of
            // `spill`, which has room for n_keys), probes within `capacity` buckets of
            // `table`; the caller guarantees every buffer is that large and outlives the
            // synchronisation.
            unsafe { launch.launch(self.grouping_config(pass.n_keys)) }
                .map_err(cuda("cuLaunchKernel(memtune_grouping_insert*)"))?;
        }
        Ok(())
    }

    /// A grouping launch over `n` items (buckets or keys).
    fn grouping_config(&self, n: u64) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (
                shape::grouping_blocks(n, self.gpu.identity().sm_count),
                1,
                1,
            ),
            block_dim: (GROUPING_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Enqueues one stencil sweep of `shape` from `src` to `dst`.
    ///
    /// # Safety
    /// `src` and `dst` must each hold the nx*ny*nz cells of `shape` (of the element type
    /// `function` was compiled for), must not overlap, and must stay allocated until the
    /// stream is synchronised.
    pub(super) unsafe fn launch_stencil(
        &self,
        function: &CudaFunction,
        src: u64,
        dst: u64,
        shape: &StencilLaunch,
    ) -> Result<(), LaunchError> {
        let mut launch = self.gpu.stream().launch_builder(function);
        launch.arg(&src).arg(&dst).arg(&shape.params);
        // SAFETY: reads and writes the nx*ny*nz cells of `src` and `dst`, which the caller
        // guarantees hold them, do not overlap and outlive the synchronisation.
        unsafe {
            launch.launch(LaunchConfig {
                grid_dim: shape.grid,
                block_dim: shape.block,
                shared_mem_bytes: 0,
            })
        }
        .map_err(cuda("cuLaunchKernel(memtune_stencil)"))?;
        Ok(())
    }
}
