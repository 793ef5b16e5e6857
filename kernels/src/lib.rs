//! memtune's CUDA kernels and their NVRTC compilation.
//!
//! Kernel sources live in `kernels/cuda/` and are embedded here with `include_str!`;
//! [`SOURCES`] lists them all. [`compile::compile_ptx`] turns one into PTX at run time,
//! after [`toolchain::ensure_nvrtc`] has made NVRTC loadable.

pub mod compile;
pub mod embedded;
pub mod params;
pub mod reference;
pub mod toolchain;

pub use compile::{
    compile_cubin, compile_ptx, compile_ptx_with_headers, nvrtc_version, CompileError, CompiledPtx,
};
pub use toolchain::{ensure_nvrtc, NvrtcLocation, ToolchainError};

/// One CUDA source file and the `extern "C"` kernels it defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSource {
    /// File name under `kernels/cuda/`; also the name NVRTC uses in diagnostics.
    pub name: &'static str,
    /// The CUDA C++ source text.
    pub source: &'static str,
    /// Names of the kernels (PTX `.entry` symbols) it defines.
    pub entries: &'static [&'static str],
}

/// TLB / cache probe: pointer-chase ring init and the timed single-thread walk.
pub mod pointer_chase {
    use super::KernelSource;

    /// `memtune_chase_init(base: u64, stride_bytes: u64, count: u64)`
    pub const INIT: &str = "memtune_chase_init";
    /// `memtune_pointer_chase(start: u64, warm_steps: u32, steps: u32, target_sm: i32, out: *mut u64)`
    pub const CHASE: &str = "memtune_pointer_chase";
    /// `memtune_pointer_chase_pair(start_a: u64, start_b: u64, warm_steps: u32, steps: u32, sm_a: i32, sm_b: i32, out: *mut u64)`
    pub const CHASE_PAIR: &str = "memtune_pointer_chase_pair";
    /// Length of the chase kernel's `out` array: cycles, address reached, SM.
    pub const OUT_LEN: usize = 3;
    /// Length of the pair kernel's `out` array: A's three words, then B's.
    pub const PAIR_OUT_LEN: usize = 6;
    /// Value to pre-fill `out` with; `out[2]` still holding it means no block ran on
    /// the requested SM.
    pub const OUT_SENTINEL: u64 = u64::MAX;

    pub const SOURCE: KernelSource = KernelSource {
        name: "pointer_chase.cu",
        source: include_str!("../cuda/pointer_chase.cu"),
        entries: &[INIT, CHASE, CHASE_PAIR],
    };
}

/// Cache probe: single-thread chases through L1 (`ld.global.ca`), the read-only path
/// (`ld.global.nc`), the constant cache and shared memory. The L2 path is
/// `pointer_chase::CHASE` (`ld.global.cg`).
pub mod cache_chase {
    use super::KernelSource;

    /// `memtune_chase_ca(start: u64, warm_steps: u32, steps: u32, out: *mut u64)`, on a ring
    /// written by `pointer_chase::INIT`.
    pub const CHASE_CA: &str = "memtune_chase_ca";
    /// `memtune_chase_nc(start: u64, warm_steps: u32, steps: u32, out: *mut u64)`: the
    /// read-only path (`ld.global.nc`) on the same rings as [`CHASE_CA`].
    pub const CHASE_NC: &str = "memtune_chase_nc";
    /// `memtune_share_nc(ca_start: u64, ca_count: u32, nc_start: u64, nc_count: u32,
    /// nc_passes: u32, steps: u32, out: *mut u64)`: one launch of the test whether the
    /// read-only path shares the L1's storage; `out` holds [`OUT_LEN`] words (cycles of
    /// the timed `.ca` loads, a data sink).
    pub const SHARE_NC: &str = "memtune_share_nc";
    /// `memtune_chase_const(start: u32, warm_steps: u32, steps: u32, out: *mut u64)`, on
    /// [`CONST_RING`] holding word indices.
    pub const CHASE_CONST: &str = "memtune_chase_const";
    /// `memtune_chase_shared(count: u32, stride_words: u32, steps: u32, out: *mut u64)`
    pub const CHASE_SHARED: &str = "memtune_chase_shared";
    /// The `__constant__ unsigned int[CONST_RING_WORDS]` the constant chase walks.
    pub const CONST_RING: &str = "memtune_const_ring";
    pub const CONST_RING_WORDS: usize = 16384;
    /// Words the shared-memory chase's ring may span.
    pub const SHARED_RING_WORDS: u32 = 1024;
    /// Length of `out`: cycles, then the value reached.
    pub const OUT_LEN: usize = 2;

