//! HP-RDA's GPU method (`kernels/cuda/hprda.cu`, run by `memtune::reuse::hprda`) on the
//! CPU, one function per kernel, so that its steps can be checked against
//! [`super::hprda`]'s histogram without a GPU (the tests below).
//!
//! 1. Preprocessing: keep the references that differ from the one before (a flag per
//!    reference, a prefix sum of the flags, a scatter).
//! 2. Per launch of `NTB × NB × ST` kept references, one thread per sub-trace of ST
//!    (`memtune_hprda_thread`): a hash table (item -> latest position and first-use index)
//!    and a local array of live bits; a reuse inside the sub-trace counts the live bits
//!    between its two uses. Its `access_info` records go to the sub-trace's slots in order
//!    of first use (`first` is the slot), `latest` is filled by a walk over the live bits
//!    from the end, and its distinct count to `counts`.
//! 3. `C`, the prefix sum of the counts, places every record in one compact array, in
//!    sub-trace order. A stable sort by item (exact-gpu's radix sort, [`super::radix`],
//!    its passes chosen by the bits that vary over the whole trace) turns it into the
//!    seed's hash table of `access_info` lists: each item's records together, in
//!    sub-trace order, whatever order the threads ran in.
//! 4. Block level: a record whose item's record before it lies in the same block is that
//!    earlier use's next use, `latest_i + C[j] - C[i + 1] + first_j` apart (formula 1);
//!    any other record opens its item in its block: those are counted per block (the
//!    block's exact distinct count), and `Q`, their prefix sum over every block of every
//!    launch so far, plays `C`'s part at grid level.
//! 5. Grid level: a record opening its item in block `b` whose item's record before it
//!    lies in block `a < b` is `latest_a + Q[b] - Q[a + 1] + first_b` from it, the block
//!    values being formula 1 over the block's sub-traces; the first record of an item in
//!    a launch looks its item up in the grid table (what earlier launches stored), the
//!    last one stores `Q[b + 1] - latest_b` there, in a kernel of its own. For the overlap
//!    adjustment `Q` is flat instead: the blocks' summed sub-trace counts, `C` over every
//!    launch (built on the host from `C`).
//! 6. Distances inside sub-traces and between them are counted apart. The distinct items
//!    are the grid table's; the histogram is finished as the CPU form's is
//!    ([`Totals::histogram`]), adjusted as the configuration says.

use std::collections::{BTreeMap, HashMap};

use super::hprda::{count_live, HpRdaConfig, Totals};
use super::{radix, Histogram, ReuseError};

/// Preprocessing: the references that differ from the one before them.
pub fn preprocess(items: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(items.len());
    for (i, &v) in items.iter().enumerate() {
        if i == 0 || items[i - 1] != v {
            out.push(v);
        }
    }
    out
}

/// One launch's thread-level output: `item[t * ST + r]` and `latest[t * ST + r]` for the
/// `counts[t]` distinct items of sub-trace `t`, `r` being the item's first-use index.
struct Records {
    item: Vec<u64>,
    latest: Vec<u32>,
    counts: Vec<u32>,
}

/// `memtune_hprda_thread` for every sub-trace of `trace`; records local distances.
fn threads(trace: &[u64], st: usize, dense: &mut BTreeMap<u64, u64>) -> Records {
    let mut out = Records {
        item: vec![0; trace.len()],
        latest: vec![0; trace.len()],
        counts: Vec::with_capacity(trace.len().div_ceil(st)),
    };
    for (t, sub) in trace.chunks(st).enumerate() {
        let base = t * st;
        // Item -> (latest position, first-use index).
        let mut table: HashMap<u64, (usize, u32)> = HashMap::new();
        let mut live = vec![0u64; sub.len().div_ceil(64)];
        let mut distinct = 0u32;
        for (i, &v) in sub.iter().enumerate() {
            match table.get_mut(&v) {
                Some((p, _)) => {
                    let d = count_live(&live, *p + 1, i);
                    *dense.entry(d).or_insert(0) += 1;
                    live[*p / 64] &= !(1u64 << (*p % 64));
                    *p = i;
                }
                None => {
                    table.insert(v, (i, distinct));
                    out.item[base + distinct as usize] = v;
                    distinct += 1;
                }
            }
            live[i / 64] |= 1u64 << (i % 64);
        }
        out.counts.push(distinct);
        let mut running = 0u32;
        for i in (0..sub.len()).rev() {
            if (live[i / 64] >> (i % 64)) & 1 == 1 {
                if let Some(&(_, first)) = table.get(&sub[i]) {
                    out.latest[base + first as usize] = running;
                }
                running += 1;
            }
        }
    }
    out
}

