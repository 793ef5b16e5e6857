//! The stable sort by item of the `exact-gpu` mode: a least-significant-digit radix sort,
//! modelled here step for step on the CPU (`kernels/cuda/reuse_radix.cu` runs it) so that
//! tests check it against a plain stable sort.
//!
//! 1. The bits in which some item differs from the part's first item
//!    ([`varying_bits`]: an OR of `item ^ first`) decide the passes: the fewest digits of
//!    [`RADIX_BITS`] that cover them ([`digit_shifts`]). A trace at line granularity
//!    varies in far fewer than 64 bits, and a digit that is the same for every item
//!    orders nothing, so its pass is skipped. A part whose items are all equal takes none.
//! 2. Each pass counts the digits of every tile of [`TILE`] keys ([`count_digits`]: one
//!    block each, digit-major, tile-minor), turns the counts into exclusive prefix sums
//!    ([`scan_exclusive`]: where each tile's run of each digit starts in the output), and
//!    writes each tile's keys there ([`scatter_tile`]), each key ranked among the tile's
//!    keys of its digit in tile order. Each pass is stable, so the sort is.
//! 3. The values are the items' global positions: the first pass makes them from the
//!    keys' indices, the later passes carry them.

/// Bits of one digit; [`RADIX`] values.
pub const RADIX_BITS: u32 = 8;
pub const RADIX: usize = 1 << RADIX_BITS;
/// Threads of a block of the radix kernels (one digit each where a block goes over the
/// digits) and of the scan kernels.
pub const THREADS: usize = 256;
/// Keys (or counts) each thread takes.
pub const PER_THREAD: usize = 16;
/// Keys of a tile: one block of the count and scatter kernels.
pub const TILE: usize = THREADS * PER_THREAD;
/// Counts of a tile of the scan kernels.
pub const SCAN_TILE: usize = THREADS * PER_THREAD;
const WARP: usize = 32;
const WARPS: usize = THREADS / WARP;

/// The OR of `item ^ first` over `items`, `first` being the part's first item: the bits
/// in which some item differs from it (0 when all are equal or there are none).
pub fn varying_bits(items: &[u64]) -> u64 {
    let Some(&first) = items.first() else {
        return 0;
    };
    // One block a tile, combined with one atomic OR each, as the kernel does.
    items
        .chunks(TILE)
        .map(|c| c.iter().fold(0, |acc, &x| acc | (x ^ first)))
        .fold(0, |acc, tile| acc | tile)
}

/// The shift of each pass, lowest first: digits of [`RADIX_BITS`] placed greedily at the
/// lowest varying bit not yet covered, which takes the fewest digits.
pub fn digit_shifts(varying: u64) -> Vec<u32> {
    let mut left = varying;
    let mut shifts = Vec::new();
    while left != 0 {
        let shift = left.trailing_zeros();
        shifts.push(shift);
        let covered = shift + RADIX_BITS;
        left = if covered >= 64 {
            0
        } else {
            left & (u64::MAX << covered)
        };
    }
    shifts
}

/// The digit of `key` at `shift`.
pub fn digit(key: u64, shift: u32) -> usize {
    ((key >> shift) as usize) & (RADIX - 1)
}

/// Tiles of [`TILE`] keys in `n`.
pub fn tiles(n: usize) -> usize {
    n.div_ceil(TILE)
}

/// Each tile's count of each digit, digit-major: `counts[d * tiles + b]`, every entry
/// written (zero counts too).
pub fn count_digits(keys: &[u64], shift: u32) -> Vec<u32> {
    let tiles = tiles(keys.len());
    let mut counts = vec![0u32; RADIX * tiles];
    for (b, tile) in keys.chunks(TILE).enumerate() {
        for &k in tile {
            counts[digit(k, shift) * tiles + b] += 1;
        }
    }
    counts
}

