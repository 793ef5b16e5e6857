// The stable sort by item of exact-gpu: a least-significant-digit radix sort of a part's
// items (u64) with their global positions (u32). The method, and a CPU model of these
// kernels step for step, are in runtime/core/src/reuse/radix.rs:
//   1. memtune_reuse_varying (or memtune_reuse_widen, on a chunk uploaded as 32-bit
//      offsets): the bits in which some item differs from the part's first; the host
//      runs one pass per digit of 8 bits that covers them, none for the rest;
//   2. per pass: memtune_reuse_radix_count (each tile's digit counts, digit-major),
//      memtune_reuse_scan_* (their exclusive prefix sums: where each tile's run of each
//      digit goes) and memtune_reuse_radix_scatter (each tile's keys ranked stably by
//      digit in shared memory, then written out run by run).
//
// No #include: NVRTC compiles this without any CUDA headers. Sizes: n < 2^31 entries.
// Every kernel here takes blocks of MEMTUNE_RADIX_THREADS threads.

typedef unsigned long long u64;
typedef unsigned int u32;

#define MEMTUNE_RADIX_BITS 8
#define MEMTUNE_RADIX 256
#define MEMTUNE_RADIX_THREADS 256
#define MEMTUNE_RADIX_WARPS (MEMTUNE_RADIX_THREADS / 32)
// Keys (or counts) per thread; a tile is one block's keys (or counts).
#define MEMTUNE_RADIX_PER_THREAD 16
#define MEMTUNE_RADIX_TILE (MEMTUNE_RADIX_THREADS * MEMTUNE_RADIX_PER_THREAD)
// Marks a thread with no key in a round: no digit equals it.
#define MEMTUNE_RADIX_NONE MEMTUNE_RADIX

static_assert(MEMTUNE_RADIX_THREADS == MEMTUNE_RADIX,
              "the scatter's digit steps take one thread a digit");

__device__ __forceinline__ u32 memtune_digit(u64 key, u32 shift)
{
    return (u32)(key >> shift) & (MEMTUNE_RADIX - 1);
}

// Exclusive prefix sum of v over the block's threads (every thread must call it); *total
// gets the block's sum. warp_sums: MEMTUNE_RADIX_WARPS words of shared memory, free again
// when this returns.
__device__ u32 memtune_block_exclusive(u32 v, u32* warp_sums, u32* total)
{
    u32 lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    u32 x = v;
    for (u32 o = 1; o < 32; o <<= 1) {
        u32 y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) {
            x += y;
        }
    }
    if (lane == 31) {
        warp_sums[w] = x;
    }
    __syncthreads();
    u32 before = 0, all = 0;
    for (u32 i = 0; i < MEMTUNE_RADIX_WARPS; ++i) {
        u32 s = warp_sums[i];
        before += i < w ? s : 0;
        all += s;
    }
    __syncthreads();
    *total = all;
    return before + x - v;
}

// ORs the block's `acc` (every thread's) into *varying, skipping a zero.
__device__ void memtune_or_into(u64 acc, u64* varying)
{
    __shared__ u64 warp_or[MEMTUNE_RADIX_WARPS];
    for (u32 o = 16; o > 0; o >>= 1) {
        acc |= __shfl_xor_sync(0xffffffffu, acc, o);
    }
    if ((threadIdx.x & 31) == 0) {
        warp_or[threadIdx.x >> 5] = acc;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 all = 0;
        for (u32 i = 0; i < MEMTUNE_RADIX_WARPS; ++i) {
            all |= warp_or[i];
        }
        if (all != 0) {
            atomicOr(varying, all);
        }
    }
}

// The OR of item ^ first over the block's tile, added into *varying. WIDEN: the items
// come as 32-bit words (word = item - first + 2^31, modulo 2^64, which the host checked
// is below 2^32) and are written out to items; else they are read from items.
template <bool WIDEN>
__device__ void memtune_varying_tile(const u32* words, u64* items, u32 n, u64 first,
                                     u64* varying)
{
    u64 tile = (u64)blockIdx.x * MEMTUNE_RADIX_TILE;
    u64 acc = 0;
#pragma unroll
    for (u32 r = 0; r < MEMTUNE_RADIX_PER_THREAD; ++r) {
        u64 k = tile + r * MEMTUNE_RADIX_THREADS + threadIdx.x;
        if (k < n) {
            u64 item;
            if (WIDEN) {
                item = first + (u64)words[k] - (1ull << 31);
                items[k] = item;
            } else {
                item = items[k];
            }
            acc |= item ^ first;
        }
    }
    memtune_or_into(acc, varying);
}

