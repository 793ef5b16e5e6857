// HP-RDA (Cui, Yi, Xue, Wang, Yang, Feng: "A Highly Parallel Reuse Distance Analysis
// Algorithm on GPUs") on the GPU. runtime/core/src/reuse/hprda_model.rs is this method on
// the CPU, one function per kernel, and its tests check it gives the CPU form's histogram
// (runtime/core/src/reuse/hprda.rs); runtime/src/reuse/hprda/ runs these kernels.
//
//   preprocessing   keep_sums, scan_tiles, compact: the references that differ from the
//                   one before them
//   each launch     thread: one thread per sub-trace of ST references (hash table, local
//                   array of live bits, access_info records, local distances)
//                   tile_sums, scan_tiles, scan_apply: C, the counts' prefix sum
//                   gather_records, then reuse_radix.cu's stable radix sort by item: each
//                   item's records together in sub-trace order (the seed's access_info
//                   lists)
//                   gather_sorted, block_firsts, and the scans again: Q, the prefix sum of
//                   the blocks' exact distinct counts over every launch so far
//                   merge: block- and grid-level distances (formula 1); store: the grid
//                   table, for the next launches, in a kernel of its own
//
// Every count is an integer sum and every distance a function of the records alone, so the
// histogram does not depend on the order threads run in. Sizes: at most 2^31 - 1 kept
// references, 2^28 in a launch. Element-wise kernels take blocks of a multiple of 32
// threads; the scans use a block as a tile. No #include: NVRTC compiles this without any
// CUDA headers.

typedef unsigned long long u64;
typedef unsigned int u32;

// Distances below this are counted in shared memory by the thread kernel.
#define MEMTUNE_HPRDA_SMALL 1024
// No distance, for the warp-aggregated counts.
#define MEMTUNE_HPRDA_NONE 0xffffffffu

// Multiply-fold hash: every key bit reaches the low bits that pick a slot.
__device__ __forceinline__ u64 memtune_hprda_hash(u64 key)
{
    const u64 k = 0x9E3779B97F4A7C15ull;
    return (key * k) ^ __umul64hi(key, k);
}

// Exclusive prefix sum of one value per thread over the block; *total gets the block's sum.
template <typename T>
__device__ __forceinline__ T memtune_hprda_block_scan(T v, T* total)
{
    __shared__ T sums[32];
    u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    T x = v;
    for (u32 o = 1; o < 32; o <<= 1) {
        T y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) {
            x += y;
        }
    }
    if (lane == 31) {
        sums[warp] = x;
    }
    __syncthreads();
    if (warp == 0) {
        T w = lane < (blockDim.x >> 5) ? sums[lane] : (T)0;
        for (u32 o = 1; o < 32; o <<= 1) {
            T y = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= o) {
                w += y;
            }
        }
        sums[lane] = w;
    }
    __syncthreads();
    T before = warp == 0 ? (T)0 : sums[warp - 1];
    *total = sums[31];
    __syncthreads();
    return before + x - v;
}

// Counts each lane's distance d (MEMTUNE_HPRDA_NONE: none) into dense[d], one atomic per
// distinct distance of the warp, and keeps in *largest one past the largest distance
// counted. A distance past the histogram (a bug) is counted in *overflow instead. Every
// lane of the warp calls; dense_len is below MEMTUNE_HPRDA_NONE.
__device__ __forceinline__ void memtune_hprda_count_warp(u32 d, u32* dense, u32 dense_len,
                                                         u32* largest, u32* overflow)
{
    u32 lane = threadIdx.x & 31;
    u32 peers = __match_any_sync(0xffffffffu, d);
    if (d != MEMTUNE_HPRDA_NONE && lane == (u32)(__ffs(peers) - 1)) {
        if (d < dense_len) {
            atomicAdd(&dense[d], (u32)__popc(peers));
        } else {
            atomicAdd(overflow, (u32)__popc(peers));
        }
    }
    u32 past = d < dense_len ? d + 1 : 0;
    for (int o = 16; o > 0; o /= 2) {
        u32 other = __shfl_xor_sync(0xffffffffu, past, o);
        past = other > past ? other : past;
    }
    if (lane == 0 && past > 0) {
        atomicMax(largest, past);
    }
}

// --- preprocessing -------------------------------------------------------------------