/// Exclusive prefix sums of `data` in place, in the scan kernels' three steps: each tile
/// of [`SCAN_TILE`] summed; the sums scanned by one block, [`SCAN_TILE`] at a time with a
/// carry; each tile scanned, each thread over its [`PER_THREAD`] consecutive counts after
/// the sums of the threads before it, from its tile's scanned sum.
pub fn scan_exclusive(data: &mut [u32]) {
    let mut sums: Vec<u32> = data.chunks(SCAN_TILE).map(|c| c.iter().sum()).collect();
    let mut carry = 0u32;
    for chunk in sums.chunks_mut(SCAN_TILE) {
        let total: u32 = chunk.iter().sum();
        exclusive_in_threads(chunk, carry);
        carry += total;
    }
    for (tile, start) in data.chunks_mut(SCAN_TILE).zip(sums) {
        exclusive_in_threads(tile, start);
    }
}

/// One block's exclusive scan of up to [`SCAN_TILE`] values from `start`: thread `t` takes
/// values `t * PER_THREAD..`, its run starting after the threads before it.
fn exclusive_in_threads(values: &mut [u32], start: u32) {
    let totals: Vec<u32> = values.chunks(PER_THREAD).map(|c| c.iter().sum()).collect();
    let mut before = start;
    for (run, total) in values.chunks_mut(PER_THREAD).zip(totals) {
        let mut at = before;
        for v in run {
            let count = *v;
            *v = at;
            at += count;
        }
        before += total;
    }
}

/// Writes tile `b` of one pass into `keys_out` and `vals_out` at `offsets` (the scanned
/// counts). The tile's entry `e` is thread `e % THREADS`'s key of round `e / THREADS`; each
/// round a warp groups its lanes by digit (`__match_any_sync`), and the block turns its
/// warps' counts into each digit's ranks after the rounds before; a key's rank among the
/// tile's keys of its digit is thus its order in the tile. The keys are staged in digit
/// order (as in shared memory), then written: stage slot `s` of digit `d` goes to
/// `offsets[d][b] + s - (the tile's first slot of d)`. Values come from `vals`, or are
/// `base + index` when `vals` is `None` (the first pass).
#[allow(clippy::too_many_arguments)]
pub fn scatter_tile(
    keys: &[u64],
    vals: Option<&[u32]>,
    base: u32,
    shift: u32,
    b: usize,
    offsets: &[u32],
    keys_out: &mut [u64],
    vals_out: &mut [u32],
) {
    let n = keys.len();
    let tiles = tiles(n);
    let start = b * TILE;
    let len = TILE.min(n - start);
    let digit_of = |e: usize| (e < len).then(|| digit(keys[start + e], shift));
    let mut running = [0u32; RADIX];
    let mut rank = vec![0u32; len];
    for round in 0..PER_THREAD {
        let mut warp_counts = [[0u32; RADIX]; WARPS];
        let mut before = [0u32; THREADS];
        for (w, counts) in warp_counts.iter_mut().enumerate() {
            for lane in 0..WARP {
                let t = w * WARP + lane;
                let Some(d) = digit_of(round * THREADS + t) else {
                    continue;
                };
                let peers =
                    (0..WARP).filter(|&l| digit_of(round * THREADS + w * WARP + l) == Some(d));
                before[t] = peers.clone().filter(|&l| l < lane).count() as u32;
                // The group's lowest lane writes its size.
                if before[t] == 0 {
                    counts[d] = peers.count() as u32;
                }
            }
        }
        // Thread d: each warp's first rank of digit d in this round.
        for d in 0..RADIX {
            let mut sum = running[d];
            for counts in warp_counts.iter_mut() {
                let c = counts[d];
                counts[d] = sum;
                sum += c;
            }
            running[d] = sum;
        }
        for t in 0..THREADS {
            let e = round * THREADS + t;
            if let Some(d) = digit_of(e) {
                rank[e] = warp_counts[t / WARP][d] + before[t];
            }
        }
    }
    // The tile's first slot of each digit: an exclusive scan over the digits.
    let mut first = [0u32; RADIX];
    let mut sum = 0;
    for d in 0..RADIX {
        first[d] = sum;
        sum += running[d];
    }
    let mut stage_keys = vec![None; len];
    let mut stage_vals = vec![0u32; len];
    for (e, &r) in rank.iter().enumerate() {
        let d = digit(keys[start + e], shift);
        let slot = (first[d] + r) as usize;
        assert!(
            stage_keys[slot].is_none(),
            "two keys ranked into slot {slot}"
        );
        stage_keys[slot] = Some(keys[start + e]);
        stage_vals[slot] = match vals {
            Some(v) => v[start + e],
            None => base + (start + e) as u32,
        };
    }
    for (slot, key) in stage_keys.into_iter().enumerate() {
        let Some(key) = key else {
            panic!("stage slot {slot} left empty");
        };
        let d = digit(key, shift);
        let out = (offsets[d * tiles + b] + slot as u32 - first[d]) as usize;
        keys_out[out] = key;
        vals_out[out] = stage_vals[slot];
    }
}

