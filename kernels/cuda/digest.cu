// Digests on the GPU: of a buffer's bits, so that checking two outputs for bitwise equality
// does not read them back (a 512³ f64 output is 1 GiB). Order-independent: the sum, mod
// 2^64, of mix(word index, word) over the 4-byte words; `memtune_kernels::digest::words`
// computes the same on the CPU.
//
// No CUDA headers: NVRTC compiles this with only memtune_params.h.

#include "memtune_params.h"

// SplitMix64's finaliser.
__device__ __forceinline__ unsigned long long memtune_mix64(unsigned long long x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

//   data     n_words 4-byte words
//   out      one u64 the host zeroes first; the kernel adds every block's partial sum
// Any grid (grid-stride loop); blocks of a multiple of 32 threads, at most 1024.
extern "C" __global__ void memtune_digest_words(const unsigned int* data,
                                                unsigned long long n_words,
                                                unsigned long long* out)
{
    memtune_grid_sum(
        n_words,
        [=](unsigned long long i) { return memtune_mix64(memtune_mix64(i) ^ data[i]); },
        out);
}

//   table    capacity grouping buckets (device or mapped pinned memory)
//   out      three u64 the host zeroes first: the non-empty buckets, the sum of their
//            counts, and the sum mod 2^64 of mix(key) * count (order-independent, as
//            `grouping_digest` computes it on the CPU), so that a table of gigabytes in
//            host memory is checked without reading it back.
// Any grid (grid-stride loop); blocks of a multiple of 32 threads, at most 1024.
extern "C" __global__ void memtune_digest_groups(const memtune_grouping_bucket* table,
                                                 unsigned long long capacity,
                                                 unsigned long long* out)
{
    unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long groups = 0, keys = 0, hash = 0;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < capacity; i += threads) {
        memtune_grouping_bucket b = table[i];
        if (b.key != MEMTUNE_GROUPING_EMPTY_KEY) {
            groups += 1;
            keys += b.count;
            hash += memtune_mix64(b.key) * b.count;
        }
    }
    memtune_block_add(groups, out);
    memtune_block_add(keys, out + 1);
    memtune_block_add(hash, out + 2);
}
