// Exact reuse distances from next uses (exact-gpu). The method, and a CPU model of these
// kernels step for step, are in runtime/core/src/reuse/nextuse.rs:
//   1. sort the references stably by item (tile sort, then merge levels): next uses;
//   2. merge-sort the next uses, each left-run entry counting the right-run entries below
//      it; the distance of the use at i = next[p] is i - p - 1 - that count.
// Tiles of TILE entries are sorted in shared memory, each entry placed by one binary search
// in the other run; the merge levels above them find each output's source by merge path.
//
// No #include: NVRTC compiles this without any CUDA headers. Sizes: n < 2^31 entries.

typedef unsigned long long u64;
typedef unsigned int u32;

// Entries per tile of the shared-memory sort; also the block size of every kernel here.
#define MEMTUNE_REUSE_TILE 1024
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
template <typename K>
__device__ __forceinline__ u32 memtune_place(const K* keys, u64 i, u64 n, u64 width, u32* gained)
{
    u64 start = i / (2 * width) * (2 * width);
    u64 mid = start + width < n ? start + width : n;
    u64 end = start + 2 * width < n ? start + 2 * width : n;
    K key = keys[i];
    if (i < mid) {
        u32 r = memtune_rank(keys + mid, (u32)(end - mid), key, true);
        *gained = r;
        return (u32)(i + r);
    }
    u32 r = memtune_rank(keys + start, (u32)(mid - start), key, false);
    *gained = 0;
    return (u32)(start + (i - mid) + r);
}

// Sorts each tile of MEMTUNE_REUSE_TILE entries in shared memory (levels of width 1 to
// TILE/2), counting as the merge levels do when `counts` is given.
template <typename K>
__device__ void memtune_tile_sort(K* keys, u32* aux, u32* counts, u32 n)
{
    __shared__ K sk[2][MEMTUNE_REUSE_TILE];
    __shared__ u32 sa[2][MEMTUNE_REUSE_TILE];
    __shared__ u32 sc[2][MEMTUNE_REUSE_TILE];
    u64 base = (u64)blockIdx.x * MEMTUNE_REUSE_TILE;
    u32 t = threadIdx.x;
    u32 len = (u32)(n - base < MEMTUNE_REUSE_TILE ? n - base : MEMTUNE_REUSE_TILE);
    if (t < len) {
        sk[0][t] = keys[base + t];
        sa[0][t] = aux[base + t];
        sc[0][t] = counts ? counts[base + t] : 0;
    }
    __syncthreads();
    int cur = 0;
    for (u32 width = 1; width < MEMTUNE_REUSE_TILE; width *= 2) {
        if (t < len) {
            u32 gained;
            u32 out = memtune_place(sk[cur], t, len, width, &gained);
            sk[cur ^ 1][out] = sk[cur][t];
            sa[cur ^ 1][out] = sa[cur][t];
            sc[cur ^ 1][out] = sc[cur][t] + gained;
        }
        __syncthreads();
        cur ^= 1;
    }
    if (t < len) {
        keys[base + t] = sk[cur][t];
        aux[base + t] = sa[cur][t];
        if (counts) {
            counts[base + t] = sc[cur][t];
        }
    }
}

// Of the first d entries of the stable merge of a[0..la) and b[0..lb) (a's entries first
// on ties), how many come from a: the merge-path diagonal search.
template <typename K>
__device__ __forceinline__ u32 memtune_diagonal(const K* a, u32 la, const K* b, u32 lb, u32 d)
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

// Merge path, first step: for each output tile of a level, how many left-run entries come
// before its start and before its end (cuts[2 tile], cuts[2 tile + 1]). One thread a tile,
// so the searches' dependent loads overlap across the GPU.
template <typename K>
__device__ void memtune_partition(const K* keys, u32* cuts, u32 n, u32 width)
{
    u64 tile = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (tile * MEMTUNE_REUSE_TILE >= n) {
        return;
    }
    memtune_tile_span s = memtune_span(tile, n, width);
    const K* a = keys + s.start;
    const K* b = keys + s.mid;
    cuts[2 * tile] = memtune_diagonal(a, s.la, b, s.lb, s.d0);
    cuts[2 * tile + 1] = memtune_diagonal(a, s.la, b, s.lb, s.d1);
}