/// `keys` sorted stably, with their positions `base + index`, pass by pass as the GPU
/// does.
pub fn sort(keys: Vec<u64>, base: u32) -> (Vec<u64>, Vec<u32>) {
    let varying = varying_bits(&keys);
    sort_covering(keys, base, varying)
}

/// [`sort`] with its passes chosen by `varying`, which must cover the bits in which the
/// keys differ: the OR of each key XOR one same value (HP-RDA sorts each launch's records
/// by the bits that vary over the whole trace). More bits sort alike in more passes.
pub fn sort_covering(keys: Vec<u64>, base: u32, varying: u64) -> (Vec<u64>, Vec<u32>) {
    let n = keys.len();
    let shifts = digit_shifts(varying);
    if shifts.is_empty() {
        return (keys, (0..n as u32).map(|i| base + i).collect());
    }
    let mut keys = keys;
    let mut vals: Option<Vec<u32>> = None;
    for shift in shifts {
        let mut offsets = count_digits(&keys, shift);
        scan_exclusive(&mut offsets);
        let mut keys_out = vec![0; n];
        let mut vals_out = vec![0; n];
        for b in 0..tiles(n) {
            scatter_tile(
                &keys,
                vals.as_deref(),
                base,
                shift,
                b,
                &offsets,
                &mut keys_out,
                &mut vals_out,
            );
        }
        keys = keys_out;
        vals = Some(vals_out);
    }
    (keys, vals.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                x ^ (x >> 29)
            })
            .collect()
    }

    /// A plain stable sort of `keys` with positions `base + index`.
    fn stable(keys: &[u64], base: u32) -> (Vec<u64>, Vec<u32>) {
        let mut pairs: Vec<(u64, u32)> = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, base + i as u32))
            .collect();
        pairs.sort_by_key(|&(k, _)| k);
        pairs.into_iter().unzip()
    }

    #[test]
    fn digits_cover_the_varying_bits_with_the_fewest_passes() {
        assert_eq!(digit_shifts(0), Vec::<u32>::new());
        assert_eq!(digit_shifts(0xff), vec![0]);
        assert_eq!(digit_shifts(0x100), vec![8]);
        assert_eq!(digit_shifts(0x1_0000_0001), vec![0, 32]);
        // Lines of 64 bytes over 16 MiB: bits 6 to 23.
        assert_eq!(digit_shifts(0xff_ffc0), vec![6, 14, 22]);
        assert_eq!(digit_shifts(1 << 63), vec![63]);
        assert_eq!(
            digit_shifts(u64::MAX),
            (0..8).map(|i| 8 * i).collect::<Vec<_>>()
        );
        assert_eq!(digit_shifts(0x8000_0000_0000_0001), vec![0, 63]);
    }

    #[test]
    fn varying_bits_are_those_where_some_item_differs_from_the_first() {
        assert_eq!(varying_bits(&[]), 0);
        assert_eq!(varying_bits(&[5]), 0);
        assert_eq!(varying_bits(&[5; 9000]), 0);
        assert_eq!(varying_bits(&[0x40, 0x80, 0xc0]), 0xc0);
        let mut far = vec![1u64 << 60; 5000];
        far[4999] = 0;
        assert_eq!(varying_bits(&far), 1 << 60);
    }

    #[test]
    fn the_three_step_scan_is_an_exclusive_prefix_sum() {
        for n in [
            0,
            1,
            15,
            16,
            17,
            4095,
            4096,
            4097,
            3 * 4096 + 5,
            5000 * 4096 + 3,
        ] {
            let data: Vec<u32> = lcg(n as u64 + 3, n)
                .iter()
                .map(|x| (x % 9) as u32)
                .collect();
            let mut want = Vec::with_capacity(n);
            let mut sum = 0u32;
            for &v in &data {
                want.push(sum);
                sum += v;
            }
            let mut got = data.clone();
            scan_exclusive(&mut got);
            assert_eq!(got, want, "{n} counts");
        }
    }

    #[test]
    fn counts_are_digit_major_and_add_up() {
        let keys = lcg(4, 3 * TILE + 100);
        let c = count_digits(&keys, 8);
        let t = tiles(keys.len());
        assert_eq!(c.len(), RADIX * t);
        assert_eq!(c.iter().map(|&x| x as usize).sum::<usize>(), keys.len());
        let last: u32 = (0..RADIX).map(|d| c[d * t + t - 1]).sum();
        assert_eq!(last, 100);
    }

    #[test]
    fn sorts_stably_whichever_bits_vary() {
        let base_addr = 0x7f12_3456_0000u64;
        let mut cases: Vec<(&str, Vec<u64>)> = vec![
            ("none", vec![]),
            ("one", vec![42]),
            ("all equal", vec![7; 10_000]),
            ("random 64-bit", lcg(1, 20_000)),
            (
                "lines of 64 B",
                lcg(2, 30_000)
                    .iter()
                    .map(|x| base_addr + (x % 5000) * 64)
                    .collect(),
            ),
            (
                "low bits only",
                lcg(3, 9000).iter().map(|x| x % 16).collect(),
            ),
            (
                "high bits only",
                lcg(4, 9000).iter().map(|x| ((x % 4) << 62) | 5).collect(),
            ),
            (
                "two far fields",
                lcg(5, 12_000)
                    .iter()
                    .map(|x| ((x % 3) << 44) | ((x >> 40) % 11))
                    .collect(),
            ),
            (
                "bit 63 and bit 0",
                lcg(6, 5000)
                    .iter()
                    .map(|x| ((x & 1) << 63) | ((x >> 7) & 1))
                    .collect(),
            ),
        ];
        for n in [TILE - 1, TILE, TILE + 1, 2 * TILE + 33, 1, 2, 31, 33, 257] {
            cases.push((
                "tile edges",
                lcg(n as u64, n).iter().map(|x| x % 300).collect(),
            ));
        }
        for (name, keys) in cases {
            for base in [0, 1000] {
                let want = stable(&keys, base);
                assert_eq!(
                    sort(keys.clone(), base),
                    want,
                    "{name}, {} keys",
                    keys.len()
                );
            }
        }
    }

    #[test]
    fn more_varying_bits_than_the_keys_have_sort_alike() {
        // A subset of a trace's items, sorted by the bits that vary over the whole trace.
        let trace: Vec<u64> = lcg(7, 20_000).iter().map(|x| x % (1 << 40)).collect();
        let whole = varying_bits(&trace);
        let subset: Vec<u64> = trace[5000..9000].iter().map(|x| x & 0xfff).collect();
        assert!(varying_bits(&subset) & !whole == 0);
        for varying in [whole, u64::MAX] {
            assert_eq!(
                sort_covering(subset.clone(), 0, varying),
                stable(&subset, 0)
            );
        }
    }

    #[test]
    fn a_warp_of_one_digit_keeps_its_order() {
        // Every lane of every warp shares its digit: ranks come only from lane order and
        // the rounds before.
        let keys: Vec<u64> = (0..2 * TILE as u64 + 7).map(|i| (i / 700) << 8).collect();
        assert_eq!(sort(keys.clone(), 3), stable(&keys, 3));
    }
}
