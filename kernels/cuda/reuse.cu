// Exact reuse distances from next uses (exact-gpu). The method, and a CPU model of these
// kernels step for step, are in runtime/core/src/reuse/nextuse.rs:
//   1. sort the references stably by item (reuse_radix.cu): next uses;
//   2. merge-sort the next uses, each left-run entry counting the right-run entries below
//      it; the distance of the use at i = next[p] is i - p - 1 - that count. Each entry
//      carries v = p + count beside its next use, so the distance is next - 1 - v.
// Tiles of MEMTUNE_REUSE_SORT_TILE entries are sorted in shared memory, each entry placed
// by one binary search in the other run; the merge levels above them find each output's
// source by merge path, a block of MEMTUNE_REUSE_TILE outputs at a time.
//
// No #include: NVRTC compiles this without any CUDA headers. Sizes: n < 2^31 entries.

typedef unsigned long long u64;
typedef unsigned int u32;

// Threads of a block of every kernel here, and outputs of a block of the merge levels.
#define MEMTUNE_REUSE_TILE 1024
// Entries of a tile of the shared-memory sort: each thread places SORT_PER_THREAD a level.
#define MEMTUNE_REUSE_SORT_TILE 4096
#define MEMTUNE_REUSE_SORT_PER_THREAD (MEMTUNE_REUSE_SORT_TILE / MEMTUNE_REUSE_TILE)
static_assert(MEMTUNE_REUSE_SORT_TILE % MEMTUNE_REUSE_TILE == 0 &&
                  (MEMTUNE_REUSE_SORT_TILE & (MEMTUNE_REUSE_SORT_TILE - 1)) == 0,
              "the merge levels start at a width of whole merge tiles, doubling");
// A next use at or above the trace's length marks a last use (n + p).

