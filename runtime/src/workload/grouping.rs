//! Hash grouping (`memtune_kernels::grouping`): keys in pinned host memory counted into an
//! open-addressing table in device or pinned memory, unscoped or in passes over scopes of
//! the table (naive: every pass reads every key; copy: each pass reads its own keys).

use memtune_core::plan::{Approach, GroupingPlan, GroupingWorkload};
use memtune_core::size::format_bytes;
use memtune_core::MemoryKind;

use super::{floor_pow2, geometric, pass_counts, random_words, scope_of, thin, work_suffix};
use super::{Machine, Pick, Workload, MIN_BYTES};
use crate::gpu::Timing;
use crate::launch::{grouping_capacity, LaunchError, Resident, Runtime};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Extra hash rounds per key of the heavy variant (`memtune_grouping_params::work`):
/// per-key work that every naive pass repeats.
pub const HEAVY_WORK: u32 = 256;
/// The most keys inserted into a table in pinned memory.
pub const PINNED_TABLE_KEYS: u64 = 16 << 20;
/// Bytes of a table bucket.
const BUCKET_BYTES: u64 = 8;

/// One grouping case: a table of `table_bytes` in `table_memory`, `keys` keys (in pinned
/// memory), `work` extra hash rounds per key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    pub table_bytes: u64,
    pub table_memory: MemoryKind,
    pub keys: u64,
    pub work: u32,
}

impl Case {
    /// A case of `table` bytes; its key count follows the table. A table of `capacity`
    /// buckets holds capacity/2 groups at fill factor 0.5, and there are never more groups
    /// than keys: large device tables need that many keys (at least `device_keys`).
    /// Pinned tables take at most [`PINNED_TABLE_KEYS`]: each insert crosses the host link
    /// (random atomics into pinned memory run at 0.4 G/s at best, under 0.05 G/s over
    /// 8 GiB, on an H100).
    pub fn new(table: u64, table_memory: MemoryKind, device_keys: u64, work: u32) -> Case {
        let capacity = table / BUCKET_BYTES;
        let keys = if table_memory == MemoryKind::Pinned {
            (capacity / 2).min(PINNED_TABLE_KEYS)
        } else {
            device_keys.max(capacity / 2)
        };
        Case {
            table_bytes: table,
            table_memory,
            keys,
            work,
        }
    }

    fn capacity(&self) -> u64 {
        self.table_bytes / BUCKET_BYTES
    }

    /// Keys are drawn from capacity/2 values, so the fill factor stays at most 0.5.
    fn distinct(&self) -> u64 {
        (self.capacity() / 2).min(u64::from(u32::MAX))
    }
}

/// The grouping workload.
pub struct Grouping;

/// Tables in device memory: 64 MiB to 4 GiB (quick: 64 MiB, 512 MiB, 4 GiB), those that
/// fit 70% of the free memory.
pub fn table_sizes(free_bytes: u64, quick: bool) -> Vec<u64> {
    let top = floor_pow2(free_bytes / 10 * 7).min(4 * GIB);
    let sizes = geometric(MIN_BYTES, top);
    if quick {
        thin(&sizes, 3)
    } else {
        sizes
    }
}

/// Tables in pinned host memory, as a table too large for the device would be: 256 MiB,
/// 1, 2, 4 and 8 GiB (quick: 64 MiB; tables are powers of two, the kernels' capacities),
/// those within a quarter of the host's memory. Their inserts are atomics across the host
/// link (an H200 ran them at 0.39 G/s up to 256 MiB and 0.11 G/s at 1 GiB), so they take
/// at most 16 Mi keys; larger tables with `--sizes` (every timed launch also clears the
/// whole table across the link, and digests it on the GPU).
pub fn pinned_table_sizes(host_bytes: u64, quick: bool) -> Vec<u64> {
    let sizes: &[u64] = if quick {
        &[64 * MIB]
    } else {
        &[256 * MIB, GIB, 2 * GIB, 4 * GIB, 8 * GIB]
    };
    sizes
        .iter()
        .copied()
        .filter(|&t| t <= host_bytes / 4)
        .collect()
}

/// Whether a table also runs the heavy variant ([`HEAVY_WORK`]): device tables of
/// 256 MiB to 1 GiB and the 256 MiB pinned table (quick: the 512 MiB device table); every
/// size given to `--sizes` (`picked`).
pub fn heavy(table: u64, pinned: bool, quick: bool, picked: bool) -> bool {
    match (picked, quick, pinned) {
        (true, _, _) => true,
        (false, true, p) => !p && table == 512 * MIB,
        (false, false, true) => table == 256 * MIB,
        (false, false, false) => (256 * MIB..=GIB).contains(&table),
    }
}

/// Keys of the input of device tables, fixed so that the run stays short.
pub fn device_keys(quick: bool) -> u64 {
    if quick {
        16 << 20
    } else {
        64 << 20
    }
}

fn plan(table: u64, passes: u32, approach: Approach) -> GroupingPlan {
    GroupingPlan {
        scope_bytes: if passes == 1 {
            table
        } else {
            scope_of(table, passes, BUCKET_BYTES)
        },
        passes,
        approach,
        reasons: vec!["benchmark sweep".into()],
    }
}