// The kept references of each tile (a block's worth) of the raw trace: one that differs
// from the one before it (the paper's preprocessing; a repeat has distance 0).
extern "C" __global__ void memtune_hprda_keep_sums(const u64* raw, u64 n, u32* sums)
{
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    int keep = i < n && (i == 0 || raw[i] != raw[i - 1]);
    u32 total = (u32)__syncthreads_count(keep);
    if (threadIdx.x == 0) {
        sums[blockIdx.x] = total;
    }
}

// Writes each kept reference to its place: its tile's offset plus the kept ones before it
// in the tile.
extern "C" __global__ void memtune_hprda_compact(const u64* raw, u64 n, const u64* offsets,
                                                 u64* kept)
{
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 v = i < n ? raw[i] : 0;
    u32 keep = i < n && (i == 0 || raw[i - 1] != v);
    u32 total;
    u32 before = memtune_hprda_block_scan<u32>(keep, &total);
    if (keep) {
        kept[offsets[blockIdx.x] + before] = v;
    }
}

// --- prefix sums (C over sub-traces, Q over blocks, offsets over tiles) -----------------

// The sum of each tile (a block's worth) of in[0..n). Every sum used here is at most a
// launch's references, so a tile's fits in 32 bits.
extern "C" __global__ void memtune_hprda_tile_sums(const u32* in, u64 n, u32* sums)
{
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u32 total;
    memtune_hprda_block_scan<u32>(i < n ? in[i] : 0u, &total);
    if (threadIdx.x == 0) {
        sums[blockIdx.x] = total;
    }
}

// One block: offsets[k] = base + the sums of tiles before k, offsets[tiles] = base + all.
extern "C" __global__ void memtune_hprda_scan_tiles(const u32* sums, u64 tiles, u64 base,
                                                    u64* offsets)
{
    u64 carry = base;
    for (u64 c = 0; c < tiles; c += blockDim.x) {
        u64 k = c + threadIdx.x;
        u64 v = k < tiles ? sums[k] : 0;
        u64 total;
        u64 before = memtune_hprda_block_scan<u64>(v, &total);
        if (k < tiles) {
            offsets[k] = carry + before;
        }
        carry += total;
    }
    if (threadIdx.x == 0) {
        offsets[tiles] = carry;
    }
}

// out[i] = the tile's offset + the values before i in its tile; out[n] = the total.
extern "C" __global__ void memtune_hprda_scan_apply(const u32* in, u64 n, const u64* offsets,
                                                    u64* out)
{
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u32 v = i < n ? in[i] : 0;
    u32 total;
    u64 at = offsets[blockIdx.x] + memtune_hprda_block_scan<u32>(v, &total);
    if (i < n) {
        out[i] = at;
    }
    if (i + 1 == n) {
        out[n] = at + v;
    }
}

// --- thread-level analysis -----------------------------------------------------------

// Live bits of live[] in positions lo..hi.
__device__ __forceinline__ u32 memtune_hprda_live(const u32* live, u32 lo, u32 hi)
{
    if (lo >= hi) {
        return 0;
    }
    u32 wl = lo >> 5, wh = (hi - 1) >> 5;
    u32 lo_mask = 0xffffffffu << (lo & 31);
    u32 hi_mask = 0xffffffffu >> (31 - ((hi - 1) & 31));
    if (wl == wh) {
        return __popc(live[wl] & lo_mask & hi_mask);
    }
    u32 s = __popc(live[wl] & lo_mask) + __popc(live[wh] & hi_mask);
    for (u32 w = wl + 1; w < wh; w++) {
        s += __popc(live[w]);
    }
    return s;
}

