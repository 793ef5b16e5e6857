// user-histogram: a user's own group-by-key aggregate, tuned by memtune's autotuner.
//
//   SELECT key, sum(f(value)) FROM rows GROUP BY key
//
// Rows are two u32 columns, keys[] and values[]. Each row's key is hashed (lowbias32, see
// user_hist_hash) to a home slot of an open-addressing table of `slots` slots (a power of
// two); linear probing walks on from there, wrapping at the end of the table. A slot is
// {tag, pad, sum}: tag = key + 1 (0 marks an empty slot, so a zeroed table is empty; keys
// are below 2^32 - 1), sum = the 64-bit sum of the key's per-row contributions. A row's
// contribution is `work` integer mixing rounds on its value, then (x >> 8) + 1: an integer
// in [1, 2^24], so the sums are exact and do not depend on the order of the additions.
//
// TLB scopes: a pass handles only the rows whose home slot lies in [scope_begin,
// scope_end); its probe may step past scope_end (and wrap), which is short at the fill
// factor the host keeps (at most 0.5). Every row belongs to exactly one scope and every
// key to the scope of its home, so each key is inserted in one pass only, and it lands in
// one slot: the first slot on its probe path that is empty or holds it. The table's
// contents, as a set of (key, sum), are therefore the same for every split into passes;
// only which slot a key occupies may differ.
//   unscoped / naive: user_hist_insert_rows once per scope, each pass reading all rows.
//   copy: user_hist_insert_spill for the first scope, which also appends the rows of every
//         later scope to device buffers; user_hist_insert_spilled for each later scope
//         reads those buffers instead of the input.
//
// Entries (pointers are device-visible: device memory or mapped pinned host memory):
//   user_hist_fill(keys, values, n_rows, key_space, seed)
//       row i = splitmix64 of (seed, i): key = high 32 bits scaled to [0, key_space),
//       value = low 32 bits.
//   user_hist_clear(table, slots, counters)        every slot empty, counters zero
//   user_hist_insert_rows(keys, values, n_rows, table, slots, scope_begin, scope_end,
//                         work, counters)
//   user_hist_insert_spill(keys, values, n_rows, table, slots, scope_begin, scope_end,
//                          work, counters, spill_keys, spill_values)
//       as insert_rows, and appends the out-of-scope rows to spill_* (room for n_rows);
//       counters->spilled counts them
//   user_hist_insert_spilled(spill_keys, spill_values, table, slots, scope_begin,
//                            scope_end, work, counters)
//       as insert_rows over the counters->spilled spilled rows
//   user_hist_digest(table, slots, counters, out)
//       out[0] += groups, out[1] += wrapping sum of user_hist_digest_mix(key, sum),
//       out[2] += the sum of all sums; out[3] = counters->dropped (rows that found no
//       slot: the table was too small and the result is wrong). `out` starts zeroed.
// Launch: 1-D grid-stride loops; 1-D blocks of a multiple of 32 threads (the spill pass
// votes per warp), at most USER_HIST_BLOCK.
//
// No headers: NVRTC compiles this file alone. The CPU model is src/reference.rs.

#define USER_HIST_BLOCK 256

struct user_hist_slot {
    unsigned int tag;
    unsigned int pad;
    unsigned long long sum;
};

struct user_hist_counters {
    unsigned long long spilled;
    unsigned long long dropped;
};

// splitmix64's output function.
__device__ __forceinline__ unsigned long long user_hist_mix64(unsigned long long z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// lowbias32 (Wellons): the key's hash.
__device__ __forceinline__ unsigned int user_hist_hash(unsigned int x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

// The per-row work: `work` multiply-xorshift rounds, then a contribution in [1, 2^24].
__device__ __forceinline__ unsigned long long user_hist_contribution(unsigned int v,
                                                                    unsigned int work)
{
    unsigned int x = v;
    for (unsigned int w = 0; w < work; ++w) {
        x = x * 0x2c1b3c6du + 0x297a2d39u;
        x ^= x >> 13;
    }
    return (unsigned long long)(x >> 8) + 1ull;
}

__device__ __forceinline__ unsigned long long user_hist_digest_mix(unsigned int key,
                                                                  unsigned long long sum)
{
    return user_hist_mix64(sum + (unsigned long long)key * 0x9e3779b97f4a7c15ull);
}

// Adds `add` to key's slot, claiming the first empty slot on its probe path from `home`.
__device__ void user_hist_insert(unsigned int key, unsigned long long home,
                                 unsigned long long add, user_hist_slot* table,
                                 unsigned long long slots, user_hist_counters* counters)
{
    unsigned int tag = key + 1u;
    unsigned long long mask = slots - 1;
    unsigned long long s = home;
    for (unsigned long long probes = 0; probes < slots; ++probes) {
        // A claimed slot keeps its tag, so a read that sees a tag is final; one that sees
        // an empty slot may be stale, which the CAS settles.
        unsigned int seen = table[s].tag;
        if (seen == 0u) {
            seen = atomicCAS(&table[s].tag, 0u, tag);
            if (seen == 0u) {
                seen = tag;
            }
        }
        if (seen == tag) {
            atomicAdd(&table[s].sum, add);
            return;
        }
        s = (s + 1) & mask;
    }
    atomicAdd(&counters->dropped, 1ull);
}

__device__ __forceinline__ unsigned long long user_hist_home(unsigned int key,
                                                            unsigned long long slots)
{
    // slots <= 2^32, so the mask fits 32 bits.
    return (unsigned long long)(user_hist_hash(key) & (unsigned int)(slots - 1));
}

// Inserts the in-scope rows of [0, n). Iterates per warp (base = the warp's first row) and
// reconverges after the inserts, so every key load is one coalesced warp-wide read.
__device__ __forceinline__ void user_hist_pass(const unsigned int* keys,
                                               const unsigned int* values,
                                               unsigned long long n, user_hist_slot* table,
                                               unsigned long long slots,
                                               unsigned long long scope_begin,
                                               unsigned long long scope_end,
                                               unsigned int work,
                                               user_hist_counters* counters)
{
    unsigned int lane = threadIdx.x & 31;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long base =
             (unsigned long long)blockIdx.x * blockDim.x + (threadIdx.x - lane);
         base < n; base += stride) {
        unsigned long long i = base + lane;
        if (i < n) {
            unsigned int key = keys[i];
            unsigned long long home = user_hist_home(key, slots);
            if (home >= scope_begin && home < scope_end) {
                unsigned long long add = user_hist_contribution(values[i], work);
                user_hist_insert(key, home, add, table, slots, counters);
            }
        }
        __syncwarp();
    }
}

extern "C" __global__ void user_hist_fill(unsigned int* keys, unsigned int* values,
                                          unsigned long long n_rows,
                                          unsigned long long key_space,
                                          unsigned long long seed)
{
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n_rows; i += stride) {
        unsigned long long z = user_hist_mix64(seed + (i + 1) * 0x9e3779b97f4a7c15ull);
        keys[i] = (unsigned int)(((z >> 32) * key_space) >> 32);
        values[i] = (unsigned int)z;
    }
}

