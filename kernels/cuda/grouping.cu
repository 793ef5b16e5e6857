// Hash grouping, plain and TLB-scoped (Karnagel et al., DaMoN'17, sections 2.2 and 5.3):
//   SELECT value, count(*) FROM input GROUP BY value      (u32 keys)
// into an open-addressing table of (key, count) buckets: Murmur3's 32-bit finalizer
// (fmix32) picks a key's home bucket, linear probing walks on from there, atomicCAS
// claims an empty bucket and atomicAdd counts. The host sizes the table for a fill
// factor of at most 0.5: capacity = a power of two >= 2 x distinct keys, at most 2^32.
//
// Empty buckets hold MEMTUNE_GROUPING_EMPTY_KEY (0xFFFFFFFF). That value is also a legal
// key; its occurrences go to counters->sentinel_count, never into a bucket (counted in
// the pass whose scope holds its home bucket, like any other key).
//
// TLB scopes: every pass handles only the keys whose home bucket lies in
// [p.scope_begin, p.scope_end), so its random table accesses stay inside one scope (a
// probe run may step past scope_end; it is short at fill factor 0.5). Each key belongs
// to exactly one scope, so passes over a partition of [0, capacity) build the same
// groups as one unscoped pass (p.scope_begin = 0, p.scope_end = capacity), though the
// bucket layout may differ.
//   naive: memtune_grouping_insert once per scope, each pass reading all input.
//   copy:  memtune_grouping_insert_spill for the first scope: it also appends the keys
//          of all other scopes to a device buffer; memtune_grouping_insert_spilled for
//          every further scope reads that buffer instead of the input.
// memtune_kernels::reference::grouping holds the CPU reference and a host model of
// these passes.
//
// Entries (pointers are device-visible addresses: device memory, or mapped pinned host
// memory for zero-copy input or table; the kernels do not care):
//   memtune_grouping_init(table, counters, p)
//       table[0, p.capacity) = {EMPTY, 0}; *counters = 0. Run before the first pass.
//   memtune_grouping_insert(keys, table, counters, p)
//       inserts those of keys[0, p.n_keys) whose home bucket is in the scope
//   memtune_grouping_insert_spill(keys, table, counters, spill, p)
//       as insert, and appends every other key to spill (room for p.n_keys keys);
//       counters->spilled counts them
//   memtune_grouping_insert_spilled(spill, table, counters, p)
//       as insert over spill[0, counters->spilled); p.n_keys is not used
// counters->dropped > 0 afterwards means the table was too small: the result is wrong.
//
// Launch: 1-D grid of any size (grid-stride loops), 1-D blocks whose size is a multiple
// of 32 (the spill pass appends with warp-wide ballots) and at most
// MEMTUNE_GROUPING_BLOCK.
//
// Defines (defaults in memtune_params.h):
//   MEMTUNE_GROUPING_BLOCK  the block size the kernels are built for (__launch_bounds__)
//
// No CUDA headers: NVRTC compiles this with only memtune_params.h.

#include "memtune_params.h"

static_assert(MEMTUNE_GROUPING_BLOCK % 32 == 0 && MEMTUNE_GROUPING_BLOCK <= 1024,
              "MEMTUNE_GROUPING_BLOCK must be a multiple of 32, at most 1024");

// Home bucket of `key`: fmix32, then p.work more rounds (h = fmix32(h + key)), the
// per-key work of a heavier hash; capacity is a power of two <= 2^32, so the mask fits
// 32 bits.
__device__ __forceinline__ unsigned int memtune_home(unsigned int key,
                                                     const memtune_grouping_params& p)
{
    unsigned int h = memtune_fmix32(key);
    for (unsigned int k = 0; k < p.work; ++k) {
        h = memtune_fmix32(h + key);
    }
    return h & (unsigned int)(p.capacity - 1);
}

__device__ __forceinline__ bool memtune_in_scope(unsigned int home,
                                                 const memtune_grouping_params& p)
{
    return home >= p.scope_begin && home < p.scope_end;
}

// Counts one occurrence of `key`, starting the probe at its home bucket.
__device__ void memtune_group_insert(unsigned int key, unsigned int home,
                                     memtune_grouping_bucket* table,
                                     memtune_grouping_counters* counters,
                                     const memtune_grouping_params& p)
{
    if (key == MEMTUNE_GROUPING_EMPTY_KEY) {
        atomicAdd(&counters->sentinel_count, 1ull);
        return;
    }
    unsigned int mask = (unsigned int)(p.capacity - 1);
    unsigned int b = home;
    for (unsigned long long probes = 0; probes < p.capacity; ++probes) {
        // A claimed bucket never changes its key, so a plain read that sees a key is
        // final; one that sees EMPTY may be stale, which the CAS settles.
        unsigned int seen = table[b].key;
        if (seen == MEMTUNE_GROUPING_EMPTY_KEY) {
            seen = atomicCAS(&table[b].key, MEMTUNE_GROUPING_EMPTY_KEY, key);
            if (seen == MEMTUNE_GROUPING_EMPTY_KEY) {
                seen = key;
            }
        }
        if (seen == key) {
            atomicAdd(&table[b].count, 1u);
            return;
        }
        b = (b + 1) & mask;
    }
    atomicAdd(&counters->dropped, 1ull);
}