/// The untuned plan: one pass, unscoped.
pub fn untuned(table: u64) -> GroupingPlan {
    plan(table, 1, Approach::Unscoped)
}

/// The sweep over a `table`-byte table: unscoped, then naive and copy at every pass count
/// above 1.
pub fn sweep(table: u64) -> Vec<GroupingPlan> {
    let mut out = vec![untuned(table)];
    for approach in [Approach::Naive, Approach::Copy] {
        for p in pass_counts(table).into_iter().filter(|&p| p > 1) {
            out.push(plan(table, p, approach));
        }
    }
    out
}

/// A plan's short name, as the tables and the JSON print it.
pub fn label(p: &GroupingPlan) -> String {
    if p.passes == 1 {
        "1 pass".into()
    } else {
        format!(
            "{} {} x {}",
            p.approach.as_str(),
            p.passes,
            format_bytes(p.scope_bytes)
        )
    }
}

impl Workload for Grouping {
    const NAME: &'static str = "grouping";
    const SURE_ROWS: &'static str = "pinned rows";
    type Case = Case;
    type Tunable = GroupingWorkload;
    type Inputs = Resident;

    /// Device tables, then pinned ones; each light, and some also with heavy per-key work.
    fn cases(machine: &Machine, pick: &Pick, notes: &mut Vec<String>) -> Vec<Case> {
        let free = machine.device_free_bytes;
        let host = machine.host_bytes;
        let mut tables = Vec::new();
        if pick.wants(MemoryKind::Device) {
            let sizes = pick.sizes(free / 10 * 7, notes, table_sizes(free, pick.quick));
            tables.extend(sizes.into_iter().map(|t| (t, MemoryKind::Device)));
        }
        if pick.wants(MemoryKind::Pinned) {
            let sizes = pick.sizes(host / 4, notes, pinned_table_sizes(host, pick.quick));
            tables.extend(sizes.into_iter().map(|t| (t, MemoryKind::Pinned)));
        }
        let keys = device_keys(pick.quick);
        let mut out = Vec::new();
        for (t, memory) in tables {
            let pinned = memory == MemoryKind::Pinned;
            out.push(Case::new(t, memory, keys, 0));
            if heavy(t, pinned, pick.quick, pick.sizes.is_some()) {
                out.push(Case::new(t, memory, keys, HEAVY_WORK));
            }
        }
        out
    }

    fn name(c: &Case) -> String {
        format!(
            "table {} ({}), {} keys pinned{}",
            format_bytes(c.table_bytes),
            c.table_memory,
            c.keys,
            work_suffix(c.work)
        )
    }

    fn size_bytes(c: &Case) -> u64 {
        c.table_bytes
    }

    fn tunable(c: &Case) -> GroupingWorkload {
        GroupingWorkload {
            table_bytes: c.table_bytes,
            table_memory: c.table_memory,
            input_memory: MemoryKind::Pinned,
            input_bytes: Some(c.keys * 4),
        }
    }

    fn untuned(c: &Case) -> GroupingPlan {
        untuned(c.table_bytes)
    }

    fn sweep(c: &Case) -> Vec<GroupingPlan> {
        sweep(c.table_bytes)
    }

    fn label(plan: &GroupingPlan) -> String {
        label(plan)
    }

    /// Scopes of a pinned table are sure; device scopes are bets the autotuner settles.
    fn sure(c: &Case) -> bool {
        c.table_memory == MemoryKind::Pinned
    }

    /// The case's keys in pinned memory, drawn from capacity/2 values so that their
    /// inserts spread over the whole table. Refused unless the table is a power of two
    /// (the kernels' capacities).
    fn inputs(
        rt: &mut Runtime,
        c: &Case,
        _all: &[Case],
        kept: Option<Resident>,
    ) -> Result<Resident, LaunchError> {
        drop(kept);
        let range = c.distinct();
        if grouping_capacity(range, Some(range)).ok() != Some(c.capacity()) {
            return Err(LaunchError::BadSize(format!(
                "grouping tables are powers of two (the kernels' capacities); give {} or {} to --sizes",
                format_bytes(c.table_bytes.next_power_of_two() / 2),
                format_bytes(c.table_bytes.next_power_of_two())
            )));
        }
        let keys: Vec<u32> = random_words(c.keys as usize, 0x9e37)
            .into_iter()
            .map(|k| ((u64::from(k) * range) >> 32) as u32)
            .collect();
        rt.resident_words(MemoryKind::Pinned, c.keys, &keys)
    }

    fn launch(
        rt: &mut Runtime,
        keys: &Resident,
        c: &Case,
        plan: &GroupingPlan,
        runs: usize,
    ) -> Result<(String, Timing), LaunchError> {
        let (d, t) = rt.time_grouping(keys, c.capacity(), plan, c.table_memory, c.work, runs)?;
        let digest = format!("{} groups, {} keys, {:016x}", d.groups, d.keys, d.hash);
        Ok((digest, t))
    }
}