// One thread per sub-trace t of st references of trace[0..n) (Figure 5c). Its hash table,
// tables[t * table_slots ..] (a power of two of 16-byte slots, zeroed: key, then the first-
// use index << 32 | latest position + 1, 0 for a free slot), maps an item to its latest
// use; its local array is one live bit per position, set at a use and cleared when the item
// is used again, so a reuse's distance is the live bits between its two uses. The bits are
// in shared memory (live_shared: blockDim.x arrays of words + 1 words, after the small
// counts) or at live_global[t * words ..]. It leaves, at slot first of the sub-trace's
// records, each distinct item and its latest (live bits after its last use), and its
// distinct count in counts[t]. Distances below MEMTUNE_HPRDA_SMALL are counted in shared
// memory, the others in dense. Dynamic shared memory: MEMTUNE_HPRDA_SMALL words, plus the
// bits when live_shared.
extern "C" __global__ void memtune_hprda_thread(const u64* __restrict__ trace, u32 n, u32 st,
                                                u64* tables, u32 table_slots, u32* live_global,
                                                u32 words, u32 live_shared, u64* rec_item,
                                                u32* rec_latest, u32* counts, u32* dense,
                                                u32 dense_len, u32* largest, u32* overflow)
{
    extern __shared__ u32 memtune_hprda_shared[];
    u32* small = memtune_hprda_shared;
    for (u32 i = threadIdx.x; i < MEMTUNE_HPRDA_SMALL; i += blockDim.x) {
        small[i] = 0;
    }
    __syncthreads();
    u32 subs = (n + st - 1) / st;
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u32 past = 0;
    if (t < subs) {
        u32* live = live_shared ? small + MEMTUNE_HPRDA_SMALL + threadIdx.x * (words + 1)
                                : live_global + t * words;
        u64 base = t * st;
        u32 len = n - base < st ? (u32)(n - base) : st;
        u32 used = (len + 31) / 32;
        for (u32 w = 0; w < used; w++) {
            live[w] = 0;
        }
        ulonglong2* slots = (ulonglong2*)tables + t * table_slots;
        u32 mask = table_slots - 1;
        const u64* __restrict__ sub = trace + base;
        u32 distinct = 0;
        for (u32 i = 0; i < len; i++) {
            u64 v = sub[i];
            u32 h = (u32)memtune_hprda_hash(v) & mask;
            while (true) {
                ulonglong2 s = slots[h];
                u32 latest1 = (u32)s.y;
                if (latest1 == 0) {
                    // A first use: its record goes to slot `distinct`.
                    ulonglong2 fresh;
                    fresh.x = v;
                    fresh.y = ((u64)distinct << 32) | (i + 1);
                    slots[h] = fresh;
                    rec_item[base + distinct] = v;
                    distinct++;
                    break;
                }
                if (s.x == v) {
                    u32 p = latest1 - 1;
                    u32 d = memtune_hprda_live(live, p + 1, i);
                    if (d < MEMTUNE_HPRDA_SMALL) {
                        atomicAdd(&small[d], 1u);
                    } else if (d < dense_len) {
                        atomicAdd(&dense[d], 1u);
                    } else {
                        atomicAdd(overflow, 1u);
                    }
                    if (d < dense_len && d + 1 > past) {
                        past = d + 1;
                    }
                    live[p >> 5] &= ~(1u << (p & 31));
                    slots[h].y = (s.y & 0xffffffff00000000ull) | (i + 1);
                    break;
                }
                h = (h + 1) & mask;
            }
            live[i >> 5] |= 1u << (i & 31);
        }
        counts[t] = distinct;
        // latest: the live bits after each item's last use, walking them from the end.
        u32 running = 0;
        for (u32 w = used; w-- > 0;) {
            u32 bits = live[w];
            while (bits != 0) {
                u32 b = 31 - __clz(bits);
                bits &= ~(1u << b);
                u64 v = sub[w * 32 + b];
                u32 h = (u32)memtune_hprda_hash(v) & mask;
                while (slots[h].x != v || (u32)slots[h].y == 0) {
                    h = (h + 1) & mask;
                }
                rec_latest[base + (u32)(slots[h].y >> 32)] = running;
                running++;
            }
        }
    }
    __syncthreads();
    for (u32 i = threadIdx.x; i < MEMTUNE_HPRDA_SMALL; i += blockDim.x) {
        u32 c = small[i];
        if (c != 0) {
            if (i < dense_len) {
                atomicAdd(&dense[i], c);
            } else {
                atomicAdd(overflow, c);
            }
        }
    }
    if (past > 0) {
        atomicMax(largest, past);
    }
}

// --- the access_info lists -----------------------------------------------------------

// Record slot j (sub-trace j / st, first-use index j % st) of a launch of n references, if
// taken, goes to c[t] + its index: keys[] the item, origin[] where it came from.
extern "C" __global__ void memtune_hprda_gather_records(const u64* rec_item, const u32* counts,
                                                        const u64* c, u32 n, u32 st, u64* keys,
                                                        u32* origin)
{
    u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) {
        return;
    }
    u32 t = (u32)(j / st), r = (u32)(j % st);
    if (r < counts[t]) {
        u64 k = c[t] + r;
        keys[k] = rec_item[j];
        origin[k] = (u32)j;
    }
}