    pub const SOURCE: KernelSource = KernelSource {
        name: "cache_chase.cu",
        source: include_str!("../cuda/cache_chase.cu"),
        entries: &[CHASE_CA, CHASE_NC, SHARE_NC, CHASE_CONST, CHASE_SHARED],
    };
}

/// Main-memory latency distribution: one thread follows a randomly ordered pointer chain
/// over a large device array and times each load on its own. The same kernels, with the
/// chain in address order and the L2 evicted around it, show the L2's fetch granularity.
pub mod random_chase {
    use super::KernelSource;

    /// `memtune_random_chase_init(base: u64, stride_bytes: u64, order: *const u32, count: u64)`:
    /// node `order[k]` points to node `order[(k + 1) % count]`.
    pub const INIT: &str = "memtune_random_chase_init";
    /// `memtune_random_chase_flush(base: u64, stride_bytes: u64, line_bytes: u64, count: u64, sink: *mut u64)`:
    /// reads every `line_bytes` of the array but each node's first line, to evict the chain
    /// from L2.
    pub const FLUSH: &str = "memtune_random_chase_flush";
    /// `memtune_random_chase_sample(start: u64, warm: u32, samples: u32, out: *mut u64)`,
    /// one block; `out` holds `samples + 1` words: the cycles of each timed hop, then the
    /// address reached.
    pub const SAMPLE: &str = "memtune_random_chase_sample";
    /// `memtune_random_chase_evict(base: u64, bytes: u64, line_bytes: u64, sink: *mut u64)`:
    /// reads one word of every `line_bytes` of `[base, base + bytes)` and nothing else, to
    /// evict from L2 what lies outside that region (the L2 fetch test's chain).
    pub const EVICT: &str = "memtune_random_chase_evict";
    /// Most hops one sample launch times (its shared-memory array).
    pub const MAX_SAMPLES: u32 = 2048;

    pub const SOURCE: KernelSource = KernelSource {
        name: "random_chase.cu",
        source: include_str!("../cuda/random_chase.cu"),
        entries: &[INIT, FLUSH, SAMPLE, EVICT],
    };

    /// A random order of the nodes `0..count`, reproducible from `seed` (Fisher-Yates with
    /// SplitMix64): the chain `order[0] -> order[1] -> ... -> order[0]` visits every node
    /// once per cycle, whatever the order.
    pub fn random_order(count: u32, seed: u64) -> Vec<u32> {
        let mut order: Vec<u32> = (0..count).collect();
        let mut state = seed;
        for i in (1..order.len()).rev() {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let r = super::digest::mix64(state);
            // Multiply-shift: a draw in [0, i] without a modulo's bias worth noticing.
            let j = ((u128::from(r) * (i as u128 + 1)) >> 64) as usize;
            order.swap(i, j);
        }
        order
    }

    /// What `memtune_random_chase_init` writes, on the CPU: the node each node points to.
    pub fn successors(order: &[u32]) -> Vec<u32> {
        let mut next = vec![0u32; order.len()];
        for (k, &node) in order.iter().enumerate() {
            next[node as usize] = order[(k + 1) % order.len()];
        }
        next
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_order_is_a_reproducible_permutation() {
            let order = random_order(1000, 7);
            assert_eq!(order, random_order(1000, 7));
            assert_ne!(order, random_order(1000, 8));
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..1000).collect::<Vec<u32>>());
            // Shuffled: few nodes stay in place.
            let fixed = order.iter().enumerate().filter(|&(i, &n)| i as u32 == n);
            assert!(fixed.count() < 10);
            assert!(random_order(0, 1).is_empty());
            assert_eq!(random_order(1, 1), [0]);
        }

        #[test]
        fn the_chain_is_one_cycle_through_every_node() {
            for count in [1u32, 2, 3, 1024] {
                let next = successors(&random_order(count, 42));
                let mut seen = vec![false; count as usize];
                let mut node = 0u32;
                for _ in 0..count {
                    assert!(!seen[node as usize], "node {node} visited twice");
                    seen[node as usize] = true;
                    node = next[node as usize];
                }
                assert_eq!(node, 0, "back at the start after {count} hops");
                assert!(seen.iter().all(|&s| s));
            }
        }
    }
}