/// Exclusive prefix sums of `values` from `base`, one more entry holding the total.
fn prefix(values: &[u32], base: u64) -> Vec<u64> {
    let mut out = Vec::with_capacity(values.len() + 1);
    let mut sum = base;
    out.push(sum);
    for &v in values {
        sum += u64::from(v);
        out.push(sum);
    }
    out
}

/// Every record of a launch in item order (stable: sub-trace order within an item):
/// item, sub-trace, first-use index, latest. `varying`: the bits in which the trace's
/// items differ from its first.
fn sorted_records(r: &Records, c: &[u64], st: usize, varying: u64) -> Vec<(u64, usize, u64, u64)> {
    let total = c.last().copied().unwrap_or(0) as usize;
    // memtune_hprda_gather_records: slot j of sub-trace t goes to C[t] + r.
    let mut keys = vec![0u64; total];
    let mut origin = vec![0usize; total];
    for j in 0..r.item.len() {
        let (t, rank) = (j / st, j % st);
        if rank < r.counts[t] as usize {
            let k = c[t] as usize + rank;
            keys[k] = r.item[j];
            origin[k] = j;
        }
    }
    // The radix sort by item (positions: where each record came from), then
    // memtune_hprda_gather_sorted.
    let (keys, positions) = radix::sort_covering(keys, 0, varying);
    keys.into_iter()
        .zip(positions)
        .map(|(v, k)| {
            let o = origin[k as usize];
            (v, o / st, (o % st) as u64, u64::from(r.latest[o]))
        })
        .collect()
}

/// HP-RDA's state across launches: the grid table, `Q`'s running total, the distances.
#[derive(Debug, Default)]
struct Grid {
    /// Item -> `Q[b + 1] - latest_b` of its last block so far (wrapping).
    table: HashMap<u64, u64>,
    /// Exact block counts summed over every block so far.
    base: u64,
    thread_counts: u64,
    /// Distances inside sub-traces.
    local: BTreeMap<u64, u64>,
    /// Distances between sub-traces.
    cross: BTreeMap<u64, u64>,
}

impl Grid {
    /// One launch of kept references; `varying` as for [`sorted_records`].
    fn launch(&mut self, trace: &[u64], st: usize, nb: usize, varying: u64, flat: bool) {
        let r = threads(trace, st, &mut self.local);
        let s = r.counts.len();
        let c = prefix(&r.counts, 0);
        let flat_base = self.thread_counts;
        self.thread_counts += c[s];
        let recs = sorted_records(&r, &c, st, varying);
        let block_end = |b: usize| ((b + 1) * nb).min(s);
        // latest of the last record `k` of its item in its block, at block level.
        let latest_blk = |k: usize| {
            let (_, t, _, l) = recs[k];
            l + c[block_end(t / nb)] - c[t + 1]
        };
        let first_blk = |k: usize| {
            let (_, t, f, _) = recs[k];
            c[t] - c[t / nb * nb] + f
        };
        let same = |k: usize, j: usize| recs[k].0 == recs[j].0;
        // memtune_hprda_block_firsts, then the prefix sum of the counts.
        let mut block_counts = vec![0u32; s.div_ceil(nb)];
        for k in 0..recs.len() {
            let b = recs[k].1 / nb;
            if k == 0 || !same(k - 1, k) || recs[k - 1].1 / nb != b {
                block_counts[b] += 1;
            }
        }
        let q = if flat {
            let ends = (0..=block_counts.len()).map(|b| flat_base + c[(b * nb).min(s)]);
            ends.collect()
        } else {
            prefix(&block_counts, self.base)
        };
        // memtune_hprda_merge: every distance, grid table read only.
        for k in 0..recs.len() {
            let (v, t, f, _) = recs[k];
            let b = t / nb;
            let d = if k > 0 && same(k - 1, k) {
                let (_, tp, _, lp) = recs[k - 1];
                let bp = tp / nb;
                if bp == b {
                    Some(lp + c[t] - c[tp + 1] + f)
                } else {
                    Some(latest_blk(k - 1) + q[b] - q[bp + 1] + first_blk(k))
                }
            } else {
                self.table
                    .get(&v)
                    .map(|&s| (q[b] + first_blk(k)).wrapping_sub(s))
            };
            if let Some(d) = d {
                *self.cross.entry(d).or_insert(0) += 1;
            }
        }
        // memtune_hprda_store: each item's last record of the launch.
        for k in 0..recs.len() {
            if k + 1 == recs.len() || !same(k, k + 1) {
                let b = recs[k].1 / nb;
                let stored = q[b + 1].wrapping_sub(latest_blk(k));
                self.table.insert(recs[k].0, stored);
            }
        }
        self.base = q[block_counts.len()];
    }
}