// Entries of run[0..len) below key (strict) or at most key.
template <typename K>
__device__ __forceinline__ u32 memtune_rank(const K* run, u32 len, K key, bool strict)
{
    u32 lo = 0, hi = len;
    while (lo < hi) {
        u32 mid = (lo + hi) >> 1;
        K v = run[mid];
        bool before = strict ? (v < key) : (v <= key);
        if (before) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// Where entry i of a level of `width`-long runs over n entries goes, and what it gains.
__device__ __forceinline__ u32 memtune_place(const u32* keys, u32 i, u32 n, u32 width,
                                             u32* gained)
{
    u32 start = i / (2 * width) * (2 * width);
    u32 mid = start + width < n ? start + width : n;
    u32 end = start + 2 * width < n ? start + 2 * width : n;
    u32 key = keys[i];
    if (i < mid) {
        u32 r = memtune_rank(keys + mid, end - mid, key, true);
        *gained = r;
        return i + r;
    }
    u32 r = memtune_rank(keys + start, mid - start, key, false);
    *gained = 0;
    return start + (i - mid) + r;
}

// Of the first d entries of the stable merge of a[0..la) and b[0..lb) (a's entries first
// on ties), how many come from a: the merge-path diagonal search.
__device__ __forceinline__ u32 memtune_diagonal(const u32* a, u32 la, const u32* b, u32 lb,
                                                u32 d)
{
    u32 lo = d > lb ? d - lb : 0;
    u32 hi = d < la ? d : la;
    while (lo < hi) {
        u32 mid = (lo + hi) >> 1;
        if (a[mid] <= b[d - 1 - mid]) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// The pair of runs of `width` (a multiple of TILE) that output tile `tile` falls in, and
// where that tile starts and ends along the pair's merge (diagonals d0, d1).
struct memtune_tile_span {
    u64 start, mid;
    u32 la, lb, d0, d1;
};

__device__ __forceinline__ memtune_tile_span memtune_span(u64 tile, u32 n, u32 width)
{
    memtune_tile_span s;
    u64 o0 = tile * MEMTUNE_REUSE_TILE;
    s.start = o0 / (2 * (u64)width) * (2 * (u64)width);
    s.mid = s.start + width < n ? s.start + width : n;
    u64 end = s.start + 2 * (u64)width < n ? s.start + 2 * (u64)width : n;
    s.la = (u32)(s.mid - s.start);
    s.lb = (u32)(end - s.mid);
    s.d0 = (u32)(o0 - s.start);
    s.d1 = s.d0 + MEMTUNE_REUSE_TILE < s.la + s.lb ? s.d0 + MEMTUNE_REUSE_TILE : s.la + s.lb;
    return s;
}

// Next uses within a part from its items sorted: next[p - base] for each global position
// p of the part; total + p for a use last in the part, whose count (the part's distinct
// items) is added into *lasts (one atomic per warp).
extern "C" __global__ void memtune_reuse_next(const u64* items, const u32* positions, u32 n,
                                              u32 base, u32 total, u32* next, u32* lasts)
{
    u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    bool last = false;
    if (k < n) {
        u32 p = positions[k];
        bool same = k + 1 < n && items[k + 1] == items[k];
        next[p - base] = same ? positions[k + 1] : total + p;
        last = !same;
    }
    u32 ballot = __ballot_sync(0xffffffffu, last);
    if ((threadIdx.x & 31) == 0 && ballot != 0) {
        atomicAdd(lasts, (u32)__popc(ballot));
    }
}

// A part's uses still without a next use take their item's first use in a later part
// (its items sorted, with positions).
extern "C" __global__ void memtune_reuse_resolve(const u64* items, const u32* positions, u32 n,
                                                 u32 base, u32 total, u32* next,
                                                 const u64* later_items,
                                                 const u32* later_positions, u32 later_n)
{
    u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) {
        return;
    }
    u32 slot = positions[k] - base;
    if (next[slot] < total) {
        return;
    }
    u64 item = items[k];
    u32 r = memtune_rank(later_items, later_n, item, true);
    if (r < later_n && later_items[r] == item) {
        next[slot] = later_positions[r];
    }
}

// Positions base..base+n: the values of a part whose items need no radix pass (all equal).
extern "C" __global__ void memtune_reuse_iota(u32* positions, u32 n, u32 base)
{
    u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) {
        positions[k] = base + (u32)k;
    }
}

// Step 2 within tiles: each tile of SORT_TILE next uses sorted in shared memory with
// v = its global position (base + index) plus the smaller next uses after it in the tile,
// in merge levels of width 1 to SORT_TILE / 2. Each level, every thread places its
// entries by one binary search each, reading the level's input, then (after a barrier)
// writes them to their places in the same arrays.
extern "C" __global__ void memtune_reuse_tile_next(u32* next, u32* v, u32 n, u32 base)
{
    __shared__ u32 sk[MEMTUNE_REUSE_SORT_TILE];
    __shared__ u32 sv[MEMTUNE_REUSE_SORT_TILE];
    u64 tile = (u64)blockIdx.x * MEMTUNE_REUSE_SORT_TILE;
    u32 t = threadIdx.x;
    u32 len = (u32)(n - tile < MEMTUNE_REUSE_SORT_TILE ? n - tile : MEMTUNE_REUSE_SORT_TILE);
#pragma unroll
    for (u32 r = 0; r < MEMTUNE_REUSE_SORT_PER_THREAD; ++r) {
        u32 e = r * MEMTUNE_REUSE_TILE + t;
        if (e < len) {
            sk[e] = next[tile + e];
            sv[e] = base + (u32)(tile + e);
        }
    }
    __syncthreads();
    for (u32 width = 1; width < MEMTUNE_REUSE_SORT_TILE; width *= 2) {
        u32 out[MEMTUNE_REUSE_SORT_PER_THREAD];
        u32 key[MEMTUNE_REUSE_SORT_PER_THREAD];
        u32 val[MEMTUNE_REUSE_SORT_PER_THREAD];
#pragma unroll
        for (u32 r = 0; r < MEMTUNE_REUSE_SORT_PER_THREAD; ++r) {
            u32 e = r * MEMTUNE_REUSE_TILE + t;
            if (e < len) {
                u32 gained;
                out[r] = memtune_place(sk, e, len, width, &gained);
                key[r] = sk[e];
                val[r] = sv[e] + gained;
            }
        }
        __syncthreads();
#pragma unroll
        for (u32 r = 0; r < MEMTUNE_REUSE_SORT_PER_THREAD; ++r) {
            u32 e = r * MEMTUNE_REUSE_TILE + t;
            if (e < len) {
                sk[out[r]] = key[r];
                sv[out[r]] = val[r];
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (u32 r = 0; r < MEMTUNE_REUSE_SORT_PER_THREAD; ++r) {
        u32 e = r * MEMTUNE_REUSE_TILE + t;
        if (e < len) {
            next[tile + e] = sk[e];
            v[tile + e] = sv[e];
        }
    }
}

// Merge path, first step: for each output tile of a level, how many left-run entries come
// before its start and before its end (cuts[2 tile], cuts[2 tile + 1]). One thread a tile,
// so the searches' dependent loads overlap across the GPU.
extern "C" __global__ void memtune_reuse_partition_next(const u32* next, u32* cuts, u32 n,
                                                        u32 width)
{
    u64 tile = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (tile * MEMTUNE_REUSE_TILE >= n) {
        return;
    }
    memtune_tile_span s = memtune_span(tile, n, width);
    const u32* a = next + s.start;
    const u32* b = next + s.mid;
    cuts[2 * tile] = memtune_diagonal(a, s.la, b, s.lb, s.d0);
    cuts[2 * tile + 1] = memtune_diagonal(a, s.la, b, s.lb, s.d1);
}

// Merge path, second step: one merge level from (next, v) into (next_out, v_out). Each
// block writes one tile of TILE consecutive outputs from the slices of the left and right
// runs its cuts name: it loads them into shared memory, and each thread finds its
// output's source by a diagonal search there. Reads and writes are contiguous. A
// left-run entry gains the right-run entries placed before it, which are all below it.
extern "C" __global__ void memtune_reuse_merge_next(const u32* next, const u32* v,
                                                    const u32* cuts, u32* next_out, u32* v_out,
                                                    u32 n, u32 width)
{
    __shared__ u32 sk[MEMTUNE_REUSE_TILE];
    __shared__ u32 sv[MEMTUNE_REUSE_TILE];
    memtune_tile_span s = memtune_span(blockIdx.x, n, width);
    u32 t = threadIdx.x;
    u32 a0 = cuts[2 * blockIdx.x], a1 = cuts[2 * blockIdx.x + 1];
    u32 na = a1 - a0;
    u32 b0 = s.d0 - a0, nb = (s.d1 - a1) - b0;
    if (t < na) {
        sk[t] = next[s.start + a0 + t];
        sv[t] = v[s.start + a0 + t];
    } else if (t < na + nb) {
        sk[t] = next[s.mid + b0 + (t - na)];
        sv[t] = v[s.mid + b0 + (t - na)];
    }
    __syncthreads();
    if (t >= na + nb) {
        return;
    }
    u32 i = memtune_diagonal(sk, na, sk + na, nb, t);
    u32 j = t - i;
    bool left = j >= nb || (i < na && sk[i] <= sk[na + j]);
    u64 out = (u64)blockIdx.x * MEMTUNE_REUSE_TILE + t;
    next_out[out] = left ? sk[i] : sk[na + j];
    v_out[out] = left ? sv[i] + b0 + j : sv[na + j];
}

// Adds to each entry's v the next uses of a later part (sorted) below its own.
// Only next uses in [later_base, total) can have any: the later part's next uses all lie
// above later_base, and a last use (total or more) gives no distance.
extern "C" __global__ void memtune_reuse_count_later(const u32* next, u32* v, u32 n,
                                                     const u32* later_next, u32 later_n,
                                                     u32 later_base, u32 total)
{
    u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) {
        u32 x = next[k];
        if (x >= later_base && x < total) {
            v[k] += memtune_rank(later_next, later_n, x, true);
        }
    }
}

// Counts the distance each next use gives its reference (next - 1 - v) into
// dense[distance] (a last use gives none), and keeps in *largest one past the largest
// distance counted (one atomic per warp: a single address taking one per thread would
// serialize the launch).
extern "C" __global__ void memtune_reuse_histogram(const u32* next, const u32* v, u32 n,
                                                   u32 total, u32* dense, u32* largest)
{
    u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u32 past = 0;
    if (k < n) {
        u32 x = next[k];
        if (x < total) {
            u32 d = x - 1 - v[k];
            atomicAdd(&dense[d], 1u);
            past = d + 1;
        }
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        u32 other = __shfl_xor_sync(0xffffffffu, past, offset);
        past = other > past ? other : past;
    }
    if ((threadIdx.x & 31) == 0 && past > 0) {
        atomicMax(largest, past);
    }
}

// Adds n counts of another part (copied here) into this part's.
extern "C" __global__ void memtune_reuse_add(u32* dense, const u32* other, u32 n)
{
    u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) {
        dense[k] += other[k];
    }
}