/// Digest of a buffer's bits on the GPU ([`digest::words`] on the CPU).
pub mod digest {
    use super::KernelSource;

    /// `memtune_digest_words(data: *const u32, n_words: u64, out: *mut u64)`
    pub const DIGEST: &str = "memtune_digest_words";
    /// `memtune_digest_groups(table: *const GroupingBucket, capacity: u64, out: *mut [u64; 3])`:
    /// non-empty buckets, their counts, and the sum of `mix64(key) * count`.
    pub const DIGEST_GROUPS: &str = "memtune_digest_groups";

    pub const SOURCE: KernelSource = KernelSource {
        name: "digest.cu",
        source: include_str!("../cuda/digest.cu"),
        entries: &[DIGEST, DIGEST_GROUPS],
    };

    /// What `memtune_digest_words` adds up over `words` (then [`finish`]ed): equal digests
    /// mean bitwise-equal buffers but for a 2^-64 chance.
    pub fn words(words: &[u32]) -> u64 {
        finish(
            words.iter().enumerate().fold(0u64, |h, (i, &w)| {
                h.wrapping_add(mix64(mix64(i as u64) ^ u64::from(w)))
            }),
            words.len() as u64,
        )
    }

    /// The digest of `n_words` words from the kernel's sum (binds the length in).
    pub fn finish(sum: u64, n_words: u64) -> u64 {
        mix64(sum ^ n_words)
    }

    /// SplitMix64's finaliser, as in `digest.cu`.
    pub fn mix64(mut x: u64) -> u64 {
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn sees_every_bit_position_and_length() {
            let a: Vec<u32> = (0..1000).map(|i| i * 7 + 1).collect();
            let base = words(&a);
            assert_eq!(base, words(&a.clone()));
            for i in [0, 1, 499, 999] {
                for bit in [0, 13, 31] {
                    let mut b = a.clone();
                    b[i] ^= 1 << bit;
                    assert_ne!(words(&b), base, "word {i} bit {bit}");
                }
            }
            // Swapping two words changes it (the index is mixed in).
            let mut s = a.clone();
            s.swap(3, 4);
            assert_ne!(words(&s), base);
            assert_ne!(words(&a[..999]), base);
        }
    }
}

/// The probe's random-access kernels: region fill with a hash of the index, random atomic
/// updates, and a sum of the region's words.
pub mod random_access {
    use super::KernelSource;

    /// `memtune_fill_words(data: *mut u32, first: u64, end: u64)`: words `first..end`, so
    /// that a buffer can be filled as far as it is used (managed memory migrates the pages
    /// it touches).
    pub const FILL: &str = "memtune_fill_words";
    /// `memtune_random_atomic(data: *mut u32, n_words: u64, reads: u32, seed: u64)`: the
    /// sampling kernel's draws (`reference::sampling::positions`), each an
    /// `atomicAdd(&data[pos], 1)`; a launch adds exactly
    /// [`atomic_increments`] to the sum of the region's words.
    pub const ATOMIC: &str = "memtune_random_atomic";
    /// `memtune_sum_words(data: *const u32, n_words: u64, sum: *mut u64)`: adds the words
    /// (as u64) into `sum`; blocks of a multiple of 32 threads, at most 1024.
    pub const SUM: &str = "memtune_sum_words";

    pub const SOURCE: KernelSource = KernelSource {
        name: "random_access.cu",
        source: include_str!("../cuda/random_access.cu"),
        entries: &[FILL, ATOMIC, SUM],
    };

    /// What one launch of `memtune_random_atomic` with `threads` threads of `reads` draws
    /// adds to the sum of the region's words: one per draw, wherever it lands.
    pub fn atomic_increments(threads: u64, reads: u32) -> u64 {
        threads * u64::from(reads)
    }

    /// The value `memtune_fill_words` stores at word `i`.
    pub fn word_hash(i: u64) -> u32 {
        let mut i = i ^ (i >> 33);
        i = i.wrapping_mul(0xff51_afd7_ed55_8ccd);
        i ^= i >> 33;
        i as u32
    }
}

/// Random sampling, plain and TLB-scoped (Karnagel et al. §2.1, §5.2); the CPU reference
/// is [`reference::sampling`], the parameters [`params::SamplingParams`].
pub mod sampling {
    use super::KernelSource;