// The records in item order (positions: where the sort took each from): sub-trace, first
// and latest of each.
extern "C" __global__ void memtune_hprda_gather_sorted(const u32* positions, const u32* origin,
                                                       const u32* rec_latest, u32 r, u32 st,
                                                       u32* tk, u32* fk, u32* lk)
{
    u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= r) {
        return;
    }
    u32 o = origin[positions[k]];
    tk[k] = o / st;
    fk[k] = o % st;
    lk[k] = rec_latest[o];
}

// A record whose item's record before it is in another block (or is none) opens its item
// in its block: block_counts[b] counts them, the block's exact distinct items.
extern "C" __global__ void memtune_hprda_block_firsts(const u64* keys, const u32* tk, u32 r,
                                                      u32 nb, u32* block_counts)
{
    u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u32 b = MEMTUNE_HPRDA_NONE;
    if (k < r) {
        u32 own = tk[k] / nb;
        if (k == 0 || keys[k - 1] != keys[k] || tk[k - 1] / nb != own) {
            b = own;
        }
    }
    u32 peers = __match_any_sync(0xffffffffu, b);
    if (b != MEMTUNE_HPRDA_NONE && (threadIdx.x & 31) == (u32)(__ffs(peers) - 1)) {
        atomicAdd(&block_counts[b], (u32)__popc(peers));
    }
}

// --- block and grid level ------------------------------------------------------------

// The grid table: mask + 2 slots of (key, value); key 0 marks a free slot, so item 0 lives
// in the extra slot mask + 1, whose key word is 1 once it is taken. A value is
// Q[b + 1] - latest_b (wrapping) of the item's last block so far.
__device__ __forceinline__ u64* memtune_hprda_grid_slot(u64* grid, u64 mask, u64 v, bool* found)
{
    if (v == 0) {
        u64* s = grid + 2 * (mask + 1);
        *found = s[0] != 0;
        return s;
    }
    u64 h = memtune_hprda_hash(v) & mask;
    while (true) {
        u64* s = grid + 2 * h;
        u64 key = s[0];
        if (key == v || key == 0) {
            *found = key == v;
            return s;
        }
        h = (h + 1) & mask;
    }
}

// The last record k of its item in its block: its latest over the block's sub-traces
// after it (formula 1 at block level).
__device__ __forceinline__ u64 memtune_hprda_latest_block(const u32* tk, const u32* lk, u64 k,
                                                          u32 nb, u32 subs, const u64* c)
{
    u32 t = tk[k];
    u32 end = (t / nb + 1) * nb;
    end = end < subs ? end : subs;
    return (u64)lk[k] + c[end] - c[t + 1];
}

// Every distance between sub-traces (records sorted by item, c over the launch's subs
// sub-traces, q over its blocks from the earlier launches' total): within a block,
// latest_i + c[j] - c[i + 1] + first_j; between blocks a < b, latest_a + q[b] - q[a + 1] +
// first_b at block level; an item's first record of the launch, q[b] + first_b - the
// value the grid table holds, if any. Reads the grid table only.
extern "C" __global__ void memtune_hprda_merge(const u64* keys, const u32* tk, const u32* fk,
                                               const u32* lk, u32 r, u32 nb, u32 subs,
                                               const u64* c, const u64* q, u64* grid,
                                               u64 grid_mask, u32* dense, u32 dense_len,
                                               u32* largest, u32* overflow)
{
    u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 d = ~0ull;
    if (k < r) {
        u64 v = keys[k];
        u32 t = tk[k], b = t / nb;
        u64 first_block = c[t] - c[(u64)b * nb] + fk[k];
        if (k > 0 && keys[k - 1] == v) {
            u32 tp = tk[k - 1], bp = tp / nb;
            if (bp == b) {
                d = (u64)lk[k - 1] + c[t] - c[tp + 1] + fk[k];
            } else {
                u64 latest = memtune_hprda_latest_block(tk, lk, k - 1, nb, subs, c);
                d = latest + q[b] - q[bp + 1] + first_block;
            }
        } else {
            bool found;
            u64* s = memtune_hprda_grid_slot(grid, grid_mask, v, &found);
            if (found) {
                d = q[b] + first_block - s[1];
            }
        }
    }
    u32 counted = d == ~0ull ? MEMTUNE_HPRDA_NONE
                             : (d < (u64)dense_len ? (u32)d : (u32)dense_len);
    memtune_hprda_count_warp(counted, dense, dense_len, largest, overflow);
}

