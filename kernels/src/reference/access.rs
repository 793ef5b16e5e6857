//! The address streams of the tuned kernels, emulated on the CPU so that their reuse can be
//! analyzed without a GPU: every global-memory access a launch sequence makes, addresses
//! computed as the kernels compute them, in one order a GPU could issue them.
//!
//! Layout: the kernels' buffers are laid out from address 0, each starting at a 2 MiB
//! boundary (as the driver aligns large allocations), in the order [`Stream::regions`]
//! lists. Order: a GPU runs many threads at once; the streams serialize them as lockstep
//! waves, stated per stream. The sampling result word, the grouping counters and the
//! spill append's ballots are left out (one or a few hot words).

use std::ops::Range;

use super::grouping::home_bucket;
use crate::params::{
    scopes, GroupingParams, ParamsError, SamplingParams, StencilParams, EMPTY_KEY,
};

/// Buffers start at multiples of this.
pub const REGION_ALIGN: u64 = 2 << 20;
/// Bytes of a sampled word, a grouping key and a spill entry.
const WORD: u64 = 4;
/// Bytes of a grouping bucket (key and count).
const BUCKET: u64 = 8;

const SEED_SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;
const LCG_MUL: u64 = 6_364_136_223_846_793_005;
const LCG_ADD: u64 = 1_442_695_040_888_963_407;

fn align_up(x: u64) -> u64 {
    x.div_ceil(REGION_ALIGN).saturating_mul(REGION_ALIGN)
}

/// What every stream tells about itself.
pub trait Stream: Iterator<Item = u64> {
    /// The buffers touched: name and address range.
    fn regions(&self) -> Vec<(&'static str, Range<u64>)>;
    /// References the stream yields, when known before running it.
    fn exact_len(&self) -> Option<u64>;
}

/// `memtune_sampling` over scopes of `scope_words` words (`n_words` or more: unscoped),
/// one pass per scope in order. Threads run in waves of `wave` (the threads resident at
/// once): a wave makes the r-th draw of each of its threads, in thread order, then the
/// (r+1)-th. A draw inside the pass's scope reads its word; the others touch no memory, so
/// the stream has `threads × reads_per_thread` references whatever the scopes.
#[derive(Debug, Clone)]
pub struct SamplingStream {
    params: SamplingParams,
    threads: u64,
    wave: u64,
    passes: Vec<Range<u64>>,
    pass: usize,
    first: u64,
    read: u32,
    lane: usize,
    states: Vec<u64>,
}

impl SamplingStream {
    pub fn new(
        params: &SamplingParams,
        threads: u64,
        scope_words: u64,
        wave: u64,
    ) -> Result<SamplingStream, ParamsError> {
        let mut s = SamplingStream {
            params: *params,
            threads,
            wave: wave.max(1),
            passes: scopes(params.n_words, scope_words)?,
            pass: 0,
            first: 0,
            read: 0,
            lane: 0,
            states: Vec::new(),
        };
        s.start_wave();
        Ok(s)
    }

    fn start_wave(&mut self) {
        let last = self.first.saturating_add(self.wave).min(self.threads);
        let seed = self.params.seed;
        self.states = (self.first..last)
            .map(|t| seed ^ t.wrapping_mul(SEED_SPREAD))
            .collect();
        self.read = 0;
        self.lane = 0;
    }
}

impl Iterator for SamplingStream {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        loop {
            let scope = self.passes.get(self.pass)?.clone();
            if self.read == self.params.reads_per_thread || self.states.is_empty() {
                self.first = self.first.saturating_add(self.wave);
                if self.first >= self.threads {
                    self.first = 0;
                    self.pass += 1;
                }
                self.start_wave();
                continue;
            }
            let x = &mut self.states[self.lane];
            *x = x.wrapping_mul(LCG_MUL).wrapping_add(LCG_ADD);
            let pos = ((u128::from(*x) * u128::from(self.params.n_words)) >> 64) as u64;
            self.lane += 1;
            if self.lane == self.states.len() {
                self.lane = 0;
                self.read += 1;
            }
            if scope.contains(&pos) {
                return Some(pos * WORD);
            }
        }
    }
}

impl Stream for SamplingStream {
    fn regions(&self) -> Vec<(&'static str, Range<u64>)> {
        vec![("data", 0..self.params.n_words.saturating_mul(WORD))]
    }