    /// `memtune_sampling(data: *const u32, sum: *mut u64, p: SamplingParams)`
    pub const SAMPLE: &str = "memtune_sampling";

    pub const SOURCE: KernelSource = KernelSource {
        name: "sampling.cu",
        source: include_str!("../cuda/sampling.cu"),
        entries: &[SAMPLE],
    };
}

/// Hash grouping, plain and TLB-scoped "naive" and "copy" (Karnagel et al. §2.2, §5.3);
/// the CPU reference and pass model are [`reference::grouping`], the parameters
/// [`params::GroupingParams`].
pub mod grouping {
    use super::KernelSource;

    /// `memtune_grouping_init(table: *mut GroupingBucket, counters: *mut GroupingCounters, p: GroupingParams)`
    pub const INIT: &str = "memtune_grouping_init";
    /// `memtune_grouping_insert(keys: *const u32, table: *mut GroupingBucket, counters: *mut GroupingCounters, p: GroupingParams)`
    pub const INSERT: &str = "memtune_grouping_insert";
    /// `memtune_grouping_insert_spill(keys: *const u32, table: *mut GroupingBucket, counters: *mut GroupingCounters, spill: *mut u32, p: GroupingParams)`
    pub const INSERT_SPILL: &str = "memtune_grouping_insert_spill";
    /// `memtune_grouping_insert_spilled(spill: *const u32, table: *mut GroupingBucket, counters: *mut GroupingCounters, p: GroupingParams)`
    pub const INSERT_SPILLED: &str = "memtune_grouping_insert_spilled";

    pub const SOURCE: KernelSource = KernelSource {
        name: "grouping.cu",
        source: include_str!("../cuda/grouping.cu"),
        entries: &[INIT, INSERT, INSERT_SPILL, INSERT_SPILLED],
    };
}

/// 3-D star stencil (radius 1: 6 neighbours, 2: 12): plain, shared-memory staged and
/// 2.5-D streaming (Korpala);
/// the CPU reference is [`reference::stencil`], the parameters [`params::StencilParams`].
pub mod stencil {
    use super::KernelSource;

    /// `memtune_stencil_plain(input: *const T, output: *mut T, p: StencilParams)`
    pub const PLAIN: &str = "memtune_stencil_plain";
    /// `memtune_stencil_staged(input: *const T, output: *mut T, p: StencilParams)`
    pub const STAGED: &str = "memtune_stencil_staged";
    /// `memtune_stencil_streaming(input: *const T, output: *mut T, p: StencilParams)`
    pub const STREAMING: &str = "memtune_stencil_streaming";
    /// The define choosing `T`; its default is `float`.
    pub const ELEMENT_DEFINE: &str = "MEMTUNE_STENCIL_T";
    /// `(ELEMENT_DEFINE, value)` for double precision.
    pub const F64: (&str, &str) = (ELEMENT_DEFINE, "double");
    /// The define choosing the radius (`StencilParams::radius`); its default is 1.
    pub const RADIUS_DEFINE: &str = "MEMTUNE_STENCIL_RADIUS";

    pub const SOURCE: KernelSource = KernelSource {
        name: "stencil.cu",
        source: include_str!("../cuda/stencil.cu"),
        entries: &[PLAIN, STAGED, STREAMING],
    };
}

/// Zero-copy reads of mapped pinned host memory with seed 001's access patterns:
/// grid-stride and block-stride (16-byte loads) and random-warp (one random 128-byte
/// segment per warp per step); and the L2 read of a device region that L2 holds. Each adds
/// what it reads into one u64.
pub mod zero_copy {
    use super::KernelSource;

    /// `memtune_zero_copy_grid_stride(data: *const uint4, n_vec: u64, sum: *mut u64)`
    pub const GRID_STRIDE: &str = "memtune_zero_copy_grid_stride";
    /// `memtune_zero_copy_block_stride(data: *const uint4, n_vec: u64, sum: *mut u64)`
    pub const BLOCK_STRIDE: &str = "memtune_zero_copy_block_stride";
    /// `memtune_zero_copy_random_warp(data: *const u32, n_segments: u64, steps: u32, seed: u64, sum: *mut u64)`
    pub const RANDOM_WARP: &str = "memtune_zero_copy_random_warp";
    /// `memtune_l2_read(data: *const uint4, n_vec: u64, repeats: u32, sum: *mut u64)`: a
    /// device region held in L2, read `repeats` times (16-byte `__ldcg` loads).
    pub const L2_READ: &str = "memtune_l2_read";
    /// Bytes one warp reads per random-warp step (32 lanes x 4 bytes).
    pub const SEGMENT_BYTES: u64 = 128;
    /// Bytes one thread reads per grid-/block-stride load.
    pub const VECTOR_BYTES: u64 = 16;

