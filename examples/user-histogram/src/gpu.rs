//! The GPU side: the compiled kernels, the table, the input and the copy approach's spill
//! buffers, launches of a plan, digests and CUDA-event timing. Every CUDA call's result is
//! checked.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use memtune::core::plan::{Approach, GroupingPlan};
use memtune::gpu::Buffer;
use memtune::{DeviceIdentity, MemoryKind};
use memtune_example_support::gpu::{cuda, LoadedGpu, Slot, SlotValue, Slots};

use crate::reference::{self, Slot as TableSlot};
use crate::{kernel, Case, Digest, HistError, ROW_BYTES, SEED, SLOT_BYTES};

type Result<T> = std::result::Result<T, HistError>;

/// Bytes of `user_hist_counters`: spilled and dropped rows.
const COUNTER_BYTES: usize = 16;

/// One GPU with the histogram kernels loaded; its identity, stream, timing and
/// synchronisation are those of the [`LoadedGpu`] it derefs to.
pub struct Gpu {
    loaded: LoadedGpu,
    fill: CudaFunction,
    clear: CudaFunction,
    insert_rows: CudaFunction,
    insert_spill: CudaFunction,
    insert_spilled: CudaFunction,
    digest: CudaFunction,
}

memtune_example_support::deref_to_loaded!(Gpu);

impl Gpu {
    /// Compiles the kernels for the device of `stream` (the one `Autotuner::open` returns)
    /// and loads them.
    pub fn new(identity: DeviceIdentity, stream: Arc<CudaStream>) -> Result<Gpu> {
        let loaded = LoadedGpu::new(identity, stream, &kernel::SOURCE)?;
        Ok(Gpu {
            fill: loaded.function(kernel::FILL)?,
            clear: loaded.function(kernel::CLEAR)?,
            insert_rows: loaded.function(kernel::INSERT_ROWS)?,
            insert_spill: loaded.function(kernel::INSERT_SPILL)?,
            insert_spilled: loaded.function(kernel::INSERT_SPILLED)?,
            digest: loaded.function(kernel::DIGEST)?,
            loaded,
        })
    }