// Merge path, second step: one merge level from (keys, aux, counts) into the *_out arrays.
// Each block writes one tile of TILE consecutive outputs from the slices of the left and
// right runs its cuts name: it loads their keys into shared memory, and each thread finds
// its output's source by a diagonal search there. Reads and writes are contiguous. A
// left-run entry gains the right-run entries placed before it, which are all below it.
template <typename K>
__device__ void memtune_merge(const K* keys, const u32* aux, const u32* counts, const u32* cuts,
                              K* keys_out, u32* aux_out, u32* counts_out, u32 n, u32 width)
{
    __shared__ K sk[MEMTUNE_REUSE_TILE];
    memtune_tile_span s = memtune_span(blockIdx.x, n, width);
    u32 t = threadIdx.x;
    u32 a0 = cuts[2 * blockIdx.x], a1 = cuts[2 * blockIdx.x + 1];
    u32 na = a1 - a0;
    u32 b0 = s.d0 - a0, nb = (s.d1 - a1) - b0;
    if (t < na) {
        sk[t] = keys[s.start + a0 + t];
    } else if (t < na + nb) {
        sk[t] = keys[s.mid + b0 + (t - na)];
    }
    __syncthreads();
    if (t >= na + nb) {
        return;
    }
    u32 i = memtune_diagonal(sk, na, sk + na, nb, t);
    u32 j = t - i;
    bool left = j >= nb || (i < na && sk[i] <= sk[na + j]);
    u64 src = left ? s.start + a0 + i : s.mid + b0 + j;
    u64 out = (u64)blockIdx.x * MEMTUNE_REUSE_TILE + t;
    keys_out[out] = left ? sk[i] : sk[na + j];
    aux_out[out] = aux[src];
    if (counts) {
        counts_out[out] = counts[src] + (left ? b0 + j : 0);
    }
}

// Step 1: items (u64) with their global positions; blocks of TILE threads, one per entry.
extern "C" __global__ void memtune_reuse_tile_items(u64* items, u32* positions, u32 n)
{
    memtune_tile_sort<u64>(items, positions, 0, n);
}

extern "C" __global__ void memtune_reuse_partition_items(const u64* items, u32* cuts, u32 n,
                                                         u32 width)
{
    memtune_partition<u64>(items, cuts, n, width);
}

extern "C" __global__ void memtune_reuse_merge_items(const u64* items, const u32* positions,
                                                     const u32* cuts, u64* items_out,
                                                     u32* positions_out, u32 n, u32 width)
{
    memtune_merge<u64>(items, positions, 0, cuts, items_out, positions_out, 0, n, width);
}

// Next uses within a part from its items sorted: next[p - base] for each global position
// p of the part; total + p for a use last in the part.
extern "C" __global__ void memtune_reuse_next(const u64* items, const u32* positions, u32 n,
                                              u32 base, u32 total, u32* next)
{
    u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) {
        return;
    }
    u32 p = positions[k];
    bool same = k + 1 < n && items[k + 1] == items[k];
    next[p - base] = same ? positions[k + 1] : total + p;
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

// Positions base..base+n and zero counts: the entries of step 2 beside the next uses.
extern "C" __global__ void memtune_reuse_iota(u32* positions, u32* counts, u32 n, u32 base)
{
    u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) {
        positions[k] = base + (u32)k;
        counts[k] = 0;
    }
}

// Step 2: next uses (u32) with positions and counts of smaller next uses to the right.
extern "C" __global__ void memtune_reuse_tile_next(u32* next, u32* positions, u32* counts, u32 n)
{
    memtune_tile_sort<u32>(next, positions, counts, n);
}

extern "C" __global__ void memtune_reuse_partition_next(const u32* next, u32* cuts, u32 n,
                                                        u32 width)
{
    memtune_partition<u32>(next, cuts, n, width);
}

extern "C" __global__ void memtune_reuse_merge_next(const u32* next, const u32* positions,
                                                    const u32* counts, const u32* cuts,
                                                    u32* next_out, u32* positions_out,
                                                    u32* counts_out, u32 n, u32 width)
{
    memtune_merge<u32>(next, positions, counts, cuts, next_out, positions_out, counts_out, n,
                       width);
}

// Adds the next uses of a later part (sorted) below each entry's.
// Only next uses in [later_base, total) can have any: the later part's next uses all lie
// above later_base, and a last use (total or more) gives no distance.
extern "C" __global__ void memtune_reuse_count_later(const u32* next, u32* counts, u32 n,
                                                     const u32* later_next, u32 later_n,
                                                     u32 later_base, u32 total)
{
    u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) {
        u32 v = next[k];
        if (v >= later_base && v < total) {
            counts[k] += memtune_rank(later_next, later_n, v, true);
        }
    }
}

// Counts the distance each next use gives its reference into dense[distance] (a last use
// gives none), and keeps in *largest one past the largest distance counted (one atomic per
// warp: a single address taking one per thread would serialize the launch).
extern "C" __global__ void memtune_reuse_histogram(const u32* next, const u32* positions,
                                                   const u32* counts, u32 n, u32 total,
                                                   u32* dense, u32* largest)
{
    u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u32 past = 0;
    if (k < n) {
        u32 v = next[k];
        if (v < total) {
            u32 d = v - positions[k] - 1 - counts[k];
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