// OR of items[k] ^ first over the block's tile, added into *varying (zeroed before the
// first launch; the upload runs this on each chunk as it arrives).
extern "C" __global__ void memtune_reuse_varying(const u64* items, u32 n, u64 first,
                                                 u64* varying)
{
    memtune_varying_tile<false>(0, (u64*)items, n, first, varying);
}

// A chunk uploaded as 32-bit words: widens the block's tile into items, ORing
// item ^ first into *varying as memtune_reuse_varying does.
extern "C" __global__ void memtune_reuse_widen(const u32* words, u32 n, u64 first,
                                               u64* items, u64* varying)
{
    memtune_varying_tile<true>(words, items, n, first, varying);
}

// Counts the digits at `shift` of the block's tile of keys into
// counts[digit * gridDim.x + blockIdx.x], every digit's entry written.
extern "C" __global__ void memtune_reuse_radix_count(const u64* keys, u32 n, u32 shift,
                                                     u32* counts)
{
    // One histogram per warp. Each round a warp's lanes are grouped by digit and the
    // group's lowest lane adds its size: the digits of one round's leaders differ, so no
    // two lanes write one word at once, however alike the keys are.
    __shared__ u32 per_warp[MEMTUNE_RADIX_WARPS][MEMTUNE_RADIX];
    u32 t = threadIdx.x, lane = t & 31, w = t >> 5;
#pragma unroll
    for (u32 i = 0; i < MEMTUNE_RADIX_WARPS; ++i) {
        per_warp[i][t] = 0;
    }
    __syncthreads();
    u64 tile = (u64)blockIdx.x * MEMTUNE_RADIX_TILE;
#pragma unroll 4
    for (u32 r = 0; r < MEMTUNE_RADIX_PER_THREAD; ++r) {
        u64 k = tile + r * MEMTUNE_RADIX_THREADS + t;
        u32 d = k < n ? memtune_digit(keys[k], shift) : MEMTUNE_RADIX_NONE;
        u32 peers = __match_any_sync(0xffffffffu, d);
        if (d != MEMTUNE_RADIX_NONE && (peers & ((1u << lane) - 1)) == 0) {
            per_warp[w][d] += __popc(peers);
        }
        __syncwarp();
    }
    __syncthreads();
    u32 sum = 0;
#pragma unroll
    for (u32 i = 0; i < MEMTUNE_RADIX_WARPS; ++i) {
        sum += per_warp[i][t];
    }
    counts[(u64)t * gridDim.x + blockIdx.x] = sum;
}

// Scan, first step: the sum of each tile of MEMTUNE_RADIX_TILE counts into sums[block].
extern "C" __global__ void memtune_reuse_scan_reduce(const u32* data, u32 m, u32* sums)
{
    __shared__ u32 warp_sums[MEMTUNE_RADIX_WARPS];
    u64 tile = (u64)blockIdx.x * MEMTUNE_RADIX_TILE;
    u32 acc = 0;
#pragma unroll
    for (u32 r = 0; r < MEMTUNE_RADIX_PER_THREAD; ++r) {
        u64 k = tile + r * MEMTUNE_RADIX_THREADS + threadIdx.x;
        if (k < m) {
            acc += data[k];
        }
    }
    u32 total;
    memtune_block_exclusive(acc, warp_sums, &total);
    if (threadIdx.x == 0) {
        sums[blockIdx.x] = total;
    }
}