/// HP-RDA's histogram by the GPU method, on the CPU.
pub fn histogram(items: &[u64], config: HpRdaConfig) -> Result<Histogram, ReuseError> {
    let launch = config.launch_len()?;
    let kept = preprocess(items);
    // Reduced as the trace is uploaded, from the raw references (the same items).
    let varying = radix::varying_bits(items);
    let mut grid = Grid::default();
    for part in kept.chunks(launch) {
        let flat = config.adjust.flat_grid();
        grid.launch(
            part,
            config.sub_trace,
            config.threads_per_block,
            varying,
            flat,
        );
    }
    let totals = Totals {
        references: items.len() as u64,
        repeats: (items.len() - kept.len()) as u64,
        distinct: grid.table.len() as u64,
        thread_counts: grid.thread_counts,
    };
    Ok(totals.histogram(grid.local, grid.cross, config.adjust))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reuse::hprda::{self, Adjust};

    fn xorshift(seed: u64, n: usize, items: u64) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % items
            })
            .collect()
    }

    fn traces() -> Vec<(&'static str, Vec<u64>)> {
        let mut hot = xorshift(5, 30_000, 50);
        hot.extend(xorshift(6, 30_000, 20_000));
        vec![
            ("empty", vec![]),
            ("one reference", vec![7]),
            ("one item", vec![7; 3000]),
            ("no reuse", (0..5000).collect()),
            (
                "items 0 and u64::MAX",
                vec![0, u64::MAX, 0, 3, u64::MAX, 0, 0, 3],
            ),
            ("uniform over 40", xorshift(1, 20_000, 40)),
            ("uniform over 3000", xorshift(2, 20_000, 3000)),
            ("uniform over 10^5", xorshift(3, 50_000, 100_000)),
            ("cyclic", (0..20_000u64).map(|i| i % 777).collect()),
            ("repeats", (0..20_000u64).map(|i| (i / 3) % 500).collect()),
            ("hot and cold", hot),
        ]
    }

    fn config(st: usize, nb: usize, blocks: usize, adjust: Adjust) -> HpRdaConfig {
        HpRdaConfig {
            sub_trace: st,
            threads_per_block: nb,
            blocks,
            adjust,
        }
    }

    #[test]
    fn the_gpu_method_gives_the_cpu_forms_histogram() {
        for (name, trace) in traces() {
            for (st, nb, blocks) in [
                (64, 1, 1),
                (64, 4, 3),
                (100, 3, 2),
                (256, 8, 4),
                (2048, 64, 512),
            ] {
                for adjust in [Adjust::None, Adjust::Seed, Adjust::Overlap] {
                    let c = config(st, nb, blocks, adjust);
                    let cpu = hprda::histogram(&trace, c, 2).expect("cpu form");
                    let model = histogram(&trace, c).expect("model");
                    assert_eq!(model, cpu, "{name}, {c:?}");
                }
            }
        }
    }

    #[test]
    fn preprocessing_drops_only_repeats_of_the_reference_before() {
        assert_eq!(preprocess(&[1, 1, 2, 1, 1, 1, 3, 3]), vec![1, 2, 1, 3]);
        assert!(preprocess(&[]).is_empty());
    }

    #[test]
    fn figure_6s_first_sub_trace_leaves_the_seeds_records() {
        // "dacbcg": count 5, records in first-use order with their latest.
        let t: Vec<u64> = "dacbcg".bytes().map(u64::from).collect();
        let mut dense = BTreeMap::new();
        let r = threads(&t, 64, &mut dense);
        assert_eq!(r.counts, vec![5]);
        let got: Vec<(u8, u32)> = (0..5).map(|i| (r.item[i] as u8, r.latest[i])).collect();
        assert_eq!(got, [(b'd', 4), (b'a', 3), (b'c', 1), (b'b', 2), (b'g', 0)]);
        assert_eq!(dense.get(&1), Some(&1), "c reused over b");
    }
}
