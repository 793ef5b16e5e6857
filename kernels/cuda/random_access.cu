// The probe's random-access kernels. Random sampling (Karnagel et al., DaMoN'17, section
// 2.1) is timed with the shipped sampling kernel (sampling.cu) over regions this file
// fills; the same draws as atomic increments (memtune_random_atomic) price a hash-grouping
// insert, which updates its bucket with atomics that execute at L2.
//
// The data is never zeros: memtune_fill_words writes a hash of each word's index, so the
// host can recompute the exact expected sum without copying the region back.
//
// No CUDA headers: NVRTC compiles this with only memtune_params.h.

#include "memtune_params.h"

// A cheap, well-mixed 32-bit hash of a word index (the low half of a 64-bit finalizer).
__device__ __forceinline__ unsigned int memtune_word_hash(unsigned long long i)
{
    i ^= i >> 33;
    i *= 0xff51afd7ed558ccdull;
    i ^= i >> 33;
    return (unsigned int)i;
}

// Fill: data[i] = memtune_word_hash(i) for i in [first, end). Any grid (grid-stride loop).
extern "C" __global__ void memtune_fill_words(unsigned int* data, unsigned long long first,
                                              unsigned long long end)
{
    unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = first + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < end; i += threads) {
        data[i] = memtune_word_hash(i);
    }
}

// Atomic: the generator of memtune_sampling (thread t seeds a 64-bit LCG with
// seed ^ (t * golden ratio), steps it `reads` times and takes pos = high 64 bits of
// state * n_words), but each draw is an atomicAdd(&data[pos], 1u), a hash-grouping
// insert's count update (grouping.cu). Its result is unused, so ptxas issues a reduction
// (RED), as it does for the insert's. Every launch adds exactly
// gridDim.x * blockDim.x * reads to the sum of the region's words (memtune_sum_words
// checks it).
//   data      device-visible address of the region
//   n_words   region size in 4-byte words
//   reads     updates per thread
//   seed      stream seed
extern "C" __global__ void memtune_random_atomic(unsigned int* data,
                                                 unsigned long long n_words,
                                                 unsigned int reads,
                                                 unsigned long long seed)
{
    unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long x = seed ^ (t * 0x9e3779b97f4a7c15ull);
    for (unsigned int r = 0; r < reads; ++r) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        atomicAdd(&data[__umul64hi(x, n_words)], 1u);
    }
}

// Sum of data[0, n_words) as 64-bit integers, added into *sum (zeroed by the host).
// Any grid (grid-stride loop); blocks of a multiple of 32 threads, at most 1024.
extern "C" __global__ void memtune_sum_words(const unsigned int* data,
                                             unsigned long long n_words,
                                             unsigned long long* sum)
{
    memtune_grid_sum(n_words, [=](unsigned long long i) { return data[i]; }, sum);
}