// Scan, second step (one block): exclusive prefix sums of sums[0..count) in place, a tile
// at a time with a carry; thread t takes the tile's counts t * PER_THREAD onwards.
extern "C" __global__ void memtune_reuse_scan_sums(u32* sums, u32 count)
{
    __shared__ u32 warp_sums[MEMTUNE_RADIX_WARPS];
    u32 carry = 0;
    for (u64 tile = 0; tile < count; tile += MEMTUNE_RADIX_TILE) {
        u64 first = tile + (u64)threadIdx.x * MEMTUNE_RADIX_PER_THREAD;
        u32 v[MEMTUNE_RADIX_PER_THREAD];
        u32 acc = 0;
#pragma unroll
        for (u32 i = 0; i < MEMTUNE_RADIX_PER_THREAD; ++i) {
            v[i] = first + i < count ? sums[first + i] : 0;
            acc += v[i];
        }
        u32 total;
        u32 run = carry + memtune_block_exclusive(acc, warp_sums, &total);
#pragma unroll
        for (u32 i = 0; i < MEMTUNE_RADIX_PER_THREAD; ++i) {
            if (first + i < count) {
                sums[first + i] = run;
            }
            run += v[i];
        }
        carry += total;
    }
}

// Scan, third step: each tile's exclusive prefix sums in place, from its scanned sum.
extern "C" __global__ void memtune_reuse_scan_apply(u32* data, u32 m, const u32* sums)
{
    __shared__ u32 warp_sums[MEMTUNE_RADIX_WARPS];
    u64 first = (u64)blockIdx.x * MEMTUNE_RADIX_TILE + (u64)threadIdx.x * MEMTUNE_RADIX_PER_THREAD;
    u32 v[MEMTUNE_RADIX_PER_THREAD];
    u32 acc = 0;
#pragma unroll
    for (u32 i = 0; i < MEMTUNE_RADIX_PER_THREAD; ++i) {
        v[i] = first + i < m ? data[first + i] : 0;
        acc += v[i];
    }
    u32 total;
    u32 run = sums[blockIdx.x] + memtune_block_exclusive(acc, warp_sums, &total);
#pragma unroll
    for (u32 i = 0; i < MEMTUNE_RADIX_PER_THREAD; ++i) {
        if (first + i < m) {
            data[first + i] = run;
        }
        run += v[i];
    }
}