extern "C" __global__ void __launch_bounds__(MEMTUNE_GROUPING_BLOCK)
    memtune_grouping_init(memtune_grouping_bucket* table,
                          memtune_grouping_counters* counters,
                          memtune_grouping_params p)
{
    unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    // One 8-byte store a bucket ({EMPTY, 0}, key in the low half): over mapped host memory
    // the two 4-byte stores of the fields ran at 2-3 GB/s against 52 GB/s for this on an
    // H100, each a partial write across the link.
    static_assert(sizeof(memtune_grouping_bucket) == 8, "a bucket is one 8-byte word");
    unsigned long long* words = reinterpret_cast<unsigned long long*>(table);
    for (unsigned long long i = first; i < p.capacity; i += stride) {
        words[i] = (unsigned long long)MEMTUNE_GROUPING_EMPTY_KEY;
    }
    if (first == 0) {
        counters->sentinel_count = 0;
        counters->spilled = 0;
        counters->dropped = 0;
    }
}

// Inserts the in-scope keys of keys[0, n). Iterates per warp (base = the warp's first
// index) and reconverges after the inserts, so every key load is one coalesced warp-wide
// read: lanes left to drift apart by their probe loops turn the next loads into scattered
// 4-byte reads, which over zero-copy host memory halved an H200's grouping throughput.
__device__ __forceinline__ void memtune_group_pass(const unsigned int* keys,
                                                   unsigned long long n,
                                                   memtune_grouping_bucket* table,
                                                   memtune_grouping_counters* counters,
                                                   const memtune_grouping_params& p)
{
    unsigned int lane = threadIdx.x & 31;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x + (threadIdx.x - lane);
         base < n; base += stride) {
        unsigned long long i = base + lane;
        if (i < n) {
            unsigned int key = keys[i];
            unsigned int home = memtune_home(key, p);
            if (memtune_in_scope(home, p)) {
                memtune_group_insert(key, home, table, counters, p);
            }
        }
        __syncwarp();
    }
}

extern "C" __global__ void __launch_bounds__(MEMTUNE_GROUPING_BLOCK)
    memtune_grouping_insert(const unsigned int* keys, memtune_grouping_bucket* table,
                            memtune_grouping_counters* counters, memtune_grouping_params p)
{
    memtune_group_pass(keys, p.n_keys, table, counters, p);
}

extern "C" __global__ void __launch_bounds__(MEMTUNE_GROUPING_BLOCK)
    memtune_grouping_insert_spill(const unsigned int* keys, memtune_grouping_bucket* table,
                                  memtune_grouping_counters* counters, unsigned int* spill,
                                  memtune_grouping_params p)
{
    unsigned int lane = threadIdx.x & 31;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    // Iterate per warp (base = the warp's first index) so all 32 lanes stay in the loop
    // together and can vote; lanes past the end take part with valid = false.
    for (unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x + (threadIdx.x - lane);
         base < p.n_keys; base += stride) {
        unsigned long long i = base + lane;
        bool valid = i < p.n_keys;
        unsigned int key = valid ? keys[i] : 0;
        unsigned int home = memtune_home(key, p);
        bool in_scope = memtune_in_scope(home, p);
        // One atomicAdd per warp on the shared append counter instead of one per key.
        unsigned int spilling = __ballot_sync(0xffffffffu, valid && !in_scope);
        if (spilling != 0) {
            unsigned long long slot = 0;
            if (lane == 0) {
                slot = atomicAdd(&counters->spilled, (unsigned long long)__popc(spilling));
            }
            slot = __shfl_sync(0xffffffffu, slot, 0);
            if (valid && !in_scope) {
                spill[slot + __popc(spilling & ((1u << lane) - 1))] = key;
            }
        }
        if (valid && in_scope) {
            memtune_group_insert(key, home, table, counters, p);
        }
    }
}

extern "C" __global__ void __launch_bounds__(MEMTUNE_GROUPING_BLOCK)
    memtune_grouping_insert_spilled(const unsigned int* spill, memtune_grouping_bucket* table,
                                    memtune_grouping_counters* counters,
                                    memtune_grouping_params p)
{
    // Written by the spill pass, which finished before this launch began.
    unsigned long long n = counters->spilled;
    memtune_group_pass(spill, n, table, counters, p);
}