// Each item's last record of the launch stores q[b + 1] - latest_b in the grid table;
// *distinct counts the items new to it.
extern "C" __global__ void memtune_hprda_store(const u64* keys, const u32* tk, const u32* lk,
                                               u32 r, u32 nb, u32 subs, const u64* c,
                                               const u64* q, u64* grid, u64 grid_mask,
                                               u64* distinct)
{
    u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    bool fresh = false;
    if (k < r && (k + 1 == r || keys[k + 1] != keys[k])) {
        u64 v = keys[k];
        u32 b = tk[k] / nb;
        u64 value = q[b + 1] - memtune_hprda_latest_block(tk, lk, k, nb, subs, c);
        if (v == 0) {
            u64* s = grid + 2 * (grid_mask + 1);
            fresh = s[0] == 0;
            s[0] = 1;
            s[1] = value;
        } else {
            // Only this thread stores v in this launch; other threads take other slots.
            u64 h = memtune_hprda_hash(v) & grid_mask;
            while (true) {
                u64* s = grid + 2 * h;
                u64 key = s[0];
                if (key == 0) {
                    key = atomicCAS(&s[0], 0ull, v);
                    fresh = key == 0;
                }
                if (key == 0 || key == v) {
                    s[1] = value;
                    break;
                }
                h = (h + 1) & grid_mask;
            }
        }
    }
    u32 ballot = __ballot_sync(0xffffffffu, fresh);
    if ((threadIdx.x & 31) == 0 && ballot != 0) {
        atomicAdd(distinct, (u64)__popc(ballot));
    }
}

// --- the overlap correction of the cross counts (hprda_adjust.rs's overlap_of) ----------

// Each tile's references and their total length ((l + 1) x count at distance l) of
// cross[0..n).
extern "C" __global__ void memtune_hprda_overlap_sums(const u32* cross, u64 n, u64* counts,
                                                      u64* lengths)
{
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 c = i < n ? cross[i] : 0;
    u64 total_c, total_l;
    memtune_hprda_block_scan<u64>(c, &total_c);
    memtune_hprda_block_scan<u64>((i + 1) * c, &total_l);
    if (threadIdx.x == 0) {
        counts[blockIdx.x] = total_c;
        lengths[blockIdx.x] = total_l;
    }
}

// Distance d less (d x below - sum) / s, rounded, within 0..m: the same IEEE operations as
// the CPU's, so both round alike (d x below < 2^62 for traces under 2^31 references).
__device__ __forceinline__ u64 memtune_hprda_overlap_of(u64 d, u64 below, u64 sum, u64 s,
                                                        u64 m)
{
    u64 p = d * below;
    double over = (double)(p > sum ? p - sum : 0ull);
    double top = (double)(m > 0 ? m - 1 : 0ull);
    double x = (double)d - over / (double)(s > 1 ? s : 1ull);
    x = fmin(fmax(x, 0.0), top);
    return (u64)round(x);
}

// adjusted[a] += cross[d] for every distance d of cross[0..n), a being d corrected by the
// distances l <= d - 2 (their count and total length: the tiles before, from count_off and
// len_off, then the block's exclusive scan, less distance d - 1). adjusted holds m counts.
extern "C" __global__ void memtune_hprda_overlap_apply(const u32* cross, u64 n,
                                                       const u64* count_off,
                                                       const u64* len_off, u64 s, u64 m,
                                                       u32* adjusted)
{
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 c = i < n ? cross[i] : 0;
    u64 total;
    u64 below = count_off[blockIdx.x] + memtune_hprda_block_scan<u64>(c, &total);
    u64 sum = len_off[blockIdx.x] + memtune_hprda_block_scan<u64>((i + 1) * c, &total);
    if (c == 0) {
        return;
    }
    if (i > 0) {
        u64 prev = cross[i - 1];
        below -= prev;
        sum -= i * prev;
    }
    atomicAdd(&adjusted[memtune_hprda_overlap_of(i, below, sum, s, m)], (u32)c);
}