// One pass: the block's tile of keys (with values: vals, or base + index when GENERATE)
// written stably by digit to offsets[digit * gridDim.x + blockIdx.x] onwards (the scanned
// counts). Tile entry e is thread e % THREADS's key of round e / THREADS. Each round a
// warp groups its lanes by digit (__match_any_sync) and the block turns its warps' counts
// into each digit's ranks after the rounds before, so a key's rank among the tile's keys
// of its digit is its order in the tile. The keys are staged in shared memory in digit
// order, then written out, each digit's run contiguous; the values follow the same way.
template <bool GENERATE>
__device__ void memtune_radix_scatter(const u64* keys, const u32* vals, u64* keys_out,
                                      u32* vals_out, u32 n, u32 shift, const u32* offsets,
                                      u32 base)
{
    // The staged keys; while ranking, the warps' digit counts (two rounds' worth).
    __shared__ u64 stage[MEMTUNE_RADIX_TILE];
    // Keys of each digit in the rounds so far, then the tile's first slot of each digit.
    __shared__ u32 running[MEMTUNE_RADIX];
    // Where the tile's run of each digit goes in the output.
    __shared__ u32 dest[MEMTUNE_RADIX];
    __shared__ u32 warp_sums[MEMTUNE_RADIX_WARPS];
    typedef u32 counts_t[MEMTUNE_RADIX_WARPS][MEMTUNE_RADIX];
    counts_t* counts = reinterpret_cast<counts_t*>(stage);
    static_assert(2 * sizeof(counts_t) <= sizeof(stage), "two rounds of counts fit the stage");

    u32 t = threadIdx.x, lane = t & 31, w = t >> 5;
    u64 tile = (u64)blockIdx.x * MEMTUNE_RADIX_TILE;
    u32 len = (u32)(n - tile < MEMTUNE_RADIX_TILE ? n - tile : MEMTUNE_RADIX_TILE);
    u64 key[MEMTUNE_RADIX_PER_THREAD];
    u32 rank[MEMTUNE_RADIX_PER_THREAD];
#pragma unroll
    for (u32 r = 0; r < MEMTUNE_RADIX_PER_THREAD; ++r) {
        u32 e = r * MEMTUNE_RADIX_THREADS + t;
        key[r] = e < len ? keys[tile + e] : 0;
    }
    running[t] = 0;
    dest[t] = offsets[(u64)t * gridDim.x + blockIdx.x];
    for (u32 i = 0; i < MEMTUNE_RADIX_WARPS; ++i) {
        counts[0][i][t] = 0;
    }
    __syncthreads();

#pragma unroll
    for (u32 r = 0; r < MEMTUNE_RADIX_PER_THREAD; ++r) {
        u32 cur = r & 1;
        u32 e = r * MEMTUNE_RADIX_THREADS + t;
        u32 d = e < len ? memtune_digit(key[r], shift) : MEMTUNE_RADIX_NONE;
        u32 peers = __match_any_sync(0xffffffffu, d);
        u32 before = __popc(peers & ((1u << lane) - 1));
        // The group's lowest lane writes its size; digits of one warp differ.
        if (before == 0 && d != MEMTUNE_RADIX_NONE) {
            counts[cur][w][d] = __popc(peers);
        }
        __syncthreads();
        // Thread t for digit t: each warp's first rank in this round; and the next round's
        // counts zeroed (this round's readers of them finished before the barrier above).
        u32 sum = running[t];
        for (u32 i = 0; i < MEMTUNE_RADIX_WARPS; ++i) {
            u32 c = counts[cur][i][t];
            counts[cur][i][t] = sum;
            sum += c;
            counts[cur ^ 1][i][t] = 0;
        }
        running[t] = sum;
        __syncthreads();
        rank[r] = d != MEMTUNE_RADIX_NONE ? counts[cur][w][d] + before : 0;
    }

    // The tile's first slot of each digit (thread t holds digit t's count).
    u32 total;
    u32 first = memtune_block_exclusive(running[t], warp_sums, &total);
    running[t] = first;
    __syncthreads();

#pragma unroll
    for (u32 r = 0; r < MEMTUNE_RADIX_PER_THREAD; ++r) {
        u32 e = r * MEMTUNE_RADIX_THREADS + t;
        if (e < len) {
            stage[running[memtune_digit(key[r], shift)] + rank[r]] = key[r];
        }
    }
    __syncthreads();
    u32 out[MEMTUNE_RADIX_PER_THREAD];
#pragma unroll
    for (u32 r = 0; r < MEMTUNE_RADIX_PER_THREAD; ++r) {
        u32 s = r * MEMTUNE_RADIX_THREADS + t;
        if (s < len) {
            u64 k = stage[s];
            u32 d = memtune_digit(k, shift);
            out[r] = dest[d] + (s - running[d]);
            keys_out[out[r]] = k;
        }
    }
    __syncthreads();
    u32* stage_vals = reinterpret_cast<u32*>(stage);
#pragma unroll
    for (u32 r = 0; r < MEMTUNE_RADIX_PER_THREAD; ++r) {
        u32 e = r * MEMTUNE_RADIX_THREADS + t;
        if (e < len) {
            u32 v = GENERATE ? base + (u32)(tile + e) : vals[tile + e];
            stage_vals[running[memtune_digit(key[r], shift)] + rank[r]] = v;
        }
    }
    __syncthreads();
#pragma unroll
    for (u32 r = 0; r < MEMTUNE_RADIX_PER_THREAD; ++r) {
        u32 s = r * MEMTUNE_RADIX_THREADS + t;
        if (s < len) {
            vals_out[out[r]] = stage_vals[s];
        }
    }
}

// The first pass: values are the keys' global positions, base + index.
extern "C" __global__ void memtune_reuse_radix_scatter_first(const u64* keys, u64* keys_out,
                                                             u32* vals_out, u32 n, u32 shift,
                                                             const u32* offsets, u32 base)
{
    memtune_radix_scatter<true>(keys, 0, keys_out, vals_out, n, shift, offsets, base);
}

// A later pass: values carried from vals.
extern "C" __global__ void memtune_reuse_radix_scatter(const u64* keys, const u32* vals,
                                                       u64* keys_out, u32* vals_out, u32 n,
                                                       u32 shift, const u32* offsets)
{
    memtune_radix_scatter<false>(keys, vals, keys_out, vals_out, n, shift, offsets, 0);
}