    fn exact_len(&self) -> Option<u64> {
        self.threads
            .checked_mul(u64::from(self.params.reads_per_thread))
    }
}

/// The keys of a grouping stream: key `i` is uniform in `0..distinct`, a hash of `i` and
/// the seed, so a pass can regenerate any key instead of storing the input.
fn key(seed: u64, distinct: u64, i: u64) -> u32 {
    let mut z = seed.wrapping_add(i.wrapping_mul(SEED_SPREAD));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) % distinct.max(1)) as u32
}

/// How a scoped grouping run is driven (`reference::grouping::Approach`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupingDrive {
    /// One pass per scope, each reading all keys.
    Naive,
    /// The first pass spills the other scopes' keys; later passes read only the spill.
    Copy,
}

/// The grouping kernels over `n_keys` keys uniform over `distinct` values, scopes of
/// `scope_buckets` buckets (the capacity or more: unscoped). Keys are handled in index
/// order (a grid-stride loop's lockstep order): read the key, and if its home bucket is in
/// the pass's scope, every bucket its linear probe visits until it claims or finds its
/// key. The table is emulated (a `u32` per bucket) so probe lengths are the real ones.
#[derive(Debug, Clone)]
pub struct GroupingStream {
    seed: u64,
    distinct: u64,
    n_keys: u64,
    drive: GroupingDrive,
    passes: Vec<Range<u64>>,
    table: Vec<u32>,
    keys_base: u64,
    table_base: u64,
    spill_base: u64,
    pass: usize,
    /// Next key index of the pass's input.
    next_key: u64,
    /// Spill entries written (first pass of `Copy`) or read (later passes).
    spill: u64,
    /// The probe under way: key and next bucket.
    probe: Option<(u32, u64)>,
    /// A spill append due after the key read that caused it.
    append: Option<u64>,
}

impl GroupingStream {
    /// Fails on parameters the kernels refuse, or a table of more than `max_buckets`.
    pub fn new(
        n_keys: u64,
        distinct: u64,
        seed: u64,
        drive: GroupingDrive,
        scope_buckets: u64,
        max_buckets: u64,
    ) -> Result<GroupingStream, ParamsError> {
        let params = GroupingParams::new(n_keys, distinct.max(1))?;
        if params.capacity > max_buckets {
            return Err(ParamsError::TooManyGroups { distinct });
        }
        let keys_bytes = n_keys.saturating_mul(WORD);
        let table_base = align_up(keys_bytes);
        let spill_base = align_up(table_base.saturating_add(params.capacity * BUCKET));
        Ok(GroupingStream {
            seed,
            distinct: distinct.max(1),
            n_keys,
            drive,
            passes: scopes(params.capacity, scope_buckets)?,
            table: vec![EMPTY_KEY; params.capacity as usize],
            keys_base: 0,
            table_base,
            spill_base,
            pass: 0,
            next_key: 0,
            spill: 0,
            probe: None,
            append: None,
        })
    }

    fn capacity(&self) -> u64 {
        self.table.len() as u64
    }

    /// Whether this pass reads the spill buffer rather than the input.
    fn reads_spill(&self) -> bool {
        self.drive == GroupingDrive::Copy && self.pass > 0
    }

    /// One probe step: the bucket's address; ends the probe on a claim or a match.
    fn probe_step(&mut self, key: u32, b: u64) -> u64 {
        let slot = &mut self.table[b as usize];
        if *slot == EMPTY_KEY {
            *slot = key;
        }
        self.probe = (*slot != key).then(|| (key, (b + 1) % self.capacity()));
        self.table_base + b * BUCKET
    }
}

impl Iterator for GroupingStream {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if let Some(at) = self.append.take() {
            return Some(at);
        }
        if let Some((key, b)) = self.probe {
            return Some(self.probe_step(key, b));
        }
        loop {
            let scope = self.passes.get(self.pass)?.clone();
            if self.next_key == self.n_keys {
                self.pass += 1;
                self.next_key = 0;
                self.spill = 0;
                continue;
            }
            let i = self.next_key;
            self.next_key += 1;
            let key = key(self.seed, self.distinct, i);
            let home = home_bucket(key, self.capacity());
            let first_scope = &self.passes[0];
            if self.reads_spill() {
                // The spill holds, in order, the keys whose home is outside the first scope.
                if first_scope.contains(&home) {
                    continue;
                }
                let at = self.spill_base + self.spill * WORD;
                self.spill += 1;
                if scope.contains(&home) {
                    self.probe = Some((key, home));
                }
                return Some(at);
            }
            let at = self.keys_base + i * WORD;
            if scope.contains(&home) {
                self.probe = Some((key, home));
            } else if self.drive == GroupingDrive::Copy && self.passes.len() > 1 {
                self.append = Some(self.spill_base + self.spill * WORD);
                self.spill += 1;
            }
            return Some(at);
        }
    }
}