    pub const SOURCE: KernelSource = KernelSource {
        name: "zero_copy.cu",
        source: include_str!("../cuda/zero_copy.cu"),
        entries: &[GRID_STRIDE, BLOCK_STRIDE, RANDOM_WARP, L2_READ],
    };

    /// The segments global warp `warp` of `memtune_zero_copy_random_warp` reads, in step
    /// order: the CPU twin of the kernel's LCG.
    pub fn random_warp_segments(
        warp: u64,
        steps: u32,
        seed: u64,
        n_segments: u64,
    ) -> impl Iterator<Item = u64> {
        let mut x = seed ^ warp.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (0..steps).map(move |_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((u128::from(x) * u128::from(n_segments)) >> 64) as u64
        })
    }
}

/// Exact reuse distances from next uses (`runtime/core/src/reuse/nextuse.rs` and
/// `radix.rs` model them on the CPU): [`reuse::SOURCE`] finds next uses and counts them,
/// in blocks of [`reuse::BLOCK`] threads; [`reuse::RADIX_SOURCE`] sorts the items, in
/// blocks of [`reuse::RADIX_THREADS`].
pub mod reuse {
    use super::KernelSource;

    /// Threads per block of `reuse.cu`, and outputs per block of its merge levels.
    pub const BLOCK: u32 = 1024;
    /// Entries per tile of the shared-memory sort of next uses (`memtune_reuse_tile_next`).
    pub const SORT_TILE: u32 = 4096;
    /// Threads per block of `reuse_radix.cu`.
    pub const RADIX_THREADS: u32 = 256;
    /// Keys per block of the radix count and scatter, and counts per block of the scans.
    pub const RADIX_TILE: u32 = 4096;
    /// Bits of a radix digit; its values.
    pub const RADIX_BITS: u32 = 8;
    pub const RADIX: u32 = 1 << RADIX_BITS;

    /// `memtune_reuse_next(items, positions, n, base, total, next: *mut u32, lasts: *mut u32)`:
    /// `*lasts` gains the part's distinct items.
    pub const NEXT: &str = "memtune_reuse_next";
    /// `memtune_reuse_resolve(items, positions, n, base, total, next, later_items, later_positions, later_n)`
    pub const RESOLVE: &str = "memtune_reuse_resolve";
    /// `memtune_reuse_iota(positions: *mut u32, n: u32, base: u32)`
    pub const IOTA: &str = "memtune_reuse_iota";
    /// `memtune_reuse_tile_next(next: *mut u32, v: *mut u32, n: u32, base: u32)`: one block
    /// a tile of [`SORT_TILE`]; `v` is written, not read.
    pub const TILE_NEXT: &str = "memtune_reuse_tile_next";
    /// `memtune_reuse_partition_next(next, cuts: *mut u32, n: u32, width: u32)`: two cuts
    /// per tile of [`BLOCK`] outputs, one thread per tile.
    pub const PARTITION_NEXT: &str = "memtune_reuse_partition_next";
    /// `memtune_reuse_merge_next(next, v, cuts, next_out, v_out, n: u32, width: u32)`
    pub const MERGE_NEXT: &str = "memtune_reuse_merge_next";
    /// `memtune_reuse_count_later(next, v, n, later_next, later_n, later_base, total)`
    pub const COUNT_LATER: &str = "memtune_reuse_count_later";
    /// `memtune_reuse_histogram(next, v, n, total, dense: *mut u32, largest: *mut u32)`:
    /// `dense` holds `total` counts, `largest` one past the largest distance.
    pub const HISTOGRAM: &str = "memtune_reuse_histogram";
    /// `memtune_reuse_add(dense: *mut u32, other: *const u32, n: u32)`
    pub const ADD: &str = "memtune_reuse_add";