extern "C" __global__ void user_hist_clear(user_hist_slot* table, unsigned long long slots,
                                           user_hist_counters* counters)
{
    unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = first; i < slots; i += stride) {
        table[i].tag = 0u;
        table[i].pad = 0u;
        table[i].sum = 0ull;
    }
    if (first == 0) {
        counters->spilled = 0ull;
        counters->dropped = 0ull;
    }
}

extern "C" __global__ void __launch_bounds__(USER_HIST_BLOCK)
    user_hist_insert_rows(const unsigned int* keys, const unsigned int* values,
                          unsigned long long n_rows, user_hist_slot* table,
                          unsigned long long slots, unsigned long long scope_begin,
                          unsigned long long scope_end, unsigned int work,
                          user_hist_counters* counters)
{
    user_hist_pass(keys, values, n_rows, table, slots, scope_begin, scope_end, work,
                   counters);
}

extern "C" __global__ void __launch_bounds__(USER_HIST_BLOCK)
    user_hist_insert_spill(const unsigned int* keys, const unsigned int* values,
                           unsigned long long n_rows, user_hist_slot* table,
                           unsigned long long slots, unsigned long long scope_begin,
                           unsigned long long scope_end, unsigned int work,
                           user_hist_counters* counters, unsigned int* spill_keys,
                           unsigned int* spill_values)
{
    unsigned int lane = threadIdx.x & 31;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    // Per warp, so that all 32 lanes stay in the loop together and can vote; lanes past
    // the end take part with valid = false.
    for (unsigned long long base =
             (unsigned long long)blockIdx.x * blockDim.x + (threadIdx.x - lane);
         base < n_rows; base += stride) {
        unsigned long long i = base + lane;
        bool valid = i < n_rows;
        unsigned int key = valid ? keys[i] : 0u;
        unsigned int value = valid ? values[i] : 0u;
        unsigned long long home = user_hist_home(key, slots);
        bool in_scope = valid && home >= scope_begin && home < scope_end;
        bool spilling = valid && !in_scope;
        // One append counter update per warp.
        unsigned int ballot = __ballot_sync(0xffffffffu, spilling);
        if (ballot != 0u) {
            unsigned long long at = 0;
            if (lane == 0) {
                at = atomicAdd(&counters->spilled, (unsigned long long)__popc(ballot));
            }
            at = __shfl_sync(0xffffffffu, at, 0);
            if (spilling) {
                unsigned long long to = at + __popc(ballot & ((1u << lane) - 1u));
                spill_keys[to] = key;
                spill_values[to] = value;
            }
        }
        if (in_scope) {
            user_hist_insert(key, home, user_hist_contribution(value, work), table, slots,
                             counters);
        }
        __syncwarp();
    }
}

extern "C" __global__ void __launch_bounds__(USER_HIST_BLOCK)
    user_hist_insert_spilled(const unsigned int* spill_keys, const unsigned int* spill_values,
                             user_hist_slot* table, unsigned long long slots,
                             unsigned long long scope_begin, unsigned long long scope_end,
                             unsigned int work, user_hist_counters* counters)
{
    // Written by the spill pass, which finished before this launch began.
    unsigned long long n = counters->spilled;
    user_hist_pass(spill_keys, spill_values, n, table, slots, scope_begin, scope_end, work,
                   counters);
}

extern "C" __global__ void __launch_bounds__(USER_HIST_BLOCK)
    user_hist_digest(const user_hist_slot* table, unsigned long long slots,
                     const user_hist_counters* counters, unsigned long long* out)
{
    unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long groups = 0, mix = 0, total = 0;
    for (unsigned long long i = first; i < slots; i += stride) {
        unsigned int tag = table[i].tag;
        if (tag != 0u) {
            unsigned long long sum = table[i].sum;
            groups += 1;
            mix += user_hist_digest_mix(tag - 1u, sum);
            total += sum;
        }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        groups += __shfl_down_sync(0xffffffffu, groups, offset);
        mix += __shfl_down_sync(0xffffffffu, mix, offset);
        total += __shfl_down_sync(0xffffffffu, total, offset);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(out, groups);
        atomicAdd(out + 1, mix);
        atomicAdd(out + 2, total);
    }
    if (first == 0) {
        out[3] = counters->dropped;
    }
}