impl Stream for GroupingStream {
    fn regions(&self) -> Vec<(&'static str, Range<u64>)> {
        let mut out = vec![
            ("keys", self.keys_base..self.n_keys * WORD),
            (
                "table",
                self.table_base..self.table_base + self.capacity() * BUCKET,
            ),
        ];
        if self.drive == GroupingDrive::Copy && self.passes.len() > 1 {
            out.push((
                "spill",
                self.spill_base..self.spill_base + self.n_keys * WORD,
            ));
        }
        out
    }

    fn exact_len(&self) -> Option<u64> {
        None
    }
}

/// `memtune_stencil_plain` on elements of `element_bytes`: cells in x-fastest order (a
/// 2-D grid's threads in lockstep, one z plane after the other); a boundary cell reads its
/// input and writes its output, an interior cell reads its six neighbours `repeats` times
/// (x-1, x+1, y-1, y+1, z-1, z+1) and writes its output.
#[derive(Debug, Clone)]
pub struct StencilStream {
    params: StencilParams,
    element_bytes: u64,
    out_base: u64,
    cell: u64,
    /// Access within the cell.
    step: u64,
}

impl StencilStream {
    pub fn new(params: &StencilParams, element_bytes: u64) -> Result<StencilStream, ParamsError> {
        let cells = params.cells().ok_or(ParamsError::BadVolume {
            nx: params.nx,
            ny: params.ny,
            nz: params.nz,
        })?;
        let element_bytes = element_bytes.max(1);
        Ok(StencilStream {
            params: *params,
            element_bytes,
            out_base: align_up(cells.saturating_mul(element_bytes)),
            cell: 0,
            step: 0,
        })
    }

    fn interior(&self, i: u64) -> bool {
        let (nx, ny, nz) = (
            u64::from(self.params.nx),
            u64::from(self.params.ny),
            u64::from(self.params.nz),
        );
        let (x, y, z) = (i % nx, i / nx % ny, i / (nx * ny));
        x > 0 && x + 1 < nx && y > 0 && y + 1 < ny && z > 0 && z + 1 < nz
    }

    fn cells(&self) -> u64 {
        self.params.cells().unwrap_or(0)
    }
}

impl Iterator for StencilStream {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let i = self.cell;
        if i >= self.cells() {
            return None;
        }
        let e = self.element_bytes;
        let sy = u64::from(self.params.nx);
        let sz = sy * u64::from(self.params.ny);
        let reads = if self.interior(i) {
            6 * u64::from(self.params.repeats)
        } else {
            1
        };
        let at = if self.step == reads {
            self.out_base + i * e
        } else if reads == 1 {
            i * e
        } else {
            let n = match self.step % 6 {
                0 => i - 1,
                1 => i + 1,
                2 => i - sy,
                3 => i + sy,
                4 => i - sz,
                _ => i + sz,
            };
            n * e
        };
        if self.step == reads {
            self.cell += 1;
            self.step = 0;
        } else {
            self.step += 1;
        }
        Some(at)
    }
}

impl Stream for StencilStream {
    fn regions(&self) -> Vec<(&'static str, Range<u64>)> {
        let bytes = self.cells() * self.element_bytes;
        vec![
            ("in", 0..bytes),
            ("out", self.out_base..self.out_base + bytes),
        ]
    }

    fn exact_len(&self) -> Option<u64> {
        let p = &self.params;
        let inner = |n: u32| u64::from(n.saturating_sub(2));
        let interior = inner(p.nx) * inner(p.ny) * inner(p.nz);
        let reads = interior
            .checked_mul(6 * u64::from(p.repeats))?
            .checked_add(self.cells() - interior)?;
        reads.checked_add(self.cells())
    }
}

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;