    fn config(&self) -> LaunchConfig {
        let (blocks, block) = kernel::GRID.of(self.identity().sm_count);
        LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// A table of `table_bytes` in `table_memory`, room for `rows` rows in
    /// `input_memory`, the spill buffers (device memory, room for `rows` rows) and the
    /// counters. Nothing is initialised: [`Gpu::fill`] and [`Gpu::clear`] do that.
    pub fn data(
        &self,
        table_memory: MemoryKind,
        input_memory: MemoryKind,
        table_bytes: u64,
        rows: u64,
    ) -> Result<Data> {
        for kind in [table_memory, input_memory] {
            if kind == MemoryKind::Managed {
                return Err(HistError::Usage(
                    "managed memory is not offered: device or pinned".into(),
                ));
            }
        }
        let len = |bytes: u64| {
            usize::try_from(bytes)
                .map_err(|_| HistError::Usage(format!("{bytes} bytes do not fit usize")))
        };
        if table_bytes < SLOT_BYTES || rows == 0 {
            return Err(HistError::Usage(
                "a table holds at least one slot, and the input one row".into(),
            ));
        }
        self.ctx()
            .bind_to_thread()
            .map_err(cuda("cuCtxSetCurrent"))?;
        let column = len(rows * 4)?;
        Ok(Data {
            ctx: self.ctx().clone(),
            table: Buffer::allocate(table_memory, len(table_bytes)?)?,
            keys: Buffer::allocate(input_memory, column)?,
            values: Buffer::allocate(input_memory, column)?,
            spill_keys: Buffer::allocate(MemoryKind::Device, column)?,
            spill_values: Buffer::allocate(MemoryKind::Device, column)?,
            counters: Buffer::allocate(MemoryKind::Device, COUNTER_BYTES)?,
            table_bytes,
            rows,
        })
    }

    /// Draws `case.rows` rows over `case.key_space()` keys into the input (synchronised).
    pub fn fill(&self, data: &Data, case: &Case) -> Result<()> {
        data.check(case)?;
        let key_space = case.key_space();
        let (keys, values) = (data.keys.dptr(), data.values.dptr());
        let mut launch = self.stream().launch_builder(&self.fill);
        launch
            .arg(&keys)
            .arg(&values)
            .arg(&case.rows)
            .arg(&key_space)
            .arg(&SEED);
        // SAFETY: writes rows below case.rows <= data.rows, which both columns hold
        // (checked above); the data outlives the synchronisation below.
        unsafe { launch.launch(self.config()) }.map_err(cuda("cuLaunchKernel(user_hist_fill)"))?;
        self.sync()
    }

    /// Enqueues the clearing of `case.slots()` slots and the counters.
    pub fn clear(&self, data: &Data, case: &Case) -> Result<()> {
        data.check(case)?;
        let slots = case.slots();
        let (table, counters) = (data.table.dptr(), data.counters.dptr());
        let mut launch = self.stream().launch_builder(&self.clear);
        launch.arg(&table).arg(&slots).arg(&counters);
        // SAFETY: writes `slots` slots of the table, which holds them (checked above), and
        // the counters; the caller keeps `data` alive until it synchronises.
        unsafe { launch.launch(self.config()) }.map_err(cuda("cuLaunchKernel(user_hist_clear)"))?;
        Ok(())
    }

    /// Enqueues the passes of `plan` inserting `case.rows` rows into the first
    /// `case.slots()` slots, which [`Gpu::clear`] emptied. Every approach is supported:
    /// unscoped (one pass), naive (every pass reads the input), copy (the first pass
    /// spills the rows of later scopes to device memory, later passes read those).
    pub fn launch(&self, data: &Data, case: &Case, plan: &GroupingPlan) -> Result<()> {
        data.check(case)?;
        let scopes = reference::scopes(case.table_bytes, plan).map_err(|e| {
            HistError::Autotune(format!(
                "the plan {} does not fit a table of {} bytes: {e}",
                crate::bench::label(plan),
                case.table_bytes
            ))
        })?;
        let copy = plan.approach == Approach::Copy && scopes.len() > 1;
        let slots = case.slots();
        let work = case.variant.work;
        let (table, counters) = (data.table.dptr(), data.counters.dptr());
        let (keys, values) = (data.keys.dptr(), data.values.dptr());
        let (spill_keys, spill_values) = (data.spill_keys.dptr(), data.spill_values.dptr());
        for (i, scope) in scopes.iter().enumerate() {
            let (begin, end) = (scope.start, scope.end);
            // The copy approach's first pass inserts its scope's rows and spills the others'
            // (insert_spill), later passes insert the spilled pairs (insert_spilled).
            let (kernel, from_spill, to_spill) = match (copy, i) {
                (true, 0) => (&self.insert_spill, false, true),
                (true, _) => (&self.insert_spilled, true, false),
                (false, _) => (&self.insert_rows, false, false),
            };
            let mut launch = self.stream().launch_builder(kernel);
            if from_spill {
                launch.arg(&spill_keys).arg(&spill_values);
            } else {
                launch.arg(&keys).arg(&values).arg(&case.rows);
            }
            launch
                .arg(&table)
                .arg(&slots)
                .arg(&begin)
                .arg(&end)
                .arg(&work)
                .arg(&counters);
            if to_spill {
                launch.arg(&spill_keys).arg(&spill_values);
            }
            // SAFETY: the passes read case.rows <= data.rows rows of the input (or the
            // spilled ones, at most case.rows, which the spill buffers have room for),
            // probe within `slots` slots of the table, which holds them (data.check), and
            // update the counters; the caller keeps `data` alive until it synchronises.
            unsafe { launch.launch(self.config()) }
                .map_err(cuda("cuLaunchKernel(user_hist_insert*)"))?;
        }
        Ok(())
    }

    /// Enqueues the digest of the first `case.slots()` slots into `slot`.
    pub fn digest(&self, data: &Data, case: &Case, slot: Slot) -> Result<()> {
        data.check(case)?;
        let slots = case.slots();
        let (table, counters) = (data.table.dptr(), data.counters.dptr());
        let mut launch = self.stream().launch_builder(&self.digest);
        launch.arg(&table).arg(&slots).arg(&counters).arg(&slot.ptr);
        // SAFETY: reads `slots` slots of the table (checked above) and the counters, adds
        // to the 4 u64 of `slot`; the caller keeps both alive until it synchronises.
        unsafe { launch.launch(self.config()) }
            .map_err(cuda("cuLaunchKernel(user_hist_digest)"))?;
        Ok(())
    }

    /// The first `case.slots()` slots, after the stream's work finished.
    pub fn read_table(&self, data: &Data, case: &Case) -> Result<Vec<TableSlot>> {
        data.check(case)?;
        self.sync()?;
        let mut out = vec![TableSlot::default(); case.slots() as usize];
        data.table.read(&mut out)?;
        Ok(out)
    }

    /// `n` zeroed digest slots.
    pub fn digests(&self, n: usize) -> Result<Digests> {
        Digests::allocate(self.ctx(), n, "digests between two checks")
    }
}

/// The buffers of a run: sizes up to `table_bytes` and `rows` use their starts.
pub struct Data {
    ctx: Arc<CudaContext>,
    table: Buffer,
    keys: Buffer,
    values: Buffer,
    spill_keys: Buffer,
    spill_values: Buffer,
    counters: Buffer,
    table_bytes: u64,
    rows: u64,
}

impl Data {
    pub fn table_memory(&self) -> MemoryKind {
        self.table.kind()
    }