    /// `memtune_reuse_varying(items: *const u64, n: u32, first: u64, varying: *mut u64)`:
    /// ORs `item ^ first` into `*varying`; one block a tile of [`RADIX_TILE`].
    pub const VARYING: &str = "memtune_reuse_varying";
    /// `memtune_reuse_widen(words: *const u32, n: u32, first: u64, items: *mut u64,
    /// varying: *mut u64)`: `items[k] = first + words[k] - 2^31` (modulo 2^64), and ORs
    /// `items[k] ^ first` into `*varying` as [`VARYING`] does; one block a tile.
    pub const WIDEN: &str = "memtune_reuse_widen";
    /// `memtune_reuse_radix_count(keys: *const u64, n: u32, shift: u32, counts: *mut u32)`:
    /// [`RADIX`] counts per tile, digit-major.
    pub const RADIX_COUNT: &str = "memtune_reuse_radix_count";
    /// `memtune_reuse_scan_reduce(data: *const u32, m: u32, sums: *mut u32)`: one sum a tile.
    pub const SCAN_REDUCE: &str = "memtune_reuse_scan_reduce";
    /// `memtune_reuse_scan_sums(sums: *mut u32, count: u32)`: one block.
    pub const SCAN_SUMS: &str = "memtune_reuse_scan_sums";
    /// `memtune_reuse_scan_apply(data: *mut u32, m: u32, sums: *const u32)`
    pub const SCAN_APPLY: &str = "memtune_reuse_scan_apply";
    /// `memtune_reuse_radix_scatter_first(keys, keys_out, vals_out, n, shift, offsets, base: u32)`:
    /// the first pass, values `base + index`.
    pub const RADIX_SCATTER_FIRST: &str = "memtune_reuse_radix_scatter_first";
    /// `memtune_reuse_radix_scatter(keys, vals, keys_out, vals_out, n, shift, offsets)`
    pub const RADIX_SCATTER: &str = "memtune_reuse_radix_scatter";

    pub const SOURCE: KernelSource = KernelSource {
        name: "reuse.cu",
        source: include_str!("../cuda/reuse.cu"),
        entries: &[
            NEXT,
            RESOLVE,
            IOTA,
            TILE_NEXT,
            PARTITION_NEXT,
            MERGE_NEXT,
            COUNT_LATER,
            HISTOGRAM,
            ADD,
        ],
    };

    pub const RADIX_SOURCE: KernelSource = KernelSource {
        name: "reuse_radix.cu",
        source: include_str!("../cuda/reuse_radix.cu"),
        entries: &[
            VARYING,
            WIDEN,
            RADIX_COUNT,
            SCAN_REDUCE,
            SCAN_SUMS,
            SCAN_APPLY,
            RADIX_SCATTER_FIRST,
            RADIX_SCATTER,
        ],
    };
}

/// HP-RDA (Cui et al.) on the GPU: preprocessing, one thread per sub-trace, block- and
/// grid-level merges (`runtime/core/src/reuse/hprda_model.rs` models them on the CPU). The
/// element-wise and scan kernels take blocks of [`hprda::BLOCK`] threads, one per entry (a
/// block is a scan's tile); the records are sorted by [`reuse::RADIX_SOURCE`]'s radix sort.
pub mod hprda {
    use super::KernelSource;

