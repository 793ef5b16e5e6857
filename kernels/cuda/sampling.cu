// Random sampling, plain and TLB-scoped (Karnagel et al., DaMoN'17, sections 2.1 and
// 5.2): each thread draws positions from a light LCG and sums the 4-byte values read
// there. A scoped run splits the region into TLB scopes and launches one pass per scope;
// every pass draws the same random streams and reads only the positions inside its
// scope, so the passes' sums add up to exactly the unscoped sum.
//
// Entry: memtune_sampling(data, sum, p)
//   data  device-visible address of the region, p.n_words 4-byte words (device memory or
//         mapped pinned host memory: the kernel does not care)
//   sum   one u64 the host zeroes once before the first pass; every pass adds to it
//         (wrapping at 2^64)
//   p     memtune_sampling_params (memtune_params.h). Unscoped: scope [0, n_words).
//
// Thread t (global 1-D index) seeds a 64-bit LCG with seed ^ (t * golden ratio), then
// p.reads_per_thread times steps it and takes pos = high 64 bits of (state * n_words),
// uniform in [0, n_words); it adds data[pos] when pos is in [scope_begin, scope_end),
// after p.work rounds of mixing (v = fmix32(v + k) for k = 0..work): the compute a
// kernel does per read, which the passes split as they split the reads.
// memtune_kernels::reference::sampling recomputes the sum on the CPU.
//
// Launch: 1-D grid of any size (the grid size is part of the result: it sets how many
// streams are drawn), 1-D blocks whose size is a multiple of 32 and at most
// MEMTUNE_SAMPLING_BLOCK.
//
// Defines (defaults in memtune_params.h):
//   MEMTUNE_SAMPLING_BLOCK   the block size the kernel is built for (__launch_bounds__)
//   MEMTUNE_SAMPLING_UNROLL  unroll depth of the read loop: how many independent reads a
//                            thread can have in flight (memory-level parallelism)
//
// No CUDA headers: NVRTC compiles this with only memtune_params.h.

#include "memtune_params.h"

static_assert(MEMTUNE_SAMPLING_BLOCK % 32 == 0 && MEMTUNE_SAMPLING_BLOCK <= 1024,
              "MEMTUNE_SAMPLING_BLOCK must be a multiple of 32, at most 1024");
static_assert(MEMTUNE_SAMPLING_UNROLL >= 1, "MEMTUNE_SAMPLING_UNROLL must be >= 1");

extern "C" __global__ void __launch_bounds__(MEMTUNE_SAMPLING_BLOCK)
    memtune_sampling(const unsigned int* data, unsigned long long* sum,
                     memtune_sampling_params p)
{
    unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long x = p.seed ^ (t * 0x9e3779b97f4a7c15ull);
    // 64-bit per thread: a thread's u32 values cannot wrap it, so only the global sum
    // wraps, and that wraps the same way however the reads are split into passes.
    unsigned long long acc = 0;
    if (p.work == 0) {
#pragma unroll MEMTUNE_SAMPLING_UNROLL
        for (unsigned int r = 0; r < p.reads_per_thread; ++r) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            unsigned long long pos = __umul64hi(x, p.n_words);
            if (pos >= p.scope_begin && pos < p.scope_end) {
                acc += data[pos];
            }
        }
    } else {
        // A separate loop, so that the plain kernel's code is what it was without work.
#pragma unroll MEMTUNE_SAMPLING_UNROLL
        for (unsigned int r = 0; r < p.reads_per_thread; ++r) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            unsigned long long pos = __umul64hi(x, p.n_words);
            if (pos >= p.scope_begin && pos < p.scope_end) {
                unsigned int v = data[pos];
                for (unsigned int k = 0; k < p.work; ++k) {
                    v = memtune_fmix32(v + k);
                }
                acc += v;
            }
        }
    }
    // One atomic per warp rather than per thread keeps the result word off the
    // critical path when reads_per_thread is small.
    for (int offset = 16; offset > 0; offset >>= 1) {
        acc += __shfl_down_sync(0xffffffffu, acc, offset);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(sum, acc);
    }
}