    pub fn input_memory(&self) -> MemoryKind {
        self.keys.kind()
    }

    /// Whether `case` fits these buffers; its table a power of two of whole slots.
    pub fn check(&self, case: &Case) -> Result<()> {
        let t = case.table_bytes;
        if t > self.table_bytes || case.rows > self.rows || case.rows == 0 {
            return Err(HistError::Usage(format!(
                "{t} bytes of table and {} rows do not fit buffers of {} bytes and {} rows",
                case.rows, self.table_bytes, self.rows
            )));
        }
        if !t.is_power_of_two() || t < SLOT_BYTES {
            return Err(HistError::Usage(format!(
                "a table of {t} bytes is not a power of two of {SLOT_BYTES}-byte slots"
            )));
        }
        Ok(())
    }
}

impl Drop for Data {
    fn drop(&mut self) {
        // The buffers are freed right after this, in this context; every launch on them
        // was synchronised.
        let _ = self.ctx.bind_to_thread();
    }
}

/// Device bytes a run takes besides the table: the input when it is in device memory, and
/// the spill buffers.
pub fn device_bytes(
    table_memory: MemoryKind,
    input_memory: MemoryKind,
    table: u64,
    rows: u64,
) -> u64 {
    let input = rows * ROW_BYTES;
    let table = if table_memory == MemoryKind::Device {
        table
    } else {
        0
    };
    let input_here = if input_memory == MemoryKind::Device {
        input
    } else {
        0
    };
    table + input_here + input
}

/// Pinned host bytes a run takes: the table and the input where they are pinned.
pub fn pinned_bytes(
    table_memory: MemoryKind,
    input_memory: MemoryKind,
    table: u64,
    rows: u64,
) -> u64 {
    let table = if table_memory == MemoryKind::Pinned {
        table
    } else {
        0
    };
    let input = if input_memory == MemoryKind::Pinned {
        rows * ROW_BYTES
    } else {
        0
    };
    table + input
}

/// Device memory of digest slots, one per launch's table (see [`Slots`]).
pub type Digests = Slots<Digest>;

/// A digest slot: the 4 u64 `user_hist_digest` adds to.
impl SlotValue for Digest {
    const WORDS: usize = 4;

    fn from_words(c: &[u64]) -> Digest {
        Digest {
            groups: c[0],
            mix: c[1],
            total: c[2],
            dropped: c[3],
        }
    }
}