    /// Threads per block of the element-wise kernels, and entries per tile of the scans:
    /// the block of [`super::reuse`]'s kernels, whose launch grid is shared.
    pub const BLOCK: u32 = super::reuse::BLOCK;
    /// Distances the thread kernel counts in shared memory (below it), in 4-byte words.
    pub const SMALL: u32 = 1024;
    /// `memtune_hprda_keep_sums(raw: *const u64, n: u64, sums: *mut u32)`: kept references
    /// (not repeating the one before) per tile.
    pub const KEEP_SUMS: &str = "memtune_hprda_keep_sums";
    /// `memtune_hprda_compact(raw, n: u64, offsets: *const u64, kept: *mut u64)`
    pub const COMPACT: &str = "memtune_hprda_compact";
    /// `memtune_hprda_tile_sums(values: *const u32, n: u64, sums: *mut u32)`
    pub const TILE_SUMS: &str = "memtune_hprda_tile_sums";
    /// `memtune_hprda_scan_tiles(sums: *const u32, tiles: u64, base: u64, offsets: *mut u64)`,
    /// one block; `offsets` holds `tiles + 1` entries.
    pub const SCAN_TILES: &str = "memtune_hprda_scan_tiles";
    /// `memtune_hprda_scan_apply(values: *const u32, n: u64, offsets, out: *mut u64)`:
    /// exclusive prefix sums, `out[n]` the total.
    pub const SCAN_APPLY: &str = "memtune_hprda_scan_apply";
    /// `memtune_hprda_thread(trace, n: u32, st: u32, tables: *mut u64, table_slots: u32,
    /// live: *mut u32, words: u32, live_shared: u32, rec_item: *mut u64, rec_latest: *mut u32,
    /// counts: *mut u32, dense: *mut u32, dense_len: u32, largest: *mut u32, overflow: *mut u32)`:
    /// blocks of NB threads, one per sub-trace; dynamic shared memory [`SMALL`] words plus,
    /// with `live_shared`, `NB × (words + 1)` words.
    pub const THREAD: &str = "memtune_hprda_thread";
    /// `memtune_hprda_gather_records(rec_item, counts, c: *const u64, n: u32, st: u32,
    /// keys: *mut u64, origin: *mut u32)`
    pub const GATHER_RECORDS: &str = "memtune_hprda_gather_records";
    /// `memtune_hprda_gather_sorted(positions, origin, rec_latest, r: u32, st: u32, tk, fk, lk)`
    pub const GATHER_SORTED: &str = "memtune_hprda_gather_sorted";
    /// `memtune_hprda_block_firsts(keys, tk, r: u32, nb: u32, block_counts: *mut u32)`
    pub const BLOCK_FIRSTS: &str = "memtune_hprda_block_firsts";
    /// `memtune_hprda_merge(keys, tk, fk, lk, r: u32, nb: u32, subs: u32, c, q, grid: *mut u64,
    /// grid_mask: u64, dense, dense_len: u32, largest, overflow)`
    pub const MERGE: &str = "memtune_hprda_merge";
    /// `memtune_hprda_store(keys, tk, lk, r: u32, nb: u32, subs: u32, c, q, grid, grid_mask: u64,
    /// distinct: *mut u64)`
    pub const STORE: &str = "memtune_hprda_store";
    /// `memtune_hprda_overlap_sums(cross: *const u32, n: u64, counts: *mut u64,
    /// lengths: *mut u64)`: per tile, the references and their total length.
    pub const OVERLAP_SUMS: &str = "memtune_hprda_overlap_sums";
    /// `memtune_hprda_overlap_apply(cross, n: u64, count_off: *const u64, len_off: *const u64,
    /// s: u64, m: u64, adjusted: *mut u32)`: the overlap correction's counts, `adjusted`
    /// zeroed and `m` long (at least 1).
    pub const OVERLAP_APPLY: &str = "memtune_hprda_overlap_apply";

    pub const SOURCE: KernelSource = KernelSource {
        name: "hprda.cu",
        source: include_str!("../cuda/hprda.cu"),
        entries: &[
            KEEP_SUMS,
            COMPACT,
            TILE_SUMS,
            SCAN_TILES,
            SCAN_APPLY,
            THREAD,
            GATHER_RECORDS,
            GATHER_SORTED,
            BLOCK_FIRSTS,
            MERGE,
            STORE,
            OVERLAP_SUMS,
            OVERLAP_APPLY,
        ],
    };
}

/// A trace replayed by one thread, loads dependent, for its mean latency.
pub mod replay {
    use super::KernelSource;

    /// `memtune_replay(offsets: *const u32, n: u32, data: *const u32, mask: u32, out: *mut u64)`,
    /// one block; `out` holds [`OUT_LEN`] words: cycles of the loads, the last value.
    pub const REPLAY: &str = "memtune_replay";
    pub const OUT_LEN: usize = 2;
    /// Threads of the block (they stage offsets; one loads).
    pub const BLOCK: u32 = 256;

    pub const SOURCE: KernelSource = KernelSource {
        name: "replay.cu",
        source: include_str!("../cuda/replay.cu"),
        entries: &[REPLAY],
    };
}

/// Every kernel source of this crate.
pub const SOURCES: &[KernelSource] = &[
    pointer_chase::SOURCE,
    cache_chase::SOURCE,
    random_chase::SOURCE,
    digest::SOURCE,
    random_access::SOURCE,
    sampling::SOURCE,
    grouping::SOURCE,
    stencil::SOURCE,
    zero_copy::SOURCE,
    reuse::SOURCE,
    reuse::RADIX_SOURCE,
    hprda::SOURCE,
    replay::SOURCE,
];
